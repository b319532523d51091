"""End to end: a deleted git state branch whose history is still reachable. A new state would
create every declared job again: when only the branch's reflog holds it, plan and apply refuse,
naming the commit, and `vx state restore` puts the branch back; with a remote, the remote-tracking
ref brings it back by itself. (The gcs backend's cases are in test_gcs.py.)"""
import os
import subprocess

from harness import FakeTestCase, job_yaml

BRANCH = "vx/state/e2e"


class GitStateLoss(FakeTestCase):

    def refusal(self, where, tip, serial):
        return ("vx: state branch %s does not exist, but its history does: %s names commit %s (serial %d), so "
                "the branch was deleted; starting a new state would create every job again. Restore it with: "
                "vx state restore (or by hand: git branch %s %s)\n" % (BRANCH, where, tip, serial, BRANCH, tip))

    def applied(self, extra_stack=""):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")}, extra_stack=extra_stack)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        tip = self.repo.git("rev-parse", BRANCH).strip()
        serial = int(self.repo.git("show", "%s:stack.json" % BRANCH).split('"serial":')[1].split(",")[0])
        return tip, serial

    def refused_twice(self, where, tip, serial):
        """A plan (every job would show as a create) and an apply (would make them again) refuse alike."""
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual((p.code, p.err), (1, self.refusal(where, tip, serial)), p)
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (1, self.refusal(where, tip, serial)), r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)

    def converges(self):
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        for job in ("a", "b"):
            self.assertEqual(len(self.live_jobs(job)), 1, job)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)

    def test_branch_lost_but_in_its_reflog(self):
        tip, serial = self.applied()
        # The ref file went (a clean-up, a broken copy of .git), its reflog stayed.
        os.remove(os.path.join(self.repo.root, ".git", "refs", "heads", *BRANCH.split("/")))
        self.assertEqual(self.repo.git("branch", "--list", BRANCH), "")
        where = "the reflog of refs/heads/" + BRANCH
        self.refused_twice(where, tip, serial)
        r = self.repo.vx("state", "restore", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err, r.out), (0, "", "state branch %s restored at commit %s (serial %d) "
                                                  "from %s\n" % (BRANCH, tip, serial, where)), r)
        self.assertEqual(self.repo.git("rev-parse", BRANCH).strip(), tip)
        r = self.repo.vx("state", "restore", "-C", self.repo.dir)
        self.assertEqual((r.code, r.out, r.err), (1, "", "vx: state restore: state branch %s exists; there is "
                                                  "nothing to restore\n" % BRANCH))
        self.converges()

    def test_branch_deleted_on_the_remote_comes_back_from_the_tracking_ref(self):
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.git("remote", "add", "origin", remote)
        tip, serial = self.applied("state: {backend: git, remote: origin}\n")
        # The next run fetched the branch into its remote-tracking ref.
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        # Deleted on the remote (from another clone) and here with git, reflog and all: the
        # remote-tracking ref still holds it, and the load takes the branch back from there.
        subprocess.run(["git", "--git-dir", remote, "update-ref", "-d", "refs/heads/" + BRANCH], check=True)
        self.repo.git("branch", "-D", BRANCH)
        self.assertEqual(self.repo.git("rev-parse", "refs/remotes/origin/" + BRANCH).strip(), tip)
        self.converges()
        self.assertEqual(self.repo.git("rev-parse", BRANCH).strip(), tip)
        # The apply changed nothing, so nothing was pushed yet; a restore says there is nothing to do.
        r = self.repo.vx("state", "restore", "-C", self.repo.dir)
        self.assertEqual((r.code, r.out, r.err), (1, "", "vx: state restore: state branch %s exists; there is "
                                                  "nothing to restore\n" % BRANCH))
