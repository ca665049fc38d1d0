#!/usr/bin/env python3
"""The same run as `opscope gui --script SCRIPT --frames N --screenshot OUT.png --state-json
OUT.json`, in the browser build: builds the site if needed, serves it on a free 127.0.0.1
port, opens it in headless Chromium and runs the script (or lesson, actions) there. Writes the
screenshot and the desktop's state JSON plus "platform", "first_frame_ms", "console_errors"
and "downloads". Exits non-zero when the program failed or the page had an error.

  tools/web_run.sh SCRIPT.ops OUT.png OUT.json [--lesson ID] [--lang zh] [--actions "..."] [--frames N]
  (SCRIPT may be "-": no script)"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import web_driver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_site(build_dir):
    site = os.path.join(build_dir, "site")
    if not os.path.exists(os.path.join(site, "opscope.wasm")):
        subprocess.run([os.path.join(ROOT, "tools", "web_build.sh"), build_dir], check=True)
    return site


def gui_argv(a, script_path):
    argv = ["gui", "--frames", str(a.frames), "--screenshot", "/out/shot.png", "--state-json", "/out/state.json",
            "--size", a.size]
    if script_path:
        argv += ["--script", script_path]
    if a.lesson:
        argv += ["--lesson", a.lesson]
    if a.lang:
        argv += ["--lang", a.lang]
    if a.actions:
        argv += ["--actions", a.actions]
    if a.open:
        argv += ["--open", a.open]
    return argv


def run(a):
    site = ensure_site(a.build_dir)
    files = {"/out/.keep": b""}  # the folder the screenshot and state JSON are written to
    script_path = None
    if a.script and a.script != "-":
        script_path = "/home/web_user/" + os.path.basename(a.script)
        with open(a.script, "rb") as f:
            files[script_path] = f.read()
    w, h = (int(x) for x in a.size.split("x"))
    with web_driver.open_page(site, w, h) as (browser, server):
        browser.before_load(web_driver.preload_script(files))
        start = time.time()
        browser.navigate(server.url(web_driver.argv_query(gui_argv(a, script_path))))
        code = browser.wait_for("window.opscope && window.opscope.exitCode !== null ? {code: opscope.exitCode} : null",
                                a.timeout, "the program to finish")["code"]
        elapsed = time.time() - start
        browser.pump(0.2)
        state = json.loads(browser.read_file("/out/state.json"))
        with open(a.png, "wb") as f:
            f.write(browser.read_file("/out/shot.png"))
        page = browser.evaluate("({first: opscope.firstFrameMs, downloads: opscope.downloads, errors: opscope.errors})")
        state["first_frame_ms"] = page["first"]
        state["downloads"] = page["downloads"]
        state["console_errors"] = browser.console_errors() + page["errors"]
        state["exit_code"] = code
        state["run_seconds"] = round(elapsed, 2)
        with open(a.json, "w") as f:
            json.dump(state, f, indent=2)
        if state["console_errors"]:
            print("web_run: the page had errors:\n  " + "\n  ".join(state["console_errors"]), file=sys.stderr)
            return 1
        if code != 0:
            print(f"web_run: opscope exited with {code}", file=sys.stderr)
            for kind, text in browser.console[-20:]:
                print(f"  [{kind}] {text}", file=sys.stderr)
            return 1
        return 0

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("script")
    p.add_argument("png")
    p.add_argument("json")
    p.add_argument("--lesson")
    p.add_argument("--lang", choices=["en", "zh"])
    p.add_argument("--actions")
    p.add_argument("--open", help="a model packed in the site, e.g. /opscope/assets/models/encoder.onnx")
    p.add_argument("--frames", type=int, default=6)
    p.add_argument("--size", default="1600x1000")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--build-dir", default=os.environ.get("OPSCOPE_WEB_BUILD", os.path.join(ROOT, "build-web")))
    try:
        return run(p.parse_args())
    except web_driver.PageError as e:
        print(f"web_run: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
