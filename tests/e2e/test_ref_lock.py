"""A git ref's lock file held by a writer that is only paused (docs/leases.md,
"Ref lock files"): another apply waits, fails cleanly and never takes the lock
over, however long it waits; the paused writer's update lands when it resumes,
and the state is never overwritten by a writer that lost its lock."""
import os
import signal
import subprocess
import time
import unittest

from harness import FakeTestCase, VX_BIN, Result, job_yaml, process_state


class RefLock(FakeTestCase):
    maxDiff = None

    def wait_stopped(self, p):
        """Until p has stopped itself (VX_TEST_PAUSE), polling its state."""
        deadline = time.time() + 60
        while time.time() < deadline:
            if process_state(p.pid) in ("T", "t"):
                return
            if p.poll() is not None:
                out, err = p.communicate()
                self.fail("the apply ran to the end instead of pausing:\nexit %d\n%s\n%s"
                          % (p.returncode, out, err))
            time.sleep(0.02)
        self.fail("the apply did not pause")

    def tip(self, ref):
        return self.repo.git("rev-parse", ref).strip()

    def test_live_writers_lock_file_is_not_taken_over(self):
        """A git process (or a vx on another host) holds the state branch's
        lock file, paused half-way through its update: vx knows nothing of
        it but its age, which stays far below the 10 minutes vx waits for."""
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        ref = "refs/heads/vx/state/e2e"
        before = self.tip(ref)
        # The paused writer's update: a commit on the state, written into the lock file.
        tree = self.repo.git("rev-parse", before + "^{tree}").strip()
        theirs = self.repo.git("commit-tree", tree, "-p", before, "-m", "another writer").strip()
        lock = os.path.join(self.repo.root, ".git", ref + ".lock")
        with open(lock, "x") as f:
            f.write(theirs + "\n")

        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        started = time.monotonic()
        b = self.repo.apply()
        waited = time.monotonic() - started
        self.assertEqual(b.code, 1, b)
        self.assertEqual(b.err.splitlines()[-1],
                         "vx: apply stopped: writing the state failed: updating the state branch: %s is still "
                         "held after 10 s: a git or vx process is writing that ref, perhaps "
                         "paused, or one ended while writing it; if no git or vx process is at "
                         "work on this repository, remove that file" % lock)
        self.assertGreaterEqual(waited, 10)
        # Nothing was sent, the lock file is the writer's still, the state is untouched.
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        with open(lock) as f:
            self.assertEqual(f.read(), theirs + "\n")
        self.assertEqual(self.tip(ref), before)

        # The writer resumes: its update lands as it meant it to.
        os.rename(lock, os.path.join(self.repo.root, ".git", ref))
        self.assertEqual(self.tip(ref), theirs)
        # And the next apply builds on it.
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.repo.git("merge-base", "--is-ancestor", theirs, ref)  # raises when it is not

    def start_paused_apply(self):
        """An apply of a new job "a" that stops itself (SIGSTOP) in its first ref update."""
        self.repo.write({"a": job_yaml("a")})
        e = self.fake.env()
        e["VX_TEST_PAUSE"] = "ref-update"
        return subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"],
                                cwd=self.repo.root, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    def test_paused_apply_is_not_overtaken_in_its_ref_update(self):
        """A vx apply stopped (SIGSTOP) in the middle of a ref update, as a
        suspended laptop would be: a second apply waits past the old 5 s,
        fails without writing, and the first one's update lands on resume."""
        a = self.start_paused_apply()
        try:
            self.wait_stopped(a)
            started = time.monotonic()
            b = self.repo.apply("-lock-timeout", "60s")
            waited = time.monotonic() - started
        finally:
            a.send_signal(signal.SIGCONT)
        self.assertEqual(b.code, 1, b)
        self.assertEqual(b.err,
                         "vx: updating the lease: vx (pid %d "
                         "on %s) updating refs/vx/lease/e2e has not finished after 10 s: it is "
                         "alive, perhaps paused (stopped, suspended), and vx never takes a ref "
                         "lock over from a live process; let it finish, or end it, and try again\n"
                         % (a.pid, os.uname().nodename))
        self.assertGreaterEqual(waited, 10)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)
        out, err = a.communicate(timeout=120)
        ra = Result(subprocess.CompletedProcess(a.args, a.returncode, out, err)).checked()
        # The paused apply resumes where it stopped: its lease, its job, its state.
        self.assertEqual(ra.code, 0, ra)
        self.assertIn("Apply complete: 1 done, 0 failed.", ra.out)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        # No vx left a record of an unfinished update behind.
        with open(os.path.join(self.repo.root, ".git", "vx-ref-writer")) as f:
            self.assertEqual(f.read(), "")


    def test_lock_file_of_a_killed_apply_is_removed_at_once(self):
        """An apply killed in the middle of a ref update leaves its record: its
        pid is gone, so the lock file of that ref is removed without waiting."""
        a = self.start_paused_apply()
        try:
            self.wait_stopped(a)
        finally:
            a.kill()
            a.communicate(timeout=60)
        # What libgit2 would have left had the kill come a moment later.
        lock = os.path.join(self.repo.root, ".git", "refs", "vx", "lease", "e2e.lock")
        os.makedirs(os.path.dirname(lock), exist_ok=True)
        with open(lock, "x") as f:
            f.write("")
        b = self.repo.apply()
        self.assertEqual(b.code, 0, b)
        self.assertEqual(b.err, "vx: warn: removing %s: left by vx (pid %d on %s) updating "
                                "refs/vx/lease/e2e, which ended before it finished\n"
                         % (lock, a.pid, os.uname().nodename))
        self.assertFalse(os.path.exists(lock))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

if __name__ == "__main__":
    unittest.main()
