#!/usr/bin/env python3
"""The layers of src/ and the only direction includes may point: down.

usage: layers.py SRC_DIR          check the tree; exit 1 and name every include that points up,
                                  crosses into another probe's folder, or closes a cycle
       layers.py --self-test SRC  the same check on copies of the tree with one bad include
                                  planted each way: each must be caught (so this test can fail)

Layers, top to bottom (a file may include its own layer or any layer below it):
  5 commands/, main.c   the subcommands and their driver
  4 core/               runner, plans and profiles, registry, report, output, vote
  3 probes/NAME/        one folder a probe: only its own folder among the probes
  2 src/*.h, src/*.c    the framework probes and commands are written against
  1 kernels/            the arithmetic probes share: CRC32C, exact operations, half, the exact
                        and float GEMMs, ABFT sums and references, ISA dispatch
  0 base/               services: messages, parsing, time, RNG, digests, verdicts

A CUDA source (.cu, .cuh) is the GPU module's side of one probe, wherever it lies: besides the
layers below its own it may include the headers of one probe folder, and no other probe's.
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CUDA = ('.cu', '.cuh')
NAMES = {0: 'base', 1: 'kernels', 2: 'framework', 3: 'probes', 4: 'core', 5: 'commands'}


def layer(rel):
    parts = rel.split('/')
    if len(parts) == 1:
        return 5 if parts[0] == 'main.c' else 2
    return {'base': 0, 'kernels': 1, 'probes': 3, 'core': 4, 'commands': 5}.get(parts[0], 2)


def probe_folder(rel):
    parts = rel.split('/')
    return parts[1] if parts[0] == 'probes' and len(parts) > 2 else None


def sources(root):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(('.c', '.h', '.cu', '.cuh')):
                yield os.path.relpath(os.path.join(d, f), root)


def check(root):
    files = set(sources(root))
    edges = {f: [] for f in files}
    problems = []
    cuda_probe = {}
    for f in sorted(files):
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            if inc == 'sdc_config.h' or inc.startswith('builtin_'):
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if target not in files:
                target = inc
            if target not in files:
                problems.append(f'{f}: includes "{inc}", which is not a file under src/')
                continue
            edges[f].append(target)
            lf, lt = layer(f), layer(target)
            pf, pt = probe_folder(f), probe_folder(target)
            if f.endswith(CUDA) and pt:
                # the GPU module's source of one probe: that probe's headers, no other's
                if cuda_probe.setdefault(f, pt) != pt:
                    problems.append(f'{f} includes {target}: a CUDA source serves one probe '
                                    f'(it includes probes/{cuda_probe[f]}/ already)')
            elif lt > lf:
                problems.append(f'{f} ({NAMES[lf]}) includes {target} ({NAMES[lt]}): an arrow back up')
            elif pt and pt != pf:
                problems.append(f'{f} includes {target}: a probe folder\'s headers are its own')
    # cycles, by depth-first search
    state = {}

    def visit(f, stack):
        state[f] = 1
        stack.append(f)
        for t in edges[f]:
            if state.get(t) == 1:
                problems.append('include cycle: ' + ' -> '.join(stack[stack.index(t):] + [t]))
            elif not state.get(t):
                visit(t, stack)
        stack.pop()
        state[f] = 2

    for f in sorted(files):
        if not state.get(f):
            visit(f, [])
    return problems, len(files), sum(len(v) for v in edges.values())


def self_test(root):
    """Plants one bad include of each kind in a copy of the tree; each must be reported."""
    plants = [
        ('kernels/crc32c.c', '#include "core/runner.h"\n', 'back up'),
        ('core/registry.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('probes/embbag/embbag.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('kernels/cuda/ring.cu', '#include "probes/gemm/gemm_data.h"\n', 'one probe'),
        ('kernels/cuda/gemm.cu', '#include "core/runner.h"\n', 'back up'),
        ('base/util.h', '#include "base/rng.h"\n', None),  # a legal include: must not be reported
        ('base/rng.h', '#include "base/philox.h"\n#include "base/util.h"\n', None),
        ('base/util.h', '#include "base/util.h"\n', 'cycle'),
    ]
    failures = 0
    for path, line, expect in plants:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, 'src')
            shutil.copytree(root, copy)
            target = os.path.join(copy, path)
            with open(target, encoding='utf-8') as fh:
                text = fh.read()
            with open(target, 'w', encoding='utf-8') as fh:
                fh.write(line + text)
            problems, _, _ = check(copy)
            caught = any(expect and expect in p for p in problems)
            if expect and not caught:
                print(f'FAIL self-test: {line.strip()} in {path} was not reported')
                failures += 1
            if not expect and problems:
                print(f'FAIL self-test: a legal include in {path} was reported: {problems[0]}')
                failures += 1
    print('self-test:', 'PASS' if not failures else f'{failures} failure(s)')
    return 1 if failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--self-test':
        return self_test(sys.argv[2])
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems, nfiles, nedges = check(sys.argv[1])
    for p in problems:
        print('FAIL', p)
    print(f'{nfiles} files, {nedges} includes: ' + ('PASS' if not problems else f'{len(problems)} problem(s)'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
