#!/usr/bin/env python3
"""Grades the teacher's corpus of answers with `opscope exercise grade --json` (every file in a
child process of its own, as a class is graded) and compares each verdict with the one its file
declares in its first lines:

    # kind: right | wrong | cheat | hostile
    # expect: pass | fail: TEXT | error: TEXT | timeout | out of memory

TEXT must appear in the failing checks' messages (fail) or in the error (error). Folders under
ROOT: corpus/ (graded with each exercise's own limits, a training epoch included) and hostile/
(one run with a short time limit and a memory cap: huge allocations, endless loops, one long
kernel). Prints one line per mismatch and the counts per kind.
Usage: grade_corpus.py OPSCOPE ROOT
"""
import json, os, subprocess, sys, time

def expectations(folder):
    out = {}
    for student in sorted(os.listdir(folder)):
        for name in sorted(os.listdir(os.path.join(folder, student))):
            path = os.path.join(folder, student, name)
            head = open(path, 'rb').read(400).decode('utf-8', 'replace').split('\n')
            kind = head[0].split(':', 1)[1].strip()
            expect = head[1].split(':', 1)[1].strip()
            verdict, _, text = expect.partition(':')
            out[(student, name[:-len('.ops')])] = (kind, verdict.strip(), text.strip(), path)
    return out

def grade(opscope, folder, extra):
    r = subprocess.run([opscope, 'exercise', 'grade', folder, '--json', '--lang', 'en'] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit('grade ' + folder + ' exited ' + str(r.returncode) + ':\n' + r.stderr)
    return json.loads(r.stdout)

def verdict_of(result):
    if result['status'] == 'pass': return 'pass', ''
    failing = '\n'.join(c['message'] + '\n' + c['description'] for c in result['checks'] if not c['passed'] and c['message'] != 'not run')
    return {'fail': 'fail', 'error': 'error', 'timeout': 'timeout', 'out of memory': 'out of memory'}[result['status']], result['error'] + '\n' + failing

def main():
    opscope, root = sys.argv[1], sys.argv[2]
    runs = [('corpus', []), ('hostile', ['--seconds', '2', '--memory-mib', '2048'])]
    counts, wrong = {}, 0
    for folder, extra in runs:
        t0 = time.time()
        want = expectations(os.path.join(root, folder))
        got = grade(opscope, os.path.join(root, folder), extra)
        print(f'{folder}: {len(want)} answers graded in {time.time() - t0:.1f} s')
        results = {(s['student'], ex): r for s in got['students'] for ex, r in s['results'].items()}
        for key, (kind, verdict, text, path) in want.items():
            r = results.get(key)
            if r is None:
                wrong += 1
                print(f'MISMATCH {path}: not graded ({got["notes"]})')
                continue
            v, said = verdict_of(r)
            ok = v == verdict and (not text or text in said)
            c = counts.setdefault(kind, [0, 0])
            c[0] += 1
            c[1] += ok
            if not ok:
                wrong += 1
                print(f'MISMATCH {path}: expected {verdict} "{text}", got {v}:\n    ' + said.strip().replace('\n', '\n    ')[:1500])
    for kind in ('right', 'wrong', 'cheat', 'hostile'):
        if kind in counts: print(f'{kind}: {counts[kind][1]}/{counts[kind][0]} graded as expected')
    print('corpus: ok' if wrong == 0 else f'corpus: {wrong} answers graded otherwise than expected')
    return 1 if wrong else 0

sys.exit(main())
