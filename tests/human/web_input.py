"""The site driven by a person's input in headless Chromium, for human.py: the site served on
127.0.0.1, Chromium's DevTools protocol on a pipe (tools/web_driver.py), and its Input domain,
whose events are the ones a mouse, a keyboard and an input method give a page (they go through
the browser's own event handling: focus, default actions such as Ctrl+V's paste event).

What it sends, as a person's hardware would:
- click: mouseMoved, then mousePressed and mouseReleased (left button, clickCount 1) at the
  canvas's pixel (the canvas fills the page at 0,0; the viewport is 1:1, deviceScaleFactor 1).
- type: per character keyDown (with its text, so Chrome makes the keypress) and keyUp, with the
  US layout's key, code and windowsVirtualKeyCode, Shift held for shifted characters; "\\n" is
  the Enter key. key: the same for one combination, modifiers pressed first.
- ime: Input.insertText, what an input method's commit is (no key events).
- wheel: mouseWheel with deltaY 100 a notch (down positive), Chrome's pixels for a notch on
  Windows; the page sees deltaY 100 and wheelDeltaY -120, one notch. (What a notch scrolls in
  pixels differs by system and browser; the site counts notches from wheelDeltaY or deltaMode,
  site.js: notches.)
- clipboard: the browser's own (Browser.grantPermissions, then navigator.clipboard in the page).
- reload: Page.reload; tab N: another page of the same browser and profile (one IndexedDB),
  each with its own DevTools session; the driver talks to the tab last named.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import web_driver  # noqa: E402

SHIPPED = "/opscope"        # where the site packs the source tree's lessons/ and assets/ (cmake/web.cmake)
WHEEL_NOTCH_PX = 100
LOAD_S = 180                # a cold start: the download, WebAssembly's compile, the first frame on SwiftShader
UNRESPONSIVE_S = 30         # a page that answers nothing for this long has a blocked main thread
# Keys are pressed and released at once, as xdotool does on the desktop: a press shorter than a
# frame must still reach the program. OPSCOPE_HUMAN_KEY_HOLD=frame holds each key until the page
# has drawn a frame, as a person's 100 ms press does at a good frame rate.
KEY_HOLD_FRAME = os.environ.get("OPSCOPE_HUMAN_KEY_HOLD") == "frame"

MODIFIERS = {  # name: (key, code, keyCode, the protocol's modifier bit)
    "alt": ("Alt", "AltLeft", 18, 1), "ctrl": ("Control", "ControlLeft", 17, 2), "control": ("Control", "ControlLeft", 17, 2),
    "super": ("Meta", "MetaLeft", 91, 4), "meta": ("Meta", "MetaLeft", 91, 4), "shift": ("Shift", "ShiftLeft", 16, 8),
}
NAMED_KEYS = {  # X keysym (the scenario's names): (key, code, keyCode, text)
    "Return": ("Enter", "Enter", 13, "\r"), "Escape": ("Escape", "Escape", 27, ""), "BackSpace": ("Backspace", "Backspace", 8, ""),
    "Tab": ("Tab", "Tab", 9, ""), "space": (" ", "Space", 32, " "), "Delete": ("Delete", "Delete", 46, ""),
    "Home": ("Home", "Home", 36, ""), "End": ("End", "End", 35, ""), "Left": ("ArrowLeft", "ArrowLeft", 37, ""),
    "Up": ("ArrowUp", "ArrowUp", 38, ""), "Right": ("ArrowRight", "ArrowRight", 39, ""),
    "Down": ("ArrowDown", "ArrowDown", 40, ""), "Page_Up": ("PageUp", "PageUp", 33, ""),
    "Page_Down": ("PageDown", "PageDown", 34, ""), "Insert": ("Insert", "Insert", 45, ""),
    **{f"F{i}": (f"F{i}", f"F{i}", 111 + i, "") for i in range(1, 13)},
}
KEY_ALIASES = {"Enter": "Return", "Esc": "Escape", "Space": "space", "Backspace": "BackSpace", "PageUp": "Page_Up",
               "PageDown": "Page_Down", "minus": "-", "equal": "=", "plus": "+", "period": ".", "comma": ",", "slash": "/"}
# The US layout's other printable keys: character: (code, keyCode, shifted)
PUNCTUATION = {
    "-": ("Minus", 189, False), "_": ("Minus", 189, True), "=": ("Equal", 187, False), "+": ("Equal", 187, True),
    "[": ("BracketLeft", 219, False), "{": ("BracketLeft", 219, True), "]": ("BracketRight", 221, False),
    "}": ("BracketRight", 221, True), "\\": ("Backslash", 220, False), "|": ("Backslash", 220, True),
    ";": ("Semicolon", 186, False), ":": ("Semicolon", 186, True), "'": ("Quote", 222, False), '"': ("Quote", 222, True),
    ",": ("Comma", 188, False), "<": ("Comma", 188, True), ".": ("Period", 190, False), ">": ("Period", 190, True),
    "/": ("Slash", 191, False), "?": ("Slash", 191, True), "`": ("Backquote", 192, False), "~": ("Backquote", 192, True),
    **{c: ("Digit" + d, 48 + int(d), True) for c, d in zip("!@#$%^&*()", "1234567890")},
}


def char_key(c):
    """(key, code, keyCode, shifted) of a character typed on a US keyboard; a character no key
    types (张) comes with no code, as a layout of its own would send it."""
    if "a" <= c <= "z":
        return c, "Key" + c.upper(), ord(c.upper()), False
    if "A" <= c <= "Z":
        return c, "Key" + c, ord(c), True
    if "0" <= c <= "9":
        return c, "Digit" + c, ord(c), False
    if c == " ":
        return " ", "Space", 32, False
    if c in PUNCTUATION:
        code, kc, shifted = PUNCTUATION[c]
        return c, code, kc, shifted
    return c, "", 0, False


class Web:
    def __init__(self, site_dir, out, width=1600, height=1000):
        if not os.path.isfile(os.path.join(site_dir, "index.html")):
            raise RuntimeError(f"no site in {site_dir}: build it with tools/web_build.sh")
        self.out = out
        self.server = web_driver.SiteServer(site_dir)
        self.browser = web_driver.Browser(width, height)
        self.tabs = {1: self.browser.session}
        self.current = 1
        self.urls = {}          # tab: the address it was opened at
        self.preloads = set()   # (session, path) of files put in place before load
        self.unresponsive_since = None

    # [SECTION] The page and the program in it
    def _call(self, method, **params):
        return self.browser.call(method, session=True, **params)

    def _eval(self, expression, timeout=20, await_promise=False):
        return self.browser.evaluate(expression, await_promise=await_promise, timeout=timeout)

    def _page_arg(self, arg):
        """A path of the source tree as the page sees it: the shipped lessons and assets are
        packed at /opscope; any other file is put in the page's file system at its own path."""
        if not arg.startswith(ROOT + "/"):
            return arg
        rel = os.path.relpath(arg, ROOT)
        if rel.split(os.sep)[0] in ("lessons", "assets"):
            return SHIPPED + "/" + rel
        if os.path.isfile(arg) and (self.browser.session, arg) not in self.preloads:
            with open(arg, "rb") as f:
                self.browser.before_load(web_driver.preload_script({arg: f.read()}))
            self.preloads.add((self.browser.session, arg))
        return arg

    def start(self, args):
        argv = ["gui", *[self._page_arg(a) for a in args]]
        url = self.server.url(web_driver.argv_query(argv) + "&live_state=1")
        self.urls[self.current] = url
        self._eval("window.__humanOldPage = true")  # the page being left still answers for a moment
        # A file chooser the page opens is answered by `choose_file`, as a person picks a file.
        self._call("Page.setInterceptFileChooserDialog", enabled=True)
        self._call("Page.navigate", url=url)
        self._wait_loaded("opscope gui " + " ".join(args), old_marker=True)

    def _wait_loaded(self, what, old_marker=False):
        end = time.time() + LOAD_S
        fresh = "!window.__humanOldPage && " if old_marker else ""
        while time.time() < end:
            try:
                if self._eval(f"{fresh}typeof opscope !== 'undefined' && opscope.liveState !== null", timeout=30):
                    return
            except web_driver.PageError:
                pass
            if not self.alive():
                raise RuntimeError(f"the page failed while loading {what}: " + self.why_dead())
            time.sleep(0.2)
        raise RuntimeError(f"{what}: no state published {LOAD_S} s after loading the page")

    def choose_file(self, paths):
        """Picks `paths` in the file chooser the page opened (Page.fileChooserOpened), which
        gives the page's <input type=file> those files and its change event, as a person's pick."""
        end = time.time() + 20
        while time.time() < end:
            opened = [m for m in self.browser.events if m.get("method") == "Page.fileChooserOpened" and
                      m.get("sessionId") == self.browser.session]
            if opened:
                self.browser.events.remove(opened[-1])
                self._call("DOM.setFileInputFiles", files=paths, backendNodeId=opened[-1]["params"]["backendNodeId"])
                return
            self.browser.pump(0.1)
        raise RuntimeError("the page opened no file chooser")

    def state(self):
        try:
            text = self._eval("typeof opscope === 'undefined' ? null : opscope.liveState")
            self.unresponsive_since = None
        except web_driver.PageError:
            self.unresponsive_since = self.unresponsive_since or time.time()
            return None
        return json.loads(text) if text else None

    def _page_status(self):
        try:
            return self._eval("typeof opscope === 'undefined' ? {} : {exit: opscope.exitCode, errors: opscope.errors}")
        except web_driver.PageError:
            self.unresponsive_since = self.unresponsive_since or time.time()
            return None

    def alive(self):
        if self.browser.proc.poll() is not None:
            return False
        st = self._page_status()
        if st is None:
            return time.time() - self.unresponsive_since < UNRESPONSIVE_S
        self.unresponsive_since = None
        return st.get("exit") is None and not st.get("errors") and not self.browser.exceptions

    def why_dead(self):
        if self.browser.proc.poll() is not None:
            return f"Chromium ended (code {self.browser.proc.poll()})"
        st = self._page_status()
        if st is None:
            return f"the page has answered nothing for {time.time() - self.unresponsive_since:.0f} s (its main thread is blocked)"
        parts = []
        if st.get("exit") is not None:
            parts.append(f"main() returned {st['exit']}")
        parts += [f"page error: {e}" for e in st.get("errors") or []]
        parts += [f"uncaught exception: {e}" for e in self.browser.exceptions]
        return "; ".join(parts) or "?"

    def output(self):
        return "\n".join(f"{kind}: {text}" for kind, text in self.browser.console) + "".join(
            f"\nexception: {e}" for e in self.browser.exceptions)

    # [SECTION] Input, as a person gives it
    def click(self, x, y):
        # Moved there first and held a moment, as a hand does: ImGui sees the hover, then the press.
        self._call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        time.sleep(0.15)
        self._call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", buttons=1, clickCount=1)
        time.sleep(0.05)
        self._call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", buttons=0, clickCount=1)

    def _key_event(self, kind, key, code, key_code, modifiers, text=""):
        params = dict(type=kind, key=key, code=code, windowsVirtualKeyCode=key_code, nativeVirtualKeyCode=key_code,
                      modifiers=modifiers)
        if text:
            params.update(text=text, unmodifiedText=text)
        # Sent, not awaited: a typist's next key does not wait for the page to take the last
        # (Chromium answers a key event only after the page has handled it, which behind a
        # frame of software GL took 120-170 ms a key here); the events reach the page in order.
        self.browser.send("Input.dispatchKeyEvent", session=True, **params)

    def _press(self, key, code, key_code, text, mods):
        """One key with `mods` (names of MODIFIERS) held: the modifiers down, the key down and up, the modifiers up."""
        bits = 0
        for m in mods:
            mkey, mcode, mkc, bit = MODIFIERS[m]
            bits |= bit
            self._key_event("rawKeyDown", mkey, mcode, mkc, bits)
        typed = text if not bits & ~8 else ""  # Ctrl, Alt or Meta held: no character
        self._key_event("keyDown" if typed else "rawKeyDown", key, code, key_code, bits, typed)
        if KEY_HOLD_FRAME:
            self._next_frame()
        self._key_event("keyUp", key, code, key_code, bits)
        for m in reversed(mods):
            mkey, mcode, mkc, bit = MODIFIERS[m]
            bits &= ~bit
            self._key_event("keyUp", mkey, mcode, mkc, bits)

    def _next_frame(self, timeout=2):
        """Until the program has ended a frame after now (site.js's opscope.frameDrawn, counted here)."""
        count = ("(() => { if (opscope.__humanFrames === undefined) { const f = opscope.frameDrawn; opscope.__humanFrames = 0;"
                 " opscope.frameDrawn = function () { opscope.__humanFrames++; return f.apply(this, arguments); }; }"
                 " return opscope.__humanFrames; })()")
        first, end = self._eval(count), time.time() + timeout
        while time.time() < end and self._eval(count) <= first:
            time.sleep(0.005)

    def type_text(self, text):
        for c in text:
            if c == "\n":
                self._press(*NAMED_KEYS["Return"], [])
            elif c == "\t":
                self._press(*NAMED_KEYS["Tab"], [])
            else:
                key, code, kc, shifted = char_key(c)
                self._press(key, code, kc, c, ["shift"] if shifted else [])
            time.sleep(0.04)  # a typist's pace, as the desktop's xdotool --delay 40

    def key(self, combo):
        *mods, name = combo.split("+") if combo != "+" else ["+"]
        mods = [m.lower() for m in mods]
        for m in mods:
            if m not in MODIFIERS:
                raise RuntimeError(f"unknown modifier '{m}' in '{combo}'")
        name = KEY_ALIASES.get(name, name)
        if name in NAMED_KEYS:
            key, code, kc, text = NAMED_KEYS[name]
            self._press(key, code, kc, text, mods)
        elif len(name) == 1:
            key, code, kc, shifted = char_key(name.lower() if mods and name.isalpha() else name)
            self._press(key, code, kc, name, mods + (["shift"] if shifted and "shift" not in mods else []))
        else:
            raise RuntimeError(f"unknown key '{name}' in '{combo}'")
        time.sleep(0.06)

    def ime_text(self, text):
        # An input method commits into the focused text field; a person waits for the caret first.
        end = time.time() + 3
        editable = ("(() => { const e = document.activeElement; return !!e && (e.isContentEditable || "
                    "e.tagName === 'TEXTAREA' || e.tagName === 'INPUT'); })()")
        while time.time() < end and not self._eval(editable):
            time.sleep(0.05)
        self._call("Input.insertText", text=text)

    def wheel(self, x, y, notches):
        self._call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        time.sleep(0.1)
        for _ in range(abs(notches)):
            self._call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0,
                       deltaY=WHEEL_NOTCH_PX if notches > 0 else -WHEEL_NOTCH_PX)
            time.sleep(0.08)

    def _clipboard_allowed(self):
        origin = f"http://127.0.0.1:{self.server.port}"
        self.browser.call("Browser.grantPermissions", origin=origin,
                          permissions=["clipboardReadWrite", "clipboardSanitizedWrite"])

    def set_clipboard(self, text):
        self._clipboard_allowed()
        got = self._eval("navigator.clipboard.writeText(%s).then(() => 'ok', (e) => String(e))" % json.dumps(text),
                         await_promise=True)
        if got != "ok":
            raise RuntimeError("could not write the browser's clipboard: " + str(got))
        time.sleep(0.2)

    def get_clipboard(self):
        self._clipboard_allowed()
        got = self._eval("navigator.clipboard.readText().then((t) => ({t}), (e) => ({e: String(e)}))", await_promise=True)
        return got.get("t") if got else None

    def reload(self):
        self._eval("window.__humanOldPage = true")
        self._call("Page.reload")
        self._wait_loaded("the reloaded page", old_marker=True)

    def tab(self, n):
        if n not in self.tabs:
            # A second tab on the same address, as a person opens one (the same profile).
            url = self.urls.get(self.current) or self.server.url("live_state=1")
            self.tabs[n] = self.browser.new_page(url)
            self.urls[n] = url
            self.current = n
            self._wait_loaded(f"tab {n}")
        self.current = n
        self.browser.session = self.tabs[n]
        self._call("Page.bringToFront")

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(self.browser.screenshot())

    def stop(self):
        self.browser.close()
        self.server.close()
