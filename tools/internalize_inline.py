#!/usr/bin/env python3
"""Gives an instrumented simulator kernel's LLVM IR its own private copies of inline functions
(gpusim/CMakeLists.txt, browser build): tools/internalize_inline.py IN.ll OUT.ll

The kernels are compiled with every load and store instrumented, at -O1. An inline function they
use (Tensor::data<float>(), a std::vector's destructor) is emitted in their object as in every
other object, `linkonce_odr`, and the linker keeps ONE copy for the whole program: when it kept the
kernels' copy, the engine's own calls went through the instrumented -O1 code (measured: the access
hooks in the profile of a chain of CPU ops). Here each such function becomes `internal` to the
kernel's object: the kernels keep their instrumented copies, the rest of the program its own.
Variables stay shared (a function-local static is one object for the whole program)."""
import re
import sys

DEFINE = re.compile(r"^define linkonce_odr (?:(?:hidden|protected) )?")
COMDAT_ON_LINE = re.compile(r" comdat(?:\(\$[^)]*\))?(?= |$)")
COMDAT_DECL = re.compile(r"^\$(\S+) = comdat any$")
SYMBOL = re.compile(r"@(\"[^\"]+\"|[-\w.$]+)\(")


def internalize(lines):
    out, moved = [], set()
    for line in lines:
        if DEFINE.match(line):
            m = SYMBOL.search(line)
            if m:
                moved.add(m.group(1))
            line = COMDAT_ON_LINE.sub("", DEFINE.sub("define internal ", line, count=1), count=1)
        out.append(line)
    # A comdat still named by a variable stays declared; one only the moved functions were in goes.
    text = "".join(out)
    still = set(re.findall(r"comdat\(\$([^)]*)\)", text))
    still |= {m.group(1) for m in re.finditer(r"^@(\S+) = .* comdat(?: |,|$)", text, re.M)}
    return [line for line in out
            if not ((m := COMDAT_DECL.match(line.rstrip("\n"))) and m.group(1) in moved and m.group(1) not in still)], len(moved)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        lines, n = internalize(f.readlines())
    with open(sys.argv[2], "w") as f:
        f.writelines(lines)
    print(f"internalize_inline: {n} inline functions made private to {sys.argv[2]}")


if __name__ == "__main__":
    main()
