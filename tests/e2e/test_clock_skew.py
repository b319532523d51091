"""End to end: a watcher's "how long since" is asked of Google's clock, not the machine's.

Google stamps a job's createTime on its own clock; a watcher whose clock is off by some skew
would call a queued run stuck early (its clock ahead) or late (behind) by that skew. vx keeps
the offset of Google's clock from the Date header of each answer (the fake's follows its virtual
clock), so `stuck` fires when Google's time says so, however far the machine's clock is.
"""
import json
import time

from harness import FakeTestCase, job_yaml
from test_watch import Receiver

STUCK = "stuckAfter: 10m\n"
NOTIFY = "notify:\n  - urlEnv: HOOK\n    on: [stuck]\n"


class ClockSkew(FakeTestCase):

    def stuck_at_ten_minutes(self, skew_days):
        """The fake's clock skew_days from the machine's (whole seconds); a run that stays
        pending; a watcher looks at 9 min 59 s and at 10 min of the run's age."""
        start = int(time.time()) + skew_days * 86400
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))})
        self.fake.post("/_fake/timings", {"pending_seconds": 86400})
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        self.repo.write({"a": job_yaml("a") + STUCK}, extra_stack=NOTIFY)
        self.assertEqual(self.repo.apply(env=env).code, 0)
        [job] = self.live_jobs("a")
        self.fake.advance(599)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 2, r)                   # it recorded the run pending
        self.assertEqual(rcv.events(), [])
        self.fake.advance(1)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual((r.code, r.err, r.out[20:]), (0, "", " notify: job.a: stuck to notify[0] delivered\n"))
        self.assertEqual(rcv.events(), ["stuck"])
        ev = json.loads(rcv.got[0][1])
        self.assertEqual((ev["address"], ev["job"], ev["state"]), ("job.a", job["name"], "JOB_STATE_PENDING"))
        # Its time: createTime + stuckAfter, on Google's clock.
        self.assertEqual(ev["time"], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + 600)))

    def test_machine_clock_behind_google(self):
        self.stuck_at_ten_minutes(30)

    def test_machine_clock_ahead_of_google(self):
        self.stuck_at_ten_minutes(-30)
