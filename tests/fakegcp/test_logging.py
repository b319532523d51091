"""The fake's Cloud Logging entries.list (cloudlogging.py): pages as Google's API reference
states them, a default of 50 and at most 1000 (a larger or negative pageSize is refused)."""
import unittest

from fakeutil import FakeTestCase

BODY = {"resourceNames": ["projects/my-proj"], "orderBy": "timestamp asc"}


class Logging(FakeTestCase):

    def list(self, job_id, **kw):
        b = dict(BODY, filter='resource.type="ml_job" AND resource.labels.job_id="%s"' % job_id)
        b.update(kw)
        return self.fake.call("POST", "/v2/entries:list", b)

    def job_id(self):
        return self.create()["name"].rsplit("/", 1)[1]

    def add(self, job_id, n):
        self.fake.ctl("/logs", {"job_id": job_id, "entries": [{"textPayload": "x%d" % i} for i in range(n)]})

    def test_page_size_at_most_1000(self):
        jid = self.job_id()
        self.add(jid, 1200)
        st, body = self.list(jid, pageSize=1000)
        self.assertEqual((st, len(body["entries"]), body["nextPageToken"]), (200, 1000, "1000"))
        st, body = self.list(jid, pageSize=1000, pageToken="1000")
        self.assertEqual((st, len(body["entries"]), "nextPageToken" in body), (200, 203, False))
        st, body = self.list(jid)
        self.assertEqual((st, len(body["entries"])), (200, 50))
        st, body = self.list(jid, pageSize="7")
        self.assertEqual((st, len(body["entries"])), (200, 7))

    def test_a_page_size_over_1000_or_negative_is_refused(self):
        jid = self.job_id()
        for size in (1001, -1, "1001"):
            st, body = self.list(jid, pageSize=size)
            self.assertEqual(st, 400, size)
            err = body["error"]
            self.assertEqual((err["code"], err["status"]), (400, "INVALID_ARGUMENT"))
            self.assertEqual(err["details"][0]["fieldViolations"][0]["field"], "page_size")
        st, body = self.list(jid, pageSize=1001)
        self.assertEqual(body["error"]["message"], "Invalid page_size 1001: it must be between 0 and 1000.")
        st, body = self.list(jid, pageSize="many")
        self.assertEqual((st, body["error"]["status"]), (400, "INVALID_ARGUMENT"))


if __name__ == "__main__":
    unittest.main()
