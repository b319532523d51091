"""Shared pieces of the fake: errors in each API's shape, time formats, ProtoJSON schema validation.

The schemas in schema/*.json were copied from the API reference; they describe every message
(fields keyed by JSON name, proto name, type, behaviour) and enum.
"""

import datetime
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))

# google.rpc.Code name -> (number, canonical HTTP status)
CODES = {
    "OK": (0, 200), "CANCELLED": (1, 499), "UNKNOWN": (2, 500), "INVALID_ARGUMENT": (3, 400),
    "DEADLINE_EXCEEDED": (4, 504), "NOT_FOUND": (5, 404), "ALREADY_EXISTS": (6, 409),
    "PERMISSION_DENIED": (7, 403), "RESOURCE_EXHAUSTED": (8, 429), "FAILED_PRECONDITION": (9, 400),
    "ABORTED": (10, 409), "OUT_OF_RANGE": (11, 400), "UNIMPLEMENTED": (12, 501), "INTERNAL": (13, 500),
    "UNAVAILABLE": (14, 503), "DATA_LOSS": (15, 500), "UNAUTHENTICATED": (16, 401),
}
HTTP_TO_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 409: "ABORTED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED",
                  499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "UNAVAILABLE",
                  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
HTTP_REASON = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
               409: "Conflict", 412: "Precondition Failed", 429: "Too Many Requests",
               500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
               504: "Gateway Timeout"}
# compute / storage style errors[].reason for a given HTTP status
HTTP_TO_REASON = {400: "invalid", 401: "required", 403: "forbidden", 404: "notFound", 409: "conflict",
                  412: "conditionNotMet", 429: "rateLimitExceeded", 500: "backendError",
                  502: "backendError", 503: "backendError", 504: "backendError"}

TYPE_PREFIX = "type.googleapis.com/"


class ApiError(Exception):
    """An error reply. `flavor` decides the JSON shape (see render)."""

    def __init__(self, http, message, status=None, details=None, reason=None, domain="global",
                 errors=None, headers=None):
        super().__init__(message)
        self.http = http
        self.message = message
        self.status = status or HTTP_TO_STATUS.get(http, "UNKNOWN")
        self.details = details or []
        self.reason = reason
        self.domain = domain
        self.errors = errors
        self.headers = headers or {}

    def render(self, flavor):
        """flavor: 'grpc' (Vertex, Cloud Quotas, IAM credentials: code/message/status/details),
        'compute' and 'storage' (code/message/errors[] with reason; compute adds status/details
        when it has them)."""
        if flavor == "oauth":
            return {"error": self.status.lower(), "error_description": self.message}
        err = {"code": self.http, "message": self.message}
        if flavor in ("compute", "storage"):
            errors = self.errors or [{"message": self.message, "domain": self.domain,
                                      "reason": self.reason or HTTP_TO_REASON.get(self.http, "invalid")}]
            err["errors"] = errors
            if flavor == "compute" and (self.details or self.http in (400, 401)):
                err["status"] = self.status
            if flavor == "compute" and self.details:
                err["details"] = self.details
        else:
            err["status"] = self.status
            if self.details:
                err["details"] = self.details
        return {"error": err}


def err(status_name, message, details=None, **kw):
    """ApiError from a google.rpc.Code name, with its canonical HTTP status."""
    return ApiError(CODES[status_name][1], message, status=status_name, details=details, **kw)


def bad_request(message, field, description=None):
    return err("INVALID_ARGUMENT", message, details=[{
        "@type": TYPE_PREFIX + "google.rpc.BadRequest",
        "fieldViolations": [{"field": field, "description": description or message}]}])


def page_size(req, default, maximum):
    """The pageSize of a List request as Vertex AI and Cloud Quotas read it: not a number or below
    zero is INVALID_ARGUMENT, 0 or absent is default, and more than maximum is maximum."""
    try:
        ps = int(req.q("pageSize", "0") or 0)
    except ValueError:
        raise bad_request("Invalid value at 'page_size' (TYPE_INT32), \"%s\"" % req.q("pageSize"), "page_size")
    if ps < 0:
        raise bad_request("page_size must be non-negative.", "page_size")
    return default if ps == 0 else min(ps, maximum)


def required_missing(fields):
    """Vertex's application-level form for missing required fields."""
    msg = "List of found errors:\t" + "".join(
        "%d.Field: %s; Message: Required field is not set.\t" % (i + 1, f) for i, f in enumerate(fields))
    return err("INVALID_ARGUMENT", msg, details=[{
        "@type": TYPE_PREFIX + "google.rpc.BadRequest",
        "fieldViolations": [{"field": f, "description": "Required field is not set."} for f in fields]}])


# ------------------------------------------------------------------ time

def fmt_ts(t):
    """RFC 3339 UTC with microseconds and Z, as Google's ProtoJSON servers write it."""
    dt = datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fmt_ts_compute(t):
    """Compute's creationTimestamp form: RFC 3339 with a -07:00 style offset (UTC here)."""
    dt = datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d" % (dt.microsecond // 1000) + "-00:00"


_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")


def parse_ts(s):
    """RFC 3339 -> epoch seconds (float). Raises ValueError."""
    m = _TS_RE.match(s or "")
    if not m:
        raise ValueError("bad timestamp %r" % s)
    y, mo, d, h, mi, se = (int(m.group(i)) for i in range(1, 7))
    frac = float(m.group(7)) if m.group(7) else 0.0
    tz = m.group(8)
    dt = datetime.datetime(y, mo, d, h, mi, se, tzinfo=datetime.timezone.utc)
    t = dt.timestamp() + frac
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        t -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return t


_DUR_RE = re.compile(r"^(-)?(\d+)(\.\d{1,9})?s$")


def parse_duration(s):
    m = _DUR_RE.match(s or "")
    if not m:
        raise ValueError("bad duration %r" % s)
    v = int(m.group(2)) + (float(m.group(3)) if m.group(3) else 0.0)
    return -v if m.group(1) else v


def fmt_duration(v):
    if v == int(v):
        return "%ds" % int(v)
    return ("%.9f" % v).rstrip("0") + "s"


# ------------------------------------------------------------------ schemas

MESSAGES = {}
ENUMS = {}


def load_schemas():
    if MESSAGES:
        return
    d = os.path.join(HERE, "schema")
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".json"):
            with open(os.path.join(d, fn)) as f:
                data = json.load(f)
            for k, v in data.get("messages", {}).items():
                MESSAGES.setdefault(k, v)
            for k, v in data.get("enums", {}).items():
                ENUMS.setdefault(k, v)


load_schemas()

_FIELD_INDEX = {}


def fields_of(msg):
    """{json_name or proto_name: (json_name, spec)} for a message."""
    idx = _FIELD_INDEX.get(msg)
    if idx is None:
        idx = {}
        for jn, spec in MESSAGES[msg]["fields"].items():
            idx[jn] = (jn, spec)
            idx.setdefault(spec.get("proto_name", jn), (jn, spec))
        _FIELD_INDEX[msg] = idx
    return idx


INT_TYPES = {"int32", "uint32", "sint32", "fixed32", "sfixed32"}
INT64_TYPES = {"int64", "uint64", "sint64", "fixed64", "sfixed64"}
SCALAR_LABEL = {"string": "TYPE_STRING", "bool": "TYPE_BOOL", "int32": "TYPE_INT32", "int64": "TYPE_INT64",
                "uint64": "TYPE_UINT64", "uint32": "TYPE_UINT32", "double": "TYPE_DOUBLE",
                "float": "TYPE_FLOAT", "bytes": "TYPE_BYTES"}
WRAPPERS = {"google.protobuf.Int64Value": "int64", "google.protobuf.UInt64Value": "uint64",
            "google.protobuf.Int32Value": "int32", "google.protobuf.UInt32Value": "uint32",
            "google.protobuf.StringValue": "string", "google.protobuf.BoolValue": "bool",
            "google.protobuf.DoubleValue": "double", "google.protobuf.FloatValue": "float",
            "google.protobuf.BytesValue": "bytes"}


class Validator:
    """ProtoJSON request parsing against the schema.

    style 'grpc': paths are snake_case proto names with [i] (`custom_job.job_spec.worker_pool_specs[0]`).
    style 'compute': same form, rooted at the body field (`reservation_resource`).
    Returns a normalised copy: JSON names, int64 as strings, enums as names, output-only fields dropped,
    nulls dropped.
    """

    def __init__(self, style="grpc"):
        self.style = style

    def parse(self, obj, msg, root, check_required=True, skip_required=()):
        out = self._msg(obj, msg, root, root)
        if check_required:
            missing = []
            self._required(out, msg, root, missing, set(skip_required))
            if missing:
                raise required_missing(missing)
        return out

    # -- errors
    def _unknown(self, key, path, root):
        if path:
            msg = "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field." % (key, path)
        else:
            msg = "Invalid JSON payload received. Unknown name \"%s\": Cannot find field." % key
        return bad_request(msg, path)

    def _bad_value(self, path, label, value):
        msg = "Invalid value at '%s' (%s), %s" % (path, label, json.dumps(value))
        return bad_request(msg, path)

    # -- walkers
    def _msg(self, obj, msg, path, root):
        if not isinstance(obj, dict):
            raise self._bad_value(path, TYPE_PREFIX + msg, obj)
        spec = MESSAGES[msg]
        idx = fields_of(msg)
        out = {}
        oneof_seen = {}
        for key, val in obj.items():
            hit = idx.get(key)
            if hit is None:
                raise self._unknown(key, path, root)
            jn, f = hit
            if val is None:
                continue
            if f.get("output_only"):
                continue
            fpath = (path + "." if path else "") + f.get("proto_name", jn)
            oneof = f.get("oneof")
            if oneof and oneof in spec.get("oneofs", {}):
                if oneof in oneof_seen:
                    raise bad_request("Invalid JSON payload received. Oneof field '%s' is already set. "
                                      "Cannot set '%s'" % (oneof, jn), fpath)
                oneof_seen[oneof] = jn
            out[jn] = self._field(val, f, fpath, root)
        return out

    def _field(self, val, f, path, root):
        if "map" in f:
            if not isinstance(val, dict):
                raise self._bad_value(path, "map", val)
            vt = f["map"]["value"]
            res = {}
            for k, v in val.items():
                kp = "%s[%s]" % (path, json.dumps(k))
                if vt in MESSAGES:
                    res[k] = self._msg(v, vt, kp, root)
                elif vt in ENUMS:
                    res[k] = self._enum(v, vt, kp)
                else:
                    res[k] = self._scalar(v, vt, kp, None)
            return res
        if f.get("repeated"):
            if not isinstance(val, list):
                raise bad_request("Invalid value at '%s', %s: Proto field is repeated, expected a list."
                                  % (path, json.dumps(val)), path)
            return [self._one(v, f, "%s[%d]" % (path, i), root) for i, v in enumerate(val)]
        return self._one(val, f, path, root)

    def _one(self, val, f, path, root):
        t = f.get("type")
        if t == "message":
            return self._msg(val, f["message"], path, root)
        if t == "enum":
            return self._enum(val, f["enum"], path)
        v = self._scalar(val, t, path, f)
        ev = f.get("enum_values")
        if ev and t == "string" and self.style == "compute" and v not in ev:
            raise bad_request("Invalid value for field '%s': '%s'. Unknown value." % (path, v), path)
        return v

    def _enum(self, val, enum, path):
        values = ENUMS[enum]["values"]
        if isinstance(val, bool):
            raise self._bad_value(path, TYPE_PREFIX + enum, val)
        if isinstance(val, int):
            for name, num in values.items():
                if num == val:
                    return name
            raise self._bad_value(path, TYPE_PREFIX + enum, val)
        if isinstance(val, str) and val in values:
            return val
        if isinstance(val, str) and re.fullmatch(r"-?\d+", val):
            return self._enum(int(val), enum, path)
        raise self._bad_value(path, TYPE_PREFIX + enum, val)

    def _scalar(self, val, t, path, f):
        label = SCALAR_LABEL.get(t, TYPE_PREFIX + str(t))
        if t == "string":
            if not isinstance(val, str):
                raise self._bad_value(path, label, val)
            return val
        if t == "bool":
            if not isinstance(val, bool):
                raise self._bad_value(path, label, val)
            return val
        if t in INT_TYPES or t in INT64_TYPES:
            if isinstance(val, bool):
                raise self._bad_value(path, label, val)
            if isinstance(val, float) and val == int(val):
                val = int(val)
            if isinstance(val, str) and re.fullmatch(r"-?\d+", val):
                val = int(val)
            if not isinstance(val, int):
                raise self._bad_value(path, label, val)
            if t.startswith("uint") and val < 0:
                raise self._bad_value(path, label, val)
            lim = 63 if t in INT64_TYPES else 31
            if val >= (1 << (lim + (1 if t.startswith("uint") else 0))) or val < -(1 << lim):
                raise self._bad_value(path, label, val)
            return str(val) if t in INT64_TYPES else val
        if t in ("double", "float"):
            if isinstance(val, bool):
                raise self._bad_value(path, label, val)
            if isinstance(val, (int, float)):
                return val
            if isinstance(val, str):
                try:
                    return float(val)
                except ValueError:
                    pass
            raise self._bad_value(path, label, val)
        if t == "bytes":
            if not isinstance(val, str):
                raise self._bad_value(path, label, val)
            return val
        if t in WRAPPERS:
            return self._scalar(val, WRAPPERS[t], path, f)
        if t == "google.protobuf.Duration":
            if not isinstance(val, str) or not _DUR_RE.match(val):
                raise self._bad_value(path, label, val)
            return val
        if t == "google.protobuf.Timestamp":
            try:
                parse_ts(val)
            except (ValueError, TypeError):
                raise self._bad_value(path, label, val)
            return val
        if t == "google.protobuf.FieldMask":
            if not isinstance(val, str):
                raise self._bad_value(path, label, val)
            return val
        if t in ("google.protobuf.Any", "google.protobuf.Struct", "google.protobuf.Empty"):
            if not isinstance(val, dict):
                raise self._bad_value(path, label, val)
            return val
        # google.protobuf.Value, ListValue and anything unknown: accept as is
        return val

    def _required(self, obj, msg, path, missing, skip):
        for jn, f in MESSAGES[msg]["fields"].items():
            fpath = (path + "." if path else "") + f.get("proto_name", jn)
            v = obj.get(jn)
            if f.get("required") and jn not in skip and fpath not in skip and v in (None, "", [], {}):
                missing.append(fpath)
                continue
            if v is None or f.get("type") != "message":
                continue
            sub = f["message"]
            if sub not in MESSAGES:
                continue
            if "map" in f:
                continue
            if f.get("repeated"):
                for i, item in enumerate(v):
                    self._required(item, sub, "%s[%d]" % (fpath, i), missing, skip)
            else:
                self._required(v, sub, fpath, missing, skip)


def enums_to_int(obj, msg):
    """Copy of a stored (name-encoded) message with enum names replaced by numbers, for
    $alt=json;enum-encoding=int."""
    if not isinstance(obj, dict) or msg not in MESSAGES:
        return obj
    fields = MESSAGES[msg]["fields"]
    out = {}
    for k, v in obj.items():
        f = fields.get(k)
        if f is None:
            out[k] = v
            continue
        t = f.get("type")
        if "map" in f:
            vt = f["map"]["value"]
            if vt in MESSAGES:
                out[k] = {mk: enums_to_int(mv, vt) for mk, mv in v.items()}
            elif vt in ENUMS:
                out[k] = {mk: ENUMS[vt]["values"].get(mv, mv) for mk, mv in v.items()}
            else:
                out[k] = v
        elif t == "enum":
            vals = ENUMS[f["enum"]]["values"]
            out[k] = [vals.get(x, x) for x in v] if f.get("repeated") else vals.get(v, v)
        elif t == "message":
            sub = f["message"]
            out[k] = [enums_to_int(x, sub) for x in v] if f.get("repeated") else enums_to_int(v, sub)
        else:
            out[k] = v
    return out


def snake_to_camel(s):
    parts = s.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def resolve_path(msg, dotted):
    """Resolve a field-mask path (JSON or proto names, dotted) to a list of JSON names, or None."""
    out = []
    cur = msg
    for part in dotted.split("."):
        if cur is None or cur not in MESSAGES:
            return None
        hit = fields_of(cur).get(part) or fields_of(cur).get(snake_to_camel(part))
        if hit is None:
            return None
        jn, f = hit
        out.append(jn)
        cur = f.get("message") if f.get("type") == "message" and "map" not in f else None
    return out
