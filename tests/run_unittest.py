"""Runs a folder's Python unittest files and ends with one 'NAME: N passed, N failed' line.

usage: python3 tests/run_unittest.py NAME DIR [PATTERN]
Exit status 0 only when every test passed and at least one ran.
"""
import os
import sys
import unittest


def main():
    name, folder = sys.argv[1], os.path.abspath(sys.argv[2])
    pattern = sys.argv[3] if len(sys.argv) > 3 else "test_*.py"
    sys.path.insert(0, folder)
    suite = unittest.defaultTestLoader.discover(folder, pattern=pattern, top_level_dir=folder)
    result = unittest.TextTestRunner(verbosity=int(os.environ.get("VX_TEST_VERBOSITY", "1"))).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    print("%s: %d passed, %d failed" % (name, passed, failed))
    return 0 if failed == 0 and result.testsRun > 0 and not result.skipped else 1


if __name__ == "__main__":
    sys.exit(main())
