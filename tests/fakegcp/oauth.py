"""Google's auth endpoints, faked: OAuth 2.0 token endpoint (JWT-bearer and refresh-token grants), STS
token exchange, IAM credentials generateAccessToken, the GCE metadata server, and the bearer check
every API call goes through. Service-account keys are real RSA keys (rsakeys.py)."""

import json
import os
import re
import secrets
import tempfile
import threading
import time

import common
from common import ApiError
import rsakeys

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SUBJECT_TOKEN_TYPES = {"urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token",
                       "urn:ietf:params:oauth:token-type:saml2", ACCESS_TOKEN_TYPE}
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"

# ---------------------------------------------------------------- key pool

_pool = []
_preloaded = []
_pool_lock = threading.Lock()
_pool_cv = threading.Condition(_pool_lock)


def _pool_loop():
    while True:
        with _pool_cv:
            while len(_pool) >= 2:
                _pool_cv.wait()
        k = rsakeys.generate(2048)
        with _pool_cv:
            _pool.append(k)
            _pool_cv.notify_all()


def start_key_pool():
    threading.Thread(target=_pool_loop, daemon=True).start()


def preload_keys(path):
    """Keys from a PEM file (fakegcp.py --keys), given out first and in order."""
    with open(path) as f:
        text = f.read()
    blocks = re.findall(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", text, re.S)
    with _pool_cv:
        _preloaded.extend(rsakeys.parse_private_pem(b) for b in blocks)


def new_key():
    with _pool_cv:
        if _preloaded:
            return _preloaded.pop(0)
        if _pool:
            k = _pool.pop(0)
            _pool_cv.notify_all()
            return k
    return rsakeys.generate(2048)


def sign_jwt(key, header, claims):
    h = rsakeys.b64url(json.dumps(header, separators=(",", ":")).encode())
    c = rsakeys.b64url(json.dumps(claims, separators=(",", ":")).encode())
    s = rsakeys.b64url(rsakeys.sign(key, (h + "." + c).encode()))
    return h + "." + c + "." + s


def full_rpc(rpc):
    """Fully qualified RPC name for ErrorInfo metadata."""
    if rpc.endswith("Operation") or rpc == "ListOperations":
        return "google.longrunning.Operations." + rpc
    if "QuotaPreference" in rpc or "QuotaInfo" in rpc:
        return "google.api.cloudquotas.v1.CloudQuotas." + rpc
    if rpc.endswith("CustomJob") or rpc.endswith("CustomJobs"):
        return "google.cloud.aiplatform.v1.JobService." + rpc
    if rpc == "iamcredentials.generateAccessToken":
        return "google.iam.credentials.v1.IAMCredentials.GenerateAccessToken"
    return rpc


def _oauth_error(http, error, desc):
    return http, {"error": error, "error_description": desc}, {"Cache-Control": "no-store"}


class OAuth:
    NAME = "oauth"

    def __init__(self, world):
        self.world = world
        self.reset()

    def reset(self):
        self.accounts = {}      # email -> {project, client_id, keys: {kid: {n,e}}}
        self.users = {}         # client_id -> {secret, refresh_tokens: [..]}
        self.tokens = {}        # token -> {exp (real epoch or None), principal, kind}
        self.subjects = {}      # subject token -> {audience}
        self.providers = {}     # audience -> {project}
        self.required = True
        self.lifetime = 3599
        self.metadata = {"project": "fake-project", "email": None, "zone": "us-central1-a"}

    def dump(self):
        return {"accounts": self.accounts, "users": self.users, "tokens": self.tokens,
                "subjects": self.subjects, "providers": self.providers, "required": self.required,
                "lifetime": self.lifetime, "metadata": self.metadata}

    def load(self, d):
        for k in ("accounts", "users", "tokens", "subjects", "providers", "metadata"):
            getattr(self, k).update(d.get(k, {}))
        self.required = d.get("required", True)
        self.lifetime = d.get("lifetime", 3599)

    # ------------------------------------------------------------ control helpers
    def mint_service_account(self, project, name=None):
        key = new_key()
        name = name or "sa-" + secrets.token_hex(4)
        email = "%s@%s.iam.gserviceaccount.com" % (name, project)
        kid = secrets.token_hex(20)
        client_id = str(100000000000000000000 + secrets.randbelow(10 ** 20))
        with self.world.lock:
            acct = self.accounts.setdefault(email, {"project": project, "client_id": client_id, "keys": {}})
            acct["keys"][kid] = {"n": str(key["n"]), "e": key["e"]}
            self.world.mark_dirty()
        base = self.world.base_url
        return {
            "type": "service_account",
            "project_id": project,
            "private_key_id": kid,
            "private_key": rsakeys.private_pem(key),
            "client_email": email,
            "client_id": acct["client_id"],
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": base + "/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/" + email.replace("@", "%40"),
            "universe_domain": "googleapis.com",
        }

    def mint_authorized_user(self):
        cid = "%d-fake.apps.googleusercontent.com" % (100000 + secrets.randbelow(900000))
        secret = "GOCSPX-" + secrets.token_urlsafe(18)
        rt = "1//0" + secrets.token_urlsafe(40)
        with self.world.lock:
            self.users[cid] = {"secret": secret, "refresh_tokens": [rt]}
            self.world.mark_dirty()
        return {"type": "authorized_user", "client_id": cid, "client_secret": secret, "refresh_token": rt}

    def mint_external_account(self, project, service_account=None, subject_token_file=None):
        if not service_account:
            service_account = self.mint_service_account(project)["client_email"]
        num = self.world.project_number(project)
        audience = ("//iam.googleapis.com/projects/%s/locations/global/workloadIdentityPools/fake-pool/"
                    "providers/fake-provider" % num)
        subject = "eyJhbGciOiJSUzI1NiJ9.fake-subject." + secrets.token_urlsafe(24)
        if subject_token_file is None:
            fd, subject_token_file = tempfile.mkstemp(prefix="fakegcp-subject-", suffix=".jwt")
            os.close(fd)
        with open(subject_token_file, "w") as f:
            f.write(subject)
        with self.world.lock:
            self.providers[audience] = {"project": project}
            self.subjects[subject] = {"audience": audience}
            self.world.mark_dirty()
        base = self.world.base_url
        cred = {
            "type": "external_account",
            "audience": audience,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": base + "/v1/token",
            "service_account_impersonation_url": base + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % service_account,
            "credential_source": {"file": subject_token_file},
            "universe_domain": "googleapis.com",
        }
        return {"credential": cred, "subject_token": subject, "subject_token_file": subject_token_file,
                "service_account": service_account}

    def issue(self, principal, kind="access", lifetime=None):
        tok = "ya29.fake-" + secrets.token_urlsafe(32)
        lifetime = self.lifetime if lifetime is None else lifetime
        self.tokens[tok] = {"exp": time.time() + lifetime, "principal": principal, "kind": kind}
        self.world.mark_dirty()
        return tok, lifetime

    # ------------------------------------------------------------ routing
    def route(self, req):
        from fakegcp import Route
        p = req.path
        if p == "/token" or p == "/oauth2/v4/token":
            return Route("oauth2.token", "oauth", self.token_endpoint, auth=False, service=self)
        if p == "/v1/token":
            return Route("sts.token", "oauth", self.sts_endpoint, auth=False, service=self)
        s = req.segments
        if (len(s) == 4 and s[0] == "v1" and s[1] == "projects" and s[3] == "serviceAccounts") or (
                len(s) == 5 and s[:2] == ["v1", "projects"] and s[3] == "serviceAccounts"
                and s[4].endswith(":generateAccessToken")):
            r = Route("iamcredentials.generateAccessToken", "grpc", self.generate_access_token, service=self)
            r.host = "iamcredentials.googleapis.com"
            return r
        if p.startswith("/computeMetadata/"):
            return Route("metadata.get", "metadata", self.metadata_endpoint, auth=False, service=self)
        return None

    # ------------------------------------------------------------ bearer check
    def authenticate(self, req, route):
        hdr = req.header("Authorization") or ""
        host = getattr(route, "host", None) or getattr(route.service, "HOST", "googleapis.com")
        if not self.required:
            return "anonymous"
        if not hdr.lower().startswith("bearer ") or not hdr[7:].strip():
            raise self._unauth(route, host, missing=True)
        tok = hdr[7:].strip()
        with self.world.lock:
            rec = self.tokens.get(tok)
            if rec is not None:
                if rec["exp"] is not None and rec["exp"] <= time.time():
                    raise self._unauth(route, host, reason="ACCESS_TOKEN_EXPIRED")
                return rec["principal"]
            if tok.count(".") == 2:
                principal = self._self_signed(tok)
                if principal:
                    return principal
        raise self._unauth(route, host, reason="ACCESS_TOKEN_TYPE_UNSUPPORTED")

    def _self_signed(self, tok):
        """Path B: a JWT signed with a service-account key, used directly as the bearer."""
        try:
            h64, c64, s64 = tok.split(".")
            header = json.loads(rsakeys.b64url_decode(h64))
            claims = json.loads(rsakeys.b64url_decode(c64))
            sig = rsakeys.b64url_decode(s64)
        except (ValueError, TypeError):
            return None
        if not isinstance(header, dict) or not isinstance(claims, dict) or header.get("alg") != "RS256":
            return None
        acct = self.accounts.get(claims.get("iss"))
        if acct is None or not self._verify(acct, header.get("kid"), (h64 + "." + c64).encode(), sig):
            return None
        now = time.time()
        try:
            if float(claims["exp"]) <= now or float(claims["iat"]) > now + 300:
                return None
        except (KeyError, TypeError, ValueError):
            return None
        if not claims.get("scope") and not claims.get("aud"):
            return None
        return claims["iss"]

    def _verify(self, acct, kid, signed, sig):
        keys = acct["keys"]
        cands = [keys[kid]] if kid and kid in keys else list(keys.values())
        return any(rsakeys.verify(int(k["n"]), int(k["e"]), signed, sig) for k in cands)

    def _unauth(self, route, host, missing=False, reason=None):
        hdrs = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'
                + ("" if missing else ', error="invalid_token"')}
        if route.flavor in ("compute", "storage"):
            if missing:
                e = {"message": "Login Required.", "domain": "global", "reason": "required",
                     "location": "Authorization", "locationType": "header"}
                msg = "Login Required."
            else:
                e = {"message": "Invalid Credentials", "domain": "global", "reason": "authError",
                     "location": "Authorization", "locationType": "header"}
                msg = "Invalid Credentials"
            if route.flavor == "compute":
                msg = ("Request is missing required authentication credential. Expected OAuth 2 access token, "
                       "login cookie or other valid authentication credential. See "
                       "https://developers.google.com/identity/sign-in/web/devconsole-project." if missing else
                       "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
                       "cookie or other valid authentication credential. See "
                       "https://developers.google.com/identity/sign-in/web/devconsole-project.")
            return ApiError(401, msg, status="UNAUTHENTICATED", errors=[e], headers=hdrs)
        msg = ("Request is missing required authentication credential. Expected OAuth 2 access token, login "
               "cookie or other valid authentication credential. See "
               "https://developers.google.com/identity/sign-in/web/devconsole-project." if missing else
               "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie "
               "or other valid authentication credential. See "
               "https://developers.google.com/identity/sign-in/web/devconsole-project.")
        return ApiError(401, msg, status="UNAUTHENTICATED", headers=hdrs, details=[{
            "@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo",
            "reason": "CREDENTIALS_MISSING" if missing else reason,
            "domain": "googleapis.com",
            "metadata": {"service": host, "method": full_rpc(route.rpc)}}])

    # ------------------------------------------------------------ token endpoint
    def token_endpoint(self, req):
        if req.method != "POST":
            return 405, {"error": "invalid_request", "error_description": "Method not allowed"}, {}
        form = req.form()
        gt = form.get("grant_type")
        if gt == JWT_BEARER:
            return self._jwt_grant(req, form.get("assertion") or "")
        if gt == "refresh_token":
            return self._refresh_grant(form)
        if not gt:
            return _oauth_error(400, "unsupported_grant_type", "Invalid grant_type: ")
        return _oauth_error(400, "unsupported_grant_type", "Invalid grant_type: " + gt)

    def _jwt_grant(self, req, assertion):
        parts = assertion.split(".")
        if len(parts) != 3:
            return _oauth_error(400, "invalid_grant", "Invalid JWT: Malformed token.")
        try:
            header = json.loads(rsakeys.b64url_decode(parts[0]))
            claims = json.loads(rsakeys.b64url_decode(parts[1]))
            sig = rsakeys.b64url_decode(parts[2])
        except (ValueError, TypeError):
            return _oauth_error(400, "invalid_grant", "Invalid JWT: Malformed token.")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return _oauth_error(400, "invalid_grant", "Invalid JWT: Malformed token.")
        if header.get("alg") != "RS256":
            return _oauth_error(400, "invalid_grant", "Invalid JWT Signature.")
        acct = self.accounts.get(claims.get("iss"))
        if acct is None:
            return _oauth_error(400, "invalid_grant", "Invalid grant: account not found")
        if not self._verify(acct, header.get("kid"), (parts[0] + "." + parts[1]).encode(), sig):
            return _oauth_error(400, "invalid_grant", "Invalid JWT Signature.")
        auds = {GOOGLE_TOKEN_URI, req.base_url + "/token", "https://www.googleapis.com/oauth2/v4/token",
                "https://accounts.google.com/o/oauth2/token"}
        if claims.get("aud") not in auds:
            return _oauth_error(400, "invalid_grant",
                                "Invalid JWT: Failed audience check. The right audience is " + GOOGLE_TOKEN_URI)
        now = time.time()
        try:
            iat = float(claims["iat"])
            exp = float(claims["exp"])
        except (KeyError, TypeError, ValueError):
            return _oauth_error(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) "
                                "and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        if exp <= now or iat > now + 300 or exp - iat > 3600 or exp <= iat:
            return _oauth_error(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) "
                                "and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        scope = claims.get("scope")
        if not isinstance(scope, str) or not scope.strip():
            return _oauth_error(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        tok, life = self.issue(claims["iss"])
        return 200, {"access_token": tok, "expires_in": life, "token_type": "Bearer"}, {"Cache-Control": "no-store"}

    def _refresh_grant(self, form):
        cid = form.get("client_id")
        user = self.users.get(cid)
        if user is None:
            return _oauth_error(401, "invalid_client", "The OAuth client was not found.")
        if form.get("client_secret") != user["secret"]:
            return _oauth_error(401, "invalid_client", "Unauthorized")
        if form.get("refresh_token") not in user["refresh_tokens"]:
            return _oauth_error(400, "invalid_grant", "Bad Request")
        tok, life = self.issue("user:" + cid)
        return 200, {"access_token": tok, "expires_in": life, "token_type": "Bearer",
                     "scope": CLOUD_PLATFORM + " openid https://www.googleapis.com/auth/userinfo.email"}, \
            {"Cache-Control": "no-store"}

    # ------------------------------------------------------------ STS
    def sts_endpoint(self, req):
        if req.method != "POST":
            return 405, {"error": "invalid_request", "error_description": "Method not allowed"}, {}
        ctype = (req.header("Content-Type") or "").lower()
        if "json" in ctype:
            try:
                form = json.loads(req.body or b"{}")
                form = {k: v for k, v in form.items()}
                # the JSON form uses camelCase (grantType, subjectToken, ...)
                for camel, snake in (("grantType", "grant_type"), ("requestedTokenType", "requested_token_type"),
                                     ("subjectToken", "subject_token"), ("subjectTokenType", "subject_token_type")):
                    if camel in form:
                        form[snake] = form.pop(camel)
            except ValueError:
                return _oauth_error(400, "invalid_request", "Invalid JSON payload.")
        else:
            form = req.form()
        if form.get("grant_type") != TOKEN_EXCHANGE:
            return _oauth_error(400, "unsupported_grant_type",
                                "Invalid value for \"grant_type\"; expected " + TOKEN_EXCHANGE)
        if form.get("requested_token_type") != ACCESS_TOKEN_TYPE:
            return _oauth_error(400, "invalid_request",
                                "Invalid value for \"requested_token_type\"; expected " + ACCESS_TOKEN_TYPE)
        if form.get("subject_token_type") not in SUBJECT_TOKEN_TYPES:
            return _oauth_error(400, "invalid_request", "Invalid value for \"subject_token_type\".")
        aud = form.get("audience")
        if aud not in self.providers:
            return _oauth_error(400, "invalid_target", "The target service indicated by the \"audience\" "
                                "parameters is invalid. This might either be because the pool or provider is "
                                "disabled or deleted or because it doesn't exist.")
        sub = self.subjects.get(form.get("subject_token") or "")
        if sub is None or sub["audience"] != aud:
            return _oauth_error(400, "invalid_grant", "The given subject token is invalid or expired.")
        tok, life = self.issue("principal://" + aud[2:], kind="federated")
        return 200, {"access_token": tok, "issued_token_type": ACCESS_TOKEN_TYPE, "token_type": "Bearer",
                     "expires_in": life}, {"Cache-Control": "no-store"}

    # ------------------------------------------------------------ IAM credentials
    def generate_access_token(self, req):
        s = req.segments
        if req.method != "POST" or len(s) != 5:
            raise common.err("NOT_FOUND", "Method not found.")
        email = s[4][:-len(":generateAccessToken")]
        body = req.json()
        if not isinstance(body, dict):
            raise common.bad_request("Invalid JSON payload received.", "")
        for k in body:
            if k not in ("name", "delegates", "scope", "lifetime"):
                raise common.bad_request("Invalid JSON payload received. Unknown name \"%s\": Cannot find "
                                         "field." % k, "")
        scope = body.get("scope")
        if not isinstance(scope, list) or not scope:
            raise common.bad_request("Scope required.", "scope")
        lifetime = 3600
        if "lifetime" in body:
            try:
                lifetime = common.parse_duration(body["lifetime"])
            except (ValueError, TypeError):
                raise common.bad_request("Invalid value at 'lifetime' (type.googleapis.com/google.protobuf."
                                         "Duration), %s" % json.dumps(body["lifetime"]), "lifetime")
            if lifetime > 3600 or lifetime <= 0:
                raise common.bad_request("The lifetime must be between 1 second and 3600 seconds.", "lifetime")
        if email not in self.accounts:
            raise common.err("NOT_FOUND", "Requested entity was not found.")
        tok, life = self.issue(email, lifetime=int(lifetime))
        return 200, {"accessToken": tok, "expireTime": common.fmt_ts(int(time.time() + life))[:19] + "Z"}, {}

    # ------------------------------------------------------------ metadata server
    def metadata_endpoint(self, req):
        hdrs = {"Metadata-Flavor": "Google", "Server": "Metadata Server for VM"}
        if (req.header("Metadata-Flavor") or "").lower() != "google":
            return 403, "Missing required header \"Metadata-Flavor\": \"Google\"\n", \
                dict(hdrs, **{"Content-Type": "text/html; charset=UTF-8"})
        if req.header("X-Forwarded-For"):
            return 403, "Request had an X-Forwarded-For header and was rejected.\n", hdrs
        md = self.metadata
        project = md["project"]
        email = md.get("email") or "%s-compute@developer.gserviceaccount.com" % self.world.project_number(project)
        path = req.path[len("/computeMetadata/v1"):]
        text = dict(hdrs, **{"Content-Type": "application/text"})
        if path in ("", "/"):
            return 200, "instance/\nproject/\n", text
        if path in ("/instance", "/instance/"):
            return 200, "attributes/\nhostname\nid\nservice-accounts/\nzone\n", text
        if path == "/project/project-id":
            return 200, project, text
        if path == "/project/numeric-project-id":
            return 200, self.world.project_number(project), text
        if path == "/instance/zone":
            return 200, "projects/%s/zones/%s" % (self.world.project_number(project), md["zone"]), text
        if path in ("/instance/service-accounts", "/instance/service-accounts/"):
            return 200, "default/\n%s/\n" % email, text
        parts = path.split("/")
        if len(parts) == 5 and parts[1:3] == ["instance", "service-accounts"] and parts[3] in ("default", email):
            what = parts[4]
            if what == "email":
                return 200, email, text
            if what == "scopes":
                return 200, CLOUD_PLATFORM + "\n", text
            if what == "token":
                with self.world.lock:
                    tok, life = self.issue(email)
                return 200, {"access_token": tok, "expires_in": life, "token_type": "Bearer"}, \
                    dict(hdrs, **{"Content-Type": "application/json"})
        return 404, "Not Found\n", dict(hdrs, **{"Content-Type": "text/html; charset=UTF-8"})
