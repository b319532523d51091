"""End to end: the GitOps flow of docs/gitops.md, played with two runners (issue 11).

One bare repository stands for GitHub or GitLab. Runner A (the pull-request job)
and runner B (the job on main) are two clones at different paths with different
HOMEs, git users and CI variables, as two CI machines would be. The stack keeps
its state on the git backend with `remote: origin`, so the only thing the
runners share is the remote, and the saved plan copied from A to B (the
artifact).

The flow: A plans on the PR branch (`-format markdown -out plan.vxplan
-detailed-exitcode`), the PR is merged, B applies the saved plan. Then a plan
made before another change was merged and applied is refused by B with the
message that says to re-plan.

Who did it: the rows `vx log` prints and the trailers of the state commits are
written by the actor detection of issue 11 ("audit"), merged separately. Their
expected form is in one place, AUDIT below, used by one test,
test_AUDIT_log_and_state_commits_name_the_merger_and_the_pr_author; until that
work is merged that test fails, and only it.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import PROJECT, REGION, ROOT, STACK, VX_BIN, Fake, FakeTestCase, Result, job_yaml

# The scripts of the GitLab jobs: the template .gitlab-ci.yml includes.
GITLAB_CI = os.path.join(ROOT, "examples", "ci", "gitlab", "vx.gitlab-ci.yml")

STACK_NAME = "gitops"
PR = 7
SERVER = "https://github.com"
REPOSITORY = "acme/ml"


# ---- AUDIT: actor and pull request, as the "audit" work records them ----------
#
# The apply in B runs as bob (the merger, GITHUB_ACTOR on the push to main); the
# plan it applies was made in A by alice on PR #7 and carries both. Every
# assertion on who did it goes through these two functions.

def audit_by():
    """What `vx log` prints after "by" for a run B started from alice's plan."""
    return "bob (PR #%d by alice)" % PR


def audit_trailers():
    """Trailers every state commit of B's apply carries (a subset of them)."""
    return {
        "Vx-Actor": "bob",
        "Vx-Pull-Request": "%s/%s/pull/%d" % (SERVER, REPOSITORY, PR),
    }

# ---------------------------------------------------------------------------------


# The pull request's comment: vxplan's markdown for two new jobs, exactly.
PLAN_MARKDOWN = """### vx plan: stack `gitops` (project `vx-e2e`)

last 30 days: $0.00 · this plan: at most $712

**Quota** (GPUs; in use: this stack's active runs that stay)

| region | GPU | class | in use | this plan adds | limit | free after |
|---|---|---|---|---|---|---|
| us-central1 | L4 | on-demand | 0 | 2 | 1000 | 998 |

_in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks in the project are not counted._

**Cost** (USD list prices as of 2026-07-30): + $1.41/h while running, at most $712.49 for this apply

_Prices: Cloud Billing Catalog via Cyclenerd/google-cloud-pricing-cost-calculator (2026-07-30); N1 GPUs, A3 Ultra, A4: SkyPilot catalog (2026-11)._

- `job.a` (starts): $0.71/h, at most $356.24 (7-day default timeout × 3 attempts left)
- `job.b` (starts): $0.71/h, at most $356.24 (7-day default timeout × 3 attempts left)

_A2/A3/A4/G2/G4 figures exclude Vertex AI's training management fee (its size is not published)._

| | address | action | shape | reason |
|---|---|---|---|---|
| `+` | `job.a` | create | g2-standard-4 ×1, 1×L4, STANDARD | new job |
| `+` | `job.b` | create | g2-standard-4 ×1, 1×L4, STANDARD | new job |


**Plan:** 2 to create. 0 unchanged.
"""


class Runner:
    """One CI machine: a clone of the remote at its own path, with its own environment."""

    def __init__(self, fake, top, name, remote, user, ci):
        self.path = os.path.join(top, name, "work", "ml")
        self.home = os.path.join(top, name, "home")
        os.makedirs(self.home)
        self.env = fake.env()
        self.env.update({
            "HOME": self.home,
            "GIT_AUTHOR_NAME": user, "GIT_AUTHOR_EMAIL": user + "@example.com",
            "GIT_COMMITTER_NAME": user, "GIT_COMMITTER_EMAIL": user + "@example.com",
            "CI": "true", "GITHUB_ACTIONS": "true",
            "GITHUB_SERVER_URL": SERVER, "GITHUB_REPOSITORY": REPOSITORY,
        })
        for k in ("VX_ACTOR", "GITHUB_ACTOR", "GITHUB_TRIGGERING_ACTOR", "GITHUB_EVENT_NAME",
                  "GITHUB_REF", "GITLAB_USER_LOGIN", "CI_MERGE_REQUEST_IID"):
            self.env.pop(k, None)
        self.env.update(ci)
        subprocess.run(["git", "clone", "-q", remote, self.path], check=True,
                       capture_output=True, env=self.env)

    def git(self, *args):
        return subprocess.run(["git", "-C", self.path] + list(args), check=True,
                              capture_output=True, text=True, env=self.env).stdout

    def vx(self, *args):
        cp = subprocess.run([VX_BIN] + list(args), cwd=self.path, capture_output=True, text=True,
                            timeout=120, env=self.env, stdin=subprocess.DEVNULL)
        return Result(cp).checked()

    def write(self, name, text):
        with open(os.path.join(self.path, "stack", name), "w") as f:
            f.write(text)

    def commit(self, message):
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)


class GitOps(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-gitops-")
        self.fake = Fake(self.tmp)
        self.remote = os.path.join(self.tmp, "github", "acme", "ml.git")
        os.makedirs(self.remote)
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", self.remote], check=True)
        # The maintainer's first commit: the stack with its state on the remote.
        seed = Runner(self.fake, self.tmp, "maintainer", self.remote, "carol", {})
        os.makedirs(os.path.join(seed.path, "stack"))
        seed.write("stack.yaml", STACK.format(stack=STACK_NAME, project=PROJECT, region=REGION)
                   + "state: {backend: git, remote: origin}\n")
        seed.commit("a stack for vx")
        seed.git("push", "-q", "origin", "main")
        self.maintainer = seed
        # A: the job on pull request #7, opened by alice.
        self.a = Runner(self.fake, self.tmp, "runner-a", self.remote, "alice", {
            "GITHUB_ACTOR": "alice", "GITHUB_TRIGGERING_ACTOR": "alice",
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/%d/merge" % PR})
        # B: the job on the push to main that merging it made, by bob.
        self.b = Runner(self.fake, self.tmp, "runner-b", self.remote, "bob", {
            "GITHUB_ACTOR": "bob", "GITHUB_TRIGGERING_ACTOR": "bob",
            "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main"})
        self.artifacts = os.path.join(self.tmp, "artifacts")
        os.makedirs(self.artifacts)

    def tearDown(self):
        self.fake.close()
        if os.environ.get("VX_E2E_KEEP"):
            print("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- helpers ---------------------------------------------------------------

    def remote_git(self, *args):
        return subprocess.run(["git", "--git-dir", self.remote] + list(args), check=True,
                              capture_output=True, text=True).stdout

    def remote_state(self, path):
        """A file of the state branch as the remote holds it, or None."""
        cp = subprocess.run(["git", "--git-dir", self.remote, "show",
                             "refs/heads/vx/state/%s:%s" % (STACK_NAME, path)],
                            capture_output=True, text=True)
        return json.loads(cp.stdout) if cp.returncode == 0 else None

    def jobs_by_name(self):
        """The fake's jobs of this stack: vx-job label -> list of resource names."""
        out = {}
        for j in self.fake.jobs():
            labels = j.get("labels", {})
            if labels.get("vx-stack") == STACK_NAME:
                out.setdefault(labels.get("vx-job"), []).append(j["name"])
        return out

    def plan_on_branch(self, runner, branch, files, name):
        """A PR job: the branch with files written, planned and saved as artifact `name`."""
        runner.git("fetch", "-q", "origin")
        runner.git("checkout", "-q", "-B", branch, "origin/main")
        for f, text in files.items():
            runner.write(f, text)
        runner.commit("change on " + branch)
        runner.git("push", "-q", "origin", branch)
        r = runner.vx("plan", "stack", "-format", "markdown", "-out", "plan.vxplan",
                      "-detailed-exitcode")
        shutil.copy(os.path.join(runner.path, "plan.vxplan"), os.path.join(self.artifacts, name))
        os.remove(os.path.join(runner.path, "plan.vxplan"))
        return r

    def merge(self, branch):
        """The merge button: a merge commit on main in the remote, made in a third clone."""
        m = self.maintainer
        m.git("fetch", "-q", "origin")
        m.git("checkout", "-q", "-B", "main", "origin/main")
        m.git("merge", "-q", "--no-ff", "-m", "Merge %s" % branch, "origin/" + branch)
        m.git("push", "-q", "origin", "main")

    def pull_main(self, runner):
        runner.git("fetch", "-q", "origin")
        runner.git("checkout", "-q", "-B", "main", "origin/main")

    # ---- the flow --------------------------------------------------------------

    def pr_flow(self):
        """PR #7 planned in A, merged, its saved plan applied in B: the fake's jobs by name."""
        r = self.plan_on_branch(self.a, "pr-%d" % PR,
                                {"jobs.yaml": job_yaml("a") + job_yaml("b")}, "plan.vxplan")
        self.assertEqual((r.code, r.out, r.err), (2, PLAN_MARKDOWN, ""))
        self.assertEqual(self.jobs_by_name(), {}, "a plan creates nothing")
        # The plan only fetches: no state branch or lease appears on the remote.
        self.assertEqual(self.remote_git("for-each-ref", "--format=%(refname)"),
                         "refs/heads/main\nrefs/heads/pr-%d\n" % PR)

        self.merge("pr-%d" % PR)
        self.pull_main(self.b)
        plan = os.path.join(self.artifacts, "plan.vxplan")
        r = self.b.vx("apply", plan, "-auto-approve")
        self.assertEqual(r.code, 0, r)
        jobs = self.jobs_by_name()
        self.assertEqual(sorted(jobs), ["a", "b"])
        self.assertEqual([len(jobs["a"]), len(jobs["b"])], [1, 1], "each job made once")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(r.out, "\n+ job.a create %s\n+ job.b create %s\n\n"
                         "Apply complete: 2 done, 0 failed.\n" % (jobs["a"][0], jobs["b"][0]))
        return jobs

    def test_plan_on_pr_apply_saved_plan_after_merge_in_other_runner(self):
        jobs = self.pr_flow()
        # The state is on the remote, where B's branch is, naming the jobs made.
        tip = self.remote_git("rev-parse", "refs/heads/vx/state/" + STACK_NAME).strip()
        self.assertEqual(self.b.git("rev-parse", "refs/heads/vx/state/" + STACK_NAME).strip(), tip)
        main = self.remote_git("rev-parse", "refs/heads/main").strip()
        for job in ("a", "b"):
            cur = self.remote_state("jobs/%s.json" % job)["current"]
            self.assertEqual((cur["resource"], cur["configCommit"]), (jobs[job][0], main))
        # Another runner sees the same state: the plan has nothing to do.
        self.pull_main(self.a)
        r = self.a.vx("plan", "stack", "-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_AUDIT_log_and_state_commits_name_the_merger_and_the_pr_author(self):
        """Fails until the actor detection of issue 11 ("audit") is merged."""
        jobs = self.pr_flow()
        main = self.remote_git("rev-parse", "refs/heads/main").strip()
        r = self.b.vx("log", "stack")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, "".join(
            "job.%s\n  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  "
            "cost $0.00  queued\n" % (job, jobs[job][0], audit_by(), main[:12]) for job in ("a", "b")))
        trailers = self.remote_git("log", "-1", "--format=%(trailers:only,unfold)",
                                   "refs/heads/vx/state/" + STACK_NAME)
        got = dict(l.split(": ", 1) for l in trailers.splitlines() if l)
        self.assertEqual({k: got.get(k) for k in audit_trailers()}, audit_trailers())

    def test_token_in_the_remote_url_never_reaches_a_message(self):
        # The recipes give libgit2 the job's token in origin's URL; a URL
        # libgit2 refuses is quoted in its message, and was shown whole.
        self.a.git("remote", "set-url", "origin", "http://x-access-token:ghs_SECRET@")
        r = self.a.vx("plan", "stack")
        self.assertEqual((r.code, r.out, r.err), (1, "",
            "vx: vx/state/%s from origin: fetching the state: malformed URL 'http://***@'\n"
            % STACK_NAME))

    def test_plan_made_before_another_merge_is_refused_with_replan_message(self):
        # main runs job a, applied from B.
        self.maintainer.write("a.yaml", job_yaml("a"))
        self.maintainer.commit("job a")
        self.maintainer.git("push", "-q", "origin", "main")
        self.pull_main(self.b)
        r = self.b.vx("apply", "stack", "-auto-approve")
        self.assertEqual(r.code, 0, r)
        serial_before = self.remote_state("stack.json")["serial"]

        # PR 8 (alice, runner A) adds job c and is planned ...
        r = self.plan_on_branch(self.a, "pr-8", {"c.yaml": job_yaml("c")}, "plan-8.vxplan")
        self.assertEqual(r.code, 2, r)
        # ... but PR 9, changing job a, is merged and applied first.
        r = self.plan_on_branch(self.a, "pr-9", {"a.yaml": job_yaml("a", epochs=5)}, "plan-9.vxplan")
        self.assertEqual(r.code, 2, r)
        self.merge("pr-9")
        self.pull_main(self.b)
        r = self.b.vx("apply", os.path.join(self.artifacts, "plan-9.vxplan"), "-auto-approve")
        self.assertEqual(r.code, 0, r)
        serial_now = self.remote_state("stack.json")["serial"]
        self.assertGreater(serial_now, serial_before)
        jobs_before = self.jobs_by_name()

        # PR 8 is merged; its plan, made before PR 9 landed, is refused.
        self.merge("pr-8")
        self.pull_main(self.b)
        plan = os.path.join(self.artifacts, "plan-8.vxplan")
        r = self.b.vx("apply", plan, "-auto-approve")
        self.assertEqual((r.code, r.out, r.err), (1, "",
            "vx: apply: %s: the state moved since the plan was made (serial %d then, %d now); "
            "run vxplan again\n" % (plan, serial_before, serial_now)))
        self.assertEqual(self.jobs_by_name(), jobs_before, "a refused plan makes no job")
        self.assertIsNone(self.remote_state("jobs/c.json"))
        self.assertEqual(self.remote_state("stack.json")["serial"], serial_now)

        # Re-planning, as the message says, applies job c once.
        r = self.b.vx("plan", "stack", "-out", "plan.vxplan")
        self.assertEqual(r.code, 0, r)
        r = self.b.vx("apply", "plan.vxplan", "-auto-approve")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.jobs_by_name()["c"]), 1)

    def test_plan_of_a_pr_behind_main_is_refused_when_main_changed_the_stack(self):
        """Nothing applied in between, but the stack on main is not the one planned."""
        self.maintainer.write("a.yaml", job_yaml("a"))
        self.maintainer.commit("job a")
        self.maintainer.git("push", "-q", "origin", "main")
        self.pull_main(self.b)
        self.assertEqual(self.b.vx("apply", "stack", "-auto-approve").code, 0)
        r = self.plan_on_branch(self.a, "pr-8", {"c.yaml": job_yaml("c")}, "plan-8.vxplan")
        self.assertEqual(r.code, 2, r)
        # PR 9 changes job a on main; its apply has not run (yet).
        self.maintainer.git("fetch", "-q", "origin")
        self.maintainer.git("checkout", "-q", "-B", "pr-9", "origin/main")
        self.maintainer.write("a.yaml", job_yaml("a", epochs=5))
        self.maintainer.commit("job a: 5 epochs")
        self.maintainer.git("push", "-q", "origin", "pr-9")
        self.merge("pr-9")
        self.merge("pr-8")
        self.pull_main(self.b)
        jobs_before = self.jobs_by_name()
        plan = os.path.join(self.artifacts, "plan-8.vxplan")
        r = self.b.vx("apply", plan, "-auto-approve")
        self.assertEqual((r.code, r.out, r.err), (1, "",
            "vx: apply: %s: the declaration changed since the plan was made; run vxplan again\n"
            % plan))
        self.assertEqual(self.jobs_by_name(), jobs_before, "a refused plan makes no job")
        self.assertIsNone(self.remote_state("jobs/c.json"))

    # ---- the GitLab recipe's credential file -----------------------------------

    def test_gitlab_recipe_writes_a_credential_file_vx_authenticates_with(self):
        """The .vx before_script's lines from the ID token to GOOGLE_APPLICATION_CREDENTIALS,
        run as the GitLab job would, give an external_account file that vx exchanges at the
        (fake) STS and impersonates with: the same file with only Google's hosts replaced."""
        import yaml  # python3-yaml, which make check installs for make lint-ci
        with open(GITLAB_CI) as f:
            steps = yaml.safe_load(f)[".vx"]["before_script"]
        first = [i for i, l in enumerate(steps) if l.startswith("VX_AUTH_DIR=")][0]
        last = [i for i, l in enumerate(steps) if "GOOGLE_APPLICATION_CREDENTIALS=" in l][0]
        script = "set -eu\n" + "\n".join(steps[first:last + 1]) + '\necho "$GOOGLE_APPLICATION_CREDENTIALS"\n'

        minted = self.fake.post("/_fake/external-accounts", {"project": PROJECT})
        provider = minted["credential"]["audience"][len("//iam.googleapis.com/"):]
        builds = os.path.join(self.tmp, "builds")
        os.makedirs(builds)
        env = dict(self.a.env, TMPDIR=builds, GCP_ID_TOKEN=minted["subject_token"],
                   VX_WIF_PROVIDER=provider, VX_WIF_SERVICE_ACCOUNT=minted["service_account"])
        cp = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True)
        path = cp.stdout.strip()
        auth_dir = os.path.dirname(path)
        self.assertEqual((os.path.dirname(auth_dir), os.path.basename(path)), (builds, "credentials.json"))
        self.assertEqual(os.stat(auth_dir).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        with open(path) as f:
            cred = json.load(f)
        token_file = os.path.join(auth_dir, "id-token.jwt")
        self.assertEqual(cred, {
            "type": "external_account",
            "audience": minted["credential"]["audience"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": "https://sts.googleapis.com/v1/token",
            "service_account_impersonation_url":
                "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/%s:generateAccessToken"
                % minted["service_account"],
            "credential_source": {"file": token_file, "format": {"type": "text"}},
        })
        with open(token_file) as f:
            self.assertEqual(f.read(), minted["subject_token"])

        # Pointed at the fake (hosts only), vx plans with it.
        text = re.sub(r"https://(sts|iamcredentials)\.googleapis\.com", self.fake.url, json.dumps(cred))
        local = os.path.join(self.tmp, "credentials-local.json")
        with open(local, "w") as f:
            f.write(text)
        os.chmod(local, 0o600)
        self.a.env["GOOGLE_APPLICATION_CREDENTIALS"] = local
        self.a.write("a.yaml", job_yaml("a"))
        self.a.commit("job a")
        r = self.a.vx("plan", "stack", "-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertNotIn(minted["subject_token"], r.out + r.err)
        self.assertEqual([self.fake.rpc_count("sts.token"),
                          self.fake.rpc_count("iamcredentials.generateAccessToken")], [1, 1])


if __name__ == "__main__":
    unittest.main()


class RelativeRemote(FakeTestCase):
    """A remote whose URL is a relative path, as `git remote add origin ../origin.git` writes it:
    git reads it against the repository's top directory, wherever the command runs; vx once
    handed it to libgit2 as it was, which failed with "unsupported URL protocol"."""

    def applied_through(self, remote, tracking):
        """Applies from the stack's directory (where ../origin.git is not the remote) with
        state.remote set to remote; the state must reach the bare repository beside the clone."""
        bare = os.path.join(self.tmp, "origin.git")
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", bare], check=True)
        self.repo.git("remote", "add", "origin", "../origin.git")
        self.repo.write({"a": job_yaml("a")}, extra_stack="state: {backend: git, remote: %s}\n" % remote)
        self.repo.git("push", "-q", "origin", "main")
        cp = subprocess.run([VX_BIN, "apply", ".", "-auto-approve"], cwd=self.repo.dir,
                            capture_output=True, text=True, timeout=120, env=self.fake.env(),
                            stdin=subprocess.DEVNULL)
        r = Result(cp).checked()
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "repo", "origin.git")))
        refs = subprocess.run(["git", "--git-dir", bare, "for-each-ref", "--format=%(refname)"],
                              check=True, capture_output=True, text=True).stdout.split()
        self.assertEqual(refs, ["refs/heads/main", "refs/heads/vx/state/e2e", "refs/vx/lease/e2e"])
        state = subprocess.run(["git", "--git-dir", bare, "show", "vx/state/e2e:jobs/a.json"],
                               check=True, capture_output=True, text=True).stdout
        self.assertEqual(json.loads(state)["current"]["attempt"], 1)
        local = self.repo.git("for-each-ref", "--format=%(refname)", "refs/vx/remotes").split()
        self.assertEqual(len(local), 1, local)
        self.assertRegex(local[0], tracking)
        # And a plan from the repository's top reads it back: no changes.
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_a_remote_whose_url_is_relative(self):
        self.applied_through("origin", r"^refs/vx/remotes/origin/lease/e2e$")

    def test_state_remote_as_a_relative_path(self):
        # The tracking refs of a URL are under a name of its hash (a URL may hold a token).
        self.applied_through("../origin.git", r"^refs/vx/remotes/url-[0-9a-f]{16}/lease/e2e$")
