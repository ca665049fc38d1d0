#!/bin/sh
# Ctrl-C (SIGINT) while a statement runs stops it at its next step: it is rolled back and
# reported as "interrupted at FILE:LINE:COL"; `opscope run` exits 130; the REPL keeps every
# variable and reads on. Usage: interrupt.sh OPSCOPE
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $1"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

printf 'keep = 42\nfor i in range(1000000):\n    z = matmul(randn(64, 64), randn(64, 64))\nprint("not reached")\n' > "$dir/loop.ops"
# A shell starts background jobs with SIGINT ignored, and opscope keeps an ignored SIGINT
# ignored (as nohup wants): perl (Debian's perl-base is essential) puts the default back.
with_sigint() { exec perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec: $!"' -- "$@"; }
with_sigint "$bin" run "$dir/loop.ops" > "$dir/run.out" 2> "$dir/run.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "opscope run exited $rc after Ctrl-C, not 130"
grep -q "^interrupted at $dir/loop.ops:[23]:" "$dir/run.err" || fail "no 'interrupted at FILE:LINE:COL'"
grep -q "not reached" "$dir/run.out" && fail "the script went on after Ctrl-C"

{ printf 'keep = tensor([42.0])\nfor i in range(1000000): z = matmul(randn(64, 64), randn(64, 64))\n'; sleep 3; printf 'print(keep.item() + 1)\n'; } |
  with_sigint "$bin" repl > "$dir/repl.out" 2> "$dir/repl.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
grep -q "^interrupted at <stdin>:1:" "$dir/repl.err" || fail "the REPL did not report the interrupt"
grep -q "^43.0" "$dir/repl.out" || fail "the REPL lost its variables or stopped after Ctrl-C"
echo "Ctrl-C: opscope run exited 130, the REPL kept keep = 42.0 and went on"
