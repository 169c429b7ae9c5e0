"""What the tests share: the service's URLs, which internal/clienttest's
TestPythonClient passes in the environment (each test skips itself
without them), and a name prefix of this run."""

import os
import unittest
import uuid

import countersvc

URL = os.environ.get("COUNTERS_URL", "")
RUN = uuid.uuid4().hex[:8]  # names of this run: the service may outlive it


def need(*names: str) -> None:
    """Skips the test unless the environment names the services it needs."""
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        raise unittest.SkipTest(f"{', '.join(missing)} unset: run through go test ./internal/clienttest -run TestPythonClient")


def client(url: str = "", **kw) -> countersvc.Client:
    """A client that fails a test rather than hang, with short pauses."""
    kw.setdefault("timeout", 20.0)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("max_backoff", 0.05)
    return countersvc.Client(url or URL, **kw)


def name(test: unittest.TestCase, suffix: str) -> str:
    return f"py/{RUN}/{test.id().rsplit('.', 1)[-1]}/{suffix}"
