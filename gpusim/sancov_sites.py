#!/usr/bin/env python3
"""Names each memory instruction of the browser build's kernels (gpusim/CMakeLists.txt).

WebAssembly has no return addresses, so the access hooks cannot learn their site as the
desktop's do. clang's -fsanitize-coverage=trace-loads,trace-stores calls
__sanitizer_cov_{load,store}N(addr) before every load and store, each call carrying the
access's debug location (!dbg). This rewrites, in the LLVM IR of one kernel file, each such call
into gpusim_cov_{load,store}N(addr, site), where site points at a constant record
{file base name, line} made here for that one instruction (gpusim::SourceSite), so the hook
knows its site for the price of an argument:

One source access can reach the IR as several: clang splits a copy of an aggregate (a float4
read through a reinterpreted pointer) into one scalar load per field, each marked !tbaa.struct,
while the desktop's GCC instruments the copy as the one 16-byte access the source wrote. Such a
run (the same debug location, fields at consecutive offsets from one pointer, in one block) keeps
its first call only, and its site records the run's bytes, so both builds count one request:

  sancov_sites.py IN.ll OUT.ll
"""
import os
import re
import sys

CALL = re.compile(r"^(\s*(?:tail )?call void )@__sanitizer_cov_(load|store)(\d+)\((.*)$")
DECL = re.compile(r"^declare void @__sanitizer_cov_(load|store)(\d+)\((.*)\)(.*)$")
META = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$")
FIELD = {name: re.compile(r"\b%s: (!?\d+|\"[^\"]*\")" % name) for name in ("line", "scope", "file", "filename")}


def split_call_args(rest):
    """'(args), !dbg !5' minus the leading '(' -> (args, tail after the matching ')')."""
    depth = 0
    for i, c in enumerate(rest):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return rest[:i], rest[i + 1:]
            depth -= 1
    raise ValueError("unbalanced call: " + rest)


DEF = re.compile(r"^\s*(%[\w.]+) = (.*)$")
BITCAST = re.compile(r"^bitcast [^%]*(%[\w.]+) to ")
FIELD_GEP = re.compile(r"^getelementptr inbounds [^,]+, [^%]*(%[\w.]+), i(?:32|64) (\d+),")
POINTER_ARG = re.compile(r"(%[\w.]+)\s*$")


def aggregate_runs(lines):
    """Runs of calls that are one aggregate copy split by field (see the module's comment).

    Returns ({index of a run's first call: the run's bytes}, {indices of the calls dropped}).
    A call joins the run before it when the access right after it is marked !tbaa.struct, it has
    the run's kind, size and debug location, and its pointer is the run's first pointer plus the
    run's length in fields; a label ends every run."""
    defs, function = {}, 0  # (function, %name) -> its definition: names repeat per function
    for line in lines:
        if line.startswith("define "):
            function += 1
        m = DEF.match(line)
        if m:
            defs[(function, m.group(1))] = m.group(2)
    function = 0

    def pointee(name):  # a bitcast's source, else the value itself
        m = BITCAST.match(defs.get((function, name), ""))
        return m.group(1) if m else name

    spans, dropped = {}, set()
    run = None  # [first call index, kind, size, dbg, base pointer, fields]

    def close():
        if run and run[5] > 1:
            spans[run[0]] = int(run[2]) * run[5]

    for i, line in enumerate(lines):
        if line.startswith("define "):
            function += 1
        m = CALL.match(line)
        if not m:
            if line and not line.startswith(" "):  # a label, a function's end or start
                close()
                run = None
            continue
        _, kind, size, rest = m.groups()
        args, tail = split_call_args(rest)
        d = re.search(r"!dbg !(\d+)", tail)
        ptr = POINTER_ARG.search(args)
        split_field = i + 1 < len(lines) and "!tbaa.struct" in lines[i + 1]
        if not (d and ptr and split_field):
            close()
            run = None
            continue
        target = pointee(ptr.group(1))
        gep = FIELD_GEP.match(defs.get((function, target), ""))
        if (run and (kind, size, d.group(1)) == (run[1], run[2], run[3]) and gep
                and gep.group(1) == run[4] and int(gep.group(2)) == run[5]):
            run[5] += 1
            dropped.add(i)
            continue
        close()
        run = [i, kind, size, d.group(1), target, 1]
    close()
    return spans, dropped


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = open(src, encoding="utf-8").read().split("\n")
    meta = {}
    for line in lines:
        m = META.match(line)
        if m:
            meta[m.group(1)] = (m.group(2), m.group(3))

    def field(body, name):
        m = FIELD[name].search(body)
        return m.group(1) if m else None

    def file_of_scope(ref):
        seen = 0
        while ref and ref.startswith("!") and seen < 64:
            kind, body = meta.get(ref[1:], ("", ""))
            f = field(body, "file")
            if f:
                fkind, fbody = meta.get(f[1:], ("", ""))
                name = field(fbody, "filename")
                return os.path.basename(name.strip('"')) if name else "?"
            ref = field(body, "scope")
            seen += 1
        return "?"

    def location(dbg):
        kind, body = meta.get(dbg, ("", ""))
        if kind != "DILocation":
            return "?", 0
        return file_of_scope(field(body, "scope")), int(field(body, "line") or 0)

    spans, dropped = aggregate_runs(lines)
    sites = []  # (file, line, bytes of an aggregate's run or 0)
    out = []
    for i, line in enumerate(lines):
        if i in dropped:
            continue
        m = CALL.match(line)
        if m:
            prefix, kind, size, rest = m.groups()
            args, tail = split_call_args(rest)
            d = re.search(r"!dbg !(\d+)", tail)
            sites.append((location(d.group(1)) if d else ("?", 0)) + (spans.get(i, 0),))
            line = f"{prefix}@gpusim_cov_{kind}{size}({args}, %gpusim.site* @__gpusim_site.{len(sites) - 1}){tail}"
        else:
            m = DECL.match(line)
            if m:
                kind, size, params, tail = m.groups()
                line = f"declare void @gpusim_cov_{kind}{size}({params}, %gpusim.site*){tail}"
        out.append(line)
    files = sorted({f for f, _, _ in sites})
    extra = ["", "; gpusim: one record {file, line} per memory instruction (gpusim/sancov_sites.py)",
             "%gpusim.site = type { i8*, i32, i32 }"]
    for i, f in enumerate(files):
        data = f.encode("utf-8") + b"\0"
        text = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else "\\%02X" % b for b in data)
        extra.append(f'@__gpusim_file.{i} = private unnamed_addr constant [{len(data)} x i8] c"{text}", align 1')
    index = {f: i for i, f in enumerate(files)}
    for k, (f, ln, span) in enumerate(sites):
        n = len(f.encode("utf-8")) + 1
        extra.append(f"@__gpusim_site.{k} = private constant %gpusim.site {{ i8* getelementptr inbounds "
                     f"([{n} x i8], [{n} x i8]* @__gpusim_file.{index[f]}, i32 0, i32 0), i32 {ln}, i32 {span} }}, align 4")
    # After the module's header lines (the triple), before its first definition.
    at = next(i for i, l in enumerate(out) if l.startswith("target triple")) + 1
    out[at:at] = extra
    with open(dst + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    os.replace(dst + ".tmp", dst)
    print(f"{os.path.basename(src)}: {len(sites)} memory instructions named, {len(spans)} aggregate copies joined")


if __name__ == "__main__":
    main()
