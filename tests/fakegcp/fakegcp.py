#!/usr/bin/env python3
"""A fake of Google Cloud (Vertex AI customJobs, Compute reservations and future reservations, Cloud Quotas, Cloud Storage
objects, OAuth/STS/IAM credentials, metadata server) on one loopback port.

    python3 tests/fakegcp/fakegcp.py --port 0 --ready-file FILE [--state FILE] [--keys FILE]
                                     [--clock real|frozen]

See README.md next to this file for the paths, the control API under /_fake/ and every choice made
where Google's documents are silent.
"""

import argparse
import http.server
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import ApiError  # noqa: E402
import world as world_mod  # noqa: E402
import oauth  # noqa: E402
import vertex  # noqa: E402
import compute  # noqa: E402
import futures  # noqa: E402
import quotas  # noqa: E402
import storage  # noqa: E402
import control  # noqa: E402
import iam  # noqa: E402
import cloudlogging  # noqa: E402


class Request:
    def __init__(self, method, raw_path, headers, body, base_url):
        self.method = method
        self.headers = headers
        self.body = body
        self.base_url = base_url
        path, _, qs = raw_path.partition("?")
        self.raw_path = path
        self.query_string = qs
        self.query = urllib.parse.parse_qs(qs, keep_blank_values=True)
        self.segments = [urllib.parse.unquote(s) for s in path.split("/")[1:]]
        self.path = urllib.parse.unquote(path)
        alt = self.q("$alt") or ""
        self.enum_int = "enum-encoding=int" in alt
        self.principal = None

    def q(self, name, default=None):
        v = self.query.get(name)
        return v[-1] if v else default

    def qall(self, name):
        return self.query.get(name, [])

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def json(self, allow_empty=True):
        if not self.body or not self.body.strip():
            if allow_empty:
                return {}
            raise common.bad_request("Invalid JSON payload received. Unexpected end of string.", "")
        try:
            v = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as e:
            raise common.bad_request("Invalid JSON payload received. %s" % str(e).split(":")[0] + ".", "")
        return v

    def form(self):
        try:
            return {k: v[-1] for k, v in urllib.parse.parse_qs(self.body.decode(), keep_blank_values=True).items()}
        except UnicodeDecodeError:
            return {}


class Route:
    """rpc: name used by counters and faults; flavor: error shape; fn(req) -> (status, body, headers);
    auth: whether an access token is required; rate: (key, limit_name) pairs checked before fn."""

    def __init__(self, rpc, flavor, fn, auth=True, rate=(), service=None):
        self.rpc = rpc
        self.flavor = flavor
        self.fn = fn
        self.auth = auth
        self.rate = rate
        self.service = service


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, world):
        self.world = world
        super().__init__(addr, Handler)


class AbortConnection(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ESF"
    sys_version = ""

    def log_message(self, fmt, *args):  # quiet
        pass

    def date_time_string(self, timestamp=None):
        # Google's Date header follows Google's clock, as its createTime does: the fake's is the
        # virtual one, so a client can tell how far its own clock is from it.
        return super().date_time_string(self.server.world.now() if timestamp is None else timestamp)

    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def _read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            out = bytearray()
            while True:
                line = self.rfile.readline()
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                out += self.rfile.read(n)
                self.rfile.readline()
            return bytes(out)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _abort(self):
        """Drop the connection with a TCP reset, without a reply."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        raise AbortConnection()

    def _send(self, status, body, headers=None):
        headers = dict(headers or {})
        if isinstance(body, (dict, list)):
            data = json.dumps(body, separators=(",", ":")).encode()
            headers.setdefault("Content-Type", "application/json; charset=UTF-8")
        elif isinstance(body, str):
            data = body.encode()
            headers.setdefault("Content-Type", "text/plain; charset=UTF-8")
        else:
            data = body or b""
        if status in (204, 304):
            data = b""
        self.send_response(status, common.HTTP_REASON.get(status))
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        # one write for head and body (with TCP_NODELAY): no Nagle / delayed-ACK stalls on keep-alive
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(data)
        self.flush_headers()

    def _handle(self):
        w = self.server.world
        body = self._read_body()
        host = "http://127.0.0.1:%d" % self.server.server_address[1]
        req = Request(self.command, self.path, self.headers, body, host)
        try:
            if req.path.startswith("/_fake/") or req.path == "/_fake":
                status, out, hdrs = control.handle(w, req)
                self._send(status, out, hdrs)
                return
            route = route_request(w, req)
            if route is None:
                w.count("unknown", req.method, self.path, 404)
                self._send(404, {"error": {"code": 404, "message": "Method not found.", "status": "NOT_FOUND"}})
                return
            entry = w.count(route.rpc, req.method, self.path)
            entry["bytes"] = len(body or b"")
            action, lat = w.pick_fault(route.rpc)
            if lat > 0:
                time.sleep(lat)
            if action and action[0] == "reset":
                entry["status"] = "reset"
                self._abort()
            try:
                if action and action[0] == "error":
                    raise _fault_error(w, req, route, action[1])
                if route.auth:
                    req.principal = w.services["oauth"].authenticate(req, route)
                    w.services["iam"].enforce(route, req)
                for key, limit_name in route.rate:
                    if not w.rate_check((limit_name,) + tuple(key), w.rate_limits.get(limit_name)):
                        raise rate_limited(route, limit_name, key)
                with w.lock:
                    # the world moves lazily: settle every service up to the virtual now first
                    w.services["vertex"].advance()
                    w.services["quotas"].advance()
                    w.services["futures"].advance()
                    status, out, hdrs = route.fn(req)
                    if req.method not in ("GET", "HEAD"):
                        w.mark_dirty()
                    w.services["storage"].after_call(route.rpc, status)
            except ApiError as e:
                status, out, hdrs = e.http, e.render(route.flavor), e.headers
            entry["status"] = status
            if action and action[0] == "drop":
                entry["status"] = "dropped"
                self._abort()
            self._send(status, out, hdrs)
        except AbortConnection:
            raise
        except Exception as e:  # a bug in the fake: report it as a 500 in the generic shape
            import traceback
            traceback.print_exc()
            self._send(500, {"error": {"code": 500, "message": "fake internal error: %r" % e, "status": "INTERNAL"}})

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except AbortConnection:
            self.close_connection = True
        except (ConnectionError, BrokenPipeError):
            self.close_connection = True

    def do_GET(self):
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET


# What each RPC needs, for an injected 403 with reason IAM_PERMISSION_DENIED:
# the service host and the IAM permission Google names in its refusal.
FAULT_PERMISSIONS = {
    "ListQuotaInfos": ("cloudquotas.googleapis.com", "cloudquotas.quotas.get"),
    "GetQuotaInfo": ("cloudquotas.googleapis.com", "cloudquotas.quotas.get"),
    "ListQuotaPreferences": ("cloudquotas.googleapis.com", "cloudquotas.quotas.get"),
    "ListCustomJobs": ("aiplatform.googleapis.com", "aiplatform.customJobs.list"),
    "ListReservations": ("compute.googleapis.com", "compute.reservations.list"),
}
SERVICE_TITLES = {"cloudquotas.googleapis.com": "Cloud Quotas API", "aiplatform.googleapis.com": "Vertex AI API",
                  "compute.googleapis.com": "Compute Engine API"}


def _fault_error(w, req, route, status):
    """An injected error. With faults.reason, a 403 has the body Google sends for it: SERVICE_DISABLED
    (the API is not enabled in the project: google.rpc.ErrorInfo with the service and activationUrl,
    the message naming the project number) or IAM_PERMISSION_DENIED (the permission and resource)."""
    reason = w.faults.get("reason")
    if status != 403 or reason is None:
        return ApiError(status, _fault_message(status), status=common.HTTP_TO_STATUS.get(status, "UNKNOWN"))
    segs = req.segments
    project = segs[segs.index("projects") + 1] if "projects" in segs[:-1] else "unknown"
    host, permission = FAULT_PERMISSIONS.get(route.rpc, (getattr(route.service, "HOST", None) or
                                                         "unknown.googleapis.com", "unknown.permission"))
    info = common.TYPE_PREFIX + "google.rpc.ErrorInfo"
    if reason == "SERVICE_DISABLED":
        num = w.project_number(project)
        url = "https://console.developers.google.com/apis/api/%s/overview?project=%s" % (host, num)
        title = SERVICE_TITLES.get(host, host)
        msg = ("%s has not been used in project %s before or it is disabled. Enable it by visiting %s then retry. "
               "If you enabled this API recently, wait a few minutes for the action to propagate to our systems "
               "and retry." % (title, num, url))
        details = [{"@type": info, "reason": "SERVICE_DISABLED", "domain": "googleapis.com",
                    "metadata": {"service": host, "consumer": "projects/%s" % num, "serviceTitle": title,
                                 "containerInfo": num, "activationUrl": url}},
                   {"@type": common.TYPE_PREFIX + "google.rpc.Help",
                    "links": [{"description": "Google developers console API activation", "url": url}]}]
        return ApiError(403, msg, status="PERMISSION_DENIED", details=details, reason="accessNotConfigured",
                        domain="usageLimits")
    if route.flavor == "compute":
        return ApiError(403, "Required '%s' permission for 'projects/%s'" % (permission, project),
                        status="PERMISSION_DENIED", reason="forbidden")
    resource = "//%s/%s" % (host, "/".join(segs[segs.index("projects"):]) if "projects" in segs else "")
    msg = "Permission '%s' denied on resource '%s' (or it may not exist)." % (permission, resource)
    details = [{"@type": info, "reason": "IAM_PERMISSION_DENIED", "domain": "iam.googleapis.com",
                "metadata": {"permission": permission, "resource": resource[len("//%s/" % host):]}}]
    return ApiError(403, msg, status="PERMISSION_DENIED", details=details)


def _fault_message(status):
    return {429: "Resource has been exhausted (e.g. check quota).",
            500: "Internal error encountered.",
            502: "Bad Gateway",
            503: "The service is currently unavailable.",
            504: "The request timed out. Please try again."}.get(status, "Injected fault.")


def rate_limited(route, limit_name, key):
    if route.flavor == "compute":
        return ApiError(403, "Rate Limit Exceeded", status="PERMISSION_DENIED", reason="rateLimitExceeded",
                        domain="usageLimits")
    project, region = (list(key) + ["", ""])[:2]
    if limit_name == "vertex_creates_per_minute":
        metric = "aiplatform.googleapis.com/custom_job_creation_requests"
        limit = "CustomJobCreationRequestsPerMinutePerProjectPerRegion"
        qname = "Custom job creation requests"
    else:
        metric = "aiplatform.googleapis.com/resource_management_requests"
        limit = "ResourceManagementRequestsPerMinutePerProjectPerRegion"
        qname = "Resource management (CRUD) requests"
    msg = ("Quota exceeded for quota metric '%s' and limit '%s per minute per region' of service "
           "'aiplatform.googleapis.com' for consumer 'project_number:%s'." % (qname, qname, project))
    return common.err("RESOURCE_EXHAUSTED", msg, details=[
        {"@type": common.TYPE_PREFIX + "google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
         "domain": "googleapis.com",
         "metadata": {"service": "aiplatform.googleapis.com", "consumer": "projects/%s" % project,
                      "quota_metric": metric, "quota_limit": limit, "quota_location": region,
                      "quota_limit_value": str(route.service.world.rate_limits.get(limit_name))}},
        {"@type": common.TYPE_PREFIX + "google.rpc.Help",
         "links": [{"description": "Request a higher quota limit.",
                    "url": "https://cloud.google.com/docs/quotas/help/request_increase"}]}])


SERVICES = []


def route_request(w, req):
    for svc in SERVICES:
        r = svc.route(req)
        if r is not None:
            return r
    return None


def build_world(state_file=None, clock="real"):
    w = world_mod.World(state_file, clock)
    del SERVICES[:]
    svcs = [oauth.OAuth(w), iam.Iam(w), quotas.Quotas(w), vertex.Vertex(w), compute.Compute(w),
            futures.FutureReservations(w), storage.Storage(w),
            cloudlogging.Logging(w)]
    for s in svcs:
        w.services[s.NAME] = s
        SERVICES.append(s)
    w.reset()
    w.load_file()
    return w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--state")
    ap.add_argument("--keys", help="PEM RSA private keys to give out before generating any")
    ap.add_argument("--clock", choices=world_mod.CLOCK_MODES, default="real",
                    help="real (default): the virtual clock starts at this machine's time and keeps pace "
                    "with it; frozen: it starts at 2026-01-01T00:00:00Z and moves only when told (tests)")
    args = ap.parse_args(argv)
    w = build_world(args.state, args.clock)
    srv = Server((args.host, args.port), w)
    w.base_url = "http://127.0.0.1:%d" % srv.server_address[1]
    if args.state:
        w.start_saver()
    # Generating a key here costs about a second of CPU; the e2e tests start a fake per
    # test, so they bring keys made by openssl instead (tests/e2e/harness.py).
    if args.keys:
        oauth.preload_keys(args.keys)
    else:
        oauth.start_key_pool()

    def stop(signum, frame):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    t.start()
    tmp = args.ready_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(w.base_url + "\n")
    os.replace(tmp, args.ready_file)
    t.join()
    try:
        w.mark_dirty()
        w.save()
    except OSError:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
