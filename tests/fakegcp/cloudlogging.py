"""Cloud Logging's entries.list as `vx logs` meets it: a training job's log lines.

POST /v2/entries:list with {"resourceNames": ["projects/P"], "filter": ..., "orderBy":
"timestamp asc", "pageSize": N, "pageToken": T}. The filter understood is the one gcloud's
`ai custom-jobs stream-logs` builds: `resource.type="ml_job" AND resource.labels.job_id="ID"`,
optionally `AND timestamp>="RFC3339"` (or `>`); anything else is a 400, as an unknown field is
at Google. Each job of the fake's Vertex has LINES_PER_JOB lines, a second apart from its
createTime, and what a test adds with POST /_fake/logs {"job_id": ID, "entries": [{"textPayload"
or "jsonPayload": {"message"}, "severity", "timestamp" (default: the virtual now)}]}. Entries
carry insertId, timestamp, severity, resource {type, labels {job_id, project_id, task_name}} and
the payload. Pages: pageSize (default 50) entries, then nextPageToken; a pageSize over 1000 or
negative is refused with 400 INVALID_ARGUMENT, as Google's API reference says it is.
"""
import json
import re

import common

LINES_PER_JOB = 3
MAX_PAGE_SIZE = 1000

FILTER = re.compile(r'^resource\.type="ml_job" AND resource\.labels\.job_id="(\d+)"'
                    r'(?: AND timestamp(>=|>)"([0-9TZ:.\-]+)")?$')


class Logging:
    NAME = "logging"

    def __init__(self, world):
        self.world = world
        self.reset()

    def reset(self):
        self.extra = {}   # job id (str) -> [entry]
        self.seq = 0

    def dump(self):
        return {"extra": self.extra, "seq": self.seq}

    def load(self, d):
        self.extra = d.get("extra", {})
        self.seq = d.get("seq", 0)

    def add(self, job_id, entries):
        for e in entries:
            self.seq += 1
            out = {"insertId": "x%08d" % self.seq,
                   "timestamp": e.get("timestamp") or common.fmt_ts(self.world.now()),
                   "severity": e.get("severity", "INFO")}
            if "jsonPayload" in e:
                out["jsonPayload"] = e["jsonPayload"]
            else:
                out["textPayload"] = e.get("textPayload", "")
            self.extra.setdefault(str(job_id), []).append(out)

    def _entries(self, job_id, project):
        vertex = self.world.services["vertex"]
        j = vertex.jobs.get(int(job_id))
        out = []
        if j is not None and j.get("project") == project:
            t0 = common.parse_ts(j["json"]["createTime"])
            for i in range(LINES_PER_JOB):
                out.append({"insertId": "j%s-%d" % (job_id, i), "timestamp": common.fmt_ts(t0 + i + 1),
                            "severity": "INFO", "textPayload": "line %d of job %s" % (i + 1, job_id)})
        out += self.extra.get(str(job_id), [])
        for e in out:
            e["resource"] = {"type": "ml_job", "labels": {"job_id": str(job_id), "project_id": project,
                                                          "task_name": "workerpool0-0"}}
        out.sort(key=lambda e: (common.parse_ts(e["timestamp"]), e["insertId"]))
        return out

    def list_entries(self, req):
        b = req.json()
        names = b.get("resourceNames") or []
        if len(names) != 1 or not names[0].startswith("projects/"):
            raise common.bad_request("resourceNames: one projects/P is what the fake serves", "resourceNames")
        project = self.world.project_id(names[0].split("/", 1)[1])
        m = FILTER.match(b.get("filter", ""))
        if not m:
            raise common.bad_request("Unparseable filter: %s" % b.get("filter", ""), "filter")
        if b.get("orderBy", "timestamp asc") != "timestamp asc":
            raise common.bad_request("orderBy: the fake serves timestamp asc", "orderBy")
        entries = self._entries(m.group(1), project)
        if m.group(3):
            t = common.parse_ts(m.group(3))
            entries = [e for e in entries if (common.parse_ts(e["timestamp"]) >= t if m.group(2) == ">="
                                              else common.parse_ts(e["timestamp"]) > t)]
        size = b.get("pageSize", 0)
        if isinstance(size, str) and re.fullmatch(r"-?[0-9]+", size):
            size = int(size)  # ProtoJSON takes an int32 as a string too
        if not isinstance(size, int) or isinstance(size, bool):
            raise common.bad_request("Invalid value at 'page_size' (TYPE_INT32), %s" % json.dumps(size),
                                     "page_size")
        size = size or 50
        if not 0 < size <= MAX_PAGE_SIZE:
            # Google: "If the value is negative or exceeds 1000, the request is rejected." It
            # publishes the rule, not the words: these are the fake's.
            raise common.bad_request("Invalid page_size %s: it must be between 0 and %d."
                                     % (json.dumps(size), MAX_PAGE_SIZE), "page_size")
        start = int(b.get("pageToken") or 0)
        page = entries[start:start + size]
        out = {"entries": page} if page else {}
        if start + size < len(entries):
            out["nextPageToken"] = str(start + size)
        return 200, out

    def route(self, req):
        from fakegcp import Route
        if req.method == "POST" and req.segments == ["v2", "entries:list"]:
            def run(req):
                status, body = self.list_entries(req)
                return status, body, {}
            return Route("logging.entries.list", "grpc", run, service=self)
        return None
