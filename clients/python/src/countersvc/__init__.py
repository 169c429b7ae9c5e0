"""countersvc: the Python client of a service of named counters over HTTP.

    from countersvc import Client
    c = Client("http://localhost:8080", token=os.environ.get("COUNTERS_TOKEN"))
    value = c.increment("books/Red Horse Hill", 1, idempotency_key=order_id)

Standard library only. Retries and idempotency keys as the Go client's
(client/client.go); answered errors raise :class:`Error` with the API's code.
"""

from ._client import KEEP, WATCH_IDLE, Client
from ._errors import Code, Error
from ._types import (
    BY_NAME,
    Board,
    Breakdown,
    BreakdownOptions,
    BreakdownRow,
    Counter,
    Delivery,
    Event,
    History,
    HistoryOptions,
    HistoryStep,
    ImportLine,
    ImportReport,
    Key,
    Point,
    Step,
    Ticket,
    Value,
    Webhook,
)

__all__ = [
    "BY_NAME",
    "KEEP",
    "WATCH_IDLE",
    "Board",
    "Breakdown",
    "BreakdownOptions",
    "BreakdownRow",
    "Client",
    "Code",
    "Counter",
    "Delivery",
    "Error",
    "Event",
    "History",
    "HistoryOptions",
    "HistoryStep",
    "ImportLine",
    "ImportReport",
    "Key",
    "Point",
    "Step",
    "Ticket",
    "Value",
    "Webhook",
]
