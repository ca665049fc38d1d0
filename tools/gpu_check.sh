#!/usr/bin/env bash
# The GPU check of the CUDA backend (issue 7), for a machine with an NVIDIA GPU (targets: H200).
# Builds for sm_90, runs the [cuda] tests (every CUDA kernel against the CPU in float64), then
# `opscope bench --device cuda` on the sizes the course quotes, and prints last one table:
# kernel, time, TFLOP/s or TB/s, and the fraction of a ceiling it measures itself (a
# device-to-device copy for bandwidth-bound kernels, cuBLAS SGEMM for compute-bound ones).
# Meant to finish in under 8 minutes; set BUILD=dir to reuse a build, OUT=dir to keep the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$BUILD/gpu_check}
mkdir -p "$OUT"
step() { echo; echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step "device"
nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm --format=csv || echo "nvidia-smi not found"

step "build for sm_90 (and PTX for newer GPUs)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DOPSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DOPSCOPE_BENCH=OFF > "$OUT/configure.log"
cmake --build "$BUILD" -j"$(nproc)" --target opscope opscope_tests > "$OUT/build.log" 2>&1 || {
  tail -40 "$OUT/build.log"
  exit 1
}

step "[cuda] tests: every op x algorithm with a CUDA kernel against the CPU"
tests_status=passed
"$BUILD/opscope_tests" "[cuda]" --durations yes | tee "$OUT/tests.log" || tests_status=FAILED
if grep -q "SKIPPED: no CUDA device" "$OUT/tests.log"; then tests_status="SKIPPED (no CUDA device)"; fi

step "benchmarks"
bench() {  # name, then opscope bench arguments
  local name=$1
  shift
  if ! "$BUILD/opscope" bench "$@" --device cuda --json > "$OUT/$name.json" 2> "$OUT/$name.err"; then
    echo "$name: $(cat "$OUT/$name.err")"
    echo '{"error": true}' > "$OUT/$name.json"
  fi
}
bench copy copy --sizes 8192 8192 --repeats 10
bench matmul matmul --sizes 4096 --repeats 5
bench softmax softmax --sizes 8192 8192 --repeats 10
bench layer_norm layer_norm --sizes 8192 8192 --repeats 10
bench conv2d conv2d --sizes 32 64 56 56 64 3 --repeats 5
bench attention attention --sizes 4096 64 --repeats 3

step "summary"
python3 - "$OUT" "$tests_status" <<'PY'
import json, os, sys
out, tests = sys.argv[1], sys.argv[2]
def load(name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f)
    except Exception:
        return {"error": True}
runs = {n: load(n) for n in ["copy", "matmul", "softmax", "layer_norm", "conv2d", "attention"]}
def rows(name):
    return [r for r in runs[name].get("rows", []) if r.get("ok")]
copy_bw = max((r["gbytes_per_s"] for r in rows("copy")), default=0.0)  # GB/s, read + write counted
sgemm = max((r["gflops_per_s"] for r in rows("matmul") if r["algorithm"] == "cublas"), default=0.0)
print(f"device: {runs['matmul'].get('device_description', runs['copy'].get('device_description', '?'))}")
print(f"[cuda] tests: {tests}")
print(f"ceilings measured here: device-to-device copy {copy_bw / 1e3:.2f} TB/s, cuBLAS SGEMM 4096 {sgemm / 1e3:.1f} TFLOP/s")
print()
print(f"{'kernel':<38} {'time (ms)':>10} {'rate':>14} {'of ceiling':>11} {'workspace':>10} {'max err':>9}")
bandwidth_bound = {"copy", "softmax", "layer_norm"}
for name, run in runs.items():
    if run.get("error"):
        print(f"{name:<38} {'(failed or no CUDA kernel: see ' + name + '.err)':>40}")
        continue
    for r in run["rows"]:
        label = f"{name} {r['algorithm']}"
        if not r.get("ok"):
            print(f"{label:<38} refused: {r.get('error', '')[:60]}")
            continue
        ms = r["seconds"] * 1e3
        if name in bandwidth_bound:
            rate, ceil = r["gbytes_per_s"] / 1e3, copy_bw / 1e3
            rate_s = f"{rate:.2f} TB/s"
        else:
            rate, ceil = r["gflops_per_s"] / 1e3, sgemm / 1e3
            rate_s = f"{rate:.1f} TFLOP/s"
        frac = f"{rate / ceil:.0%}" if ceil > 0 else "?"
        ws = r.get("workspace_bytes", 0)
        ws_s = f"{ws / 2**20:.1f} MiB" if ws else "0"
        err = "ref" if r["algorithm"] == run.get("reference") else f"{r.get('max_error', 0):.1e}"
        print(f"{label:<38} {ms:>10.3f} {rate_s:>14} {frac:>11} {ws_s:>10} {err:>9}")
print()
print("targets (H200): tiled/register_blocked >= 40% of cuBLAS; softmax, layer_norm, copy-like >= 60% of copy;")
print("flash attention faster than naive at T=4096 with O(T) workspace (naive holds the T×S scores)")
PY
echo "total $(( $(date +%s) - t0 )) s"
