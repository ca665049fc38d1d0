"""`opscope class` end to end on loopback: init, serve, join, attempts graded by the real grader,
idempotency, 401/403/413/429, a student reads only their own attempts, the teacher's summary with
its clusters, the CSV, the page's shell and its hardening against names made of markup.
Usage: class_contract.py OPSCOPE FIXTURES (tests/exercises)"""
import json
import os
import re
import sys
import tempfile

from class_client import Server, init_class, join, read, request, wait_graded

opscope, fixtures = sys.argv[1], sys.argv[2]
RIGHT = read(fixtures + "/class/ada/matmul-backward.ops")
WRONG = read(fixtures + "/class/ben/matmul-backward.ops")
SCRIPT_NAME = "<script>alert(1)</script>"
IMG_NAME = '"><img src=x onerror=alert(1)>'


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def attempt(port, token, key, code, claimed, exercise="matmul-backward", hints=0):
    return request(port, "POST", "/api/attempts", {"exercise": exercise, "code": code, "idempotency_key": key,
                                                   "hints_used": hints, "client_result": {"passed": claimed}}, token=token)


with tempfile.TemporaryDirectory() as folder:
    key, code = init_class(opscope, folder + "/c", "Week 3")
    # A 3 s wall-clock kill and 512 MiB: a right answer needs 12 ms and far less.
    server = Server(opscope, folder + "/c", ["--workers", "2", "--burst", "40", "--rate", "1", "--grade-seconds", "3",
                                             "--grade-memory-mb", "512"]).start()
    port = server.port
    try:
        # Keys: missing 401, wrong 403, on the API and the page.
        for path in ["/api/teacher/summary", "/teacher", "/api/teacher/grades.csv", "/api/teacher/attempts/1"]:
            expect(request(port, "GET", path)[0] == 401, path + " without a key is not 401")
            expect(request(port, "GET", path, token="0" * 48)[0] == 403, path + " with a wrong key is not 403")
        expect(request(port, "POST", "/api/join", {"class_code": "WRONG1", "name": "x"})[0] == 403, "a wrong class code joined")
        ada = join(port, code, "ada")
        hostile = join(port, code, SCRIPT_NAME)
        img = join(port, code, IMG_NAME)
        expect(request(port, "POST", "/api/join", {"class_code": code, "name": "ada"})[0] == 409, "a name joined twice")
        expect(request(port, "POST", "/api/attempts", {"exercise": "matmul-backward", "code": RIGHT, "idempotency_key": "k"})[0] == 401,
               "an attempt without a token is not 401")
        expect(attempt(port, "f" * 64, "k0", RIGHT, True)[0] == 403, "an attempt with a wrong token is not 403")

        # Ada fails, then passes; the same key again is the same attempt.
        s1, a1, _ = attempt(port, ada, "ada-1", WRONG, False, hints=1)
        expect(s1 == 202 and a1["attempt_id"] > 0, "ada's first attempt: %s %s" % (s1, a1))
        s2, a2, _ = attempt(port, ada, "ada-2", RIGHT, True, hints=2)
        s3, a3, _ = attempt(port, ada, "ada-2", RIGHT, True, hints=2)
        expect(s2 == 202 and s3 == 202 and a2["attempt_id"] == a3["attempt_id"] and a3["duplicate"],
               "the same idempotency key gave another attempt: %s %s" % (a2, a3))
        # The hostile names fail and claim they passed (a mismatch); the img student passes.
        sh, ah, _ = attempt(port, hostile, "h-1", WRONG, True)
        expect(sh == 202, "hostile attempt: %s" % ah)
        expect(attempt(port, img, "i-1", RIGHT, True)[0] == 202, "img attempt refused")

        # Hostile answers: one long kernel (about 20 s alone) is killed at 3 s; 1.5 GiB is refused.
        slow_code = 'a = randn(1500, 1500)\nb = matmul(a, a, algo="naive")\n'
        s_slow, a_slow, _ = attempt(port, img, "slow", slow_code, True, exercise="softmax-backward")
        s_oom, a_oom, _ = attempt(port, img, "oom", "x = zeros(20000, 20000)\n", True, exercise="softmax-backward")
        expect(s_slow == 202 and s_oom == 202, "the hostile attempts were refused")

        # Caps: code over 64 KiB and a body over the server's cap are 413; bad input is 400.
        expect(attempt(port, ada, "big", "#" * (64 * 1024 + 1), False)[0] == 413, "64 KiB + 1 of code is not 413")
        expect(attempt(port, ada, "fits", "#" * (64 * 1024 - 1) + "\n", False)[0] == 202, "64 KiB of code was refused")
        big_body = b'{"exercise": "matmul-backward", "idempotency_key": "huge", "code": "' + b"x" * (600 * 1024) + b'"}'
        expect(request(port, "POST", "/api/attempts", token=ada, raw=big_body)[0] == 413, "a 600 KiB body is not 413")
        expect(attempt(port, ada, "nope", RIGHT, True, exercise="no-such-exercise")[0] == 400, "an unknown exercise was taken")
        expect(request(port, "POST", "/api/attempts", token=ada, raw=b"{not json")[0] == 400, "bad JSON is not 400")

        # A student reads only their own attempts.
        st, own, _ = request(port, "GET", "/api/attempts/%d" % a2["attempt_id"], token=ada)
        expect(st == 200 and own["code"] == RIGHT, "ada cannot read her own attempt")
        st, _, _ = request(port, "GET", "/api/attempts/%d" % a2["attempt_id"], token=hostile)
        expect(st == 404, "another student read ada's attempt (%d)" % st)
        st, mine, _ = request(port, "GET", "/api/attempts", token=hostile)
        expect(st == 200 and [a["attempt_id"] for a in mine["attempts"]] == [ah["attempt_id"]], "the own list has others' attempts")

        summary = wait_graded(port, key, 7, 60)
        st, mine, _ = request(port, "GET", "/api/attempts", token=img)
        status_of = {a["attempt_id"]: a["status"] for a in mine["attempts"]}
        expect(status_of[a_slow["attempt_id"]] == "timeout", "the long kernel: %s" % status_of)
        expect(status_of[a_oom["attempt_id"]] == "out of memory", "the 1.5 GiB answer: %s" % status_of)
        by_name = {s["name"]: s["results"] for s in summary["students"]}
        ada_mb = by_name["ada"]["matmul-backward"]
        expect(ada_mb["passed"] and ada_mb["attempts"] == 3 and ada_mb["pending"] == 0 and ada_mb["hints"] == 2,
               "ada's cell: %s" % ada_mb)  # ada-1, ada-2 (sent twice), fits
        h_mb = by_name[SCRIPT_NAME]["matmul-backward"]
        expect(not h_mb["passed"] and h_mb["attempts"] == 1 and h_mb["mismatches"] == 1 and h_mb["grade"] == "fail 3/4",
               "the hostile student's cell: %s" % h_mb)
        expect(by_name[IMG_NAME]["matmul-backward"]["passed"], "the img student did not pass")
        img_sb = by_name[IMG_NAME]["softmax-backward"]
        expect(img_sb["attempts"] == 2 and not img_sb["passed"] and img_sb["mismatches"] == 2, "img's softmax cell: %s" % img_sb)
        ex = {e["id"]: e for e in summary["exercises"]}["matmul-backward"]
        expect(abs(ex["pass_rate"] - 2 / 3) < 1e-9, "pass rate %s" % ex["pass_rate"])
        grad = [c for c in ex["common_failures"] if c["check"] == "gradcheck on non-square shapes"]
        expect(grad and grad[0]["count"] == 1 and grad[0]["students"] == [SCRIPT_NAME],
               "no cluster for the gradcheck failure: %s" % ex["common_failures"])
        st, one, _ = request(port, "GET", "/api/teacher/attempts/%d" % grad[0]["attempt_ids"][0], token=key)
        expect(st == 200 and one["code"] == WRONG and one["student"] == SCRIPT_NAME, "the cluster does not open the code")

        st, csv, headers = request(port, "GET", "/api/teacher/grades.csv", token=key)
        expect(st == 200 and csv.splitlines() == [
            "student,matmul-backward,softmax-backward,passed", "ada,pass,-,1", "<script>alert(1)</script>,fail 3/4,-,0",
            '"""><img src=x onerror=alert(1)>",pass,out of memory,1'],
               "the CSV:\n" + csv)

        # The page: a shell with no data in it, its script from a file, inline scripts forbidden.
        st, page, headers = request(port, "GET", "/teacher?key=" + key)
        expect(st == 200 and "<table id=\"grid\">" in page and "alert" not in page, "the page")
        expect("script-src 'self'" in headers.get("Content-Security-Policy", ""), "the page has no CSP")
        st, js, _ = request(port, "GET", "/teacher.js")
        expect(st == 200 and "innerHTML" not in js and "textContent" in js, "the page's script writes markup")

        # Rate limit: a burst of 40 then 1/s; 60 requests at once get some 429s.
        codes = [request(port, "GET", "/api/attempts", token=img)[0] for _ in range(60)]
        expect(429 in codes and codes[0] == 200, "no 429 after a burst: %s" % codes)
    except Exception:
        server.stop()
        print("".join(server.log))
        raise
    server.stop()

    # A class with a roster: its names join (once), no other name does.
    with open(folder + "/roster.csv", "w") as f:
        f.write("name,email\nAda Lovelace,ada@example.org\n\"Hopper, Grace\",grace@example.org\nCy,cy@example.org\n")
    key, code = init_class(opscope, folder + "/r", "Roster", roster=folder + "/roster.csv")

    os.makedirs(folder + "/site")
    with open(folder + "/site/index.html", "w") as f:
        f.write("<p>the site</p>")
    server = Server(opscope, folder + "/r", ["--workers", "1", "--site", folder + "/site"]).start()
    try:
        join(server.port, code, "Ada Lovelace")
        join(server.port, code, "Hopper, Grace")
        expect(request(server.port, "POST", "/api/join", {"class_code": code, "name": "Ada Lovelace"})[0] == 409, "a roster name joined twice")
        expect(request(server.port, "POST", "/api/join", {"class_code": code, "name": "Mallory"})[0] == 403, "a name off the roster joined")
        # Each roster student's own join link (join_links.csv, the owner's only) joins without a code or name.
        expect(os.stat(folder + "/r/join_links.csv").st_mode & 0o077 == 0, "join_links.csv is readable by others")
        links = dict(re.findall(r'^"?([^,"]+(?:, [^"]+)?)"?,/\?join=([0-9a-f]+)$', read(folder + "/r/join_links.csv"), re.M))
        expect(sorted(links) == ["Ada Lovelace", "Cy", "Hopper, Grace"], "join links: %s" % links)
        st, cy, _ = request(server.port, "POST", "/api/join", {"join_token": links["Cy"]})
        expect(st == 200 and cy["name"] == "Cy", "Cy's link did not join Cy: %s %s" % (st, cy))
        st, again, _ = request(server.port, "POST", "/api/join", {"join_token": links["Cy"]})
        expect(st == 200 and again["student_token"] == cy["student_token"], "Cy's link again is another student: %s" % again)
        expect(request(server.port, "POST", "/api/join", {"join_token": "0" * 32})[0] == 403, "a made-up join link joined")
        expect(request(server.port, "POST", "/api/join", {"class_code": code, "name": "Cy"})[0] == 409, "Cy joined twice")
        # The lesson a student's site is at reaches the teacher's summary (the latest one).
        for block in (3, 7):
            st, body, _ = request(server.port, "POST", "/api/progress", {"lesson": "03", "title": "Backward", "block": block, "blocks": 40},
                                  token=cy["student_token"])
            expect(st == 200, "progress refused: %s %s" % (st, body))
        expect(request(server.port, "POST", "/api/progress", {"lesson": "03", "block": 1})[0] == 401, "progress without a token")
        expect(request(server.port, "POST", "/api/progress", {"lesson": "<b>", "block": 1}, token=cy["student_token"])[0] == 400,
               "a lesson that is no number was taken")
        expect(request(server.port, "GET", "/api/class")[1] == {"class": "Roster"}, "GET /api/class does not name the class")
        st, summary, _ = request(server.port, "GET", "/api/teacher/summary", token=key)
        expect([s["name"] for s in summary["students"]] == ["Ada Lovelace", "Hopper, Grace", "Cy"], "the roster class's students: %s" % summary)
        at = summary["students"][2].get("lesson") or {}
        expect(at.get("lesson") == "03" and at.get("block") == 7 and at.get("blocks") == 40, "Cy's lesson: %s" % at)
        st, page, _ = request(server.port, "GET", "/index.html")
        expect(st == 200 and page == "<p>the site</p>", "--site is not served: %s %s" % (st, page))
        # The site knows it came from a class by its page's answer (class_client.js asks with HEAD).
        st, _, headers = request(server.port, "HEAD", "/index.html")
        expect(st == 200 and headers.get("X-Opscope-Class") == "1", "the site's page is not marked as a class's: %s %s" % (st, headers))
        expect(request(server.port, "GET", "/teacher")[0] == 401, "the site's mount shadows /teacher")
    finally:
        server.stop()
print("class contract: ok")
