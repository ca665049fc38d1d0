"""A student in the browser, on the site the class server serves (`class serve --site`), driven by
a person's input in headless Chromium (tests/human: DevTools Input events): the site offers to
join, the student types their name; in lesson 3 they check the starter of conv-shape (it fails),
the server stops, they fix the code and check again (it passes here, and waits in the site's
outbox), the server starts again and the queued attempt arrives, once. The server regrades both
(a forged claim of a pass is flagged), the teacher's page shows both attempts and the lesson the
student is at. Writes screenshots to OUT_DIR.
Usage: class_web_student.py OPSCOPE SITE_DIR OUT_DIR"""
import json
import os
import sys
import tempfile
import time

from class_client import Server, init_class, request, wait_graded, here

sys.path.insert(0, here("..", "human"))
sys.path.insert(0, here("..", "..", "tools"))
import human  # noqa: E402
import web_input  # noqa: E402

opscope, site, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
NAME = "Ada <b>Lovelace</b>"  # typed by hand; markup in a name stays text


class ClassSite:
    """The address the student opens: the class server's, with the class code the teacher gave."""

    def __init__(self, port, code):
        self.port, self.code = port, code

    def url(self, query=""):
        return "http://127.0.0.1:%d/index.html?%s&class=%s" % (self.port, query, self.code)

    def close(self):
        pass


def step(what):
    print("  %6.1fs %s" % (time.time() - began, what), flush=True)


began = time.time()
with tempfile.TemporaryDirectory() as folder:
    key, code = init_class(opscope, folder + "/c", "Week 3")
    server = Server(opscope, folder + "/c", ["--workers", "1", "--site", site]).start()
    port = server.port
    web = web_input.Web(site, out, 1600, 1000)
    web.server.close()  # the class server serves the site instead
    web.server = ClassSite(port, code)
    player = human.Player(web, out)
    page = lambda expr: web._eval(expr)  # noqa: E731

    def wait_page(expr, what, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if page(expr):
                return
            time.sleep(0.2)
        raise AssertionError("timed out waiting for " + what + ": " + json.dumps(page("opscope.classroom")))

    def click_visible(label, panel="bottom panel"):
        """Clicks the part of `label` the lesson panel shows: after a check the panel scrolls to
        the feedback, and the editor may be partly above its top (wheeled back into view)."""
        for _ in range(12):
            s = player.fresh_state()
            w = (player.widgets(label, s) or [None])[0]  # (not drawn at all: scrolled out of view)
            p = player.find_widget(panel, enabled=False)
            if w:
                x0, y0, x1, y1 = w["rect"]
                y0, y1 = max(y0, p["rect"][1]), min(y1, p["rect"][3])
                if y1 - y0 >= 12:
                    web.click((x0 + x1) / 2, (y0 + y1) / 2)
                    return
            web.wheel(*player.middle(p), -2)
            player.settle()
        raise AssertionError("'%s' stays out of the lesson panel's view" % label)

    try:
        step("the site from the class server; the join dialog")
        player.play("start", "--lesson 3 --lang en --no-journal")
        wait_page("opscope.classroom.dialogOpen", "the join dialog")
        assert page("document.getElementById('class-code').value") == code, "the class code from the link is not filled in"
        web.type_text(NAME + "\n")  # typed into the dialog's focused name field, Enter joins
        wait_page("opscope.classroom.name !== ''", "the join")
        assert page("opscope.classroom.name") == NAME and not page("opscope.classroom.dialogOpen")
        assert page("JSON.parse(localStorage.getItem('opscope-class')).name") == NAME, "the join is not remembered"

        step("lesson 3 to its exercise (conv-shape); the starter checked: it fails")
        for verb, arg in [("click", "\"Run all\""), ("wait_idle", ""), ("click", "Skip"), ("wait", 'lesson.get("current") != "quiz"'),
                          ("click", "\"Run all\""), ("wait_idle", ""),
                          ("expect", 'lesson["current"] == "exercise" and lesson["exercise"]["id"] == "conv-shape"'),
                          ("click", "Check"), ("wait_idle", ""), ("wait", 'lesson["exercise"]["attempts"] == 1'),
                          ("expect", 'lesson["exercise"]["passed"] is False')]:
            player.play(verb, arg)
        wait_page("opscope.classroom.acknowledged.length === 1 && opscope.classroom.queued === 0", "the first attempt acknowledged")

        step("the server stops; the student fixes the code (// for /) and checks again: it passes, queued")
        server.stop()
        click_visible("exercise editor")
        for verb, arg in [("key", "ctrl+End")] + [("key", "BackSpace")] * 12 + [
                ("type", "/ stride + 1"),
                ("wait", 'lesson["exercise"]["code"].endswith("(H + 2 * padding - R) // stride + 1")')]:
            player.play(verb, arg)
        click_visible("Check")
        for verb, arg in [("wait_idle", ""), ("wait", 'lesson["exercise"]["attempts"] == 2'),
                          ("expect", 'lesson["exercise"]["passed"] is True')]:
            player.play(verb, arg)
        wait_page("opscope.classroom.queued >= 1 && opscope.classroom.lastError !== ''", "the attempt queued while the server is down")
        assert page("opscope.classroom.acknowledged.length") == 1
        web.screenshot(os.path.join(out, "student_waiting.png"))

        step("the server again: the queued attempt arrives once")
        server.start()
        wait_page("opscope.classroom.acknowledged.length === 2 && opscope.classroom.queued === 0", "the queued attempt sent", 60)
        acks = page("opscope.classroom.acknowledged")
        assert [a["duplicate"] for a in acks] == [False, False] and len({a["attempt_id"] for a in acks}) == 2, acks
        assert not page("opscope.classroom.rejected.length"), page("opscope.classroom.rejected")

        # A claim the server does not believe: the starter again, said to pass (no site sends this).
        token = page("JSON.parse(localStorage.getItem('opscope-class')).token")
        st, body, _ = request(port, "POST", "/api/attempts", {
            "exercise": "conv-shape", "code": "def conv_out(H, R, stride, padding):\n    return (H + 2 * padding - R) / stride + 1\n",
            "idempotency_key": "forged-1", "hints_used": 0, "client_result": {"passed": True}}, token=token)
        assert st == 202, body
        summary = wait_graded(port, key, 3, 60)
        st, mine, _ = request(port, "GET", "/api/attempts", token=token)
        grades = [(a["exercise"], a["status"], a["mismatch"]) for a in mine["attempts"]]
        assert grades == [("conv-shape", "fail", False), ("conv-shape", "pass", False), ("conv-shape", "fail", True)], grades
        (ada,) = summary["students"]
        assert ada["name"] == NAME and ada["results"]["conv-shape"]["attempts"] == 3 and ada["results"]["conv-shape"]["passed"], ada
        assert ada.get("lesson", {}).get("lesson") == "03" and ada["lesson"]["block"] > 0, ada.get("lesson")

        step("the teacher's page shows both attempts and the lesson")
        teacher = web.browser.new_page("http://127.0.0.1:%d/teacher?key=%s" % (port, key))
        web.browser.session = teacher
        wait_page("document.body.dataset.ready === '1'", "the teacher's page")
        names = page("[...document.querySelectorAll('th.name')].map((e) => e.textContent)")
        assert names == [NAME], names
        grid = page("document.getElementById('grid').textContent")
        assert "3 tries" in grid and "03 · " in grid and "✓" in grid, grid
        assert page("document.querySelectorAll('td .mismatch').length") == 1, "the forged claim is not flagged"
        assert page("document.querySelectorAll('b').length") == 0, "the name's markup made an element"
        web.screenshot(os.path.join(out, "teacher.png"))
    except Exception:
        server.stop()
        print("".join(server.log))
        print(web.output()[-4000:])
        try:
            web.screenshot(os.path.join(out, "failed.png"))
        except Exception:
            pass
        raise
    finally:
        web.browser.close()
    server.stop()
print("class web student: ok (%.0f s), screenshots in %s" % (time.time() - began, out))
