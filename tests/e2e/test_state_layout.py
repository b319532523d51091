"""Issue 38: a state of more than 256 jobs keeps them in fanned-out folders (jobs/BB/NAME.json,
docs/format.md), so a save rewrites a few small trees; every reader of the state branch reads
them: the plan, vx state list and show, vx log of one job and of every one, and the apply that
writes only the record it changed."""
import re

from harness import FakeTestCase, job_yaml

FAST = {"VX_CREATE_RATE_PER_MINUTE": "unlimited", "VX_RATE_PER_MINUTE": "unlimited"}
COMMIT_TIME = re.compile(r"^  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  ", re.M)


def bucket(name):
    """docs/format.md: the first two hex digits of the 64-bit FNV-1a hash of NAME."""
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class FannedState(FakeTestCase):

    def jobs(self, n, **changed):
        return {"j%03d" % i: job_yaml("j%03d" % i, **changed.get("j%03d" % i, {})) for i in range(n)}

    def tree(self, rev="vx/state/e2e"):
        return self.repo.git("ls-tree", "-r", rev, "jobs/").splitlines()

    def test_300_jobs_fan_out_and_read_back(self):
        self.fake.post("/_fake/rate-limits", {"vertex_creates_per_minute": 100000,
                                              "vertex_requests_per_minute": 100000})
        self.repo.write(self.jobs(300))
        r = self.repo.apply("-parallelism", "16", env=FAST)
        self.assertEqual((r.code, r.err), (0, ""), r)

        # Only buckets under jobs/, each record in the one its name hashes to.
        top = self.repo.git("ls-tree", "vx/state/e2e", "jobs/").splitlines()
        self.assertEqual({l.split()[1] for l in top}, {"tree"})
        files = [l.split("\t")[1] for l in self.tree()]
        self.assertEqual(len(files), 300)
        for f in files:
            _, b, name = f.split("/")
            self.assertEqual(b, bucket(name[:-len(".json")])[:2], f)

        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertEqual([l.split()[0] for l in r.out.splitlines()], ["job.j%03d" % i for i in range(300)])
        r = self.repo.vx("state", "show", "job.j123", "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertIn('"address":\t"job.j123"', r.out)

        # One job changed: the apply rewrites its record and no other.
        before = dict(l.split("\t")[::-1] for l in self.tree())
        self.repo.write(self.jobs(300, j123={"epochs": 5}))
        r = self.repo.apply(env=FAST)
        self.assertEqual((r.code, r.err), (0, ""), r)
        after = dict(l.split("\t")[::-1] for l in self.tree())
        self.assertEqual(sorted(after), sorted(before))
        self.assertEqual([f for f in after if after[f] != before[f]], ["jobs/%s/j123.json" % bucket("j123")[:2]])

        # vx log reads the runs of one job, and of every job, from the fanned-out history.
        r = self.repo.vx("log", "job.j123", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual([l.split()[1] for l in COMMIT_TIME.sub("  T  ", r.out).splitlines()[1:]],
                         ["create", "cancel", "replace"])
        r = self.repo.vx("log", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(len(re.findall(r"^job\.j\d{3}", r.out, re.M)), 300)
