#!/usr/bin/env python3
"""ctest onnx_import_targets: every operator the ONNX importer's mappings call by name
(app/onnx/map_*.cpp) is a registered operator (`opscope ops --json`), so a misspelt or removed
op fails here rather than when a model that uses it is first imported.

  onnx_import_targets.py SOURCE_DIR OPSCOPE

A mapping names its ops as the string arguments of NodeCtx::call / call_multi and of the
mapper factories (unary, binary, variadic, reduce, arg_reduce, global_pool, softmax);
ranked("conv", n) and "conv_transpose" + std::to_string(n) + "d" name the ops of ranks 1 to 3. Each mapping file must name at least one op
this way, so a new way of calling ops that this scan does not know shows up as a failure.
"""
import glob
import json
import os
import re
import subprocess
import sys

# A call whose string-literal arguments are all operator names (up to the closing parenthesis
# of a one-line argument list; reduce's optional pre/post ops included).
NAMING_CALL = re.compile(r'\b(call|call_multi|unary|binary|variadic|reduce|arg_reduce|global_pool|softmax)\(\s*"([a-z_0-9]+)"'
                         r'([^;{}]*)')
RANKED = re.compile(r'\branked\(\s*"([a-z_0-9]+)"')
# Names that a mapping helper handles itself rather than calling an op of that name.
NOT_OPS = {'square': "reduce()'s pre step x·x (map_math.cpp), computed with mul"}
# Files of the importer that call no op by name (the context, the RNN layers' glue).
NAMES_NO_OPS = {'map_context.cpp', 'map_rnn.cpp'}


def op_names_in(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    found = []
    for no, line in enumerate(lines, 1):
        for m in NAMING_CALL.finditer(line):
            if re.match(r'\s*\+\s*std::to_string\([^)]*\)\s*\+\s*"d"', m.group(3)):  # "stem" + std::to_string(n) + "d"
                found += [(no, f'{m.group(2)}{r}d') for r in (1, 2, 3)]
                continue
            found.append((no, m.group(2)))
            if m.group(1) == 'reduce':  # reduce("sum", 18, "square", "sqrt"): the pre and post ops too
                found += [(no, extra) for extra in re.findall(r'"([a-z_0-9]+)"', m.group(3).split(')')[0])]
        for m in RANKED.finditer(line):
            found += [(no, f'{m.group(1)}{r}d') for r in (1, 2, 3)]
    return found


def main():
    src, opscope = sys.argv[1], sys.argv[2]
    ops = {op['name'] for op in json.loads(subprocess.run([opscope, 'ops', '--json'], check=True,
                                                          capture_output=True, text=True).stdout)}
    errors, checked = [], 0
    files = sorted(glob.glob(os.path.join(src, 'app', 'onnx', 'map_*.cpp')))
    for path in files:
        rel = os.path.relpath(path, src)
        names = op_names_in(path)
        if not names and os.path.basename(path) not in NAMES_NO_OPS:
            errors.append(f'{rel} names no operator the way this test reads (call("op", ...), unary("op"), ...): '
                          f'teach tests/onnx_import_targets.py how it calls ops')
        for line, name in names:
            checked += 1
            if name not in ops and name not in NOT_OPS:
                errors.append(f'{rel}:{line}: the ONNX mapping calls operator \'{name}\', which is not registered '
                              f'(opscope ops): fix the name, or register the op in its family file under ops/')
    for e in errors:
        print('onnx_import_targets: ' + e)
    if errors:
        return 1
    print(f'onnx import targets: ok ({checked} operator names in {len(files)} mapping files, all registered)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
