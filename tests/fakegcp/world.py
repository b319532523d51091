"""The fake's world: one lock, the virtual clock, configuration shared by the services, request
counters, fault and rate-limit settings, and persistence (--state FILE)."""

import collections
import hashlib
import json
import os
import random
import threading
import time

DEFAULT_TIMINGS = {
    "queued_seconds": 5,        # QUEUED -> PENDING
    "pending_seconds": 30,      # PENDING -> RUNNING (capacity permitting)
    "running_seconds": 3600,    # RUNNING -> SUCCEEDED (or the configured failure)
    "cancelling_seconds": 5,    # CANCELLING -> CANCELLED
    "operation_polls": 0,       # GETs of a Vertex/compute operation that still see it running
    "quota_preference_seconds": 0,  # delay before a quota preference is decided
    "provisioning_seconds": 300,  # persistent resource PROVISIONING -> RUNNING (or ERROR)
    "updating_seconds": 60,       # persistent resource UPDATING -> RUNNING
    "rebooting_seconds": 120,     # persistent resource REBOOTING -> RUNNING
    "stopping_seconds": 60,       # persistent resource STOPPING -> gone
}

DEFAULT_RATE_LIMITS = {
    "enabled": True,
    "clock": "real",                  # "real" or "virtual"
    "vertex_requests_per_minute": 600,  # per project and region, every Vertex RPC
    "vertex_creates_per_minute": 60,    # per project and region, CreateCustomJob
    "compute_requests_per_minute": 1500,  # per project, every compute RPC
}

# Where the virtual clock starts (and goes back to on /_fake/reset), by --clock:
# "real": this machine's time, moving at its speed (the sandbox, the demo: vx reads the
# machine's clock too, so a run started seconds ago was started seconds ago);
# "frozen": FROZEN_EPOCH, still until told to move (the tests: the same times every run).
CLOCK_MODES = ("real", "frozen")
FROZEN_EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z

REGIONS = ["us-central1", "us-east1", "us-east4", "us-east5", "us-west1", "us-west4",
           "europe-west1", "europe-west4", "asia-southeast1", "asia-northeast1"]


def project_number_for(project_id):
    """Deterministic 12-digit project number for an id (overridable with /_fake/projects)."""
    if project_id.isdigit():
        return project_id
    h = int(hashlib.sha256(project_id.encode()).hexdigest(), 16)
    return str(100000000000 + h % 899999999999)


class World:
    def __init__(self, state_file=None, clock="real"):
        if clock not in CLOCK_MODES:
            raise ValueError("clock must be one of %s" % ", ".join(CLOCK_MODES))
        self.lock = threading.RLock()
        self.state_file = state_file
        self.clock_mode = clock
        self.services = {}
        self.base_url = ""
        self._dirty = False
        self.reset()

    # ------------------------------------------------------------ state
    def reset(self):
        with self.lock:
            self.clock_anchor = time.time()
            if self.clock_mode == "real":
                self.clock_base = self.clock_anchor
                self.clock_offset = 0.0
                self.clock_speed = 1.0
            else:
                self.clock_base = FROZEN_EPOCH
                self.clock_offset = 0.0
                self.clock_speed = 0.0
            self.timings = dict(DEFAULT_TIMINGS)
            self.rate_limits = dict(DEFAULT_RATE_LIMITS)
            self.rate_windows = collections.defaultdict(collections.deque)
            self.faults = {}
            self.fault_rng = random.Random()
            self.max_page_size = 0  # 0: each API's own maximum; N: pages shorter than asked, as servers may send
            self.counts = collections.Counter()
            self.total = 0
            self.log = collections.deque(maxlen=5000)
            self.projects = {}  # id -> number
            for svc in self.services.values():
                svc.reset()
            self.mark_dirty()

    def project_number(self, project):
        if project.isdigit():
            return project
        n = self.projects.get(project)
        if n is None:
            n = project_number_for(project)
        return n

    def project_id(self, project):
        """Map a number back to an id if known; ids pass through."""
        if project.isdigit():
            for k, v in self.projects.items():
                if v == project:
                    return k
        return project

    # ------------------------------------------------------------ clock
    def now(self):
        t = self.clock_base + self.clock_offset
        if self.clock_speed:
            t += self.clock_speed * (time.time() - self.clock_anchor)
        return t

    def set_clock(self, advance=None, speed=None, set_time=None):
        with self.lock:
            cur = self.now()
            if speed is not None:
                self.clock_offset = cur - self.clock_base
                self.clock_anchor = time.time()
                self.clock_speed = float(speed)
                cur = self.now()
            if set_time is not None:
                if set_time < cur:
                    raise ValueError("the virtual clock cannot go backwards")
                self.clock_offset += set_time - cur
            if advance is not None:
                if advance < 0:
                    raise ValueError("advance_seconds must be >= 0")
                self.clock_offset += advance
            self.mark_dirty()

    # ------------------------------------------------------------ counting
    def count(self, rpc, method, path, status=None):
        with self.lock:
            self.total += 1
            self.counts[rpc] += 1
            entry = {"rpc": rpc, "method": method, "path": path, "real_time": time.time(), "status": status}
            self.log.append(entry)
            return entry

    # ------------------------------------------------------------ faults
    def pick_fault(self, rpc):
        """Returns None or one of ('reset',), ('error', status), and latency seconds."""
        with self.lock:
            f = self.faults
            if not f:
                return None, 0.0
            rng = self.fault_rng
            # slow_ms: per-RPC extra latency U(0, N) ms, whatever `methods` says
            # (slow creates against faults on every RPC, as make torture wants).
            slow = (f.get("slow_ms") or {}).get(rpc, 0)
            extra = rng.uniform(0, slow) / 1000.0 if slow else 0.0
            methods = f.get("methods")
            if methods and rpc not in methods:
                return None, extra
            lat = extra + (f.get("latency_ms", 0) + (rng.uniform(0, f.get("jitter_ms", 0)) if f.get("jitter_ms") else 0)) / 1000.0
            action = None
            if f.get("reset_rate") and rng.random() < f["reset_rate"]:
                action = ("reset",)
            elif f.get("error_rate") and rng.random() < f["error_rate"]:
                statuses = f.get("statuses") or [503]
                action = ("error", rng.choice(statuses))
            elif f.get("drop_after_processing_rate") and rng.random() < f["drop_after_processing_rate"]:
                action = ("drop",)
            if action is not None and "times" in f:
                f["times"] -= 1
                if f["times"] <= 0:
                    self.faults = {}
            return action, lat

    # ------------------------------------------------------------ rate limits
    def rate_check(self, key, limit):
        """Sliding one-minute window; True when the call is allowed (and then recorded)."""
        with self.lock:
            rl = self.rate_limits
            if not rl.get("enabled") or not limit or limit <= 0:
                return True
            t = self.now() if rl.get("clock") == "virtual" else time.time()
            dq = self.rate_windows[key]
            while dq and dq[0] <= t - 60:
                dq.popleft()
            if len(dq) >= limit:
                return False
            dq.append(t)
            return True

    # ------------------------------------------------------------ persistence
    def mark_dirty(self):
        self._dirty = True

    def dump(self):
        with self.lock:
            return {
                "clock": {"base": self.clock_base, "offset": self.now() - self.clock_base,
                          "speed": self.clock_speed},
                "timings": self.timings, "rate_limits": self.rate_limits, "projects": self.projects,
                "services": {k: s.dump() for k, s in self.services.items()},
            }

    def load(self, data):
        with self.lock:
            c = data.get("clock", {})
            self.clock_base = c.get("base", self.clock_base)
            self.clock_offset = c.get("offset", 0.0)
            self.clock_speed = c.get("speed", 0.0)
            self.clock_anchor = time.time()
            # A real clock does not stand still while the fake is stopped: a world saved
            # an hour ago goes on from now (its jobs have moved on meanwhile), never back.
            if self.clock_mode == "real" and self.now() < self.clock_anchor:
                self.clock_offset = self.clock_anchor - self.clock_base
            self.timings.update(data.get("timings", {}))
            self.rate_limits.update(data.get("rate_limits", {}))
            self.projects.update(data.get("projects", {}))
            for k, s in self.services.items():
                if k in data.get("services", {}):
                    s.load(data["services"][k])

    def save(self):
        if not self.state_file:
            return
        with self.lock:
            if not self._dirty:
                return
            data = self.dump()
            self._dirty = False
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.state_file)

    def load_file(self):
        if self.state_file and os.path.exists(self.state_file):
            with open(self.state_file) as f:
                self.load(json.load(f))
            self._dirty = False

    def start_saver(self, interval=0.5):
        def loop():
            while True:
                time.sleep(interval)
                try:
                    self.save()
                except OSError:
                    pass
        t = threading.Thread(target=loop, daemon=True)
        t.start()
