"""The issue keeping of the scheduled watch recipes, run against fake APIs on loopback.

examples/ci/github/vx-watch.yml's github-script step runs in node with a github client whose
calls go over HTTP to a fake GitHub REST API (Python, on a loopback port), as Octokit's would;
examples/ci/gitlab/vx.gitlab-ci.yml's .vx-watch-issues script runs in sh with curl and jq
against a fake GitLab API. Both read what vx wrote: tests/data/ci/ holds a real
`vx status -format json` with a job that gave up and real `vxplan -format json` plans with and
without a reservation resized outside vx (each checked against its schema here). Each keeps
one open issue per job that gave up and one per drifted address, opens nothing twice, closes
an issue with a note when its cause is gone, and leaves the drift issues alone when the plan
failed.
"""
import copy
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.parse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "ci")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import schemas  # noqa: E402

RUN = "https://github.com/acme/ml/actions/runs/42"
PIPELINE = "https://gitlab.example.com/acme/ml/-/pipelines/42"


def load(name, kind):
    with open(os.path.join(DATA, name)) as f:
        return schemas.check(json.load(f), kind, "tests/data/ci/" + name)


STATUS = load("status-gave-up.json", "status")
DRIFT = load("plan-drift.json", "plan")
NO_DRIFT = load("plan-no-drift.json", "plan")
GAVE_UP = [a for a in STATUS["addresses"] if a["address"] == "job.a"][0]
DRIFTED = DRIFT["actions"][0]
STATUS_CLEAN = copy.deepcopy(STATUS)
STATUS_CLEAN["addresses"] = [a for a in STATUS["addresses"] if a["address"] != "job.a"]


class FakeForge:
    """Issues, labels and notes of one repository, behind GitHub's or GitLab's REST paths."""

    def __init__(self, flavour):
        self.flavour = flavour
        self.issues = []      # {"number", "title", "body", "labels", "state", "notes"}
        self.labels = {}
        self.calls = []
        forge = self

        class H(http.server.BaseHTTPRequestHandler):
            def handle_one(self, method):
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    body = json.loads(raw or b"{}")
                else:
                    body = dict(urllib.parse.parse_qsl(raw.decode()))
                forge.calls.append((method, url.path))
                code, out = forge.route(method, url.path, q, body, self.headers)
                data = json.dumps(out).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.handle_one("GET")

            def do_POST(self):
                self.handle_one("POST")

            def do_PATCH(self):
                self.handle_one("PATCH")

            def do_PUT(self):
                self.handle_one("PUT")

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    def add(self, title, label, state="open"):
        n = len(self.issues) + 1
        self.issues.append({"number": n, "title": title, "body": "", "labels": [label], "state": state,
                            "notes": []})
        return n

    def open_titles(self):
        return sorted((i["title"], tuple(i["labels"])) for i in self.issues if i["state"] == "open")

    def issue(self, title):
        return [i for i in self.issues if i["title"] == title][0]

    def route(self, method, path, q, body, headers):
        if self.flavour == "github":
            return self.github(method, path.split("/")[1:], q, body)
        if headers.get("PRIVATE-TOKEN") != "note-token":
            return 401, {"message": "401 Unauthorized"}
        return self.gitlab(method, path.split("/")[1:], q, body)

    def github(self, method, p, q, body):
        if p[:3] != ["repos", "acme", "ml"]:
            return 404, {"message": "Not Found"}
        p = p[3:]
        if p == ["issues"] and method == "GET":
            got = [i for i in self.issues if i["state"] == q["state"] and q["labels"] in i["labels"]]
            per, page = int(q.get("per_page", 30)), int(q.get("page", 1))
            return 200, [{"number": i["number"], "title": i["title"]} for i in got[(page - 1) * per:page * per]]
        if p[0] == "labels" and len(p) == 2 and method == "GET":
            name = urllib.parse.unquote(p[1])
            return (200, self.labels[name]) if name in self.labels else (404, {"message": "Not Found"})
        if p == ["labels"] and method == "POST":
            self.labels[body["name"]] = body
            return 201, body
        if p == ["issues"] and method == "POST":
            n = self.add(body["title"], body["labels"][0])
            self.issues[n - 1]["body"] = body["body"]
            return 201, {"number": n}
        if len(p) == 3 and p[0] == "issues" and p[2] == "comments" and method == "POST":
            self.issues[int(p[1]) - 1]["notes"].append(body["body"])
            return 201, {}
        if len(p) == 2 and p[0] == "issues" and method == "PATCH":
            self.issues[int(p[1]) - 1]["state"] = body["state"]
            return 200, {}
        return 404, {"message": "Not Found"}

    def gitlab(self, method, p, q, body):
        if p[:4] != ["api", "v4", "projects", "7"]:
            return 404, {"message": "404 Not found"}
        p = p[4:]
        if p == ["issues"] and method == "GET":
            state = {"opened": "open"}[q["state"]]
            return 200, [{"iid": i["number"], "title": i["title"]} for i in self.issues
                         if i["state"] == state and q["labels"] in i["labels"]][:int(q["per_page"])]
        if p == ["issues"] and method == "POST":
            n = self.add(body["title"], body["labels"])
            self.issues[n - 1]["body"] = body["description"]
            return 201, {"iid": n}
        if len(p) == 3 and p[0] == "issues" and p[2] == "notes" and method == "POST":
            self.issues[int(p[1]) - 1]["notes"].append(body["body"])
            return 201, {}
        if len(p) == 2 and p[0] == "issues" and method == "PUT" and q.get("state_event") == "close":
            self.issues[int(p[1]) - 1]["state"] = "closed"
            return 200, {}
        return 404, {"message": "404 Not found"}


# github-script's context: the script gets require, github, context; the client below sends
# each call to the fake as Octokit would (a 4xx throws an error carrying .status).
NODE_HARNESS = r"""
const fs = require('fs');
const base = process.env.FAKE_GITHUB;
async function call(method, path, body) {
  const r = await fetch(base + path, { method, headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) { const e = new Error(`${method} ${path}: ${r.status}`); e.status = r.status; throw e; }
  return { status: r.status, data: await r.json() };
}
const repoPath = p => `/repos/${p.owner}/${p.repo}`;
const strip = ({ owner, repo, issue_number, ...rest }) => rest;
const github = { rest: { issues: {
  listForRepo: p => call('GET', `${repoPath(p)}/issues?labels=${encodeURIComponent(p.labels)}` +
    `&state=${p.state}&per_page=${p.per_page}&page=${p.page || 1}`),
  getLabel: p => call('GET', `${repoPath(p)}/labels/${encodeURIComponent(p.name)}`),
  createLabel: p => call('POST', `${repoPath(p)}/labels`, strip(p)),
  create: p => call('POST', `${repoPath(p)}/issues`, strip(p)),
  createComment: p => call('POST', `${repoPath(p)}/issues/${p.issue_number}/comments`, strip(p)),
  update: p => call('PATCH', `${repoPath(p)}/issues/${p.issue_number}`, strip(p)),
} } };
github.paginate = async (fn, params) => {
  let out = [];
  for (let page = 1; ; page++) {
    const r = await fn({ ...params, page });
    out = out.concat(r.data);
    if (r.data.length < (params.per_page || 30)) return out;
  }
};
const context = { repo: { owner: 'acme', repo: 'ml' }, serverUrl: 'https://github.com', runId: 42 };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'github', 'context', fs.readFileSync(process.argv[2], 'utf8'))(
  require, github, context).catch(e => { console.error(e); process.exit(1); });
"""


def github_script():
    with open(os.path.join(ROOT, "examples", "ci", "github", "vx-watch.yml")) as f:
        wf = yaml.safe_load(f)
    steps = [s for s in wf["jobs"]["watch"]["steps"] if s.get("uses", "").startswith("actions/github-script@")]
    assert len(steps) == 1, steps
    return steps[0]["with"]["script"], steps[0]["env"]


def gitlab_script():
    with open(os.path.join(ROOT, "examples", "ci", "gitlab", "vx.gitlab-ci.yml")) as f:
        t = yaml.safe_load(f)
    return "\n".join(t[".vx-watch-issues"]["script"]) + "\n"


def gave_up_body(flavour):
    a, f = GAVE_UP, GAVE_UP["failure"]
    head = "%s failed and vx will not resubmit it (%s):\n\n```\n%s: %s\n```\n\n" % (
        a["address"], LINK[flavour], f["class"], f["message"])
    run = "Run %d/%d, %s." % (a["attempt"], a["max_attempts"], a["resource"])
    if flavour == "github":
        return head + run + (" Fix the cause, then re-run it (change its spec through a PR, or raise "
                             "resubmit.maxAttempts); this issue closes when the job runs again.")
    return head + run + ("\nFix the cause, then re-run it (change its spec through a merge request, or raise\n"
                         "resubmit.maxAttempts); this issue closes when the job runs again.\n")


def drift_body(flavour):
    a = DRIFTED
    head = "%s was changed outside vx (%s):\n\n```\n%s\n```\n\nThe plan: %s (%s)." % (
        a["address"], LINK[flavour], a["drift"], a["action"], a["reason"])
    if flavour == "github":
        return head + (" vx watch does not undo it: the next apply sets it back to the declaration, or change "
                       "the declaration through a PR to keep it; this issue closes when the plan sees no drift "
                       "there.")
    return head + ("\nvx watch does not undo it: the next apply sets it back to the declaration, or change the\n"
                   "declaration through a merge request to keep it; this issue closes when the plan sees no\n"
                   "drift there.\n")


LINK = {"github": "[run](%s)" % RUN, "gitlab": "[pipeline](%s)" % PIPELINE}


class Common:
    """The same story on both forges; run(status, plan) runs the recipe's step once."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-issues-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.forge = FakeForge(self.flavour)
        self.addCleanup(self.forge.close)

    def test_one_issue_per_gave_up_job_and_per_drifted_address(self):
        unrelated = self.forge.add("a person's own issue", "vx-drift")
        self.assertEqual(self.run_step(STATUS, DRIFT), 0)
        self.assertEqual(self.forge.open_titles(), [
            ("a person's own issue", ("vx-drift",)),
            ("vx: job.a gave up", ("vx-gave-up",)),
            ("vx: reservation.pool drifted", ("vx-drift",))])
        self.assertEqual(self.forge.issue("vx: job.a gave up")["body"], gave_up_body(self.flavour))
        self.assertEqual(self.forge.issue("vx: reservation.pool drifted")["body"], drift_body(self.flavour))
        # Again: nothing new.
        n = len(self.forge.issues)
        self.assertEqual(self.run_step(STATUS, DRIFT), 0)
        self.assertEqual(len(self.forge.issues), n)
        # The drift is undone (an apply), the job runs again: both close, with a note each.
        self.assertEqual(self.run_step(STATUS_CLEAN, NO_DRIFT), 0)
        self.assertEqual(self.forge.open_titles(), [("a person's own issue", ("vx-drift",))])
        self.assertEqual(self.forge.issue("vx: reservation.pool drifted")["notes"],
                         ["The plan sees no drift at reservation.pool any more (%s)." % LINK[self.flavour]])
        self.assertEqual(self.forge.issue("vx: job.a gave up")["notes"],
                         ["job.a is no longer a failure vx gave up on (%s)." % LINK[self.flavour]])
        self.assertEqual(self.forge.issues[unrelated - 1]["notes"], [])

    def test_a_failed_plan_leaves_the_drift_issues_alone(self):
        self.assertEqual(self.run_step(STATUS, DRIFT), 0)
        self.failed_plan_fails(self.run_step(STATUS_CLEAN, None))
        self.assertEqual(self.forge.open_titles(), [("vx: reservation.pool drifted", ("vx-drift",))])
        self.assertEqual(self.forge.issue("vx: reservation.pool drifted")["notes"], [])


class GitHubRecipe(Common, unittest.TestCase):
    flavour = "github"

    def run_step(self, status, plan):
        """The github-script step; then the recipe's last step's rule: a failed plan fails the run."""
        script, env = github_script()
        self.assertEqual(env, {"STATUS_FILE": "${{ runner.temp }}/status.json",
                               "PLAN_FILE": "${{ runner.temp }}/plan.json"})
        for name, doc in (("status.json", status), ("plan.json", plan)):
            path = os.path.join(self.tmp, name)
            if doc is None:
                if os.path.exists(path):
                    os.remove(path)
                continue
            with open(path, "w") as f:
                json.dump(doc, f)
        with open(os.path.join(self.tmp, "script.js"), "w") as f:
            f.write(script)
        with open(os.path.join(self.tmp, "harness.js"), "w") as f:
            f.write(NODE_HARNESS)
        cp = subprocess.run(["node", "--no-warnings", os.path.join(self.tmp, "harness.js"),
                             os.path.join(self.tmp, "script.js")],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, FAKE_GITHUB=self.forge.url,
                                     STATUS_FILE=os.path.join(self.tmp, "status.json"),
                                     PLAN_FILE=os.path.join(self.tmp, "plan.json")))
        self.assertEqual((cp.returncode, cp.stderr), (0, ""), cp.stdout)
        self.assertEqual(self.forge.labels.get("vx-gave-up", {}).get("color", "d93f0b"), "d93f0b")
        if "vx-drift" in self.forge.labels:
            self.assertEqual(self.forge.labels["vx-drift"], {
                "name": "vx-drift", "color": "fbca04",
                "description": "something vx manages was changed outside vx"})
        return cp.returncode

    def failed_plan_fails(self, code):
        """The script itself succeeds; the plan step removed plan.json and the last step fails the run."""
        self.assertEqual(code, 0)
        with open(os.path.join(ROOT, "examples", "ci", "github", "vx-watch.yml")) as f:
            steps = yaml.safe_load(f)["jobs"]["watch"]["steps"]
        plan = [s for s in steps if s.get("id") == "plan"][0]
        self.assertIn('vxplan "$STACK_DIR" -format json >"$RUNNER_TEMP/plan.json"', plan["run"])
        self.assertIn('rm -f "$RUNNER_TEMP/plan.json"', plan["run"])
        self.assertIn("steps.plan.outputs.exitcode != '0'", steps[-1]["if"])
        self.assertEqual(steps[-1]["run"].splitlines()[-1], "exit 1")


class GitLabRecipe(Common, unittest.TestCase):
    flavour = "gitlab"

    def run_step(self, status, plan):
        """.vx-watch-issues in sh (set -e, as GitLab runs a script), with what .vx-watch left."""
        files = {"status.json": json.dumps(status), "watch.code": "2\n",
                 "plan.json": json.dumps(plan) if plan is not None else "",
                 "plan.code": "0\n" if plan is not None else "1\n"}
        for name, text in files.items():
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)
        with open(os.path.join(self.tmp, "script.sh"), "w") as f:
            f.write(gitlab_script())
        cp = subprocess.run(["sh", "-e", "script.sh"], cwd=self.tmp, capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, CI_API_V4_URL=self.forge.url + "/api/v4", CI_PROJECT_ID="7",
                                     VX_NOTE_TOKEN="note-token", CI_PIPELINE_URL=PIPELINE))
        self.assertEqual(cp.stderr, "")
        return cp.returncode

    def failed_plan_fails(self, code):
        self.assertEqual(code, 1)


if __name__ == "__main__":
    unittest.main()
