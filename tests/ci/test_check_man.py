"""tools/check-man.py: the shipped pages pass, and each broken sample is reported exactly.

Each sample is a small tree (a command table in cmd/, pages in man/) with one
thing broken: a checker that stopped looking at that thing would pass it.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-man.py")

CMD_H = """#define CMD_SHARED_OPTS \\
	{ "target", CMD_ARG_REQUIRED, 100 }, \\
	{ "verbose", CMD_ARG_NONE, 101 }
"""
MAIN_C = """static const struct cmd_entry *const commands[] = {
	&cmd_go_entry, &cmd_help_entry,
};
const struct cmd_entry cmd_help_entry = { .name = "help", .exec = help_exec };
"""
GO_C = """static const char usage[] = "usage: vx go (the branches vx/state/* are read) [options]\\n";
/* { "commented", CMD_ARG_NONE, 9 } is no flag */
static const struct cmd_opt go_opts[] = {
	{ "out", CMD_ARG_REQUIRED, 1 },
	CMD_SHARED_OPTS,
	{ NULL, CMD_ARG_NONE, 0 },
};
const struct cmd_entry cmd_go_entry = {
	.name = "go",
	.opts = go_opts,
	.exec = go_exec,
};
"""
PAGE = """.Dd November 26, 2026
.Dt VX-GO 1
.Os
.Sh NAME
.Nm vx-go
.Nd go
.Sh SYNOPSIS
.Nm vx go
.Op Fl out Ar file
.Op Fl target Ar addr
.Sh DESCRIPTION
Goes; see also
.Fl auto-approve
of another command.
.Sh OPTIONS
.Bl -tag -width Ds
.It Fl out Ar file
Out.
.It Fl target Ar addr
Target.
.It Fl verbose
More.
.It Fl debug
Requests.
.El
"""


class CheckMan(unittest.TestCase):
    maxDiff = None

    def check(self, root):
        cp = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return cp.returncode, cp.stderr

    def tree(self, page=PAGE, go_c=GO_C, extra_pages=None):
        d = tempfile.mkdtemp(prefix="check-man-")
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        os.makedirs(os.path.join(d, "cmd"))
        os.makedirs(os.path.join(d, "man"))
        for name, text in (("cmd.h", CMD_H), ("main.c", MAIN_C), ("go.c", go_c)):
            with open(os.path.join(d, "cmd", name), "w") as f:
                f.write(text)
        pages = dict(extra_pages or {})
        if page is not None:
            pages["vx-go.1"] = page
        for name, text in pages.items():
            with open(os.path.join(d, "man", name), "w") as f:
                f.write(text)
        return d

    def test_shipped_pages_pass(self):
        self.assertEqual(self.check(ROOT), (0, ""))

    def test_good_sample_passes(self):
        self.assertEqual(self.check(self.tree()), (0, ""))

    def test_command_without_a_page(self):
        self.assertEqual(self.check(self.tree(page=None)),
                         (1, "check-man: man/vx-go.1: missing: every command has a page (vx go)\n"))

    def test_flag_missing_from_options(self):
        page = PAGE.replace(".It Fl verbose\nMore.\n", "")
        self.assertEqual(self.check(self.tree(page=page)),
                         (1, "check-man: man/vx-go.1: -verbose (a flag of vx go) is not listed in OPTIONS "
                             "(.It Fl verbose)\n"))

    def test_flag_the_command_lacks(self):
        page = PAGE.replace(".Op Fl target Ar addr\n", ".Op Fl target Ar addr\n.Op Fl frob\n")
        self.assertEqual(self.check(self.tree(page=page)),
                         (1, "check-man: man/vx-go.1: names -frob, which vx go does not have\n"))

    def test_flag_dropped_from_the_table(self):
        go_c = GO_C.replace('\t{ "out", CMD_ARG_REQUIRED, 1 },\n', "")
        self.assertEqual(self.check(self.tree(go_c=go_c)),
                         (1, "check-man: man/vx-go.1: names -out, which vx go does not have\n"))

    def test_page_of_a_command_not_merged_yet_is_not_checked(self):
        rc, err = self.check(self.tree(extra_pages={"vx-soon.1": PAGE.replace("VX-GO", "VX-SOON")
                                                    .replace("vx-go", "vx-soon")}))
        self.assertEqual((rc, err), (0, ""))


if __name__ == "__main__":
    unittest.main()
