"""End to end: a state record of a kind this vx does not know, as a newer vx that manages one
more kind (a `widget.NAME`, say) leaves it in the state, is kept as it is. vx plans nothing for
it, an apply that writes the state carries its bytes through unchanged, and `vx state list` and
`vx log` show it. The state layer files a record by its address alone (PREFIX.NAME, in the git
backend's folder PREFIXs/), so no kind needs a change there.

Before, the git backend read and wrote only the folders of the kinds it knew: an older vx
applying against a newer one's state dropped the other folders from the next commit, losing
those records (a resource of the stack no state tracks any more), and the file and gcs
backends refused the whole state ("bad address")."""
import json
import os
import subprocess

from harness import FakeTestCase, job_yaml

BRANCH = "vx/state/e2e"

# A record as vx writes it (state_record_to_json), of a kind vx does not know.
WIDGET = """{
\t"version":\t1,
\t"address":\t"widget.w1",
\t"kind":\t"Widget",
\t"specHash":\t"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
\t"spec":\t{
\t\t"size":\t3
\t},
\t"run":\t1,
\t"attempts":\t1,
\t"protect":\tfalse,
\t"current":\t{
\t\t"resource":\t"projects/vx-e2e/locations/us-central1/widgets/w1",
\t\t"project":\t"vx-e2e",
\t\t"region":\t"us-central1",
\t\t"action":\t"create",
\t\t"specHash":\t"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
\t\t"run":\t1,
\t\t"attempt":\t1,
\t\t"labels":\t{
\t\t\t"vx-stack":\t"e2e"
\t\t},
\t\t"state":\t"READY",
\t\t"failure":\tnull,
\t\t"errorCode":\t0,
\t\t"errorMessage":\tnull,
\t\t"cancelledByVx":\tfalse,
\t\t"createdAt":\t"2026-01-01T00:00:00Z",
\t\t"endedAt":\tnull,
\t\t"configCommit":\tnull,
\t\t"configDirty":\tfalse,
\t\t"declHash":\tnull,
\t\t"launchedBy":\tnull,
\t\t"value":\t3
\t},
\t"history":\t[]
}
"""

# Of an unknown prefix but naming a kind vx knows: still not that kind's (its address says
# which kind it is), so no reservation "w2" is read, deleted or forgotten for it.
GADGET = (WIDGET.replace('"widget.w1"', '"gadget.w2"').replace('"Widget"', '"Reservation"')
          .replace("locations/us-central1/widgets/w1", "zones/us-central1-a/reservations/w2")
          .replace('"us-central1"', '"us-central1-a"'))


# What vx state list says of them, before and after the job's line.
LISTED = ("gadget.w2                        projects/vx-e2e/zones/us-central1-a/reservations/w2 READY\n",
          "widget.w1                        projects/vx-e2e/locations/us-central1/widgets/w1 READY\n")


def log_block(out, address):
    """The lines vx log prints for address: its own line and the indented ones under it."""
    lines = out.splitlines()
    at = lines.index(address)
    end = at + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[at:end]


def record_text(text, indent):
    """text (a record as its own file) as it sits at depth indent of a whole-state file."""
    lines = text.rstrip("\n").split("\n")
    body = [l for l in lines if not l.startswith('\t"version":')]
    return "\n".join([body[0]] + ["\t" * indent + l for l in body[1:]])


class UnknownKind(FakeTestCase):

    def plan_out(self):
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual((p.code, p.err), (0, ""), p)
        return p.out

    def state_list(self):
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        return r.out

    def compute_calls(self):
        """The Compute calls made: none, as the stack declares no reservation and the gadget is none."""
        return sorted(k for k in self.fake.requests().get("by_rpc", {})
                      if k.startswith(("Reservations.", "ZoneOperations.")))

    def git_index(self, *args, text=None):
        """git in the repository with an index of its own (the stack's checkout is left alone)."""
        env = self.fake.env()
        env["GIT_INDEX_FILE"] = os.path.join(self.tmp, "state-index")
        return subprocess.run(["git", "-C", self.repo.root] + list(args), check=True, capture_output=True,
                              text=True, env=env, input=text).stdout.strip()

    def test_git_state_keeps_a_record_of_an_unknown_kind(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        before_plan = self.plan_out()
        before_list = self.state_list()
        # A newer vx's commit: the same state, plus a widget and a gadget folder.
        tip = self.repo.git("rev-parse", BRANCH).strip()
        self.git_index("read-tree", tip)
        for path, text in (("widgets/w1.json", WIDGET), ("gadgets/w2.json", GADGET)):
            blob = self.git_index("hash-object", "-w", "--stdin", text=text)
            self.git_index("update-index", "--add", "--cacheinfo", "100644,%s,%s" % (blob, path))
        commit = self.git_index("commit-tree", self.git_index("write-tree"), "-p", tip, "-m", "a newer vx")
        self.repo.git("update-ref", "refs/heads/" + BRANCH, commit, tip)
        blobs = {p: self.repo.git("rev-parse", "%s:%s" % (BRANCH, p)).strip()
                 for p in ("widgets/w1.json", "gadgets/w2.json")}
        # Planned as nothing: the plan is the one before, word for word (at the new commit).
        self.assertEqual(self.plan_out(), before_plan.replace(tip[:12], commit[:12]))
        # An apply that writes the state: the records are carried, byte for byte.
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertNotEqual(self.repo.git("rev-parse", BRANCH).strip(), commit)
        self.assertEqual(self.repo.git("ls-tree", "--name-only", BRANCH).split(),
                         ["gadgets", "jobs", "stack.json", "widgets"])
        for path, blob in blobs.items():
            self.assertEqual(self.repo.git("rev-parse", "%s:%s" % (BRANCH, path)).strip(), blob, path)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(self.compute_calls(), [])
        # Listed as they are, around the jobs (job.a's line as before the apply, and job.b's).
        listed = self.state_list()
        jobs = "".join(l for l in listed.splitlines(True) if l.startswith("job."))
        self.assertEqual(listed, LISTED[0] + jobs + LISTED[1])
        self.assertEqual(jobs.splitlines(True)[0], before_list)
        # vx log shows them as they are, each under its address.
        r = self.repo.vx("log", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(log_block(r.out, "gadget.w2"), [
            "gadget.w2",
            "  2026-01-01T00:00:00Z  create    projects/vx-e2e/zones/us-central1-a/reservations/w2  count 3  by -"
            "  config none  READY"])
        self.assertEqual(log_block(r.out, "widget.w1"), [
            "widget.w1",
            "  2026-01-01T00:00:00Z  create    projects/vx-e2e/locations/us-central1/widgets/w1  count 3  by -"
            "  config none  READY"])
        # vx status has no row for a kind it does not know (nor any error over them).
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        rows = r.out.split("\nADDRESS ")[1].splitlines()[1:]
        self.assertEqual([row.split()[0] for row in rows if row], ["job.a", "job.b"])

    def test_file_state_keeps_a_record_of_an_unknown_kind(self):
        stack = "state: {backend: file, path: vx-state.json}\n"
        path = os.path.join(self.repo.dir, "vx-state.json")
        self.repo.write({"a": job_yaml("a")}, extra_stack=stack)
        self.assertEqual(self.repo.apply().code, 0)
        before_plan = self.plan_out()
        before_list = self.state_list()
        with open(path) as f:
            doc = json.load(f)
        doc["records"] += [json.loads(GADGET), json.loads(WIDGET)]
        for rec in doc["records"][-2:]:
            del rec["version"]
        with open(path, "w") as f:
            json.dump(doc, f)
        self.assertEqual(self.plan_out(), before_plan)
        self.assertEqual(self.state_list(), LISTED[0] + before_list + LISTED[1])
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")}, extra_stack=stack)
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (0, ""), r)
        with open(path) as f:
            text = f.read()
        after = json.loads(text)
        self.assertGreater(after["serial"], doc["serial"])
        self.assertEqual([rec["address"] for rec in after["records"]], ["gadget.w2", "job.a", "job.b", "widget.w1"])
        # Byte for byte as vx writes a record inside the state file.
        for rec in (GADGET, WIDGET):
            self.assertIn(record_text(rec, 2), text)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(self.compute_calls(), [])
