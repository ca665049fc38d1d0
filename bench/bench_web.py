#!/usr/bin/env python3
"""The browser build against the desktop, in the same run (bench/bench_web.py):

- the training step of bench/vs_torch/mlp.ops (MLP 784-256-256-10, batch 64, SGD) and of the
  other step workloads, timed by the script itself (perf_counter) natively at one thread and in
  headless Chromium (the page's console output is read); target: browser <= 3x native;
- the site's size as a browser downloads it (gzip, as static servers send it): target <= 20 MB;
- the first frame from a cold cache on 127.0.0.1: target <= 3 s.

  python3 bench/bench_web.py [--build build] [--web-build build-web] [--rounds 5] [--workloads mlp,cnn]
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import web_driver  # noqa: E402

WORKLOADS = {
    "mlp": "MLP 784-256-256-10, batch 64, train step",
    "cnn": "2-conv CNN 28x28, batch 64, train step",
    "transformer": "Transformer block 8x128x256 causal, train step",
    "tiny_chain": "chain of 100 tiny ops, forward + backward",
}
TARGET_RATIO = 3.0
TARGET_DOWNLOAD_MB = 20.0
TARGET_FIRST_FRAME_MS = 3000.0


def timing_script(name, rounds, steps):
    """The workload's setup, warm-up steps, then `rounds` timed rounds of `steps` steps each."""
    text = open(os.path.join(ROOT, "bench", "vs_torch", name + ".ops")).read()
    setup, step = text.split("# --- step ---\n", 1)
    body = "\n".join("    " + line for line in step.rstrip().splitlines())
    # Warm-up for 3 s, not a few steps: V8 first runs WebAssembly from its baseline compiler
    # (Liftoff) and moves a function to its optimizing one (TurboFan) only once it is hot, on a
    # background thread; a training loop a student runs reaches that state within seconds.
    # (At most 2,000 steps: one statement may loop a million times.)
    return (setup + "warm_t0 = perf_counter()\nfor warm in range(2000):\n" + body + "\n" +
            "    if perf_counter() - warm_t0 > 3.0:\n        break\n" +
            f"for r in range({rounds}):\n    t0 = perf_counter()\n    for i in range({steps}):\n" +
            "\n".join("    " + line for line in body.splitlines()) + "\n" +
            f"    print(\"round_ms\", (perf_counter() - t0) * 1000 / {steps})\n")


def best_ms(lines):
    times = [float(m.group(1)) for line in lines for m in [re.match(r"round_ms ([0-9.eE+-]+)", line)] if m]
    return min(times) if times else None


def native_ms(opscope, script_path):
    out = subprocess.run([opscope, "--threads", "1", "run", script_path], capture_output=True, text=True, check=True).stdout
    return best_ms(out.splitlines())


def browser_ms(site, script_text, timeout):
    code, console = web_driver.run_script(site, script_text, timeout, "the workload")
    if code != 0:
        raise web_driver.PageError("the workload failed in the browser: " + " | ".join(t for _, t in console[-5:]))
    return best_ms([t for kind, t in console if kind == "log"])


def site_download(site):
    total = gz = 0
    for f in os.listdir(site):
        data = open(os.path.join(site, f), "rb").read()
        total += len(data)
        gz += len(gzip.compress(data, 6))
    return total / 1048576, gz / 1048576


def first_frame_ms(site):
    with web_driver.open_page(site) as (browser, server):  # a fresh profile: a cold cache
        browser.navigate(server.url())
        return browser.wait_for("opscope.firstFrameMs", 60, "the first frame")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--web-build", default=os.path.join(ROOT, "build-web"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--workloads", default="mlp,cnn,transformer,tiny_chain")
    p.add_argument("--timeout", type=float, default=900)
    a = p.parse_args()
    opscope, site = os.path.join(a.build, "opscope"), os.path.join(a.web_build, "site")
    for need in (opscope, os.path.join(site, "opscope.wasm")):
        if not os.path.exists(need):
            sys.exit(f"bench_web: {need} is missing: build the desktop (cmake --build build) and the site (tools/web_build.sh)")
    print("== opscope in the browser (WebAssembly, one thread) vs the desktop build at one thread: time per step ==")
    print(f"{'workload':48} {'desktop ms':>11} {'browser ms':>11} {'ratio':>7} {'target':>8}  verdict")
    script_path = os.path.join(a.build, "bench_web_step.ops")
    for name in a.workloads.split(","):
        text = timing_script(name, a.rounds, a.steps)
        with open(script_path, "w") as f:
            f.write(text)
        nat = native_ms(opscope, script_path)
        web = browser_ms(site, text, a.timeout)
        ratio = web / nat
        verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
        print(f"{WORKLOADS.get(name, name):48} {nat:11.3f} {web:11.3f} {ratio:7.2f} {'<= 3':>8}  {verdict}")
    raw, gz = site_download(site)
    print(f"\nsite: {raw:.1f} MB of files, {gz:.1f} MB gzip-compressed (target <= {TARGET_DOWNLOAD_MB:.0f} MB): "
          f"{'PASS' if gz <= TARGET_DOWNLOAD_MB else 'MISS'}")
    ff = min(first_frame_ms(site) for _ in range(3))
    print(f"first frame on 127.0.0.1 from a cold cache, best of 3: {ff:.0f} ms (target <= {TARGET_FIRST_FRAME_MS:.0f} ms): "
          f"{'PASS' if ff <= TARGET_FIRST_FRAME_MS else 'MISS'}")
    ver = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"browser: {ver} headless (V8's WebAssembly, SIMD128); desktop: {opscope} --threads 1; "
          f"best of {a.rounds} rounds of {a.steps} steps, after 3 s of warm-up steps")


if __name__ == "__main__":
    main()
