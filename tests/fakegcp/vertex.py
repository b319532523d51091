"""Vertex AI v1 projects.locations.customJobs and their long-running operations.

Jobs move QUEUED -> PENDING -> RUNNING -> SUCCEEDED (or FAILED/CANCELLED) on the world's virtual
clock. Transitions are events in a heap, processed lazily (before every Vertex call and every
/_fake read) in time order, so capacity shared between jobs is handed out in the right order."""

import base64
import bisect
import hashlib
import heapq
import json
import random
import re

import common
import filters
import persistent
from common import ApiError

CJ = "google.cloud.aiplatform.v1.CustomJob"
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
            "JOB_STATE_PARTIALLY_SUCCEEDED"}
OUTCOMES = {"succeed", "stockout", "preempted", "user-error", "wait-timeout", "internal"}
RULE_OPTIONS = ("exit_code", "queued_seconds", "list_stale")
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
DEFAULT_MAX_WAIT = 86400  # Scheduling.maxWaitDuration default: 24 h

# accelerator -> (quota id stem, metric stem)
GPU_QUOTA = {
    "NVIDIA_H100_80GB": ("H100GPUs", "nvidia_h100_gpus"),
    "NVIDIA_H100_MEGA_80GB": ("H100MEGAGPUs", "nvidia_h100_mega_gpus"),
    "NVIDIA_H200_141GB": ("H200GPUs", "nvidia_h200_gpus"),
    "NVIDIA_TESLA_A100": ("A100GPUs", "nvidia_a100_gpus"),
    "NVIDIA_A100_80GB": ("A10080GBGPUs", "nvidia_a100_80gb_gpus"),
    "NVIDIA_L4": ("L4GPUs", "nvidia_l4_gpus"),
    "NVIDIA_TESLA_T4": ("T4GPUs", "nvidia_t4_gpus"),
    "NVIDIA_TESLA_V100": ("V100GPUs", "nvidia_v100_gpus"),
    "NVIDIA_TESLA_P100": ("P100GPUs", "nvidia_p100_gpus"),
    "NVIDIA_TESLA_P4": ("P4GPUs", "nvidia_p4_gpus"),
    "NVIDIA_TESLA_K80": ("K80GPUs", "nvidia_k80_gpus"),
    "NVIDIA_B200": ("B200GPUs", "nvidia_b200_gpus"),
    "NVIDIA_GB200": ("GB200GPUs", "nvidia_gb200_gpus"),
    "NVIDIA_RTX_PRO_6000": ("RTXPRO6000GPUs", "nvidia_rtx_pro_6000_gpus"),
    "TPU_V2": ("V2TPUs", "tpu_v2"),
    "TPU_V3": ("V3TPUs", "tpu_v3"),
    "TPU_V4_POD": ("V4PodTPUs", "tpu_v4_pod"),
    "TPU_V5_LITEPOD": ("V5ETPU", "tpu_v5e"),
}


def quota_for(accel, preemptible):
    """(quota id, metric) of the Vertex training quota an accelerator draws on."""
    stem, metric = GPU_QUOTA[accel]
    if preemptible:
        return ("CustomModelTrainingPreemptible%sPerProjectPerRegion" % stem,
                "aiplatform.googleapis.com/custom_model_training_preemptible_%s" % metric)
    return ("CustomModelTraining%sPerProjectPerRegion" % stem,
            "aiplatform.googleapis.com/custom_model_training_%s" % metric)


# Google's own texts (tests/unit/test_failure.c has each with its source). A Spot
# preemption is reported as a STOCKOUT after the job started (use-spot-vms); a
# flex-start wait that ran out has no published text: the job ends FAILED
# without startTime and without an error ("wait-timeout": None).
STOCKOUT_TEXT = ("Resources are insufficient in region: {region}. Try a different region or use a "
                 "different accelerator.")
ERRORS = {
    "stockout": (8, STOCKOUT_TEXT),
    "wait-timeout": None,
    "preempted": (8, STOCKOUT_TEXT),
    "user-error": (3, "The replica workerpool0-0 exited with a non-zero status of {status}. To find out more "
                      "about why your job exited please check the logs: https://console.cloud.google.com/"
                      "logs/viewer?project={project}&resource=ml_job%2Fjob_id%2F{id}&advancedFilter="
                      "resource.type%3D%22ml_job%22%0Aresource.labels.job_id%3D%22{id}%22"),
    "internal": (13, "Internal error occurred for the current attempt."),
    "cancelled": (1, "CustomJob was cancelled."),
}


def _labels_ok(labels):
    if len(labels) > 64:
        return "a CustomJob can have at most 64 labels"
    for k, v in labels.items():
        if not k or len(k) > 64 or not (k[0].isalpha() and not k[0].isupper()):
            return "label key %r must start with a lowercase letter and be 1-64 characters" % k
        for s in (k, v):
            if len(s) > 64:
                return "label %r is longer than 64 characters" % s
            for c in s:
                if not (c.isdigit() or c in "_-" or (c.isalpha() and not c.isupper())):
                    return ("label %r may contain only lowercase letters, digits, underscores and dashes"
                            % s)
    return None


def _prune(obj, tree):
    """Keep only the paths in `tree` ({json name: subtree or None for whole})."""
    out = {}
    for k, sub in tree.items():
        if k not in obj:
            continue
        v = obj[k]
        if sub is None:
            out[k] = v
        elif isinstance(v, list):
            out[k] = [_prune(x, sub) if isinstance(x, dict) else x for x in v]
        elif isinstance(v, dict):
            out[k] = _prune(v, sub)
        else:
            out[k] = v
    return out


class Vertex:
    NAME = "vertex"
    HOST = "aiplatform.googleapis.com"

    def __init__(self, world):
        self.world = world
        self.validator = common.Validator("grpc")
        self.pr = persistent.PersistentResources(self)
        self.reset()

    def reset(self):
        self.jobs = {}          # id(int) -> record
        self.by_parent = {}     # (projnum, location) -> sorted list of ids
        self.ops = {}           # op name -> record
        self.heap = []
        self.seq = 0
        self.next_id = 1000000000000000000 + random.randrange(10 ** 17)
        self.next_op = 1000000000000000000 + random.randrange(10 ** 17)
        self.rules = []         # outcome rules for future jobs: {labels, outcome, times}
        self.capacity = {}      # "region|ACCEL" -> gpus (absent = unlimited)
        self.used = {}          # "region|ACCEL" -> gpus held by running jobs
        self.quota_used = {}    # "region|quotaId" -> gpus held by live jobs
        self.waiting = []       # ids of jobs waiting for capacity (FLEX_START) or a resource's machines, FIFO
        self.pr.reset()

    def dump(self):
        return {"jobs": list(self.jobs.values()), "ops": self.ops, "next_id": self.next_id,
                "next_op": self.next_op, "rules": self.rules, "capacity": self.capacity,
                "used": self.used, "quota_used": self.quota_used, "waiting": self.waiting,
                "persistent": self.pr.dump()}

    def load(self, d):
        for j in d.get("jobs", []):
            self.jobs[j["id"]] = j
            self.by_parent.setdefault(tuple(j["parent"]), []).append(j["id"])
            if j.get("next") is not None:
                self._push(j, j["next"])
        for ids in self.by_parent.values():
            ids.sort()
        self.ops.update(d.get("ops", {}))
        for k in ("next_id", "next_op"):
            setattr(self, k, d.get(k, getattr(self, k)))
        self.rules = d.get("rules", [])
        self.capacity.update(d.get("capacity", {}))
        self.used.update(d.get("used", {}))
        self.quota_used.update(d.get("quota_used", {}))
        self.waiting = d.get("waiting", [])
        self.pr.load(d.get("persistent", {}))

    labels_problem = staticmethod(_labels_ok)

    # ------------------------------------------------------------ routing
    def route(self, req):
        from fakegcp import Route
        s = req.segments
        if len(s) < 6 or s[0] not in ("v1", "ui") or s[1] != "projects" or s[3] != "locations":
            return None
        coll = s[5].split(":")[0]
        if coll not in ("customJobs", "operations", persistent.COLLECTION):
            return None
        # google.longrunning.Operations has a `/ui/...` twin of every `/v1/...` binding, and the
        # first-listed (the one Google's Node client polls with) is the `/ui/` one. JobService
        # methods themselves have no `/ui/` binding.
        if s[0] == "ui" and not (coll == "operations" or (len(s) >= 8 and s[7].startswith("operations"))):
            return None
        m = req.method
        proj = self.world.project_number(s[2])
        key = (proj, s[4])
        rate = [(key, "vertex_requests_per_minute")]
        fn = rpc = None
        if coll == persistent.COLLECTION:
            if len(s) >= 8 and s[7].startswith("operations"):
                rpc, fn = self._op_route(s[8:] if len(s) > 8 else [], s[7], m)
            else:
                rpc, fn = self.pr.route(s, m)
        elif coll == "customJobs":
            if len(s) == 6 and s[5] == "customJobs":
                if m == "POST":
                    rpc, fn = "CreateCustomJob", self.create
                    rate = rate + [(key, "vertex_creates_per_minute")]
                elif m == "GET":
                    rpc, fn = "ListCustomJobs", self.list
            elif len(s) == 7:
                if s[6].endswith(":cancel") and m == "POST":
                    rpc, fn = "CancelCustomJob", self.cancel
                elif ":" not in s[6] and m == "GET":
                    rpc, fn = "GetCustomJob", self.get
                elif ":" not in s[6] and m == "DELETE":
                    rpc, fn = "DeleteCustomJob", self.delete
            elif len(s) >= 8 and s[7].startswith("operations"):
                rpc, fn = self._op_route(s[8:] if len(s) > 8 else [], s[7], m)
        else:
            rpc, fn = self._op_route(s[6:], s[5], m)
        if fn is None:
            return None

        def run(req, fn=fn):
            self.advance()
            status, body = fn(req)
            return status, body, {}
        return Route(rpc, "grpc", run, rate=rate, service=self)

    def _op_route(self, rest, coll, m):
        if coll == "operations" and not rest and m == "GET":
            return "ListOperations", self.list_ops
        if len(rest) == 1:
            op = rest[0]
            if op.endswith(":wait") and m == "POST":
                return "WaitOperation", self.get_op
            if op.endswith(":cancel") and m == "POST":
                return "CancelOperation", self.cancel_op
            if ":" not in op and m == "GET":
                return "GetOperation", self.get_op
            if ":" not in op and m == "DELETE":
                return "DeleteOperation", self.delete_op
        return None, None

    # ------------------------------------------------------------ helpers
    def _parent(self, req):
        s = req.segments
        return self.world.project_number(s[2]), s[4]

    def _job(self, req):
        num, loc = self._parent(req)
        raw = req.segments[6].split(":")[0]
        name = "projects/%s/locations/%s/customJobs/%s" % (num, loc, raw)
        j = self.jobs.get(int(raw)) if raw.isdigit() else None
        if j is None or tuple(j["parent"]) != (num, loc):
            raise common.err("NOT_FOUND", "CustomJob %s is not found." % name)
        return j

    def _out(self, req, job_json):
        return common.enums_to_int(job_json, CJ) if req.enum_int else job_json

    def _push(self, j, t):
        j["gen"] = j.get("gen", 0) + 1
        j["next"] = t
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, j["id"], j["gen"]))

    # ------------------------------------------------------------ methods
    def create(self, req):
        num, loc = self._parent(req)
        body = req.json()
        job = self.validator.parse(body, CJ, "custom_job")
        pools = job["jobSpec"].get("workerPoolSpecs", [])
        if not pools:
            raise common.required_missing(["custom_job.job_spec.worker_pool_specs"])
        missing = []
        for i, p in enumerate(pools):
            if not p:
                if i == 0:
                    missing.append("custom_job.job_spec.worker_pool_specs[0]")
                continue
            base = "custom_job.job_spec.worker_pool_specs[%d]" % i
            if not p.get("machineSpec", {}).get("machineType"):
                missing.append(base + ".machine_spec.machine_type")
            if "containerSpec" not in p and "pythonPackageSpec" not in p:
                missing.append(base + ".task")
        if missing:
            raise common.required_missing(missing)
        if len(job["displayName"]) > 128:
            raise common.bad_request("The display name must be at most 128 characters.",
                                     "custom_job.display_name")
        bad = _labels_ok(job.get("labels", {}))
        if bad:
            raise common.bad_request("Invalid labels: " + bad, "custom_job.labels")
        sched = job["jobSpec"].get("scheduling", {})
        strategy = sched.get("strategy", "STRATEGY_UNSPECIFIED")
        flex = strategy == "FLEX_START"
        preemptible = strategy in ("SPOT", "FLEX_START")
        need = {}
        reservation = None
        for i, p in enumerate(pools):
            if not p:
                continue
            ms = p.get("machineSpec", {})
            acc = ms.get("acceleratorType", "ACCELERATOR_TYPE_UNSPECIFIED")
            rc = int(p.get("replicaCount", "1" if i == 0 else "0"))
            if rc < 0:
                raise common.bad_request("replica_count must be >= 0",
                                         "custom_job.job_spec.worker_pool_specs[%d].replica_count" % i)
            if acc != "ACCELERATOR_TYPE_UNSPECIFIED" and ms.get("acceleratorCount", 0) > 0:
                need[acc] = need.get(acc, 0) + ms["acceleratorCount"] * rc
            ra = ms.get("reservationAffinity")
            if ra and ra.get("reservationAffinityType") == "SPECIFIC_RESERVATION":
                vals = ra.get("values", [])
                if ra.get("key") != "compute.googleapis.com/reservation-name" or len(vals) != 1 or not re.fullmatch(
                        r"projects/[^/]+/zones/[^/]+/reservations/[^/]+", vals[0]):
                    raise common.bad_request(
                        "For SPECIFIC_RESERVATION, key must be compute.googleapis.com/reservation-name and "
                        "values must hold one full reservation name "
                        "projects/{project}/zones/{zone}/reservations/{name}.",
                        "custom_job.job_spec.worker_pool_specs[%d].machine_spec.reservation_affinity" % i)
                reservation = {"name": vals[0], "machineType": ms.get("machineType"), "accel": acc,
                               "count": ms.get("acceleratorCount", 0), "replicas": rc}
        # A job on a persistent resource runs on the machines the resource holds: no quota, no capacity.
        pr_claim = None
        if job["jobSpec"].get("persistentResourceId"):
            pr_claim = self.pr.place(num, loc, job, pools)
            need = {}
        # quota, per accelerator type
        quotas = self.world.services["quotas"]
        claims = []
        for acc, n in need.items():
            if acc not in GPU_QUOTA:
                continue
            qid, metric = quota_for(acc, preemptible)
            limit = quotas.limit("aiplatform.googleapis.com", qid, {"region": loc})
            used = self.quota_used.get(loc + "|" + qid, 0)
            if limit is not None and limit >= 0 and used + n > limit:
                raise common.err(
                    "RESOURCE_EXHAUSTED",
                    "The following quota metrics exceed quota limits: %s" % metric,
                    details=[{"@type": common.TYPE_PREFIX + "google.rpc.QuotaFailure", "violations": [{
                        "subject": "projects/%s/locations/%s" % (num, loc),
                        "description": "Quota %s exceeded: %d requested, %d in use, limit %d in region %s."
                                       % (qid, n, used, limit, loc),
                        "apiService": "aiplatform.googleapis.com", "quotaMetric": metric, "quotaId": qid,
                        "quotaDimensions": {"region": loc}, "quotaValue": str(limit)}]},
                        {"@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo", "reason": "RESOURCE_EXHAUSTED",
                         "domain": "aiplatform.googleapis.com",
                         "metadata": {"quota_metric": metric, "quota_id": qid, "region": loc}}])
            claims.append([loc + "|" + qid, n])
        for k, n in claims:
            self.quota_used[k] = self.quota_used.get(k, 0) + n
        # server-filled defaults, as Vertex echoes them
        for i, p in enumerate(pools):
            if not p:
                continue
            p.setdefault("replicaCount", "1")
            ds = p.setdefault("diskSpec", {})
            ds.setdefault("bootDiskType", "pd-ssd")
            ds.setdefault("bootDiskSizeGb", 100)
        now = self.world.now()
        jid = self.next_id
        self.next_id += 1 + random.randrange(97)
        name = "projects/%s/locations/%s/customJobs/%d" % (num, loc, jid)
        ts = common.fmt_ts(now)
        out = {"name": name, "displayName": job["displayName"], "jobSpec": job["jobSpec"],
               "state": "JOB_STATE_QUEUED", "createTime": ts, "updateTime": ts}
        if job.get("labels"):
            out["labels"] = job["labels"]
        if job.get("encryptionSpec"):
            out["encryptionSpec"] = job["encryptionSpec"]
        if job["jobSpec"].get("enableWebAccess"):
            out["webAccessUris"] = {"workerpool0-0": "https://%d-dot-%s.notebooks.googleusercontent.com/" % (
                jid, loc)}
        max_wait = None
        if flex:
            mw = sched.get("maxWaitDuration")
            max_wait = common.parse_duration(mw) if mw else DEFAULT_MAX_WAIT
        timeout = common.parse_duration(sched["timeout"]) if sched.get("timeout") else 7 * 86400
        rec = {"id": jid, "parent": [num, loc], "project": self.world.project_id(req.segments[2]),
               "json": out, "outcome": self._rule_outcome(job.get("labels", {})), "need": need,
               "exit_code": self._rule_opts.get("exit_code"),
               "flex": flex, "spot": strategy == "SPOT", "max_wait": max_wait, "timeout": timeout,
               "claims": claims, "reservation": reservation, "running_claim": False, "res_claim": False,
               "pending_since": None, "next": None, "gen": 0, "pr": pr_claim, "pr_claim": False}
        # The rule's list_stale: the list keeps showing the job as created (QUEUED) while a GET
        # tells the truth, as an eventually consistent list may.
        if self._rule_opts.get("list_stale"):
            rec["list_json"] = json.loads(json.dumps(out))
        self.jobs[jid] = rec
        self.by_parent.setdefault((num, loc), []).append(jid)
        # On a persistent resource it starts without queueing for capacity (in seconds, says Google);
        # the rule's queued_seconds holds it QUEUED that long instead.
        queued = self._rule_opts.get("queued_seconds", self.world.timings["queued_seconds"])
        self._push(rec, now if pr_claim else now + queued)
        return 200, self._out(req, out)

    def _rule_outcome(self, labels):
        """The outcome of the newest rule whose labels the job carries (its options, exit_code
        for a user-error, queued_seconds, list_stale, in _rule_opts)."""
        self._rule_opts = {}
        for r in reversed(self.rules):
            if all(labels.get(k) == v for k, v in r["labels"].items()):
                self._rule_opts = {k: r[k] for k in RULE_OPTIONS if k in r}
                if "times" in r:
                    r["times"] -= 1
                    if r["times"] <= 0:
                        self.rules.remove(r)
                return r["outcome"]
        return "succeed"

    def get(self, req):
        return 200, self._out(req, self._job(req)["json"])

    def list(self, req):
        num, loc = self._parent(req)
        filt = req.q("filter", "")
        mask = req.q("readMask", "")
        ps = common.page_size(req, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        if self.world.max_page_size:
            ps = min(ps, self.world.max_page_size)
        try:
            pred = filters.compile_filter(filt, self._resolver)
        except filters.FilterError as e:
            raise common.bad_request(str(e), "filter")
        tree = None
        if mask:
            tree = {}
            for path in mask.split(","):
                path = path.strip()
                parts = common.resolve_path(CJ, path)
                if parts is None:
                    raise common.bad_request("Invalid field mask path \"%s\" for message %s." % (path, CJ),
                                             "read_mask")
                node = tree
                for i, p in enumerate(parts):
                    if i == len(parts) - 1:
                        node[p] = None
                    else:
                        if node.get(p, {}) is None:
                            break
                        node = node.setdefault(p, {})
        fhash = hashlib.sha256((filt + "\0" + mask).encode()).hexdigest()[:16]
        ids = self.by_parent.get((num, loc), [])
        end = len(ids)
        tok = req.q("pageToken", "")
        if tok:
            try:
                d = json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))
                last = int(d["after"])
                if d["q"] != fhash:
                    raise ValueError
            except (ValueError, KeyError, TypeError):
                raise common.bad_request("Invalid page token.", "page_token")
            end = bisect.bisect_left(ids, last)
        page = []
        i = end - 1
        while i >= 0 and len(page) < ps:
            j = self.jobs[ids[i]]
            if pred(j):
                page.append(j)
            i -= 1
        more = False
        while i >= 0:
            if pred(self.jobs[ids[i]]):
                more = True
                break
            i -= 1
        items = []
        # A mask of top-level fields only (vx's) needs no recursive prune: the
        # same result, built in one pass (a page of 1,000 jobs is most of a
        # list's time here).
        flat = tree is not None and all(v is None for v in tree.values())
        keys = list(tree) if flat else None
        for j in page:
            o = j.get("list_json") or j["json"]
            if flat:
                o = {k: o[k] for k in keys if k in o}
            elif tree is not None:
                o = _prune(o, tree)
            items.append(self._out(req, o))
        res = {}
        if items:
            res["customJobs"] = items
        if more:
            res["nextPageToken"] = base64.urlsafe_b64encode(json.dumps(
                {"after": page[-1]["id"], "q": fhash}).encode()).decode().rstrip("=")
        return 200, res

    def _resolver(self, parts, op, value, quoted):
        f = parts[0]
        if f == "labels" and len(parts) == 2:
            k = parts[1]
            if op == ":":
                if value == "*":
                    return lambda j: k in j["json"].get("labels", {})
                return lambda j: filters.str_compare(j["json"].get("labels", {}).get(k), ":", value)
            if op not in ("=", "!="):
                raise filters.FilterError("Invalid filter: operator %s is not supported for labels" % op)
            return lambda j: (k in j["json"].get("labels", {}) and
                              filters.str_compare(j["json"]["labels"][k], op, value)) if op == "=" else \
                not (k in j["json"].get("labels", {}) and j["json"]["labels"][k] == value)
        if len(parts) != 1:
            raise filters.FilterError("Invalid filter: unsupported field \"%s\"" % ".".join(parts))
        if f in ("display_name", "displayName"):
            return lambda j: filters.str_compare(j["json"]["displayName"], op, value)
        if f == "state":
            if op not in ("=", "!="):
                raise filters.FilterError("Invalid filter: operator %s is not supported for state" % op)
            vals = common.ENUMS["google.cloud.aiplatform.v1.JobState"]["values"]
            if value.isdigit():
                value = {v: k for k, v in vals.items()}.get(int(value), value)
            if value not in vals:
                raise filters.FilterError("Invalid filter: unknown state \"%s\"" % value)
            return (lambda j: j["json"]["state"] == value) if op == "=" else (lambda j: j["json"]["state"] != value)
        times = {"create_time": "createTime", "createTime": "createTime", "update_time": "updateTime",
                 "updateTime": "updateTime", "start_time": "startTime", "startTime": "startTime",
                 "end_time": "endTime", "endTime": "endTime"}
        if f in times:
            key = times[f]
            try:
                t = common.parse_ts(value)
            except ValueError:
                raise filters.FilterError("Invalid filter: \"%s\" is not an RFC 3339 timestamp" % value)
            if op == ":":
                raise filters.FilterError("Invalid filter: operator : is not supported for %s" % f)

            def cmp(j, key=key, t=t):
                v = j["json"].get(key)
                if v is None:
                    return op == "!="
                return filters.num_compare(common.parse_ts(v), op, t)
            return cmp
        raise filters.FilterError("Invalid filter: unsupported field \"%s\"" % f)

    def cancel(self, req):
        j = self._job(req)
        st = j["json"]["state"]
        if st in TERMINAL:
            raise common.err("FAILED_PRECONDITION", "Cannot cancel CustomJob %s: it is already in the terminal "
                             "state %s." % (j["json"]["name"], st))
        if st != "JOB_STATE_CANCELLING":
            now = self.world.now()
            self._set_state(j, "JOB_STATE_CANCELLING", now)
            if j["id"] in self.waiting:
                self.waiting.remove(j["id"])
            self._push(j, now + self.world.timings["cancelling_seconds"])
        return 200, {}

    def delete(self, req):
        j = self._job(req)
        st = j["json"]["state"]
        if st not in TERMINAL:
            raise common.err("FAILED_PRECONDITION", "The CustomJob %s is in state %s and cannot be deleted; "
                             "cancel it and wait for a terminal state first." % (j["json"]["name"], st))
        num, loc = self._parent(req)
        self._remove(j)
        opid = self.next_op
        self.next_op += 1 + random.randrange(97)
        ts = common.fmt_ts(self.world.now())
        name = "projects/%s/locations/%s/operations/%d" % (num, loc, opid)
        op = {"name": name, "metadata": {
            "@type": common.TYPE_PREFIX + "google.cloud.aiplatform.v1.DeleteOperationMetadata",
            "genericMetadata": {"createTime": ts, "updateTime": ts}}, "done": False}
        self.ops[name] = {"op": op, "polls": self.world.timings["operation_polls"], "parent": [num, loc],
                          "target": j["json"]["name"]}
        return 200, op

    def _remove(self, j):
        del self.jobs[j["id"]]
        ids = self.by_parent[tuple(j["parent"])]
        k = bisect.bisect_left(ids, j["id"])
        if k < len(ids) and ids[k] == j["id"]:
            del ids[k]

    def _op(self, req):
        s = req.segments
        num, loc = self._parent(req)
        opid = s[-1].split(":")[0]
        name = "projects/%s/locations/%s/operations/%s" % (num, loc, opid)
        if s[5] == persistent.COLLECTION:
            # A persistent resource's operations are named under it (the long form Google's client polls).
            name = "projects/%s/locations/%s/%s/%s/operations/%s" % (num, loc, s[5], s[6], opid)
        rec = self.ops.get(name)
        if rec is None:
            raise common.err("NOT_FOUND", "Operation %s is not found." % name)
        return rec

    def _finish_op(self, rec):
        op = rec["op"]
        if not op["done"]:
            op["done"] = True
            op["response"] = {"@type": common.TYPE_PREFIX + "google.protobuf.Empty"}
            op["metadata"]["genericMetadata"]["updateTime"] = common.fmt_ts(self.world.now())

    def get_op(self, req):
        rec = self._op(req)
        if rec.get("pr_wait"):
            # Done over the clock, when the resource reaches the state it waits for (:wait does not hurry it).
            self.pr.settle_op(rec)
        elif req.segments[-1].endswith(":wait") or rec["polls"] <= 0:
            self._finish_op(rec)
        else:
            rec["polls"] -= 1
        return 200, rec["op"]

    def cancel_op(self, req):
        self._op(req)
        return 200, {}

    def delete_op(self, req):
        rec = self._op(req)
        del self.ops[rec["op"]["name"]]
        return 200, {}

    def list_ops(self, req):
        num, loc = self._parent(req)
        ops = [r["op"] for r in self.ops.values() if tuple(r["parent"]) == (num, loc)]
        return 200, ({"operations": ops} if ops else {})

    # ------------------------------------------------------------ lifecycle
    def advance(self):
        self.pr.advance()
        now = self.world.now()
        h = self.heap
        while h and h[0][0] <= now:
            # a booking's window that closed before this event ends the runs on it first
            self.world.services["futures"].advance(until=h[0][0])
            if not h or h[0][0] > now:
                break
            t, _, jid, gen = heapq.heappop(h)
            j = self.jobs.get(jid)
            if j is None or j.get("gen") != gen:
                continue
            j["next"] = None
            self._event(j, t)

    def _set_state(self, j, state, t):
        o = j["json"]
        o["state"] = state
        ts = common.fmt_ts(t)
        o["updateTime"] = ts
        if state == "JOB_STATE_RUNNING" and "startTime" not in o:
            o["startTime"] = ts
        if state in TERMINAL:
            o["endTime"] = ts
        self.world.mark_dirty()

    def _fail(self, j, t, kind, state="JOB_STATE_FAILED"):
        if ERRORS[kind] is not None:
            code, msg = ERRORS[kind]
            msg = msg.format(region=j["parent"][1], project=j["project"], id=j["id"],
                             status=j.get("exit_code") or 1)
            j["json"]["error"] = {"code": code, "message": msg}
        self._terminal(j, t, state)

    def _terminal(self, j, t, state):
        self._set_state(j, state, t)
        for k, n in j.get("claims", []):
            self.quota_used[k] = max(0, self.quota_used.get(k, 0) - n)
        j["claims"] = []
        if j["id"] in self.waiting:
            self.waiting.remove(j["id"])
        freed = False
        if j.get("running_claim"):
            for acc, n in j["need"].items():
                k = j["parent"][1] + "|" + acc
                self.used[k] = max(0, self.used.get(k, 0) - n)
            j["running_claim"] = False
            freed = True
        if j.get("res_claim"):
            self.world.services["compute"].release_reservation(j["reservation"])
            j["res_claim"] = False
        if j.get("pr_claim"):
            self.pr.release(j["pr"])
            j["pr_claim"] = False
            freed = True
        if freed:
            self.retry_waiting(t)

    def _event(self, j, t):
        st = j["json"]["state"]
        tm = self.world.timings
        if st == "JOB_STATE_QUEUED" and j.get("pr"):
            j["pending_since"] = t
            self._try_start(j, t)
        elif st == "JOB_STATE_QUEUED":
            self._set_state(j, "JOB_STATE_PENDING", t)
            j["pending_since"] = t
            self._push(j, t + tm["pending_seconds"])
        elif st == "JOB_STATE_PENDING":
            self._try_start(j, t)
        elif st == "JOB_STATE_RUNNING":
            o = j["outcome"]
            if j.get("timed_out"):
                # Vertex cancels a job at its maximum running time (scheduling.timeout, 7 days
                # unset) and says no more than any cancel does (tensorflow/tfx#6223).
                self._fail(j, t, "cancelled", state="JOB_STATE_CANCELLED")
            elif o in ("preempted", "user-error", "internal"):
                self._fail(j, t, o)
            else:
                self._set_state(j, "JOB_STATE_SUCCEEDED", t)
                self._terminal(j, t, "JOB_STATE_SUCCEEDED")
        elif st == "JOB_STATE_CANCELLING":
            self._fail(j, t, "cancelled", state="JOB_STATE_CANCELLED")

    def _deadline(self, j):
        mw = j.get("max_wait")
        if j.get("flex"):
            return None if not mw else j["pending_since"] + mw
        return j["pending_since"] + DEFAULT_MAX_WAIT

    def _wait(self, j, t):
        """A FLEX_START job keeps waiting for capacity (or times out)."""
        dl = self._deadline(j)
        if dl is not None and t >= dl:
            self._fail(j, t, "wait-timeout")
            return
        if j["id"] not in self.waiting:
            self.waiting.append(j["id"])
        if dl is not None:
            self._push(j, dl)
        else:
            j["gen"] = j.get("gen", 0) + 1
            j["next"] = None

    def _try_start(self, j, t):
        o = j["outcome"]
        region = j["parent"][1]
        if o == "stockout":
            if j.get("flex"):
                return self._wait(j, t)
            return self._fail(j, t, "stockout")
        if o == "wait-timeout":
            return self._wait(j, t)
        if j.get("pr"):
            # Not stated what a full resource does to a job: it waits for machines here (FIFO), as the
            # issue reads it, until the default wait of 24 h runs out.
            if not self.pr.claim(j["pr"]):
                if j["json"]["state"] == "JOB_STATE_QUEUED":
                    self._set_state(j, "JOB_STATE_PENDING", t)
                return self._wait(j, t)
            j["pr_claim"] = True
        elif j.get("reservation"):
            msg = self.world.services["compute"].claim_reservation(j["reservation"], region)
            if msg:
                j["json"]["error"] = {"code": 9, "message": msg}
                return self._terminal(j, t, "JOB_STATE_FAILED")
            j["res_claim"] = True
        else:
            for acc, n in j["need"].items():
                cap = self.capacity.get(region + "|" + acc)
                if cap is not None and self.used.get(region + "|" + acc, 0) + n > cap:
                    if j.get("flex"):
                        return self._wait(j, t)
                    return self._fail(j, t, "stockout")
            for acc, n in j["need"].items():
                k = region + "|" + acc
                self.used[k] = self.used.get(k, 0) + n
            j["running_claim"] = True
        if j["id"] in self.waiting:
            self.waiting.remove(j["id"])
        self._set_state(j, "JOB_STATE_RUNNING", t)
        run = self.world.timings["running_seconds"]
        if o == "preempted":
            run = run / 2.0
        if j.get("timeout") is not None and j["timeout"] < run:
            run = j["timeout"]
            j["timed_out"] = True
        self._push(j, t + run)

    def end_runs_on_reservation(self, rkey, t):
        """Ends, at t, every job running on the reservation rkey ("project/zone/name") that a
        calendar-mode booking delivered and Compute deletes at its end time with the VMs on it
        (futures.py, _end_runs: the state and text are assumed, README.md)."""
        for j in list(self.jobs.values()):
            res = j.get("reservation")
            if not j.get("res_claim") or not res or res.get("_key") != rkey or j["json"]["state"] in TERMINAL:
                continue
            j["json"]["error"] = {"code": 8, "message": STOCKOUT_TEXT.format(region=j["parent"][1])}
            j["gen"] = j.get("gen", 0) + 1   # its pending event (the run's end) no longer happens
            j["next"] = None
            self._terminal(j, t, "JOB_STATE_FAILED")

    def retry_waiting(self, t):
        for jid in list(self.waiting):
            j = self.jobs.get(jid)
            if j is None or j["json"]["state"] != "JOB_STATE_PENDING":
                if jid in self.waiting:
                    self.waiting.remove(jid)
                continue
            if j["outcome"] in ("stockout", "wait-timeout"):
                continue
            self._try_start(j, t)

    # ------------------------------------------------------------ control
    def set_outcome(self, body):
        o = body.get("outcome")
        if o not in OUTCOMES:
            raise ValueError("outcome must be one of %s" % sorted(OUTCOMES))
        # The replica's exit status for a user-error, in Google's sentence ("... exited with a
        # non-zero status of 137."); 1 when not given.
        code = body.get("exit_code")
        if code is not None and (o != "user-error" or not isinstance(code, int) or not 1 <= code <= 255):
            raise ValueError("exit_code is an integer 1..255, for a user-error only")
        if "name" in body:
            self.advance()
            name = body["name"]
            jid = name.rsplit("/", 1)[-1]
            j = self.jobs.get(int(jid)) if jid.isdigit() else None
            if j is None:
                raise KeyError("no such job: %s" % name)
            j["outcome"] = o
            j["exit_code"] = code
            if j["json"]["state"] == "JOB_STATE_PENDING" and j["id"] in self.waiting:
                self._try_start(j, self.world.now())
            return {"name": j["json"]["name"], "outcome": o}
        rule = {"labels": body.get("labels", {}), "outcome": o}
        if code is not None:
            rule["exit_code"] = code
        # How long a job stays QUEUED before it goes on to PENDING (and starts 30 s later).
        held = body.get("queued_seconds")
        if held is not None:
            if not isinstance(held, (int, float)) or isinstance(held, bool) or held < 0:
                raise ValueError("queued_seconds is a number of virtual seconds >= 0")
            rule["queued_seconds"] = held
        if body.get("list_stale") is not None:
            if not isinstance(body["list_stale"], bool):
                raise ValueError("list_stale is true or false")
            rule["list_stale"] = body["list_stale"]
        if "times" in body:
            rule["times"] = int(body["times"])
        self.rules.append(rule)
        return {"rules": self.rules}

    def set_capacity(self, body):
        items = body.get("items") if isinstance(body.get("items"), list) else [body]
        for it in items:
            region = it["region"]
            acc = it["accelerator_type"]
            if acc not in common.ENUMS["google.cloud.aiplatform.v1.AcceleratorType"]["values"]:
                raise ValueError("unknown accelerator_type %s" % acc)
            k = region + "|" + acc
            if it.get("gpus") is None:
                self.capacity.pop(k, None)
            else:
                self.capacity[k] = int(it["gpus"])
        self.advance()
        self.retry_waiting(self.world.now())
        return {"capacity": self.capacity, "in_use": self.used}

    def all_jobs(self, internal=False):
        self.advance()
        out = []
        for jid in sorted(self.jobs):
            j = self.jobs[jid]
            if internal:
                out.append({"job": j["json"], "outcome": j["outcome"], "next_event": j.get("next"),
                            "need": j["need"]})
            else:
                out.append(j["json"])
        return out
