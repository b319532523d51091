"""Vertex AI v1 projects.locations.persistentResources, served by the Vertex service (vertex.py owns the
operations and the jobs that run on a resource).

A resource is PROVISIONING for `provisioning_seconds`, then RUNNING (or ERROR, when /_fake/persistent-resources
said its provisioning fails); an update holds it UPDATING for `updating_seconds`, a reboot REBOOTING for
`rebooting_seconds`, a delete STOPPING for `stopping_seconds` before it is gone. Each change is an operation
named projects/NUM/locations/L/persistentResources/ID/operations/OP that is done once the state it waits for is
reached, all on the world's virtual clock.

Where vertex-ai-persistent-resources.md says "not stated", the choice made here is named in a comment
starting "Not stated:"; vx must not rely on any of them."""

import base64
import copy
import json
import random
import re

import common

PR = "google.cloud.aiplatform.v1.PersistentResource"
COLLECTION = "persistentResources"
ID_RE = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
DEFAULT_PAGE_SIZE = 100  # Not stated: Vertex's customJobs default, as vertex.py serves it.
MAX_PAGE_SIZE = 1000
# Paths an updateMask may name. Not stated which Google accepts: these are the fields not annotated
# IMMUTABLE that a resource's owner changes in place (pools' replicaCount/autoscalingSpec, labels, the name
# shown); network, encryption and runtime are refused here as they change where the machines live.
MASK_PATHS = {"resource_pools": "resourcePools", "resourcePools": "resourcePools", "labels": "labels",
              "display_name": "displayName", "displayName": "displayName"}
OP_META = "google.cloud.aiplatform.v1.%sPersistentResourceOperationMetadata"


def _n(v, default=0):
    return int(v) if v is not None else default


def pool_size(p):
    """The most machines a pool can hold: its replicaCount, or its autoscaling maximum when larger."""
    return max(_n(p.get("replicaCount"), 1), _n(p.get("autoscalingSpec", {}).get("maxReplicaCount")))


class PersistentResources:
    def __init__(self, vertex):
        self.vx = vertex
        self.world = vertex.world
        self.reset()

    def reset(self):
        self.res = {}            # name -> record {"json", "parent", "next", "next_state", "used": {pool: n}}
        self.fail_next = []      # provisioning outcomes for creates to come: {"error": {code, message}}

    def dump(self):
        return {"res": self.res, "fail_next": self.fail_next}

    def load(self, d):
        self.res.update(d.get("res", {}))
        self.fail_next = d.get("fail_next", [])

    # ------------------------------------------------------------ routing
    def route(self, s, m):
        """(rpc, fn) for /v1/projects/P/locations/L/persistentResources[/ID[:reboot]], or (None, None)."""
        if len(s) == 6 and s[5] == COLLECTION:
            return {"POST": ("CreatePersistentResource", self.create),
                    "GET": ("ListPersistentResources", self.list)}.get(m, (None, None))
        if len(s) == 7:
            if s[6].endswith(":reboot") and m == "POST":
                return "RebootPersistentResource", self.reboot
            if ":" not in s[6]:
                return {"GET": ("GetPersistentResource", self.get),
                        "PATCH": ("UpdatePersistentResource", self.update),
                        "DELETE": ("DeletePersistentResource", self.delete)}.get(m, (None, None))
        return None, None

    # ------------------------------------------------------------ helpers
    def _name(self, req, rid=None):
        num, loc = self.vx._parent(req)
        return "projects/%s/locations/%s/%s/%s" % (num, loc, COLLECTION, rid or req.segments[6].split(":")[0])

    def _rec(self, req):
        name = self._name(req)
        rec = self.res.get(name)
        if rec is None:
            raise common.err("NOT_FOUND", "PersistentResource %s is not found." % name)
        return rec

    def _out(self, req, o):
        return common.enums_to_int(o, PR) if req.enum_int else o

    def _set_state(self, rec, state, t, after=None, then=None):
        o = rec["json"]
        o["state"] = state
        o["updateTime"] = common.fmt_ts(t)
        if state == "RUNNING" and "startTime" not in o:
            o["startTime"] = o["updateTime"]
        if state not in ("ERROR", "STOPPING"):
            o.pop("error", None)
        rec["next"] = None if after is None else t + after
        rec["next_state"] = then
        self.world.mark_dirty()

    def _operation(self, rec, verb, wait_for):
        """A new operation on rec, done once rec reaches a state in wait_for (or is gone: delete)."""
        vx = self.vx
        opid = vx.next_op
        vx.next_op += 1 + random.randrange(97)
        name = "%s/operations/%d" % (rec["json"]["name"], opid)
        ts = common.fmt_ts(self.world.now())
        meta = {"@type": common.TYPE_PREFIX + (OP_META % verb if verb != "Delete" else
                                               "google.cloud.aiplatform.v1.DeleteOperationMetadata"),
                "genericMetadata": {"createTime": ts, "updateTime": ts}}
        if verb != "Delete":
            meta["progressMessage"] = {"Create": "Provisioning", "Update": "Updating",
                                       "Reboot": "Rebooting"}[verb]
        op = {"name": name, "metadata": meta, "done": False}
        vx.ops[name] = {"op": op, "polls": 0, "parent": rec["parent"], "target": rec["json"]["name"],
                        "pr_wait": wait_for}
        return op

    def settle_op(self, rec):
        """Called by vertex.get_op for an operation of a persistent resource: done when its state is reached."""
        op = rec["op"]
        if op["done"]:
            return
        r = self.res.get(rec["target"])
        now = common.fmt_ts(self.world.now())
        if r is None:
            if rec["pr_wait"] != ["gone"]:
                return
            op["response"] = {"@type": common.TYPE_PREFIX + "google.protobuf.Empty"}
        elif r["json"]["state"] == "ERROR" and "ERROR" not in rec["pr_wait"]:
            e = r["json"].get("error") or {"code": 13, "message": "Internal error occurred."}
            op["error"] = {"code": e["code"], "message": e["message"]}
        elif r["json"]["state"] in rec["pr_wait"]:
            op["response"] = dict({"@type": common.TYPE_PREFIX + PR}, **copy.deepcopy(r["json"]))
        else:
            return
        op["done"] = True
        op["metadata"]["genericMetadata"]["updateTime"] = now

    # ------------------------------------------------------------ lifecycle
    def advance(self):
        now = self.world.now()
        for name, rec in list(self.res.items()):
            if rec.get("next") is None or rec["next"] > now:
                continue
            t, then = rec["next"], rec["next_state"]
            if then == "gone":
                del self.res[name]
                self.world.mark_dirty()
            elif then == "ERROR":
                self._set_state(rec, "ERROR", t)
                rec["json"]["error"] = rec.pop("fail_error")
            else:
                self._set_state(rec, then, t)
            if then in ("RUNNING", "gone"):
                self.vx.retry_waiting(t)

    # ------------------------------------------------------------ methods
    def create(self, req):
        num, loc = self.vx._parent(req)
        rid = req.q("persistentResourceId", "")
        if not rid:
            raise common.required_missing(["persistent_resource_id"])
        if not ID_RE.fullmatch(rid):
            raise common.bad_request("persistent_resource_id must match [a-z]([a-z0-9-]{0,61}[a-z0-9])?.",
                                     "persistent_resource_id")
        body = req.json()
        # Not stated: what the server does with a name in the create body; the path's id wins here.
        if isinstance(body, dict):
            body.pop("name", None)
        pr = self.vx.validator.parse(body, PR, "persistent_resource")
        self._check_pools(pr.get("resourcePools", []))
        bad = self.vx.labels_problem(pr.get("labels", {}))
        if bad:
            raise common.bad_request("Invalid labels: " + bad, "persistent_resource.labels")
        if len(pr.get("displayName", "")) > 128:
            raise common.bad_request("The display name must be at most 128 characters.",
                                     "persistent_resource.display_name")
        name = self._name(req, rid)
        if name in self.res:
            # Not stated: the code for a duplicate id; ALREADY_EXISTS by the usual convention.
            raise common.err("ALREADY_EXISTS", "PersistentResource %s already exists." % name)
        now = self.world.now()
        for i, p in enumerate(pr["resourcePools"]):
            p.setdefault("id", "pool-%d" % i)
            p.setdefault("replicaCount", "1")
            p["usedReplicaCount"] = "0"
            ds = p.setdefault("diskSpec", {})
            ds.setdefault("bootDiskType", "pd-ssd")
            ds.setdefault("bootDiskSizeGb", 100)
        ts = common.fmt_ts(now)
        out = dict(pr, name=name, state="PROVISIONING", createTime=ts, updateTime=ts)
        rec = {"json": out, "parent": [num, loc], "next": None, "next_state": None}
        self.res[name] = rec
        tm = self.world.timings
        if self.fail_next:
            rec["fail_error"] = self.fail_next.pop(0)["error"]
            self._set_state(rec, "PROVISIONING", now, tm["provisioning_seconds"], "ERROR")
        else:
            self._set_state(rec, "PROVISIONING", now, tm["provisioning_seconds"], "RUNNING")
        return 200, self._operation(rec, "Create", ["RUNNING"])

    def _check_pools(self, pools):
        if not pools:
            raise common.required_missing(["persistent_resource.resource_pools"])
        missing, ids = [], set()
        for i, p in enumerate(pools):
            base = "persistent_resource.resource_pools[%d]" % i
            # Not stated: whether machineType is required in a pool; it is here (a pool of no machine).
            if not p.get("machineSpec", {}).get("machineType"):
                missing.append(base + ".machine_spec.machine_type")
            if p.get("id") in ids:
                raise common.bad_request("Resource pool id %s is used twice." % p["id"], base + ".id")
            ids.add(p.get("id"))
            rc = _n(p.get("replicaCount"), 1)
            if rc < 0:
                raise common.bad_request("replica_count must be >= 0", base + ".replica_count")
            a = p.get("autoscalingSpec")
            if a is not None:
                lo, hi = _n(a.get("minReplicaCount")), _n(a.get("maxReplicaCount"))
                # The comments say violations "throw an error"; the code is not stated: INVALID_ARGUMENT.
                if lo <= 0 or lo > rc or hi < rc or lo >= hi:
                    raise common.bad_request(
                        "autoscaling_spec needs 0 < min_replica_count <= replica_count <= max_replica_count and "
                        "min_replica_count < max_replica_count.", base + ".autoscaling_spec")
        if missing:
            raise common.required_missing(missing)

    def get(self, req):
        return 200, self._out(req, self._rec(req)["json"])

    def list(self, req):
        num, loc = self.vx._parent(req)
        ps = common.page_size(req, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        if self.world.max_page_size:
            ps = min(ps, self.world.max_page_size)
        names = sorted(n for n, r in self.res.items() if tuple(r["parent"]) == (num, loc))
        start = 0
        tok = req.q("pageToken", "")
        if tok:
            try:
                after = json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))["after"]
                if not isinstance(after, str):
                    raise ValueError
            except (ValueError, KeyError, TypeError):
                raise common.bad_request("Invalid page token.", "page_token")
            start = next((i for i, n in enumerate(names) if n > after), len(names))
        page = names[start:start + ps]
        res = {}
        if page:
            res[COLLECTION] = [self._out(req, self.res[n]["json"]) for n in page]
        if start + ps < len(names):
            res["nextPageToken"] = base64.urlsafe_b64encode(
                json.dumps({"after": page[-1]}).encode()).decode().rstrip("=")
        return 200, res

    def update(self, req):
        rec = self._rec(req)
        mask = req.q("updateMask", "")
        if not mask:
            raise common.required_missing(["update_mask"])
        paths = [p.strip() for p in mask.split(",")]
        for p in paths:
            if p not in MASK_PATHS:
                raise common.bad_request("Update of field %s is not supported." % p, "update_mask")
        body = req.json()
        if isinstance(body, dict):
            body.pop("name", None)
        new = self.vx.validator.parse(body, PR, "persistent_resource", check_required=False)
        o = rec["json"]
        if o["state"] != "RUNNING":
            raise common.err("FAILED_PRECONDITION", "PersistentResource %s is in state %s; it can be updated "
                             "only when RUNNING." % (o["name"], o["state"]))
        fields = {MASK_PATHS[p] for p in paths}
        if "resourcePools" in fields:
            pools = self._new_pools(o, new.get("resourcePools", []))
        if "labels" in fields:
            bad = self.vx.labels_problem(new.get("labels", {}))
            if bad:
                raise common.bad_request("Invalid labels: " + bad, "persistent_resource.labels")
        for f in fields:
            if f == "resourcePools":
                o["resourcePools"] = pools
            elif f in new:
                o[f] = new[f]
            else:
                o.pop(f, None)
        self._set_state(rec, "UPDATING", self.world.now(), self.world.timings["updating_seconds"], "RUNNING")
        return 200, self._operation(rec, "Update", ["RUNNING"])

    def _new_pools(self, o, pools):
        """The pools after an update naming resource_pools: the list given replaces the old one (Not stated:
        replace or append; replace here), each pool an old one by id with the same machineSpec (IMMUTABLE)."""
        self._check_pools(pools)
        old = {p["id"]: p for p in o["resourcePools"]}
        out = []
        for i, p in enumerate(pools):
            base = "persistent_resource.resource_pools[%d]" % i
            was = old.get(p.get("id"))
            if was is None:
                raise common.bad_request("Resource pool %s does not exist; pools cannot be added by an update."
                                         % p.get("id"), base + ".id")
            if p["machineSpec"] != was["machineSpec"]:
                raise common.bad_request("machine_spec of resource pool %s is immutable." % p["id"],
                                         base + ".machine_spec")
            q = copy.deepcopy(was)
            q["replicaCount"] = p.get("replicaCount", "1")
            for k in ("autoscalingSpec", "diskSpec"):
                if k in p:
                    q[k] = p[k]
                elif k == "autoscalingSpec":
                    q.pop(k, None)
            if _n(q["replicaCount"]) < _n(was.get("usedReplicaCount")) and "autoscalingSpec" not in q:
                # Not stated: a shrink below the machines in use; refused here.
                raise common.err("FAILED_PRECONDITION", "Resource pool %s has %s replicas in use; replica_count "
                                 "cannot go below them." % (p["id"], was.get("usedReplicaCount")))
            out.append(q)
        return out

    def delete(self, req):
        rec = self._rec(req)
        o = rec["json"]
        if o["state"] == "STOPPING":
            raise common.err("FAILED_PRECONDITION", "PersistentResource %s is already being deleted." % o["name"])
        # Not stated: what happens to jobs still running on it; the fake refuses the delete.
        busy = [p["id"] for p in o["resourcePools"] if _n(p.get("usedReplicaCount"))]
        if busy:
            raise common.err("FAILED_PRECONDITION", "PersistentResource %s has jobs running on pools %s; it "
                             "cannot be deleted now." % (o["name"], ", ".join(busy)))
        self._set_state(rec, "STOPPING", self.world.now(), self.world.timings["stopping_seconds"], "gone")
        return 200, self._operation(rec, "Delete", ["gone"])

    def reboot(self, req):
        rec = self._rec(req)
        if rec["json"]["state"] not in ("RUNNING", "ERROR"):
            raise common.err("FAILED_PRECONDITION", "PersistentResource %s is in state %s and cannot be "
                             "rebooted." % (rec["json"]["name"], rec["json"]["state"]))
        self._set_state(rec, "REBOOTING", self.world.now(), self.world.timings["rebooting_seconds"], "RUNNING")
        return 200, self._operation(rec, "Reboot", ["RUNNING"])

    # ------------------------------------------------------------ jobs on a resource
    def place(self, num, loc, job, pools):
        """Checks a CustomJob naming jobSpec.persistentResourceId at create and returns its claim
        {"name": resource name, "pools": {pool id: replicas}}. Every refusal's text and code is not stated
        in the package, except the reservation affinity one (quoted by Google, see docs/persistent-resources.md)."""
        spec = job["jobSpec"]
        rid = spec["persistentResourceId"]
        name = "projects/%s/locations/%s/%s/%s" % (num, loc, COLLECTION, rid)
        rec = self.res.get(name)
        field = "custom_job.job_spec.persistent_resource_id"
        if rec is None:
            raise common.bad_request("PersistentResource %s does not exist in the job's project and location."
                                     % name, field)
        o = rec["json"]
        if o["state"] != "RUNNING":
            raise common.err("FAILED_PRECONDITION", "PersistentResource %s is in state %s; jobs can run on it "
                             "only when it is RUNNING." % (name, o["state"]))
        if spec.get("network", "") != o.get("network", "") or \
                job.get("encryptionSpec", {}).get("kmsKeyName", "") != o.get("encryptionSpec", {}).get(
                    "kmsKeyName", ""):
            raise common.bad_request("The job's network and encryption spec must match those of "
                                     "PersistentResource %s." % name, field)
        strategy = spec.get("scheduling", {}).get("strategy", "STRATEGY_UNSPECIFIED")
        if strategy in ("SPOT", "FLEX_START"):
            raise common.bad_request("Scheduling strategy %s is not supported for jobs on a persistent "
                                     "resource." % strategy, "custom_job.job_spec.scheduling.strategy")
        claim = {}
        for i, p in enumerate(pools):
            if not p:
                continue
            ms = p.get("machineSpec", {})
            if ms.get("reservationAffinity"):
                raise common.bad_request("Reservation affinity is not supported yet for persistent clusters.",
                                         "custom_job.job_spec.worker_pool_specs[%d].machine_spec."
                                         "reservation_affinity" % i)
            want = (ms.get("machineType"), ms.get("acceleratorType", "ACCELERATOR_TYPE_UNSPECIFIED"),
                    ms.get("acceleratorCount", 0))
            n = _n(p.get("replicaCount"), 1 if i == 0 else 0)
            # Not stated how worker pools match resource pools: here by equal machine type, accelerator type
            # and count, to the first such pool with room for every replica the job asks of it.
            fits = [q for q in o["resourcePools"] if (
                q["machineSpec"].get("machineType"), q["machineSpec"].get("acceleratorType",
                                                                          "ACCELERATOR_TYPE_UNSPECIFIED"),
                q["machineSpec"].get("acceleratorCount", 0)) == want and
                claim.get(q["id"], 0) + n <= pool_size(q)]
            if not fits:
                raise common.bad_request("No resource pool of PersistentResource %s has %d free machines of %s "
                                         "with %s x %s." % (name, n, want[0], want[2], want[1]),
                                         "custom_job.job_spec.worker_pool_specs[%d]" % i)
            claim[fits[0]["id"]] = claim.get(fits[0]["id"], 0) + n
        return {"name": name, "pools": claim}

    def claim(self, c):
        """Takes the replicas of claim c when every pool has them free (True), else False (the job waits)."""
        rec = self.res.get(c["name"])
        if rec is None or rec["json"]["state"] != "RUNNING":
            return False
        pools = {p["id"]: p for p in rec["json"]["resourcePools"]}
        for pid, n in c["pools"].items():
            p = pools.get(pid)
            if p is None or _n(p.get("usedReplicaCount")) + n > _n(p.get("replicaCount"), 1):
                return False
        for pid, n in c["pools"].items():
            pools[pid]["usedReplicaCount"] = str(_n(pools[pid].get("usedReplicaCount")) + n)
        self.world.mark_dirty()
        return True

    def release(self, c):
        rec = self.res.get(c["name"])
        if rec is None:
            return
        for p in rec["json"]["resourcePools"]:
            n = c["pools"].get(p["id"], 0)
            if n:
                p["usedReplicaCount"] = str(max(0, _n(p.get("usedReplicaCount")) - n))
        self.world.mark_dirty()

    # ------------------------------------------------------------ control
    def control(self, body):
        """POST /_fake/persistent-resources: {"fail_next_create": {"code", "message"}} makes the next create's
        provisioning end in ERROR; {"name": NAME, "state": "ERROR", "error": {...}} puts a resource in ERROR
        now (a machine lost: "state": "RUNNING" brings it back)."""
        self.advance()
        if "fail_next_create" in body:
            e = body["fail_next_create"]
            self.fail_next.append({"error": {"code": int(e.get("code", 13)),
                                             "message": str(e.get("message", "Internal error occurred."))}})
        if "name" in body:
            rec = self.res.get(body["name"])
            if rec is None:
                raise KeyError("no such persistent resource: %s" % body["name"])
            st = body.get("state", "ERROR")
            if st not in ("ERROR", "RUNNING"):
                raise ValueError("state must be ERROR or RUNNING")
            self._set_state(rec, st, self.world.now())
            if st == "ERROR":
                e = body.get("error", {})
                rec["json"]["error"] = {"code": int(e.get("code", 13)),
                                        "message": str(e.get("message", "Internal error occurred."))}
            else:
                self.vx.retry_waiting(self.world.now())
        return self.describe()

    def describe(self):
        self.advance()
        return {COLLECTION: [r["json"] for _, r in sorted(self.res.items())], "fail_next": self.fail_next}
