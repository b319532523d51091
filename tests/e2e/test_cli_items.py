"""The command line's own contract: saved plans applied in another checkout, the
stack directory as a positional argument everywhere, did-you-mean for commands
and -target, the lock's messages (the unlock hint, waiting), a missing state
directory, and plain `make` naming missing packages."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import FakeTestCase, Result, ROOT, VX_BIN, job_yaml


class CliTest(FakeTestCase):

    def run_vx(self, args, cwd):
        cp = subprocess.run([VX_BIN] + list(args), cwd=cwd, capture_output=True, text=True,
                            timeout=120, env=self.fake.env(), stdin=subprocess.DEVNULL)
        return Result(cp).checked()

    def wait_for_create_in_flight(self):
        """Until a create reached the fake and is still being processed: its apply holds the lock."""
        deadline = time.time() + 60
        while time.time() < deadline:
            log = self.fake.requests()["log"]
            if any(e["rpc"] == "CreateCustomJob" and e["status"] is None for e in log):
                return
            time.sleep(0.02)
        self.fail("no create reached the fake")

    def hold_lock(self):
        """A background apply stuck in a create, holding the state lock; its lock as stored."""
        self.fake.post("/_fake/faults", {"latency_ms": 60000, "methods": ["CreateCustomJob"]})
        self.repo.write({"a": job_yaml("a")})
        p = self.repo.start_apply()
        self.addCleanup(self.kill, p)
        self.wait_for_create_in_flight()
        lock = json.loads(self.repo.git("show", "refs/vx/lease/e2e:lease.json"))
        self.assertIsNotNone(lock)
        return p, lock

    @staticmethod
    def kill(p):
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)

    @staticmethod
    def describe(lock, hint_args):
        since, until = lock["startedAt"], lock["expiresAt"]
        if since[:11] == until[:11]:
            until = until[11:]
        return ("state is locked by %s@%s (pid %d, %s) since %s, expires %s; lock id %s; wait with "
                "-lock-timeout or clear it with: vx unlock %s%s" % (
                    lock["user"], lock["host"], lock["pid"], lock["operation"], since, until,
                    lock["id"], lock["id"], hint_args))

    # --- A: a saved plan applies in another checkout of the same commit ---------------------

    def two_checkouts(self):
        """The harness repository (the PR runner) and a clone elsewhere (the merge runner),
        sharing their state through the remote 'origin'."""
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.write({"a": job_yaml("a")}, extra_stack="state: {remote: origin}\n")
        self.repo.git("remote", "add", "origin", remote)
        self.repo.git("push", "-q", "origin", "main")
        other = os.path.join(self.tmp, "merge-runner", "checkout")
        subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True)
        return remote, other

    def test_saved_plan_applies_in_another_checkout(self):
        remote, other = self.two_checkouts()
        artifacts = os.path.join(self.tmp, "artifacts")
        os.makedirs(artifacts)
        plan = os.path.join(artifacts, "stack.vxplan")
        r = self.run_vx(["plan", "stack", "-out", plan], cwd=self.repo.root)
        self.assertEqual(r.code, 0, r)
        # The PR runner is gone; the merge runner applies the downloaded plan from its checkout.
        shutil.rmtree(self.repo.root)
        r = self.run_vx(["apply", plan], cwd=other)
        self.assertEqual(r.code, 0, r)
        with open(plan) as f:
            self.assertEqual(json.load(f)["dir_in_repo"], "stack")
        jobs = self.live_jobs("a")
        self.assertEqual(len(jobs), 1, jobs)
        record = json.loads(subprocess.run(
            ["git", "--git-dir", remote, "show", "vx/state/e2e:jobs/a.json"], check=True,
            capture_output=True, text=True).stdout)
        self.assertEqual(record["current"]["resource"], jobs[0]["name"])

    def test_saved_plan_found_from_the_plan_files_checkout(self):
        _, other = self.two_checkouts()
        plan = os.path.join(other, "stack.vxplan")
        r = self.run_vx(["plan", "stack", "-out", plan], cwd=self.repo.root)
        self.assertEqual(r.code, 0, r)
        shutil.rmtree(self.repo.root)
        # Run from outside any repository: the plan file's checkout holds the stack.
        outside = os.path.join(self.tmp, "merge-runner")
        r = self.run_vx(["apply", os.path.join("checkout", "stack.vxplan")], cwd=outside)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)

    def test_saved_plan_without_dir_in_repo_still_applies(self):
        self.repo.write({"a": job_yaml("a")})
        plan = os.path.join(self.tmp, "old.vxplan")
        self.assertEqual(self.repo.plan("-out", plan).code, 0)
        with open(plan) as f:
            saved = json.load(f)
        saved.pop("dir_in_repo", None)   # as written by vx before it had the field
        with open(plan, "w") as f:
            json.dump(saved, f)
        r = self.run_vx(["apply", plan], cwd=self.tmp)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)

    def test_saved_plan_dir_in_repo_must_stay_inside(self):
        self.repo.write({"a": job_yaml("a")})
        plan = os.path.join(self.tmp, "edited.vxplan")
        self.assertEqual(self.repo.plan("-out", plan).code, 0)
        with open(plan) as f:
            saved = json.load(f)
        saved["dir_in_repo"] = "stack/../../elsewhere"
        with open(plan, "w") as f:
            json.dump(saved, f)
        r = self.run_vx(["apply", plan], cwd=self.repo.root)
        self.assertEqual((r.code, r.out, r.err), (1, "", 'vx: %s: saved plan: "dir_in_repo" must be a '
                                                         'relative path inside the repository, not '
                                                         '"stack/../../elsewhere"\n' % plan))
        self.assertEqual(self.live_jobs(), [])

    def test_saved_plan_not_in_this_checkout(self):
        _, other = self.two_checkouts()
        plan = os.path.join(self.tmp, "stack.vxplan")
        self.assertEqual(self.run_vx(["plan", "stack", "-out", plan], cwd=self.repo.root).code, 0)
        planned_at = os.path.realpath(self.repo.dir)
        shutil.rmtree(self.repo.root)
        shutil.rmtree(os.path.join(other, "stack"))
        r = self.run_vx(["apply", plan], cwd=other)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: %s: the plan's stack directory stack is in no git checkout of the "
                         "current directory or of the plan file, and %s (where it was planned) does "
                         "not exist; run vxapply inside a checkout of the planned commit\n"
                         % (plan, planned_at))
        self.assertEqual(self.live_jobs(), [])

    # --- B: the stack directory as a positional argument; the unlock hint -------------------

    def test_lock_hint_works_where_the_user_ran_apply(self):
        holder, lock = self.hold_lock()
        r = self.run_vx(["apply", "stack", "-auto-approve"], cwd=self.repo.root)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: %s\n" % self.describe(lock, " stack"))
        self.assertEqual(r.out, "")
        # The holder dies without releasing the lock; the user pastes the hint where they are.
        self.kill(holder)
        hint = r.err.rstrip("\n").split("clear it with: ", 1)[1]
        argv = shlex.split(hint)
        self.assertEqual(argv[0], "vx")
        r = self.run_vx(argv[1:], cwd=self.repo.root)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, "Lock %s cleared.\n" % lock["id"])
        self.assertIsNone(json.loads(self.repo.git("show", "refs/vx/lease/e2e:lease.json")))

    def test_lock_hint_quotes_a_directory_with_a_space(self):
        spaced = os.path.join(self.repo.root, "my stack")
        os.rename(self.repo.dir, spaced)
        self.repo.dir = spaced
        holder, lock = self.hold_lock()
        r = self.run_vx(["apply", "my stack", "-auto-approve"], cwd=self.repo.root)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: %s\n" % self.describe(lock, " 'my stack'"))
        self.kill(holder)
        argv = shlex.split(r.err.rstrip("\n").split("clear it with: ", 1)[1])
        r = self.run_vx(argv[1:], cwd=self.repo.root)
        self.assertEqual(r.code, 0, r)

    def test_log_state_unlock_take_the_directory_as_an_argument(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        root = self.repo.root
        for positional, flag in [
                (["log", "job.a", "stack"], ["log", "job.a", "-C", "stack"]),
                (["log", "stack", "job.a"], ["log", "-C", "stack", "job.a"]),
                (["log", "stack"], ["log", "-C", "stack"]),
                (["state", "list", "stack"], ["state", "list", "-C", "stack"]),
                (["state", "show", "job.a", "stack"], ["state", "show", "job.a", "-C", "stack"])]:
            want = self.run_vx(flag, cwd=root)
            self.assertEqual(want.code, 0, want)
            got = self.run_vx(positional, cwd=root)
            self.assertEqual((got.code, got.out, got.err), (0, want.out, want.err), positional)
        self.assertIn("customJobs/", self.run_vx(["log", "stack"], cwd=root).out)
        r = self.run_vx(["unlock", "0123456789abcdef0123456789abcdef", "stack"], cwd=root)
        self.assertEqual((r.code, r.out, r.err),
                         (1, "", "vx: unlock: unlocking: the state of stack e2e is not locked\n"))
        r = self.run_vx(["log", "train"], cwd=root)
        self.assertEqual((r.code, r.err), (64, "vx: log: 'train' is neither an address (such as "
                                               "job.NAME) nor a directory\n"))
        r = self.run_vx(["log", "stack", "stack"], cwd=root)
        self.assertEqual((r.code, r.err), (64, "vx: log: the stack directory is given twice "
                                               "('stack' and 'stack')\n"))

    # --- C: did you mean ----------------------------------------------------------------------

    def test_unknown_command_did_you_mean(self):
        r = self.run_vx(["plna"], cwd=self.tmp)
        self.assertEqual((r.code, r.out, r.err),
                         (64, "", 'vx: unknown command "plna" (did you mean "plan"?)\n'))
        r = self.run_vx(["frobnicate"], cwd=self.tmp)
        self.assertEqual((r.code, r.out, r.err),
                         (64, "", "vx: unknown command \"frobnicate\" (see 'vx help')\n"))

    def test_target_did_you_mean(self):
        self.repo.write({"gemma2": job_yaml("gemma2"), "llama": job_yaml("llama")})
        want = 'vx: -target job.gemma: no such address in the stack or its state (did you mean "job.gemma2"?)\n'
        r = self.repo.plan("-target", "job.gemma")
        self.assertEqual((r.code, r.out, r.err), (1, "", want))
        r = self.repo.apply("-target", "job.gemma")
        self.assertEqual((r.code, r.out, r.err), (1, "", want))
        r = self.repo.apply("-replace", "job.lama")
        self.assertEqual((r.code, r.out, r.err), (1, "", 'vx: -replace job.lama: no such address is declared '
                                                         '(did you mean "job.llama"?)\n'))
        r = self.repo.plan("-target", "job.zzzzzzzz")
        self.assertEqual((r.code, r.err), (1, "vx: -target job.zzzzzzzz: no such address in the stack "
                                              "or its state\n"))
        self.assertEqual(self.fake.jobs(), [])

    # --- E: a missing state directory --------------------------------------------------------

    def test_missing_state_directory(self):
        self.repo.write({"a": job_yaml("a")},
                        extra_stack="state: {backend: file, path: missing/vx-state.json}\n")
        want = ("vx: state file missing/vx-state.json: the directory %s/missing does not exist\n"
                % os.path.realpath(self.repo.dir))
        r = self.repo.apply()
        self.assertEqual((r.code, r.out, r.err), (1, "", want))
        r = self.repo.plan()
        self.assertEqual((r.code, r.out, r.err), (1, "", want))
        self.assertEqual(self.fake.jobs(), [])

    # --- F: waiting for the lock says so, once ------------------------------------------------

    def test_lock_wait_says_what_it_waits_for(self):
        _, lock = self.hold_lock()
        r = self.repo.apply("-lock-timeout", "3s")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err,
                         "vx: waiting for the state lock held by %s@%s (apply, pid %d, since %s); up to 3s\n"
                         "vx: gave up after waiting 3s: %s\n" % (
                             lock["user"], lock["host"], lock["pid"], lock["startedAt"],
                             self.describe(lock, " " + self.repo.dir)))


class MakeNamesMissingPackagesTest(unittest.TestCase):
    """Plain `make` on a machine without the libraries: the packages to install, not a compiler error."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-deps-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.stubs = os.path.join(self.tmp, "bin")
        os.makedirs(self.stubs)

    def stub(self, name, text):
        path = os.path.join(self.stubs, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + text)
        os.chmod(path, 0o755)

    def env(self, path):
        e = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}
        e["PATH"] = path
        return e

    def test_plain_make_names_the_missing_debian_packages(self):
        # pkg-config finds nothing; dpkg says only libcjson-dev is missing.
        self.stub("pkg-config", "exit 1\n")
        self.stub("dpkg-query", 'for p; do :; done\n'
                  'if [ "$p" = libcjson-dev ]; then echo "dpkg-query: no packages found matching $p" >&2; exit 1; fi\n'
                  "printf 'install ok installed'\n")
        build = os.path.join(self.tmp, "build")
        cp = subprocess.run(["make", "BUILD=" + build], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env=self.env(self.stubs + ":" + os.environ["PATH"]))
        self.assertEqual(cp.returncode, 2, cp.stdout + cp.stderr)
        lines = cp.stderr.splitlines()
        self.assertEqual(lines[:2], ["deps: missing Debian packages. Install them with:",
                                     "  sudo apt-get install -y libcjson-dev"], cp.stderr)
        self.assertTrue(all(l.startswith("make: ***") for l in lines[2:]), cp.stderr)
        self.assertEqual(cp.stdout, "")
        objs = [f for _, _, fs in os.walk(build) for f in fs if f.endswith(".o")]
        self.assertEqual(objs, [], "nothing was compiled")

    def test_without_dpkg_it_names_the_pkg_config_modules(self):
        self.stub("pkg-config", 'for m; do :; done\n[ "$2" = libcjson ] && exit 1\n'
                  '[ "$1" = --exists ] && [ $# -gt 2 ] && exit 1\nexit 0\n')
        cp = subprocess.run(["/bin/sh", os.path.join(ROOT, "tools", "deps.sh"), "--build"],
                            capture_output=True, text=True, timeout=60, env=self.env(self.stubs))
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr),
                         (1, "", "deps: pkg-config cannot find: libcjson (install their development "
                                 "packages)\n"))

    def test_nothing_missing_is_silent(self):
        self.stub("pkg-config", "exit 0\n")
        cp = subprocess.run(["/bin/sh", os.path.join(ROOT, "tools", "deps.sh"), "--build"],
                            capture_output=True, text=True, timeout=60, env=self.env(self.stubs))
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "", ""))


if __name__ == "__main__":
    unittest.main()
