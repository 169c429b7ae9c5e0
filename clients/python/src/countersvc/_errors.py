"""The error an answer of the service turns into, and the API's codes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._types import ImportReport


class Code:
    """The API's error codes (openapi.yaml, "Conventions"): compare
    ``Error.code`` with them."""

    INVALID_ARGUMENT = "invalid_argument"  # 400: a bad name, body or parameter
    UNAUTHENTICATED = "unauthenticated"  # 401: a token is needed, or it is unknown, revoked or expired
    PERMISSION_DENIED = "permission_denied"  # 403: outside the key's scope or prefixes, or a reserved name
    NOT_FOUND = "not_found"  # 404
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405
    CONFLICT = "conflict"  # 409: exists already, or an idempotency key reused for another request
    PAYLOAD_TOO_LARGE = "payload_too_large"  # 413
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # 415
    OUT_OF_RANGE = "out_of_range"  # 422: past int64 or the counter's bounds; nothing changed
    RATE_LIMITED = "rate_limited"  # 429
    UNAVAILABLE = "unavailable"  # 503 (and a proxy's 502 and 504)
    INTERNAL = "internal"  # 500


# The code of an answer that did not carry the API's error shape, such as a
# proxy's 502 page.
_CODE_OF_STATUS = {
    400: Code.INVALID_ARGUMENT,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND,
    405: Code.METHOD_NOT_ALLOWED,
    409: Code.CONFLICT,
    413: Code.PAYLOAD_TOO_LARGE,
    415: Code.UNSUPPORTED_MEDIA_TYPE,
    422: Code.OUT_OF_RANGE,
    429: Code.RATE_LIMITED,
    502: Code.UNAVAILABLE,
    503: Code.UNAVAILABLE,
    504: Code.UNAVAILABLE,
}


class Error(Exception):
    """An error answer of the service, or input the client refused before
    sending it (``status`` 0, with the code the service would have answered).

    Failures of the network are not Errors: they are ``OSError``s
    (``ConnectionError``, ``TimeoutError``), raised once the retries are spent.
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: int = 0,
        request_id: str = "",
        report: Optional["ImportReport"] = None,
        body: bytes = b"",
    ) -> None:
        super().__init__(code, message, status)
        self.code = code  #: the API's code, one of :class:`Code`'s
        self.message = message  #: the service's sentence, for people
        self.status = status  #: the HTTP status; 0 when refused before sending
        self.request_id = request_id  #: X-Request-ID, to find the request in the service's logs
        self.report = report  #: what a failed import did before it failed, if the answer said
        self.body = body  #: the answer as the service sent it

    def __str__(self) -> str:
        return f"{self.message.rstrip('.')} ({self.code}, {self.status})"

    def __repr__(self) -> str:
        return f"countersvc.Error(code={self.code!r}, status={self.status}, message={self.message!r}, request_id={self.request_id!r})"


def invalid(message: str) -> Error:
    """Input refused before sending, as the service would refuse it."""
    return Error(Code.INVALID_ARGUMENT, message)


def error_of_answer(status: int, reason: str, request_id: str, body: bytes) -> Error:
    """Turns a non-2xx answer into an Error."""
    from ._types import ImportReport

    try:
        shape = json.loads(body)
        err = shape.get("error") if isinstance(shape, dict) else None
        if isinstance(err, dict) and err.get("code"):
            report = shape.get("report")
            return Error(
                str(err["code"]),
                str(err.get("message", "")),
                status,
                request_id,
                ImportReport.from_json(report) if isinstance(report, dict) else None,
                body,
            )
    except ValueError:
        pass
    return Error(
        _CODE_OF_STATUS.get(status, Code.INTERNAL),
        f"The service answered {status} {reason} without the API's error body.",
        status,
        request_id,
        None,
        body,
    )
