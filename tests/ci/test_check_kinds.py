"""tools/check-kinds.py: the kinds are named in reconcile/kind.c's table and their own files, and
nowhere new.

Each sample is a copy of the product's C files with one thing changed (a stray kind name, prefix
or folder in a generic file, a written list of kinds, an allowed literal gone), so a checker that
stopped looking at that thing would let the sample through and fail here.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-kinds.py")
DIRS = ["util", "reconcile", "providers", "state", "workflow", "cmd"]
OK = "check-kinds: the kinds are named only in their own files and the allowed places"
# A generic file, and a line of it to add code after.
FILE = "workflow/planning.c"
ANCHOR = "static int target_known(const struct workspace *ws, const char *target)\n{\n"


class CheckKinds(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="vx-check-kinds-")
        for d in DIRS:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(self.root, d),
                            ignore=shutil.ignore_patterns("*.o", "*.d"))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def run_check(self):
        cp = subprocess.run([sys.executable, CHECK, "--root", self.root],
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.splitlines()

    def edit(self, path, old, new):
        p = os.path.join(self.root, path)
        with open(p, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, old)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))
        return text[:text.index(old) + len(old)].count("\n")

    def add_line(self, code):
        """Adds code as the first line of FILE's target_known; returns its line number."""
        return self.edit(FILE, ANCHOR, ANCHOR + code + "\n") + 1

    def test_tree_passes(self):
        self.assertEqual(self.run_check(), (0, [OK]))

    def test_stray_kind_name(self):
        line = self.add_line('\tif (!strcmp(target, "Reservation"))\n\t\treturn 0;')
        self.assertEqual(self.run_check(), (1, [
            '%s:%d: "Reservation" names a kind\'s name: go through reconcile/kind.c\'s kind_table'
            % (FILE, line)]))

    def test_stray_prefix(self):
        line = self.add_line('\tif (!strncmp(target, "quota.", 6))\n\t\treturn 0;')
        self.assertEqual(self.run_check(), (1, [
            '%s:%d: "quota." names an address prefix: go through reconcile/kind.c\'s kind_table'
            % (FILE, line)]))

    def test_stray_folder(self):
        line = self.add_line('\tif (!strncmp(target, "reservations/", 13))\n\t\treturn 0;')
        self.assertEqual(self.run_check(), (1, [
            '%s:%d: "reservations/" names a state folder: go through reconcile/kind.c\'s kind_table'
            % (FILE, line)]))

    def test_written_list_of_kinds(self):
        line = self.add_line('\tif (!*target)\n\t\tfputs("one of CustomJob or QuotaPreference", stderr);')
        self.assertEqual(self.run_check(), (1, [
            '%s:%d: "one of CustomJob or QuotaPreference" names a list of kinds: go through '
            'reconcile/kind.c\'s kind_table' % (FILE, line + 1)]))

    def test_comments_and_one_kind_in_text_pass(self):
        # A comment is not code, and a message about one kind is not a list of them.
        self.add_line('\t/* "Reservation", "job." */\n'
                      '\tif (!*target)\n\t\tfputs("a job.NAME, say", stderr);')
        self.assertEqual(self.run_check(), (0, [OK]))

    def test_kind_files_and_clients_may_name_their_kind(self):
        self.edit("reconcile/kind_reservation.c", "const struct kind kind_reservation = {",
                  'static const char *const extra = "Reservation";\n'
                  "const struct kind kind_reservation = {")
        self.edit("providers/gcp/compute.c", '#include "providers/gcp/compute.h"\n',
                  '#include "providers/gcp/compute.h"\nstatic const char *const extra = "reservations/";\n')
        self.assertEqual(self.run_check(), (0, [OK]))

    def test_allowed_literal_gone_is_reported(self):
        # ALLOWED is empty now: a copy of the checker given one entry that names nothing in
        # the tree (state/ keeps no folder of a kind since the state layer names none) must
        # say so, so the list can only shrink.
        with open(CHECK, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count("\nALLOWED = {\n}\n"), 1)
        copy = os.path.join(self.root, "check-kinds.py")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text.replace("\nALLOWED = {\n}\n",
                                 '\nALLOWED = {\n    ("state/state.c", "jobs"): "gone",\n}\n'))
        cp = subprocess.run([sys.executable, copy, "--root", self.root], capture_output=True, text=True)
        self.assertEqual((cp.returncode, cp.stdout.splitlines()), (1, [
            'state/state.c: "jobs" is allowed in tools/check-kinds.py but no longer there: '
            'remove it from ALLOWED']))

    def test_state_layer_names_no_folder(self):
        # In state/, a kind's folder alone ("jobs") is a kind named, not a plural in a message.
        self.edit("state/state.c", "int state_prefix_ok(const char *s, size_t n)\n{\n",
                  'int state_prefix_ok(const char *s, size_t n)\n{\n\tif (!strcmp(s, "quotas"))\n\t\treturn 0;\n')
        with open(os.path.join(self.root, "state/state.c"), encoding="utf-8") as f:
            line = f.read().split("\n").index('\tif (!strcmp(s, "quotas"))') + 1
        self.assertEqual(self.run_check(), (1, [
            'state/state.c:%d: "quotas" names a state folder: go through reconcile/kind.c\'s kind_table'
            % line]))

if __name__ == "__main__":
    unittest.main()
