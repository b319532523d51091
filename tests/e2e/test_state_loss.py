"""End to end: a deleted git state branch whose history is still reachable. A new state would
create every declared job again: when only the branch's reflog holds it, plan and apply refuse,
naming the commit, and `vx state restore` puts the branch back; with a remote, the remote-tracking
ref brings it back by itself. A state moved back to an older version (the branch by `git update-ref`, the
file by an older copy) forgets the jobs started since: plan and apply refuse it, naming both versions and
the fix. (The gcs backend's cases are in test_gcs.py.)"""
import json
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

    def serial(self, rev):
        return int(self.repo.git("show", "%s:stack.json" % rev).split('"serial":')[1].split(",")[0])

    def test_branch_moved_back_is_refused(self):
        # a: attempt 1 preempted, attempt 2 preempted: its budget of 2 is spent.
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted"})
        self.repo.write({"a": job_yaml("a", attempts=2)})
        self.assertEqual(self.repo.apply().code, 0)
        old = self.repo.git("rev-parse", BRANCH).strip()
        for _ in range(2):
            self.fake.advance(4000)
            self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        tip = self.repo.git("rev-parse", BRANCH).strip()
        # Moved back by hand to the state of the first apply: it forgets attempt 2.
        self.repo.git("update-ref", "refs/heads/" + BRANCH, old)
        refusal = ("vx: state branch %s went back: it is at commit %s (serial %d), but its reflog says it was "
                   "at commit %s (serial %d) before; an older state forgets the jobs vx started since, and "
                   "would start them again. Put it back with: git update-ref refs/heads/%s %s %s (to keep the "
                   "older state anyway, drop that reflog entry: git reflog delete refs/heads/%s@{0})\n"
                   % (BRANCH, old[:12], self.serial(old), tip[:12], self.serial(tip), BRANCH, tip, old, BRANCH))
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual((p.code, p.out, p.err), (1, "", refusal))
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (1, refusal))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        # The fix it names works.
        self.repo.git("update-ref", "refs/heads/" + BRANCH, tip, old)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        # Kept older on purpose: the plan goes on, and takes back the attempt it forgot
        # rather than making it again.
        self.repo.git("update-ref", "refs/heads/" + BRANCH, old)
        self.repo.git("reflog", "delete", "refs/heads/%s@{0}" % BRANCH)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_file_state_moved_back_is_refused(self):
        stack = "state: {backend: file, path: vx-state.json}\n"
        path = os.path.join(self.repo.dir, "vx-state.json")
        self.repo.write({"a": job_yaml("a")}, extra_stack=stack)
        self.assertEqual(self.repo.apply().code, 0)
        with open(path) as f:
            old = f.read()
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")}, extra_stack=stack)
        self.assertEqual(self.repo.apply().code, 0)
        with open(path) as f:
            new = f.read()
        with open(path + ".serial") as f:
            marker = f.read()
        lineage, serial = marker.split()
        self.assertEqual(marker, "%s %s\n" % (json.loads(new)["lineage"], json.loads(new)["serial"]))
        # An older copy put back over it (a backup restored).
        with open(path, "w") as f:
            f.write(old)
        refusal = ("vx: state file %s went back: it holds serial %d, but %s.serial says serial %s of the same "
                   "state was written; an older state forgets the jobs vx started since, and would start them "
                   "again. Put the newer file back (to keep the older state anyway, delete %s.serial)\n"
                   % (path, json.loads(old)["serial"], path, serial, path))
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual((p.code, p.out, p.err), (1, "", refusal))
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (1, refusal))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        with open(path, "w") as f:
            f.write(new)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
