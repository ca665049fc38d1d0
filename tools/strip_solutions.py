#!/usr/bin/env python3
"""The lessons as the browser site ships them: every exercise's [solution] replaced by a comment
saying the teacher has it (a site's files are readable by anyone who opens it; the desktop app's
lessons and the class server keep the solutions). Everything else is copied as it is.

    strip_solutions.py SRC_LESSONS OUT_DIR          write the stripped copy
    strip_solutions.py --check SRC_LESSONS FILE...  fail if FILE (the site's packed data) holds a
                                                    line of any solution that appears nowhere
                                                    else in its lesson
"""
import os
import re
import shutil
import sys

SECTION = re.compile(r"^\[(prompt|setup|starter|hint|check|solution)\]")  # app/lesson/exercise.cpp's kSections

WITHHELD = {
    "en": "# The solution is with your teacher: the browser site does not carry it.",
    "zh": "# 参考答案在老师那里：浏览器版不附带答案。",
}


def language_of(path):
    parts = os.path.normpath(path).split(os.sep)
    return "zh" if "zh" in parts else "en"


def split_solutions(text):
    """(the text's lines with each [solution] body withheld: None where the withheld comment goes,
    "" for the body's other lines, so every later line keeps its number, which errors cite; the
    solution bodies' lines). A [solution] section runs to the next section or the closing fence."""
    out, solutions = [], []
    in_exercise = in_solution = first_body_line = False
    for line in text.split("\n"):
        stripped = line.strip()
        if not in_exercise and stripped.startswith("````exercise"):
            in_exercise = True
        elif in_exercise and stripped == "````":
            in_exercise = in_solution = False
        elif in_exercise and SECTION.match(stripped):
            in_solution = first_body_line = SECTION.match(stripped).group(1) == "solution"
        elif in_solution:
            out.append(None if first_body_line else "")
            first_body_line = False
            solutions.append(line)
            continue
        out.append(line)
    return out, solutions


def strip(src, out):
    if os.path.isdir(out):
        shutil.rmtree(out)
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(out, rel), exist_ok=True)
        for name in files:
            source, target = os.path.join(root, name), os.path.join(out, rel, name)
            if not name.endswith(".md"):
                shutil.copy2(source, target)
                continue
            with open(source, encoding="utf-8") as f:
                lines, _ = split_solutions(f.read())
            comment = WITHHELD[language_of(source)]
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(comment if line is None else line for line in lines))


def check(src, packed_files):
    """Lines of a solution that no lesson shows outside its solutions (not even inside a sentence
    of prose) must not be in the packed files."""
    shown, solution_lines = [], set()
    for root, _, files in os.walk(src):
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    lines, solutions = split_solutions(f.read())
                shown += [line for line in lines if line]
                solution_lines |= {line.strip() for line in solutions if len(line.strip()) >= 16}
    shown_text = "\n".join(shown)
    secret = {line for line in solution_lines if line not in shown_text}
    if len(secret) < 10:
        print(f"only {len(secret)} solution lines found in {src}: is it the lessons folder?")
        return 1
    leaked = []
    for path in packed_files:
        with open(path, "rb") as f:
            data = f.read()
        leaked += [line for line in secret if line.encode("utf-8") in data]
    if leaked:
        print(f"the site carries {len(leaked)} solution lines, e.g. {sorted(leaked)[:3]}")
        return 1
    print(f"none of {len(secret)} solution lines is in {', '.join(packed_files)}")
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--check":
        return check(sys.argv[2], sys.argv[3:])
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    strip(sys.argv[1], sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
