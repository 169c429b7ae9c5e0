"""Sending a request: connections, retries, idempotency keys, errors.

The rules are the Go client's (client/client.go), so that every client of
the service counts a sale once: a call that meets a network error or an
answer of 429, 502, 503 or 504 is tried again, a few times, after a growing
pause with jitter (or the answer's Retry-After), while its timeout leaves
room. Writes that must count once carry an Idempotency-Key made once per
call and sent again on each retry. Creations without a key are tried again
only when the service certainly did nothing: 429, or no connection made.
"""

from __future__ import annotations

import email.utils
import http.client
import random
import selectors
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from typing import Any, BinaryIO, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ._errors import Error, error_of_answer

#: Retry policies: SAFE requests (reads, deletes, resets, writes with an
#: idempotency key) have the same effect sent twice as once; UNSENT ones
#: (creations without a key, page hits, a secret's rotation) are sent again
#: only when the service certainly did nothing.
SAFE, UNSENT = "safe", "unsent"

Body = Union[bytes, BinaryIO, Iterable[bytes]]

USER_AGENT = "countersvc-python-client"


class Request:
    """One call: what to send, and how it may be retried."""

    def __init__(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[Tuple[str, str]] = (),
        body: Optional[Callable[[], Body]] = None,
        size: Optional[int] = None,
        ctype: str = "application/json",
        headers: Optional[Dict[str, str]] = None,
        retry: str = SAFE,
        idempotent: bool = False,
        key: Optional[str] = None,
        ops: bool = False,
        retries: Optional[int] = None,
    ) -> None:
        self.method = method
        self.path = path  # below /v1 (unless ops), already escaped
        self.query = list(query)
        self.body = body  # called once per attempt
        self.size = size  # the body's length; None sends it chunked unless bytes
        self.ctype = ctype
        self.headers = headers or {}
        self.retry = retry
        self.idempotent = idempotent  # carries an Idempotency-Key: key, or one made per call
        self.key = key
        self.ops = ops  # an operations endpoint, outside /v1 (/readyz)
        self.retries = retries  # None: the client's


class _NotSent(Exception):
    """No connection could be made: the request certainly did nothing."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause)
        self.cause = cause


class Answer:
    """A 2xx answer whose body is still to be read; its connection goes
    back to the pool once the body is read whole."""

    def __init__(self, res: Optional[http.client.HTTPResponse], conn: Any, pool: Optional["_Pool"], status: int) -> None:
        self.res = res
        self.conn = conn
        self.pool = pool
        self.status = status
        self.request_id = res.getheader("X-Request-ID", "") if res is not None else ""

    def read(self) -> bytes:
        if self.res is None:
            return b""
        try:
            b = self.res.read()
        except BaseException:
            self.close()
            raise
        self._release()
        return b

    def _release(self) -> None:
        res, conn, self.res, self.conn = self.res, self.conn, None, None
        if res is not None and self.pool is not None and not res.will_close:
            self.pool.put(conn)
        elif conn is not None:
            conn.close()

    def close(self) -> None:
        """Drops the connection, for a body not read to its end."""
        conn, self.res, self.conn = self.conn, None, None
        if conn is not None:
            conn.close()

    def set_timeout(self, seconds: float) -> None:
        if self.conn is not None and self.conn.sock is not None:
            self.conn.sock.settimeout(seconds)


class _Pool:
    """Idle keep-alive connections to the service, so that a call does not
    pay a connection (and a TLS handshake) each time."""

    def __init__(self, scheme: str, host: str, port: Optional[int], context: Optional[ssl.SSLContext]) -> None:
        self.scheme, self.host, self.port, self.context = scheme, host, port, context
        self.idle: List[Any] = []
        self.lock = threading.Lock()

    def get(self, timeout: float) -> Any:
        with self.lock:
            while self.idle:
                conn = self.idle.pop()
                if _usable(conn):
                    conn.timeout = timeout
                    conn.sock.settimeout(timeout)
                    return conn
                conn.close()
        if self.scheme == "https":
            conn: Any = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.connect()
        except OSError as e:
            conn.close()
            raise _NotSent(e) from e
        return conn

    def put(self, conn: Any) -> None:
        with self.lock:
            if len(self.idle) < 16:
                self.idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for conn in idle:
            conn.close()

    def __del__(self) -> None:
        # A client dropped without close() leaves no socket open.
        try:
            self.close()
        except Exception:
            pass


def _usable(conn: Any) -> bool:
    """An idle connection that has something to read was closed by the
    service (its idle timeout): sending on it would fail half-way, and a
    creation could then not be retried."""
    if conn.sock is None:
        return False
    with selectors.DefaultSelector() as sel:
        sel.register(conn.sock, selectors.EVENT_READ)
        return not sel.select(0)


class Transport:
    def __init__(
        self,
        base_url: str,
        token: Optional[str],
        timeout: float,
        retries: int,
        backoff: float,
        max_backoff: float,
        ssl_context: Optional[ssl.SSLContext],
    ) -> None:
        u = urllib.parse.urlsplit(base_url.strip())
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"countersvc: the service's URL must be http://host[:port] or https://..., not {base_url!r}")
        path = u.path.rstrip("/")
        if path.endswith("/v1"):
            path = path[: -len("/v1")]
        self.base_path = path
        self.pool = _Pool(u.scheme, u.hostname, u.port, ssl_context)
        self.token = token
        self.timeout = timeout
        self.retries = max(retries, 0)
        self.backoff = backoff
        self.max_backoff = max_backoff

    def send(self, r: Request, timeout: Optional[float] = None) -> Answer:
        """Runs the request with its retries and returns the 2xx answer of
        the last attempt; any other answer raises an Error, and a network
        failure its OSError, once the retries are spent."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        target = self.base_path + ("" if r.ops else "/v1") + r.path
        if r.query:
            target += "?" + urllib.parse.urlencode(r.query)
        key = ""
        if r.idempotent:
            key = r.key or str(uuid.uuid4())
        retries = self.retries if r.retries is None else r.retries
        lost = False  # an earlier attempt's answer was lost: it may have done its work
        attempt = 0
        while True:
            res = conn = None
            err: Optional[BaseException] = None
            unsent = False
            try:
                conn, res = self._attempt(r, target, key, deadline)
            except _NotSent as e:
                err, unsent = e.cause, True
            except (OSError, http.client.HTTPException) as e:
                err = e
            if res is not None and res.status < 300:
                return Answer(res, conn, self.pool, res.status)
            wait = 0.0
            if res is not None:
                status = res.status
                wait = _retry_after(res.getheader("Retry-After"))
                err = _read_error(res, conn, self.pool)
                if lost and r.method == "DELETE" and status == 404:
                    # The attempt whose answer was lost deleted it: what was asked is done.
                    return Answer(None, None, None, 204)
                # A proxy's 502 or 504 may also have come after the service did it.
                lost = lost or status in (502, 504)
            else:
                lost = lost or not unsent
            assert err is not None
            if attempt >= retries or not _retriable(err, unsent, r.retry):
                raise _public(err, r, limit)
            if wait <= 0:
                wait = self._pause(attempt)
            if deadline - time.monotonic() < wait:
                raise _public(err, r, limit)  # no room for another attempt: the answer we have is the honest one
            time.sleep(wait)
            attempt += 1

    def _attempt(self, r: Request, target: str, key: str, deadline: float) -> Tuple[Any, http.client.HTTPResponse]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the call's timeout ran out")
        conn = self.pool.get(left)
        try:
            headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
            headers.update(r.headers)
            body: Optional[Body] = None
            if r.body is not None:
                body = r.body()
                headers["Content-Type"] = r.ctype
                if isinstance(body, (bytes, bytearray)):
                    headers["Content-Length"] = str(len(body))
                elif r.size is not None:
                    headers["Content-Length"] = str(r.size)
                else:
                    headers["Transfer-Encoding"] = "chunked"
            elif r.method in ("POST", "PUT"):
                headers["Content-Length"] = "0"
            if self.token:
                headers["Authorization"] = "Bearer " + self.token
            if key:
                headers["Idempotency-Key"] = key
            conn.request(r.method, target, body=body, headers=headers,
                         encode_chunked="Transfer-Encoding" in headers)
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    def _pause(self, attempt: int) -> float:
        """The wait before retry attempt+1: exponential, capped, and drawn
        between half and all of it, so that clients that failed together do
        not come back together."""
        d = min(self.backoff * (2 ** min(attempt, 20)), self.max_backoff)
        return d / 2 + random.uniform(0, d / 2)


def _read_error(res: http.client.HTTPResponse, conn: Any, pool: _Pool) -> Error:
    a = Answer(res, conn, pool, res.status)
    try:
        body = a.read()
    except (OSError, http.client.HTTPException):
        body = b""
    return error_of_answer(res.status, res.reason, a.request_id, body)


def _retriable(err: BaseException, unsent: bool, policy: str) -> bool:
    if isinstance(err, Error):
        if err.status == 429:
            return True
        if err.status in (502, 503, 504):
            return policy == SAFE
        return False
    if isinstance(err, (socket.timeout, TimeoutError)):
        return False  # each attempt may take what is left of the call's time: it is spent
    if policy == UNSENT:
        return unsent
    return True  # a network error: the connection broke, the answer was lost


def _public(err: BaseException, r: Request, limit: float) -> BaseException:
    """The exception a call raises: an Error, or an OSError for the network."""
    if isinstance(err, (socket.timeout, TimeoutError)) and not isinstance(err, Error):
        e: BaseException = TimeoutError(f"countersvc: {r.method} {r.path} had no answer within its timeout of {limit:g}s")
    elif isinstance(err, http.client.HTTPException) and not isinstance(err, OSError):
        e = ConnectionError(f"countersvc: {r.method} {r.path}: the connection broke ({err!r})")
    else:
        return err
    e.__cause__ = err
    return e


def _retry_after(v: Optional[str]) -> float:
    """Reads a Retry-After header: seconds, or an HTTP date."""
    if not v:
        return 0.0
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        t = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return 0.0
    return max(t.timestamp() - time.time(), 0.0)
