#!/usr/bin/env python3
"""The browser build against the desktop, in the same run (bench/bench_web.py):

- a reference product (float32 512x512 @ 512x512) in both: the browser's GEMM rate;
- the training step of bench/vs_torch/mlp.ops (MLP 784-256-256-10, batch 64, SGD) and of the
  other step workloads, timed by the script itself (perf_counter) natively at one thread and in
  headless Chromium (the page's console output is read); target: browser <= 3x native. Beside
  each, its floor: the step's FLOPs (flops(), the ops' cost models) at the reference product's
  browser rate, over the native time, the ratio the step would have if every FLOP in the page
  ran at the page's best GEMM rate;
- the site's size as a browser downloads it (gzip, as static servers send it): target <= 20 MB;
- the first frame from a cold cache on 127.0.0.1: target <= 3 s.

  python3 bench/bench_web.py [--build build] [--web-build build-web] [--rounds 5] [--workloads mlp,cnn]
                             [--profile [--profile-top 25]]

--profile adds, per workload, Chromium's sampling profile of 3 s of steps after the warm-up
(DevTools' Profiler domain): self time by function, the program's functions named from the
function map the build writes beside the site (build-web/opscope.symbols), and the share of the
calls between JavaScript and WebAssembly (Emscripten's exception trampolines invoke_*, Asyncify's
export wrappers, the engine's js-to-wasm and wasm-to-js stubs).
"""
import argparse
import collections
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


# The product the floor below is measured with: float32 512x512 @ 512x512, the browser's GEMM
# (SIMD128) against the desktop's (oneDNN or OpenBLAS at the widest vectors the CPU has).
GEMM_REFERENCE = "gemm_512"
GEMM_REFERENCE_TEXT = "seed(0)\nga = randn(512, 512)\ngb = randn(512, 512)\n# --- step ---\ngc = ga @ gb\n"
GEMM_REFERENCE_FLOPS = 2 * 512 ** 3


def workload_text(name):
    if name == GEMM_REFERENCE:
        return GEMM_REFERENCE_TEXT
    return open(os.path.join(ROOT, "bench", "vs_torch", name + ".ops")).read()


def timing_script(name, rounds, steps):
    """The workload's setup, warm-up steps, one step whose FLOPs (the ops' cost models, flops())
    are printed, then `rounds` timed rounds of `steps` steps each."""
    setup, step = workload_text(name).split("# --- step ---\n", 1)
    body = "\n".join("    " + line for line in step.rstrip().splitlines())
    # Warm-up for 3 s, not a few steps: V8 first runs WebAssembly from its baseline compiler
    # (Liftoff) and moves a function to its optimizing one (TurboFan) only once it is hot, on a
    # background thread; a training loop a student runs reaches that state within seconds.
    # (At most 2,000 steps: one statement may loop a million times.)
    return (setup + "warm_t0 = perf_counter()\nfor warm in range(2000):\n" + body + "\n" +
            "    if perf_counter() - warm_t0 > 3.0:\n        break\n" +
            # (inside a loop, as every step here: a top-level statement's nodes stay in the graph)
            "step_f0 = flops()\nfor one in range(1):\n" + body + "\nprint(\"step_flops\", flops() - step_f0)\n" +
            f"for r in range({rounds}):\n    t0 = perf_counter()\n    for i in range({steps}):\n" +
            "\n".join("    " + line for line in body.splitlines()) + "\n" +
            f"    print(\"round_ms\", (perf_counter() - t0) * 1000 / {steps})\n")


def profile_script(name, seconds):
    """The workload's setup and warm-up as timed, then `seconds` of steps between two markers
    the profiler starts and stops at."""
    text = timing_script(name, 0, 0).split("for r in range(0):")[0]
    body = workload_text(name).split("# --- step ---\n", 1)[1]
    # A while loop: range(N) would build its list of N values inside the profile.
    return (text + f"print(\"profile_start\")\nprof_t0 = perf_counter()\nwhile perf_counter() - prof_t0 < {seconds}:\n" +
            "\n".join("    " + line for line in body.rstrip().splitlines()) + "\nprint(\"profile_end\")\n")


def load_symbols(web_build):
    """{function index: name} from Emscripten's --emit-symbol-map (lines "INDEX:NAME")."""
    path = os.path.join(web_build, "opscope.symbols")
    names = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            i, _, n = line.rstrip("\n").partition(":")
            if i.isdigit():  # the names section escapes bytes: \20 a space
                names[int(i)] = re.sub(r"\\([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), n)
    return names


def demangle(names):
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    try:
        out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True).stdout.splitlines()
        return dict(zip(mangled, out))
    except OSError:
        return {}


WASM_INDEX = re.compile(r"^(?:\$func|wasm-function\[)(\d+)\]?$")


def frame_name(frame, symbols):
    name = frame.get("functionName") or "(anonymous)"
    m = WASM_INDEX.match(name)
    if m:
        return "wasm " + symbols.get(int(m.group(1)), name)
    if frame.get("url", "").startswith("wasm"):
        return "wasm " + name
    return name


def trampoline_kind(name):
    """Which of the JavaScript-WebAssembly crossings a sampled function is, or None."""
    if name.startswith("js-to-wasm"):
        return "js-to-wasm stubs"
    if name.startswith("wasm-to-js"):
        return "wasm-to-js stubs"
    if name.startswith("invoke_") or name.startswith("directInvoke") or name in ("landed", "tableEntry"):
        return "invoke_* trampolines (JS exceptions)"
    if name.startswith("dynCall_") or name.startswith("wasm dynCall_"):
        return "dynCall_*"
    if name == "ret.<computed>" or name.startswith("nestedExport"):
        return "Asyncify export wrappers"
    if "now" == name or "_emscripten_get_now" in name or "clock_gettime" in name:
        return "performance.now (clock_gettime)"
    return None


# In the page: the workload's marker lines start and stop a console profile, reported over
# DevTools as Profiler.consoleProfileFinished (exactly the marked steps, in the page's own time).
PROFILE_MARKERS = """(() => { const log = console.log.bind(console);
  console.log = (...a) => { if (a[0] === 'profile_start') console.profile('steps');
                            log(...a); if (a[0] === 'profile_end') console.profileEnd('steps'); }; })();"""


def profile_workload(site, name, seconds, timeout, symbols, top):
    """Chromium's samples over `seconds` of the workload's steps: self time by function, and the
    calls between JavaScript and WebAssembly by kind, printed."""
    text = profile_script(name, seconds)
    with web_driver.open_page(site) as (browser, server):
        browser.before_load(web_driver.preload_script({"/home/web_user/script.ops": text.encode()}))
        browser.before_load(PROFILE_MARKERS)
        browser.call("Profiler.enable", session=True)
        browser.call("Profiler.setSamplingInterval", session=True, interval=100)  # µs
        browser.navigate(server.url(web_driver.argv_query(["run", "/home/web_user/script.ops"])))
        code = browser.wait_for("opscope.exitCode !== null ? {c: opscope.exitCode} : null", timeout, "the workload")["c"]
        browser.pump(0.5)
        found = [m["params"]["profile"] for m in browser.events if m.get("method") == "Profiler.consoleProfileFinished"]
    if code != 0 or not found:
        raise web_driver.PageError(f"no profile of {name} (exit code {code})")
    prof = found[-1]
    self_samples = collections.Counter()
    for node in prof["nodes"]:
        self_samples[frame_name(node["callFrame"], symbols)] += node.get("hitCount", 0)
    idle = self_samples.pop("(idle)", 0)
    total = sum(self_samples.values()) or 1
    pretty = demangle([n[5:] for n in self_samples if n.startswith("wasm _Z")])
    print(f"\n-- profile: {WORKLOADS.get(name, name)}: {total} samples of 0.1 ms over the steps ({idle} idle left out)")
    kinds = collections.Counter()
    for n, c in self_samples.items():
        k = trampoline_kind(n)
        if k:
            kinds[k] += c
    crossing = sum(kinds.values())
    print(f"   JavaScript<->WebAssembly crossings: {100 * crossing / total:.1f} % of the time: " +
          ", ".join(f"{k} {100 * c / total:.1f} %" for k, c in kinds.most_common()))
    for n, c in self_samples.most_common(top):
        shown = ("wasm " + pretty[n[5:]]) if n.startswith("wasm _Z") and n[5:] in pretty else n
        print(f"   {100 * c / total:5.1f} %  {shown[:150]}")


def printed(lines, key):
    return [float(m.group(1)) for line in lines for m in [re.match(key + r" ([0-9.eE+-]+)", line)] if m]


def step_timing(lines):
    """(the best round's ms per step, the FLOPs of one step) from the script's output."""
    times, flops = printed(lines, "round_ms"), printed(lines, "step_flops")
    return (min(times) if times else None), (flops[0] if flops else None)


def native_timing(opscope, script_path):
    out = subprocess.run([opscope, "--threads", "1", "run", script_path], capture_output=True, text=True, check=True).stdout
    return step_timing(out.splitlines())


def browser_timing(site, script_text, timeout):
    code, console = web_driver.run_script(site, script_text, timeout, "the workload")
    if code != 0:
        raise web_driver.PageError("the workload failed in the browser: " + " | ".join(t for _, t in console[-5:]))
    return step_timing([t for kind, t in console if kind == "log"])


def site_download(site):
    total = gz = 0
    for f in os.listdir(site):
        if f.endswith((".br", ".gz")):  # the build's compressed copies of the files counted here
            continue
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
    p.add_argument("--site", help="the site folder (default: WEB_BUILD/site)")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--profile", action="store_true", help="also profile each workload in the page (see above)")
    p.add_argument("--profile-seconds", type=float, default=3.0)
    p.add_argument("--profile-top", type=int, default=25)
    p.add_argument("--profile-only", action="store_true", help="only the profiles (no timings, download or first frame)")
    a = p.parse_args()
    opscope, site = os.path.join(a.build, "opscope"), a.site or os.path.join(a.web_build, "site")
    for need in (opscope, os.path.join(site, "opscope.wasm")):
        if not os.path.exists(need):
            sys.exit(f"bench_web: {need} is missing: build the desktop (cmake --build build) and the site (tools/web_build.sh)")
    script_path = os.path.join(a.build, "bench_web_step.ops")

    def timings(name):
        text = timing_script(name, a.rounds, a.steps)
        with open(script_path, "w") as f:
            f.write(text)
        return native_timing(opscope, script_path), browser_timing(site, text, a.timeout)

    if not a.profile_only:
        # The reference product first: its browser rate bounds every step below (no op of the
        # browser's runs more FLOPs per second than its GEMM).
        (gemm_nat, _), (gemm_web, _) = timings(GEMM_REFERENCE)
        web_gflops = GEMM_REFERENCE_FLOPS / gemm_web / 1e6
        print("== the reference product, float32 512x512 @ 512x512, one thread ==")
        print(f"desktop {gemm_nat:.3f} ms ({GEMM_REFERENCE_FLOPS / gemm_nat / 1e6:.1f} GFLOP/s), browser {gemm_web:.3f} ms "
              f"({web_gflops:.1f} GFLOP/s, SIMD128): ratio {gemm_web / gemm_nat:.2f}\n")
    print("== opscope in the browser (WebAssembly, one thread) vs the desktop build at one thread: time per step ==")
    print("(floor: the step's FLOPs, from its ops' cost models, at the reference product's browser rate, over the\n"
          " desktop's time: the ratio if every FLOP in the page ran as fast as its GEMM)")
    print(f"{'workload':48} {'desktop ms':>11} {'browser ms':>11} {'ratio':>7} {'floor':>7} {'target':>8}  verdict")
    for name in ([] if a.profile_only else a.workloads.split(",")):
        (nat, flops), (web, _) = timings(name)
        ratio, floor = web / nat, flops / (web_gflops * 1e6) / nat
        verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
        print(f"{WORKLOADS.get(name, name):48} {nat:11.3f} {web:11.3f} {ratio:7.2f} {floor:7.2f} {'<= 3':>8}  {verdict}",
              flush=True)
    if a.profile or a.profile_only:
        symbols = load_symbols(a.web_build)
        for name in a.workloads.split(","):
            profile_workload(site, name, a.profile_seconds, a.timeout, symbols, a.profile_top)
        if a.profile_only:
            return
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
