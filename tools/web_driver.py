#!/usr/bin/env python3
"""Runs opscope's browser build in headless Chromium, for tools/web_run.sh and the browser
tests (tests/web/). Python's standard library only: the site is served from a thread of this
process on a free 127.0.0.1 port, and Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages separated by NUL bytes on file descriptors 3 and 4).
Debian's chromium draws WebGL2 on SwiftShader; no browser is ever downloaded."""
import base64
import collections
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

CHROMIUM = os.environ.get("OPSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader", "--disable-gpu",
    "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]


class PageError(Exception):
    pass


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, and a file's compressed copy beside it (opscope.wasm.br, .gz: the build
    writes them) where the browser accepts that encoding, as a web server configured for
    precompressed files does (nginx's gzip_static, Apache's MultiViews)."""
    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map,
                          **{".wasm": "application/wasm", ".js": "text/javascript", ".data": "application/octet-stream"})
    ENCODINGS = (("br", ".br"), ("gzip", ".gz"))

    def send_head(self):
        path = self.translate_path(self.path)
        accepted = {t.split(";")[0].strip() for t in self.headers.get("Accept-Encoding", "").split(",")}
        for encoding, suffix in self.ENCODINGS:
            if encoding in accepted and os.path.isfile(path) and os.path.isfile(path + suffix):
                f = open(path + suffix, "rb")
                st = os.fstat(f.fileno())
                self.send_response(200)
                self.send_header("Content-Type", self.guess_type(path))
                self.send_header("Content-Encoding", encoding)
                self.send_header("Content-Length", str(st.st_size))
                self.send_header("Vary", "Accept-Encoding")
                self.send_header("Last-Modified", self.date_time_string(st.st_mtime))
                self.end_headers()
                return f
        return super().send_head()


class _QuietHandler(SiteHandler):
    def log_message(self, *args):
        pass


class SiteServer:
    """The site folder over HTTP on 127.0.0.1 (a free port), in a thread."""

    def __init__(self, site_dir):
        handler = functools.partial(_QuietHandler, directory=site_dir)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, query=""):
        return f"http://127.0.0.1:{self.port}/index.html" + (("?" + query) if query else "")

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Browser:
    """One headless Chromium with one page, driven over a DevTools pipe."""

    def __init__(self, width=1600, height=1000):
        self.profile = tempfile.mkdtemp(prefix="opscope-chromium-")
        r3, w3 = os.pipe()  # we write commands: Chromium reads fd 3
        r4, w4 = os.pipe()  # Chromium writes answers on fd 4
        # The child gets the pipe's ends as fds 3 and 4 (dup2 clears close-on-exec there; every
        # other descriptor of this process is close-on-exec, Python's default).
        self.proc = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=lambda: (os.dup2(r3, 3), os.dup2(w4, 4)))
        os.close(r3)
        os.close(w4)
        self.out = os.fdopen(w3, "wb", buffering=0)
        self.inp = os.fdopen(r4, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.unanswered = set()  # ids of commands sent without waiting (send)
        self.size = (width, height)
        self.events = collections.deque(maxlen=1000)  # the latest events, for debugging
        self.console = []     # (type, text) of every console message
        self.exceptions = []  # uncaught exceptions' texts
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.attach(page["targetId"])

    def attach(self, target_id):
        """A DevTools session on the page `target_id` (flattened on this pipe), set up as every
        page here is: a 1:1 viewport of the window's size, focused (the Clipboard API needs a
        focused page; headless pages are not); returns the session's id."""
        sid = self.call("Target.attachToTarget", targetId=target_id, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=sid)
        self.call("Emulation.setDeviceMetricsOverride", session=sid, width=self.size[0], height=self.size[1],
                  deviceScaleFactor=1, mobile=False)
        self.call("Emulation.setFocusEmulationEnabled", session=sid, enabled=True)
        return sid

    def new_page(self, url="about:blank"):
        """Another tab of this browser (the same profile: IndexedDB, clipboard); calls made with
        session=True go to it from now on (set .session to go back). Returns its session's id."""
        target = self.call("Target.createTarget", url=url)["targetId"]
        self.session = self.attach(target)
        return self.session

    # [SECTION] The protocol
    def _read_message(self, timeout):
        deadline = time.time() + timeout
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise PageError("Chromium did not answer in time")
            chunk = os.read(self.inp.fileno(), 1 << 20)
            if not chunk:
                raise PageError("Chromium closed its DevTools pipe (did it crash?)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def _handle_event(self, m):
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.console.append((p.get("type"), text))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.exceptions.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error":
                self.console.append(("error", e.get("text", "")))
        self.events.append(m)

    def _write(self, method, session, params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:  # True: the current page's; or a session's id
            msg["sessionId"] = self.session if session is True else session
        self.out.write(json.dumps(msg).encode() + b"\0")
        return self.next_id

    def call(self, method, session=False, timeout=60, **params):
        sent = self._write(method, session, params)
        while True:
            m = self._read_message(timeout)
            if m.get("id") == sent:
                if "error" in m:
                    raise PageError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            if m.get("id") in self.unanswered:
                self.unanswered.discard(m["id"])
                if "error" in m:  # a command sent earlier failed: said at the next call
                    raise PageError(f"an earlier command: {m['error'].get('message')}")
                continue
            self._handle_event(m)

    def send(self, method, session=False, **params):
        """A command sent without waiting for Chromium's answer: input events, as a hand gives
        them, do not wait for the page to have handled the one before (Input.dispatchKeyEvent
        answers only once the page has). Its answer is read, and an error raised, by a later call."""
        self.unanswered.add(self._write(method, session, params))

    def pump(self, seconds):
        """Reads events for a while (console messages arrive as events)."""
        end = time.time() + seconds
        while time.time() < end:
            self.evaluate("0")
            time.sleep(0.05)

    # [SECTION] The page
    def evaluate(self, expression, await_promise=False, timeout=60):
        r = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                      returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise PageError(d.get("exception", {}).get("description") or d.get("text"))
        return r.get("result", {}).get("value")

    def before_load(self, source):
        """JavaScript run in the page before its own scripts, on every load."""
        self.call("Page.addScriptToEvaluateOnNewDocument", session=True, source=source)

    def navigate(self, url):
        self.call("Page.navigate", session=True, url=url)

    def reload(self):
        self.call("Page.reload", session=True)

    def wait_for(self, expression, timeout, what):
        end = time.time() + timeout
        while time.time() < end:
            try:
                v = self.evaluate(expression)
            except PageError:
                v = None
            if v not in (None, False):
                return v
            if self.exceptions:
                raise PageError("the page threw: " + self.exceptions[0])
            time.sleep(0.1)
        raise PageError(f"timed out after {timeout} s waiting for {what}")

    def read_file(self, path):
        """A file of the program's file system, as bytes."""
        b64 = self.evaluate(
            "(() => { const b = FS.readFile(%s); let s = ''; for (let i = 0; i < b.length; i += 0x8000)"
            " s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000)); return btoa(s); })()" % json.dumps(path))
        return base64.b64decode(b64)

    def screenshot(self):
        return base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"])

    def console_errors(self):
        return [t for (kind, t) in self.console if kind == "error"] + self.exceptions

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


@contextlib.contextmanager
def open_page(site_dir, width=1600, height=1000):
    """The site folder served on 127.0.0.1 and a fresh headless Chromium (a new profile: a cold
    cache): yields (browser, server); both are closed after."""
    server = SiteServer(site_dir)
    try:
        browser = Browser(width, height)
        try:
            yield browser, server
        finally:
            browser.close()
    finally:
        server.close()


def preload_script(files):
    """JavaScript that writes `files` ({path in the page: bytes}) into the program's file system
    before main() runs (site.js runs Module.preRun)."""
    entries = {p: base64.b64encode(b).decode() for p, b in files.items()}
    return ("window.opscopePreload = %s;" % json.dumps(entries))


def open_files_script(files):
    """JavaScript that opens `files` ({name: bytes}) as if the user chose them in File > Open's
    chooser (site.js's opscope.openFile, before main() runs): the program opens them in its
    first frames."""
    entries = {n: base64.b64encode(b).decode() for n, b in files.items()}
    return ("window.opscopeOpen = %s;" % json.dumps(entries))


def argv_query(argv):
    return "argv=" + urllib.parse.quote(json.dumps(argv))


def run_script(site_dir, text, timeout, what="the script"):
    """`opscope run` of the script `text` in a fresh page of the site: (exit code, the page's
    console as (kind, text) pairs)."""
    with open_page(site_dir) as (browser, server):
        browser.before_load(preload_script({"/home/web_user/script.ops": text.encode()}))
        browser.navigate(server.url(argv_query(["run", "/home/web_user/script.ops"])))
        code = browser.wait_for("opscope.exitCode !== null ? {c: opscope.exitCode} : null", timeout, what)["c"]
        browser.pump(0.3)  # the last lines of output
        return code, list(browser.console)


def serve(site_dir, port):
    """tools/serve_web.sh: the site on http://127.0.0.1:PORT/ until Ctrl-C."""
    handler = functools.partial(SiteHandler, directory=site_dir)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 4 or sys.argv[1] != "serve":
        sys.exit("usage: web_driver.py serve SITE_DIR PORT")
    serve(sys.argv[2], int(sys.argv[3]))
