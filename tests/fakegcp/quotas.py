"""Cloud Quotas v1: quotaPreferences (create/get/list/patch) and quotaInfos (get/list).

Limits are world-wide per (service, quotaId, dimensions); the Vertex fake reads them when it admits
a job. A preference is decided after a configurable virtual delay: granted in full, in part, left
reconciling, or denied (POST /_fake/quota-grants)."""

import base64
import json
import re
import secrets

import common
import filters
import vertex

QP = "google.api.cloudquotas.v1.QuotaPreference"
QI = "google.api.cloudquotas.v1.QuotaInfo"
DEFAULT_GPU_LIMIT = 1000
DEFAULT_CPU_LIMIT = 10000
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
GPU_FAMILIES = ["NVIDIA_H100", "NVIDIA_H100_MEGA", "NVIDIA_H200", "NVIDIA_A100", "NVIDIA_A100_80GB",
                "NVIDIA_L4", "NVIDIA_T4", "NVIDIA_V100", "NVIDIA_B200"]
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


def _definitions():
    d = {}
    for acc in vertex.GPU_QUOTA:
        for pre in (False, True):
            qid, metric = vertex.quota_for(acc, pre)
            d[("aiplatform.googleapis.com", qid)] = {
                "metric": metric, "dimensions": ["region"], "default": DEFAULT_GPU_LIMIT,
                "display": "Custom model training %s%s per region" % ("preemptible " if pre else "", acc),
                "unit": "1/{project}/{region}"}
    d[("aiplatform.googleapis.com", "CustomModelTrainingCPUsPerProjectPerRegion")] = {
        "metric": "aiplatform.googleapis.com/custom_model_training_cpus", "dimensions": ["region"],
        "default": DEFAULT_CPU_LIMIT, "display": "Custom model training CPUs per region",
        "unit": "1/{project}/{region}"}
    d[("compute.googleapis.com", "CpusPerProjectPerRegion")] = {
        "metric": "compute.googleapis.com/cpus", "dimensions": ["region"], "default": DEFAULT_CPU_LIMIT,
        "display": "CPUs per project per region", "unit": "1/{project}/{region}"}
    for pre in (False, True):
        qid = ("PREEMPTIBLE-" if pre else "") + "GPUS-PER-GPU-FAMILY-per-project-region"
        d[("compute.googleapis.com", qid)] = {
            "metric": "compute.googleapis.com/%sgpus_per_gpu_family" % ("preemptible_" if pre else ""),
            "dimensions": ["region", "gpu_family"], "default": DEFAULT_GPU_LIMIT,
            "display": "%sGPUs per GPU family per project per region" % ("Preemptible " if pre else ""),
            "unit": "1/{project}/{region}/{gpu_family}"}
    return d


def _dkey(dims):
    return json.dumps(dims or {}, sort_keys=True)


def _page(items, req, key):
    ps = common.page_size(req, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    start = 0
    tok = req.q("pageToken", "")
    if tok:
        try:
            start = int(json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))["o"])
        except (ValueError, KeyError, TypeError):
            raise common.bad_request("Invalid page token.", "page_token")
    page = items[start:start + ps]
    res = {key: page} if page else {}
    if start + ps < len(items):
        res["nextPageToken"] = base64.urlsafe_b64encode(json.dumps({"o": start + ps}).encode()).decode().rstrip("=")
    return res


class Quotas:
    NAME = "quotas"
    HOST = "cloudquotas.googleapis.com"

    def __init__(self, world):
        self.world = world
        self.validator = common.Validator("grpc")
        self.defs = _definitions()
        self.reset()

    def reset(self):
        self.values = {}   # "service|qid" -> {dims json: value}
        self.prefs = {}    # name -> {"json", "decide_at", "decided", "contact"}
        self.grant = {"mode": "full", "fraction": 0.5, "delay_seconds": 0, "per_quota": {}}

    def dump(self):
        return {"values": self.values, "prefs": self.prefs, "grant": self.grant}

    def load(self, d):
        self.values.update(d.get("values", {}))
        self.prefs.update(d.get("prefs", {}))
        self.grant.update(d.get("grant", {}))

    # ------------------------------------------------------------ limits
    def limit(self, service, qid, dims):
        d = self.defs.get((service, qid))
        vals = self.values.get(service + "|" + qid, {})
        k = _dkey(dims)
        if k in vals:
            return vals[k]
        if d is None:
            return None
        return vals.get(_dkey({}), d["default"])

    def set_limit(self, service, qid, dims, value):
        if (service, qid) not in self.defs:
            self.defs[(service, qid)] = {"metric": "%s/%s" % (service, qid.lower()), "dimensions": sorted(dims),
                                         "default": DEFAULT_GPU_LIMIT, "display": qid, "unit": "1"}
        self.values.setdefault(service + "|" + qid, {})[_dkey(dims)] = int(value)
        self.world.mark_dirty()

    # ------------------------------------------------------------ routing
    def route(self, req):
        from fakegcp import Route
        s = req.segments
        if len(s) < 6 or s[0] != "v1" or s[1] != "projects" or s[3] != "locations":
            return None
        m = req.method
        fn = rpc = None
        if s[5] == "quotaPreferences":
            if len(s) == 6:
                rpc, fn = {"POST": ("CreateQuotaPreference", self.create),
                           "GET": ("ListQuotaPreferences", self.list)}.get(m, (None, None))
            elif len(s) == 7:
                rpc, fn = {"GET": ("GetQuotaPreference", self.get),
                           "PATCH": ("UpdateQuotaPreference", self.patch)}.get(m, (None, None))
        elif s[5] == "services" and len(s) >= 8 and s[7] == "quotaInfos" and m == "GET":
            if len(s) == 8:
                rpc, fn = "ListQuotaInfos", self.list_infos
            elif len(s) == 9:
                rpc, fn = "GetQuotaInfo", self.get_info
        if fn is None:
            return None

        def run(req, fn=fn):
            if req.segments[4] != "global":
                raise common.bad_request("The path that follows /locations must be /global.", "parent")
            self.advance()
            status, body = fn(req)
            return status, body, {}
        return Route(rpc, "grpc", run, service=self)

    # ------------------------------------------------------------ preferences
    def _name(self, req, pid):
        return "projects/%s/locations/global/quotaPreferences/%s" % (self.world.project_number(req.segments[2]), pid)

    def _out(self, req, obj, msg=QP):
        return common.enums_to_int(obj, msg) if req.enum_int else obj

    def _check_safety(self, req):
        vals = common.ENUMS.get("google.api.cloudquotas.v1.QuotaSafetyCheck", {}).get("values", {})
        out = []
        for v in req.qall("ignoreSafetyChecks"):
            if v in vals:
                out.append(v)
            elif v.isdigit() and int(v) in vals.values():
                out.append([k for k, n in vals.items() if n == int(v)][0])
            else:
                raise common.bad_request("Invalid value at 'ignore_safety_checks' (type.googleapis.com/google.api."
                                         "cloudquotas.v1.QuotaSafetyCheck), \"%s\"" % v, "ignore_safety_checks")
        return out

    def _validate_target(self, pref, root):
        svc, qid = pref.get("service"), pref.get("quotaId")
        d = self.defs.get((svc, qid))
        if d is None:
            raise common.bad_request("Quota %s is not found for service %s." % (qid, svc), root + ".quota_id")
        for k in pref.get("dimensions", {}):
            if k not in d["dimensions"]:
                raise common.bad_request("Dimension \"%s\" is not defined for quota %s; valid dimensions: %s."
                                         % (k, qid, ", ".join(d["dimensions"])), root + ".dimensions")
        pv = int(pref["quotaConfig"]["preferredValue"])
        if pv < -1:
            raise common.bad_request("preferred_value must be >= -1.", root + ".quota_config.preferred_value")
        return d

    def _usage(self, pref):
        if pref["service"] != "aiplatform.googleapis.com":
            return 0
        region = pref.get("dimensions", {}).get("region")
        vx = self.world.services["vertex"]
        if region:
            return vx.quota_used.get(region + "|" + pref["quotaId"], 0)
        return max([v for k, v in vx.quota_used.items() if k.endswith("|" + pref["quotaId"])] or [0])

    def _admit(self, pref, contact, safety, root):
        current = self.limit(pref["service"], pref["quotaId"], pref.get("dimensions", {}))
        pv = int(pref["quotaConfig"]["preferredValue"])
        increase = pv == -1 or (current is not None and pv > current)
        if increase and not contact:
            raise common.bad_request("contact_email is required when requesting a quota increase.",
                                     root + ".contact_email")
        usage = self._usage(pref)
        if pv != -1 and pv < usage and "QUOTA_DECREASE_BELOW_USAGE" not in safety:
            raise common.err("FAILED_PRECONDITION", "The requested value %d is below the current usage %d; set "
                             "ignore_safety_checks=QUOTA_DECREASE_BELOW_USAGE to proceed." % (pv, usage))
        if (current and current > 0 and pv != -1 and pv < current * 0.9
                and "QUOTA_DECREASE_PERCENTAGE_TOO_HIGH" not in safety):
            raise common.err("FAILED_PRECONDITION", "The requested decrease is more than 10%% of the current value "
                             "%d; set ignore_safety_checks=QUOTA_DECREASE_PERCENTAGE_TOO_HIGH to proceed."
                             % current)
        return increase

    def _schedule(self, rec, increase):
        cfg = dict(self.grant)
        cfg.update(self.grant.get("per_quota", {}).get(rec["json"]["quotaId"], {}))
        rec["mode"] = cfg.get("mode", "full") if increase else "full"
        rec["fraction"] = cfg.get("fraction", 0.5)
        rec["decide_at"] = self.world.now() + (cfg.get("delay_seconds", 0) if increase else 0)
        rec["decided"] = False
        qc = rec["json"]["quotaConfig"]
        qc.pop("grantedValue", None)
        qc.pop("stateDetail", None)
        if increase:
            qc["traceId"] = secrets.token_hex(16)
        else:
            qc.pop("traceId", None)
        rec["json"]["reconciling"] = True
        self._decide(rec)

    def _decide(self, rec):
        if rec["decided"] or self.world.now() < rec["decide_at"]:
            return
        p = rec["json"]
        qc = p["quotaConfig"]
        pv = int(qc["preferredValue"])
        current = self.limit(p["service"], p["quotaId"], p.get("dimensions", {}))
        mode = rec["mode"]
        if mode == "pending":
            return
        rec["decided"] = True
        p["reconciling"] = False
        if mode == "full":
            granted = pv
            qc["stateDetail"] = "The quota preference was approved."
        elif mode == "partial":
            granted = max(current or 0, int(pv * rec.get("fraction", 0.5))) if pv != -1 else current
            qc["stateDetail"] = ("The request was partially approved: %d of the requested %d was granted."
                                 % (granted, pv))
        else:  # denied
            granted = current if current is not None else 0
            qc["stateDetail"] = "The quota increase request was denied."
        qc["grantedValue"] = str(granted)
        self.set_limit(p["service"], p["quotaId"], p.get("dimensions", {}), granted)
        p["updateTime"] = common.fmt_ts(self.world.now())

    def advance(self):
        for rec in self.prefs.values():
            if not rec["decided"]:
                self._decide(rec)

    def create(self, req):
        pid = req.q("quotaPreferenceId")
        safety = self._check_safety(req)
        body = req.json()
        pref = self.validator.parse(body, QP, "quota_preference", skip_required={"name"})
        if pid is None or pid == "":
            pid = "%s-%s-%s" % (pref["service"].split(".")[0], pref["quotaId"].lower(), secrets.token_hex(4))
        if not ID_RE.match(pid):
            raise common.bad_request("quota_preference_id must be 1-63 letters, digits, '-' or '_'.",
                                     "quota_preference_id")
        name = self._name(req, pid)
        if name in self.prefs:
            raise common.err("ALREADY_EXISTS", "QuotaPreference %s already exists." % name)
        self._validate_target(pref, "quota_preference")
        for other in self.prefs.values():
            o = other["json"]
            if (o["name"].split("/")[1] == name.split("/")[1] and o["service"] == pref["service"]
                    and o["quotaId"] == pref["quotaId"] and o.get("dimensions", {}) == pref.get("dimensions", {})):
                raise common.err("ALREADY_EXISTS", "A QuotaPreference for %s %s with dimensions %s already "
                                 "exists: %s." % (pref["service"], pref["quotaId"],
                                                  json.dumps(pref.get("dimensions", {})), o["name"]))
        contact = pref.pop("contactEmail", None)
        increase = self._admit(pref, contact, safety, "quota_preference")
        rec = self._store(name, pref, contact)
        self._schedule(rec, increase)
        return 200, self._out(req, rec["json"])

    def _store(self, name, pref, contact, old=None):
        now = common.fmt_ts(self.world.now())
        j = {"name": name}
        if pref.get("dimensions"):
            j["dimensions"] = pref["dimensions"]
        qc = {"preferredValue": pref["quotaConfig"]["preferredValue"]}
        if pref["quotaConfig"].get("annotations"):
            qc["annotations"] = pref["quotaConfig"]["annotations"]
        j["quotaConfig"] = qc
        j["etag"] = secrets.token_urlsafe(12)
        j["createTime"] = old["json"]["createTime"] if old else now
        j["updateTime"] = now
        j["service"] = pref["service"]
        j["quotaId"] = pref["quotaId"]
        j["reconciling"] = False
        if pref.get("justification"):
            j["justification"] = pref["justification"]
        rec = {"json": j, "contact": contact, "decided": True, "decide_at": 0, "mode": "full"}
        self.prefs[name] = rec
        self.world.mark_dirty()
        return rec

    def _get(self, req):
        name = self._name(req, req.segments[6])
        rec = self.prefs.get(name)
        if rec is None:
            raise common.err("NOT_FOUND", "QuotaPreference %s not found." % name)
        return rec

    def get(self, req):
        return 200, self._out(req, self._get(req)["json"])

    def patch(self, req):
        name = self._name(req, req.segments[6])
        safety = self._check_safety(req)
        allow_missing = (req.q("allowMissing", "false") or "").lower() == "true"
        validate_only = (req.q("validateOnly", "false") or "").lower() == "true"
        mask = req.q("updateMask")
        body = req.json()
        if isinstance(body, dict) and "name" in body and body["name"] and body["name"].split("/")[-1] != name.split("/")[-1]:
            raise common.bad_request("The name in the body does not match the name in the URL.",
                                     "quota_preference.name")
        old = self.prefs.get(name)
        if old is None and not allow_missing:
            raise common.err("NOT_FOUND", "QuotaPreference %s not found." % name)
        if old is None:
            pref = self.validator.parse(body, QP, "quota_preference", skip_required={"name"})
            contact = pref.pop("contactEmail", None)
            self._validate_target(pref, "quota_preference")
            increase = self._admit(pref, contact, safety, "quota_preference")
            if validate_only:
                return 200, self._out(req, self._preview(name, pref))
            rec = self._store(name, pref, contact)
            self._schedule(rec, increase)
            return 200, self._out(req, rec["json"])
        pref = self.validator.parse(body, QP, "quota_preference", check_required=False)
        if pref.get("etag") and pref["etag"] != old["json"]["etag"]:
            raise common.err("ABORTED", "The etag \"%s\" does not match the current etag of %s; read it again "
                             "and retry." % (pref["etag"], name))
        cur = json.loads(json.dumps(old["json"]))
        merged = {"service": cur["service"], "quotaId": cur["quotaId"], "dimensions": cur.get("dimensions", {}),
                  "quotaConfig": {"preferredValue": cur["quotaConfig"]["preferredValue"],
                                  "annotations": cur["quotaConfig"].get("annotations", {})},
                  "justification": cur.get("justification", "")}
        contact = pref.get("contactEmail") or old.get("contact")
        if mask:
            for path in mask.split(","):
                path = path.strip()
                parts = common.resolve_path(QP, path)
                if parts is None:
                    raise common.bad_request("Invalid update_mask path \"%s\"." % path, "update_mask")
                src, dst = pref, merged
                for p in parts[:-1]:
                    src = src.get(p, {})
                    dst = dst.setdefault(p, {})
                if parts[-1] in src:
                    dst[parts[-1]] = src[parts[-1]]
                else:
                    dst.pop(parts[-1], None)
                if parts == ["contactEmail"]:
                    contact = pref.get("contactEmail")
        else:
            missing = [f for f in ("service", "quotaId") if not pref.get(f)]
            if not pref.get("quotaConfig", {}).get("preferredValue"):
                missing.append("quotaConfig")
            if missing:
                raise common.required_missing(["quota_preference." + {"quotaId": "quota_id", "quotaConfig":
                                                                      "quota_config"}.get(m, m) for m in missing])
            merged = {k: pref.get(k) for k in ("service", "quotaId", "dimensions", "quotaConfig", "justification")}
            merged["dimensions"] = merged["dimensions"] or {}
        for imm, label in (("service", "service"), ("quotaId", "quota_id"), ("dimensions", "dimensions")):
            if (merged.get(imm) or {} if imm == "dimensions" else merged.get(imm)) != \
                    (cur.get(imm) or {} if imm == "dimensions" else cur.get(imm)):
                raise common.bad_request("Field %s is immutable." % label, "quota_preference." + label)
        if not merged.get("quotaConfig", {}).get("preferredValue"):
            raise common.required_missing(["quota_preference.quota_config.preferred_value"])
        self._validate_target(merged, "quota_preference")
        increase = self._admit(merged, contact, safety, "quota_preference")
        if validate_only:
            return 200, self._out(req, self._preview(name, merged, old))
        rec = self._store(name, merged, contact, old)
        self._schedule(rec, increase)
        return 200, self._out(req, rec["json"])

    def _preview(self, name, pref, old=None):
        saved = self.prefs.get(name)
        rec = self._store(name, pref, None, old)
        out = json.loads(json.dumps(rec["json"]))
        if saved is None:
            del self.prefs[name]
        else:
            self.prefs[name] = saved
        if old:
            out["etag"] = old["json"]["etag"]
        return out

    def list(self, req):
        num = self.world.project_number(req.segments[2])
        if req.segments[2] == "-":
            raise common.bad_request("Listing across projects (projects/-) is not supported.", "parent")
        try:
            pred = filters.compile_filter(req.q("filter", ""), self._resolver)
        except filters.FilterError as e:
            raise common.bad_request(str(e), "filter")
        items = [r["json"] for r in self.prefs.values() if r["json"]["name"].split("/")[1] == num]
        items = [p for p in items if pred(p)]
        order = req.q("orderBy", "") or "create_time"
        keys = []
        for part in order.split(","):
            bits = part.split()
            if not bits:
                continue
            f = {"quota_id": "quotaId", "quotaId": "quotaId", "service": "service", "create_time": "createTime",
                 "createTime": "createTime", "update_time": "updateTime", "updateTime": "updateTime",
                 "name": "name"}.get(bits[0])
            if f is None:
                raise common.bad_request("Invalid order_by field \"%s\"." % bits[0], "order_by")
            keys.append((f, len(bits) > 1 and bits[1].lower() == "desc"))
        for f, desc in reversed(keys):
            items.sort(key=lambda p, f=f: p.get(f, ""), reverse=desc)
        res = _page([self._out(req, p) for p in items], req, "quotaPreferences")
        return 200, res

    def _resolver(self, parts, op, value, quoted):
        f = ".".join(parts)
        if f == "reconciling":
            want = value.lower() == "true"
            return lambda p: (bool(p.get("reconciling")) == want) == (op != "!=")
        if f in ("service", "quota_id", "quotaId", "name"):
            key = {"quota_id": "quotaId"}.get(f, f)
            return lambda p: filters.str_compare(p.get(key, ""), op, value)
        if f in ("create_time", "creation_time", "createTime", "update_time", "updateTime"):
            key = "updateTime" if f.startswith("update") else "createTime"
            try:
                t = common.parse_ts(value if re.search(r"(Z|[+-]\d\d:\d\d)$", value) else value + "Z")
            except ValueError:
                raise filters.FilterError("Invalid filter: bad timestamp \"%s\"" % value)
            return lambda p: filters.num_compare(common.parse_ts(p[key]), op, t)
        if f == "request_type":
            return lambda p: filters.str_compare(p.get("quotaConfig", {}).get("requestOrigin", "ORIGIN_UNSPECIFIED"),
                                                 op, value) if value != "CLOUD_CONSOLE" else op == "!="
        raise filters.FilterError("Invalid filter: unsupported field \"%s\"" % f)

    # ------------------------------------------------------------ infos
    def _info(self, req, service, qid):
        d = self.defs[(service, qid)]
        num = self.world.project_number(req.segments[2])
        vals = self.values.get(service + "|" + qid, {})
        infos = []
        explicit = set()
        for k, v in sorted(vals.items()):
            dims = json.loads(k)
            if not dims:
                continue
            locs = [dims["region"]] if "region" in dims else ["global"]
            explicit.update(locs if "region" in dims and len(dims) == 1 else [])
            infos.append({"dimensions": dims, "details": {"value": str(v)}, "applicableLocations": locs})
        infos.sort(key=lambda x: -len(x["dimensions"]))
        default = vals.get(_dkey({}), d["default"])
        rest = [r for r in self.world_regions() if r not in explicit] if "region" in d["dimensions"] else ["global"]
        infos.append({"details": {"value": str(default)}, "applicableLocations": rest})
        return {
            "name": "projects/%s/locations/global/services/%s/quotaInfos/%s" % (num, service, qid),
            "quotaId": qid, "metric": d["metric"], "service": service, "isPrecise": True,
            "containerType": "PROJECT", "dimensions": d["dimensions"],
            "metricDisplayName": d["display"], "quotaDisplayName": d["display"], "metricUnit": d["unit"],
            "quotaIncreaseEligibility": {"isEligible": True}, "dimensionsInfos": infos,
            "serviceRequestQuotaUri": "https://console.cloud.google.com/iam-admin/quotas?project=%s" % req.segments[2],
        }

    def world_regions(self):
        import world
        return world.REGIONS

    def get_info(self, req):
        svc, qid = req.segments[6], req.segments[8]
        if (svc, qid) not in self.defs:
            raise common.err("NOT_FOUND", "QuotaInfo projects/%s/locations/global/services/%s/quotaInfos/%s not "
                             "found." % (req.segments[2], svc, qid))
        return 200, self._out(req, self._info(req, svc, qid), QI)

    def list_infos(self, req):
        svc = req.segments[6]
        items = [self._out(req, self._info(req, s, q), QI) for (s, q) in sorted(self.defs) if s == svc]
        return 200, _page(items, req, "quotaInfos")
