"""tools/check-layers.py and tools/check-funcs.py, on copies of the product's C files with one
thing changed: an include that runs back up, a function grown past the limit. A checker that
stopped looking would let the sample through and fail here; the tree as it is passes."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ["util", "reconcile", "providers", "state", "workflow", "cmd"]


class Checks(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="vx-check-layers-")
        for d in DIRS:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(self.root, d),
                            ignore=shutil.ignore_patterns("*.o", "*.d"))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def run_tool(self, name):
        cp = subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), "--root", self.root],
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.splitlines()

    def prepend_include(self, path, header):
        p = os.path.join(self.root, path)
        with open(p, encoding="utf-8") as f:
            text = f.read()
        with open(p, "w", encoding="utf-8") as f:
            f.write('#include "%s"\n' % header + text)

    def test_tree_passes(self):
        self.assertEqual(self.run_tool("check-layers.py")[0], 0)
        self.assertEqual(self.run_tool("check-funcs.py")[0], 0)

    def test_include_back_up(self):
        cases = [
            ("state/state.c", "reconcile/kind.h", "state/state.c:1: reconcile/ (reconcile/kind.h) is above state/"),
            ("reconcile/load/spec.c", "reconcile/stack.h",
             "reconcile/load/spec.c:1: reconcile/ (reconcile/stack.h) is above reconcile/load/"),
            ("reconcile/kind.c", "reconcile/out/render.h",
             "reconcile/kind.c:1: reconcile/out/ (reconcile/out/render.h) is above reconcile/"),
            ("reconcile/plan.c", "providers/gcp/http.h",
             "reconcile/plan.c:1: reconcile/ includes no header of providers/ (providers/gcp/http.h)"),
            ("providers/gcp/http.c", "reconcile/plan.h",
             "providers/gcp/http.c:1: providers/ includes of reconcile/ only reconcile/provider.h, "
             "not reconcile/plan.h"),
            ("workflow/watch.c", "cmd/cmd.h", "workflow/watch.c:1: cmd/ (cmd/cmd.h) is above workflow/"),
        ]
        for path, header, want in cases:
            with self.subTest(path=path):
                self.tearDown()
                self.setUp()
                self.prepend_include(path, header)
                self.assertEqual(self.run_tool("check-layers.py"), (1, [want]))

    def test_long_function(self):
        body = "".join("\tx += %d;\n" % i for i in range(80))
        with open(os.path.join(self.root, "workflow", "zz_long.c"), "w", encoding="utf-8") as f:
            f.write("static int grown(int x)\n{\n%s\treturn x;\n}\n" % body)
        code, out = self.run_tool("check-funcs.py")
        self.assertEqual(code, 1)
        self.assertEqual(out[0], "workflow/zz_long.c:1: grown is 84 lines: none over 80 in cmd/ or workflow/")


if __name__ == "__main__":
    unittest.main()
