"""A small client of `opscope class` for the tests and the bench: standard library only."""
import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def init_class(opscope, folder, name, roster=None):
    cmd = [opscope, "class", "init", folder, "--name", name] + (["--roster", roster] if roster else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    key = re.search(r"^teacher key: (\S+)$", out, re.M)
    code = re.search(r"^class code: (\S+)$", out, re.M)
    assert key and code, "init printed no key or code:\n" + out
    return key.group(1), code.group(1)


class Server:
    """`opscope class serve` on a free loopback port; started, killed, restarted."""

    def __init__(self, opscope, folder, extra=()):
        self.cmd = [opscope, "class", "serve", folder, "--port", str(free_port()), "--host", "127.0.0.1", *extra]
        self.port = int(self.cmd[self.cmd.index("--port") + 1])
        self.proc = None
        self.log = []

    def start(self, timeout=30):
        # Unbuffered: select() sees what Python has not read yet.
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        deadline = time.time() + timeout
        want = "serving on http://127.0.0.1:%d" % self.port
        pending = b""
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self.log.append(line.decode("utf-8", "replace") + "\n")
                if self.log[-1].strip() == want:
                    threading.Thread(target=self._drain, daemon=True).start()
                    return self
        raise AssertionError("the server did not print '%s':\n%s" % (want, "".join(self.log)))

    def _drain(self):
        """Keeps reading the server's output (its log), so that it never blocks on a full pipe."""
        out = self.proc.stdout
        while True:
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                return
            self.log.append(chunk.decode("utf-8", "replace"))

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()


def request(port, method, path, body=None, token=None, raw=None, timeout=10):
    """(status, parsed JSON or text, headers). `raw`: bytes sent as the body as they are."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    if data is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        text = r.read().decode("utf-8", "replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        return r.status, parsed, dict(r.getheaders())
    finally:
        conn.close()


def join(port, code, name):
    status, body, _ = request(port, "POST", "/api/join", {"class_code": code, "name": name})
    assert status == 200, "join %r: %s %s" % (name, status, body)
    return body["student_token"]


def wait_graded(port, key, attempts, timeout):
    """The summary once `attempts` are stored and none is pending, within `timeout` seconds."""
    deadline = time.time() + timeout
    summary = None
    while time.time() < deadline:
        status, summary, _ = request(port, "GET", "/api/teacher/summary", token=key)
        assert status == 200, summary
        if summary["attempts"] >= attempts and summary["pending"] == 0:
            return summary
        time.sleep(0.2)
    raise AssertionError("not all graded in %d s: %s" % (timeout, json.dumps(summary)[:2000]))


def read(path):
    with open(path) as f:
        return f.read()


def here(*parts):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)
