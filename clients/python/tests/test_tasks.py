"""The three tasks of docs/client.md ("Python: three tasks"), as written
there, against the service."""

import unittest

from countersvc import Error
from support import client, name, need


class Tasks(unittest.TestCase):
    def setUp(self) -> None:
        need("COUNTERS_URL")
        self.c = client()

    def test_a_sale_with_retries(self) -> None:
        c = self.c
        shop = name(self, "shop")

        def record_sale(order_id: str, title: str, copies: int) -> int:
            # Counted once, however often it is retried, here or after a restart.
            return c.increment(f"{shop}/books/{title}", copies, labels={"channel": "web"},
                               idempotency_key=f"sale-{shop}-{order_id}")

        self.assertEqual(record_sale("1042", "Red Horse Hill", 2), 2)
        self.assertEqual(record_sale("1042", "Red Horse Hill", 2), 2, "the same order after a restart")
        self.assertEqual(record_sale("1043", "Red Horse Hill", 1), 3)

    def test_a_page_hit_badge_count(self) -> None:
        c = self.c
        page = "/" + name(self, "blog/hello")

        def hits_badge(path: str) -> str:
            try:
                hits = c.hit("hits" + path, timeout=2)  # never sent twice: a hit would count twice
            except (Error, OSError):
                return '<span class="badge">hits: -</span>'  # rate_limited or unavailable
            return f'<span class="badge">hits: {hits}</span>'

        self.assertEqual(hits_badge(page), '<span class="badge">hits: 1</span>')
        self.assertEqual(hits_badge("/" + "x" * 300), '<span class="badge">hits: -</span>')

    def test_a_live_dashboard_feed(self) -> None:
        c = self.c
        total = name(self, "sales/total")
        c.set(total, 41)
        pushed = []

        def push(name: str, value: int, at: object) -> None:
            pushed.append(value)
            if value == 41:
                c.increment(total)  # a sale elsewhere

        for ev in c.watch(total):  # the value now, then each change; reconnects by itself
            push(ev.name, ev.value, ev.at)  # to the page, over a WebSocket or SSE of its own
            if ev.value == 42:
                break
        self.assertEqual(pushed, [41, 42])


if __name__ == "__main__":
    unittest.main()
