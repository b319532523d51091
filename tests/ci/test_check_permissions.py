"""tools/check-permissions.py: the shipped docs/permissions.md and role files match the code's
permission table, and each broken sample is reported exactly.

Each sample is a copy of the shipped files with one thing broken (a row added to the table, a
permission dropped from or added to a role file, a permission named in the page that the code
never needs, a generated line edited), so a checker that stopped looking at that thing would let
the sample through and fail here.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-permissions.py")
FILES = ["providers/gcp/permissions.c", "providers/gcp/permissions.h", "docs/permissions.md",
         "docs/vx-role-plan.yaml", "docs/vx-role-apply.yaml", "providers/gcp/vertex.c", "providers/gcp/compute.c",
         "providers/gcp/quotas.c", "providers/gcp/storage.c", "providers/gcp/iamtest.c"]


class CheckPermissions(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="vx-check-perms-")
        for f in FILES:
            os.makedirs(os.path.dirname(os.path.join(self.root, f)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, f), os.path.join(self.root, f))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def run_check(self, *args):
        cp = subprocess.run([sys.executable, CHECK, "--root", self.root] + list(args),
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.splitlines()

    def edit(self, path, old, new):
        p = os.path.join(self.root, path)
        with open(p) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(p, "w") as f:
            f.write(text.replace(old, new, 1))

    def test_shipped_files_pass(self):
        code, out = self.run_check()
        self.assertEqual(code, 0, out)
        self.assertRegex(out[0], r"^docs/permissions.md and the role files match "
                                 r"providers/gcp/permissions.c \(\d+ methods\)$")

    def test_a_method_the_doc_lacks(self):
        self.edit("providers/gcp/permissions.c", "static const struct gcp_permission table[] = {\n",
                  "static const struct gcp_permission table[] = {\n"
                  "\t{ .api = \"aiplatform\", .rpc = \"DeleteCustomJob\", .method = "
                  "\"projects.locations.customJobs.delete\",\n"
                  "\t  .permission = \"aiplatform.customJobs.delete\", .role = \"roles/aiplatform.user\",\n"
                  "\t  .on = GCP_ON_PROJECT, .cmds = APPLY, .kinds = \"CustomJob\" },\n")
        # The new row (cmds = APPLY) goes first in the generated part's "vx apply" table, where
        # the customJobs.list row is now (a line number written here would move with every kind
        # that adds a row above it).
        with open(os.path.join(self.root, "docs/permissions.md")) as f:
            part = f.read().split("<!-- BEGIN GENERATED", 1)[1].splitlines()
        apply_at = part.index("### vx apply")
        line = 1 + next(i for i in range(apply_at, len(part)) if part[i].startswith("| CustomJob | Vertex AI | "))
        code, out = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(out, [
            "docs/permissions.md: generated part differs from the table at its line %d: has " % line +
            "\"| CustomJob | Vertex AI | `projects.locations.customJobs.list` | `aiplatform.customJobs.list` | "
            "`roles/aiplatform.viewer` | the project |\", the table gives \"| CustomJob | Vertex AI | "
            "`projects.locations.customJobs.delete` | `aiplatform.customJobs.delete` | `roles/aiplatform.user` "
            "| the project |\" (run tools/check-permissions.py --write)",
            "docs/vx-role-apply.yaml: includedPermissions lacks aiplatform.customJobs.delete, which vx apply "
            "needs"])

    def test_a_role_file_missing_a_permission(self):
        self.edit("docs/vx-role-plan.yaml", "- compute.reservations.list\n", "")
        code, out = self.run_check()
        self.assertEqual((code, out), (1, [
            "docs/vx-role-plan.yaml: includedPermissions lacks compute.reservations.list, which vx plan needs"]))

    def test_a_role_file_granting_more(self):
        self.edit("docs/vx-role-plan.yaml", "- cloudquotas.quotas.get\n",
                  "- cloudquotas.quotas.get\n- cloudquotas.quotas.update\n")
        code, out = self.run_check()
        self.assertEqual((code, out), (1, [
            "docs/vx-role-plan.yaml: includedPermissions has cloudquotas.quotas.update, which vx plan does "
            "not need"]))

    def test_a_role_file_without_its_stage(self):
        self.edit("docs/vx-role-apply.yaml", "stage: GA\n", "")
        code, out = self.run_check()
        self.assertEqual((code, out), (1, ["docs/vx-role-apply.yaml: no stage"]))

    def test_the_doc_naming_a_permission_no_method_needs(self):
        self.edit("docs/permissions.md", "## What an error says\n",
                  "Also grant `compute.instances.create`.\n\n## What an error says\n")
        code, out = self.run_check()
        self.assertEqual((code, out), (1, [
            "docs/permissions.md: names compute.instances.create, which no method in "
            "providers/gcp/permissions.c needs"]))

    def test_a_generated_line_edited_by_hand(self):
        self.edit("docs/permissions.md", "| `aiplatform.customJobs.list` | `roles/aiplatform.viewer` |",
                  "| `aiplatform.customJobs.list` | `roles/aiplatform.user` |")
        code, out = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(len(out), 1)
        self.assertRegex(out[0], r"^docs/permissions.md: generated part differs from the table at its line \d+: "
                                 r"has .*roles/aiplatform.user.* \(run tools/check-permissions.py --write\)$")

    def test_write_repairs_what_it_generates(self):
        self.edit("docs/vx-role-plan.yaml", "- compute.reservations.list\n", "")
        self.edit("docs/permissions.md", "`roles/aiplatform.viewer` | the project |",
                  "`roles/aiplatform.user` | the project |")
        self.assertEqual(self.run_check("--write")[0], 0)
        code, out = self.run_check()
        self.assertEqual(code, 0, out)
        for f in FILES[2:5]:
            with open(os.path.join(ROOT, f)) as a, open(os.path.join(self.root, f)) as b:
                self.assertEqual(a.read(), b.read(), f)

    def test_a_call_without_its_row(self):
        self.edit("providers/gcp/vertex.c", '"CancelCustomJob"', '"PauseCustomJob"')
        code, out = self.run_check()
        self.assertEqual((code, out), (1, [
            "providers/gcp/vertex.c: sends PauseCustomJob, which has no row in providers/gcp/permissions.c (its "
            "permission and role)"]))

    def test_a_row_without_its_role(self):
        self.edit("providers/gcp/permissions.c", ".permission = \"aiplatform.customJobs.list\", "
                  ".role = \"roles/aiplatform.viewer\",", ".permission = \"aiplatform.customJobs.list\",")
        code, out = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(len(out), 1)
        self.assertRegex(out[0], r"^providers/gcp/permissions.c: a row lacks role: \{\.api = \"aiplatform\", "
                                 r"\.rpc = \"ListCustomJobs\"")


if __name__ == "__main__":
    unittest.main()
