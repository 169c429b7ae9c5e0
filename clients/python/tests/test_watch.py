"""Live updates against the real service, and a resumption after a cut."""

import queue
import re
import socket
import threading
import unittest
import urllib.parse
from typing import Iterator, List

import countersvc
from support import URL, client, name, need


class CutProxy:
    """Forwards TCP connections to the service and cuts them all on
    demand, as a load balancer that restarts; it records the Last-Event-ID
    of each request."""

    def __init__(self, target: str) -> None:
        u = urllib.parse.urlsplit(target)
        self.target = (u.hostname, u.port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        self.conns: List[socket.socket] = []
        self.last_ids: List[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            s = socket.create_connection(self.target)
            with self.lock:
                self.conns += [c, s]
            threading.Thread(target=self._pipe, args=(c, s, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if requests and b.startswith(b"GET "):
                    m = re.search(rb"\r\nLast-Event-ID: ([^\r]*)\r\n", b, re.I)
                    with self.lock:
                        self.last_ids.append(m.group(1).decode() if m else "")
                dst.sendall(b)
        except OSError:
            pass
        finally:
            for x in (src, dst):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def ids(self) -> List[str]:
        with self.lock:
            return list(self.last_ids)

    def close(self) -> None:
        self.listener.close()
        self.cut()


def watching(events: Iterator[countersvc.Event]) -> "queue.Queue[object]":
    """Runs a watch in a thread; its events (or the error that ended it) come on the queue."""
    q: "queue.Queue[object]" = queue.Queue()

    def run() -> None:
        try:
            for ev in events:
                q.put(ev)
        except Exception as e:
            q.put(e)

    threading.Thread(target=run, daemon=True).start()
    return q


def next_event(t: unittest.TestCase, q: "queue.Queue[object]") -> countersvc.Event:
    try:
        ev = q.get(timeout=10)
    except queue.Empty:
        t.fail("no event within 10 s")
    if isinstance(ev, Exception):
        raise ev
    assert isinstance(ev, countersvc.Event)
    return ev


def until_value(t: unittest.TestCase, q: "queue.Queue[object]", want: int) -> List[int]:
    seen = []
    while True:
        v = next_event(t, q).value
        seen.append(v)
        if v == want:
            return seen
        if v > want:
            t.fail(f"value {v} came before {want} (saw {seen})")


class Watch(unittest.TestCase):
    def setUp(self) -> None:
        need("COUNTERS_URL")
        self.c = client()

    def test_the_current_value_then_new_values_in_order(self) -> None:
        n = name(self, "live")
        self.c.set(n, 0)
        q = watching(self.c.watch(n))
        first = next_event(self, q)
        self.assertEqual((first.type, first.name, first.value), ("counter", n, 0))
        self.assertTrue(first.id)
        self.assertIsNotNone(first.at)
        for _ in range(20):
            self.c.increment(n)
        seen = until_value(self, q, 20)
        self.assertEqual(seen, sorted(seen), "values went back")

    def test_a_cut_connection_resumes_with_last_event_id(self) -> None:
        n = name(self, "resumed")
        self.c.set(n, 1)
        proxy = CutProxy(URL)
        self.addCleanup(proxy.close)
        q = watching(client(proxy.url).watch(n))
        first = next_event(self, q)
        self.assertEqual(first.value, 1)
        proxy.cut()
        for _ in range(5):
            self.c.increment(n)
        seen = until_value(self, q, 6)
        self.assertGreater(seen[0], 1, "after the reconnection, new values only")
        self.assertEqual(proxy.ids()[:2], ["", first.id], "Last-Event-ID: none, then the first event's")

    def test_a_prefix_and_a_page(self) -> None:
        prefix = name(self, "")
        q = watching(self.c.watch_prefix(prefix))
        # A prefix stream sends changes only: change a counter until it shows it is open.
        while True:
            self.c.increment(prefix + "a")
            try:
                ev = q.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(ev, countersvc.Event) and ev.name == prefix + "a":
                break
        self.c.delete(prefix + "a")
        while True:
            ev = next_event(self, q)
            if ev.type == "deleted":
                self.assertEqual(ev.name, prefix + "a")
                break
        page = f"hits/{prefix}page"
        h = watching(self.c.watch_hits(page))
        self.assertEqual(next_event(self, h).value, 0)
        self.c.hit(page)
        until_value(self, h, 1)

    def test_a_counter_that_does_not_exist_raises_not_found(self) -> None:
        with self.assertRaises(countersvc.Error) as cm:
            next(self.c.watch(name(self, "missing")))
        self.assertEqual(cm.exception.code, countersvc.Code.NOT_FOUND)


if __name__ == "__main__":
    unittest.main()
