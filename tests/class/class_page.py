"""The teacher's page in headless Chromium: a class with a right, a wrong, a stuck and two hostile
students (names made of markup); the page shows them as text, no injected element or script runs,
a failure cluster opens a student's code, the labels switch to Chinese. Writes screenshots.
Usage: class_page.py OPSCOPE FIXTURES OUT_DIR"""
import os
import re
import sys

from class_client import Server, init_class, join, read, request, wait_graded, here

sys.path.insert(0, here("..", "..", "tools"))
from web_driver import Browser  # noqa: E402

opscope, fixtures, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
RIGHT = read(fixtures + "/class/ada/matmul-backward.ops")
WRONG = read(fixtures + "/class/ben/matmul-backward.ops")
SOFT_RIGHT = read(fixtures + "/class/ada/softmax-backward.ops")
SOFT_WRONG = read(fixtures + "/class/ben/softmax-backward.ops")
SCRIPT_NAME = "<script>alert(1)</script>"
IMG_NAME = '"><img src=x onerror=alert(1)>'

import tempfile  # noqa: E402

with tempfile.TemporaryDirectory() as folder:
    key, code = init_class(opscope, folder + "/c", "Week 3")
    server = Server(opscope, folder + "/c", ["--workers", "2"]).start()
    port = server.port
    browser = None
    try:
        sent = 0

        def attempt(token, name, i, exercise, src, claimed, hints=0):
            global sent
            status, reply, _ = request(port, "POST", "/api/attempts", {
                "exercise": exercise, "code": src, "idempotency_key": "%s-%d" % (name[:3], i), "hints_used": hints,
                "client_result": {"passed": claimed}}, token=token)
            assert status == 202, reply
            sent += 1

        students = {n: join(port, code, n) for n in ["ada", "ben", "李雷", SCRIPT_NAME, IMG_NAME]}
        attempt(students["ada"], "ada", 1, "matmul-backward", WRONG, False, 1)
        attempt(students["ada"], "ada", 2, "matmul-backward", RIGHT, True, 1)
        attempt(students["ada"], "ada", 3, "softmax-backward", SOFT_RIGHT, True)
        for i in range(3):  # ben is stuck
            attempt(students["ben"], "ben", i, "matmul-backward", WRONG, False, i)
        attempt(students["ben"], "ben", 9, "softmax-backward", SOFT_WRONG, False, 2)
        attempt(students["李雷"], "lilei", 1, "matmul-backward", RIGHT, True)
        attempt(students[SCRIPT_NAME], "scr", 1, "matmul-backward", WRONG, True)  # claims a pass
        attempt(students[IMG_NAME], "img", 1, "softmax-backward", SOFT_WRONG + "\n# </pre><img src=x onerror=alert(2)>\n", False)
        wait_graded(port, key, sent, 60)

        browser = Browser(1280, 860)
        browser.before_load("window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));")
        browser.navigate("http://127.0.0.1:%d/teacher?key=%s" % (port, key))
        browser.wait_for("document.body.dataset.ready === '1'", 20, "the page's first summary")
        names = browser.evaluate("[...document.querySelectorAll('th.name')].map((e) => e.textContent)")
        assert SCRIPT_NAME in names and IMG_NAME in names and "李雷" in names, names
        assert browser.evaluate("document.querySelectorAll('img').length") == 0, "an injected <img> exists"
        assert browser.evaluate("document.querySelectorAll('body script').length") == 1, "an injected <script> exists"
        assert "key=" not in browser.evaluate("location.href"), "the key stayed in the address bar"
        browser.pump(1)
        assert browser.evaluate("window.__alerts.length") == 0, "an injected script ran"
        clusters = browser.evaluate("[...document.querySelectorAll('.clusters summary')].map((e) => e.textContent)")
        assert "gradcheck on non-square shapes: 2 students" in clusters, clusters
        assert browser.evaluate("document.querySelectorAll('td.stuck').length") == 1, "ben is not marked stuck"
        assert "ben" in browser.evaluate("document.getElementById('stuck').textContent"), "ben is not in 'stuck now'"
        # Open the gradcheck cluster and a student's code from it.
        browser.evaluate("""(() => { const d = [...document.querySelectorAll('.clusters details')]
            .find((x) => x.querySelector('summary').textContent.startsWith('gradcheck on non-square'));
            d.open = true; d.querySelector('button.link').click(); })()""")
        browser.wait_for("document.getElementById('code').open", 10, "the code dialog")
        shown = browser.evaluate("document.getElementById('code-text').textContent")
        assert "2.0 * (a.T @ dc)" in shown, shown
        with open(os.path.join(out, "teacher_code.png"), "wb") as f:
            f.write(browser.screenshot())
        browser.evaluate("document.getElementById('code-close').click()")
        with open(os.path.join(out, "teacher_en.png"), "wb") as f:
            f.write(browser.screenshot())
        # The img student's code, markup in a comment, shown as text.
        browser.evaluate("""(() => { const d = [...document.querySelectorAll('.clusters details')]
            .find((x) => [...x.querySelectorAll('button.link')].some((b) => b.textContent.includes('onerror')));
            d.open = true; [...d.querySelectorAll('button.link')].find((b) => b.textContent.includes('onerror')).click(); })()""")
        browser.wait_for("document.getElementById('code-text').textContent.includes('</pre><img')", 10, "the img student's code")
        assert browser.evaluate("document.querySelectorAll('img').length") == 0, "the code's markup made an element"
        browser.evaluate("document.getElementById('code-close').click()")
        browser.evaluate("document.getElementById('lang').click()")
        assert browser.evaluate("document.querySelector('h1').textContent") == "班级", "no Chinese labels"
        grid = browser.evaluate("document.getElementById('grid').textContent")
        assert re.search(r"未通过 \d/\d", grid) and "fail" not in grid, "grades not in Chinese: " + grid
        assert browser.evaluate("document.querySelectorAll('details[open]').length") == 2, "the open clusters closed on a redraw"
        browser.pump(2)  # a poll or two later, still open
        assert browser.evaluate("document.querySelectorAll('details[open]').length") == 2, "the open clusters closed on a poll"
        with open(os.path.join(out, "teacher_zh.png"), "wb") as f:
            f.write(browser.screenshot())
        errors = browser.console_errors()
        assert not errors, errors
    except Exception:
        server.stop()
        print("".join(server.log))
        raise
    finally:
        if browser:
            browser.close()
    server.stop()
print("class page: ok, screenshots in " + out)
