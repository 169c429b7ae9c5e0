// The rules the client checks before sending, where they are local: the
// service would refuse the same request with 400 invalid_argument, so
// refusing it here saves a round trip and a retry loop, and gives the same
// code. Messages follow the service's (counters/counter.go, labels.go,
// idempotency.go).
import { invalidArgument } from "./errors.js";
import type { Labels } from "./types.js";

const utf8 = new TextEncoder();

// A UTF-16 surrogate without its pair has no UTF-8 form: TextEncoder would
// send U+FFFD in its place, another name than the one asked for.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// eslint-disable-next-line no-control-regex
const control = /[\u0000-\u001F\u007F]/;
// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]*$/u;
const labelKey = /^[a-z0-9_]{1,32}$/;
// eslint-disable-next-line no-control-regex
const printableASCII = /^[\x20-\x7E]{1,255}$/;

/** Refuses a counter name that is not 1 to 255 bytes of valid UTF-8 without control characters. */
export function checkName(name: string): void {
  if (typeof name !== "string" || name === "") throw invalidArgument("Counter name must not be empty.");
  if (loneSurrogate.test(name)) throw invalidArgument("Counter name must be valid UTF-8.");
  const n = utf8.encode(name).length;
  if (n > 255) throw invalidArgument(`Counter name is ${n} bytes long; at most 255 are allowed.`);
  if (control.test(name)) throw invalidArgument("Counter name must not contain control characters.");
}

/** Refuses labels the service would refuse. */
export function checkLabels(labels: Labels | undefined): void {
  if (labels === undefined) return;
  const keys = Object.keys(labels).sort();
  if (keys.length > 8) throw invalidArgument(`An increment carries at most 8 labels, not ${keys.length}.`);
  for (const k of keys) {
    if (!labelKey.test(k)) {
      throw invalidArgument(`A label's key must be 1 to 32 characters of a-z, 0-9 and _; ${JSON.stringify(k.slice(0, 40))} is not.`);
    }
    const v = labels[k];
    if (typeof v !== "string") throw invalidArgument(`The value of label ${JSON.stringify(k)} must be a string.`);
    if (loneSurrogate.test(v)) throw invalidArgument(`The value of label ${JSON.stringify(k)} must be valid UTF-8.`);
    const n = utf8.encode(v).length;
    if (n === 0 || n > 128) throw invalidArgument(`The value of label ${JSON.stringify(k)} must be 1 to 128 bytes long, not ${n}.`);
    if (!printable.test(v)) {
      throw invalidArgument(`The value of label ${JSON.stringify(k)} must be printable: no control or invisible characters.`);
    }
  }
}

/** Refuses an Idempotency-Key that is not 1 to 255 printable ASCII characters. */
export function checkIdempotencyKey(key: string): void {
  if (!printableASCII.test(key)) {
    throw invalidArgument("Idempotency-Key must be 1 to 255 printable ASCII characters.");
  }
}

/**
 * Refuses a step or value that a JS number cannot carry exactly: past
 * 2^53-1 it would be sent rounded, another number than the one asked for.
 */
export function checkInteger(what: string, n: number): void {
  if (!Number.isSafeInteger(n)) {
    throw invalidArgument(
      `${what} must be an integer between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER} (what a JS number holds exactly), not ${n}.`,
    );
  }
}
