"""End to end: vx logs -f and a line Cloud Logging delivers late (issue 32).

Cloud Logging can deliver a line seconds after newer ones (written by another replica). A follow
that only asked for lines at or after the newest it had shown lost such a line for good; vx reads a
few seconds behind the newest line shown, as gcloud's stream does, and drops by insertId the lines
it has shown already, so the late line is printed, and printed once."""
import subprocess
import threading
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml


class LogsFollowLateLines(FakeTestCase):

    def lines(self, out):
        return out.splitlines()

    def test_a_line_stamped_before_the_newest_shown_is_printed_once(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        jid = a["name"].rsplit("/", 1)[1]
        created = a["createTime"][:19]  # 2026-01-01T00:00:00, the frozen clock's
        env = self.fake.env()
        env["VX_WAIT_POLL_MS"] = "50"
        p = subprocess.Popen([VX_BIN, "logs", "job.a", self.repo.dir, "-f"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        watchdog = threading.Timer(90, p.kill)  # a follow that never ends fails the test
        watchdog.start()
        self.addCleanup(watchdog.cancel)
        shown = [p.stdout.readline() for _ in range(3)]
        self.assertEqual(shown, ["%sZ  INFO      line %d of job %s\n" % (created[:-2] + "%02d" % i, i, jid)
                                 for i in (1, 2, 3)])
        # Now that line 3 (at +3 s) is shown, Cloud Logging delivers one stamped +2.5 s, and with it
        # one at +4 s. The follow has read (and found nothing) many times in between.
        self.fake.post("/_fake/logs", {"job_id": jid, "entries": [
            {"textPayload": "late from replica 1", "timestamp": created[:-2] + "02.500Z"}]})
        self.fake.post("/_fake/logs", {"job_id": jid, "entries": [
            {"textPayload": "epoch 1", "timestamp": created[:-2] + "04.000Z", "severity": "WARNING"}]})
        self.fake.advance(4000)  # the job ends: the follow reads the rest and stops
        out, err = p.communicate(timeout=60)
        self.assertEqual((p.returncode, err), (0, "vx: logs: %s succeeded\n" % a["name"]))
        self.assertEqual(out, "%s.500Z  INFO      late from replica 1\n"
                              "%sZ  WARNING   epoch 1\n" % (created[:-2] + "02", created[:-2] + "04"))


if __name__ == "__main__":
    unittest.main()
