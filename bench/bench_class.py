#!/usr/bin/env python3
"""A room on `opscope class` (bench/bench_class.py): 200 students each send 10 attempts spread
over a minute to a server on 127.0.0.1, every attempt graded by the real grader (matmul-backward,
right and wrong answers alternating); prints the acknowledgement latencies (p50, p95, max: the
target is p95 under 200 ms with grading queued) and how long the pool took to grade them all.
--kill: the server is killed with SIGKILL a third of the way through and restarted; the run then
also proves that no acknowledged attempt was lost or counted twice.

  python3 bench/bench_class.py [--build build] [--students 200] [--attempts 10] [--spread 60] [--kill]

The clients are threads of this one Python process: the latencies include their own queueing."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--build", default=os.path.join(ROOT, "build"))
p.add_argument("--students", type=int, default=200)
p.add_argument("--attempts", type=int, default=10)
p.add_argument("--spread", type=float, default=60)
p.add_argument("--kill", action="store_true")
a = p.parse_args()
env = dict(os.environ, OPSCOPE_LESSONS=os.environ.get("OPSCOPE_LESSONS", os.path.join(ROOT, "lessons")))
print("opscope class: %d students × %d attempts over %.0f s, %s, %d cores, real grader" % (
    a.students, a.attempts, a.spread, "kill -9 and restart a third of the way" if a.kill else "no kill", os.cpu_count()))
sys.exit(subprocess.call([sys.executable, os.path.join(ROOT, "tests", "class", "class_load.py"),
                          os.path.join(a.build, "opscope"), os.path.join(ROOT, "tests", "exercises"),
                          str(a.students), str(a.attempts), str(a.spread), "--grade-timeout", "600"]
                         + (["--kill"] if a.kill else []), env=env))
