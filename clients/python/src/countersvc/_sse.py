"""The parser of a Server-Sent Events stream (the WHATWG event-stream
format), kept across reconnections for its last id and retry."""

from __future__ import annotations

import json
import time
from typing import Optional

from ._types import Event, parse_time


class Stream:
    def __init__(self, retry: float) -> None:
        self.event = ""
        self.data = ""
        self.has_data = False
        self.id_buf = ""  # the id of the event being read
        self.last_id = ""  # of the last whole event
        self.retry = retry  # seconds before a reconnection

    def wait(self) -> None:
        time.sleep(self.retry)

    def line(self, line: str) -> Optional[Event]:
        """Takes one line of the stream; returns an event when the line ends one."""
        if line == "":
            # An event counts as seen only once it is whole: the id of one cut
            # by a broken connection must not be sent back, or its value would
            # be taken for delivered.
            self.last_id = self.id_buf
            ev = self._dispatch() if self.has_data else None
            self.event, self.data, self.has_data = "", "", False
            return ev
        if line.startswith(":"):
            return None  # a comment: the keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self.event = value
        elif field == "data":
            self.data = self.data + "\n" + value if self.has_data else value
            self.has_data = True
        elif field == "id":
            if "\0" not in value:
                self.id_buf = value
        elif field == "retry":
            if value.isdigit():
                self.retry = int(value) / 1000
        return None

    def _dispatch(self) -> Optional[Event]:
        try:
            d = json.loads(self.data)
            at = d.get("at")
            return Event(self.event or "message", self.last_id, str(d["name"]), int(d.get("value", 0)),
                         parse_time(at) if isinstance(at, str) else None, self.data)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # not an event of the contract: nothing to report
