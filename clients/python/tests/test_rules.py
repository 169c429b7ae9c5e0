"""The retry rules against a scripted server (as client/retry_test.go
holds the Go client to them): what is sent again, after what, with which
key; no service needed."""

import http.server
import io
import json
import socket
import threading
import time
import unittest
from typing import Callable, List, Tuple

import countersvc
from countersvc import Code

Answer = Callable[[http.server.BaseHTTPRequestHandler], None]


def answer(status: int, body: str = "", **headers: str) -> Answer:
    def send(h: http.server.BaseHTTPRequestHandler) -> None:
        b = body.encode()
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k.replace("_", "-"), v)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(b)))
        h.end_headers()
        h.wfile.write(b)
    return send


def api_error(status: int, code: str) -> Answer:
    return answer(status, json.dumps({"error": {"code": code, "message": "It failed."}}), X_Request_ID="req-1")


def dropped(h: http.server.BaseHTTPRequestHandler) -> None:
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)  # no answer at all


RATE_LIMITED = api_error(429, "rate_limited")
OK = answer(200, '{"name":"a","value":3}')


class Scripted:
    """A server that answers each request with the next of its answers
    (the last one repeats), and records what it was sent."""

    def __init__(self, t: unittest.TestCase, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: List[Tuple[str, str, dict, bytes]] = []
        scripted = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = bytearray(self.rfile.read(n) if n else b"")
                if self.headers.get("Transfer-Encoding") == "chunked":
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        body += self.rfile.read(size + 2)[:size]
                        if size == 0:
                            break
                i = min(len(scripted.requests), len(scripted.answers) - 1)
                scripted.requests.append((self.command, self.path, dict(self.headers), bytes(body)))
                scripted.answers[i](self)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        t.addCleanup(self.server.server_close)
        t.addCleanup(self.server.shutdown)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def keys(self) -> List[str]:
        return [h.get("Idempotency-Key", "") for _, _, h, _ in self.requests]


def fast(url: str, **kw: object) -> countersvc.Client:
    return countersvc.Client(url, backoff=0.001, max_backoff=0.005, timeout=10, **kw)  # type: ignore[arg-type]


class Rules(unittest.TestCase):
    def test_transient_failures_are_retried_with_one_idempotency_key(self) -> None:
        for what, failure in {
            "connection dropped": dropped,
            "429": answer(429, '{"error":{"code":"rate_limited","message":"Slow down."}}', Retry_After="0"),
            "502 from a proxy": answer(502, "<html>Bad Gateway</html>"),
            "503": api_error(503, "unavailable"),
            "504 from a proxy": answer(504),
        }.items():
            with self.subTest(what):
                s = Scripted(self, failure, failure, OK)
                c = fast(s.url)
                self.assertEqual(c.increment("a", 3), 3)
                keys = s.keys()
                self.assertEqual(len(keys), 3)
                self.assertTrue(keys[0])
                self.assertEqual(set(keys), {keys[0]}, "one key for every attempt of the call")
                c.increment("a", 3)
                self.assertNotEqual(s.keys()[3], keys[0], "a second call makes a key of its own")

    def test_refusals_are_not_retried_and_retries_are_bounded(self) -> None:
        for what, failure, kw, attempts, code in [
            ("400", api_error(400, "invalid_argument"), {}, 1, Code.INVALID_ARGUMENT),
            ("409", api_error(409, "conflict"), {}, 1, Code.CONFLICT),
            ("422", api_error(422, "out_of_range"), {}, 1, Code.OUT_OF_RANGE),
            ("500 without the error body", answer(500), {}, 1, Code.INTERNAL),
            ("503 past the default retries", api_error(503, "unavailable"), {}, 5, Code.UNAVAILABLE),
            ("503 with two retries", api_error(503, "unavailable"), {"retries": 2}, 3, Code.UNAVAILABLE),
            ("503 with retries off", api_error(503, "unavailable"), {"retries": 0}, 1, Code.UNAVAILABLE),
        ]:
            with self.subTest(what):
                s = Scripted(self, failure)
                with self.assertRaises(countersvc.Error) as cm:
                    fast(s.url, **kw).increment("a")
                self.assertEqual(cm.exception.code, code)
                self.assertEqual(len(s.requests), attempts)

    def test_creations_are_retried_only_when_nothing_happened(self) -> None:
        calls = {
            "a ticket": (lambda c: c.create_ticket(1, "t"), answer(
                201, '{"id":1,"board_id":1,"local_id":1,"key":"NINJA-1","title":"t","description":"","created_at":"2026-01-01T00:00:00Z"}')),
            "a page hit": (lambda c: c.hit("hits/a"), answer(200, '{"name":"hits/a","value":1}')),
            "a rotation": (lambda c: c.rotate_webhook_secret("1"), answer(
                200, '{"id":1,"url":"https://x.example/","name":"a","thresholds":[1],"direction":"up","created_at":"2026-01-01T00:00:00Z","secret":"whsec_x"}')),
        }
        for what, (call, ok) in calls.items():
            for failure, attempts in [(RATE_LIMITED, 2), (api_error(503, "unavailable"), 1), (dropped, 1)]:
                with self.subTest(what, attempts=attempts):
                    s = Scripted(self, failure, ok)
                    try:
                        call(fast(s.url))
                        self.assertEqual(attempts, 2, "the call succeeded without its retry")
                    except (countersvc.Error, OSError):
                        self.assertEqual(attempts, 1, "the call failed after its retry")
                    self.assertEqual(len(s.requests), attempts)

    def test_retry_after_is_honoured_within_the_timeout(self) -> None:
        s = Scripted(self, answer(429, '{"error":{"code":"rate_limited","message":"Slow down."}}', Retry_After="1"), answer(200, '{"name":"hits/a","value":1}'))
        start = time.monotonic()
        self.assertEqual(fast(s.url).hit("hits/a"), 1)
        self.assertGreaterEqual(time.monotonic() - start, 0.9, "retried before the Retry-After of 1 s")

        s = Scripted(self, answer(429, '{"error":{"code":"rate_limited","message":"Slow down."}}', Retry_After="30"))
        start = time.monotonic()
        with self.assertRaises(countersvc.Error) as cm:
            fast(s.url).hit("hits/a", timeout=3)
        self.assertEqual((cm.exception.code, len(s.requests)), (Code.RATE_LIMITED, 1))
        self.assertLess(time.monotonic() - start, 2, "waited for a Retry-After past the timeout")

    def test_a_delete_whose_answer_was_lost_succeeds(self) -> None:
        s = Scripted(self, dropped, api_error(404, "not_found"))
        fast(s.url).delete("a")  # the lost attempt deleted it
        s = Scripted(self, api_error(404, "not_found"))
        with self.assertRaises(countersvc.Error) as cm:
            fast(s.url).delete("a")
        self.assertEqual(cm.exception.code, Code.NOT_FOUND)

    def test_a_name_is_one_path_segment(self) -> None:
        s = Scripted(self, answer(200, '{"name":"books/Red Horse Hill","value":1}'))
        fast(s.url + "/v1/").increment("books/Red Horse Hill")
        self.assertEqual(s.requests[0][1], "/v1/counters/books%2FRed%20Horse%20Hill/increment")

    def test_an_export_that_did_not_finish_is_an_error(self) -> None:
        line = '{"name":"a","value":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}\n'
        for what, body, exc in [
            ("an error line", line + '{"error":{"code":"unavailable","message":"MySQL went away."}}\n', countersvc.Error),
            ("a cut line", line + '{"name":"b","val', ConnectionError),
        ]:
            with self.subTest(what):
                s = Scripted(self, answer(200, body))
                out = io.BytesIO()
                with self.assertRaises(exc):
                    fast(s.url).export_to(out)
                self.assertEqual(out.getvalue().decode(), line)

    def test_imports_are_retried_when_their_lines_can_be_sent_again(self) -> None:
        line = b'{"name":"a","value":1}\n'
        report = answer(200, '{"mode":"create","atomic":false,"applied":true,"read":1,"created":1,"overwritten":0,"skipped":0,"refused":0,"lines":[],"truncated":false}')
        for what, source, attempts in [
            ("bytes", lambda: line, 2),
            ("a seekable file", lambda: io.BytesIO(line), 2),
            ("a short stream", lambda: iter([line]), 2),
            ("a stream over 1 MiB", lambda: iter([line] * 50_000), 1),
        ]:
            with self.subTest(what):
                s = Scripted(self, dropped, report)
                try:
                    fast(s.url).import_from(source())
                except OSError:
                    self.assertEqual(attempts, 1, "only the long stream may fail")
                self.assertEqual(len(s.requests), attempts)
                if attempts == 2:
                    self.assertEqual(s.requests[1][3], line)
                    self.assertTrue(s.keys()[0])
                    self.assertEqual(s.keys()[0], s.keys()[1])

    def test_a_call_does_not_outlive_its_timeout(self) -> None:
        def slow(h: http.server.BaseHTTPRequestHandler) -> None:
            time.sleep(3)
            try:
                OK(h)
            except OSError:
                pass  # the client gave up, as it should

        s = Scripted(self, slow)
        start = time.monotonic()
        with self.assertRaises(TimeoutError):
            fast(s.url).get("a", timeout=0.5)
        self.assertLess(time.monotonic() - start, 2)


if __name__ == "__main__":
    unittest.main()
