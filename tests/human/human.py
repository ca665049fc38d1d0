#!/usr/bin/env python3
"""opscope as a person uses it: a scenario of real clicks, keys, wheel notches, pastes and
reloads, played on the desktop window under Xvfb (xdotool: real X events) or on the site in
headless Chromium (the DevTools protocol's Input events), never through scripted --actions.
ctest runs every scenario on each platform it names (tests/human/CMakeLists or cmake/).

  human.py SCENARIO.scn --platform desktop|web --opscope build/opscope [--site build-web/site]
           [--out DIR]

It prints each step and exits 0, or prints the step that failed and exits 1, keeping the
screenshots taken (a failure always takes one) in --out.

[SECTION] The scenario file: one step a line; `#` starts a comment; the first comment is the title.
  platforms: desktop web          where it runs (the test list's contract; ctest reads it too)
  start ARGS...                   `opscope gui ARGS`; {root} is the source tree; waits for the window
  click LABEL [N]                 the N-th (1) widget the window drew saying LABEL, at its middle;
                                  waits until it is drawn and enabled
  click_box KEY                   a box of the graph (n3, v5, or a variable's name)
  click_map ID                    a node of the knowledge map
  type TEXT                       key presses, as typed (\\n is Enter, \\t is Tab)
  key COMBO                       one key: Return, space, Escape, ctrl+v, ctrl+a, BackSpace ...
  ime TEXT                        text an input method commits (every Chinese IME does this)
  wheel LABEL NOTCHES             the mouse over LABEL's middle, the wheel NOTCHES down (negative: up)
  clipboard TEXT                  the system clipboard holds TEXT (copied in another program)
  choose_file PATH...             (browser) picks PATH in the file chooser the page opened
  expect_clipboard TEXT           the system clipboard holds TEXT
  wait_idle                       until no statement runs (and one more state is published)
  wait EXPR                       until EXPR is true (the expression of `expect`)
  show EXPR                       prints EXPR's value (to read a run's log)
  remember NAME EXPR              EXPR's value now, as NAME in later expressions
  expect EXPR                     a Python expression over the window's state: `state` (the
                                  state JSON), `console` (its last lines, one text), `widget(L)`,
                                  `lesson` (state["lesson"] or {}), `alive`, `frames_drawn(S)`
  reload                          (browser) the page again, as F5
  tab N                           (browser) open tab N (1, 2, ...) on the same site, or go to it
  screenshot NAME                 NAME.png in --out
  sleep SECONDS
"""
import argparse
import json
import os
import re
import shlex
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

WAIT_S = 60  # the longest a step waits for what it needs (a software-rendered frame is slow)


class StepFailed(Exception):
    pass


def read_scenario(path):
    """(title, platforms, [(line number, verb, argument text)])."""
    title, platforms, steps = "", [], []
    for n, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.rstrip("\n")
        if line.lstrip().startswith("#"):
            title = title or line.lstrip("# ").strip()
            continue
        if not line.strip():
            continue
        verb, _, arg = line.strip().partition(" ")
        if verb == "platforms:":
            platforms = arg.split()
        else:
            steps.append((n, verb, arg.strip()))
    return title, platforms, steps


def unescape(text):
    return text.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


class Player:
    """Plays a scenario's steps on a driver (desktop_input.Desktop or web_input.Web)."""

    def __init__(self, driver, out):
        self.d, self.out = driver, out
        self.last_state = None
        self.remembered = {}  # the scenario's `remember` values
        # The window's count of input events before the last click, key or wheel was sent: a state
        # that has not counted more was drawn before the input arrived (a busy machine's browser
        # can take longer than a frame to pass an event on), so waits for the input skip it.
        self.events_before = None

    # [SECTION] What the window shows
    def state(self):
        """The latest state JSON the window published (None before the first)."""
        s = self.d.state()
        if s is not None:
            self.last_state = s
        return self.last_state

    def fresh_state(self):
        """A state published after now: what the window shows after the last input."""
        t0 = time.time()
        seen = self.state()
        frame0 = seen["frame"] if seen else -1
        idle0 = seen["idle_frames"] if seen else -1
        live0 = seen.get("live_states", 0) if seen else -1
        while time.time() - t0 < WAIT_S:
            s = self.state()
            # Two frames drawn since (one may have begun before the input), or the window waiting
            # for input with nothing changed, said twice since.
            if s and (s["frame"] > frame0 + 1 or s["idle_frames"] > idle0 + 1 or
                      (s.get("idle") and s.get("live_states", 0) > live0 + 1)):
                return s
            self.require_alive()
            time.sleep(0.05)
        raise StepFailed("the window published no new state for %d s (frozen?)" % WAIT_S)

    def require_alive(self):
        if not self.d.alive():
            raise StepFailed("the program ended: " + self.d.why_dead())

    def widgets(self, label, state=None):
        s = state or self.state() or {}
        return [w for w in s.get("widgets", []) if w["label"] == label]

    def find_widget(self, label, nth=1, enabled=True):
        end = time.time() + WAIT_S
        while time.time() < end:
            self.require_alive()
            found = self.widgets(label, self.fresh_state())
            if len(found) >= nth and (found[nth - 1]["enabled"] or not enabled):
                return found[nth - 1]
            time.sleep(0.05)
        labels = sorted({w["label"] for w in (self.state() or {}).get("widgets", [])})
        raise StepFailed(f"no enabled widget '{label}' (#{nth}) on screen; the window shows: {labels}")

    def env(self):
        s = self.state() or {}
        console = "\n".join(s.get("console", []))
        return {"state": s, "console": console, "lesson": s.get("lesson") or {}, "alive": self.d.alive(),
                "widget": lambda label: (self.widgets(label, s) or [None])[0], "json": json, "re": re,
                "frames_drawn": self.frames_drawn, **self.remembered}

    def frames_drawn(self, seconds):
        """How many frames the window drew in the next `seconds` with no input."""
        before = self.state()["frame"]
        time.sleep(seconds)
        return self.state()["frame"] - before

    def evaluate(self, expr):
        try:
            return eval(expr, self.env())  # the scenario's own expression, from the source tree
        except Exception as e:  # a key missing from the state is a failed expectation
            return f"error: {type(e).__name__}: {e}"

    # [SECTION] The steps
    def middle(self, w):
        x0, y0, x1, y1 = w["rect"]
        return (x0 + x1) / 2, (y0 + y1) / 2

    def play(self, verb, arg):
        d = self.d
        if verb in ("click", "click_box", "click_map", "type", "key", "wheel"):
            self.events_before = (self.state() or {}).get("input_events")
        if verb == "start":
            d.start([unescape(a).replace("{root}", ROOT) for a in shlex.split(arg)])
            self.fresh_state()
        elif verb == "click":
            parts = shlex.split(arg)
            nth = int(parts[1]) if len(parts) > 1 else 1
            d.click(*self.middle(self.find_widget(parts[0], nth)))
        elif verb == "click_box":
            box = self.wait_for(lambda s: next((n for n in s["nodes"] if arg in (n["key"], n["subtitle"], n["title"])), None),
                                f"a box '{arg}' in the graph")
            d.click(*self.middle(box))
        elif verb == "click_map":
            node = self.wait_for(lambda s: next((n for n in s["map"] if n["id"] == arg), None), f"the map's node '{arg}'")
            d.click(*self.middle(node))
        elif verb == "type":
            d.type_text(unescape(arg))
        elif verb == "key":
            d.key(arg)
        elif verb == "ime":
            text = unescape(arg)
            if getattr(d, "commits_per_character", False):
                # (xdotool maps each character to a spare key for a moment: a window busy baking
                # the new glyph of the last one would read the next key after it was unmapped)
                for ch in text:
                    d.ime_text(ch)
                    self.input_taken()
            else:
                d.ime_text(text)
        elif verb == "wheel":
            label, notches = arg.rsplit(" ", 1)
            w = self.find_widget(label.strip().strip('"'), enabled=False)
            d.wheel(*self.middle(w), int(notches))
        elif verb == "choose_file":
            d.choose_file([unescape(a).replace("{root}", ROOT) for a in shlex.split(arg)])
        elif verb == "clipboard":
            d.set_clipboard(unescape(arg))
        elif verb == "expect_clipboard":
            got = d.get_clipboard()
            if got != unescape(arg):
                raise StepFailed(f"the clipboard holds {got!r}, expected {unescape(arg)!r}")
        elif verb == "wait_idle":
            self.settle()
        elif verb == "wait":
            self.wait_for(lambda s: self.evaluate(arg) is True, arg)
        elif verb == "remember":
            name, expr = arg.split(" ", 1)
            self.input_taken()
            self.remembered[name] = self.evaluate(expr)
        elif verb == "show":
            self.input_taken()
            print(f"        = {self.evaluate(arg)!r}")
        elif verb == "expect":
            self.input_taken()
            got = self.evaluate(arg)
            if got is not True:
                raise StepFailed(f"expected {arg}; got {got!r}")
        elif verb == "reload":
            d.reload()
            self.last_state = None
            self.fresh_state()
        elif verb == "tab":
            d.tab(int(arg))
            self.last_state = None
            self.fresh_state()
        elif verb == "screenshot":
            d.screenshot(os.path.join(self.out, arg + ".png"))
        elif verb == "sleep":
            time.sleep(float(arg))
        else:
            raise StepFailed(f"unknown step '{verb}'")
        time.sleep(0.05)

    def settle(self):
        """Typed keys given to the UI, the work they asked for done, then one more frame."""
        self.fresh_state()
        # (ImGui takes a click in the second frame after it: three frames after the last input
        # event, what it asked for is queued or done.)
        self.wait_for(lambda s: self.input_arrived(s) and not s["running"] and not s.get("input_waiting") and
                      not s.get("queued_work") and s.get("frames_since_input", 99) >= 3,
                      "no statement running and no input waiting")
        self.fresh_state()

    def input_arrived(self, s):
        """The window has counted an event of the last input sent (or no input was sent since)."""
        if self.events_before is None or s.get("input_events", self.events_before + 1) > self.events_before:
            self.events_before = None
            return True
        return False

    def input_taken(self):
        """A state after the window gave every key typed so far to the UI (a statement may still run)."""
        self.fresh_state()
        try:
            self.wait_for(lambda s: self.input_arrived(s) and not s.get("input_waiting") and
                          s.get("frames_since_input", 99) >= 2, "the input taken", timeout=10)
        except StepFailed:
            pass  # the expectation says what is wrong

    def wait_for(self, pick, what, timeout=WAIT_S):
        end = time.time() + timeout
        while time.time() < end:
            self.require_alive()
            s = self.fresh_state()
            v = pick(s)
            if v not in (None, False):
                return v
        raise StepFailed(f"timed out after {timeout} s waiting for {what}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--platform", choices=["desktop", "web"], required=True)
    ap.add_argument("--opscope", default=os.path.join(ROOT, "build", "opscope"))
    ap.add_argument("--site", default=os.path.join(ROOT, "build-web", "site"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    name = os.path.splitext(os.path.basename(a.scenario))[0]
    out = a.out or os.path.join(os.getcwd(), "human-" + a.platform + "-" + name)
    os.makedirs(out, exist_ok=True)
    title, platforms, steps = read_scenario(a.scenario)
    print(f"scenario: {title} ({a.platform})")
    if a.platform not in platforms:
        print(f"not a {a.platform} scenario (platforms: {' '.join(platforms)})")
        return 0
    if a.platform == "desktop":
        import desktop_input
        driver = desktop_input.Desktop(a.opscope, out)
    else:
        import web_input
        driver = web_input.Web(a.site, out)
    player = Player(driver, out)
    failed = None
    began = time.time()
    try:
        for n, verb, arg in steps:
            # (the clock at each step's start shows where a slow run spends its time)
            print(f"  {n:3d} {time.time() - began:6.1f}s {verb} {arg}", flush=True)
            player.play(verb, arg)
    except StepFailed as e:
        failed = f"line {n}: {verb} {arg}: {e}"
    except Exception as e:  # the driver itself: say so, with where
        failed = f"line {n}: {verb} {arg}: {type(e).__name__}: {e}\n{traceback.format_exc()}"
    if failed:
        print("FAIL: " + failed)
        try:
            driver.screenshot(os.path.join(out, "failed.png"))
            print("screenshot: " + os.path.join(out, "failed.png"))
        except Exception as e:
            print(f"(no screenshot: {e})")
        s = player.last_state
        if s:
            print("console's last lines:\n    " + "\n    ".join(s.get("console", [])[-8:]))
        print("program output:\n" + driver.output()[-3000:])
    driver.stop()
    print("ok" if not failed else "failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
