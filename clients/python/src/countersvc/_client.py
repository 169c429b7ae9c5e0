"""The calls of the service's HTTP API (openapi.yaml), as the Go client
(client/) makes them."""

from __future__ import annotations

import datetime as dt
import http.client
import io
import json
import re
import ssl
import urllib.parse
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._errors import Error, error_of_answer, invalid
from ._sse import Stream
from ._transport import SAFE, UNSENT, Answer, Request, Transport
from ._types import (
    Board,
    Breakdown,
    BreakdownOptions,
    Counter,
    Delivery,
    Event,
    History,
    HistoryOptions,
    ImportReport,
    Key,
    Step,
    Ticket,
    Value,
    Webhook,
)


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


#: A ``set`` bound left as the counter has it (the default); ``None``
#: removes the bound, an int sets it.
KEEP: Any = _Keep()

#: How long a stream may stay silent before it is taken for dead and
#: reconnected: the service sends a comment at least every 15 seconds, so
#: three missed ones mean the connection is gone.
WATCH_IDLE = 45.0

#: How much of an import from a stream is read ahead: all of a short one,
#: which can then be sent again.
IMPORT_BUFFER = 1 << 20

_LABEL_KEY = re.compile(r"[a-z0-9_]{1,32}\Z")
MAX_LABELS = 8

Source = Union[bytes, bytearray, BinaryIO, Iterable[bytes]]


def _esc(s: Any) -> str:
    """One path segment, "/" too."""
    return urllib.parse.quote(str(s), safe="")


def check_name(name: str) -> None:
    """Refuses, as the service would, a name that is not 1 to 255 bytes of
    UTF-8 without control characters."""
    if not isinstance(name, str):
        raise invalid(f"Counter name must be a string, not {type(name).__name__}.")
    try:
        n = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise invalid("Counter name must be valid UTF-8.") from None
    if n == 0:
        raise invalid("Counter name must not be empty.")
    if n > 255:
        raise invalid(f"Counter name is {n} bytes long; at most 255 are allowed.")
    if any(c < " " or c == "\x7f" for c in name):
        raise invalid("Counter name must not contain control characters.")


def check_labels(labels: Optional[Mapping[str, str]]) -> None:
    """Refuses labels the service would: more than 8, a key outside
    [a-z0-9_]{1,32}, a value that is not 1 to 128 bytes of printable UTF-8."""
    if not labels:
        return
    if len(labels) > MAX_LABELS:
        raise invalid(f"An increment carries at most {MAX_LABELS} labels, not {len(labels)}.")
    for k in sorted(labels):
        v = labels[k]
        if not isinstance(k, str) or not _LABEL_KEY.match(k):
            raise invalid(f"A label's key must be 1 to 32 characters of a-z, 0-9 and _; {k!r:.40} is not.")
        try:
            n = len(v.encode("utf-8")) if isinstance(v, str) else -1
        except UnicodeEncodeError:
            raise invalid(f"The value of label {k!r} must be valid UTF-8.") from None
        if not 1 <= n <= 128:
            raise invalid(f"The value of label {k!r} must be 1 to 128 bytes of text.")
        if not v.isprintable():
            raise invalid(f"The value of label {k!r} must be printable: no control or invisible characters.")


def _check_key(key: Optional[str]) -> None:
    if key is not None and not (1 <= len(key) <= 255 and all(" " <= c <= "~" for c in key)):
        raise invalid("An Idempotency-Key is 1 to 255 printable ASCII characters.")


def _time_param(t: dt.date) -> str:
    if isinstance(t, dt.datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise invalid("A time needs its zone: give an aware datetime (tzinfo set), or a date for the day's midnight in tz.")
        return t.isoformat()
    return t.isoformat()  # a date: YYYY-MM-DD, local midnight in tz


def _history_query(from_: Optional[dt.date], to: Optional[dt.date], tz: Optional[str]) -> List[Tuple[str, str]]:
    q = []
    if from_ is not None:
        q.append(("from", _time_param(from_)))
    if to is not None:
        q.append(("to", _time_param(to)))
    if tz:
        q.append(("tz", tz))
    return q


class Client:
    """A client of one countersvc service. Safe to share between threads.

    Every call gives up after ``timeout`` seconds (its own ``timeout=``
    wins), retries included. A call that meets a network error or an
    answer of 429, 502, 503 or 504 is tried again, up to ``retries`` times,
    after a pause that starts at ``backoff`` seconds and doubles up to
    ``max_backoff``, each drawn between half and all of it (or after the
    answer's Retry-After), while the timeout leaves room. Increments, sets,
    batches and imports carry an Idempotency-Key made once per call (a
    uuid4), or the one given, and send it again on every retry: a sale is
    never counted twice. Creations without a key (a ticket, a board, an API
    key, a webhook), a page hit and a secret's rotation are tried again
    only when the service certainly did nothing (429, or no connection).

    An answered error raises :class:`Error` with the API's code; a network
    failure, once the retries are spent, its ``OSError``
    (``ConnectionError``, ``TimeoutError``).
    """

    def __init__(
        self,
        base_url: str = "http://localhost:8080",
        *,
        token: Optional[str] = None,
        timeout: float = 10.0,
        retries: int = 4,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        """``base_url`` with or without the trailing /v1; ``token`` is sent
        as "Authorization: Bearer <token>": the admin token or an API key's
        secret (none: the service serves loopback clients when it has no
        admin token). ``retries`` 0 turns retries off."""
        self._t = Transport(base_url, token, timeout, retries, backoff, max_backoff, ssl_context)

    def close(self) -> None:
        """Closes the idle connections."""
        self._t.pool.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- sending ----------------------------------------------------------

    def _call(self, r: Request, timeout: Optional[float]) -> Tuple[int, Any]:
        """Sends the request and decodes its JSON answer (None when empty)."""
        a = self._t.send(r, timeout)
        body = a.read()
        if not body:
            return a.status, None
        try:
            return a.status, json.loads(body)
        except ValueError as e:
            raise ValueError(
                f"countersvc: the service's answer to {r.method} {r.path} is not what the API says ({e}): {body[:200]!r}"
            ) from None

    def _json(self, method: str, path: str, timeout: Optional[float], payload: Any = None, **kw: Any) -> Tuple[int, Any]:
        if payload is not None:
            b = json.dumps(payload).encode("utf-8")
            kw["body"] = lambda: b
        return self._call(Request(method, path, **kw), timeout)

    # -- counters ---------------------------------------------------------

    def increment(
        self,
        name: str,
        by: int = 1,
        *,
        labels: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> int:
        """Adds ``by`` (negative and 0 allowed) to the counter, creating it
        at 0 first, and returns the value this increment produced. A retry
        after a lost answer is recognised by the service and counts once.
        ``labels`` ({"channel": "web"}) are counted with the step, for
        ``breakdown``. An application that keeps ``idempotency_key`` with its
        own record (an order) can retry after a restart and still count once
        (the service keeps a key for 24 hours; the same key with another
        request is ``conflict``). Errors: out_of_range, permission_denied,
        invalid_argument, conflict."""
        check_name(name)
        check_labels(labels)
        _check_key(idempotency_key)
        payload: Dict[str, Any] = {"by": by}
        if labels:
            payload["labels"] = dict(labels)
        _, out = self._json("POST", f"/counters/{_esc(name)}/increment", timeout, payload,
                            idempotent=True, key=idempotency_key)
        return int(out["value"])

    def get(self, name: str, *, timeout: Optional[float] = None) -> Counter:
        """The counter. Errors: not_found."""
        check_name(name)
        _, out = self._json("GET", f"/counters/{_esc(name)}", timeout)
        return Counter.from_json(out)

    def ready(self, *, timeout: Optional[float] = None) -> None:
        """Returns when the service is ready to serve (GET /readyz); raises
        ``unavailable`` while MySQL does not answer, or its Galera node is not
        Synced in the Primary component (after the retries)."""
        self._t.send(Request("GET", "/readyz", ops=True), timeout).read()

    def set(
        self,
        name: str,
        value: int,
        *,
        min: Any = KEEP,
        max: Any = KEEP,
        create_only: bool = False,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Tuple[Counter, bool]:
        """Sets the counter to ``value``, creating it when missing, and
        returns it and whether this call created it. ``min`` and ``max``:
        an int sets the bound, None removes it, KEEP (the default) keeps it.
        ``create_only`` fails with ``conflict`` when the counter exists.
        Errors: out_of_range, conflict, permission_denied, invalid_argument."""
        check_name(name)
        _check_key(idempotency_key)
        payload: Dict[str, Any] = {"value": value}
        for field, b in (("min", min), ("max", max)):
            if b is not KEEP:
                payload[field] = b
        status, out = self._json("PUT", f"/counters/{_esc(name)}", timeout, payload, idempotent=True,
                                 key=idempotency_key, headers={"If-None-Match": "*"} if create_only else None)
        return Counter.from_json(out), status == 201

    def delete(self, name: str, *, timeout: Optional[float] = None) -> None:
        """Removes the counter and its history. Errors: not_found."""
        check_name(name)
        self._json("DELETE", f"/counters/{_esc(name)}", timeout)

    def list(
        self, prefix: str = "", *, after: str = "", page_size: int = 0, timeout: Optional[float] = None
    ) -> Iterator[Counter]:
        """Yields the counters whose names start with ``prefix`` in name
        (byte) order, following the pages to the last; ``page_size``
        counters a request (1 to 1000; 0 for the service's 100). ``timeout``
        bounds each page."""
        while True:
            q = []
            if prefix:
                q.append(("prefix", prefix))
            if after:
                q.append(("after", after))
            if page_size > 0:
                q.append(("limit", str(page_size)))
            _, page = self._json("GET", "/counters", timeout, query=q)
            for c in page.get("counters") or []:
                yield Counter.from_json(c)
            nxt = page.get("next_after")
            if not nxt or nxt == after:
                return
            after = nxt

    def reset(self, prefix: str, value: int = 0, *, timeout: Optional[float] = None) -> int:
        """Sets every counter whose name starts with ``prefix`` (not empty)
        to ``value`` and returns how many it set; names starting with _ are
        never touched."""
        # A reset sets values: sending it twice is sending it once.
        _, out = self._json("POST", "/counters/reset", timeout, {"prefix": prefix, "value": value})
        return int(out["reset"])

    def reset_all(self, value: int = 0, *, timeout: Optional[float] = None) -> int:
        """Sets every counter to ``value`` (admin only)."""
        _, out = self._json("POST", "/counters/reset", timeout, {"all": True, "value": value})
        return int(out["reset"])

    def batch(
        self, steps: Sequence[Step], *, idempotency_key: Optional[str] = None, timeout: Optional[float] = None
    ) -> List[Value]:
        """Applies 1 to 100 increments all or nothing and returns the values
        they produced, in order. If any fails, nothing changed and the error
        names the item."""
        items = []
        for s in steps:
            check_name(s.name)
            check_labels(s.labels)
            item: Dict[str, Any] = {"name": s.name, "by": s.by}
            if s.labels:
                item["labels"] = dict(s.labels)
            items.append(item)
        _check_key(idempotency_key)
        _, out = self._json("POST", "/counters/batch", timeout, {"increments": items}, idempotent=True,
                            key=idempotency_key)
        return [Value.from_json(v) for v in out.get("counters") or []]

    # -- history and breakdowns --------------------------------------------

    def history(self, name: str, options: Optional[HistoryOptions] = None, *, timeout: Optional[float] = None) -> History:
        """The counts of the counter per period. Errors: not_found (neither
        a value nor history), invalid_argument (an unknown step or zone, a
        bad time, more than 1,000 points)."""
        check_name(name)
        return self._history(f"/counters/{_esc(name)}/history", options or HistoryOptions(), [], timeout)

    def prefix_history(
        self, prefix: str, options: Optional[HistoryOptions] = None, *, timeout: Optional[float] = None
    ) -> History:
        """The counts of every counter under ``prefix`` (not empty), summed per period."""
        return self._history("/history", options or HistoryOptions(), [("prefix", prefix)], timeout)

    def _history(self, path: str, o: HistoryOptions, q: List[Tuple[str, str]], timeout: Optional[float]) -> History:
        if o.step:
            q.append(("step", o.step))
        q += _history_query(o.from_, o.to, o.tz)
        _, out = self._json("GET", path, timeout, query=q)
        return History.from_json(out)

    def breakdown(
        self, name: str, by: str, options: Optional[BreakdownOptions] = None, *, timeout: Optional[float] = None
    ) -> Breakdown:
        """How the counter's count splits by the label ``by``. Errors:
        not_found, invalid_argument (a bad label, time or zone, a limit
        outside 1 to 1000)."""
        check_name(name)
        return self._breakdown(f"/counters/{_esc(name)}/breakdown", by, options or BreakdownOptions(), [], timeout)

    def prefix_breakdown(
        self, prefix: str, by: str, options: Optional[BreakdownOptions] = None, *, timeout: Optional[float] = None
    ) -> Breakdown:
        """How the count of every counter under ``prefix`` (not empty)
        splits by the label ``by``, or by counter with BY_NAME."""
        return self._breakdown("/breakdown", by, options or BreakdownOptions(), [("prefix", prefix)], timeout)

    def _breakdown(
        self, path: str, by: str, o: BreakdownOptions, q: List[Tuple[str, str]], timeout: Optional[float]
    ) -> Breakdown:
        q += _history_query(o.from_, o.to, o.tz)
        if o.limit:
            q.append(("limit", str(o.limit)))
        q.append(("by", by))
        _, out = self._json("GET", path, timeout, query=q)
        return Breakdown.from_json(out)

    # -- page hits ---------------------------------------------------------

    def hit(self, name: str, *, timeout: Optional[float] = None) -> int:
        """Counts a page hit of ``name`` (under the service's public
        prefixes, hits/ by default) and returns the value, as the page-hit
        snippet does. A repeat from the same client within the service's
        window answers the value without counting; past the rate limit the
        answer is rate_limited, retried after its Retry-After when the
        timeout leaves room. Not retried after a lost answer, which would
        count the hit twice."""
        check_name(name)
        _, out = self._json("GET", f"/hits/{_esc(name)}", timeout, retry=UNSENT)
        return int(out["value"])

    # -- live updates ------------------------------------------------------

    def watch(self, name: str) -> Iterator[Event]:
        """Yields the values of the counter as they change: the current
        value at once, then each new one (a stream may skip intermediate
        values, never go back). When the connection drops it reconnects
        after the pause the service asked for, sending the last event's id,
        so that nothing is sent again unless the counter changed meanwhile.
        It runs until the loop breaks (or the generator is closed), or an
        answered error (not_found before the counter exists) or a
        reconnection that failed after the retries raises."""
        check_name(name)
        return self._watch(f"/counters/{_esc(name)}/events", [])

    def watch_prefix(self, prefix: str) -> Iterator[Event]:
        """Yields the changes of every counter under ``prefix`` (not empty), from now on."""
        return self._watch("/events", [("prefix", prefix)])

    def watch_hits(self, name: str) -> Iterator[Event]:
        """Yields the hit count of a public page, then each new value, as
        ``watch`` does; needs no key, counts no hit, and a page without
        hits starts at 0: what a page shows live."""
        check_name(name)
        return self._watch(f"/hits/{_esc(name)}/events", [])

    def _watch(self, path: str, q: List[Tuple[str, str]]) -> Iterator[Event]:
        s = Stream(self._t.backoff)
        while True:
            headers = {"Accept": "text/event-stream"}
            if s.last_id:
                headers["Last-Event-ID"] = s.last_id
            a = self._t.send(Request("GET", path, query=q, headers=headers))
            try:
                a.set_timeout(WATCH_IDLE)
                yield from _events(a, s)
            finally:
                a.close()
            s.wait()

    # -- export and import -------------------------------------------------

    def export_lines(self, prefix: str = "", *, timeout: Optional[float] = None) -> Iterator[bytes]:
        """Yields every counter whose name starts with ``prefix`` ("" for
        all) as the service streams them: JSON lines (each ending in a
        newline) in name order, the input of ``import_from``. A stream the
        service ended with an error line raises its Error, one cut short a
        ConnectionError, after the lines before it: a partial export is never
        taken for the whole. ``timeout`` bounds the wait for each part."""
        q = [("prefix", prefix)] if prefix else []
        a = self._t.send(Request("GET", "/export", query=q, headers={"Accept": "application/x-ndjson"}), timeout)
        n = 0
        try:
            while True:
                line = a.res.readline() if a.res is not None else b""
                if not line:
                    break
                if not line.endswith(b"\n"):
                    raise ConnectionError(f"countersvc: the export stream was cut after {n} lines")
                if line.startswith(b'{"error"'):
                    e = error_of_answer(500, "", a.request_id, line)
                    e.status = a.status
                    raise e
                n += 1
                yield line
            a.read()  # the end: the connection may serve another call
        finally:
            a.close()

    def export_to(self, out: BinaryIO, prefix: str = "", *, timeout: Optional[float] = None) -> int:
        """Writes ``export_lines(prefix)`` to ``out`` and returns how many lines it wrote."""
        n = 0
        for line in self.export_lines(prefix, timeout=timeout):
            out.write(line)
            n += 1
        return n

    def import_from(
        self,
        source: Source,
        *,
        overwrite: bool = False,
        atomic: bool = False,
        gzip: bool = False,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> ImportReport:
        """Brings in counters from JSON lines as export writes them
        ({"name": ..., "value": n} with optional min, max and created_at):
        bytes, a binary file, or an iterable of bytes. Bytes, a seekable file
        (sent again from where it stood) and a stream of up to 1 MiB (read
        whole first) carry an Idempotency-Key and are retried like an
        increment; a longer stream is sent once, as it arrives, since what
        was read cannot be read again. ``overwrite`` replaces existing
        counters (by default they are skipped); ``atomic`` applies all lines
        or none; ``gzip`` says the lines are gzipped. An import that failed
        part-way (unavailable) raises the Error with the ``report`` of what
        was committed; importing again finishes it."""
        _check_key(idempotency_key)
        q = []
        if overwrite:
            q.append(("mode", "overwrite"))
        if atomic:
            q.append(("atomic", "true"))
        r = Request("POST", "/import", query=q, ctype="application/x-ndjson", key=idempotency_key,
                    headers={"Content-Encoding": "gzip"} if gzip else None, idempotent=True)
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            r.body = lambda: data
        elif _seekable(source):
            f: Any = source
            start = f.tell()
            r.size = f.seek(0, io.SEEK_END) - start
            f.seek(start)

            def again() -> Any:
                f.seek(start)
                return f

            r.body = again
        else:
            chunks = _chunks(source)
            head = bytearray()
            for c in chunks:
                head += c
                if len(head) > IMPORT_BUFFER:
                    break
            else:
                data = bytes(head)
                r.body = lambda: data
            if r.body is None:
                sent = []

                def once() -> Iterator[bytes]:
                    if sent:
                        raise ValueError("countersvc: the import's lines were sent once and cannot be read again")
                    sent.append(True)
                    return _prepend(bytes(head), chunks)

                r.body, r.idempotent, r.retries = once, idempotency_key is not None, 0
        _, out = self._call(r, timeout)
        return ImportReport.from_json(out)

    # -- boards and tickets ------------------------------------------------

    def create_board(self, company_id: int, slug: str, title: str, *, timeout: Optional[float] = None) -> Board:
        """Makes a board of the company. The slug is upper-cased and must
        then match ^[A-Z][A-Z0-9]{0,9}$. Errors: conflict (the company has
        the slug), invalid_argument."""
        _, out = self._json("POST", "/boards", timeout, {"company_id": company_id, "slug": slug, "title": title},
                            retry=UNSENT)
        return Board.from_json(out)

    def board(self, board_id: int, *, timeout: Optional[float] = None) -> Board:
        """The board. Errors: not_found."""
        _, out = self._json("GET", f"/boards/{int(board_id)}", timeout)
        return Board.from_json(out)

    def create_ticket(self, board_id: int, title: str, description: str = "", *, timeout: Optional[float] = None) -> Ticket:
        """Takes the board's next number for a new ticket. Not retried after
        a lost answer: a retry would take another number."""
        _, out = self._json("POST", f"/boards/{int(board_id)}/tickets", timeout,
                            {"title": title, "description": description}, retry=UNSENT)
        return Ticket.from_json(out)

    def ticket(self, board_id: int, local_id: int, *, timeout: Optional[float] = None) -> Ticket:
        """Ticket ``local_id`` of the board. Errors: not_found."""
        _, out = self._json("GET", f"/boards/{int(board_id)}/tickets/{int(local_id)}", timeout)
        return Ticket.from_json(out)

    def ticket_by_key(self, company_id: int, key: str, *, timeout: Optional[float] = None) -> Ticket:
        """The company's ticket of a key such as NINJA-7. Errors: not_found."""
        _, out = self._json("GET", f"/companies/{int(company_id)}/tickets/{_esc(key)}", timeout)
        return Ticket.from_json(out)

    def tickets(self, board_id: int, *, timeout: Optional[float] = None) -> Iterator[Ticket]:
        """Yields the board's tickets by number, following the pages."""
        after = 0
        while True:
            q = [("after", str(after))] if after > 0 else []
            _, page = self._json("GET", f"/boards/{int(board_id)}/tickets", timeout, query=q)
            for t in page.get("tickets") or []:
                yield Ticket.from_json(t)
            nxt = page.get("next_after")
            if nxt is None or nxt <= after:
                return
            after = nxt

    def delete_ticket(self, board_id: int, local_id: int, *, timeout: Optional[float] = None) -> None:
        """Deletes a ticket; its number stays used. Errors: not_found."""
        self._json("DELETE", f"/boards/{int(board_id)}/tickets/{int(local_id)}", timeout)

    # -- API keys ----------------------------------------------------------

    def create_key(
        self,
        name: str,
        scopes: Sequence[str],
        *,
        prefixes: Optional[Sequence[str]] = None,
        companies: Optional[Sequence[int]] = None,
        expires_at: Optional[dt.datetime] = None,
        timeout: Optional[float] = None,
    ) -> Key:
        """Makes an API key (admin only) and returns it with its secret,
        shown here only. ``scopes``: read, write, admin; ``prefixes``: the
        counter names it may touch; ``companies``: whose boards and tickets."""
        payload: Dict[str, Any] = {"name": name, "scopes": list(scopes)}
        if prefixes is not None:
            payload["prefixes"] = list(prefixes)
        if companies is not None:
            payload["companies"] = list(companies)
        if expires_at is not None:
            payload["expires_at"] = _time_param(expires_at)
        _, out = self._json("POST", "/keys", timeout, payload, retry=UNSENT)
        return Key.from_json(out)

    def keys(self, *, timeout: Optional[float] = None) -> List[Key]:
        """The API keys, without secrets."""
        _, out = self._json("GET", "/keys", timeout)
        return [Key.from_json(k) for k in out.get("keys") or []]

    def key(self, key_id: int, *, timeout: Optional[float] = None) -> Key:
        """The API key, without its secret. Errors: not_found."""
        _, out = self._json("GET", f"/keys/{int(key_id)}", timeout)
        return Key.from_json(out)

    def delete_key(self, key_id: int, *, timeout: Optional[float] = None) -> None:
        """Revokes the API key: every process of the service refuses it within a second."""
        self._json("DELETE", f"/keys/{int(key_id)}", timeout)

    # -- webhooks ----------------------------------------------------------

    def create_webhook(
        self,
        url: str,
        *,
        name: Optional[str] = None,
        prefix: Optional[str] = None,
        thresholds: Optional[Sequence[int]] = None,
        every: Optional[int] = None,
        direction: Optional[str] = None,
        window: Optional[str] = None,
        above: Optional[int] = None,
        below: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> Webhook:
        """Makes a webhook on ``name`` or ``prefix``, with ``thresholds``
        and/or ``every``, ``direction`` up (default), down or both, or an
        alert: ``window`` (5m to 7d) with one of ``above`` and ``below``;
        and returns it with its secret. Errors: invalid_argument (such as a
        URL that resolves to a private address)."""
        payload: Dict[str, Any] = {"url": url}
        for k, v in (("name", name), ("prefix", prefix), ("every", every), ("direction", direction),
                     ("window", window), ("above", above), ("below", below)):
            if v is not None:
                payload[k] = v
        if thresholds is not None:
            payload["thresholds"] = list(thresholds)
        _, out = self._json("POST", "/webhooks", timeout, payload, retry=UNSENT)
        return Webhook.from_json(out)

    def webhooks(self, *, timeout: Optional[float] = None) -> List[Webhook]:
        """The webhooks, without secrets."""
        _, out = self._json("GET", "/webhooks", timeout)
        return [Webhook.from_json(w) for w in out.get("webhooks") or []]

    def webhook(self, webhook_id: Union[str, int], *, timeout: Optional[float] = None) -> Webhook:
        """The webhook, without its secret."""
        _, out = self._json("GET", f"/webhooks/{_esc(webhook_id)}", timeout)
        return Webhook.from_json(out)

    def delete_webhook(self, webhook_id: Union[str, int], *, timeout: Optional[float] = None) -> None:
        self._json("DELETE", f"/webhooks/{_esc(webhook_id)}", timeout)

    def deliveries(
        self, webhook_id: Union[str, int], limit: int = 0, *, timeout: Optional[float] = None
    ) -> List[Delivery]:
        """The webhook's latest deliveries, newest first; ``limit`` 0 is the service's default."""
        q = [("limit", str(limit))] if limit > 0 else []
        _, out = self._json("GET", f"/webhooks/{_esc(webhook_id)}/deliveries", timeout, query=q)
        return [Delivery.from_json(d) for d in out.get("deliveries") or []]

    def enable_webhook(self, webhook_id: Union[str, int], *, timeout: Optional[float] = None) -> None:
        """Makes a webhook that was disabled (by a 410, or by failing for days) deliver again."""
        self._json("POST", f"/webhooks/{_esc(webhook_id)}/enable", timeout)

    def rotate_webhook_secret(self, webhook_id: Union[str, int], *, timeout: Optional[float] = None) -> Webhook:
        """Gives the webhook a new secret and returns the hook with it (shown
        only here); for a day the calls are signed with both. Never sent
        again once it may have reached the service: a second rotation would
        replace the secret this one returned."""
        _, out = self._json("POST", f"/webhooks/{_esc(webhook_id)}/rotate", timeout, retry=UNSENT)
        return Webhook.from_json(out)


def _events(a: Answer, s: Stream) -> Iterator[Event]:
    """The events of one connection, until it ends or breaks (then the
    caller reconnects)."""
    try:
        while a.res is not None:
            raw = a.res.readline()
            if not raw.endswith(b"\n"):
                return  # the stream ended, or was cut in a line
            ev = s.line(raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r"))
            if ev is not None:
                yield ev
    except (OSError, http.client.HTTPException):
        return  # broke, or silent past WATCH_IDLE: reconnect


def _seekable(f: Any) -> bool:
    """Whether f can be read again from where it stands: a file can, a pipe
    (sys.stdin.buffer) cannot, though it is a file too."""
    try:
        return bool(f.seekable()) and f.tell() >= 0
    except (AttributeError, OSError, ValueError):
        return False


def _chunks(source: Any) -> Iterator[bytes]:
    if hasattr(source, "read"):
        def read() -> Iterator[bytes]:
            while True:
                b = source.read(64 << 10)
                if not b:
                    return
                yield b
        return read()
    return iter(source)


def _prepend(head: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from rest
