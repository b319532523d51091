"""The /_fake/ control API: JSON in, JSON out, no auth, never counted, never faulted.
Documented in README.md."""

import json
import time

import common

FAULT_KEYS = {"latency_ms", "jitter_ms", "error_rate", "statuses", "reset_rate", "drop_after_processing_rate",
              "methods", "times", "seed", "slow_ms", "reason"}
FAULT_REASONS = ("SERVICE_DISABLED", "IAM_PERMISSION_DENIED")
TIMING_KEYS = {"queued_seconds", "pending_seconds", "running_seconds", "cancelling_seconds", "operation_polls",
               "quota_preference_seconds", "provisioning_seconds", "updating_seconds", "rebooting_seconds",
               "stopping_seconds"}


class ControlError(Exception):
    def __init__(self, http, msg):
        super().__init__(msg)
        self.http = http


def _body(req):
    if not req.body or not req.body.strip():
        return {}
    try:
        b = json.loads(req.body)
    except ValueError as e:
        raise ControlError(400, "body is not JSON: %s" % e)
    if not isinstance(b, dict):
        raise ControlError(400, "body must be a JSON object")
    return b


def handle(w, req):
    try:
        with w.lock:
            status, out = _dispatch(w, req)
            if req.method != "GET":
                w.mark_dirty()
        return status, out, {}
    except ControlError as e:
        return e.http, {"error": str(e)}, {}
    except (ValueError, KeyError, TypeError) as e:
        return 400, {"error": "%s: %s" % (type(e).__name__, e)}, {}


def _clock(w):
    t = w.now()
    return {"now": common.fmt_ts(t), "epoch_seconds": t, "speed": w.clock_speed}


def _dispatch(w, req):
    p = req.path[len("/_fake"):].rstrip("/")
    m = req.method
    vx = w.services["vertex"]
    oa = w.services["oauth"]
    qs = w.services["quotas"]
    if p == "/health":
        return 200, {"ok": True, "base_url": w.base_url}
    if p == "/reset" and m == "POST":
        w.reset()
        return 200, {"reset": True}
    if p == "/clock":
        if m == "POST":
            b = _body(req)
            unknown = set(b) - {"advance_seconds", "set_time", "speed"}
            if unknown:
                raise ControlError(400, "unknown keys %s" % sorted(unknown))
            set_time = common.parse_ts(b["set_time"]) if "set_time" in b else None
            w.set_clock(advance=b.get("advance_seconds"), speed=b.get("speed"), set_time=set_time)
        return 200, _clock(w)
    if p == "/timings":
        if m == "POST":
            b = _body(req)
            unknown = set(b) - TIMING_KEYS
            if unknown:
                raise ControlError(400, "unknown keys %s; known: %s" % (sorted(unknown), sorted(TIMING_KEYS)))
            for k, v in b.items():
                if not isinstance(v, (int, float)) or v < 0:
                    raise ControlError(400, "%s must be a number >= 0" % k)
                w.timings[k] = v
        return 200, dict(w.timings)
    if p == "/service-accounts" and m == "POST":
        b = _body(req)
        return 200, oa.mint_service_account(b.get("project") or "fake-project", b.get("name"))
    if p == "/authorized-users" and m == "POST":
        return 200, oa.mint_authorized_user()
    if p == "/external-accounts" and m == "POST":
        b = _body(req)
        return 200, oa.mint_external_account(b.get("project") or "fake-project", b.get("service_account"),
                                             b.get("subject_token_file"))
    if p == "/tokens" and m == "POST":
        b = _body(req)
        tok = b.get("token")
        if not isinstance(tok, str) or not tok:
            raise ControlError(400, "token (a non-empty string) is required")
        exp = b.get("expires_in")
        oa.tokens[tok] = {"exp": None if exp is None else time.time() + float(exp),
                          "principal": b.get("principal", "test-token"), "kind": "access"}
        return 200, {"token": tok, "expires_in": exp}
    if p == "/tokens/expire" and m == "POST":
        b = _body(req)
        n = 0
        for tok, rec in oa.tokens.items():
            if "token" not in b or b["token"] == tok:
                rec["exp"] = time.time() - 1
                n += 1
        return 200, {"expired": n}
    if p == "/auth":
        if m == "POST":
            b = _body(req)
            if "required" in b:
                oa.required = bool(b["required"])
            if "token_lifetime_seconds" in b:
                oa.lifetime = int(b["token_lifetime_seconds"])
        return 200, {"required": oa.required, "token_lifetime_seconds": oa.lifetime,
                     "service_accounts": sorted(oa.accounts)}
    if p == "/metadata":
        if m == "POST":
            b = _body(req)
            for k in ("project", "email", "zone"):
                if k in b:
                    oa.metadata[k] = b[k]
        return 200, dict(oa.metadata)
    if p == "/projects":
        if m == "POST":
            b = _body(req)
            num = str(b["number"])
            if not num.isdigit():
                raise ControlError(400, "number must be digits")
            w.projects[b["id"]] = num
        return 200, dict(w.projects)
    if p == "/faults":
        if m == "POST":
            b = _body(req)
            unknown = set(b) - FAULT_KEYS
            if unknown:
                raise ControlError(400, "unknown keys %s; known: %s" % (sorted(unknown), sorted(FAULT_KEYS)))
            for k in ("error_rate", "reset_rate", "drop_after_processing_rate"):
                if k in b and not (0 <= float(b[k]) <= 1):
                    raise ControlError(400, "%s must be within [0, 1]" % k)
            if "statuses" in b and (not isinstance(b["statuses"], list) or
                                    not all(isinstance(s, int) and 400 <= s <= 599 for s in b["statuses"])):
                raise ControlError(400, "statuses must be a list of HTTP status codes 400-599")
            if "slow_ms" in b and not (isinstance(b["slow_ms"], dict) and all(
                    isinstance(v, (int, float)) and 0 <= v <= 60000 for v in b["slow_ms"].values())):
                raise ControlError(400, "slow_ms must map RPC names to milliseconds (0-60000)")
            if "reason" in b and b["reason"] not in FAULT_REASONS:
                raise ControlError(400, "reason must be one of %s" % ", ".join(FAULT_REASONS))
            if "methods" in b and not isinstance(b["methods"], list):
                raise ControlError(400, "methods must be a list of RPC names")
            if "seed" in b:
                w.fault_rng.seed(b["seed"])
            w.faults = b
        return 200, dict(w.faults)
    if p == "/iam":
        if m == "POST":
            return 200, w.services["iam"].configure(_body(req))
        return 200, w.services["iam"].describe()
    if p == "/outcomes" and m == "POST":
        b = _body(req)
        try:
            return 200, vx.set_outcome(b)
        except KeyError as e:
            raise ControlError(404, str(e.args[0]))
    if p == "/persistent-resources":
        if m == "POST":
            try:
                return 200, vx.pr.control(_body(req))
            except KeyError as e:
                raise ControlError(404, str(e.args[0]))
        return 200, vx.pr.describe()
    if p == "/capacity":
        if m == "POST":
            return 200, vx.set_capacity(_body(req))
        return 200, {"capacity": vx.capacity, "in_use": vx.used}
    if p == "/quota":
        if m == "POST":
            b = _body(req)
            items = b.get("items") if isinstance(b.get("items"), list) else [b]
            for it in items:
                if "accelerator_type" in it:
                    import vertex
                    qid, _ = vertex.quota_for(it["accelerator_type"], bool(it.get("preemptible")))
                    dims = {"region": it["region"]} if it.get("region") else {}
                    qs.set_limit("aiplatform.googleapis.com", qid, dims, int(it["limit"]))
                else:
                    qs.set_limit(it["service"], it["quota_id"], it.get("dimensions", {}), int(it["value"]))
        return 200, {"limits": qs.values, "vertex_usage": vx.quota_used}
    if p == "/quota-grants":
        if m == "POST":
            b = _body(req)
            cfg = {k: b[k] for k in ("mode", "fraction", "delay_seconds") if k in b}
            if "mode" in cfg and cfg["mode"] not in ("full", "partial", "pending", "denied"):
                raise ControlError(400, "mode must be full, partial, pending or denied")
            if b.get("quota_id"):
                qs.grant.setdefault("per_quota", {})[b["quota_id"]] = cfg
            else:
                qs.grant.update(cfg)
        return 200, qs.grant
    if p == "/paging":
        if m == "POST":
            n = _body(req).get("max_page_size", 0)
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ControlError(400, "max_page_size must be a non-negative integer")
            w.max_page_size = n
        return 200, {"max_page_size": w.max_page_size}
    if p == "/rate-limits":
        if m == "POST":
            b = _body(req)
            unknown = set(b) - set(w.rate_limits)
            if unknown:
                raise ControlError(400, "unknown keys %s; known: %s" % (sorted(unknown), sorted(w.rate_limits)))
            if "clock" in b and b["clock"] not in ("real", "virtual"):
                raise ControlError(400, "clock must be real or virtual")
            w.rate_limits.update(b)
            w.rate_windows.clear()
        return 200, dict(w.rate_limits)
    if p == "/jobs" and m == "GET":
        internal = req.q("internal") in ("1", "true")
        return 200, {"customJobs": vx.all_jobs(internal)}
    if p == "/reservations" and m == "GET":
        return 200, {"reservations": list(w.services["compute"].res.values())}
    if p == "/future-reservations":
        fs = w.services["futures"]
        if m == "POST":
            return 200, fs.configure(_body(req))
        fs.advance()
        return 200, fs.describe()
    if p == "/quota-preferences" and m == "GET":
        qs.advance()
        return 200, {"quotaPreferences": [r["json"] for r in qs.prefs.values()]}
    if p == "/objects/delete-after":
        if m == "POST":
            return 200, w.services["storage"].arm_delete_after(_body(req))
        return 200, {"armed": w.services["storage"].delete_after}
    if p == "/objects" and m == "GET":
        return 200, {"objects": [o["meta"] for o in w.services["storage"].objects.values()]}
    if p == "/logs" and m == "POST":
        b = _body(req)
        w.services["logging"].add(b.get("job_id"), b.get("entries", []))
        return 200, {}
    if p == "/requests":
        if m == "GET":
            return 200, {"total": w.total, "by_rpc": dict(w.counts), "log": list(w.log)[-int(req.q("log", "200")):]}
    if p == "/requests/reset" and m == "POST":
        w.counts.clear()
        w.total = 0
        w.log.clear()
        return 200, {"total": 0, "by_rpc": {}}
    raise ControlError(404, "unknown control call %s %s" % (m, req.path))
