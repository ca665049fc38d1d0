#!/bin/sh
# `opscope exercise grade` on a class of three students: Ada right, Ben wrong (a gradient off by
# two, an input kept for backward), Cy crashing (runaway recursion, a syntax error) and a notes
# file that is no answer. The table must be exactly the expected one, the crashes reported in
# their cells, and `exercise check` must give the feedback with exit 0 and 1.
# Usage: exercise_grade.sh OPSCOPE FIXTURES_DIR (tests/exercises)
bin=$1
fixtures=$2
dir=$(mktemp -d)
trap 'chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAILED: $1"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

"$bin" exercise grade "$fixtures/class" --csv "$dir/grades.csv" --lang en > "$dir/table.txt" 2> "$dir/progress.txt" || fail "grade exited $?"
diff "$fixtures/class_grades.csv" "$dir/grades.csv" > "$dir/diff.txt" || fail "the CSV is not the expected table"
grep -q "^cy       error            error             0/2" "$dir/table.txt" || fail "the table has no row for cy's two errors"
grep -q "note: cy/notes.txt: not an answer" "$dir/table.txt" || fail "cy/notes.txt is not reported"
grep -q "grading cy/matmul-backward.ops" "$dir/progress.txt" || fail "no progress line for cy's file"

"$bin" exercise check matmul-backward "$fixtures/class/ada/matmul-backward.ops" --lang en > "$dir/ada.txt" || fail "Ada's answer did not pass"
grep -q "Passed: 4/4 checks." "$dir/ada.txt" || fail "no pass line for Ada"
"$bin" exercise check matmul-backward "$fixtures/class/ben/matmul-backward.ops" --lang en > "$dir/ben.txt"
[ $? -eq 1 ] || fail "Ben's answer did not exit 1"
grep -q "the gradient of my_matmul for its input 'b' is wrong at" "$dir/ben.txt" || fail "Ben's feedback names no element"
grep -q "matmul-backward.ops:8: def my_matmul_backward(dc, a, b):" "$dir/ben.txt" || fail "Ben's feedback names not his line"
"$bin" exercise check softmax-backward "$fixtures/class/cy/softmax-backward.ops" --lang en 2> "$dir/cy.txt"
[ $? -eq 1 ] || fail "Cy's unfinished file did not exit 1"
grep -q "softmax-backward.ops:4:" "$dir/cy.txt" || fail "Cy's syntax error has no position"
"$bin" exercise list --lang en > "$dir/list.txt" || fail "exercise list exited $?"
[ "$(tail -n +2 "$dir/list.txt" | grep -c .)" -ge 14 ] || fail "exercise list shows fewer than fourteen exercises"
"$bin" exercise list --json --lang zh | grep -q '"title": "手写 matmul 的反向"' || fail "exercise list --json --lang zh has no Chinese title"
"$bin" exercise show matmul-backward --lang zh > "$dir/show.txt" || fail "exercise show exited $?"
grep -q "起始代码" "$dir/show.txt" || fail "exercise show --lang zh is not in Chinese"
grep -q "return dc @ b.T, a.T @ dc" "$dir/show.txt" && fail "exercise show gave the solution away"
"$bin" exercise show matmul-backward --solution --lang en | grep -q "return dc @ b.T, a.T @ dc" || fail "exercise show --solution has no solution"
# --solution only from a lessons folder this user owns and may write: a lab's installed copy (here
# one not ours: given away as root, read-only otherwise) keeps its solutions.
cp -r "$OPSCOPE_LESSONS" "$dir/installed"
if [ "$(id -u)" = 0 ]; then chown -R nobody "$dir/installed"; else chmod -R a-w "$dir/installed"; fi
OPSCOPE_LESSONS="$dir/installed" "$bin" exercise show matmul-backward --solution --lang en > "$dir/gated.txt" 2>&1 && fail "exercise show --solution printed from lessons not the user's"
grep -q "return dc @ b.T" "$dir/gated.txt" && fail "exercise show --solution gave the solution away from lessons not the user's"
grep -q "the solutions are for the teacher" "$dir/gated.txt" || fail "the refusal of --solution does not say why"
"$bin" exercise show no-such-thing --lang en 2> "$dir/unknown.txt"
grep -q "hint: the exercises are conv-shape, transpose-bug" "$dir/unknown.txt" || fail "an unknown id does not list the exercises"
echo "exercise grade: ok"
