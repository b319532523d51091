"""The sandbox a new user starts (tools/sandbox --print), for the end-to-end tests that
run vx as the README and the examples tell them to: its environment, its fake, and vx
(VX_BIN, and vxplan/vxapply beside it) first on PATH. Standard library only."""
import json
import os
import shlex
import subprocess
import time
import urllib.request

from harness import ROOT, VX_BIN, Result

SANDBOX = os.path.join(ROOT, "tools", "sandbox")


def gone(pid):
    """Whether pid has exited (a zombie waiting for its reaper counts as exited)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def user_env(home):
    """The user's own environment: no Google credentials, endpoints or CI variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "CLOUDSDK_", "GCE_", "VX_SANDBOX", "GITHUB_", "GITLAB_", "CI_"))
           and k not in ("VX_ACTOR", "CI")}
    env.update({"HOME": home, "NO_COLOR": "1",
                "GIT_AUTHOR_NAME": "new", "GIT_AUTHOR_EMAIL": "new@example.com",
                "GIT_COMMITTER_NAME": "new", "GIT_COMMITTER_EMAIL": "new@example.com"})
    return env


class Sandbox:
    """tools/sandbox --print --dir TMP/sandbox, its exports applied to the user's environment."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.exports = {}
        base = user_env(tmp)
        cp = subprocess.run([SANDBOX, "--print", "--dir", os.path.join(tmp, "sandbox")], env=base,
                            capture_output=True, text=True, timeout=120)
        if cp.returncode != 0:
            raise RuntimeError("tools/sandbox --print failed: %s" % cp.stderr)
        self.env = dict(base)
        for line in cp.stdout.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["export"]:
                k, _, v = words[1].partition("=")
                self.exports[k] = v
                self.env[k] = v
            elif words[:1] == ["unset"]:
                self.env.pop(words[1], None)
        self.pid = int(self.exports["VX_SANDBOX_PID"])
        self.url = self.exports["VX_SANDBOX_URL"]
        self.env["PATH"] = os.path.dirname(VX_BIN) + os.pathsep + self.env["PATH"]

    def close(self):
        if not gone(self.pid):
            os.kill(self.pid, 15)
        deadline = time.time() + 30
        while not gone(self.pid) and time.time() < deadline:  # not our child: poll for its exit
            time.sleep(0.05)

    def ctl(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + "/_fake" + path, data=data,
                                     method="POST" if body is not None else "GET",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def run(self, args, cwd, timeout=120, env=None):
        """A command as the user types it in the sandbox (args[0] found on its PATH)."""
        e = dict(self.env)
        e.update(env or {})
        cp = subprocess.run(args, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
        return Result(cp).checked()

    def git(self, cwd, *args):
        return subprocess.run(["git", "-C", cwd] + list(args), env=self.env, check=True,
                              capture_output=True, text=True).stdout
