"""The browser check refuses what it says it refuses (tests/browser/check_report.py).

Each test writes a small page into a temporary folder and checks it in one headless Chromium
shared by the whole file: a clean page passes, and a page with an external image, a console
error, an uncaught exception, a wrong number of bars, bars drawn only by script, a bar hidden
in print or one wider than the printed page is refused with the exact problem lines.
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_report  # noqa: E402

BAR = '<rect data-address="job.%s" data-attempt="1" x="%d" y="0" width="40" height="10"/>'


def page(body, head=""):
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>t</title>"
            "<style>body{background:#fff}@media (prefers-color-scheme:dark){body{background:#000}}</style>"
            + head + "</head><body>" + body + "</body></html>")


def bars(n):
    return ('<svg viewBox="0 0 600 20" style="width:100%%">%s</svg>'
            % "".join(BAR % (i, i * 50) for i in range(n)))


class CheckReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="vx-check-report-")
        cls.browser = check_report.Chromium()

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        shutil.rmtree(cls.dir)

    def check(self, html, expected, screenshot=None):
        path = os.path.join(self.dir, self.id().rsplit(".", 1)[1] + ".html")
        with open(path, "w") as f:
            f.write(html)
        return check_report.check(self.browser, path, expected, screenshot)

    def test_a_clean_page_passes_and_is_shot(self):
        png = os.path.join(self.dir, "clean.png")
        self.assertEqual(self.check(page(bars(3) + "<script>console.log('fine')</script>"), 3, png), [])
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_an_external_image_is_refused(self):
        # Once with scripts on, once with scripts off; blocked before it left the browser.
        self.assertEqual(self.check(page(bars(2) + '<img src="http://example.invalid/pixel.png">'), 2),
                         ["request other than the file: http://example.invalid/pixel.png"] * 2)

    def test_a_stylesheet_from_a_cdn_is_refused(self):
        problems = self.check(page(bars(1), '<link rel="stylesheet" href="https://cdn.example.invalid/a.css">'), 1)
        self.assertIn("request other than the file: https://cdn.example.invalid/a.css", problems)

    def test_a_console_error_is_refused(self):
        self.assertEqual(self.check(page(bars(2) + "<script>console.error('bad', 42)</script>"), 2),
                         ["console.error: bad 42"])

    def test_an_uncaught_exception_is_refused(self):
        problems = self.check(page(bars(2) + "<script>null.x</script>"), 2)
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("exception: TypeError: Cannot read properties of null"), problems)

    def test_a_wrong_bar_count_is_refused(self):
        self.assertEqual(self.check(page(bars(3)), 4), [
            "scripts on: 3 elements with data-address and data-attempt, expected 4",
            "scripts off: 3 elements with data-address and data-attempt, expected 4",
            "print: 3 elements with data-address and data-attempt, expected 4",
        ])

    def test_bars_drawn_only_by_script_are_refused(self):
        script = ("<script>document.body.insertAdjacentHTML('beforeend', %r)</script>" % bars(2))
        self.assertEqual(self.check(page(script), 2), [
            "scripts off: 0 elements with data-address and data-attempt, expected 2",
            "print: 0 elements with data-address and data-attempt, expected 2",
        ])

    def test_a_bar_hidden_in_print_is_refused(self):
        self.assertEqual(self.check(page(bars(2), "<style>@media print{svg{display:none}}</style>"), 2),
                         ["print: 2 bars have no box (not drawn)"])

    def test_a_bar_past_the_printed_page_is_refused(self):
        wide = '<svg width="900" height="20">%s</svg>' % (BAR % ("wide", 850))
        self.assertEqual(self.check(page(wide), 1), ["print: 1 bars reach past the page width (703 px)"])

    def test_a_page_without_dark_is_refused(self):
        self.assertEqual(self.check("<!DOCTYPE html><html><body>%s</body></html>" % bars(1), 1),
                         ["dark: the background is rgba(0, 0, 0, 0) in light and dark alike"])


if __name__ == "__main__":
    unittest.main()
