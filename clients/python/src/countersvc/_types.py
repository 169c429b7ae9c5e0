"""The service's answers as dataclasses, and the options of the calls."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional

HistoryStep = Literal["hour", "day", "month"]
"""The length of a history's periods."""

_RFC3339 = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$"
)


def parse_time(s: str) -> dt.datetime:
    """Reads an RFC 3339 time as the service writes it (nanoseconds, ``Z``),
    which ``datetime.fromisoformat`` takes only from Python 3.11 on."""
    m = _RFC3339.match(s)
    if not m:
        raise ValueError(f"not an RFC 3339 time: {s!r}")
    y, mo, d, h, mi, se, frac, off = m.groups()
    if off in ("Z", "z"):
        tz = dt.timezone.utc
    else:
        sign = 1 if off[0] == "+" else -1
        tz = dt.timezone(sign * dt.timedelta(hours=int(off[1:3]), minutes=int(off[4:6])))
    us = int((frac or "0")[:6].ljust(6, "0"))
    return dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(se), us, tzinfo=tz)


def _time(v: Any) -> Optional[dt.datetime]:
    return parse_time(v) if isinstance(v, str) else None


def _epoch() -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class Counter:
    """A named signed 64-bit value, as the service shows it."""

    name: str
    value: int
    created_at: dt.datetime
    updated_at: dt.datetime
    min: Optional[int] = None  #: None: unbounded
    max: Optional[int] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Counter":
        return cls(
            d["name"], int(d["value"]), _time(d.get("created_at")) or _epoch(),
            _time(d.get("updated_at")) or _epoch(), d.get("min"), d.get("max"),
        )


@dataclass
class Value:
    """A counter's name and the value a write produced."""

    name: str
    value: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Value":
        return cls(d["name"], int(d["value"]))


@dataclass
class Step:
    """One increment of a batch, with its labels (see ``Client.increment``)."""

    name: str
    by: int = 1
    labels: Optional[Dict[str, str]] = None


@dataclass
class HistoryOptions:
    """The periods of a history; the defaults are the last 30 days in UTC.

    ``from_`` and ``to`` bound the half-open range [from, to), widened to
    whole periods: an aware ``datetime``, or a ``date`` for that day's
    local midnight in ``tz``. ``None`` for the service's defaults (``to``
    the end of the current period, ``from_`` 30 periods earlier, 48 for
    hours).
    """

    step: Optional[HistoryStep] = None  #: "day" when None
    from_: Optional[dt.date] = None
    to: Optional[dt.date] = None
    tz: Optional[str] = None  #: an IANA zone where days and months start; default UTC


@dataclass
class Point:
    """One period of a History; ``start`` carries the zone's offset."""

    start: dt.datetime
    count: int
    #: the period's distinct visitors where the service counts them (page
    #: hits, by day); None where it does not
    visitors: Optional[int] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Point":
        return cls(parse_time(d["start"]), int(d["count"]), d.get("visitors"))


@dataclass
class History:
    """How many increments each period counted."""

    step: str
    tz: str
    from_: dt.datetime
    to: dt.datetime
    points: List[Point]
    total: int
    name: Optional[str] = None  #: for a counter's history
    prefix: Optional[str] = None  #: for a prefix's

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "History":
        return cls(
            d["step"], d["tz"], parse_time(d["from"]), parse_time(d["to"]),
            [Point.from_json(p) for p in d.get("points") or []], int(d["total"]),
            d.get("name"), d.get("prefix"),
        )


#: The ``by`` of ``Client.prefix_breakdown`` that splits it by counter.
BY_NAME = "name"


@dataclass
class BreakdownOptions:
    """The range of a breakdown and how many rows it lists; the defaults
    are the last 30 days (UTC) and 20 rows. ``from_``, ``to`` and ``tz`` as
    in HistoryOptions; the service widens the range to whole UTC days, and
    the answer's ``from_`` and ``to`` say what it counted."""

    from_: Optional[dt.date] = None
    to: Optional[dt.date] = None
    tz: Optional[str] = None
    limit: int = 0  #: rows, 1 to 1000; 0 for the service's 20


@dataclass
class BreakdownRow:
    """One value of a Breakdown."""

    value: str
    count: int


@dataclass
class Breakdown:
    """How a count splits by one label: ``rows`` by count descending then
    value, ``more`` the count of the rows left out; every row plus ``more``
    is ``total``. "(none)" counts steps without the label, "(other)" values
    beyond the counter's bound for a day."""

    by: str
    from_: dt.datetime
    to: dt.datetime
    tz: str
    total: int
    rows: List[BreakdownRow]
    more: int
    name: Optional[str] = None
    prefix: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Breakdown":
        return cls(
            d["by"], parse_time(d["from"]), parse_time(d["to"]), d["tz"], int(d["total"]),
            [BreakdownRow(r["value"], int(r["count"])) for r in d.get("rows") or []],
            int(d.get("more", 0)), d.get("name"), d.get("prefix"),
        )


@dataclass
class ImportLine:
    """A skipped or refused line of an import."""

    line: int
    outcome: str  #: "skipped" or "refused"
    reason: str  #: exists, malformed, invalid_name, reserved, invalid_bounds, out_of_range, permission_denied
    message: str
    name: Optional[str] = None


@dataclass
class ImportReport:
    """What an import did."""

    mode: str
    atomic: bool
    applied: bool
    read: int
    created: int
    overwritten: int
    skipped: int
    refused: int
    lines: List[ImportLine] = field(default_factory=list)  #: the first 1,000 skipped or refused lines
    truncated: bool = False  #: there were more

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ImportReport":
        return cls(
            d.get("mode", ""), bool(d.get("atomic")), bool(d.get("applied")),
            int(d.get("read", 0)), int(d.get("created", 0)), int(d.get("overwritten", 0)),
            int(d.get("skipped", 0)), int(d.get("refused", 0)),
            [ImportLine(int(l["line"]), l.get("outcome", ""), l.get("reason", ""), l.get("message", ""), l.get("name"))
             for l in d.get("lines") or []],
            bool(d.get("truncated")),
        )


@dataclass
class Key:
    """An API key: who may touch which counters, boards and tickets."""

    id: int
    name: str
    scopes: List[str]  #: read, write, admin
    prefixes: List[str]  #: counter names it may touch; "" is every non-reserved name
    companies: List[int]
    created_at: dt.datetime
    expires_at: Optional[dt.datetime] = None
    last_used_at: Optional[dt.datetime] = None
    #: the bearer token, in create_key's answer only: the service keeps a
    #: hash of it and never shows it again
    secret: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Key":
        return cls(
            int(d["id"]), d["name"], list(d.get("scopes") or []), list(d.get("prefixes") or []),
            list(d.get("companies") or []), _time(d.get("created_at")) or _epoch(),
            _time(d.get("expires_at")), _time(d.get("last_used_at")), d.get("secret"),
        )


@dataclass
class Board:
    """Hands out ticket numbers: the first ticket of board NINJA is NINJA-1."""

    id: int
    company_id: int
    slug: str
    title: str
    created_at: dt.datetime

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Board":
        return cls(int(d["id"]), int(d["company_id"]), d["slug"], d["title"], _time(d.get("created_at")) or _epoch())


@dataclass
class Ticket:
    """A numbered ticket of a board."""

    id: int
    board_id: int
    local_id: int
    key: str  #: such as NINJA-7
    title: str
    description: str
    created_at: dt.datetime

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Ticket":
        return cls(
            int(d["id"]), int(d["board_id"]), int(d["local_id"]), d["key"], d["title"],
            d.get("description") or "", _time(d.get("created_at")) or _epoch(),
        )


@dataclass
class Webhook:
    """Calls a URL when a counter crosses a threshold (``thresholds``,
    ``every``, ``direction``), or as an alert when the count over
    ``window`` rises to ``above`` or falls under ``below``. ``id`` is text:
    the API leaves open whether it is a number or a string."""

    id: str
    url: str
    direction: str  #: up, down or both
    created_at: dt.datetime
    name: Optional[str] = None  #: the one counter it watches, or
    prefix: Optional[str] = None  #: every counter under a prefix
    thresholds: List[int] = field(default_factory=list)
    every: Optional[int] = None
    disabled_at: Optional[dt.datetime] = None
    #: signs the calls (Standard Webhooks), in the answers of
    #: create_webhook and rotate_webhook_secret only
    secret: Optional[str] = None
    #: in rotate_webhook_secret's answer: until when the replaced secret signs too
    previous_secret_expires_at: Optional[dt.datetime] = None
    window: Optional[str] = None  #: an alert's window, such as "1h" or "2d"
    above: Optional[int] = None  #: an alert that holds while the window's sum is >= above
    below: Optional[int] = None  #: an alert that holds while it is < below (1: silence)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Webhook":
        return cls(
            str(d["id"]), d["url"], d.get("direction", ""), _time(d.get("created_at")) or _epoch(),
            d.get("name"), d.get("prefix"), list(d.get("thresholds") or []), d.get("every"),
            _time(d.get("disabled_at")), d.get("secret"), _time(d.get("previous_secret_expires_at")),
            d.get("window"), d.get("above"), d.get("below"),
        )


@dataclass
class Delivery:
    """One event sent, or being sent, to a webhook."""

    id: str
    status: str  #: pending, delivered or failed
    attempts: int
    created_at: Optional[dt.datetime]  #: recorded with the change that crossed
    event: Dict[str, Any]
    last_status_code: Optional[int] = None
    next_attempt_at: Optional[dt.datetime] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Delivery":
        return cls(
            str(d["id"]), d["status"], int(d.get("attempts", 0)), _time(d.get("created_at")),
            d.get("event") or {}, d.get("last_status_code"), _time(d.get("next_attempt_at")),
        )


@dataclass
class Event:
    """A change of a watched counter (docs/live-updates.md)."""

    type: str  #: "counter" (a new value) or "deleted"
    id: str  #: orders the changes of the stream; sent back as Last-Event-ID on reconnect
    name: str
    value: int = 0  #: for "counter"
    at: Optional[dt.datetime] = None  #: the change's commit time, for "counter"
    data: str = ""  #: the event's JSON as the service sent it
