"""tools/check-banned.sh: the shipped tree passes; a product .c file that does not end its
includes with util/banned.h, or calls a banned function, is reported exactly."""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-banned.sh")

GOOD = '#include "util/x.h"\n\n#include <string.h>\n\n#include "util/buf.h"\n#include "util/banned.h"\n\nint x;\n'


class CheckBanned(unittest.TestCase):
    maxDiff = None

    def tree(self, files):
        """A git repository holding the checker and FILES (path: text), all tracked."""
        d = tempfile.mkdtemp(prefix="check-banned-")
        self.addCleanup(shutil.rmtree, d)
        os.makedirs(os.path.join(d, "tools"))
        shutil.copy(CHECK, os.path.join(d, "tools", "check-banned.sh"))
        for path, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        subprocess.run(["git", "init", "-q", d], check=True)
        subprocess.run(["git", "-C", d, "add", "-A"], check=True)
        return d

    def check(self, root):
        cp = subprocess.run(["sh", os.path.join(root, "tools", "check-banned.sh")], capture_output=True, text=True)
        return cp.returncode, cp.stdout + cp.stderr

    def test_shipped_tree_passes(self):
        self.assertEqual(self.check(ROOT), (0, ""))

    def test_every_product_folder_needs_the_include(self):
        files = {p: GOOD for p in ("util/a.c", "reconcile/a.c", "providers/gcp/a.c", "state/a.c",
                                   "workflow/a.c", "cmd/a.c")}
        self.assertEqual(self.check(self.tree(files)), (0, ""))
        bare = GOOD.replace('#include "util/banned.h"\n', "")
        files.update({"util/b.c": bare, "providers/gcp/b.c": bare, "cmd/b.c": bare})
        self.assertEqual(self.check(self.tree(files)),
                         (1, 'product .c files whose last #include is not "util/banned.h":\n'
                             "cmd/b.c\nproviders/gcp/b.c\nutil/b.c\n"))

    def test_an_include_after_it_is_refused(self):
        # A system header after banned.h would meet its macros (strcpy's prototype, say).
        late = GOOD.replace('#include "util/banned.h"\n', '#include "util/banned.h"\n#include <stdio.h>\n')
        self.assertEqual(self.check(self.tree({"state/a.c": late})),
                         (1, 'product .c files whose last #include is not "util/banned.h":\nstate/a.c\n'))

    def test_tests_and_headers_are_not_product_files(self):
        bare = GOOD.replace('#include "util/banned.h"\n', "")
        self.assertEqual(self.check(self.tree({"tests/unit/test_a.c": bare, "tools/gen.c": bare,
                                               "util/a.h": bare})), (0, ""))

    def test_banned_call(self):
        text = GOOD.replace("int x;\n", "void f(char *d, const char *s)\n{\n\tstrcpy(d, s);\n}\n")
        self.assertEqual(self.check(self.tree({"util/a.c": text})),
                         (1, "banned functions used:\nutil/a.c:10:\tstrcpy(d, s);\n"))


if __name__ == "__main__":
    unittest.main()
