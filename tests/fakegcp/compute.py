"""Compute Engine v1 reservations and zoneOperations.

Mutations take effect at once and return a zonal Operation in status RUNNING; zoneOperations.get
reports DONE after `operation_polls` further GETs (default 0: the first GET), wait reports DONE at
once. requestId makes insert/delete/resize/update idempotent: a repeat returns the original
operation (remembered for the life of the world)."""

import base64
import json
import random
import re
import secrets
import uuid

import common
from common import ApiError

RES = "google.cloud.compute.v1.Reservation"
RESIZE = "google.cloud.compute.v1.ReservationsResizeRequest"
OP = "google.cloud.compute.v1.Operation"
LINK = "https://www.googleapis.com/compute/v1/"
NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
ZONES = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-east1-b", "us-east1-c",
         "us-east1-d", "us-east4-a", "us-east4-b", "us-east4-c", "us-east5-a", "us-west1-a", "us-west1-b",
         "us-west4-a", "europe-west1-b", "europe-west4-a", "europe-west4-b", "europe-west4-c",
         "asia-southeast1-a", "asia-southeast1-b", "asia-northeast1-a"]


def not_found(what):
    return ApiError(404, "The resource '%s' was not found" % what, status="NOT_FOUND", reason="notFound")


def invalid(msg, reason="invalid"):
    return ApiError(400, msg, status="INVALID_ARGUMENT", reason=reason)


class Compute:
    NAME = "compute"
    HOST = "compute.googleapis.com"

    def __init__(self, world):
        self.world = world
        self.validator = common.Validator("compute")
        self.reset()

    def reset(self):
        self.res = {}        # "project/zone/name" -> reservation JSON
        self.ops = {}        # "project/zone/opname" -> {"op", "polls"}
        self.op_ids = {}     # op id -> key
        self.request_ids = {}  # requestId -> op key

    def dump(self):
        return {"res": self.res, "ops": self.ops, "op_ids": self.op_ids, "request_ids": self.request_ids}

    def load(self, d):
        for k in ("res", "ops", "op_ids", "request_ids"):
            getattr(self, k).update(d.get(k, {}))

    # ------------------------------------------------------------ routing
    def route(self, req):
        from fakegcp import Route
        s = req.segments
        if len(s) < 5 or s[0] != "compute" or s[1] != "v1" or s[2] != "projects":
            return None
        m = req.method
        rpc = fn = None
        if len(s) == 6 and s[4] == "aggregated" and s[5] == "reservations" and m == "GET":
            rpc, fn = "Reservations.AggregatedList", self.aggregated
        elif len(s) >= 7 and s[4] == "zones" and s[6] == "reservations":
            if len(s) == 7:
                rpc, fn = {"POST": ("Reservations.Insert", self.insert),
                           "GET": ("Reservations.List", self.list)}.get(m, (None, None))
            elif len(s) == 8:
                rpc, fn = {"GET": ("Reservations.Get", self.get), "DELETE": ("Reservations.Delete", self.delete),
                           "PATCH": ("Reservations.Update", self.update)}.get(m, (None, None))
            elif len(s) == 9 and s[8] == "resize" and m == "POST":
                rpc, fn = "Reservations.Resize", self.resize
        elif len(s) >= 7 and s[4] == "zones" and s[6] == "operations":
            if len(s) == 7 and m == "GET":
                rpc, fn = "ZoneOperations.List", self.list_ops
            elif len(s) == 8:
                rpc, fn = {"GET": ("ZoneOperations.Get", self.get_op),
                           "DELETE": ("ZoneOperations.Delete", self.delete_op)}.get(m, (None, None))
            elif len(s) == 9 and s[8] == "wait" and m == "POST":
                rpc, fn = "ZoneOperations.Wait", self.wait_op
        if fn is None:
            return None

        def run(req, fn=fn):
            status, body = fn(req)
            return status, body, {}
        return Route(rpc, "compute", run, rate=[((s[3],), "compute_requests_per_minute")], service=self)

    # ------------------------------------------------------------ helpers
    def _zone(self, req):
        z = req.segments[5]
        if z not in ZONES and not re.fullmatch(r"[a-z]+-[a-z]+\d+-[a-z]", z):
            raise invalid("Invalid value for field 'zone': '%s'. Unknown zone." % z)
        return z

    def _key(self, req, name=None):
        return "%s/%s/%s" % (req.segments[3], req.segments[5], name or req.segments[7])

    def _target(self, project, zone, name):
        return "projects/%s/zones/%s/reservations/%s" % (project, zone, name)

    def _request_id(self, req):
        rid = req.q("requestId")
        if rid is None:
            return None, None
        try:
            u = uuid.UUID(rid)
        except ValueError:
            raise invalid("Invalid value for field 'requestId': '%s'. The request ID must be a valid UUID." % rid)
        if u.int == 0:
            raise invalid("Invalid value for field 'requestId': '%s'. The request ID must be a valid UUID with "
                          "the exception that zero UUID is not supported." % rid)
        key = self.request_ids.get(rid)
        if key is not None and key in self.ops:
            return rid, self.ops[key]["op"]
        return rid, None

    def _new_op(self, req, op_type, target_name, target_id, rid, error=None, collection="reservations"):
        project, zone = req.segments[3], req.segments[5]
        now = self.world.now()
        name = "operation-%d-%s-%s-%s" % (int(now * 1000), secrets.token_hex(6)[:13], secrets.token_hex(4),
                                          secrets.token_hex(4))
        oid = str(random.randrange(10 ** 18, 10 ** 19))
        ts = common.fmt_ts_compute(now)
        op = {"kind": "compute#operation", "id": oid, "name": name, "zone": LINK + "projects/%s/zones/%s" % (
            project, zone), "operationType": op_type,
            "targetLink": LINK + "projects/%s/zones/%s/%s/%s" % (project, zone, collection, target_name),
            "targetId": target_id,
            "status": "RUNNING", "user": req.principal or "anonymous", "progress": 0, "insertTime": ts,
            "startTime": ts, "selfLink": LINK + "projects/%s/zones/%s/operations/%s" % (project, zone, name)}
        if rid:
            op["clientOperationId"] = rid
        key = "%s/%s/%s" % (project, zone, name)
        self.ops[key] = {"op": op, "polls": self.world.timings["operation_polls"], "error": error}
        self.op_ids[oid] = key
        if rid:
            self.request_ids[rid] = key
        self.world.mark_dirty()
        return op

    def _done(self, rec):
        op = rec["op"]
        if op["status"] != "DONE":
            op["status"] = "DONE"
            op["progress"] = 100
            op["endTime"] = common.fmt_ts_compute(self.world.now())
            if rec.get("error"):
                http, reason, msg = rec["error"]
                op["error"] = {"errors": [{"code": reason, "message": msg}]}
                op["httpErrorStatusCode"] = http
                op["httpErrorMessage"] = common.HTTP_REASON.get(http, "").upper()
            tl = op["targetLink"][len(LINK):].split("/")
            key = "%s/%s/%s" % (tl[1], tl[3], tl[5])
            r = self.res.get(key) if tl[4] == "reservations" else None
            if r is not None and r.get("status") in ("CREATING", "UPDATING"):
                r["status"] = "READY"

    def _reservation(self, req):
        key = self._key(req)
        r = self.res.get(key)
        if r is None:
            raise not_found(self._target(req.segments[3], req.segments[5], req.segments[7]))
        return key, r

    # ------------------------------------------------------------ reservations
    def insert(self, req):
        zone = self._zone(req)
        rid, prev = self._request_id(req)
        if prev is not None:
            return 200, prev
        body = self.validator.parse(req.json(), RES, "reservation_resource", check_required=False)
        name = body.get("name")
        if not name:
            raise invalid("Invalid value for field 'resource.name': ''. Must be a match of regex "
                          "'[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?'")
        if not NAME_RE.match(name):
            raise invalid("Invalid value for field 'resource.name': '%s'. Must be a match of regex "
                          "'[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?'" % name)
        sr = body.get("specificReservation")
        if not sr and not body.get("aggregateReservation"):
            raise invalid("Invalid value for field 'resource.specificReservation': ''. A reservation must "
                          "specify specificReservation or aggregateReservation.")
        if sr:
            cnt = int(sr.get("count", "0"))
            if cnt < 1 or cnt > 1000:
                raise invalid("Invalid value for field 'resource.specificReservation.count': '%d'. The count "
                              "must be between 1 and 1000." % cnt)
            if not sr.get("instanceProperties") and not sr.get("sourceInstanceTemplate"):
                raise invalid("Invalid value for field 'resource.specificReservation.instanceProperties': ''. "
                              "instanceProperties or sourceInstanceTemplate is required.")
            if sr.get("instanceProperties") and not sr["instanceProperties"].get("machineType"):
                raise invalid("Invalid value for field "
                              "'resource.specificReservation.instanceProperties.machineType': ''. "
                              "Machine type is required.")
        project = req.segments[3]
        key = self._key(req, name)
        if key in self.res:
            raise ApiError(409, "The resource '%s' already exists" % self._target(project, zone, name),
                           status="ALREADY_EXISTS", reason="alreadyExists")
        rid_num = str(random.randrange(10 ** 18, 10 ** 19))
        r = dict(body)
        r.pop("params", None)
        r.pop("deleteAfterDuration", None)
        r.pop("enableEmergentMaintenance", None)
        r.update({"kind": "compute#reservation", "id": rid_num,
                  "creationTimestamp": common.fmt_ts_compute(self.world.now()),
                  "selfLink": LINK + self._target(project, zone, name), "zone": LINK + "projects/%s/zones/%s" % (
                      project, zone), "status": "CREATING"})
        r.setdefault("specificReservationRequired", False)
        r.setdefault("shareSettings", {"shareType": "LOCAL"})
        if r["shareSettings"].get("projectMap") == {}:
            del r["shareSettings"]["projectMap"]
        if r.get("resourcePolicies") == {}:
            del r["resourcePolicies"]
        if sr:
            r["specificReservation"] = dict(sr)
            r["specificReservation"]["inUseCount"] = "0"
            r["specificReservation"]["assuredCount"] = sr.get("count", "0")
            ip = r["specificReservation"].get("instanceProperties")
            if ip:
                for ga in ip.get("guestAccelerators", []):
                    ga["acceleratorType"] = ga.get("acceleratorType", "").rsplit("/", 1)[-1]
        self.res[key] = r
        return 200, self._new_op(req, "insert", name, rid_num, rid)

    def get(self, req):
        return 200, self._reservation(req)[1]

    def _list_common(self, req):
        try:
            mr = int(req.q("maxResults", "500"))
        except ValueError:
            raise invalid("Invalid value for field 'maxResults': '%s'." % req.q("maxResults"))
        if mr < 0 or mr > 500:
            raise invalid("Invalid value for field 'maxResults': '%d'. Must be less than or equal to 500." % mr)
        mr = mr or 500
        start = 0
        tok = req.q("pageToken", "")
        if tok:
            try:
                start = int(json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))["o"])
            except (ValueError, KeyError, TypeError):
                raise invalid("Invalid value for field 'pageToken': '%s'." % tok)
        pred = self._filter(req.q("filter", ""))
        order = req.q("orderBy", "")
        if order not in ("", "name", "creationTimestamp desc"):
            raise invalid("Invalid value for field 'orderBy': '%s'. Sorting is supported on name or "
                          "creationTimestamp desc only." % order)
        return mr, start, pred, order

    def _sorted(self, items, order):
        if order == "creationTimestamp desc":
            return sorted(items, key=lambda r: r["creationTimestamp"], reverse=True)
        return sorted(items, key=lambda r: r["name"])

    def _tok(self, o):
        return base64.urlsafe_b64encode(json.dumps({"o": o}).encode()).decode().rstrip("=")

    def list(self, req):
        zone = self._zone(req)
        project = req.segments[3]
        mr, start, pred, order = self._list_common(req)
        items = self._sorted([r for k, r in self.res.items() if k.startswith("%s/%s/" % (project, zone))
                              and pred(r)], order)
        page = items[start:start + mr]
        out = {"kind": "compute#reservationList", "id": "projects/%s/zones/%s/reservations" % (project, zone),
               "items": page, "selfLink": LINK + "projects/%s/zones/%s/reservations" % (project, zone)}
        if start + mr < len(items):
            out["nextPageToken"] = self._tok(start + mr)
        return 200, out

    def aggregated(self, req):
        project = req.segments[3]
        mr, start, pred, order = self._list_common(req)
        allr = self._sorted([r for k, r in self.res.items() if k.startswith(project + "/") and pred(r)], order)
        page = allr[start:start + mr]
        items = {}
        zones = sorted(set(ZONES) | {r["zone"].rsplit("/", 1)[-1] for r in allr})
        for z in zones:
            rs = [r for r in page if r["zone"].endswith("/" + z)]
            if rs:
                items["zones/" + z] = {"reservations": rs}
            else:
                items["zones/" + z] = {"warning": {
                    "code": "NO_RESULTS_ON_PAGE",
                    "message": "There are no results for scope 'zones/%s' on this page." % z,
                    "data": [{"key": "scope", "value": "zones/" + z}]}}
        out = {"kind": "compute#reservationAggregatedList", "id": "projects/%s/aggregated/reservations" % project,
               "items": items, "selfLink": LINK + "projects/%s/aggregated/reservations" % project}
        if start + mr < len(allr):
            out["nextPageToken"] = self._tok(start + mr)
        return 200, out

    def _filter(self, text):
        text = (text or "").strip()
        if not text:
            return lambda r: True
        # legacy form: name eq RE2 / name ne RE2 (whole-field match)
        m = re.fullmatch(r"\(?\s*([A-Za-z.]+)\s+(eq|ne)\s+(.+?)\s*\)?", text)
        if m:
            field, op, rx = m.group(1), m.group(2), m.group(3).strip("'\"")
            try:
                cre = re.compile(rx)
            except re.error:
                raise invalid("Invalid value for field 'filter': '%s'. Invalid regular expression." % text)
            return lambda r: bool(cre.fullmatch(str(self._field(r, field) or ""))) == (op == "eq")
        import filters

        def resolver(parts, op, value, quoted):
            if parts[0] == "labels" and len(parts) == 2 and op == ":" and value == "*":
                return lambda r: parts[1] in r.get("labels", {})

            def f(r):
                v = self._field(r, ".".join(parts))
                if isinstance(v, bool):
                    v = "true" if v else "false"
                return filters.str_compare("" if v is None else str(v), op, value)
            return f
        try:
            return filters.compile_filter(text, resolver)
        except filters.FilterError:
            raise invalid("Invalid value for field 'filter': '%s'. Invalid list filter expression." % text)

    def _field(self, r, path):
        v = r
        for p in path.split("."):
            if not isinstance(v, dict):
                return None
            v = v.get(p)
        return v

    def delete(self, req):
        self._zone(req)
        rid, prev = self._request_id(req)
        if prev is not None:
            return 200, prev
        key, r = self._reservation(req)
        if int(r.get("specificReservation", {}).get("inUseCount", "0") or 0) > 0:
            raise ApiError(400, "The reservation '%s' is in use by %s VM(s) and cannot be deleted." % (
                self._target(req.segments[3], req.segments[5], r["name"]),
                r["specificReservation"]["inUseCount"]), status="FAILED_PRECONDITION", reason="resourceInUseByAnotherResource")
        del self.res[key]
        return 200, self._new_op(req, "delete", r["name"], r["id"], rid)

    def resize(self, req):
        self._zone(req)
        rid, prev = self._request_id(req)
        if prev is not None:
            return 200, prev
        body = self.validator.parse(req.json(), RESIZE, "reservations_resize_request_resource",
                                    check_required=False)
        key, r = self._reservation(req)
        if "specificSkuCount" not in body:
            raise invalid("Invalid value for field 'resource.specificSkuCount': ''. Required.")
        n = int(body["specificSkuCount"])
        # Compute's documented range is 1..1000: a reservation cannot be resized to nothing.
        if n < 1 or n > 1000:
            raise invalid("Invalid value for field 'resource.specificSkuCount': '%d'. Must be between 1 and 1000."
                          % n)
        sr = r.get("specificReservation")
        if sr is None:
            raise invalid("Only a specific (standalone) reservation can be resized.")
        if n < int(sr.get("inUseCount", "0")):
            raise ApiError(400, "Cannot resize the reservation below its in-use count %s." % sr["inUseCount"],
                           status="FAILED_PRECONDITION", reason="conditionNotMet")
        sr["count"] = str(n)
        sr["assuredCount"] = str(n)
        return 200, self._new_op(req, "resize", r["name"], r["id"], rid)

    def update(self, req):
        self._zone(req)
        rid, prev = self._request_id(req)
        if prev is not None:
            return 200, prev
        body = self.validator.parse(req.json(), RES, "reservation_resource", check_required=False)
        key, r = self._reservation(req)
        # Terraform sends the fields in updateMask, gcloud in `paths` (repeatable: compute reservations update
        # --reservation-sharing-policy sends paths=reservationSharingPolicy.serviceShareType). The Node client
        # sends both (a placeholder paths beside updateMask, as captured): updateMask wins when present.
        mask = req.q("updateMask") or ",".join(req.qall("paths"))
        paths = [p.strip() for p in mask.split(",") if p.strip()]
        if not paths:
            raise invalid("Invalid value for field 'updateMask': ''. The update mask must name at least one field.")
        for p in paths:
            parts = common.resolve_path(RES, p)
            if parts is None:
                raise invalid("Invalid value for field 'updateMask': '%s'. Unknown field." % p)
            if parts[0] in ("name", "zone", "id", "kind", "selfLink", "creationTimestamp", "status"):
                raise invalid("Invalid value for field 'updateMask': '%s'. The field cannot be updated." % p)
            src, dst = body, r
            for q in parts[:-1]:
                src = src.get(q, {}) if isinstance(src, dict) else {}
                dst = dst.setdefault(q, {})
            if parts == ["specificReservation", "count"] or parts[:2] == ["specificReservation", "count"]:
                pass
            if isinstance(src, dict) and parts[-1] in src:
                dst[parts[-1]] = src[parts[-1]]
            else:
                dst.pop(parts[-1], None)
        if r.get("specificReservation", {}).get("count") is not None:
            r["specificReservation"]["assuredCount"] = r["specificReservation"]["count"]
        r["status"] = "UPDATING"
        return 200, self._new_op(req, "update", r["name"], r["id"], rid)

    # ------------------------------------------------------------ operations
    def _op(self, req):
        key = "%s/%s/%s" % (req.segments[3], req.segments[5], req.segments[7])
        rec = self.ops.get(key)
        if rec is None and req.segments[7] in self.op_ids:
            rec = self.ops.get(self.op_ids[req.segments[7]])
        if rec is None:
            raise not_found("projects/%s/zones/%s/operations/%s" % tuple(key.split("/")))
        return rec

    def get_op(self, req):
        rec = self._op(req)
        if rec["polls"] > 0:
            rec["polls"] -= 1
        else:
            self._done(rec)
        return 200, rec["op"]

    def wait_op(self, req):
        rec = self._op(req)
        self._done(rec)
        return 200, rec["op"]

    def delete_op(self, req):
        rec = self._op(req)
        op = rec["op"]
        key = "%s/%s/%s" % (req.segments[3], req.segments[5], op["name"])
        self.ops.pop(key, None)
        self.op_ids.pop(op["id"], None)
        return 204, b""

    def list_ops(self, req):
        project, zone = req.segments[3], req.segments[5]
        mr, start, pred, order = self._list_common(req)
        items = [rec["op"] for k, rec in self.ops.items() if k.startswith("%s/%s/" % (project, zone))
                 and pred(rec["op"])]
        page = items[start:start + mr]
        out = {"kind": "compute#operationList", "id": "projects/%s/zones/%s/operations" % (project, zone),
               "items": page, "selfLink": LINK + "projects/%s/zones/%s/operations" % (project, zone)}
        if start + mr < len(items):
            out["nextPageToken"] = self._tok(start + mr)
        return 200, out

    # ------------------------------------------------------------ Vertex AI consuming a reservation
    def claim_reservation(self, spec, region):
        """spec: {name: projects/P/zones/Z/reservations/R, machineType, accel, count, replicas}.
        Returns None when claimed, else the failure message for the job."""
        parts = spec["name"].split("/")
        project, zone, name = parts[1], parts[3], parts[5]
        r = None
        for pid in {project, self.world.project_id(project)}:
            r = self.res.get("%s/%s/%s" % (pid, zone, name)) or r
        if r is None:
            return "Reservation %s is not found." % spec["name"]
        if not zone.startswith(region + "-"):
            return "Reservation %s is in zone %s, which is not in the job's region %s." % (spec["name"], zone,
                                                                                        region)
        if r.get("reservationSharingPolicy", {}).get("serviceShareType") != "ALLOW_ALL":
            return ("Reservation %s is not shared with Google Cloud managed services; set "
                    "reservationSharingPolicy.serviceShareType to ALLOW_ALL." % spec["name"])
        sr = r.get("specificReservation") or {}
        ip = sr.get("instanceProperties") or {}
        gas = ip.get("guestAccelerators") or []
        want_acc = spec["accel"].lower().replace("_", "-") if spec["accel"] != "ACCELERATOR_TYPE_UNSPECIFIED" else None
        have_acc = gas[0]["acceleratorType"].rsplit("/", 1)[-1] if gas else None
        have_cnt = gas[0].get("acceleratorCount", 0) if gas else 0
        if ip.get("machineType") != spec["machineType"] or have_acc != want_acc or (
                want_acc and have_cnt != spec["count"]):
            return ("The machine spec of the job (%s, %s x %s) does not match reservation %s (%s, %s x %s)." % (
                spec["machineType"], spec["count"], spec["accel"], spec["name"], ip.get("machineType"), have_cnt,
                have_acc))
        if ip.get("localSsds"):
            return "Reservation %s has manually attached local SSDs, which Vertex AI cannot consume." % spec["name"]
        free = int(sr.get("count", "0")) - int(sr.get("inUseCount", "0"))
        if spec["replicas"] > free:
            return ("Reservation %s has %d free VM(s); the job needs %d." % (spec["name"], free, spec["replicas"]))
        sr["inUseCount"] = str(int(sr.get("inUseCount", "0")) + spec["replicas"])
        spec["_key"] = "%s/%s/%s" % (r["selfLink"][len(LINK):].split("/")[1], zone, name)
        return None

    def release_reservation(self, spec):
        r = self.res.get(spec.get("_key", ""))
        if r is not None:
            sr = r["specificReservation"]
            sr["inUseCount"] = str(max(0, int(sr.get("inUseCount", "0")) - spec["replicas"]))
