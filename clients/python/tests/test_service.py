"""The client's calls against the real service (COUNTERS_URL)."""

import datetime as dt
import io
import os
import unittest

import countersvc
from countersvc import Code
from support import RUN, client, name, need


class Calls(unittest.TestCase):
    def setUp(self) -> None:
        need("COUNTERS_URL")
        self.c = client()
        self.addCleanup(self.c.close)

    def test_counters_are_incremented_set_listed_reset_and_deleted(self) -> None:
        self.c.ready()
        n = name(self, "books/Red Horse Hill")
        self.assertEqual(self.c.increment(n, 12), 12)
        self.assertEqual(self.c.increment(n, -2), 10)
        ctr = self.c.get(n)
        self.assertEqual((ctr.name, ctr.value, ctr.min, ctr.max), (n, 10, None, None))
        self.assertEqual(ctr.created_at.tzinfo, dt.timezone.utc)

        s = name(self, "stock")
        ctr, created = self.c.set(s, 20, min=0)
        self.assertTrue(created)
        self.assertEqual((ctr.value, ctr.min), (20, 0))
        ctr, created = self.c.set(s, 25)
        self.assertFalse(created)
        self.assertEqual(ctr.min, 0, "a set without min keeps the bound")
        ctr, _ = self.c.set(s, 25, min=None)
        self.assertIsNone(ctr.min, "min=None removes the bound")
        with self.assertRaises(countersvc.Error) as cm:
            self.c.set(s, 1, create_only=True)
        self.assertEqual((cm.exception.code, cm.exception.status), (Code.CONFLICT, 409))
        self.assertTrue(cm.exception.request_id, "the answer's X-Request-ID")

        prefix = name(self, "")
        self.assertEqual([c.name for c in self.c.list(prefix, page_size=1)], sorted([n, s]))
        self.assertEqual(self.c.reset(prefix, 3), 2)
        self.assertEqual(self.c.get(n).value, 3)
        self.c.delete(n)
        with self.assertRaises(countersvc.Error) as cm:
            self.c.get(n)
        self.assertEqual((cm.exception.code, cm.exception.status), (Code.NOT_FOUND, 404))

    def test_a_list_follows_every_page_in_name_order(self) -> None:
        prefix = name(self, "")
        want = [f"{prefix}{i:02d}" for i in range(7)]
        self.c.batch([countersvc.Step(n, i) for i, n in enumerate(want)])
        self.c.increment(prefix[:-1] + "x")  # beside the prefix, not under it
        self.assertEqual([c.name for c in self.c.list(prefix, page_size=3)], want)
        it = self.c.list(prefix, page_size=3)
        self.assertEqual(next(it).name, want[0])
        it.close()  # stopping early is fine

    def test_every_error_code_of_the_service_is_an_error_with_it(self) -> None:
        cases = {
            (Code.PERMISSION_DENIED, 403): lambda: self.c.increment("_reserved"),
            (Code.NOT_FOUND, 404): lambda: self.c.get(name(self, "missing")),
            (Code.OUT_OF_RANGE, 422): lambda: (self.c.set(name(self, "max"), 2**63 - 1),
                                               self.c.increment(name(self, "max"))),
            (Code.PAYLOAD_TOO_LARGE, 413): lambda: self.c.create_ticket(1, "big", "x" * 100_000),
            (Code.INVALID_ARGUMENT, 400): lambda: self.c.history(name(self, "x"), countersvc.HistoryOptions(tz="Mars/Olympus")),
        }
        for (code, status), call in cases.items():
            with self.subTest(code):
                with self.assertRaises(countersvc.Error) as cm:
                    call()
                e = cm.exception
                self.assertEqual((e.code, e.status), (code, status))
                self.assertTrue(e.message)
                self.assertIn(code, str(e))

    def test_history_and_breakdowns_count_the_labelled_increments(self) -> None:
        a, b = name(self, "a"), name(self, "b")
        web = {"channel": "web", "region": "EU"}
        self.c.increment(a, 3, labels=web)
        for _ in range(2):  # a retry with the same key counts once
            self.c.increment(a, 2, labels=web, idempotency_key=f"sale-{a}")
        self.c.batch([countersvc.Step(a, 4, {"channel": "shop"}), countersvc.Step(b, 1)])

        h = self.c.history(a, countersvc.HistoryOptions(step="day", tz="Europe/Berlin"))
        self.assertEqual((h.total, sum(p.count for p in h.points), len(h.points), h.tz, h.name), (9, 9, 30, "Europe/Berlin", a))
        p = self.c.prefix_history(name(self, ""), countersvc.HistoryOptions(step="month"))
        self.assertEqual((p.total, p.prefix), (10, name(self, "")))
        # A date is the day's midnight in tz: three Berlin days across the
        # switch to summer time.
        r = self.c.history(a, countersvc.HistoryOptions(step="day", from_=dt.date(2026, 3, 28), to=dt.date(2026, 3, 31), tz="Europe/Berlin"))
        self.assertEqual(len(r.points), 3)
        self.assertEqual(r.points[2].start.isoformat(), "2026-03-30T00:00:00+02:00")

        bd = self.c.breakdown(a, "channel")
        self.assertEqual([(row.value, row.count) for row in bd.rows], [("web", 5), ("shop", 4)])
        self.assertEqual((bd.total, bd.more, bd.by), (9, 0, "channel"))
        top = self.c.prefix_breakdown(name(self, ""), countersvc.BY_NAME, countersvc.BreakdownOptions(limit=1))
        self.assertEqual((top.total, top.more, [(row.value, row.count) for row in top.rows]), (10, 1, [(a, 9)]))

    def test_page_hits_count(self) -> None:
        page = f"hits/{name(self, 'index.html')}"
        self.assertEqual(self.c.hit(page), 1)
        self.assertEqual(self.c.get(page).value, 1)
        with self.assertRaises(countersvc.Error) as cm:
            self.c.hit(name(self, "not-public"))
        self.assertEqual(cm.exception.code, Code.PERMISSION_DENIED)

    def test_what_export_writes_import_reads(self) -> None:
        prefix = name(self, "")
        self.c.set(prefix + "a", 10, min=0)
        self.c.increment(prefix + "b", 2)
        out = io.BytesIO()
        self.assertEqual(self.c.export_to(out, prefix), 2)
        lines = out.getvalue()
        for source in (lines, io.BytesIO(lines), iter(lines.splitlines(keepends=True))):
            with self.subTest(type(source).__name__):
                rep = self.c.import_from(source)
                self.assertEqual((rep.read, rep.skipped, rep.created), (2, 2, 0))
        self.c.delete(prefix + "a")
        rep = self.c.import_from(io.BytesIO(lines), overwrite=True, atomic=True)
        self.assertEqual((rep.created, rep.overwritten, rep.applied), (1, 1, True))
        self.assertEqual(self.c.get(prefix + "a").min, 0)
        with self.assertRaises(countersvc.Error) as cm:
            self.c.import_from(b'{"name":"' + prefix.encode() + b'c","value":"lots"}\n', atomic=True)
        e = cm.exception
        self.assertEqual(e.code, Code.INVALID_ARGUMENT)
        self.assertIsNotNone(e.report)
        assert e.report is not None
        self.assertEqual((e.report.refused, e.report.lines[0].reason), (1, "malformed"))

    def test_tickets_are_numbered_per_board(self) -> None:
        slug = "P" + RUN[:6].upper()  # a fresh board of each run
        b = self.c.create_board(1, slug.lower(), "Ninja Board")
        self.assertEqual(b.slug, slug)
        with self.assertRaises(countersvc.Error) as cm:
            self.c.create_board(1, slug, "again")
        self.assertEqual(cm.exception.code, Code.CONFLICT)
        for i in range(1, 4):
            self.assertEqual(self.c.create_ticket(b.id, f"ticket {i}").key, f"{slug}-{i}")
        self.c.delete_ticket(b.id, 2)
        self.assertEqual([t.key for t in self.c.tickets(b.id)], [f"{slug}-1", f"{slug}-3"])
        self.assertEqual(self.c.ticket_by_key(1, f"{slug}-3").local_id, 3)
        self.assertEqual(self.c.ticket(b.id, 1).title, "ticket 1")
        self.assertEqual(self.c.board(b.id).title, "Ninja Board")

    def test_webhooks_are_made_listed_rotated_and_deleted(self) -> None:
        # The service under test allows this machine's addresses; nothing
        # crosses the threshold, so nothing is called.
        w = self.c.create_webhook("http://127.0.0.1:9/hook", name=name(self, "stock"), thresholds=[0], direction="down")
        self.assertTrue(w.secret and w.secret.startswith("whsec_"))
        listed = [x for x in self.c.webhooks() if x.id == w.id]
        self.assertEqual(len(listed), 1)
        self.assertIsNone(listed[0].secret)
        self.assertEqual(self.c.webhook(w.id).thresholds, [0])
        r = self.c.rotate_webhook_secret(w.id)
        self.assertNotEqual(r.secret, w.secret)
        self.assertIsNotNone(r.previous_secret_expires_at)
        self.assertEqual(self.c.deliveries(w.id), [])
        self.c.enable_webhook(w.id)
        self.c.delete_webhook(w.id)
        with self.assertRaises(countersvc.Error) as cm:
            self.c.webhook(w.id)
        self.assertEqual(cm.exception.code, Code.NOT_FOUND)

    def test_an_alert_is_made_with_its_window_and_shown_so(self) -> None:
        w = self.c.create_webhook("http://127.0.0.1:9/hook", prefix=name(self, "shop/"), window="6h", below=1)
        try:
            got = self.c.webhook(w.id)
            self.assertEqual((got.window, got.above, got.below, got.thresholds), ("6h", None, 1, []))
            with self.assertRaises(countersvc.Error) as cm:
                self.c.create_webhook("http://127.0.0.1:9/hook", name=name(self, "x"), window="1m", above=5)
            self.assertEqual(cm.exception.code, Code.INVALID_ARGUMENT)
        finally:
            self.c.delete_webhook(w.id)


class Keys(unittest.TestCase):
    def test_a_key_works_within_its_prefixes_and_stops_once_deleted(self) -> None:
        need("COUNTERS_ADMIN_URL", "COUNTERS_ADMIN_TOKEN")
        url = os.environ["COUNTERS_ADMIN_URL"]
        with self.assertRaises(countersvc.Error) as cm:
            client(url).get("x")
        self.assertEqual((cm.exception.code, cm.exception.status), (Code.UNAUTHENTICATED, 401))
        admin = client(url, token=os.environ["COUNTERS_ADMIN_TOKEN"])
        k = admin.create_key("shop A", ["read", "write"], prefixes=["shopA/"])
        self.assertTrue(k.secret and k.secret.startswith("ck_"))
        shop = client(url, token=k.secret)
        self.assertEqual(shop.increment("shopA/sales"), 1)
        with self.assertRaises(countersvc.Error) as cm:
            shop.increment("shopB/sales")
        self.assertEqual(cm.exception.code, Code.PERMISSION_DENIED)
        self.assertEqual([(x.name, x.secret) for x in admin.keys()], [("shop A", None)])
        self.assertEqual(admin.key(k.id).prefixes, ["shopA/"])
        with self.assertRaises(countersvc.Error) as cm:
            shop.reset_all(0)
        self.assertEqual(cm.exception.code, Code.PERMISSION_DENIED)
        self.assertEqual(admin.reset_all(7), 1)
        self.assertEqual(shop.get("shopA/sales").value, 7)
        admin.delete_key(k.id)
        with self.assertRaises(countersvc.Error) as cm:
            shop.get("shopA/sales")
        self.assertEqual(cm.exception.code, Code.UNAUTHENTICATED)


if __name__ == "__main__":
    unittest.main()
