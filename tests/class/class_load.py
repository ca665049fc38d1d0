"""A room in a burst: STUDENTS students each send ATTEMPTS attempts at once, the server is killed
with SIGKILL in the middle of it (optional) and restarted on the same folder and port; clients
retry with the same idempotency keys, as the site's queue does. Then: every acknowledged attempt
is there, none is counted twice, all are graded. Prints the ack latencies as a table.
Usage: class_load.py OPSCOPE FIXTURES STUDENTS ATTEMPTS SPREAD_SECONDS [--kill] [--grader G]"""
import argparse
import concurrent.futures
import random
import re
import sys
import tempfile
import threading
import time

from class_client import Server, init_class, join, read, request, wait_graded

p = argparse.ArgumentParser()
p.add_argument("opscope")
p.add_argument("fixtures")
p.add_argument("students", type=int)
p.add_argument("attempts", type=int)
p.add_argument("spread", type=float, help="seconds over which each student's attempts are spread")
p.add_argument("--kill", action="store_true")
p.add_argument("--grade-timeout", type=float, default=300)
args = p.parse_args()

RIGHT = read(args.fixtures + "/class/ada/matmul-backward.ops")
WRONG = read(args.fixtures + "/class/ben/matmul-backward.ops")
total = args.students * args.attempts
acked = {}          # (student, key) -> attempt id, the first acknowledgement
latencies = []      # seconds, per acknowledged request (retries counted from their own send)
lock = threading.Lock()
kill_after = total // 3 if args.kill else None
killed = threading.Event()
restarted = threading.Event()


def send_until_acked(port, token, name, i, deadline):
    key = "%s-%d" % (name, i)
    body = {"exercise": "matmul-backward", "code": RIGHT if i % 2 else WRONG, "idempotency_key": key,
            "hints_used": i, "client_result": {"passed": i % 2 == 1}}
    while time.time() < deadline:
        start = time.time()
        try:
            status, reply, _ = request(port, "POST", "/api/attempts", body, token=token, timeout=10)
        except OSError:
            time.sleep(0.2)  # the server is down: the queue waits and sends again
            continue
        if status == 429:
            time.sleep(1)
            continue
        assert status == 202, "%s: %s %s" % (key, status, reply)
        with lock:
            latencies.append(time.time() - start)
            previous = acked.setdefault((name, key), reply["attempt_id"])
            count = len(acked)
        assert previous == reply["attempt_id"], "%s acknowledged as %d and %d" % (key, previous, reply["attempt_id"])
        return count
    raise AssertionError("%s never acknowledged" % key)


def student(port, token, name, t0, deadline, server):
    # Each attempt at a random moment of the spread, in order: a room within SPREAD seconds.
    moments = sorted(random.uniform(0, args.spread) for _ in range(args.attempts))
    for i in range(args.attempts):
        time.sleep(max(0.0, t0 + moments[i] - time.time()))
        count = send_until_acked(port, token, name, i, deadline)
        if kill_after is not None and count >= kill_after and not killed.is_set():
            with lock:
                if not killed.is_set():
                    server.kill9()
                    killed.set()
                    killed_at.append(count)
                    threading.Thread(target=lambda: (time.sleep(0.5), server.start(), restarted.set())).start()


killed_at = []
with tempfile.TemporaryDirectory() as folder:
    key, code = init_class(args.opscope, folder + "/c", "load")
    # One grading process: the queue is long when the server is killed, so the restart must resume it.
    server = Server(args.opscope, folder + "/c", ["--rate", "5", "--burst", "20"] + (["--workers", "1"] if args.kill else [])).start()
    try:
        tokens = {("s%03d" % i): join(server.port, code, "s%03d" % i) for i in range(args.students)}
        t0 = time.time()
        deadline = t0 + args.spread + 120
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.students) as pool:
            futures = [pool.submit(student, server.port, tok, name, t0, deadline, server) for name, tok in tokens.items()]
            for f in futures:
                f.result()
        sent_s = time.time() - t0
        resumed = None
        if args.kill:
            assert restarted.wait(30), "the server did not restart"
            found = [int(m.group(1)) for m in re.finditer(r"grading processes, (\d+) attempts to grade", "".join(server.log))]
            resumed = found[-1]
            assert resumed > 0, "the restart found nothing to grade: this run did not test resuming"
        # Every acknowledged attempt again (as a queue that lost the reply would): the same ids.
        for (name, k), attempt_id in list(acked.items())[:: max(1, total // 50)]:
            i = int(k.rsplit("-", 1)[1])
            status, reply, _ = request(server.port, "POST", "/api/attempts",
                                       {"exercise": "matmul-backward", "code": RIGHT if i % 2 else WRONG,
                                        "idempotency_key": k, "hints_used": i, "client_result": None}, token=tokens[name])
            assert status in (202, 429), reply
            assert status == 429 or reply["attempt_id"] == attempt_id, "%s: %s then %s" % (k, attempt_id, reply)
        summary = wait_graded(server.port, key, total, args.grade_timeout)
        graded_s = time.time() - t0
        t_summary = time.time()  # what the teacher's page asks for every 1.5 s
        request(server.port, "GET", "/api/teacher/summary", token=key)
        summary_ms = (time.time() - t_summary) * 1000
        assert summary["attempts"] == total, "stored %d attempts, sent %d" % (summary["attempts"], total)
        assert len(acked) == total and len(set(acked.values())) == total, "duplicate or missing ids"
        for s in summary["students"]:
            cell = s["results"]["matmul-backward"]
            assert cell["attempts"] == args.attempts and cell["pending"] == 0, "%s: %s" % (s["name"], cell)
            assert cell["passed"] == (args.attempts > 1), "%s: %s" % (s["name"], cell)
        for name, tok in list(tokens.items())[:5]:  # each student's own list holds each acknowledged id
            status, own, _ = request(server.port, "GET", "/api/attempts", token=tok)
            ids = {a["attempt_id"] for a in own["attempts"] if a["graded"]}
            assert {v for (n, _), v in acked.items() if n == name} <= ids, name
    except Exception:
        server.stop()
        print("".join(server.log))
        raise
    server.stop()

latencies.sort()
pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
print("| students | attempts each | acknowledged | p50 ack ms | p95 ack ms | max ack ms | sent in s | all graded in s | killed after | resumed | summary ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print("| %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %.1f |" % (
    args.students, args.attempts, len(acked), pct(0.5), pct(0.95), latencies[-1] * 1000, sent_s, graded_s,
    ("%d acks (SIGKILL, restart)" % killed_at[0]) if killed_at else "-", "-" if resumed is None else "%d ungraded" % resumed, summary_ms))
print("class load: ok, %d acknowledged, none lost, none twice, all graded" % len(acked))
