"""The desktop window driven by real X events: its own Xvfb display, the window opened by
`opscope gui`, and xdotool's XTEST input (the same events a mouse and a keyboard send), xclip
for the system clipboard, ImageMagick's `import` for screenshots. Debian packages only."""
import json
import os
import shutil
import subprocess
import tempfile
import time

# xdotool's key names for the scenario's (X keysyms; the scenario writes them as X does).
KEY_ALIASES = {"Enter": "Return", "Esc": "Escape", "Space": "space", "Tab": "Tab"}


class Desktop:
    def __init__(self, opscope, out, width=1600, height=1000):
        self.opscope, self.out = opscope, out
        self.size = (width, height)
        self.home = tempfile.mkdtemp(prefix="opscope-human-")
        self.live = os.path.join(self.home, "live.json")
        self.xvfb = self.app = self.window = None
        self.log = open(os.path.join(out, "program.log"), "w+")
        self._start_display()

    # [SECTION] The display and the program
    def _start_display(self):
        r, w = os.pipe()
        self.xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "%dx%dx24" % self.size,
                                      "-nolisten", "tcp", "-noreset"], pass_fds=(w,),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        number = b""
        while not number.endswith(b"\n"):
            chunk = os.read(r, 16)
            if not chunk:
                raise RuntimeError("Xvfb did not start")
            number += chunk
        os.close(r)
        self.display = ":" + number.decode().strip()
        self.env = dict(os.environ, DISPLAY=self.display, LIBGL_ALWAYS_SOFTWARE="1", HOME=self.home,
                        XDG_CONFIG_HOME=os.path.join(self.home, ".config"),
                        XDG_DATA_HOME=os.path.join(self.home, ".local", "share"), OPSCOPE_LIVE_STATE=self.live)

    def start(self, args):
        cmd = [self.opscope, "gui", *args]
        self.app = subprocess.Popen(cmd, env=self.env, cwd=self.home, stdin=subprocess.DEVNULL,
                                    stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end and not self.window:
            if self.app.poll() is not None:
                raise RuntimeError("opscope gui exited at start: " + self.output())
            found = self._xdotool("search", "--onlyvisible", "--name", "^opscope$", check=False).split()
            self.window = found[0] if found else None
            time.sleep(0.1)
        if not self.window:
            raise RuntimeError("no opscope window appeared in 60 s")
        # No window manager: the keyboard goes where the focus is set, as a click would set it.
        self._xdotool("windowfocus", "--sync", self.window)
        geo = self._xdotool("getwindowgeometry", "--shell", self.window)
        vals = dict(line.split("=", 1) for line in geo.split())
        self.origin = (int(vals["X"]), int(vals["Y"]))

    def _xdotool(self, *args, check=True):
        p = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise RuntimeError("xdotool " + " ".join(args) + ": " + p.stderr.strip())
        return p.stdout

    def alive(self):
        return self.app is not None and self.app.poll() is None

    def why_dead(self):
        code = self.app.poll() if self.app else None
        return f"exit code {code}; its output ends:\n" + self.output()[-2000:]

    def output(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def state(self):
        try:
            with open(self.live, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    # [SECTION] Input, as a person gives it
    def _at(self, x, y):
        return str(int(self.origin[0] + x)), str(int(self.origin[1] + y))

    def _move(self, x, y):
        # (`mousemove --sync` waits for the pointer to move, which it never does when it is there
        # already: xdotool then gives up after seconds, so a second wheel or click at the same spot
        # cost 15 s.)
        to = self._at(x, y)
        where = dict(line.split("=", 1) for line in self._xdotool("getmouselocation", "--shell").split())
        if (where.get("X"), where.get("Y")) != to:
            self._xdotool("mousemove", "--sync", *to)

    def click(self, x, y):
        # Moved there first and held a moment, as a hand does: ImGui sees the hover, then the press.
        self._move(x, y)
        time.sleep(0.15)
        self._xdotool("click", "1")

    def type_text(self, text):
        # One key event a character at a typist's pace; "\n" as the Return key (xdotool's own
        # "\n" is the Linefeed keysym, which no keyboard's Enter sends).
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if line:
                self._xdotool("type", "--delay", "40", "--", line)
            if i + 1 < len(lines):
                self._xdotool("key", "Return")

    def key(self, combo):
        self._xdotool("key", "--delay", "60", KEY_ALIASES.get(combo, combo))

    commits_per_character = True  # see ime_text

    def ime_text(self, text):
        # X has no input method under Xvfb; xdotool types each character through a keysym it
        # maps for the moment, which reaches the window as the same committed characters.
        self._xdotool("type", "--delay", "60", "--", text)

    def wheel(self, x, y, notches):
        self._move(x, y)
        time.sleep(0.1)
        button = "5" if notches > 0 else "4"  # X's wheel buttons: 4 up, 5 down
        self._xdotool("click", "--repeat", str(abs(notches)), "--delay", "80", button)

    def set_clipboard(self, text):
        p = subprocess.Popen(["xclip", "-selection", "clipboard", "-i", "-loops", "0"], env=self.env,
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p.stdin.write(text.encode())
        p.stdin.close()
        self.clipboard_owner = p  # xclip serves the selection until another program takes it
        time.sleep(0.2)

    def get_clipboard(self):
        p = subprocess.run(["xclip", "-selection", "clipboard", "-o"], env=self.env, capture_output=True, timeout=10)
        return p.stdout.decode(errors="replace") if p.returncode == 0 else None

    def reload(self):
        raise RuntimeError("reload is the browser's; the desktop scenario cannot reload")

    def tab(self, n):
        raise RuntimeError("tabs are the browser's")

    def screenshot(self, path):
        subprocess.run(["import", "-display", self.display, "-window", "root", path], env=self.env, timeout=30,
                       check=True, stderr=subprocess.DEVNULL)

    def stop(self):
        if self.app and self.app.poll() is None:
            self.app.terminate()
            try:
                self.app.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.app.kill()
        if getattr(self, "clipboard_owner", None):
            self.clipboard_owner.kill()
        if self.xvfb:
            self.xvfb.terminate()
            self.xvfb.wait(timeout=10)
        shutil.rmtree(self.home, ignore_errors=True)
