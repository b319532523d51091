import json
import os
import subprocess
import tempfile
import time
import unittest
import urllib.parse

import rsakeys
from fakeutil import FakeTestCase, PARENT

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64(obj):
    return rsakeys.b64url(json.dumps(obj, separators=(",", ":")).encode())


class OAuth(FakeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="fakegcp-oauth-")

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.sa = self.fake.ctl("/service-accounts", {"project": "my-proj"})
        self.pem = os.path.join(self.tmp, "key.pem")
        with open(self.pem, "w") as f:
            f.write(self.sa["private_key"])

    def openssl_jwt(self, claims, header=None):
        """A JWT signed by the openssl CLI (not by our code)."""
        signing = b64(header or {"alg": "RS256", "typ": "JWT"}) + "." + b64(claims)
        msg = os.path.join(self.tmp, "msg")
        with open(msg, "w") as f:
            f.write(signing)
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.pem, msg], check=True,
                             capture_output=True).stdout
        return signing + "." + rsakeys.b64url(sig)

    def claims(self, **over):
        now = int(time.time())
        c = {"iss": self.sa["client_email"], "scope": "https://www.googleapis.com/auth/cloud-platform",
             "aud": self.sa["token_uri"], "iat": now, "exp": now + 3600}
        c.update(over)
        return {k: v for k, v in c.items() if v is not None}

    def grant(self, assertion):
        body = urllib.parse.urlencode({"grant_type": JWT_BEARER, "assertion": assertion})
        st, r = self.fake.call("POST", "/token", body, token=None,
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        return st, r

    def test_key_file_shape_and_openssl_accepts_pem(self):
        sa = self.sa
        for k in ("type", "project_id", "private_key_id", "private_key", "client_email", "client_id", "token_uri"):
            self.assertIn(k, sa)
        self.assertEqual(sa["type"], "service_account")
        self.assertEqual(sa["token_uri"], self.fake.url + "/token")
        self.assertTrue(sa["private_key"].startswith("-----BEGIN PRIVATE KEY-----\n"))
        r = subprocess.run(["openssl", "pkey", "-in", self.pem, "-noout"], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run(["openssl", "pkey", "-in", self.pem, "-noout", "-text"], capture_output=True, text=True)
        self.assertIn("2048 bit", r.stdout)

    def test_rs256_interop_with_openssl(self):
        k = rsakeys.parse_private_pem(self.sa["private_key"])
        msg = os.path.join(self.tmp, "m2")
        with open(msg, "wb") as f:
            f.write(b"payload")
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.pem, msg], check=True,
                             capture_output=True).stdout
        self.assertTrue(rsakeys.verify(k["n"], k["e"], b"payload", sig))
        self.assertFalse(rsakeys.verify(k["n"], k["e"], b"payloaX", sig))
        self.assertEqual(rsakeys.sign(k, b"payload"), sig)

    def test_jwt_grant_and_api_call(self):
        st, r = self.grant(self.openssl_jwt(self.claims()))
        self.assertEqual(st, 200, r)
        self.assertEqual(r["token_type"], "Bearer")
        self.assertEqual(r["expires_in"], 3599)
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token=r["access_token"])
        self.assertEqual(st, 200)
        # Google's own audience is accepted too
        st, r = self.grant(self.openssl_jwt(self.claims(aud="https://oauth2.googleapis.com/token")))
        self.assertEqual(st, 200, r)

    def test_jwt_refusals(self):
        good = self.openssl_jwt(self.claims())
        h, c, s = good.split(".")
        bad_sig = h + "." + c + "." + rsakeys.b64url(bytes(len(rsakeys.b64url_decode(s))))
        self.assertEqual(self.grant(bad_sig), (400, {"error": "invalid_grant",
                                                     "error_description": "Invalid JWT Signature."}))
        tampered = h + "." + b64(self.claims(scope="x")) + "." + s
        self.assertEqual(self.grant(tampered)[1]["error_description"], "Invalid JWT Signature.")
        now = int(time.time())
        st, r = self.grant(self.openssl_jwt(self.claims(iat=now - 7200, exp=now - 3600)))
        self.assertEqual(st, 400)
        self.assertEqual(r["error"], "invalid_grant")
        self.assertIn("Token must be a short-lived token", r["error_description"])
        st, r = self.grant(self.openssl_jwt(self.claims(exp=now + 7200)))
        self.assertEqual((st, r["error"]), (400, "invalid_grant"))
        st, r = self.grant(self.openssl_jwt(self.claims(aud="https://example.com")))
        self.assertIn("audience", r["error_description"])
        st, r = self.grant(self.openssl_jwt(self.claims(scope=None)))
        self.assertEqual((st, r["error"]), (400, "invalid_scope"))
        st, r = self.grant(self.openssl_jwt(self.claims(iss="nobody@x.iam.gserviceaccount.com")))
        self.assertEqual(r["error_description"], "Invalid grant: account not found")
        other = self.fake.ctl("/service-accounts", {"project": "my-proj"})
        st, r = self.grant(self.openssl_jwt(self.claims(iss=other["client_email"])))
        self.assertEqual(r["error_description"], "Invalid JWT Signature.")
        st, r = self.fake.call("POST", "/token", "grant_type=password", token=None,
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual((st, r["error"]), (400, "unsupported_grant_type"))

    def test_self_signed_jwt_bearer(self):
        now = int(time.time())
        tok = self.openssl_jwt({"iss": self.sa["client_email"], "sub": self.sa["client_email"],
                                "scope": "https://www.googleapis.com/auth/cloud-platform", "iat": now,
                                "exp": now + 3600},
                               {"alg": "RS256", "typ": "JWT", "kid": self.sa["private_key_id"]})
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token=tok)
        self.assertEqual(st, 200)
        expired = self.openssl_jwt({"iss": self.sa["client_email"], "aud": "https://aiplatform.googleapis.com/",
                                    "iat": now - 7200, "exp": now - 3600})
        st, e = self.fake.call("GET", PARENT + "/customJobs", token=expired)
        self.assertEqual(st, 401)

    def test_expired_access_token(self):
        self.fake.ctl("/auth", {"token_lifetime_seconds": 1})
        st, r = self.grant(self.openssl_jwt(self.claims()))
        self.assertEqual(r["expires_in"], 1)
        self.fake.ctl("/tokens/expire", {"token": r["access_token"]})
        st, e = self.fake.call("GET", PARENT + "/customJobs", token=r["access_token"])
        self.assertEqual(st, 401)
        self.assertEqual(e["error"]["details"][0]["reason"], "ACCESS_TOKEN_EXPIRED")
        st, e = self.fake.call("GET", "/compute/v1/projects/p/zones/us-central1-a/reservations",
                               token=r["access_token"])
        self.assertEqual(st, 401)
        self.assertEqual(e["error"]["errors"][0]["reason"], "authError")

    def test_refresh_token_grant(self):
        u = self.fake.ctl("/authorized-users", {})
        self.assertEqual(u["type"], "authorized_user")
        form = {"refresh_token": u["refresh_token"], "client_id": u["client_id"],
                "client_secret": u["client_secret"], "grant_type": "refresh_token"}
        hdr = {"Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"}
        st, r = self.fake.call("POST", "/token", urllib.parse.urlencode(form), token=None, headers=hdr)
        self.assertEqual(st, 200, r)
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token=r["access_token"])
        self.assertEqual(st, 200)
        st, r = self.fake.call("POST", "/token", urllib.parse.urlencode(dict(form, refresh_token="x")),
                               token=None, headers=hdr)
        self.assertEqual((st, r["error"]), (400, "invalid_grant"))
        st, r = self.fake.call("POST", "/token", urllib.parse.urlencode(dict(form, client_secret="x")),
                               token=None, headers=hdr)
        self.assertEqual((st, r["error"]), (401, "invalid_client"))

    def test_sts_and_generate_access_token(self):
        ext = self.fake.ctl("/external-accounts", {"project": "my-proj",
                                                   "service_account": self.sa["client_email"],
                                                   "subject_token_file": os.path.join(self.tmp, "subject")})
        cred = ext["credential"]
        self.assertEqual(cred["type"], "external_account")
        self.assertEqual(cred["token_url"], self.fake.url + "/v1/token")
        with open(cred["credential_source"]["file"]) as f:
            subject = f.read()
        form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": cred["audience"],
                "scope": "https://www.googleapis.com/auth/cloud-platform",
                "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "subject_token": subject, "subject_token_type": cred["subject_token_type"]}
        hdr = {"Content-Type": "application/x-www-form-urlencoded"}
        st, r = self.fake.call("POST", "/v1/token", urllib.parse.urlencode(form), token=None, headers=hdr)
        self.assertEqual(st, 200, r)
        self.assertEqual(r["issued_token_type"], "urn:ietf:params:oauth:token-type:access_token")
        fed = r["access_token"]
        st, r = self.fake.call("POST", "/v1/token", urllib.parse.urlencode(dict(form, subject_token="bad")),
                               token=None, headers=hdr)
        self.assertEqual((st, r["error"]), (400, "invalid_grant"))
        path = cred["service_account_impersonation_url"][len(self.fake.url):]
        st, r = self.fake.call("POST", path, {"scope": ["https://www.googleapis.com/auth/cloud-platform"]},
                               token=fed)
        self.assertEqual(st, 200, r)
        self.assertRegex(r["expireTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token=r["accessToken"])
        self.assertEqual(st, 200)
        st, e = self.fake.call("POST", path, {"scope": ["x"]}, token=None)
        self.assertEqual(st, 401)
        st, e = self.fake.call("POST", "/v1/projects/-/serviceAccounts/nobody@x.iam.gserviceaccount.com"
                                       ":generateAccessToken", {"scope": ["x"]}, token=fed)
        self.assertEqual((st, e["error"]["status"]), (404, "NOT_FOUND"))

    def test_metadata_server(self):
        st, h, body = self.fake.raw("GET", "/computeMetadata/v1/instance/service-accounts/default/token")
        self.assertEqual(st, 403)
        self.assertEqual(h["metadata-flavor"], "Google")
        self.fake.ctl("/metadata", {"project": "meta-proj"})
        st, h, body = self.fake.raw("GET", "/computeMetadata/v1/instance/service-accounts/default/token?scopes="
                                    "https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform",
                                    headers={"Metadata-Flavor": "Google"})
        self.assertEqual(st, 200)
        self.assertEqual(h["metadata-flavor"], "Google")
        tok = json.loads(body)
        self.assertEqual(tok["token_type"], "Bearer")
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token=tok["access_token"])
        self.assertEqual(st, 200)
        st, h, body = self.fake.raw("GET", "/computeMetadata/v1/project/project-id",
                                    headers={"Metadata-Flavor": "Google"})
        self.assertEqual((st, body), (200, b"meta-proj"))
        st, h, body = self.fake.raw("GET", "/computeMetadata/v1/instance", headers={"Metadata-Flavor": "Google"})
        self.assertEqual(st, 200)


if __name__ == "__main__":
    unittest.main()
