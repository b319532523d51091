"""Compute Engine v1 future reservations (projects.zones.futureReservations), calendar mode included.

insert, get, list, aggregatedList, update (updateMask), cancel and delete, each mutation returning a
zonal Operation served by compute.py's zoneOperations (same store, same requestId dedup). A submitted
request moves through its procurement states on the virtual clock (advance(), before every call):

    PENDING_APPROVAL --approval_seconds--> APPROVED --lockTime--> PROCURING --startTime--> PROVISIONING
    --provisioning_seconds--> FULFILLED          (mode "approve", the default)
    PENDING_APPROVAL --approval_seconds--> DECLINED                              (mode "decline")
    ... APPROVED ... --startTime--> FAILED, nothing delivered                    (mode "fail")

At the start time the auto-created reservation appears in compute's reservations (without a sharing
policy: Vertex AI cannot use it until reservations.update sets serviceShareType ALLOW_ALL); at the end
time it is deleted when autoDeleteAutoCreatedReservations is set. POST /_fake/future-reservations
scripts the mode and the delays (README.md).

Where Google's documents are silent or marked UNCONFIRMED the fake takes the careful reading and says so
in a comment marked CAREFUL; docs/future-reservations.md lists them for vx's side.
"""

import random
import re

import common
from common import ApiError
from compute import LINK, NAME_RE, ZONES, invalid, not_found

FR = "google.cloud.compute.v1.FutureReservation"
MODES = ("approve", "decline", "fail")
CONFIG_DEFAULTS = {
    "mode": "approve",
    "approval_seconds": 60,        # PENDING_APPROVAL -> APPROVED / DECLINED (secondary sources: about a minute)
    "lock_seconds": 0,             # lockTime = startTime - lock_seconds (not stated; see _approve)
    "provisioning_seconds": 0,     # PROVISIONING -> FULFILLED (the proto: never more than 24 h)
    "auto_name": "inherit",        # the delivered reservation's name without namePrefix (see _inherited_name)
}
AUTO_NAMES = ("inherit", "dated")
DAY = 86400
# gcloud's mask paths that are not field names (singular, sic) -> the field they stand for.
GCLOUD_PATHS = {"specificSkuProperties.instanceProperties.guestAccelerator":
                "specificSkuProperties.instanceProperties.guestAccelerators",
                "specificSkuProperties.instanceProperties.localSsd":
                "specificSkuProperties.instanceProperties.localSsds"}
# States after which nothing may change (the proto: locked from PROCURING on).
LOCKED = ("PROCURING", "PROVISIONING", "FULFILLED", "FAILED_PARTIALLY_FULFILLED", "COMMITTED")


def precondition(msg):
    return ApiError(400, msg, status="FAILED_PRECONDITION", reason="conditionNotMet")


def seconds_of(d):
    """A compute Duration {"seconds": "N", "nanos": n} -> float seconds."""
    return int(d.get("seconds", "0") or 0) + (d.get("nanos", 0) or 0) / 1e9


class FutureReservations:
    NAME = "futures"
    HOST = "compute.googleapis.com"

    def __init__(self, world):
        self.world = world
        self.validator = common.Validator("compute")
        self.reset()

    def reset(self):
        self.frs = {}      # "project/zone/name" -> {"json": FutureReservation, "submitted": t, "auto": [res keys]}
        # The mode (approve, decline, fail) is read when Google would decide: at the end of the review
        # for decline, at the start time for fail.
        self.config = dict(CONFIG_DEFAULTS)

    def dump(self):
        return {"frs": self.frs, "config": self.config}

    def load(self, d):
        self.frs.update(d.get("frs", {}))
        self.config.update(d.get("config", {}))

    def configure(self, b):
        unknown = set(b) - set(CONFIG_DEFAULTS)
        if unknown:
            raise ValueError("unknown keys %s; known: %s" % (sorted(unknown), sorted(CONFIG_DEFAULTS)))
        if "mode" in b and b["mode"] not in MODES:
            raise ValueError("mode must be one of %s" % ", ".join(MODES))
        if "auto_name" in b and b["auto_name"] not in AUTO_NAMES:
            raise ValueError("auto_name must be one of %s" % ", ".join(AUTO_NAMES))
        for k in set(b) - {"mode", "auto_name"}:
            if not isinstance(b[k], (int, float)) or isinstance(b[k], bool) or b[k] < 0:
                raise ValueError("%s must be a number >= 0" % k)
        self.config.update(b)
        return self.describe()

    def describe(self):
        return dict(self.config, futureReservations=[r["json"] for r in self.frs.values()])

    @property
    def compute(self):
        return self.world.services["compute"]

    # ------------------------------------------------------------ routing
    def route(self, req):
        from fakegcp import Route
        s, m = req.segments, req.method
        if len(s) < 6 or s[:3] != ["compute", "v1", "projects"]:
            return None
        rpc = fn = None
        if len(s) == 6 and s[4:] == ["aggregated", "futureReservations"] and m == "GET":
            rpc, fn = "FutureReservations.AggregatedList", self.aggregated
        elif len(s) >= 7 and s[4] == "zones" and s[6] == "futureReservations":
            if len(s) == 7:
                rpc, fn = {"POST": ("FutureReservations.Insert", self.insert),
                           "GET": ("FutureReservations.List", self.list)}.get(m, (None, None))
            elif len(s) == 8:
                rpc, fn = {"GET": ("FutureReservations.Get", self.get),
                           "DELETE": ("FutureReservations.Delete", self.delete),
                           "PATCH": ("FutureReservations.Update", self.update)}.get(m, (None, None))
            elif len(s) == 9 and s[8] == "cancel" and m == "POST":
                rpc, fn = "FutureReservations.Cancel", self.cancel
        if fn is None:
            return None

        def run(req, fn=fn):
            status, body = fn(req)
            return status, body, {}
        return Route(rpc, "compute", run, rate=[((s[3],), "compute_requests_per_minute")], service=self)

    # ------------------------------------------------------------ the clock
    def advance(self, until=None):
        """Applies every transition due by the virtual now (or by until: vertex.py settles the windows
        up to each of its own events first, so a run never outlives its window), in time order per
        request."""
        now = self.world.now() if until is None else until
        for key, rec in self.frs.items():
            while self._step(key, rec, now):
                pass

    def _times(self, fr):
        tw = fr.get("timeWindow", {})
        start = common.parse_ts(tw["startTime"])
        end = common.parse_ts(tw["endTime"]) if "endTime" in tw else start + seconds_of(tw.get("duration", {}))
        return start, end

    def _step(self, key, rec, now):
        """One due transition of rec; True when one was made."""
        fr = rec["json"]
        st = fr["status"]
        ps = st.get("procurementStatus")
        start, end = self._times(fr)
        cfg = self.config
        if ps == "PENDING_APPROVAL" and now >= rec["submitted"] + cfg["approval_seconds"]:
            if cfg["mode"] == "decline":
                st["procurementStatus"] = "DECLINED"
            else:
                self._approve(fr, start)
            return True
        if ps == "APPROVED" and "lockTime" in st and now >= common.parse_ts(st["lockTime"]):
            st["procurementStatus"] = "PROCURING"
            return True
        if ps in ("APPROVED", "PROCURING") and now >= start:
            if cfg["mode"] == "fail":
                st["procurementStatus"] = "FAILED"
            else:
                st["procurementStatus"] = "PROVISIONING"
                self._deliver(key, rec, start)
            return True
        if ps == "PROVISIONING" and now >= start + cfg["provisioning_seconds"]:
            st["procurementStatus"] = "FULFILLED"
            st["fulfilledCount"] = fr["specificSkuProperties"]["totalCount"]
            return True
        if rec.get("auto") and now >= self._auto_delete_at(fr, start, end):
            self._end_runs(fr, rec, self._auto_delete_at(fr, start, end))
            self._undeliver(rec)
            return True
        return False

    def _approve(self, fr, start):
        st = fr["status"]
        st["procurementStatus"] = "APPROVED"
        # NOT STATED: when a calendar-mode request locks. The fake locks it lock_seconds (default 0)
        # before the start time, so an approved request can be cancelled until its window opens.
        st["lockTime"] = common.fmt_ts(start - self.config["lock_seconds"])

    def _auto_name(self, fr, start, n):
        """The auto-created reservation's name. CONFIRMED: it starts with namePrefix, the proto saying
        '-date-####' follows; NOT STATED: the date's format (the fake writes YYYYMMDD). With
        reservationName, that name; with neither, the future reservation's own (gcloud: 'inherit the
        name of the future reservation')."""
        if fr.get("reservationName"):
            return fr["reservationName"]
        if fr.get("namePrefix"):
            return "%s-%s-%04d" % (fr["namePrefix"], common.fmt_ts(start)[:10].replace("-", ""), n)
        return self._inherited_name(fr, start, n)

    def _inherited_name(self, fr, start, n):
        """The name without namePrefix or reservationName. UNCONFIRMED: gcloud's help says the reservation
        inherits the request's name; auto_name "dated" scripts the other reading (the request's name as the
        prefix, the proto's '-date-####' after it), so a client that reads status.autoCreatedReservations
        rather than assuming the name can be tested."""
        if self.config.get("auto_name") == "dated":
            return "%s-%s-%04d" % (fr["name"][:20], common.fmt_ts(start)[:10].replace("-", ""), n)
        return fr["name"]

    def _deliver(self, key, rec, start):
        """At the start time: the reservation receiving the capacity, an ordinary READY reservation in
        compute's list, with the booked shape and no sharing policy (Vertex AI refuses it until
        reservations.update allows it, as Google documents for its jobs)."""
        fr = rec["json"]
        project, zone = key.split("/")[:2]
        name = self._auto_name(fr, start, 1)
        sku = fr["specificSkuProperties"]
        rkey = "%s/%s/%s" % (project, zone, name)
        r = {"kind": "compute#reservation", "id": str(random.randrange(10 ** 18, 10 ** 19)), "name": name,
             "creationTimestamp": common.fmt_ts_compute(self.world.now()),
             "selfLink": LINK + "projects/%s/zones/%s/reservations/%s" % (project, zone, name),
             "zone": LINK + "projects/%s/zones/%s" % (project, zone), "status": "READY",
             "specificReservationRequired": bool(fr.get("specificReservationRequired", False)),
             "shareSettings": fr.get("shareSettings") or {"shareType": "LOCAL"},
             "specificReservation": {"count": sku["totalCount"], "inUseCount": "0",
                                     "assuredCount": sku["totalCount"],
                                     "instanceProperties": dict(sku.get("instanceProperties", {}))}}
        self.compute.res[rkey] = r
        rec["auto"] = [rkey]
        fr["status"]["autoCreatedReservations"] = [r["selfLink"]]
        fr["status"]["fulfilledCount"] = "0"

    def _auto_delete_at(self, fr, start, end):
        """When Compute deletes the auto-created reservations (the proto's autoDelete... fields)."""
        if not fr.get("autoDeleteAutoCreatedReservations"):
            return float("inf")
        if fr.get("autoCreatedReservationsDeleteTime"):
            return common.parse_ts(fr["autoCreatedReservationsDeleteTime"])
        if fr.get("autoCreatedReservationsDuration"):
            return start + seconds_of(fr["autoCreatedReservationsDuration"])
        return end

    def _end_runs(self, fr, rec, at):
        """Calendar mode: the VMs on the delivered reservations are terminated with them at the end
        time (CONFIRMED: the proto, gcloud help, the TPU page), so every Vertex job running on one ends
        then. How Vertex reports it is NOT STATED: the fake assumes it reports the lost VMs as it reports
        a reclaimed Spot VM, a stockout (failure-texts.md: "A Spot preemption is reported as a
        stockout"), so the job ends JOB_STATE_FAILED with code 8 and Vertex's stockout sentence, and vx
        must tell the window's end from the job's facts (its reservation, its end time), not the text.
        A default-mode request keeps the VMs (the proto), so its jobs run on."""
        if fr.get("reservationMode") != "CALENDAR":
            return
        for rkey in rec.get("auto", []):
            self.world.services["vertex"].end_runs_on_reservation(rkey, at)

    def _undeliver(self, rec):
        # NOT STATED: the request's state after its end time, and whether autoCreatedReservations keeps
        # the deleted reservations' URLs. The fake keeps both as they were.
        for rkey in rec.pop("auto", []):
            self.compute.res.pop(rkey, None)

    # ------------------------------------------------------------ helpers
    def _key(self, req, name=None):
        return "%s/%s/%s" % (req.segments[3], req.segments[5], name or req.segments[7])

    def _target(self, req, name=None):
        return "projects/%s/zones/%s/futureReservations/%s" % (req.segments[3], req.segments[5],
                                                               name or req.segments[7])

    def _find(self, req):
        rec = self.frs.get(self._key(req))
        if rec is None:
            raise not_found(self._target(req))
        return rec

    def _op(self, req, op_type, fr, rid):
        return self.compute._new_op(req, op_type, fr["name"], fr["id"], rid, collection="futureReservations")

    # ------------------------------------------------------------ insert
    def _check_shape(self, body):
        """What Google's reference and gcloud make exclusive or required (no oneof in the proto)."""
        name = body.get("name") or ""
        if not NAME_RE.match(name):
            raise invalid("Invalid value for field 'resource.name': '%s'. Must be a match of regex "
                          "'[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?'" % name)
        tw = body.get("timeWindow") or {}
        if "startTime" not in tw:
            raise invalid("Invalid value for field 'resource.timeWindow.startTime': ''. Required.")
        if ("endTime" in tw) == ("duration" in tw):
            raise invalid("Invalid value for field 'resource.timeWindow': exactly one of endTime and duration "
                          "must be set.")
        for a, b in (("specificSkuProperties", "aggregateReservation"),
                     ("autoCreatedReservationsDeleteTime", "autoCreatedReservationsDuration"),
                     ("namePrefix", "reservationName")):
            if a in body and b in body:
                raise invalid("Invalid value for field 'resource': %s and %s cannot both be set." % (a, b))
        sku = body.get("specificSkuProperties")
        if not sku:
            raise invalid("Invalid value for field 'resource.specificSkuProperties': ''. Required.")
        if ("instanceProperties" in sku) == ("sourceInstanceTemplate" in sku):
            raise invalid("Invalid value for field 'resource.specificSkuProperties': exactly one of "
                          "instanceProperties and sourceInstanceTemplate must be set.")
        if "instanceProperties" in sku and not sku["instanceProperties"].get("machineType"):
            raise invalid("Invalid value for field "
                          "'resource.specificSkuProperties.instanceProperties.machineType': ''. Required.")
        prefix = body.get("namePrefix")
        if prefix is not None and (len(prefix) > 20 or not NAME_RE.match(prefix)):
            raise invalid("Invalid value for field 'resource.namePrefix': '%s'. At most 20 characters, "
                          "RFC 1035." % prefix)

    def _check_times(self, body):
        tw = body["timeWindow"]
        try:
            start = common.parse_ts(tw["startTime"])
            end = common.parse_ts(tw["endTime"]) if "endTime" in tw else start + seconds_of(tw["duration"])
        except (ValueError, KeyError):
            raise invalid("Invalid value for field 'resource.timeWindow': '%s'." % tw)
        if end <= start:
            raise invalid("Invalid value for field 'resource.timeWindow': the end must be after the start.")
        # UNCONFIRMED: the minimum lead time (87 h for GPUs in secondary sources) is not enforced, only
        # that the window is in the future.
        if start <= self.world.now():
            raise invalid("Invalid value for field 'resource.timeWindow.startTime': '%s'. The start time must "
                          "be in the future." % tw["startTime"])
        return start, end

    def _check_calendar(self, body, start, end):
        """Calendar mode (Google's create page, CONFIRMED): 1 to 90 days, 1 to 80 GPU VMs (256 H4D), the
        auto-delete option on."""
        if body.get("reservationMode") != "CALENDAR":
            return
        if not (DAY <= end - start <= 90 * DAY):
            raise invalid("Invalid value for field 'resource.timeWindow': a calendar-mode reservation lasts "
                          "1 to 90 days.")
        n = int(body["specificSkuProperties"].get("totalCount", "0"))
        mt = body["specificSkuProperties"].get("instanceProperties", {}).get("machineType", "")
        most = 256 if mt.startswith("h4d") else 80
        if not 1 <= n <= most:
            raise invalid("Invalid value for field 'resource.specificSkuProperties.totalCount': '%d'. A "
                          "calendar-mode request reserves 1 to %d VMs." % (n, most))
        if body.get("autoDeleteAutoCreatedReservations") is not True:
            raise invalid("Invalid value for field 'resource.autoDeleteAutoCreatedReservations': calendar mode "
                          "requires auto-delete of the auto-created reservations.")
        # UNCONFIRMED (secondary sources): specificReservationRequired and deploymentType DENSE being
        # required for calendar mode. Not enforced; the auto-created reservation copies the former.

    def insert(self, req):
        self.compute._zone(req)
        rid, prev = self.compute._request_id(req)
        if prev is not None:
            return 200, prev
        body = self.validator.parse(req.json(), FR, "future_reservation_resource", check_required=False)
        body.pop("params", None)  # input only, not persisted
        self._check_shape(body)
        start, end = self._check_times(body)
        self._check_calendar(body, start, end)
        key = self._key(req, body["name"])
        if key in self.frs:
            raise ApiError(409, "The resource '%s' already exists" % self._target(req, body["name"]),
                           status="ALREADY_EXISTS", reason="alreadyExists")
        project, zone = req.segments[3], req.segments[5]
        fr = dict(body)
        fr.update({"kind": "compute#futureReservation", "id": str(random.randrange(10 ** 18, 10 ** 19)),
                   "creationTimestamp": common.fmt_ts_compute(self.world.now()),
                   "selfLink": LINK + self._target(req, body["name"]),
                   "zone": LINK + "projects/%s/zones/%s" % (project, zone)})
        # gcloud: planningStatus defaults to DRAFT; SUBMITTED goes to PENDING_APPROVAL.
        fr.setdefault("planningStatus", "DRAFT")
        submitted = fr["planningStatus"] == "SUBMITTED"
        fr["status"] = {"procurementStatus": "PENDING_APPROVAL" if submitted else "DRAFTING"}
        if fr.get("shareSettings", {}).get("projectMap") == {}:
            del fr["shareSettings"]["projectMap"]
        self.frs[key] = {"json": fr, "submitted": self.world.now() if submitted else None}
        return 200, self._op(req, "insert", fr, rid)

    # ------------------------------------------------------------ reads
    def get(self, req):
        self.compute._zone(req)
        return 200, self._find(req)["json"]

    def list(self, req):
        c = self.compute
        c._zone(req)
        project, zone = req.segments[3], req.segments[5]
        mr, start, pred, order = c._list_common(req)
        items = c._sorted([r["json"] for k, r in self.frs.items() if k.startswith("%s/%s/" % (project, zone))
                           and pred(r["json"])], order)
        page = items[start:start + mr]
        path = "projects/%s/zones/%s/futureReservations" % (project, zone)
        out = {"kind": "compute#futureReservationsListResponse", "id": path, "items": page,
               "selfLink": LINK + path}
        if start + mr < len(items):
            out["nextPageToken"] = c._tok(start + mr)
        return 200, out

    def aggregated(self, req):
        c = self.compute
        project = req.segments[3]
        mr, start, pred, order = c._list_common(req)
        allr = c._sorted([r["json"] for k, r in self.frs.items() if k.startswith(project + "/")
                          and pred(r["json"])], order)
        page = allr[start:start + mr]
        items = {}
        for z in sorted(set(ZONES) | {r["zone"].rsplit("/", 1)[-1] for r in allr}):
            rs = [r for r in page if r["zone"].endswith("/" + z)]
            items["zones/" + z] = {"futureReservations": rs} if rs else {"warning": {
                "code": "NO_RESULTS_ON_PAGE", "message": "There are no results for scope 'zones/%s' on this page." % z,
                "data": [{"key": "scope", "value": "zones/" + z}]}}
        path = "projects/%s/aggregated/futureReservations" % project
        out = {"kind": "compute#futureReservationsAggregatedListResponse", "id": path, "items": items,
               "selfLink": LINK + path}
        if start + mr < len(allr):
            out["nextPageToken"] = c._tok(start + mr)
        return 200, out

    # ------------------------------------------------------------ update, cancel, delete
    def _mask(self, req):
        paths = [p.strip() for p in (req.q("updateMask") or "").split(",") if p.strip()]
        if not paths:
            raise invalid("Invalid value for field 'updateMask': ''. The update mask must name at least one field.")
        out = []
        for p in paths:
            parts = common.resolve_path(FR, GCLOUD_PATHS.get(p, p))
            if parts is None:
                raise invalid("Invalid value for field 'updateMask': '%s'. Unknown field." % p)
            if parts[0] in ("name", "zone", "id", "kind", "selfLink", "selfLinkWithId", "creationTimestamp",
                            "status", "params"):
                raise invalid("Invalid value for field 'updateMask': '%s'. The field cannot be updated." % p)
            out.append(parts)
        return out

    def _may_update(self, fr, paths):
        """CONFIRMED (gcloud help): while DRAFT anything may change, and submitting (planningStatus
        SUBMITTED) is an update; once pending approval, property changes are not allowed. From PROCURING
        on (lockTime) nothing may change (proto). CAREFUL: a calendar-mode request is never amended after
        submission (Preview text: 'you can't ... modify'); a default-mode one may be, while APPROVED and
        before its start time (standard docs), as an amendment Google approves at once here."""
        ps = fr["status"]["procurementStatus"]
        if ps == "DRAFTING":
            return
        if ps in LOCKED or ps in ("CANCELLED", "DECLINED", "FAILED", "PENDING_APPROVAL",
                                  "PENDING_AMENDMENT_APPROVAL"):
            raise precondition("The future reservation '%s' cannot be modified in state %s." % (fr["name"], ps))
        if fr.get("reservationMode") == "CALENDAR":
            raise precondition("A calendar-mode future reservation cannot be modified after it was submitted.")

    def update(self, req):
        self.compute._zone(req)
        rid, prev = self.compute._request_id(req)
        if prev is not None:
            return 200, prev
        body = self.validator.parse(req.json(), FR, "future_reservation_resource", check_required=False)
        rec = self._find(req)
        fr = rec["json"]
        paths = self._mask(req)
        self._may_update(fr, paths)
        new = {k: v for k, v in fr.items()}
        for parts in paths:
            src, dst = body, new
            for q in parts[:-1]:
                src = src.get(q, {}) if isinstance(src, dict) else {}
                dst[q] = dict(dst.get(q, {}))
                dst = dst[q]
            if isinstance(src, dict) and parts[-1] in src:
                dst[parts[-1]] = src[parts[-1]]
            else:
                dst.pop(parts[-1], None)
        self._check_shape(new)
        start, end = self._check_times(new)
        self._check_calendar(new, start, end)
        rec["json"] = new
        if fr["status"]["procurementStatus"] == "DRAFTING" and new.get("planningStatus") == "SUBMITTED":
            new["status"] = {"procurementStatus": "PENDING_APPROVAL"}
            rec["submitted"] = self.world.now()
        return 200, self._op(req, "update", new, rid)

    def cancel(self, req):
        """CAREFUL: the states that accept cancel for calendar mode are not stated. The fake accepts it
        before the request locks (DRAFTING, PENDING_APPROVAL, APPROVED: the manage page says cancel
        stops the review or an approved request from entering its lock time) and refuses it after."""
        self.compute._zone(req)
        rid, prev = self.compute._request_id(req)
        if prev is not None:
            return 200, prev
        rec = self._find(req)
        fr = rec["json"]
        ps = fr["status"]["procurementStatus"]
        if ps not in ("DRAFTING", "PENDING_APPROVAL", "APPROVED"):
            raise precondition("The future reservation '%s' cannot be cancelled in state %s." % (fr["name"], ps))
        fr["status"]["procurementStatus"] = "CANCELLED"
        return 200, self._op(req, "cancel", fr, rid)

    def delete(self, req):
        """CONFIRMED (delete page): after cancelling or after the end time. CAREFUL: also a request
        Google refused or failed (nothing delivered) and a draft never submitted; nothing else."""
        self.compute._zone(req)
        rid, prev = self.compute._request_id(req)
        if prev is not None:
            return 200, prev
        key = self._key(req)
        rec = self._find(req)
        fr = rec["json"]
        ps = fr["status"]["procurementStatus"]
        ended = self.world.now() >= self._times(fr)[1]
        if not ended and ps not in ("CANCELLED", "DECLINED", "FAILED", "DRAFTING"):
            raise precondition("The future reservation '%s' cannot be deleted in state %s before its end time; "
                               "cancel it first." % (fr["name"], ps))
        del self.frs[key]
        return 200, self._op(req, "delete", fr, rid)

