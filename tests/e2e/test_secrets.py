"""Sensitive env values: what vx stores about them must not let anyone who reads
the state branch (or a saved plan) confirm a guessed secret, nor compare two
stacks' secrets. They are redacted as HMAC-SHA-256 keyed with a random salt kept
in the state, and states written before salts are migrated without replacing
their jobs."""
import hashlib
import hmac
import json
import os
import re
import subprocess
import unittest

from harness import FakeTestCase, job_yaml

SECRET = "hunter2-training-secret"
BRANCH = "vx/state/e2e"


def canonical(spec):
    """vx's canonical JSON of a jobSpec: keys sorted, no spaces (the values
    in these tests are plain ASCII, so escaping cannot differ)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def hmac_of(salt, value):
    return "hmac-sha256:" + hmac.new(bytes.fromhex(salt), value.encode(), hashlib.sha256).hexdigest()


def secret_env(spec):
    """The env entry holding the secret in a (redacted) jobSpec."""
    env = spec["workerPoolSpecs"][0]["containerSpec"]["env"]
    return [e for e in env if e["name"] == "WANDB_API_KEY"][0]


def with_value(spec, value):
    spec = json.loads(json.dumps(spec))
    secret_env(spec)["value"] = value
    return spec


class SecretsTest(FakeTestCase):
    def show(self, path, rev=BRANCH):
        return json.loads(self.repo.git("show", "%s:%s" % (rev, path)))

    def state_history_text(self):
        """Every version of every file ever on the state branch, and the messages."""
        return self.repo.git("log", "-p", "--format=%H%n%B", BRANCH)

    def assert_no_trace(self, text, needles, where):
        for n in needles:
            self.assertNotIn(n, text, "%s holds %s" % (where, n))

    def write_legacy_state(self):
        """Rewrites the state's tip as vx wrote it before salts: no salt, the
        secret redacted as its plain SHA-256, and spec hashes (and the vx-spec
        label) taken over the canonical spec WITH the secret in it. Returns the
        legacy spec hash."""
        hdr = self.show("stack.json")
        rec = self.show("jobs/a.json")
        legacy = sha256(canonical(with_value(rec["spec"], SECRET)))
        hdr.pop("salt", None)
        rec["spec"] = with_value(rec["spec"], "sha256:" + sha256(SECRET))
        rec["specHash"] = legacy
        rec["current"]["specHash"] = legacy
        rec["current"]["labels"]["vx-spec"] = legacy[:12]
        env = dict(self.fake.env(), GIT_INDEX_FILE=os.path.join(self.tmp, "legacy.index"))

        def git(*args, data=None):
            return subprocess.run(["git", "-C", self.repo.root] + list(args), check=True,
                                  capture_output=True, text=True, env=env, input=data).stdout.strip()

        tip = git("rev-parse", BRANCH)
        git("read-tree", tip)
        for path, doc in (("stack.json", hdr), ("jobs/a.json", rec)):
            blob = git("hash-object", "-w", "--stdin", data=json.dumps(doc, indent="\t") + "\n")
            git("update-index", "--cacheinfo", "100644,%s,%s" % (blob, path))
        tree = git("write-tree")
        commit = git("commit-tree", tree, "-p", tip, "-m", "vx: as written before salts")
        git("update-ref", "refs/heads/" + BRANCH, commit, tip)
        return legacy

    def test_no_trace_of_the_secret_in_state_or_saved_plans(self):
        self.repo.write({"a": job_yaml("a", env_secret=True)})
        p1 = os.path.join(self.tmp, "p1.plan")
        r = self.repo.plan("-out", p1)
        self.assertEqual(r.code, 0, r)
        with open(p1) as f:
            plan1_text = f.read()
        plan1 = json.loads(plan1_text)
        r = self.repo.vx("apply", p1)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)

        # The spec as sent, and its plain hash: neither may be found anywhere.
        rec = self.show("jobs/a.json")
        legacy = sha256(canonical(with_value(rec["spec"], SECRET)))
        needles = [SECRET, sha256(SECRET), legacy, legacy[:12]]
        self.assert_no_trace(self.state_history_text(), needles, "the state branch")
        self.assert_no_trace(plan1_text, needles, "the saved plan")

        hdr = self.show("stack.json")
        salt = hdr["salt"]
        self.assertRegex(salt, r"^[0-9a-f]{64}$")
        self.assertEqual(secret_env(rec["spec"])["value"], hmac_of(salt, SECRET))
        # The state was never written when planned: the saved plan carried the
        # salt its hashes used, and the apply kept it rather than a new one.
        self.assertEqual(plan1["state"]["salt"], salt)
        # The spec hash is SHA-256 over the redacted canonical spec.
        self.assertEqual(rec["specHash"], sha256(canonical(rec["spec"])))
        self.assertEqual(rec["current"]["specHash"], rec["specHash"])
        self.assertEqual(rec["current"]["labels"]["vx-spec"], rec["specHash"][:12])
        self.assertEqual(plan1["actions"][0]["after"]["spec_hash"], rec["specHash"])
        # Vertex itself got the value.
        live = self.live_jobs("a")[0]
        self.assertEqual(secret_env(live["jobSpec"])["value"], SECRET)
        self.assertEqual(live["labels"]["vx-spec"], rec["specHash"][:12])

        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        self.assert_no_trace(r.out, needles + [salt], "the JSON plan")
        self.assertNotIn("salt", json.loads(r.out)["state"])

        # Nothing changed: no changes, from a plan and from a saved plan.
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        p2 = os.path.join(self.tmp, "p2.plan")
        self.assertEqual(self.repo.plan("-out", p2).code, 0)
        with open(p2) as f:
            plan2 = json.load(f)
        self.assertNotIn("salt", plan2["state"], "the state has its salt: the plan needs none")
        r = self.repo.vx("apply", p2)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[-1], "No changes. The cloud matches the declaration.")

        # A new secret value is a new spec: the running job is replaced.
        self.repo.write({"a": job_yaml("a", env_secret=True).replace(SECRET, "hunter3-rotated")})
        r = self.repo.plan("-format", "json", "-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        action = json.loads(r.out)["actions"][0]
        self.assertEqual(action["action"], "replace")
        self.assertEqual(action["reason"],
                         "spec changed: workerPoolSpecs[0].containerSpec.env[0].value while %s"
                         % action["before"]["state"].replace("JOB_STATE_", "").lower())
        self.assertNotIn("hunter3-rotated", r.out)

    def test_legacy_state_is_rekeyed_without_replacing_the_job(self):
        self.repo.write({"a": job_yaml("a", env_secret=True)})
        self.assertEqual(self.repo.apply().code, 0)
        job = self.live_jobs("a")[0]["name"]
        legacy = self.write_legacy_state()
        self.assertNotIn("salt", self.show("stack.json"))

        # The stored hash is the old form of the same spec: nothing to do.
        r = self.repo.plan("-format", "json", "-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([a["action"] for a in json.loads(r.out)["actions"]], ["noop"])

        # A saved plan of a state without a salt carries the one it hashed with;
        # applying it re-keys the record and stores that salt.
        p = os.path.join(self.tmp, "p.plan")
        self.assertEqual(self.repo.plan("-out", p).code, 0)
        with open(p) as f:
            plan_salt = json.load(f)["state"].get("salt")
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.vx("apply", p, env={"VX_ACTOR": "carol"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[-1], "No changes. The cloud matches the declaration.")
        self.assertEqual([j["name"] for j in self.live_jobs("a")], [job])
        by_rpc = self.fake.requests()["by_rpc"]
        self.assertEqual({k: v for k, v in by_rpc.items() if "CustomJob" in k},
                         {"ListCustomJobs": 1}, "only the refresh's listing")

        hdr = self.show("stack.json")
        rec = self.show("jobs/a.json")
        self.assertRegex(secret_env(rec["spec"])["value"], r"^hmac-sha256:[0-9a-f]{64}$")
        self.assertEqual(hdr.get("salt"), plan_salt)
        self.assertEqual(secret_env(rec["spec"])["value"], hmac_of(plan_salt, SECRET))
        self.assertEqual(rec["specHash"], sha256(canonical(rec["spec"])))
        self.assertEqual(rec["current"]["specHash"], rec["specHash"])
        self.assertEqual(rec["current"]["resource"], job)
        # The label is the live job's copy: it stays as the job carries it.
        self.assertEqual(rec["current"]["labels"]["vx-spec"], legacy[:12])
        # The newest commit wrote the state (the lease is not on this branch).
        self.assertEqual(self.repo.state_log()[0].strip(),
                         "vx: 1 record re-keyed: sensitive values as HMAC-SHA-256 with the "
                         "state's salt\n\nVx-Config-Commit: %s\nVx-Actor: carol\nVx-Serial: %d"
                         % (self.repo.git("rev-parse", "HEAD").strip(), hdr["serial"]))
        tip = self.repo.git("show", BRANCH + ":stack.json") + self.repo.git("show", BRANCH + ":jobs/a.json")
        self.assert_no_trace(tip, [SECRET, sha256(SECRET), legacy], "the state's tip")

        # And from then on, nothing to do.
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.show("stack.json")["serial"], hdr["serial"], "no further write")

    def test_file_backend_saved_plan_of_a_new_state(self):
        # The file backend stores nothing before the first write (its lock is
        # another file): each load of a new state draws a new salt, so the
        # saved plan's is the one that must be used.
        self.repo.write({"a": job_yaml("a", env_secret=True)},
                        extra_stack="state: {backend: file, path: vx-state.json}\n")
        p = os.path.join(self.tmp, "p.plan")
        self.assertEqual(self.repo.plan("-out", p).code, 0)
        r = self.repo.vx("apply", p)
        self.assertEqual(r.code, 0, r)
        with open(os.path.join(self.repo.dir, "vx-state.json")) as f:
            text = f.read()
        self.assert_no_trace(text, [SECRET, sha256(SECRET)], "the state file")
        st = json.loads(text)
        with open(p) as f:
            self.assertEqual(st.get("salt"), json.load(f)["state"].get("salt"))
        spec = st["records"][0]["spec"]
        self.assertEqual(secret_env(spec)["value"], hmac_of(st["salt"], SECRET))
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)


if __name__ == "__main__":
    unittest.main()
