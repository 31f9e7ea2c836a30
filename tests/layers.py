#!/usr/bin/env python3
"""The layers of src/ and the only direction includes may point: down.

usage: layers.py SRC_DIR          check the tree; exit 1 and name every include that points up,
                                  crosses into another probe's folder, closes a cycle, or brings
                                  the JSON format into a probe
       layers.py --self-test SRC  the same check on copies of the tree with one bad include
                                  planted each way: each must be caught (so this test can fail)

Layers, top to bottom (a file may include its own layer or any layer below it):
  7 commands/, main.c    the subcommands and their driver
  6 core/                runner, plans and profiles, registry, report, output, vote
  5 probes/NAME/         the probe: descriptor, engine, tools (benchmarks, campaign, calibration,
                         golden recorder); only its own folder among the probes
  4 the probe interface  probe.h and the framework written in its terms: command (a probe's
                         tools are commands), golden (a probe's results), fatal and regfault (and
                         its tracer, regfault_trace: the faults a probe's workers meet)
  3 framework services   every other src/*.c, src/*.h: options, stop, devices, the run and its
                         findings, facts, fleet transport, hardware errors, injection, benchmark
                         harness; they serve any run and know nothing of what a probe is
  2 probes/NAME/ arithmetic
                         the probe's model or workload and its checks: the folder's files built
                         into libraries that do not link the framework (src/meson.build: every
                         probe source outside core_sources, the exact class and -O3 kernels) or
                         into the GPU module (.cu), and the headers of the folder they include
                         (but X.h where X.c is built into the framework: that is the probe's);
                         only base/, kernels/ and its own folder's arithmetic, so it builds and
                         is tested without the framework (the golden suite rebuilds it alone)
  1 kernels/             the arithmetic probes share: CRC32C, exact operations, half, the exact
                         and float GEMMs, ABFT sums and references, ISA dispatch
  0 base/                services: messages, parsing, time, RNG, digests, verdicts

A CUDA source (.cu, .cuh) is the GPU module's side of one probe, wherever it lies: besides the
layers below its own it may include the headers of one probe folder, and no other probe's (and
those headers are that probe's arithmetic).

What a probe reports it states as facts (facts.h); the JSON they end in is the framework's. No
file under probes/ includes <jansson.h> or facts_json.h (the framework's cast of facts to
jansson), directly or through any header it includes.
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
# The JSON format: jansson, and the framework's header that hands facts to it (facts_json.h).
JSON_SYSTEM, JSON_FRAMEWORK = 'jansson.h', 'facts_json.h'
CUDA = ('.cu', '.cuh')
NAMES = {0: 'base', 1: 'kernels', 2: 'probe arithmetic', 3: 'framework services',
         4: 'probe interface', 5: 'probes', 6: 'core', 7: 'commands'}
# The framework's files (by name, without .c or .h) that speak of probes; all others are services.
PROBE_INTERFACE = {'probe', 'command', 'golden', 'fatal', 'regfault', 'regfault_trace'}
CORE_SOURCES = re.compile(r'core_sources\s*=\s*files\((.*?)\)', re.S)
MESON_PROBE_SOURCE = re.compile(r"'(probes/[^']+\.(?:c|cu))'")


def layer(rel, arithmetic):
    parts = rel.split('/')
    if len(parts) == 1:
        if parts[0] == 'main.c':
            return 7
        return 4 if os.path.splitext(parts[0])[0] in PROBE_INTERFACE else 3
    if parts[0] == 'probes':
        return 2 if rel in arithmetic else 5
    return {'base': 0, 'kernels': 1, 'core': 6, 'commands': 7}.get(parts[0], 3)


def probe_folder(rel):
    parts = rel.split('/')
    return parts[1] if parts[0] == 'probes' and len(parts) > 2 else None


def sources(root):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(('.c', '.h', '.cu', '.cuh')):
                yield os.path.relpath(os.path.join(d, f), root)


def build_split(root, files):
    """From src/meson.build: the probe files built outside the framework (named there but not
    among core_sources, or CUDA) and the headers of the probe sources inside it (X.h beside an
    X.c of core_sources). Returns (seeds, framework headers, problem or None)."""
    seeds = {f for f in files if probe_folder(f) and f.endswith(CUDA)}
    unknown = ': cannot tell which probe files are arithmetic'
    try:
        with open(os.path.join(root, 'meson.build'), encoding='utf-8') as fh:
            meson = fh.read()
    except OSError as e:
        return seeds, set(), f'meson.build: {e.strerror}{unknown}'
    core = CORE_SOURCES.search(meson)
    if not core:
        return seeds, set(), f'meson.build: no core_sources = files(...){unknown}'
    outside = meson[:core.start()] + meson[core.end():]
    inside = MESON_PROBE_SOURCE.findall(core.group(1))
    for name in MESON_PROBE_SOURCE.findall(outside) + inside:
        if name not in files:
            return seeds, set(), f'meson.build names {name}, which is not a file under src/'
    seeds |= set(MESON_PROBE_SOURCE.findall(outside))
    return seeds, {name[:-2] + '.h' for name in inside if name[:-2] + '.h' in files}, None


def arithmetic_closure(seeds, framework_headers, edges):
    """Every probe file a seed or a CUDA source reaches through probe headers that are not the
    headers of framework sources: {file: the seed it was reached from}."""
    why = {}
    stack = [(s, s) for s in sorted(seeds)]
    stack += [(t, f) for f in sorted(edges) if f.endswith(CUDA)
              for t in edges[f] if probe_folder(t)]
    while stack:
        f, seed = stack.pop()
        if f in why or f in framework_headers:
            continue
        why[f] = seed
        stack += [(t, seed) for t in edges[f] if probe_folder(t)]
    return why


def read_edges(root, files, problems, json_direct):
    """The includes between files under src/; json_direct gets the files that include the
    JSON format's headers themselves."""
    edges = {f: [] for f in files}
    for f in sorted(files):
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            text = fh.read()
        if JSON_SYSTEM in SYSTEM_INCLUDE.findall(text):
            json_direct[f] = f'<{JSON_SYSTEM}>'
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
    return edges


def json_reach(files, edges, json_direct):
    """Every probe file that reaches the JSON format, with the chain of includes that does."""
    problems = []
    for f in sorted(files):
        if not probe_folder(f):
            continue
        seen, queue = {f: [f]}, [f]
        while queue:  # breadth first: the shortest chain is the one said
            g = queue.pop(0)
            if g in json_direct or g == JSON_FRAMEWORK:
                chain = ' -> '.join(seen[g] + ([json_direct[g]] if g in json_direct else []))
                problems.append(f'{f} reaches the JSON format ({chain}): a probe states facts '
                                '(facts.h) and the framework writes them')
                break
            for t in edges[g]:
                if t not in seen:
                    seen[t] = seen[g] + [t]
                    queue.append(t)
    return problems


def describe(f, lf, why):
    if lf == 2:
        origin = '' if why[f] == f else f', reached from {why[f]}'
        return f'{f} ({probe_folder(f)}\'s arithmetic{origin})'
    return f'{f} ({NAMES[lf]})'


def check(root):
    files = set(sources(root))
    problems = []
    json_direct = {}
    edges = read_edges(root, files, problems, json_direct)
    problems += json_reach(files, edges, json_direct)
    seeds, framework_headers, problem = build_split(root, files)
    if problem:
        problems.append(problem)
    why = arithmetic_closure(seeds, framework_headers, edges)
    cuda_probe = {}
    for f in sorted(files):
        for target in edges[f]:
            lf, lt = layer(f, why), layer(target, why)
            pf, pt = probe_folder(f), probe_folder(target)
            if f.endswith(CUDA) and pt:
                # the GPU module's source of one probe: that probe's headers, no other's
                if cuda_probe.setdefault(f, pt) != pt:
                    problems.append(f'{f} includes {target}: a CUDA source serves one probe '
                                    f'(it includes probes/{cuda_probe[f]}/ already)')
            elif lt > lf:
                problems.append(f'{describe(f, lf, why)} includes {describe(target, lt, why)}: '
                                'an arrow back up')
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
    return problems, len(files), sum(len(v) for v in edges.values()), len(why)


def self_test(root):
    """Plants one bad include of each kind in a copy of the tree; each must be reported."""
    plants = [
        ('kernels/crc32c.c', '#include "core/runner.h"\n', 'back up'),
        ('core/registry.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('probes/embbag/embbag.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('probes/allreduce/ring.cu', '#include "probes/gemm/gemm_data.h"\n', 'one probe'),
        ('probes/gemm/gemm.cu', '#include "core/runner.h"\n', 'back up'),
        # a probe's arithmetic: no framework, directly or through the probe's own header
        ('probes/minitrain/mt_dlrm.c', '#include "run.h"\n',
         "minitrain's arithmetic) includes run.h"),
        ('probes/ecparity/parity.c', '#include "probes/ecparity/ecparity.h"\n',
         "ecparity's arithmetic) includes probes/ecparity/ecparity.h (probes)"),
        ('probes/gemm/gemm_data.h', '#include "probes/gemm/dist.h"\n',
         "gemm's arithmetic, reached from"),
        ('probes/minitrain/mt_internal.h', '#include "probe.h"\n', "arithmetic, reached from"),
        ('probes/allreduce/ring_check.c', '#include "kernels/gemm_float.h"\n', None),
        ('probes/minitrain/minitrain.c', '#include "probes/minitrain/mt_ops.h"\n', None),
        # the framework's services know nothing of probes
        ('run.c', '#include "probe.h"\n',
         '(framework services) includes probe.h (probe interface)'),
        ('fleet.c', '#include "command.h"\n', '(framework services) includes command.h'),
        # the split is read from the build: a name there that is no file is said, not skipped
        ('meson.build', "x = files('probes/gemm/gone.c')\n", 'which is not a file under src/'),
        ('golden.c', '#include "run.h"\n', None),
        # the JSON format stays out of the probes: directly, through the framework's headers, or
        # through a probe's own header; the framework itself may include it
        ('probes/ecparity/bench.c', '#include <jansson.h>\n',
         'probes/ecparity/bench.c reaches the JSON format (probes/ecparity/bench.c -> <jansson.h>)'),
        ('probes/gemm/campaign.c', '#include "facts_json.h"\n',
         '(probes/gemm/campaign.c -> facts_json.h'),
        ('bench.h', '#include <jansson.h>\n', ' -> bench.h -> <jansson.h>)'),
        ('probes/gemm/calibration.h', '#include <jansson.h>\n',
         '(probes/gemm/calibrate.c -> probes/gemm/calibration.h -> <jansson.h>)'),
        ('bench.c', '#include "facts_json.h"\n', None),
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
            problems = check(copy)[0]
            caught = any(expect and expect in p for p in problems)
            if expect and not caught:
                print(f'FAIL self-test: {line.strip()} in {path} was not reported'
                      + (f' as "{expect}": {problems}' if problems else ''))
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
    problems, nfiles, nedges, narith = check(sys.argv[1])
    for p in problems:
        print('FAIL', p)
    print(f'{nfiles} files ({narith} of them probe arithmetic), {nedges} includes: '
          + ('PASS' if not problems else f'{len(problems)} problem(s)'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
