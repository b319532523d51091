"""docs/google-cloud.md, the first job on Google Cloud, keeps to the code.

Its one `gcloud services enable` line names every API in vx's endpoint table
(providers/gcp/endpoints.c), plus the token exchange's STS (providers/gcp/auth.c) and IAM
Credentials (the impersonation URL of CI's credential file), and nothing else; the role files
it creates exist; the README links it.
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "google-cloud.md")


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


class GoogleCloudDocTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.isfile(DOC), "docs/google-cloud.md is missing")
        self.doc = read("docs", "google-cloud.md")

    def test_enable_line_names_every_api_vx_calls(self):
        table = read("providers", "gcp", "endpoints.c")
        table = table[table.index("default_base[GCP_API_COUNT]"):]
        table = table[:table.index("};")]
        hosts = set(re.findall(r'"https://(?:\{region\}-)?([a-z0-9]+\.googleapis\.com)/', table))
        self.assertGreaterEqual(len(hosts), 8, table)
        sts = re.search(r'#define DEFAULT_STS_URL "https://([a-z.]+)/', read("providers", "gcp", "auth.c"))
        self.assertIsNotNone(sts)
        want = hosts | {"iamcredentials.googleapis.com", sts.group(1)}
        lines = re.findall(r"^gcloud services enable (.*) --project=my-project$", self.doc, re.M)
        self.assertEqual(len(lines), 1, "one gcloud services enable line")
        self.assertEqual(sorted(lines[0].split()), sorted(want))
        for api in want:
            self.assertIn("| `%s`" % api if api not in ("iamcredentials.googleapis.com", "sts.googleapis.com")
                          else "`%s`" % api, self.doc)

    def test_roles_doctor_and_quota_project(self):
        for role in ("vx-role-plan.yaml", "vx-role-apply.yaml"):
            self.assertIn("--file=docs/%s" % role, self.doc)
            self.assertTrue(os.path.isfile(os.path.join(ROOT, "docs", role)))
        self.assertIn("gcloud auth application-default set-quota-project my-project", self.doc)
        self.assertIn("GOOGLE_CLOUD_QUOTA_PROJECT", self.doc)
        self.assertIn("vx doctor spot -plan-only", self.doc)
        self.assertIn("state: {remote: origin}", self.doc)
        self.assertIn("state: {backend: gcs, bucket: my-project-vx-state}", self.doc)

    def test_readme_links_it(self):
        self.assertIn("[docs/google-cloud.md](docs/google-cloud.md)", read("README.md"))


if __name__ == "__main__":
    unittest.main()
