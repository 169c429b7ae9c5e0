import type { ImportReport } from "./types.js";

/** The API's error codes (openapi.yaml, "Conventions"). */
export type ErrorCode =
  | "invalid_argument" // 400: a bad name, body or parameter
  | "unauthenticated" // 401: a token is needed, or it is unknown, revoked or expired
  | "permission_denied" // 403: outside the key's scope or prefixes, or a reserved name
  | "not_found" // 404
  | "method_not_allowed" // 405
  | "conflict" // 409: exists already, or an idempotency key reused for another request
  | "payload_too_large" // 413
  | "unsupported_media_type" // 415
  | "out_of_range" // 422: past int64 or the counter's bounds; nothing changed
  | "rate_limited" // 429
  | "unavailable" // 503 (and a proxy's 502 and 504)
  | "internal"; // 500

/** The code of an answer that did not carry the API's error shape, such as a proxy's 502 page. */
const codeOfStatus: Record<number, ErrorCode> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  422: "out_of_range",
  429: "rate_limited",
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
};

/**
 * An error answer of the service, or a request the client refused to send
 * because it breaks a rule the client can check itself (a name over 255
 * bytes, a bad label key): then `status` is the 400 the service would have
 * answered, `requestId` is empty and nothing was sent.
 */
export class CountersError extends Error {
  override readonly name = "CountersError";
  /** The API's code, such as "not_found". */
  readonly code: ErrorCode;
  /** The HTTP status. */
  readonly status: number;
  /** X-Request-ID, to find the request in the service's logs; "" when not sent. */
  readonly requestId: string;
  /** What a failed import did before it failed, if the answer carried it. */
  readonly report: ImportReport | undefined;
  /** The answer's body as the service sent it. */
  readonly body: string;

  constructor(init: { code: ErrorCode; status: number; message: string; requestId?: string; report?: ImportReport; body?: string }) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId ?? "";
    this.report = init.report;
    this.body = init.body ?? "";
  }
}

/** The error of a request refused before sending, with the code the service would answer. */
export function invalidArgument(message: string): CountersError {
  return new CountersError({ code: "invalid_argument", status: 400, message });
}

/** Turns a non-2xx answer, whose body was read as text, into a CountersError. */
export function errorOfAnswer(status: number, statusText: string, headers: Headers, body: string): CountersError {
  const requestId = headers.get("X-Request-ID") ?? "";
  try {
    const shape = JSON.parse(body) as { error?: { code?: unknown; message?: unknown }; report?: ImportReport };
    if (shape && typeof shape.error?.code === "string" && shape.error.code !== "") {
      return new CountersError({
        code: shape.error.code as ErrorCode,
        status,
        message: typeof shape.error.message === "string" ? shape.error.message : "",
        requestId,
        report: shape.report ?? undefined,
        body,
      });
    }
  } catch {
    // not the API's error body: a proxy's page
  }
  return new CountersError({
    code: codeOfStatus[status] ?? "internal",
    status,
    message: `The service answered ${status}${statusText ? " " + statusText : ""} without the API's error body.`,
    requestId,
    body,
  });
}
