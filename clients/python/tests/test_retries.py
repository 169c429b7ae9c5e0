"""Writes through proxies that lose answers count once: the same
Idempotency-Key on every attempt (internal/clienttest/python_test.go
checks the keys the proxies saw)."""

import os
import threading
import unittest

import countersvc
from support import client, name, need


class ThroughADropProxy(unittest.TestCase):
    """Each of COUNTERS_DROP_URLS drops the answer of its first write
    after the service committed it: one proxy per write below."""

    def test_a_write_whose_answer_was_lost_counts_once(self) -> None:
        need("COUNTERS_URL", "COUNTERS_DROP_URLS")
        urls = os.environ["COUNTERS_DROP_URLS"].split(",")
        direct = client()
        writes = {
            "increment": (lambda c, n: c.increment(n, 5), 5),
            "labelled increment": (lambda c, n: c.increment(n, 4, labels={"channel": "web"}), 4),
            "batch": (lambda c, n: c.batch([countersvc.Step(n + "-other"), countersvc.Step(n, 7)])[1].value, 7),
            "set": (lambda c, n: c.set(n, 3, create_only=True)[0].value, 3),
        }
        self.assertEqual(len(urls), len(writes), "one drop proxy per write")
        for url, (what, (write, want)) in zip(urls, writes.items()):
            with self.subTest(what):
                n = name(self, what)
                self.assertEqual(write(client(url), n), want, "the retry answers what the lost attempt did")
                self.assertEqual(direct.get(n).value, want, "the counter moved once")


class ThroughAFailingProxy(unittest.TestCase):
    """COUNTERS_FLAKY_URL answers each write 429, 502, 503 and 504 first
    (the 502 and 504 after the service did it), then lets it through."""

    def test_concurrent_increments_each_count_once(self) -> None:
        need("COUNTERS_URL", "COUNTERS_FLAKY_URL")
        n = name(self, "sales")
        threads, each = 4, 5
        errors = []

        def sell() -> None:
            c = client(os.environ["COUNTERS_FLAKY_URL"])
            try:
                for _ in range(each):
                    c.increment(n, 1, labels={"channel": "web"})
            except Exception as e:  # reported below, in the test's thread
                errors.append(e)

        ts = [threading.Thread(target=sell) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(client().get(n).value, threads * each, "every increment counted exactly once")
        bd = client().breakdown(n, "channel")
        self.assertEqual([(r.value, r.count) for r in bd.rows], [("web", threads * each)])

    def test_a_batch_and_a_keyed_increment_count_once(self) -> None:
        need("COUNTERS_URL", "COUNTERS_FLAKY_URL")
        c = client(os.environ["COUNTERS_FLAKY_URL"])
        n = name(self, "revenue")
        self.assertEqual([v.value for v in c.batch([countersvc.Step(n, 2598), countersvc.Step(n, 1)])], [2598, 2599])
        self.assertEqual(c.increment(n, 1, idempotency_key=f"order-{n}"), 2600)
        self.assertEqual(c.increment(n, 1, idempotency_key=f"order-{n}"), 2600, "the same order again")
        self.assertEqual(client().get(n).value, 2600)


if __name__ == "__main__":
    unittest.main()
