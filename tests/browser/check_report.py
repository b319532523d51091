"""Loads a vx report page in headless Chromium and refuses it when it is not what the page promises.

usage: python3 tests/browser/check_report.py HTML EXPECTED SCREENSHOT.png

EXPECTED is the number of attempts (bars) the page must draw, or the report's JSON document
(`vx report -format json`), whose `runs` list gives it. The page is loaded four ways in one
browser: scripts on (light), scripts on (dark), scripts off, print media at A4's printable width.
It is refused (exit 1, one line per problem) on

  * a console error, an uncaught exception or an error the browser logs;
  * any request other than the file itself (Network.requestWillBeSent); every http, https,
    ws and ftp URL is blocked first, so the check never touches the network;
  * a count of elements carrying both data-address and data-attempt other than EXPECTED, in
    any of the four loads;
  * a bar without a box (hidden), or, in print, one that reaches past the page's width;
  * dark and light drawn with the same background.

The screenshot (PNG) is of the light page at 1100 CSS pixels wide.

Chromium is driven through the DevTools protocol over --remote-debugging-pipe: the browser
reads commands from its fd 3 and writes results and events to its fd 4, each message one JSON
object ended by a NUL byte. Python's standard library only: no websocket, no npm.
"""
import base64
import fcntl
import json
import os
import pathlib
import select
import shutil
import signal
import sys
import tempfile
import time

WAIT = 60.0  # seconds any one answer or event may take before the check fails
BLOCKED = ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]
BARS = "[data-address][data-attempt]"
A4_PRINT_WIDTH = 703  # 210 mm less the page's 2 x 12 mm margins, at 96 CSS pixels per inch


class BrowserError(Exception):
    pass


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise BrowserError("no chromium found: install Debian's chromium package (make deps does, as root)")


class Chromium:
    """One headless browser; many pages can be checked in it, one after the other."""

    def __init__(self, binary=None):
        binary = binary or find_chromium()
        self.profile = tempfile.mkdtemp(prefix="vx-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        # The browser's fd 3 is the read end of our command pipe, its fd 4 the write end of the
        # event pipe. Our ends go above 10 first, so dup2 onto 3 and 4 clobbers nothing.
        cmd_r, cmd_w = (self._high(fd) for fd in os.pipe())
        ev_r, ev_w = (self._high(fd) for fd in os.pipe())
        args = [binary, "--headless", "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--force-color-profile=srgb",
                "--disable-features=Translate,MediaRouter,OptimizationHints", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                   (os.POSIX_SPAWN_DUP2, 1, 2),
                   (os.POSIX_SPAWN_DUP2, cmd_r, 3),
                   (os.POSIX_SPAWN_DUP2, ev_w, 4)]
        self.pid = os.posix_spawn(binary, args, os.environ, file_actions=actions)
        os.close(cmd_r)
        os.close(ev_w)
        self.w, self.r = cmd_w, ev_r
        self.buf = b""
        self.next_id = 0
        self.events = []  # every event received, in order: (sessionId, method, params)
        self.closed = False
        self.page = None  # one tab for every check: a new one costs a renderer's start
        try:
            self.call("Browser.getVersion")
        except BaseException:
            self.close()  # a browser that never answered is not left running
            raise

    @staticmethod
    def _high(fd):
        new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return new

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer within %.0f s" % WAIT)
            ready, _, _ = select.select([self.r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed its pipe: " + self.log_tail())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        """Sends one command and returns its result, keeping the events that arrive meanwhile."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.w, data):]
        deadline = time.monotonic() + WAIT
        while True:
            m = self._read_message(deadline)
            if "id" not in m:
                self.events.append((m.get("sessionId"), m["method"], m.get("params", {})))
            elif m["id"] == self.next_id:
                if "error" in m:
                    raise BrowserError("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})

    def wait_event(self, session, method, start):
        """Returns the first event `method` of `session` at or after index `start` of self.events."""
        deadline = time.monotonic() + WAIT
        while True:
            for i in range(start, len(self.events)):
                if self.events[i][0] == session and self.events[i][1] == method:
                    return i
            start = len(self.events)
            m = self._read_message(deadline)
            if "id" not in m:
                self.events.append((m.get("sessionId"), m["method"], m.get("params", {})))

    def log_tail(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-2000:] or "(it wrote nothing)"
        except OSError:
            return "(no log)"

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.call("Browser.close")
        except (BrowserError, OSError, ValueError):
            os.kill(self.pid, signal.SIGKILL)
        os.close(self.w)
        os.close(self.r)
        os.waitpid(self.pid, 0)
        shutil.rmtree(self.profile, ignore_errors=True)


def page_problems(events, session, url):
    """What the events of one load say is wrong: errors, exceptions, requests elsewhere."""
    problems = []
    for sid, method, p in events:
        if sid != session:
            continue
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            problems.append("console.%s: %s" % (p["type"], args))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            problems.append("exception: %s" % d.get("exception", {}).get("description", d.get("text", "")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            problems.append("browser error (%s): %s" % (e.get("source"), e.get("text")))
        elif method == "Network.requestWillBeSent":
            req = p.get("request", {}).get("url", "")
            if req.split("#", 1)[0] != url:
                problems.append("request other than the file: %s" % req)
    return problems


class Page:
    def __init__(self, browser):
        self.b = browser
        self.target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable", "DOM.enable"):
            self.call(m)
        self.call("Network.setBlockedURLs", {"urls": BLOCKED})

    def call(self, method, params=None):
        return self.b.call(method, params, self.session)

    def load(self, url):
        """Navigates and waits for the load event."""
        start = len(self.b.events)
        self.call("Page.navigate", {"url": url})
        self.b.wait_event(self.session, "Page.loadEventFired", start)

    def bars(self):
        """The bars' boxes, found through the DOM (so they count with scripts off too)."""
        root = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = self.call("DOM.querySelectorAll", {"nodeId": root, "selector": BARS})["nodeIds"]
        boxes = []
        for n in nodes:
            try:
                q = self.call("DOM.getBoxModel", {"nodeId": n})["model"]["border"]
                xs, ys = q[0::2], q[1::2]
                boxes.append((min(xs), min(ys), max(xs), max(ys)))
            except BrowserError:
                boxes.append(None)  # no layout: not drawn
        return boxes

    def reset(self):
        """Back to a blank page, scripts on, screen media, no leftover from the page before."""
        start = len(self.b.events)
        self.call("Emulation.setScriptExecutionDisabled", {"value": False})
        self.call("Emulation.setEmulatedMedia", {"media": "", "features": []})
        self.call("Page.navigate", {"url": "about:blank"})
        self.b.wait_event(self.session, "Page.loadEventFired", start)


def bar_problems(boxes, expected, where, max_right=None):
    problems = []
    if len(boxes) != expected:
        problems.append("%s: %d elements with data-address and data-attempt, expected %d" % (where, len(boxes), expected))
    hidden = sum(1 for b in boxes if b is None or b[2] - b[0] <= 0 or b[3] - b[1] <= 0)
    if hidden:
        problems.append("%s: %d bars have no box (not drawn)" % (where, hidden))
    if max_right is not None:
        cut = sum(1 for b in boxes if b is not None and (b[0] < 0 or b[2] > max_right + 0.5))
        if cut:
            problems.append("%s: %d bars reach past the page width (%d px)" % (where, cut, max_right))
    return problems


def check(browser, html, expected, screenshot=None):
    """Every problem of the page at path html (a list of lines; empty when it passes)."""
    url = pathlib.Path(html).resolve().as_uri()
    if browser.page is None:
        browser.page = Page(browser)
    page = browser.page
    start = len(browser.events)
    problems = []
    try:
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        light = {"media": "screen", "features": [{"name": "prefers-color-scheme", "value": "light"}]}
        dark = {"media": "screen", "features": [{"name": "prefers-color-scheme", "value": "dark"}]}
        bg = {"expression": "getComputedStyle(document.body).backgroundColor", "returnByValue": True}

        page.call("Emulation.setEmulatedMedia", light)
        page.load(url)
        problems += bar_problems(page.bars(), expected, "scripts on")
        light_bg = page.call("Runtime.evaluate", bg)["result"].get("value")
        if screenshot:
            shot = page.call("Page.captureScreenshot", {"format": "png"})
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        page.call("Emulation.setEmulatedMedia", dark)
        dark_bg = page.call("Runtime.evaluate", bg)["result"].get("value")
        if light_bg == dark_bg:
            problems.append("dark: the background is %s in light and dark alike" % light_bg)

        page.call("Emulation.setEmulatedMedia", light)
        page.call("Emulation.setScriptExecutionDisabled", {"value": True})
        page.load(url)
        problems += bar_problems(page.bars(), expected, "scripts off")

        page.call("Emulation.setEmulatedMedia", {"media": "print"})
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": A4_PRINT_WIDTH, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        problems += bar_problems(page.bars(), expected, "print", max_right=A4_PRINT_WIDTH)
        # Every event of the page up to here counts, during the loads and after them (a late
        # request, an error on a timer): this answer comes after all those sent before it.
        page.call("DOM.getDocument", {"depth": 0})
        problems = page_problems(browser.events[start:], page.session, url) + problems
    finally:
        page.reset()
    return problems


def expected_bars(arg):
    if arg.endswith(".json"):
        with open(arg) as f:
            return len(json.load(f)["runs"])
    return int(arg)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    html, expected, png = argv[1], expected_bars(argv[2]), argv[3]
    try:
        browser = Chromium()
        try:
            problems = check(browser, html, expected, png)
        finally:
            browser.close()
    except BrowserError as e:
        print("check_report: %s: %s" % (html, e))
        return 1
    for p in problems:
        print("check_report: %s: %s" % (html, p))
    if problems:
        return 1
    print("check_report: %s: ok (%d bars with scripts on and off and in print, no console error, "
          "no request; screenshot %s)" % (html, expected, png))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
