#!/usr/bin/env python3
"""ctest extension_abi_id: the extension ABI id (tools/abi_id.py) covers exactly the listed
public headers' declarations.

  extension_abi_id.py SOURCE_DIR 'core/op.h|...'   (the list of app/extension/CMakeLists.txt)

1. The list is closed: every header a listed header includes ("...") is listed, or an
   extension could compile against a header whose changes the id does not see.
2. On copies of the listed headers: a comment added or edited leaves the id unchanged; a
   declaration added or changed changes it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIST_PLACE = 'OPSCOPE_PUBLIC_HEADERS in app/extension/CMakeLists.txt'


def quoted_includes(path):
    with open(path, encoding='utf-8') as f:
        return re.findall(r'^\s*#\s*include\s*"([^"]+)"', f.read(), re.MULTILINE)


def check_closed(root, headers):
    listed = set(headers)
    errors = []
    for h in headers:
        for inc in quoted_includes(os.path.join(root, h)):
            target = inc if os.path.exists(os.path.join(root, inc)) else \
                os.path.normpath(os.path.join(os.path.dirname(h), inc))
            if target not in listed:
                errors.append(f'{h} includes "{inc}", which is not a public header: add {target} to {LIST_PLACE} '
                              f'(extensions compile against it, so the ABI id must cover it)')
    return errors


def abi_id(tool, root, headers):
    out = subprocess.run([sys.executable, tool, '--root', root, '--headers', '|'.join(headers),
                          '--options=-std=c++20|-Wall', '--print'], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def edited(root, header, edit):
    path = os.path.join(root, header)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    with open(path, 'w', encoding='utf-8') as f:
        f.write(edit(text))
    return text


def main():
    src, headers = sys.argv[1], [h for h in sys.argv[2].split('|') if h]
    tool = os.path.join(src, 'tools', 'abi_id.py')
    errors = check_closed(src, headers)

    with tempfile.TemporaryDirectory() as tmp:
        for h in headers:
            os.makedirs(os.path.join(tmp, os.path.dirname(h)), exist_ok=True)
            shutil.copy(os.path.join(src, h), os.path.join(tmp, h))
        base = abi_id(tool, tmp, headers)
        probe = 'core/op.h' if 'core/op.h' in headers else headers[0]

        def same(what, edit):
            original = edited(tmp, probe, edit)
            got = abi_id(tool, tmp, headers)
            edited(tmp, probe, lambda _: original)
            if got != base:
                errors.append(f'{what} in {probe} changed the ABI id ({base} -> {got}): comments must not count')

        def differs(what, edit):
            original = edited(tmp, probe, edit)
            got = abi_id(tool, tmp, headers)
            edited(tmp, probe, lambda _: original)
            if got == base:
                errors.append(f'{what} in {probe} left the ABI id unchanged ({base}): declarations must count')

        same('a line comment added', lambda t: t + '\n// a note for readers, not for the compiler\n')
        same('a block comment added', lambda t: t.replace('\n', '\n/* why,\n   at length */\n', 1))
        same('an existing comment reworded', lambda t: re.sub(r'//[^\n]*', '// reworded', t, count=3))
        same('blank lines and indentation', lambda t: t.replace('\n', '\n\n   ', 5))
        differs('a declaration added', lambda t: t + '\nnamespace opscope { int abi_probe(int); }\n')

        def two_differ(what, first, second):
            original = edited(tmp, probe, lambda t: t + first)
            one = abi_id(tool, tmp, headers)
            edited(tmp, probe, lambda t: t.replace(first, second))
            if abi_id(tool, tmp, headers) == one:
                errors.append(f'{what} in {probe} left the ABI id unchanged: declarations must count')
            edited(tmp, probe, lambda _: original)

        two_differ("a parameter's type changed", '\nint abi_probe(int);\n', '\nint abi_probe(long);\n')
        two_differ('a string literal\'s text after "//" changed', '\nconst char* abi_probe = "a // b";\n',
                   '\nconst char* abi_probe = "a // c";\n')
        two_differ('a macro changed', '\n#define OPSCOPE_ABI_PROBE 1\n', '\n#define OPSCOPE_ABI_PROBE 2\n')

    for e in errors:
        print('extension_abi_id: ' + e)
    if errors:
        return 1
    print(f'extension ABI id: ok ({len(headers)} public headers, comments ignored, declarations counted)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
