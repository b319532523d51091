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
           for f in ("vx-plan.yml", "vx-apply.yml", "vx-watch.yml")] + \
          [os.path.join(ROOT, "examples", "ci", "gitlab", ".gitlab-ci.yml"),
           os.path.join(ROOT, "examples", "ci", "gitlab", "vx.gitlab-ci.yml"),
           os.path.join(ROOT, "action.yml")]

DOCS = ("Variables: `GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER`, `GCP_PLAN_SERVICE_ACCOUNT`, "
        "`GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER`, `GCP_APPLY_SERVICE_ACCOUNT`, "
        "`GCP_WORKLOAD_IDENTITY_PROVIDER`, `GCP_SERVICE_ACCOUNT`, `VX_PUSH_TOKEN`, "
        "`VX_WIF_PROVIDER`, `VX_WIF_SERVICE_ACCOUNT`.\n")

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
          workload_identity_provider: ${{ vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER }}
          service_account: ${{ vars.GCP_PLAN_SERVICE_ACCOUNT }}
      - name: plan
        run: vxplan stack
"""

GOOD_GITHUB_APPLY = """name: apply
on:
  push:
    branches: [main]
  workflow_dispatch: {}
permissions:
  contents: write
  id-token: write
jobs:
  apply:
    if: github.ref == 'refs/heads/main'
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - name: auth
        uses: google-github-actions/auth@v2
        with:
          workload_identity_provider: ${{ vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER }}
          service_account: ${{ vars.GCP_APPLY_SERVICE_ACCOUNT }}
      - name: apply
        run: vxapply plan.vxplan -auto-approve
"""

GOOD_GITLAB = """stages: [plan]
.vx:
  id_tokens:
    GCP_ID_TOKEN:
      aud: https://iam.googleapis.com/${GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER}
vx-plan:
  extends: .vx
  stage: plan
  script:
    - VX_DIR=$(mktemp -d)
    - printf '%s' "$GCP_ID_TOKEN" > "$VX_DIR/token"
    - vxplan stack
"""

# Plan in merge requests as the plan identity, apply on the default branch as the other.
GOOD_GITLAB_TWO = """stages: [plan, apply]
.vx:
  before_script:
    - echo "$VX_WIF_PROVIDER $VX_WIF_SERVICE_ACCOUNT"
vx-plan:
  extends: .vx
  stage: plan
  id_tokens:
    GCP_ID_TOKEN:
      aud: https://iam.googleapis.com/${GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER}
  variables:
    VX_WIF_PROVIDER: $GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER
    VX_WIF_SERVICE_ACCOUNT: $GCP_PLAN_SERVICE_ACCOUNT
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  script:
    - vxplan stack
vx-apply:
  extends: .vx
  stage: apply
  id_tokens:
    GCP_ID_TOKEN:
      aud: https://iam.googleapis.com/${GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER}
  variables:
    VX_WIF_PROVIDER: $GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER
    VX_WIF_SERVICE_ACCOUNT: $GCP_APPLY_SERVICE_ACCOUNT
  rules:
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"
  script:
    - git remote set-url origin "https://vx:${VX_PUSH_TOKEN}@example.com/p.git"
    - vxapply plan.vxplan -auto-approve
"""

GOOD_ACTION = """name: Set up vx
description: install vx
inputs:
  version:
    description: which
    default: ""
  build-from:
    description: how
    default: release
  github-token:
    description: token
outputs:
  version:
    description: installed
    value: ${{ steps.resolve.outputs.version }}
runs:
  using: composite
  steps:
    - name: resolve
      id: resolve
      shell: bash
      env:
        V: ${{ inputs.version }}
      run: echo "version=$V" >> "$GITHUB_OUTPUT"
    - name: cache
      if: inputs.build-from == 'source'
      uses: actions/cache@v4
      with:
        path: x
        key: y
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
        self.assertEqual(self.check(GOOD_GITHUB_APPLY), (0, "", ""))
        self.assertEqual(self.check(GOOD_GITLAB, gitlab=True), (0, "", ""))
        self.assertEqual(self.check(GOOD_GITLAB_TWO, gitlab=True), (0, "", ""))

    # ---- two identities (each sample failed the checker before its rule) ----

    AUTH = "job %s step 2 (auth)"

    def test_github_pull_request_workflow_with_the_apply_identity(self):
        # The one-identity recipes: vx-plan.yml authenticated as the account that applies.
        text = GOOD_GITHUB.replace("      - uses: google-github-actions/auth@v2\n",
                                   "      - name: auth\n        uses: google-github-actions/auth@v2\n")
        text = text.replace("GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER", "GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER")
        text = text.replace("GCP_PLAN_SERVICE_ACCOUNT", "GCP_APPLY_SERVICE_ACCOUNT")
        where = "F: " + self.AUTH % "plan"
        self.assertEqual(self.check(text), (1,
            where + ": the identity that applies (service_account vars.GCP_APPLY_SERVICE_ACCOUNT) in "
            "a workflow that also runs on pull_request: anyone who can push a branch can edit this "
            "workflow in a pull request and act as it unreviewed; plans use "
            "vars.GCP_PLAN_SERVICE_ACCOUNT\n" +
            where + ": the identity that applies (service_account vars.GCP_APPLY_SERVICE_ACCOUNT) in "
            "a job without if: github.ref == 'refs/heads/main' (or a protected environment): run by "
            "hand on another branch, that branch's workflow file would run as it\n", ""))

    def test_github_single_identity_counts_as_the_one_that_applies(self):
        text = GOOD_GITHUB_APPLY.replace("GCP_APPLY_", "GCP_")
        self.assertEqual(self.check(text), (1,
            "F: " + self.AUTH % "apply" + ": service_account vars.GCP_SERVICE_ACCOUNT is not "
            "vars.GCP_PLAN_SERVICE_ACCOUNT, so it counts as the identity that applies, and its "
            "workload_identity_provider '${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}' is not "
            "vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER (a pool of its own whose attribute condition "
            "admits only pushes to main)\n", ""))

    def test_github_apply_on_other_triggers(self):
        for on, what in (("  push:\n    branches: [main, dev]\n", "push to other than main"),
                         ("  push: {}\n", "push to other than main"),
                         ("  push:\n    branches: [main]\n  pull_request_target: {}\n",
                          "pull_request_target")):
            with self.subTest(on=on):
                text = GOOD_GITHUB_APPLY.replace(
                    "  push:\n    branches: [main]\n  workflow_dispatch: {}\n", on)
                self.assertEqual(self.check(text), (1,
                    "F: " + self.AUTH % "apply" + ": the identity that applies (service_account "
                    "vars.GCP_APPLY_SERVICE_ACCOUNT) in a workflow that also runs on %s: anyone who "
                    "can push a branch can edit this workflow in a pull request and act as it "
                    "unreviewed; plans use vars.GCP_PLAN_SERVICE_ACCOUNT\n" % what, ""))

    def test_github_apply_on_a_schedule(self):
        # vx-watch.yml acts (it resubmits), on a schedule: GitHub runs scheduled workflows
        # from the default branch's files only, so a schedule is as safe as a push to main.
        text = GOOD_GITHUB_APPLY.replace(
            "  push:\n    branches: [main]\n  workflow_dispatch: {}\n",
            "  schedule:\n    - cron: '*/10 * * * *'\n  workflow_dispatch: {}\n")
        self.assertEqual(self.check(text), (0, "", ""))
        # Still not beside a trigger a branch controls.
        text = text.replace("  workflow_dispatch: {}\n", "  workflow_dispatch: {}\n  pull_request: {}\n")
        self.assertEqual(self.check(text), (1,
            "F: " + self.AUTH % "apply" + ": the identity that applies (service_account "
            "vars.GCP_APPLY_SERVICE_ACCOUNT) in a workflow that also runs on pull_request: anyone "
            "who can push a branch can edit this workflow in a pull request and act as it "
            "unreviewed; plans use vars.GCP_PLAN_SERVICE_ACCOUNT\n", ""))

    def test_github_apply_job_not_limited_to_main(self):
        text = GOOD_GITHUB_APPLY.replace("    if: github.ref == 'refs/heads/main'\n", "")
        self.assertEqual(self.check(text), (1,
            "F: " + self.AUTH % "apply" + ": the identity that applies (service_account "
            "vars.GCP_APPLY_SERVICE_ACCOUNT) in a job without if: github.ref == 'refs/heads/main' "
            "(or a protected environment): run by hand on another branch, that branch's workflow "
            "file would run as it\n", ""))
        # A protected environment instead: fine.
        text = text.replace("    runs-on:", "    environment: vx-apply\n    runs-on:")
        self.assertEqual(self.check(text), (0, "", ""))

    def test_github_identity_and_provider_mismatched(self):
        text = GOOD_GITHUB_APPLY.replace("vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER",
                                         "vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER")
        self.assertEqual(self.check(text), (1,
            "F: " + self.AUTH % "apply" + ": service_account vars.GCP_APPLY_SERVICE_ACCOUNT is not "
            "vars.GCP_PLAN_SERVICE_ACCOUNT, so it counts as the identity that applies, and its "
            "workload_identity_provider '${{ vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER }}' is not "
            "vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER (a pool of its own whose attribute condition "
            "admits only pushes to main)\n", ""))
        text = GOOD_GITHUB.replace("vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER",
                                   "vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER")
        self.assertEqual(self.check(text), (1,
            "F: job plan step 2: the plan identity vars.GCP_PLAN_SERVICE_ACCOUNT with "
            "workload_identity_provider '${{ vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER }}': it goes "
            "with vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER (the plan pool)\n", ""))

    def test_gitlab_merge_request_job_with_the_apply_identity(self):
        # The one-identity recipe: .vx gave every job GCP_SERVICE_ACCOUNT and one audience.
        text = GOOD_GITLAB_TWO.replace("$GCP_PLAN_SERVICE_ACCOUNT", "$GCP_SERVICE_ACCOUNT")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job vx-plan: uses GCP_SERVICE_ACCOUNT, kept for the apply, but its rules do not run "
            "it only on the default branch (each rule an if with $CI_COMMIT_BRANCH == "
            "$CI_DEFAULT_BRANCH): a merge request pipeline runs the MR's own .gitlab-ci.yml; plan "
            "jobs use GCP_PLAN_SERVICE_ACCOUNT\n", ""))

    def test_gitlab_apply_job_rules_not_limited_to_the_default_branch(self):
        for rules in ('    - if: $CI_PIPELINE_SOURCE == "push"\n',
                      '    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH || $CI_COMMIT_TAG\n',
                      '    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n    - when: manual\n'):
            with self.subTest(rules=rules):
                text = GOOD_GITLAB_TWO.replace(
                    '    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"\n',
                    rules)
                self.assertEqual(self.check(text, gitlab=True), (1,
                    "F: job vx-apply: uses GCP_APPLY_SERVICE_ACCOUNT, "
                    "GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER, VX_PUSH_TOKEN, kept for the apply, but "
                    "its rules do not run it only on the default branch (each rule an if with "
                    "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH): a merge request pipeline runs the "
                    "MR's own .gitlab-ci.yml; plan jobs use GCP_PLAN_SERVICE_ACCOUNT\n",
                    ""))
        # No rules at all: runs in every pipeline.
        text = GOOD_GITLAB_TWO.replace(
            '  rules:\n    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"\n',
            "")
        self.assertEqual(self.check(text, gitlab=True)[0], 1)

    def test_gitlab_plan_and_apply_share_an_audience(self):
        text = GOOD_GITLAB_TWO.replace(
            "      aud: https://iam.googleapis.com/${GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER}\n",
            "      aud: https://iam.googleapis.com/${GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER}\n")
        self.assertEqual(self.check(text, gitlab=True), (1,
            "F: job vx-apply: its ID token audience "
            "'https://iam.googleapis.com/${GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER}' is also that of "
            "vx-plan, which may run off the default branch: the apply's provider would accept their "
            "tokens; give plans their own provider (GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER)\n", ""))

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
        text = GOOD_GITLAB.replace("      aud: https://iam.googleapis.com/${GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER}\n",
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

    # ---- the setup action (action.yml) ----

    def check_action(self, text):
        path = os.path.join(self.tmp, "action.yml")
        with open(path, "w") as f:
            f.write(text)
        cp = subprocess.run([sys.executable, CHECK, "--docs", self.docs, path],
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.replace(path, "F"), cp.stderr

    def test_action_good_sample_passes(self):
        self.assertEqual(self.check_action(GOOD_ACTION), (0, "", ""))

    def test_action_run_step_without_shell(self):
        self.assertEqual(self.check_action(GOOD_ACTION.replace("      shell: bash\n", "", 1)), (1,
            "F: step 1 (resolve): a composite action's run step needs a shell\n", ""))

    def test_action_not_composite_unknown_key_unpinned(self):
        text = GOOD_ACTION.replace("using: composite", "using: node20").replace(
            "actions/cache@v4", "actions/cache@main").replace("name: Set up vx", "nmae: Set up vx")
        self.assertEqual(self.check_action(text), (1,
            "F: top: unknown key 'nmae'\n"
            "F: top: no 'name'\n"
            "F: runs: using is 'node20', not composite\n"
            "F: step 2 (cache): uses 'actions/cache@main' is not pinned to a version "
            "(owner/repo@vN or @SHA)\n", ""))

    def test_action_inputs_outputs_and_references(self):
        text = GOOD_ACTION.replace("  github-token:\n    description: token\n", "").replace(
            "    value: ${{ steps.resolve.outputs.version }}\n", "").replace(
            "${{ inputs.version }}", "${{ inputs.versoin }} ${{ steps.resolv.outputs.x }}")
        self.assertEqual(self.check_action(text), (1,
            "F: inputs: no input 'github-token' (the setup action's: docs/ci.md)\n"
            "F: output version: a composite action's output needs a value\n"
            "F: top: inputs.versoin is not a declared input\n"
            "F: top: steps.resolv: no step has that id\n", ""))

    # ---- a GitLab template and its include ----

    TEMPLATE = (".vx-apply:\n  script:\n    - git remote set-url origin \"https://vx:${VX_PUSH_TOKEN}@h/p.git\"\n"
                "    - vxapply plan.vxplan -auto-approve\n")
    INCLUDER = ("include:\n  - local: vx.gitlab-ci.yml\nstages: [apply]\n"
                "vx-apply:\n  extends: .vx-apply\n  stage: apply\n  rules:\n%s")

    def check_included(self, rules):
        with open(os.path.join(self.tmp, "gitlab", "vx.gitlab-ci.yml"), "w") as f:
            f.write(self.TEMPLATE)
        return self.check(self.INCLUDER % rules, gitlab=True)

    def test_gitlab_include_is_merged_before_the_identity_checks(self):
        # The template's script pushes with VX_PUSH_TOKEN: the including job must run on the
        # default branch only; the checker sees it only with the include merged.
        self.assertEqual(self.check_included(
            "    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n"), (0, "", ""))
        code, out, err = self.check_included("    - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n")
        self.assertEqual((code, err), (1, ""))
        self.assertEqual(out.splitlines()[0][:60],
                         "F: job vx-apply: uses VX_PUSH_TOKEN, kept for the apply, but"[:60])

    def test_gitlab_include_missing(self):
        code, out, err = self.check(self.INCLUDER % "    - when: always\n", gitlab=True)
        self.assertEqual(code, 1)
        self.assertTrue(out.startswith("F: include vx.gitlab-ci.yml: [Errno 2] No such file"), out)

    def test_gitlab_template_jobs_are_hidden(self):
        path = os.path.join(self.tmp, "gitlab", "vx.gitlab-ci.yml")
        with open(path, "w") as f:
            f.write(self.TEMPLATE + "vx-plan:\n  stage: plan\n.empty:\n  variables: {A: b}\n")
        cp = subprocess.run([sys.executable, CHECK, "--docs", self.docs, path], capture_output=True,
                            text=True)
        self.assertEqual((cp.returncode, cp.stdout.replace(path, "F"), cp.stderr), (1,
            "F: job vx-plan: a template's jobs are hidden (.vx-plan): the including file says "
            "which run, and as whom\n"
            "F: job vx-plan: none of script, before_script and extends\n"
            "F: job .empty: none of script, before_script and extends\n", ""))

    def test_gitlab_script_line_read_as_a_mapping(self):
        # An unquoted line holding ": " is a YAML mapping, not a command: GitLab refuses the
        # pipeline ("script contains non string value"); yamllint sees valid YAML.
        path = os.path.join(self.tmp, "gitlab", "vx.gitlab-ci.yml")
        with open(path, "w") as f:
            f.write(self.TEMPLATE + ".fetch:\n  script:\n    - echo ok\n"
                    "    - curl --header \"PRIVATE-TOKEN: $T\" -o plan $URL\n"
                    "  after_script:\n    - 'echo \"a: b\"'\n")
        cp = subprocess.run([sys.executable, CHECK, "--docs", self.docs, path], capture_output=True,
                            text=True)
        self.assertEqual((cp.returncode, cp.stdout.replace(path, "F"), cp.stderr), (1,
            "F: job .fetch: script[1] is a mapping, not a command: quote the line (its \": \" makes "
            "YAML read a key)\n", ""))


if __name__ == "__main__":
    unittest.main()
