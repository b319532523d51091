"""Test helper: start the fake on a free port and talk to it over one keep-alive connection."""

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
PARENT = "/v1/projects/my-proj/locations/us-central1"


class Fake:
    """clock: the fake's --clock; the tests freeze it at 2026-01-01 so their times are the same every run."""

    def __init__(self, state=None, clock="frozen"):
        self.dir = tempfile.mkdtemp(prefix="fakegcp-test-")
        ready = os.path.join(self.dir, "ready")
        args = [sys.executable, os.path.join(HERE, "fakegcp.py"), "--port", "0", "--ready-file", ready,
                "--clock", clock]
        if state:
            args += ["--state", state]
        self.proc = subprocess.Popen(args)
        deadline = time.time() + 20
        while not os.path.exists(ready):
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("fake did not start")
            time.sleep(0.02)
        with open(ready) as f:
            self.url = f.read().strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        self.conn = None

    def stop(self):
        if self.conn:
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def raw(self, method, path, body=None, headers=None, conn=None):
        """Returns (status, headers dict (lower-case), body bytes)."""
        own = conn is None
        if own:
            if self.conn is None:
                self.conn = self.connect()
            conn = self.conn
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        try:
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
        except (ConnectionError, http.client.HTTPException, OSError):
            if own:
                self.conn.close()
                self.conn = None
            raise
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def call(self, method, path, body=None, token="T", headers=None, query=None):
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query, doseq=True)
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        st, h, data = self.raw(method, path, body, hdrs)
        try:
            return st, json.loads(data) if data else None
        except ValueError:
            return st, data

    def ctl(self, path, body=None, method=None):
        st, data = self.call(method or ("GET" if body is None else "POST"), "/_fake" + path, body, token=None)
        if st != 200:
            raise AssertionError("control %s -> %s %s" % (path, st, data))
        return data


class FakeTestCase(unittest.TestCase):
    """One fake per test class; reset before each test; a static token 'T' registered."""

    @classmethod
    def setUpClass(cls):
        cls.fake = Fake()

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()

    def setUp(self):
        self.fake.ctl("/reset", {})
        self.fake.ctl("/tokens", {"token": "T"})

    def job_body(self, name="train-1", labels=None, strategy=None, accel="NVIDIA_H100_80GB", count=8, **sched):
        ms = {"machineType": "a3-highgpu-8g"}
        if accel:
            ms.update({"acceleratorType": accel, "acceleratorCount": count})
        b = {"displayName": name, "jobSpec": {"workerPoolSpecs": [
            {"containerSpec": {"imageUri": "us-docker.pkg.dev/x/y:z"}, "machineSpec": ms, "replicaCount": "1"}]}}
        if labels:
            b["labels"] = labels
        s = dict(sched)
        if strategy:
            s["strategy"] = strategy
        if s:
            b["jobSpec"]["scheduling"] = s
        return b

    def create(self, **kw):
        st, j = self.fake.call("POST", PARENT + "/customJobs", self.job_body(**kw))
        self.assertEqual(st, 200, j)
        return j

    def advance(self, s):
        return self.fake.ctl("/clock", {"advance_seconds": s})

    def get_job(self, name):
        st, j = self.fake.call("GET", "/v1/" + name)
        self.assertEqual(st, 200, j)
        return j
