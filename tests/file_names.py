#!/usr/bin/env python3
"""Every source or script file a comment or document names exists in the tree.

Comments and docs name files ("the twin in kernels/embbag_hd.h", "see commands/driver.c"); a
rename or a removal leaves them pointing at nothing. This scans src/, tests/, man/ and README.md
for names ending in .c, .h, .cu, .cuh, .py or .sh and fails, listing each, on a name no file in the
tree has: a bare name ("explain.c") must be some file's name, a name with folders
("kernels/gemm_abft.h") the tail of some file's path. Names a text uses for something that is
not one of this tree's files (a library's header, a generated or example file) are listed in
ALLOWED with why.

  file_names.py ROOT              check the tree at ROOT
  file_names.py --self-test ROOT  check that a stale name in a scratch copy is caught
"""
import os
import re
import shutil
import sys
import tempfile

SCANNED = ["src", "tests", "man", "README.md"]
SUFFIXES = (".c", ".h", ".cu", ".cuh", ".py", ".sh")
TEXT_ENDINGS = SUFFIXES + (".build", ".md", ".1", ".5", ".txt", ".yaml", ".yml", ".in", ".json")
# A file name: letters, digits, _ - + and folders, ending in one of SUFFIXES, not followed by a
# word character (so a ".conf" or ".cpp" name is not taken for a ".c" one).
NAME = re.compile(r"(?<![\w./+-])((?:[\w+-]+/)*[\w+-]+\.(?:cuh|cu|c|h|py|sh))(?![\w])")

# Names, as written, that are not files of this tree, by where they are.
ALLOWED = {
    # Linux sources cited for what the kernel prints or exposes (hwerr*.c, inject/fatal.c, inject/regfault.c)
    "kernel/printk/printk.c", "drivers/edac/edac_mc.c", "drivers/edac/edac_mc_sysfs.c", "edac_device.c",
    "edac_mc.c", "arch/x86/kernel/cpu/mce/core.c", "mce/core.c", "drivers/edac/mce_amd.c", "mce_amd.c",
    "drivers/firmware/efi/cper.c", "cper.c", "mm/memory-failure.c", "memory-failure.c", "mm/madvise.c",
    "drivers/pci/pcie/aer.c", "aer.c", "arch/x86/include/asm/user.h", "arch/x86/kernel/fpu/regset.c",
    "linux/capability.h",
    # NCCL's header (the toolkit's or the system's); jansson's sources (base/json_scan.c follows them)
    "nccl.h", "load.c", "utf.c",
    # jansson's header, which tests/layers.py keeps out of the probes
    "jansson.h",
    # rasdaemon's sources (hwerr/ras.c reads its database)
    "ras-record.c", "ras-aer-handler.c", "ras-mc-handler.c",
    # other projects cited: systemd's chase(), sudo's secure path, oneDNN's header
    "src/basic/chase.c", "lib/util/secure_path.c", "oneapi/dnnl/dnnl.h",
    # written by the build (src/meson.build)
    "builtin_goldens.c", "builtin_profiles.c", "sdc_config.h", "tmp/sdc_config.h",
    "probes/probe_list.h",
}


def tracked_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not d.startswith("build")]
        for f in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def scanned_files(root):
    for top in SCANNED:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for f in filenames:
                if f.endswith(TEXT_ENDINGS) or "." not in f:
                    yield os.path.relpath(os.path.join(dirpath, f), root)


C_LIKE = (".c", ".h", ".cu", ".cuh")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def commented_lines(rel, text):
    """(line number, text) of what is prose in a file: a C file's comments, a script's # comments,
    a document whole."""
    if rel.endswith(C_LIKE):
        for m in C_COMMENT.finditer(text):
            first = text.count("\n", 0, m.start()) + 1
            for i, line in enumerate(m.group(0).split("\n")):
                yield first + i, line
    elif rel.endswith((".py", ".sh", ".build")) or "." not in os.path.basename(rel):
        for no, line in enumerate(text.split("\n"), 1):
            if "#" in line:
                yield no, line[line.index("#"):]
    else:
        yield from enumerate(text.split("\n"), 1)


def placeholder(name):
    """"src/probes/NAME/NAME.c", "fuzz_NAME.c", "$PK/check.sh": a word in capitals stands for any."""
    return any(re.fullmatch(r"[A-Z]+", p) for p in re.split(r"[/._-]", name)[:-1])


def found_in(name, basenames, paths):
    """A bare name: some file's name. A name with folders: the tail of some file's path, or, for a
    path somewhere else ("gpu-bundle/tools/gpu-check.sh", a copy of the tree), its last folder
    and name."""
    if "/" not in name:
        return name in basenames
    parts = name.split("/")
    for i in range(len(parts) - 1):
        tail = "/" + "/".join(parts[i:])
        if any(p.endswith(tail) for p in paths):
            return True
    return False


def stale_names(root):
    files = tracked_files(root)
    # a file the build makes from NAME.in (packaging's check-sdcscan.sh) counts as there
    files += [f[:-3] for f in files if f.endswith(".in")]
    basenames = {os.path.basename(f) for f in files}
    paths = ["/" + f for f in files]
    stale = []
    for rel in scanned_files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in commented_lines(rel, text):
            for name in NAME.findall(line):
                if name in ALLOWED or placeholder(name):
                    continue
                if not found_in(name, basenames, paths):
                    stale.append(f"{rel}:{no}: {name}")
    return stale


def self_test(root):
    """A scratch tree with one real file and two comments, one naming it, one naming a gone file."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "src", "kernels"))
        with open(os.path.join(tmp, "src", "kernels", "real.h"), "w") as fh:
            fh.write("/* the twin of kernels/real.h and real.h */\n")
        with open(os.path.join(tmp, "src", "a.c"), "w") as fh:
            fh.write("/* see kernels/gone_abft.h and gone.c, not gone.cpp */\n")
        got = stale_names(tmp)
        want = ["src/a.c:1: kernels/gone_abft.h", "src/a.c:1: gone.c"]
        if got != want:
            print(f"FAIL: self-test: expected {want}, found {got}", file=sys.stderr)
            return 1
    print("self-test: a name of a missing file is found, a present one is not")
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return self_test(argv[2])
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    stale = stale_names(argv[1])
    for s in stale:
        print(f"FAIL: {s}: no such file in the tree", file=sys.stderr)
    if stale:
        return 1
    print("every file name in comments and docs exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
