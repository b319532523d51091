"""tools/check-ci.py: the shipped recipes pass, and each broken sample is reported exactly.

Each sample is a good recipe with one thing broken, so a checker that stopped
looking at that thing would let the sample through and fail here.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-ci.py")
RECIPES = [os.path.join(ROOT, "examples", "ci", "github", f)
           for f in ("vx-plan.yml", "vx-apply.yml", "vx-drift.yml")] + \
          [os.path.join(ROOT, "examples", "ci", "gitlab", ".gitlab-ci.yml")]

DOCS = "Variables: `GCP_WORKLOAD_IDENTITY_PROVIDER`, `GCP_SERVICE_ACCOUNT`.\n"

GOOD_GITHUB = """name: plan
on:
  pull_request: {}
permissions:
  contents: read
  id-token: write
jobs:
  plan:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - uses: google-github-actions/auth@v2
        with:
          workload_identity_provider: ${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}
          service_account: ${{ vars.GCP_SERVICE_ACCOUNT }}
      - name: plan
        run: vxplan stack
"""

GOOD_GITLAB = """stages: [plan]
.vx:
  id_tokens:
    GCP_ID_TOKEN:
      aud: https://iam.googleapis.com/${GCP_WORKLOAD_IDENTITY_PROVIDER}
vx-plan:
  extends: .vx
  stage: plan
  script:
    - VX_DIR=$(mktemp -d)
    - printf '%s' "$GCP_ID_TOKEN" > "$VX_DIR/token"
    - vxplan stack
"""


class CheckCI(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-check-ci-")
        os.makedirs(os.path.join(self.tmp, "github"))
        os.makedirs(os.path.join(self.tmp, "gitlab"))
        self.docs = os.path.join(self.tmp, "gitops.md")
        with open(self.docs, "w") as f:
            f.write(DOCS)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=True)

    def check(self, text, gitlab=False):
        path = os.path.join(self.tmp, "gitlab", ".gitlab-ci.yml") if gitlab else \
            os.path.join(self.tmp, "github", "wf.yml")
        with open(path, "w") as f:
            f.write(text)
        cp = subprocess.run([sys.executable, CHECK, "--docs", self.docs, path],
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.replace(path, "F"), cp.stderr

    def test_shipped_recipes_pass(self):
        cp = subprocess.run([sys.executable, CHECK] + RECIPES, capture_output=True, text=True)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "", ""))

    def test_good_samples_pass(self):
        self.assertEqual(self.check(GOOD_GITHUB), (0, "", ""))
        self.assertEqual(self.check(GOOD_GITLAB, gitlab=True), (0, "", ""))

    def test_github_missing_top_level_keys(self):
        text = GOOD_GITHUB.replace("on:\n  pull_request: {}\n", "").replace(
            "permissions:\n  contents: read\n  id-token: write\n", "")
        self.assertEqual(self.check(text), (1,
            "F: top: no 'on'\n"
            "F: top: no 'permissions'\n"
            "F: job plan: authenticates with google-github-actions/auth but its permissions do not "
            "grant id-token: write\n", ""))

    def test_github_unknown_top_level_key(self):
        self.assertEqual(self.check(GOOD_GITHUB.replace("name: plan", "nmae: plan", 1)),
                         (1, "F: top: unknown key 'nmae'\n", ""))

    def test_github_job_without_runs_on_or_steps(self):
        text = GOOD_GITHUB + "  other:\n    name: x\n"
        self.assertEqual(self.check(text), (1, "F: job other: no runs-on\nF: job other: no steps\n", ""))

    def test_github_step_with_both_or_neither_of_uses_and_run(self):
        text = GOOD_GITHUB.replace("        run: vxplan stack\n",
                                   "        run: vxplan stack\n        uses: actions/cache@v4\n"
                                   "      - name: nothing\n")
        self.assertEqual(self.check(text), (1,
            "F: job plan step 3 (plan): needs exactly one of uses and run\n"
            "F: job plan step 4 (nothing): needs exactly one of uses and run\n", ""))

    def test_github_unpinned_uses(self):
        for ref in ("actions/checkout@main", "actions/checkout", "actions/checkout@v4-beta"):
            with self.subTest(ref=ref):
                text = GOOD_GITHUB.replace("actions/checkout@v4", ref)
                self.assertEqual(self.check(text), (1,
                    "F: job plan step 1: uses '%s' is not pinned to a version (owner/repo@vN or @SHA)\n"
                    % ref, ""))
        sha = "actions/checkout@" + "0123456789abcdef" * 2 + "01234567"
        self.assertEqual(self.check(GOOD_GITHUB.replace("actions/checkout@v4", sha)), (0, "", ""))

    def test_github_auth_without_id_token_write(self):
        text = GOOD_GITHUB.replace("  id-token: write\n", "")
        self.assertEqual(self.check(text), (1,
            "F: job plan: authenticates with google-github-actions/auth but its permissions do not "
            "grant id-token: write\n", ""))
        # Granted on the job instead: fine.
        text = text.replace("    runs-on: ubuntu-24.04\n",
                            "    runs-on: ubuntu-24.04\n    permissions:\n      id-token: write\n")
        self.assertEqual(self.check(text), (0, "", ""))

    def test_github_undocumented_secret_or_variable(self):
        text = GOOD_GITHUB.replace("run: vxplan stack",
                                   "run: vxplan stack ${{ secrets.DEPLOY_KEY }} ${{ github.token }}")
        self.assertEqual(self.check(text), (1,
            "F: top: secrets.DEPLOY_KEY is not documented in docs/gitops.md\n", ""))

    def test_github_unknown_step_key(self):
        text = GOOD_GITHUB.replace("        run: vxplan stack\n",
                                   "        run: vxplan stack\n        working-dir: config\n")
        self.assertEqual(self.check(text), (1,
            "F: job plan step 3 (plan): unknown key 'working-dir'\n", ""))

    def test_gitlab_job_stage_not_in_stages(self):
        text = GOOD_GITLAB.replace("stages: [plan]", "stages: [build]")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job vx-plan: stage 'plan' is not in stages ['build']\n", ""))

    def test_gitlab_no_stages(self):
        text = GOOD_GITLAB.replace("stages: [plan]\n", "")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: top: no stages list\nF: job vx-plan: stage 'plan' is not in stages []\n", ""))

    def test_gitlab_id_token_without_aud(self):
        text = GOOD_GITLAB.replace("      aud: https://iam.googleapis.com/${GCP_WORKLOAD_IDENTITY_PROVIDER}\n",
                                   "      audience: x\n")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job .vx: id_tokens GCP_ID_TOKEN has no aud\n", ""))

    def test_gitlab_token_used_but_not_requested(self):
        text = GOOD_GITLAB.replace("  extends: .vx\n", "")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job vx-plan: uses $GCP_ID_TOKEN but declares no such id_tokens entry\n", ""))

    def test_gitlab_job_without_script_and_undocumented_variable(self):
        text = GOOD_GITLAB + "vx-other:\n  stage: plan\n  variables: {X: $VX_SECRET}\n"
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job vx-other: no script\n"
            "F: top: variable VX_SECRET is not documented in docs/gitops.md\n", ""))


if __name__ == "__main__":
    unittest.main()
