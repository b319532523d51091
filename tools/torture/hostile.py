"""The hostile-server section of make torture: vx (built with ASan+UBSan)
against a scripted proxy in front of the fake that answers one class of bad
reply at a time (the classes issue 13 lists). For each class vx must: raise
no sanitizer report, exit non-zero with a clear error (a "vx: ..." line, no
control characters on the terminal), and take no action on the bad reply (no
create, cancel, insert, delete or patch sent after it).

The proxy forwards every request to the fake (so the world moves as it would)
and rewrites the one reply the scenario targets. Standard library only.
"""
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.parse

import common
from common import Checkout, Fake, make_world, RESERVATIONS, QUOTAS, reservation_yaml, quota_yaml
import harness

JOBS_COLL = re.compile(r"^/v1/projects/[^/]+/locations/[^/]+/customJobs$")
RES_INSERT = re.compile(r"^/compute/v1/projects/[^/]+/zones/[^/]+/reservations$")
RES_AGG = re.compile(r"^/compute/v1/projects/[^/]+/aggregated/reservations$")
QUOTA_COLL = re.compile(r"^/v1/projects/[^/]+/locations/global/quotaPreferences$")
TOKEN = re.compile(r"^/token$")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x9b]")


def is_mutating(method, path):
    p = urllib.parse.urlsplit(path).path
    if method not in ("POST", "PATCH", "PUT", "DELETE"):
        return False
    return not (p.endswith("/token") or p.endswith(":wait") or p.endswith("/wait")
                or ":generateAccessToken" in p)


def job_json(name, job="j00", lineage="x"):
    return {"name": name, "displayName": job, "state": "JOB_STATE_RUNNING",
            "labels": {"vx-stack": common.STACK, "vx-job": job, "vx-lineage": lineage},
            "createTime": "2026-01-01T00:00:00Z", "updateTime": "2026-01-01T00:00:00Z",
            "jobSpec": {"workerPoolSpecs": []}}


# Each scenario: which request it targets (method, path regex), and what the
# proxy answers instead: ("json", status, body) after forwarding or not,
# ("raw", status, headers, bytes), ("drip",) or ("headers", size).
def _empty(upstream):
    return ("raw", 200, {"Content-Type": "application/json"}, b"")


def _rename(new):
    def f(upstream):
        body = json.loads(upstream or b"{}")
        body["name"] = new(body.get("name", ""))
        return ("json", 200, body)
    return f


def _endless(key, repeat=False):
    state = {"n": 0}

    def f(upstream):
        state["n"] += 1
        return ("json", 200, {key: [], "nextPageToken": "page-%d" % (1 if repeat else state["n"])})
    return f


def _list_with(item):
    def f(upstream):
        body = json.loads(upstream or b"{}")
        body.setdefault("customJobs", []).insert(0, item)
        return ("json", 200, body)
    return f


ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m \x9b6n"

# What vx must do with each class:
#  fatal    exit non-zero, last stderr line "vx: ...", nothing mutating sent
#           after the bad reply;
#  recover  (a bad reply to a create) the create is never sent again and
#           nothing is cancelled or deleted; vx either stops with a clear error
#           or learns the truth by listing (the create's outcome is unknown),
#           and the fake then holds exactly one resource for the address;
#  ignore   (a bad item in a list) a "vx: warn:" line on stderr, and no request
#           ever names the item.
SCENARIOS = [
    # name, expect, method, regex, forward first?, every matching request?, reply
    ("token-crlf", "fatal", "POST", TOKEN, False, True,
     lambda up: ("json", 200, {"access_token": "ya29.ok\r\nX-Injected: yes", "expires_in": 3599,
                               "token_type": "Bearer"})),
    ("token-nul", "fatal", "POST", TOKEN, False, True,
     lambda up: ("json", 200, {"access_token": "ya29.ok\u0000tail", "expires_in": 3599,
                               "token_type": "Bearer"})),
    ("create-empty-reply", "recover", "POST", JOBS_COLL, True, False, _empty),
    ("create-name-outside-collection", "recover", "POST", JOBS_COLL, True, False,
     _rename(lambda n: "projects/vx-e2e/zones/us-central1-a/reservations/pool-a")),
    ("create-name-other-project", "recover", "POST", JOBS_COLL, True, False,
     _rename(lambda n: re.sub(r"^projects/[^/]+/", "projects/someone-else/", n))),
    ("create-name-dotdot", "recover", "POST", JOBS_COLL, True, False,
     _rename(lambda n: n + "/../../../../zones/us-central1-a/reservations/pool-a")),
    ("create-name-nul", "recover", "POST", JOBS_COLL, True, False, _rename(lambda n: n + "\u0000:cancel")),
    ("create-name-crlf", "recover", "POST", JOBS_COLL, True, False,
     _rename(lambda n: n + "\r\nX-Injected: yes")),
    ("create-error-escapes", "fatal", "POST", JOBS_COLL, False, True,
     lambda up: ("json", 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                         "message": "bad " + ESC + " request"}})),
    ("list-endless-page-tokens", "fatal", "GET", JOBS_COLL, False, True, _endless("customJobs")),
    ("list-repeating-page-token", "fatal", "GET", JOBS_COLL, False, True,
     _endless("customJobs", repeat=True)),
    ("list-name-outside-collection", "ignore", "GET", JOBS_COLL, True, False,
     _list_with(job_json("projects/vx-e2e/locations/us-central1/operations/4242424242"))),
    ("list-name-nul", "ignore", "GET", JOBS_COLL, True, False,
     _list_with(job_json("projects/123/locations/us-central1/customJobs/4242424242\u0000evil"))),
    ("list-message-escapes", "fatal", "GET", JOBS_COLL, False, True,
     lambda up: ("json", 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": ESC}})),
    ("list-slow-drip", "fatal", "GET", JOBS_COLL, False, True, lambda up: ("drip",)),
    ("list-huge-headers", "fatal", "GET", JOBS_COLL, False, True, lambda up: ("headers", 512 * 1024)),
    ("reservations-endless-page-tokens", "fatal", "GET", RES_INSERT, False, True, _endless("items")),
    ("reservation-insert-op-name-crlf", "recover", "POST", RES_INSERT, True, False,
     _rename(lambda n: n + "\r\nX-Injected: yes")),
    ("reservation-insert-empty-reply", "recover", "POST", RES_INSERT, True, False, _empty),
    ("quotas-endless-page-tokens", "fatal", "GET", QUOTA_COLL, False, True, _endless("quotaPreferences")),
    ("quota-create-name-outside-collection", "recover", "POST", QUOTA_COLL, True, False,
     _rename(lambda n: "projects/vx-e2e/locations/global/services/aiplatform.googleapis.com")),
]
BAD_ID = "4242424242"
# The cause a fatal class must be refused for (in its last stderr line), so
# that it is not some other error that happens to stop vx first.
CAUSE = {
    "token-crlf": "characters a bearer token may not hold",
    "token-nul": "characters a bearer token may not hold",
    "list-endless-page-tokens": "more than 1000 pages",
    "list-repeating-page-token": "repeats the page token",
    "reservations-endless-page-tokens": "more than 1000 pages",
    "quotas-endless-page-tokens": "more than 1000 pages",
    "list-slow-drip": "VX_TIMEOUT",
    "create-error-escapes": "INVALID_ARGUMENT: bad ",
    "list-message-escapes": "INVALID_ARGUMENT: ",
}


class Proxy:
    def __init__(self, upstream, scenario):
        self.up = urllib.parse.urlsplit(upstream)
        self.scenario = scenario
        self.lock = threading.Lock()
        self.bad_served_at = None      # index in self.log of the first bad reply
        self.log = []                  # (method, path, bad?)
        self.stop = threading.Event()
        proxy = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do(self):
                proxy.handle(self)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # vx hanging up on a drip or a huge header is the point, not news

        self.httpd = Server(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def forward(self, h, body):
        c = http.client.HTTPConnection(self.up.hostname, self.up.port, timeout=60)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        c.request(h.command, h.path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        hdrs = [(k, v) for k, v in r.getheaders()
                if k.lower() not in ("content-length", "connection", "transfer-encoding")]
        c.close()
        return r.status, hdrs, data

    def handle(self, h):
        name, expect, method, rx, fwd, every, reply = self.scenario
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else None
        path = urllib.parse.urlsplit(h.path).path
        with self.lock:
            hit = h.command == method and rx.match(path) and (every or self.bad_served_at is None)
            self.log.append((h.command, h.path, bool(hit)))
            if hit and self.bad_served_at is None:
                self.bad_served_at = len(self.log) - 1
        if not hit:
            status, hdrs, data = self.forward(h, body)
            return self.send(h, status, hdrs, data)
        upstream = self.forward(h, body)[2] if fwd else None
        what = reply(upstream)
        if what[0] == "json":
            data = json.dumps(what[2]).encode()
            return self.send(h, what[1], [("Content-Type", "application/json")], data)
        if what[0] == "raw":
            return self.send(h, what[1], list(what[2].items()), what[3])
        if what[0] == "headers":
            data = b"{}"
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("X-Pad", "a" * what[1])
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        # drip: promise a long body and send one byte every half second
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        try:
            h.wfile.write(b"{")
            h.wfile.flush()
            while not self.stop.wait(0.5):
                h.wfile.write(b" ")
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            pass
        h.close_connection = True

    @staticmethod
    def send(h, status, hdrs, data):
        h.send_response(status)
        for k, v in hdrs:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def actions_after_bad(self):
        with self.lock:
            if self.bad_served_at is None:
                return None
            return [(m, p) for m, p, _ in self.log[self.bad_served_at + 1:] if is_mutating(m, p)]

    def requests_after_bad(self):
        with self.lock:
            return [(m, p) for m, p, _ in self.log[self.bad_served_at + 1:]]

    def bad_request(self):
        with self.lock:
            return self.log[self.bad_served_at][:2]


def declaration():
    docs = {"job-00": harness.job_yaml("j00")}
    name, zone = sorted(RESERVATIONS.items())[0]
    docs["res-" + name] = reservation_yaml(name, zone)
    qname = sorted(QUOTAS)[0]
    docs["quota-" + qname] = quota_yaml(qname, *QUOTAS[qname])
    return docs


def run_one(vx, fake, tmp, scenario, say):
    name = scenario[0]
    proxy = Proxy(fake.url, scenario)
    try:
        co = make_world(vx, fake, tmp, "git", declaration())[0]
        key = os.path.join(tmp, "key.json")
        with open(fake.key_file) as f:
            k = json.load(f)
        # The fake checks the assertion's audience against its own URL, so
        # only the scenarios that answer the token request themselves send it
        # to the proxy.
        if scenario[3] is TOKEN:
            k["token_uri"] = proxy.url + "/token"
        with open(key, "w") as f:
            json.dump(k, f)
        os.chmod(key, 0o600)
        env = {"GOOGLE_APPLICATION_CREDENTIALS": key,
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": proxy.url + "/v1/",
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE": proxy.url + "/compute/v1/",
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS": proxy.url + "/v1/",
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": proxy.url + "/storage/v1/",
               "VX_TIMEOUT": "30"}
        t0 = time.time()
        r = co.apply("-parallelism", "1", env=env)
        took = time.time() - t0
    finally:
        proxy.close()
    expect = scenario[1]
    problems = []
    if r.crashed():
        problems.append("crash or sanitizer report")
    if CONTROL.search(r.err) or CONTROL.search(r.out):
        problems.append("control characters reached the terminal")
    last = r.err.rstrip("\n").splitlines()[-1:] or [""]
    if proxy.bad_served_at is None:
        problems.append("the bad reply was never asked for")
    elif expect == "fatal":
        if r.code == 0:
            problems.append("exit 0 after a bad reply")
        if not last[0].startswith("vx: ") or CAUSE.get(name, "") not in last[0]:
            problems.append("no clear error (last stderr line %r, want %r)" % (last[0], CAUSE.get(name)))
        acted = proxy.actions_after_bad()
        if acted:
            problems.append("acted after the bad reply: %s" % acted)
    elif expect == "recover":
        bm, bp = proxy.bad_request()
        coll = urllib.parse.urlsplit(bp).path
        again = [(m, p) for m, p in proxy.actions_after_bad()
                 if (m == bm and urllib.parse.urlsplit(p).path == coll) or m == "DELETE"
                 or ":cancel" in p]
        if again:
            problems.append("sent again or cancelled after the bad reply: %s" % again)
        if r.code != 0 and not last[0].startswith("vx: "):
            problems.append("no clear error (last stderr line %r)" % last[0])
        if JOBS_COLL.match(coll):
            n = len([j for j in fake.jobs() if j.get("labels", {}).get("vx-job") == "j00"])
        elif RES_INSERT.match(coll):
            n = len(fake.list_of("reservations", "reservations"))
        else:
            n = len(fake.list_of("quota-preferences", "quotaPreferences"))
        if n != 1 and not (r.code != 0 and n == 0):
            problems.append("the fake holds %d resources for the address, not 1" % n)
    else:
        if not any(l.startswith("vx: warn:") for l in r.err.splitlines()):
            problems.append("the bad item was ignored without a warning")
        named = [(m, p) for m, p in proxy.requests_after_bad() if BAD_ID in p]
        if named:
            problems.append("requests named the bad item: %s" % named)
    if took > 60:
        problems.append("took %.0f s" % took)
    with open(os.path.join(tmp, "result.txt"), "w") as f:
        f.write("%s\n%r\nproblems: %s\n" % (name, r, problems))
    say("hostile %-40s exit %d in %4.1f s: %s%s" % (
        name, r.code, took, "ok" if not problems else "FAILED: " + "; ".join(problems),
        "" if problems else "  [%s]" % (last[0][-220:].encode("unicode_escape").decode())))
    return not problems, problems + ["stderr: %r" % r.err[-1500:]]


def run_all(vx, out, say, only=None):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    fake = Fake(out)
    results = []
    try:
        for sc in SCENARIOS:
            if only and sc[0] not in only:
                continue
            fake.reset()
            fake.setup({})
            tmp = os.path.join(out, sc[0])
            ok, details = run_one(vx, fake, tmp, sc, say)
            results.append((sc[0], ok, details))
            if ok:
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        fake.close()
    return results


if __name__ == "__main__":
    import sys
    vx = os.path.abspath(os.environ.get("VX_ASAN", os.path.join(common.ROOT, "build", "asan", "vx")))
    res = run_all(vx, os.path.join(common.ROOT, "build", "torture", "hostile"), print,
                  only=sys.argv[1:] or None)
    sys.exit(0 if all(ok for _, ok, _ in res) else 1)
