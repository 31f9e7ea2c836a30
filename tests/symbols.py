#!/usr/bin/env python3
"""Every symbol sdcscan's libraries export is named sdc_* (STYLE.md's one prefix).

A C function or object that is not static is global: it can collide with a library's or another
file's name when the archives are linked (a second mt_gemm, a library's own "state"). This reads
the symbol tables with readelf and fails, naming each, on a defined global or weak symbol of
default visibility whose name does not start with sdc_:
  - a static library (.a) or object (.o): its symbol table (-s), member by member;
  - a shared object (.so, the GPU module): the symbols it exports (--dyn-syms), of which device/gpu_loader.c
    looks up one with dlsym (SDC_GPU_MODULE_SYMBOL, "sdc_gpu_module", kernels/gpu_module.h).
Hidden symbols (the module's CUDA code, built with -fvisibility=hidden) are not exported and are
not checked. EXCEPTIONS lists the names allowed without the prefix, with why.

  symbols.py READELF FILE...          check the files
  symbols.py --self-test              check that a canned table with an unprefixed name fails

readelf's columns: Num: Value Size Type Bind Vis Ndx Name (binutils, readelf(1)).
"""
import subprocess
import sys

PREFIX = "sdc_"
EXCEPTIONS = {
    "main": "the program's entry (main.c), named by C",
}
# Names a compiler's instrumentation adds, not the code's: AddressSanitizer's one-definition-rule
# indicator of each global (__odr_asan.NAME, gcc's and clang's -fsanitize=address).
INSTRUMENTATION = ("__odr_asan.", "__odr_asan_gen_")


def offenders(table, path):
    """Names in readelf -sW output that are defined, global or weak, default visibility, and
    neither prefixed nor excepted."""
    bad = []
    member = path
    for line in table.splitlines():
        if line.startswith("File: "):
            member = line[len("File: "):]
            continue
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or not f[0][:-1].isdigit():
            continue
        bind, vis, ndx, name = f[4], f[5], f[6], f[7]
        if bind not in ("GLOBAL", "WEAK") or vis != "DEFAULT" or ndx == "UND":
            continue
        name = name.split("@")[0]  # versioned names: "sym@@VERS"
        if not name.startswith(PREFIX) and name not in EXCEPTIONS and not name.startswith(INSTRUMENTATION):
            bad.append(f"{member}: {name}")
    return bad


def check(readelf, path):
    opt = "--dyn-syms" if path.endswith(".so") or ".so." in path else "-s"
    out = subprocess.run([readelf, "-W", opt, path], check=True, capture_output=True, text=True).stdout
    return offenders(out, path)


CANNED = """
File: libsdcexact.a(kernels_minitrain.c.o)

Symbol table '.symtab' contains 8 entries:
   Num:    Value          Size Type    Bind   Vis      Ndx Name
     0: 0000000000000000     0 NOTYPE  LOCAL  DEFAULT  UND
     1: 0000000000000000    40 FUNC    LOCAL  DEFAULT    1 forward
     2: 0000000000000040   120 FUNC    GLOBAL DEFAULT    1 sdc_mt_run
     3: 00000000000000c0    64 FUNC    GLOBAL DEFAULT    1 mt_gemm
     4: 0000000000000000     0 NOTYPE  GLOBAL DEFAULT  UND memcpy
     5: 0000000000000100    16 FUNC    GLOBAL HIDDEN     1 k_fill
     6: 0000000000000110    16 FUNC    WEAK   DEFAULT    1 helper
     7: 0000000000000120    16 FUNC    GLOBAL DEFAULT    1 main
"""


def self_test():
    got = offenders(CANNED, "x")
    want = ["libsdcexact.a(kernels_minitrain.c.o): mt_gemm", "libsdcexact.a(kernels_minitrain.c.o): helper"]
    if got != want:
        print(f"FAIL: self-test: expected {want}, found {got}", file=sys.stderr)
        return 1
    print("self-test: an unprefixed global or weak symbol is found; local, hidden, undefined, sdc_ and main are not")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    bad = []
    for path in argv[2:]:
        bad += check(argv[1], path)
    for b in bad:
        print(f"FAIL: {b}: exported without the {PREFIX} prefix (make it static, or name it {PREFIX}...)",
              file=sys.stderr)
    if bad:
        return 1
    print(f"{len(argv) - 2} files: every exported symbol is named {PREFIX}*")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
