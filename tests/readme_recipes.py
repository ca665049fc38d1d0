#!/usr/bin/env python3
"""ctest readme_recipes: the README's newcomer's recipes (### A newcomer's recipes) name files
and tests that exist, so the recipe a newcomer follows is the one the tests ask for.

  readme_recipes.py SOURCE_DIR BUILD_DIR OPSCOPE_TESTS

In the table's cells:
- a backticked path (it has a '/' or ends in .cpp, .h, .cu, .md, .py) names files: its
  UPPERCASE words (FAMILY, NAME, NN-slug's NN) stand for any text, and at least one file must
  match (a folder: it must exist);
- a backticked lower-case word with underscores in the tests column is a ctest name (NAME: any);
- a `[tag]` followed by a quoted title is a Catch test case of opscope_tests, under that tag.
"""
import glob
import os
import re
import subprocess
import sys

SECTION = "### A newcomer's recipes"


def table(readme):
    start = readme.index(SECTION)
    header = readme.index('| to add |', start)
    end = readme.find('\n\n', header)
    rows = []
    for line in readme[header:end].split('\n')[2:]:
        cells = [c.strip() for c in line.strip().strip('|').split(' | ')]
        rows.append(cells)
    return rows


def placeholder_glob(path):
    # NN-slug: a lesson's number and name; other UPPERCASE words: any name.
    return re.sub(r'[A-Z][A-Z_]+|NN-slug', '*', path.replace('NN-slug', '*'))


def paths_in(cell):
    return [t for t in re.findall(r'`([^`]+)`', cell)
            if ' ' not in t and ('/' in t or re.search(r'\.(cpp|h|cu|md|py)$', t))]


def main():
    src, build, tests_exe = sys.argv[1], sys.argv[2], sys.argv[3]
    readme = open(os.path.join(src, 'README.md'), encoding='utf-8').read()
    rows = table(readme)
    ctests = set(re.findall(r'Test +#\d+: (\S+)', subprocess.run(['ctest', '--test-dir', build, '-N'], capture_output=True,
                                                                 text=True, check=True).stdout))
    catch = subprocess.run([tests_exe, '--list-tests'], capture_output=True, text=True).stdout
    problems, checked = [], 0
    for what, files, asks in rows:
        for path in paths_in(files) + paths_in(asks):
            pattern = os.path.join(src, placeholder_glob(path.rstrip('/')))
            checked += 1
            if not glob.glob(pattern):
                problems.append(f"{what}: no file matches '{path}' ({pattern})")
        for name in re.findall(r'`([a-z][a-z0-9_]*_[a-zA-Z0-9_]*)`', asks):
            checked += 1
            rx = re.compile('^' + re.escape(name).replace('NAME', '.+') + '$')
            if not any(rx.match(t) for t in ctests):
                problems.append(f"{what}: no ctest named '{name}' (ctest -N)")
        for tag, title in re.findall(r'`\[([a-z]+)\]` "([^"]+)"', asks):
            checked += 1
            listed = subprocess.run([tests_exe, '--list-test-names-only', f'[{tag}]'], capture_output=True, text=True).stdout
            if title not in listed.split('\n'):
                problems.append(f"{what}: no Catch test '{title}' tagged [{tag}] in opscope_tests")
    for p in problems:
        print('README.md ' + SECTION + ': ' + p)
    if problems or checked < 20:
        sys.exit(f"readme recipes: {len(problems)} problems ({checked} names checked)")
    print(f"readme recipes: ok ({checked} names checked)")


main()
