#!/usr/bin/env python3
"""The browser build's tests, run by ctest (tests/web.cmake) against the site built by
tools/web_build.sh, in headless Chromium (tools/web_driver.py). One test per call:

  web_tests.py NAME --build-dir BUILD/web [--opscope BUILD/opscope]

Each prints what it checked and exits 0, or prints what failed and exits 1."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import web_driver  # noqa: E402

FAILURES = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        FAILURES.append(what)


def web_run(args, out, script, *options):
    """tools/web_run.sh SCRIPT into `out`; returns (exit code, state JSON or None)."""
    png, js = os.path.join(out, "shot.png"), os.path.join(out, "state.json")
    cmd = [sys.executable, os.path.join(ROOT, "tools", "web_run.py"), script, png, js, *options,
           "--build-dir", args.build_dir]
    rc = subprocess.run(cmd).returncode
    state = json.load(open(js)) if os.path.exists(js) else None
    return rc, state


def desktop_run(args, out, script, actions, frames):
    """The same run in the desktop window under Xvfb."""
    png, js = os.path.join(out, "desktop.png"), os.path.join(out, "desktop.json")
    env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", XDG_CONFIG_HOME=os.path.join(out, "desktop-config"))
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", args.opscope, "gui", "--script", script,
           "--frames", str(frames), "--actions", actions, "--screenshot", png, "--state-json", js]
    rc = subprocess.run(cmd, env=env).returncode
    return rc, (json.load(open(js)) if os.path.exists(js) else None)


# [SECTION] the tests

def test_script_matches_desktop(args, out):
    """A script stepped in the window: the browser shows what the desktop shows."""
    compare_with_desktop(args, out, os.path.join(ROOT, "tests", "gui", "mlp.ops"), "step;step bwd;step bwd;select n3")


def test_onnx_backward(args, out):
    """An ONNX model shipped in the site, imported and stepped backward: as on the desktop."""
    compare_with_desktop(args, out, os.path.join(HERE, "onnx_backward.ops"), "step bwd;step bwd;step bwd")


def compare_with_desktop(args, out, script, actions, frames=8):
    drc, desk = desktop_run(args, out, script, actions, frames)
    wrc, web = web_run(args, out, script, "--actions", actions, "--frames", str(frames))
    check(drc == 0 and desk is not None, "the desktop run finished")
    check(wrc == 0 and web is not None, "the browser run finished without page errors")
    if not (desk and web):
        return
    check(web["platform"] == "web" and desk["platform"] == "desktop", "each says which platform it is")
    for key in ("graph_nodes", "step", "phase", "current_node", "next_node", "steps_left", "selected", "live_bytes",
                "peak_bytes", "mode"):
        check(web[key] == desk[key], f"{key}: browser {web[key]!r}, desktop {desk[key]!r}")
    boxes = lambda s: sorted((n["key"], n["title"], n["subtitle"], n["kind"], n["lane"], n["phase"]) for n in s["nodes"])
    check(boxes(web) == boxes(desk), f"the same {len(desk['nodes'])} boxes: titles, shapes (subtitles), kinds, lanes")
    mem = lambda s: [(e["step"], e["node"], e["phase"], e["bytes"]) for e in s["memory"]]
    check(mem(web) == mem(desk), f"memory by category after each of the {len(desk['memory'])} steps")
    check(web["first_frame_ms"] is not None and web["first_frame_ms"] > 0,
          f"first frame after {web['first_frame_ms']:.0f} ms")


def lesson_run(args, out, lesson, lang):
    rc, s = web_run(args, out, "-", "--lesson", lesson, "--lang", lang, "--actions", "lesson all", "--frames", "8")
    check(rc == 0 and s is not None, f"lesson {lesson} ({lang}) ran in the browser without page errors")
    if not s:
        return
    l = s.get("lesson", {})
    check(l.get("lang") == lang and str(l.get("id")) == lesson, f"the lesson panel shows lesson {lesson} in {lang}: {l}")
    check(l.get("done") is True, "every block ran to the end")
    check(l.get("checks_passed", 0) > 0 and l.get("checks_failed", 1) == 0,
          f"{l.get('checks_passed')} checks passed, {l.get('checks_failed')} failed")
    check(s.get("cjk_font") is True, "the Chinese font is there")


def test_lesson_1_en(args, out):
    lesson_run(args, out, "1", "en")


def test_lesson_5_zh(args, out):
    lesson_run(args, out, "5", "zh")


def test_lesson_7_zh(args, out):
    """Lesson 7 in Chinese: the matmul kernels run on the simulated GPU in the page, every check holds."""
    lesson_run(args, out, "7", "zh")


def test_gpu_exercise(args, out):
    """A GPU exercise in the page (lesson 7 in Chinese): the starter's tiled matmul with its bank
    conflict fails the check, a student's right answer (tests/exercises/corpus/right-a) passes:
    the kernel runs on the simulated GPU in the browser and is graded on its wavefronts."""
    exercise = "gpu-tiled-matmul-banks"
    answer = os.path.join(ROOT, "tests", "exercises", "corpus", "right-a", exercise + ".ops")
    for code, want in ((None, False), (answer, True)):
        steps = [f"lesson exercise {exercise}"]
        if code:
            steps.append("lesson code /home/web_user/" + os.path.basename(code))
        steps.append("lesson check")
        run_out = os.path.join(out, "answer" if code else "starter")
        os.makedirs(run_out, exist_ok=True)
        rc, s = web_run(args, run_out, answer, "--lesson", "7", "--lang", "zh", "--actions", ";".join(steps),
                        "--frames", "8")
        who = "the right answer" if code else "the starter"
        check(rc == 0 and s is not None, f"{who}: the page ran without errors")
        if not s:
            continue
        ex = s.get("lesson", {}).get("exercise", {})
        check(ex.get("id") == exercise and ex.get("attempts") == 1, f"{who}: checked once in the page: {ex}")
        check(ex.get("passed") is want, f"{who}: {'passes' if want else 'fails'} (passed={ex.get('passed')})")


def test_interrupt(args, out):
    """A training loop interrupted from the window: frames went on, the statement was undone."""
    script = os.path.join(ROOT, "tests", "gui", "mlp.ops")
    actions = "interrupt 3;exec keep = logits\nfor i in range(1000000): z = matmul(randn(64, 64), randn(64, 64))"
    rc, s = web_run(args, out, script, "--actions", actions, "--frames", "8")
    check(rc == 0 and s is not None, "the run finished without page errors")
    if not s:
        return
    check(s["idle_frames"] >= 3, f"{s['idle_frames']} frames drawn while the loop ran")
    check(s["running"] is False, "nothing runs any more")
    check(any(line.startswith("interrupted at <console>:") for line in s["console"]), "the console says where it stopped")
    check(s["graph_nodes"] == 16 and s["steps_left"] == 10, "the workspace is as before the statement")


def test_op_gradcheck(args, out):
    """A user's @op with its own backward, checked against central differences in the page."""
    script = os.path.join(ROOT, "tests", "gui", "custom_op.ops")
    actions = "exec print(\"gradcheck error\", gradcheck(swish, randn(3, 4, dtype=\"float64\"), beta=1.5) < 1e-6);step bwd"
    rc, s = web_run(args, out, script, "--actions", actions, "--frames", "6")
    check(rc == 0 and s is not None, "the run finished without page errors")
    if not s:
        return
    check("gradcheck error True" in s["console"], "gradcheck of the @op passes in the browser")
    check(any(n["title"].startswith("#") and "swish_backward" in n["title"] for n in s["nodes"]),
          "the @op's backward is one node of the graph")


def test_opened_file_survives_reload(args, out):
    """A file opened from the computer while the program runs is kept in IndexedDB, so the next
    session's Restore opens it again."""
    npy = os.path.join(out, "weights.npy")
    subprocess.run([args.opscope, "-c", f'save("{npy}", arange(6, dtype="float32").reshape(2, 3))'], check=True)
    data = list(open(npy, "rb").read())
    with web_driver.open_page(os.path.join(args.build_dir, "site")) as (browser, server):
        browser.navigate(server.url(web_driver.argv_query(["gui", "--frames", "40", "--journal"])))
        browser.wait_for("opscope.firstFrameMs !== null", 120, "the first frame")
        path = browser.evaluate(f"opscope.openFile('weights.npy', new Uint8Array({data}))")
        check("/.local/" in path, f"the file is kept with the progress: {path}")
        browser.wait_for("opscope.exitCode !== null", 120, "the first session")
        argv = ["gui", "--frames", "8", "--journal", "--state-json", "/home/web_user/state.json",
                "--actions", 'workspace restore;exec print("sum", weights.sum().item())']
        browser.navigate(server.url(web_driver.argv_query(argv)))
        browser.wait_for("opscope.exitCode !== null", 120, "the next session")
        s = json.loads(browser.read_file("/home/web_user/state.json"))
        check("sum 15.0" in s["console"], f"Restore opened the file again: {s['console'][-4:]}")
        check(not browser.console_errors(), f"no page errors {browser.console_errors()}")


def test_matmul_kernels(args, out):
    """The browser's own float32 GEMM (SIMD128, behind algo="blas") and Eigen's agree with float64."""
    text = open(os.path.join(ROOT, "tests", "web", "matmul_kernels.ops")).read()
    code, console = web_driver.run_script(os.path.join(args.build_dir, "site"), text, 300, "the products")
    lines = [t for _, t in console]
    check(code == 0 and "matmul kernels: all agree" in lines, f"every product agrees: {lines[-3:]}")


def test_files(args, out):
    """A file opened from the computer becomes a variable; save() offers a download."""
    npy = os.path.join(out, "weights.npy")
    subprocess.run([args.opscope, "-c", f'save("{npy}", arange(6, dtype="float32").reshape(2, 3))'], check=True)
    with web_driver.open_page(os.path.join(args.build_dir, "site")) as (browser, server):
        browser.before_load(web_driver.preload_script({"/out/.keep": b""}) +
                            web_driver.open_files_script({"weights.npy": open(npy, "rb").read()}))
        argv = ["gui", "--frames", "12", "--state-json", "/out/state.json",
                "--actions", 'exec 1;exec save("double.npy", weights * 2);exec print("sum", weights.sum().item())']
        browser.navigate(server.url(web_driver.argv_query(argv)))
        code = browser.wait_for("opscope.exitCode !== null ? {c: opscope.exitCode} : null", 120, "the program")["c"]
        check(code == 0, "the program ended well")
        s = json.loads(browser.read_file("/out/state.json"))
        check(any("weights = load(" in line for line in s["console"]), "the opened .npy ran as weights = load(...)")
        check("sum 15.0" in s["console"], "its values arrived: sum 15.0")
        downloads = browser.evaluate("opscope.downloads")
        check(any(d["name"] == "double.npy" and d["size"] > 100 for d in downloads), f"save() offered a download: {downloads}")
        check(not browser.console_errors(), f"no page errors {browser.console_errors()}")


def test_reload_keeps_progress(args, out):
    """Lesson progress and the console's statements are in IndexedDB: a reload still has them,
    and the next session's Restore runs the statements again."""
    with web_driver.open_page(os.path.join(args.build_dir, "site")) as (browser, server):
        argv = ["gui", "--lesson", "2", "--lang", "en", "--frames", "8", "--journal",
                "--actions", "lesson next;lesson next;lesson next;exec kept = 6 * 7"]
        browser.navigate(server.url(web_driver.argv_query(argv)))
        browser.wait_for("opscope.exitCode !== null", 120, "the first visit")
        first = json.loads(browser.read_file("/home/web_user/.config/opscope/progress.json"))
        browser.reload()
        browser.wait_for("typeof FS !== 'undefined' && opscope.exitCode === null && opscope.firstFrameMs !== null", 120,
                         "the page after the reload")
        after = json.loads(browser.read_file("/home/web_user/.config/opscope/progress.json"))
        check(after.get("last") == first.get("last") == "02", f"the last lesson is remembered: {after.get('last')}")
        check(after["lessons"].get("02", {}).get("block", 0) > 0,
              f"lesson 2's position survived the reload: {after['lessons'].get('02')}")
        journal = json.loads(browser.read_file("/home/web_user/.config/opscope/workspace.json"))
        check("kept = 6 * 7" in journal.get("statements", []), f"the console's statement survived the reload: {journal}")
        browser.wait_for("opscope.exitCode !== null", 120, "the page after the reload")
        argv = ["gui", "--frames", "8", "--journal", "--state-json", "/home/web_user/state.json",
                "--actions", "workspace restore;exec print(kept * 2)"]
        browser.navigate(server.url(web_driver.argv_query(argv)))
        browser.wait_for("opscope.exitCode !== null", 120, "the next session")
        s = json.loads(browser.read_file("/home/web_user/state.json"))
        check(s["journal"]["offered"] == 0 and "84" in s["console"], f"Restore ran the kept statements: {s['console'][-4:]}")
        check(not browser.console_errors(), f"no page errors {browser.console_errors()}")


def test_export_keeps_labels(args, out):
    """File > Export figure as SVG: the boxes say what they are (#2 mul and its shapes), the same
    words as the desktop's figure (Graphviz reads the boxes' HTML-like labels with expat)."""
    script = os.path.join(out, "small.ops")
    with open(script, "w") as f:
        f.write("a = param(tensor([1.0, 2.0]))\nb = a * 3\nloss = b.sum()\nbackward(loss)\n")
    texts = lambda svg: sorted(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", XDG_CONFIG_HOME=os.path.join(out, "desktop-config"))
    desk_svg = os.path.join(out, "desktop.svg")
    subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", args.opscope, "gui", "--script", script,
                    "--frames", "6", "--actions", "export " + desk_svg], env=env, check=True)
    desk = texts(open(desk_svg, encoding="utf-8").read())
    with web_driver.open_page(os.path.join(args.build_dir, "site")) as (browser, server):
        browser.before_load(web_driver.preload_script({"/home/web_user/small.ops": open(script, "rb").read()}))
        argv = ["gui", "--script", "/home/web_user/small.ops", "--frames", "6", "--actions", "export /home/web_user/fig.svg"]
        browser.navigate(server.url(web_driver.argv_query(argv)))
        code = browser.wait_for("opscope.exitCode !== null ? {c: opscope.exitCode} : null", 120, "the program")["c"]
        check(code == 0, "the program ended well")
        web = texts(browser.read_file("/home/web_user/fig.svg").decode("utf-8"))
    check(any(t.startswith("#") for t in desk), f"the desktop's figure names its boxes: {desk}")
    check(web == desk, f"the browser's figure says the same words: {web} (desktop: {desk})")


# Every simulated matmul kernel. register_blocked's float4 reads reach the page's instrumentation
# as four field loads; gpusim/sancov_sites.py joins them again, so its counts match too.
SIM_ALGOS = ("naive", "tiled", "tiled_conflicting", "tiled_padded", "register_blocked", "wmma")


def sim_counters(report):
    """What the simulator counted per algorithm of `opscope bench ... --device sim --json`: per
    launch its kernel, shape, barriers, accesses and DRAM bytes, and its memory instructions
    summed per source line and behaviour (a compiler may split one source access into several
    instructions, e.g. by unrolling: the requests per line and what each request costs stay)."""
    out = {}
    for row in report["rows"]:
        if row["algorithm"] not in SIM_ALGOS:
            continue
        launches = []
        for launch in row["sim"]["launches"]:
            sites = {}
            for s in launch["sites"]:
                key = (s["file"], s["line"], s["space"], s["access"], s["sectors_per_request"],
                       s["wavefronts_per_request"], s["active_lanes"])
                sites[key] = sites.get(key, 0) + s["requests"]
            launches.append({"kernel": launch["kernel"], "grid": launch["grid"], "block": launch["block"],
                             "barriers": launch["barriers"], "accesses": launch["accesses"],
                             "dram_bytes": launch["dram_bytes"], "hazards": launch["hazards"],
                             "sites": sorted((list(k) + [n] for k, n in sites.items()), key=str)})
        out[row["algorithm"]] = {"ok": row["ok"], "seconds": row["seconds"], "launches": launches}
    return out


def page_stdout_json(console):
    """The JSON document a command printed to the page's console (one message per line)."""
    lines = [t for kind, t in console if kind == "log"]
    start = next((i for i, t in enumerate(lines) if t.strip() == "{"), None)
    if start is None:
        return None
    for end in range(start + 1, len(lines) + 1):
        try:
            return json.loads("\n".join(lines[start:end]))
        except ValueError:
            continue
    return None


def test_sim_counters(args, out):
    """The simulated GPU in the page: matmul's kernels at 64 count the same
    requests, sectors, bank wavefronts and active lanes per source line as the desktop's
    simulator (its numbers computed now by the desktop program), and the tiled launch's time."""
    argv = ["bench", "matmul", "--sizes", "64", "64", "64", "--device", "sim", "--json"]
    native = json.loads(subprocess.run([args.opscope, *argv], check=True, capture_output=True, text=True).stdout)
    with web_driver.open_page(os.path.join(args.build_dir, "site")) as (browser, server):
        browser.navigate(server.url(web_driver.argv_query(argv)))
        code = browser.wait_for("opscope.exitCode !== null ? {c: opscope.exitCode} : null", 300, "the benchmark")["c"]
        browser.pump(0.3)
        check(code == 0, f"opscope bench ... --device sim ran in the page (exit code {code})")
        check(not browser.console_errors(), f"no page errors {browser.console_errors()[:3]}")
        web = page_stdout_json(browser.console)
    check(web is not None, "the page printed the benchmark's JSON")
    if not web:
        return
    desk, page = sim_counters(native), sim_counters(web)
    for algo in SIM_ALGOS:
        d, w = desk.get(algo), page.get(algo)
        check(d is not None and w is not None, f"{algo}: on both")
        if not (d and w):
            continue
        check(w["ok"], f"{algo}: the page's result agrees with naive")
        n_sites = sum(len(l["sites"]) for l in d["launches"])
        same = n_sites > 0 and w["launches"] == d["launches"]
        check(same, f"{algo}: the same launches and {n_sites} per-line counters as the desktop" +
              ("" if same else f"\n  page:    {w['launches']}\n  desktop: {d['launches']}"))
    tiled = page.get("tiled", {}).get("seconds")
    if tiled is not None:
        # A benchmark, not a timed assertion (the acceptance asks for under 0.2 s).
        print(f"benchmark: the 64x64x64 tiled launch on sim took {tiled * 1e3:.0f} ms in the page, "
              f"{desk['tiled']['seconds'] * 1e3:.0f} ms on the desktop")


TESTS = {name[len("test_"):]: f for name, f in globals().items() if name.startswith("test_")}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=sorted(TESTS))
    p.add_argument("--build-dir", required=True, help="the browser build (its site/ is served)")
    p.add_argument("--opscope", help="the desktop opscope, for the tests that compare or make files")
    args = p.parse_args()
    out = tempfile.mkdtemp(prefix=f"opscope-web-{args.name}-")
    try:
        TESTS[args.name](args, out)
    except web_driver.PageError as e:
        check(False, f"the page: {e}")
    finally:
        if not FAILURES:
            shutil.rmtree(out, ignore_errors=True)
        else:
            print(f"(files kept in {out})")
    print(f"{args.name}: {'passed' if not FAILURES else f'{len(FAILURES)} checks failed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
