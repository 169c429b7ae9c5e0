"""What the client does without the service: refusing bad input before
sending it, reading the service's times and streams."""

import datetime as dt
import socket
import unittest

import countersvc
from countersvc._sse import Stream
from countersvc._types import parse_time


def nowhere() -> str:
    """A URL where nothing listens: a request sent there would fail with
    a ConnectionError, not the invalid_argument a refusal raises."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


class BadInputIsRefusedBeforeSending(unittest.TestCase):
    def test_each_local_rule_raises_invalid_argument(self) -> None:
        c = countersvc.Client(nowhere(), retries=0, timeout=2)
        cases = {
            "a name over 255 bytes of UTF-8": lambda: c.increment("é" * 128),  # 256 bytes, 128 characters
            "an empty name": lambda: c.get(""),
            "a control character": lambda: c.set("bad\x01name", 1),
            "a label key in capitals": lambda: c.increment("a", labels={"Channel": "web"}),
            "a label key over 32 characters": lambda: c.increment("a", labels={"k" * 33: "v"}),
            "an empty label value": lambda: c.increment("a", labels={"channel": ""}),
            "nine labels": lambda: c.increment("a", labels={f"k{i}": "v" for i in range(9)}),
            "a bad name in a batch": lambda: c.batch([countersvc.Step("ok"), countersvc.Step("x" * 256)]),
            "a bad label in a batch": lambda: c.batch([countersvc.Step("ok", 1, {"a-b": "v"})]),
            "an idempotency key that is not ASCII": lambda: c.increment("a", idempotency_key="clé"),
            "a time without a zone": lambda: c.history("a", countersvc.HistoryOptions(from_=dt.datetime(2026, 1, 1))),
        }
        for what, call in cases.items():
            with self.subTest(what):
                with self.assertRaises(countersvc.Error) as cm:
                    call()
                self.assertEqual(cm.exception.code, countersvc.Code.INVALID_ARGUMENT)
                self.assertEqual(cm.exception.status, 0, "refused here, not answered")
                self.assertTrue(cm.exception.message)

    def test_the_longest_name_and_label_key_are_sent(self) -> None:
        c = countersvc.Client(nowhere(), retries=0, timeout=2)
        with self.assertRaises(ConnectionError):  # it got as far as the network
            c.increment("é" * 127 + "a", labels={"k" * 32: "v"})


class TimesAndStreamsAreRead(unittest.TestCase):
    def test_rfc3339_times_of_the_service(self) -> None:
        for text, want in {
            "2026-03-28T00:00:00Z": dt.datetime(2026, 3, 28, tzinfo=dt.timezone.utc),
            "2026-03-28T00:00:00.123456789+01:00": dt.datetime(
                2026, 3, 28, 0, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        }.items():
            with self.subTest(text):
                self.assertEqual(parse_time(text), want)

    def test_an_event_counts_as_seen_only_once_whole(self) -> None:
        s = Stream(0.1)
        for line in ["retry: 250", ": keep-alive", "event: counter", "id: 7",
                     'data: {"name":"a","value":3,"at":"2026-01-01T00:00:00Z"}']:
            self.assertIsNone(s.line(line))
        self.assertEqual(s.retry, 0.25)
        self.assertEqual(s.last_id, "", "the id of an event cut before its end must not be sent back")
        ev = s.line("")
        self.assertIsNotNone(ev)
        assert ev is not None
        self.assertEqual((ev.type, ev.id, ev.name, ev.value), ("counter", "7", "a", 3))
        self.assertEqual(s.last_id, "7")


if __name__ == "__main__":
    unittest.main()
