"""IAM and Service Usage as vx meets them: who may call what, and which APIs are enabled.

Scriptable through POST /_fake/iam {"denied": [PERMISSION...], "act_as_denied": [EMAIL...],
"disabled": [SERVICE...]} (each key replaces its list; GET shows them, and in "known" every
permission the fake checks). With nothing set every
permission is granted and every API enabled, as before this module.

* Enforcement: a call whose method needs a denied permission is refused with 403 in the shape its
  API uses (Vertex and Cloud Quotas: "Permission 'P' denied on resource '//...' (or it may not
  exist)." with an ErrorInfo IAM_PERMISSION_DENIED; Compute: "Required 'P' permission for '...'";
  Cloud Storage: "... does not have P access ..."; Service Usage: "Permission denied to get service
  [S]" and a help token, with an ErrorInfo AUTH_PERMISSION_DENIED); a call to a disabled API gets 403
  SERVICE_DISABLED with the console link Google's message carries. A create whose serviceAccount is
  in act_as_denied gets Vertex's 400 "You do not have permission to act as service_account: ...".
* testIamPermissions: Resource Manager POST /v3/projects/P:testIamPermissions (and /v1/), Cloud
  Storage GET /storage/v1/b/B/iam/testPermissions?permissions=..., IAM POST
  /iam/v1/projects/-/serviceAccounts/EMAIL:testIamPermissions: the asked permissions less the
  denied ones. Like Google's, the answer omits "permissions" when none is held.
* Service Usage GET /serviceusage/v1/projects/P/services/S: state ENABLED or DISABLED.
"""
import json

import common

# The permission each of the fake's routes needs (rpc names as the fake counts them).
PERMISSION_OF = {
    "ListCustomJobs": "aiplatform.customJobs.list",
    "GetCustomJob": "aiplatform.customJobs.get",
    "CreateCustomJob": "aiplatform.customJobs.create",
    "CancelCustomJob": "aiplatform.customJobs.cancel",
    "DeleteCustomJob": "aiplatform.customJobs.delete",
    # Named by Vertex's aiplatform.<collection>.<verb> pattern (the API package names no permission).
    "ListPersistentResources": "aiplatform.persistentResources.list",
    "GetPersistentResource": "aiplatform.persistentResources.get",
    "CreatePersistentResource": "aiplatform.persistentResources.create",
    "UpdatePersistentResource": "aiplatform.persistentResources.update",
    "DeletePersistentResource": "aiplatform.persistentResources.delete",
    "RebootPersistentResource": "aiplatform.persistentResources.reboot",
    "Reservations.List": "compute.reservations.list",
    "Reservations.AggregatedList": "compute.reservations.list",
    "Reservations.Get": "compute.reservations.get",
    "Reservations.Insert": "compute.reservations.create",
    "Reservations.Delete": "compute.reservations.delete",
    "Reservations.Resize": "compute.reservations.resize",
    "Reservations.Update": "compute.reservations.update",
    "ZoneOperations.Get": "compute.zoneOperations.get",
    "ZoneOperations.Wait": "compute.zoneOperations.get",
    "ZoneOperations.List": "compute.zoneOperations.list",
    "ListQuotaInfos": "cloudquotas.quotas.get",
    "GetQuotaInfo": "cloudquotas.quotas.get",
    "ListQuotaPreferences": "cloudquotas.quotas.get",
    "GetQuotaPreference": "cloudquotas.quotas.get",
    "CreateQuotaPreference": "cloudquotas.quotas.update",
    "UpdateQuotaPreference": "cloudquotas.quotas.update",
    "storage.objects.list": "storage.objects.list",
    "storage.objects.get": "storage.objects.get",
    "storage.objects.insert": "storage.objects.create",
    "storage.objects.delete": "storage.objects.delete",
    "storage.objects.compose": "storage.objects.create",
    "serviceusage.services.get": "serviceusage.services.get",
    "logging.entries.list": "logging.logEntries.list",
}

# The API each fake service stands for, and its title in Google's SERVICE_DISABLED message.
API_OF = {"vertex": ("aiplatform.googleapis.com", "Vertex AI API"),
          "compute": ("compute.googleapis.com", "Compute Engine API"),
          "quotas": ("cloudquotas.googleapis.com", "Cloud Quotas API"),
          "storage": ("storage.googleapis.com", "Cloud Storage JSON API")}


class Iam:
    NAME = "iam"

    def __init__(self, world):
        self.world = world
        self.reset()

    def reset(self):
        self.help_tokens = 0
        self.denied = set()
        self.act_as_denied = set()
        self.disabled = set()

    def dump(self):
        return {"denied": sorted(self.denied), "act_as_denied": sorted(self.act_as_denied),
                "disabled": sorted(self.disabled)}

    def describe(self):
        """GET /_fake/iam: the lists, and every permission the fake checks ("known")."""
        return dict(self.dump(), known=sorted(set(PERMISSION_OF.values())))

    def load(self, d):
        self.denied = set(d.get("denied", []))
        self.act_as_denied = set(d.get("act_as_denied", []))
        self.disabled = set(d.get("disabled", []))

    def configure(self, b):
        """POST /_fake/iam."""
        unknown = set(b) - {"denied", "act_as_denied", "disabled"}
        if unknown:
            raise ValueError("unknown keys %s; known: denied, act_as_denied, disabled" % sorted(unknown))
        for k in ("denied", "act_as_denied", "disabled"):
            if k in b:
                v = b[k]
                if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
                    raise ValueError("%s must be a list of non-empty strings" % k)
                setattr(self, k, set(v))
        return self.dump()

    # ------------------------------------------------------------ enforcement
    def enforce(self, route, req):
        """Raises the ApiError Google would send when route's API is disabled or its permission denied."""
        svc = route.service.NAME if route.service else None
        api = API_OF.get(svc)
        project = self._project(req, svc)
        if api and api[0] in self.disabled:
            raise self._disabled(api, project)
        perm = PERMISSION_OF.get(route.rpc)
        if perm and perm in self.denied:
            raise self._denied(svc, perm, req, project)
        if route.rpc == "CreateCustomJob" and self.act_as_denied:
            try:
                sa = (json.loads(req.body or b"{}").get("jobSpec") or {}).get("serviceAccount")
            except (ValueError, AttributeError):
                sa = None
            if sa in self.act_as_denied:
                raise common.err("INVALID_ARGUMENT", "You do not have permission to act as service_account: "
                                 "%s. (or it may not exist)." % sa)

    def _project(self, req, svc):
        s = req.segments
        if svc == "compute" and len(s) > 3:
            return s[3]
        if svc in ("vertex", "quotas") and len(s) > 2 and s[1] == "projects":
            return s[2]
        if svc == "iam" and len(s) > 3 and s[0] == "serviceusage":
            return s[3]
        return None

    def _disabled(self, api, project):
        num = self.world.project_number(project) if project else "0"
        msg = ("%s has not been used in project %s before or it is disabled. Enable it by visiting "
               "https://console.developers.google.com/apis/api/%s/overview?project=%s then retry. If you "
               "enabled this API recently, wait a few minutes for the action to propagate to our systems "
               "and retry." % (api[1], num, api[0], num))
        return common.err("PERMISSION_DENIED", msg, details=[
            {"@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED",
             "domain": "googleapis.com",
             "metadata": {"service": api[0], "consumer": "projects/%s" % num}}],
            reason="accessNotConfigured")

    def _denied(self, svc, perm, req, project):
        if svc == "compute":
            return common.ApiError(403, "Required '%s' permission for 'projects/%s'" % (perm, project),
                                   status="PERMISSION_DENIED", reason="forbidden", domain="global")
        if svc == "storage":
            return common.ApiError(403, "%s does not have %s access to the Google Cloud Storage bucket. "
                                   "Permission '%s' denied on resource (or it may not exist)."
                                   % (req.principal or "caller", perm, perm),
                                   status="PERMISSION_DENIED", reason="forbidden", domain="global")
        if svc == "iam" and req.segments[:1] == ["serviceusage"]:
            return self._service_usage_denied(req.segments[-1])
        if svc == "iam":
            resource = "//serviceusage.googleapis.com/projects/%s/services/%s" % (project, req.segments[-1])
        else:
            host = "aiplatform.googleapis.com" if svc == "vertex" else "cloudquotas.googleapis.com"
            loc = req.segments[4] if len(req.segments) > 4 else "global"
            resource = "//%s/projects/%s/locations/%s" % (host, project, loc)
        return common.err("PERMISSION_DENIED", "Permission '%s' denied on resource '%s' (or it may not exist)."
                          % (perm, resource), details=[
                              {"@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo",
                               "reason": "IAM_PERMISSION_DENIED", "domain": "iam.googleapis.com",
                               "metadata": {"permission": perm, "resource": resource[2:]}}])

    def _service_usage_denied(self, service):
        """Service Usage's own refusal, not the IAM-style one the other APIs send: 'Permission
        denied to get service [S]' and a help token on a second line, a PreconditionFailure
        (violation subject 110002) and an ErrorInfo with reason AUTH_PERMISSION_DENIED in the
        serviceusage.googleapis.com domain; no permission is named in the message."""
        self.help_tokens += 1
        token = "AfZfake%08d" % self.help_tokens
        return common.ApiError(403, "Permission denied to get service [%s]\nHelp Token: %s" % (service, token),
                               status="PERMISSION_DENIED", details=[
                                   {"@type": common.TYPE_PREFIX + "google.rpc.PreconditionFailure",
                                    "violations": [{"type": "googleapis.com", "subject": "110002"}]},
                                   {"@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo",
                                    "reason": "AUTH_PERMISSION_DENIED", "domain": "serviceusage.googleapis.com"}])

    # ------------------------------------------------------------ routes
    def route(self, req):
        from fakegcp import Route
        s = req.segments
        m = req.method
        fn = rpc = None
        if len(s) == 3 and s[0] in ("v1", "v3") and s[1] == "projects" and \
                s[2].endswith(":testIamPermissions") and m == "POST":
            rpc, fn = "projects.testIamPermissions", self.test_project
        elif len(s) == 6 and s[:3] == ["storage", "v1", "b"] and s[4:] == ["iam", "testPermissions"] and m == "GET":
            rpc, fn = "storage.buckets.testIamPermissions", self.test_bucket
        elif len(s) == 6 and s[:4] == ["iam", "v1", "projects", "-"] and s[4] == "serviceAccounts" and \
                s[5].endswith(":testIamPermissions") and m == "POST":
            rpc, fn = "iam.serviceAccounts.testIamPermissions", self.test_service_account
        elif len(s) == 6 and s[:3] == ["serviceusage", "v1", "projects"] and s[4] == "services" and m == "GET":
            rpc, fn = "serviceusage.services.get", self.get_service
        if fn is None:
            return None

        def run(req, fn=fn):
            status, body = fn(req)
            return status, body, {}
        return Route(rpc, "grpc" if rpc != "storage.buckets.testIamPermissions" else "storage", run, service=self)

    def _asked(self, perms):
        if not isinstance(perms, list) or not all(isinstance(p, str) for p in perms):
            raise common.bad_request("Invalid JSON payload: permissions must be a list of strings.", "permissions")
        return perms

    def _answer(self, perms, denied):
        held = [p for p in perms if p not in denied]
        return {"permissions": held} if held else {}

    def test_project(self, req):
        b = req.json() or {}
        return 200, self._answer(self._asked(b.get("permissions", [])), self.denied)

    def test_bucket(self, req):
        out = self._answer(self._asked(req.qall("permissions")), self.denied)
        out["kind"] = "storage#testIamPermissionsResponse"
        return 200, out

    def test_service_account(self, req):
        email = req.segments[5][:-len(":testIamPermissions")]
        denied = set(self.denied)
        if email in self.act_as_denied:
            denied.add("iam.serviceAccounts.actAs")
        b = req.json() or {}
        return 200, self._answer(self._asked(b.get("permissions", [])), denied)

    def get_service(self, req):
        project, service = req.segments[3], req.segments[5]
        num = self.world.project_number(project)
        state = "DISABLED" if service in self.disabled else "ENABLED"
        return 200, {"name": "projects/%s/services/%s" % (num, service), "parent": "projects/%s" % num,
                     "state": state}
