"""vx show PLANFILE, vx state rm, vx state mv: the verbs Terraform users reach
for in their first week, against the fake."""
import json
import os
import unittest

from harness import FakeTestCase, job_yaml

SAVED = "\nSaved the plan to {f}. Apply exactly it with: vxapply {f}\n"


class ShowTest(FakeTestCase):
    def saved(self, *args):
        """Saves a plan; what vxplan printed, without its 'Saved the plan' line."""
        f = os.path.join(self.tmp, "p.vxplan")
        r = self.repo.plan("-out", f, *args)
        self.assertEqual(r.code, 0, r)
        out = r.out
        if "-format" not in args:
            self.assertTrue(out.endswith(SAVED.format(f=f)), r)
            out = out[:-len(SAVED.format(f=f))]
        return f, out

    def test_show_prints_the_plan_as_vxplan_did_without_the_cloud(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        f, printed = self.saved()
        before = self.fake.requests()["total"]
        # Credentials and endpoints that lead nowhere: show must not need them.
        env = {"GOOGLE_APPLICATION_CREDENTIALS": os.path.join(self.tmp, "none.json"),
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "http://127.0.0.1:9/v1/"}
        r = self.repo.vx("show", f, env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, printed + "\nThis plan still applies to the state (serial 0) and the "
                         "declaration: vxapply %s\n" % f)
        self.assertEqual(r.err, "")
        self.assertEqual(self.fake.requests()["total"], before)

    def test_show_json_and_markdown_as_printed(self):
        self.repo.write({"a": job_yaml("a")})
        for fmt in ("json", "markdown"):
            f, printed = self.saved("-format", fmt)
            r = self.repo.vx("show", "-format", fmt, f)
            self.assertEqual((r.code, r.err), (0, ""), r)
            self.assertEqual(r.out, printed)
        # The saved-only parts (who planned, the state's salt) stay out of the json shown.
        f, printed = self.saved("-format", "json")
        with open(f) as fh:
            saved = json.load(fh)
        self.assertIn("rendered", saved)
        self.assertNotIn("rendered", json.loads(printed))

    def test_show_says_a_plan_is_stale(self):
        self.repo.write({"a": job_yaml("a")})
        f, printed = self.saved()
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 3, r)
        self.assertEqual(r.out, printed)
        self.assertEqual(r.err, "vx: this plan is stale: the state moved since the plan was made "
                         "(serial 0 then, 2 now); run vxplan again\n")
        f, printed = self.saved()
        self.repo.write({"a": job_yaml("a", epochs=4)})
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 3, r)
        self.assertEqual(r.err, "vx: this plan is stale: the declaration changed since the plan was "
                         "made; run vxplan again\n")

    def test_show_refuses_what_is_no_plan_and_cleans_the_text(self):
        junk = os.path.join(self.tmp, "junk")
        with open(junk, "w") as fh:
            fh.write("not json")
        r = self.repo.vx("show", junk)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertEqual(r.err, "vx: show: %s: saved plan: not a JSON object\n"
                         "vx: vx show takes a plan saved by 'vxplan -out FILE'\n" % junk)
        self.repo.write({"a": job_yaml("a")})
        f, _ = self.saved()
        with open(f) as fh:
            saved = json.load(fh)
        saved["rendered"]["human"] = "line \x1b]0;owned\x07one\nline two\n"
        with open(f, "w") as fh:
            json.dump(saved, fh)
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.out.startswith("line ?]0;owned?one\nline two\n"), r)


if __name__ == "__main__":
    unittest.main()
