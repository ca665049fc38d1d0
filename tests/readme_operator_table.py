#!/usr/bin/env python3
"""ctest readme_operator_table: the README's operator table (## Operators) names every operator
of the registry (`opscope ops --json`), in the row of its family, and each row's family is one
the registry has.

  readme_operator_table.py README.md OPSCOPE

A cell may shorten ranks: `max_pool1d/2d/3d` names max_pool1d, max_pool2d and max_pool3d, and
`max_pool1d/2d/3d_backward` their backward ops.
"""
import json
import re
import subprocess
import sys

WHERE = "the README's operator table (## Operators)"


def table_rows(readme):
    start = readme.index('## Operators\n')
    header = readme.index('| family | operators |', start)
    end = readme.find('\n\n', header)
    rows = []
    for line in readme[header:end].split('\n')[2:]:
        family, cell = (c.strip() for c in line.strip().strip('|').split('|', 1))
        rows.append((family, cell))
    return rows


def names_in(cell):
    """The operator names a cell spells, rank shorthands expanded."""
    names = set()
    for word in re.findall(r'[a-z][a-z0-9_]*(?:/[0-9]d)*(?:_[a-z_]+)?', cell):
        m = re.fullmatch(r'([a-z_0-9]*?)([0-9]d)((?:/[0-9]d)+)(_[a-z_]+)?', word)
        if m:
            for rank in [m.group(2)] + m.group(3).split('/')[1:]:
                names.add(m.group(1) + rank + (m.group(4) or ''))
        else:
            names.add(word)
    return names


def main():
    readme_path, opscope = sys.argv[1], sys.argv[2]
    ops = json.loads(subprocess.run([opscope, 'ops', '--json'], check=True, capture_output=True, text=True).stdout)
    with open(readme_path, encoding='utf-8') as f:
        rows = table_rows(f.read())
    families = {op['family'] for op in ops}
    named = {}
    for family, cell in rows:
        for name in names_in(cell):
            named.setdefault(name, set()).add(family)
    errors = []
    for family, _ in rows:
        if family not in families:
            errors.append(f"{WHERE} has a row '{family}', a family no registered operator has "
                          f"(families: {', '.join(sorted(families))})")
    for op in ops:
        name, family = op['name'], op['family']
        if name not in named:
            errors.append(f"operator '{name}' (family {family}) is not in {WHERE}: add it to the '{family}' row")
        elif family not in named[name]:
            errors.append(f"operator '{name}' is in row(s) {', '.join(sorted(named[name]))} of {WHERE}, "
                          f"but its family is '{family}': move it to the '{family}' row")
    for e in errors:
        print('readme_operator_table: ' + e)
    if errors:
        return 1
    print(f'readme operator table: ok ({len(ops)} operators in {len(rows)} rows)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
