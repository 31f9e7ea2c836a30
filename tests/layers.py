#!/usr/bin/env python3
"""The layers of src/ and the only direction includes may point: down.

usage: layers.py SRC_DIR          check the tree; exit 1 and name every include or call that points
                                  up, crosses into another probe's folder, closes a circle, or
                                  brings the JSON format into a probe
       layers.py --draw SRC_DIR   the house as rooms (src/'s folders, each probe a room), floors,
                                  arrows between rooms, arrows back up and circles
       layers.py --self-test SRC  the same check on copies of the tree with one bad include
                                  planted each way: each must be caught (so this test can fail)

Floors, top to bottom (a file may include or call its own floor or any floor below it; a call
is an arrow when it names a function or data that one .c or .cu file alone defines):
 12 main.c
 11 commands/           the subcommands and their driver
 10 runner/             the run: plans, profiles, registry, burns and their supervisor, report,
                        output, vote, history, the node's state
  9 probes/NAME/        the probe: descriptor, engine, tools (benchmarks, campaign, calibration,
                        golden recorder); only its own folder among the probes
  8 inject/             faults planted the way a sick core makes them (fatal faults, the
                        register-fault injector and its tracer, campaign pages)
  7 probe/              the probe interface: probe.h, commands' helpers, golden files, the
                        benchmark race
  6 hwerr/              hardware error counters around a run
  5 mpi/                the MPI transport, and the GPUs of a run's ranks
  4 run/                the run record: what was asked, what happened, the facts probes state
  3 device/             CPUs and GPUs: discovery, the GPU module's loader, NVML
  2 probes/NAME/ arithmetic
                        the probe's model or workload and its checks: the folder's files built
                        into libraries that do not link the framework (its meson.build: every
                        list but probe_framework_sources, the exact class, -O3 kernels and the
                        fake module's twin) or into the GPU module (.cu), and the headers of the
                        folder they include
                        (but X.h where X.c is built into the framework: that is the probe's);
                        only base/, kernels/ and its own folder's arithmetic, so it builds and
                        is tested without the framework (the golden suite rebuilds it alone)
  1 kernels/            the arithmetic probes share, the GPU module's base (kernels/cuda/) and
                        the fake module's (kernels/fake/; each family's twin, fake_NAME.c, is
                        its probe's arithmetic)
  0 base/               services: messages, parsing, options, signals, time, RNG, digests

src/ holds main.c, meson.build and folders only, and no two files are tied in a circle (a file
that reaches itself through includes and calls). Every probe folder is in the probe list
(src/probes/meson.build), and its meson.build names each of its .c and .cu files in a list.

A CUDA source (.cu, .cuh) is the GPU module's side of one probe, wherever it lies: besides the
layers below its own it may include the headers of one probe folder, and no other probe's (and
those headers are that probe's arithmetic).

What a probe reports it states as facts (run/facts.h); the JSON they end in is the framework's. No
file under probes/ includes <jansson.h> or run/facts_json.h (the framework's cast of facts to
jansson), directly or through any header it includes.
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
# The JSON format: jansson, and the framework's header that hands facts to it (run/facts_json.h).
JSON_SYSTEM, JSON_FRAMEWORK = 'jansson.h', 'run/facts_json.h'
CUDA = ('.cu', '.cuh')
FOLDERS = {'base': 0, 'kernels': 1, 'device': 3, 'run': 4, 'mpi': 5, 'hwerr': 6, 'probe': 7,
           'inject': 8, 'runner': 10, 'commands': 11}
NAMES = {0: 'base', 1: 'kernels', 2: 'probe arithmetic', 3: 'device', 4: 'run record', 5: 'mpi',
         6: 'hwerr', 7: 'probe interface', 8: 'inject', 9: 'probes', 10: 'runner', 11: 'commands',
         12: 'main'}
MESON_PROBE_NAMES = re.compile(r'probe_names\s*=\s*\[(.*?)\]', re.S)
MESON_LIST_ADD = re.compile(r'^[ \t]*(\w+)\s*\+=\s*(files\([^()]*\)|\[[^\]]*\])\s*$', re.M)
MESON_ANY_ADD = re.compile(r'^[ \t]*\w+\s*\+=', re.M)
FRAMEWORK_LIST = 'probe_framework_sources'
# Headers the build writes (meson.build, src/probes/meson.build): no file under src/ to follow.
WRITTEN_BY_BUILD = {'sdc_config.h', 'probes/probe_list.h'}


def layer(rel, arithmetic):
    parts = rel.split('/')
    if len(parts) == 1:
        return 12  # main.c; any other loose file is refused by check()
    if parts[0] == 'probes':
        return 2 if rel in arithmetic else 9
    return FOLDERS.get(parts[0], 12)


def probe_folder(rel):
    parts = rel.split('/')
    return parts[1] if parts[0] == 'probes' and len(parts) > 2 else None


def sources(root):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(('.c', '.h', '.cu', '.cuh')):
                yield os.path.relpath(os.path.join(d, f), root)


def read_meson(root, path):
    """A meson.build's text without its comments (None when it cannot be read, with why)."""
    try:
        with open(os.path.join(root, path), encoding='utf-8') as fh:
            return re.sub(r'#[^\n]*', '', fh.read()), None
    except OSError as e:
        return None, e.strerror


def probe_lists(root):
    """The probe list and each probe folder's build lists, from src/probes/meson.build and
    src/probes/NAME/meson.build: (probe names, {(folder, list name): [file under src/]}, problems).
    The forms read: probe_names = ['a', ...]; LIST += files('x.c', ...) (names in the folder) and
    LIST += ['probes/NAME/x.cu', ...] (names under src/: the CUDA lists'); any other += is said."""
    meson, why = read_meson(root, os.path.join('probes', 'meson.build'))
    names = MESON_PROBE_NAMES.search(meson or '')
    if not names:
        return [], {}, [f'probes/meson.build: {why or "no probe_names = [...]"}: cannot tell '
                        'which probes are built']
    names = re.findall(r"'([^']+)'", names.group(1))
    problems, lists = [], {}
    for name in names:
        path = os.path.join('probes', name, 'meson.build')
        meson, why = read_meson(root, path)
        if meson is None:
            problems.append(f'{path}: {why}: the probe list names {name}, whose folder does not '
                            'say its sources')
            continue
        read = {m.start() for m in MESON_LIST_ADD.finditer(meson)}
        problems += [f'{path}: cannot read "{m.group(0).strip()} ...": a list grows by '
                     "LIST += files('x.c', ...) or LIST += ['probes/NAME/x.cu', ...]"
                     for m in MESON_ANY_ADD.finditer(meson) if m.start() not in read]
        for m in MESON_LIST_ADD.finditer(meson):
            here = m.group(2).startswith('files(')
            for f in re.findall(r"'([^']+)'", m.group(2)):
                lists.setdefault((name, m.group(1)), []).append(f'probes/{name}/{f}' if here else f)
    return names, lists, problems


def build_split(root, files):
    """From the probes' meson.build: the probe files built outside the framework (in any list but
    probe_framework_sources, or CUDA) and the headers of the probe sources inside it (X.h beside an
    X.c of probe_framework_sources). Returns (seeds, framework headers, problems). A probe folder
    left out of the probe list, a source no list names and a name that is no file are problems:
    each would leave a file unbuilt or the split unknown."""
    seeds = {f for f in files if probe_folder(f) and f.endswith(CUDA)}
    names, lists, problems = probe_lists(root)
    inside, named = set(), {}
    for (name, which), entries in sorted(lists.items()):
        for f in entries:
            if f not in files:
                problems.append(f'probes/{name}/meson.build names {f} in {which}, which is not a '
                                'file under src/')
                continue
            if f in named:
                problems.append(f'probes/{name}/meson.build names {f} in {named[f]} and in '
                                f'{which}: a source is built once')
            named[f] = which
            (inside if which == FRAMEWORK_LIST else seeds).add(f)
    for f in sorted(files):
        folder = probe_folder(f)
        if folder and names and folder not in names:
            problems.append(f'{f}: probes/{folder}/ is not in probes/meson.build\'s probe list')
        elif folder and names and f.endswith(('.c', '.cu')) and f not in named:
            problems.append(f'{f}: no list of probes/{folder}/meson.build names it (not built)')
    seeds -= inside
    return seeds, {f[:-2] + '.h' for f in inside if f[:-2] + '.h' in files}, problems


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
            if inc in WRITTEN_BY_BUILD or inc.startswith('builtin_'):
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
                                '(run/facts.h) and the framework writes them')
                break
            for t in edges[g]:
                if t not in seen:
                    seen[t] = seen[g] + [t]
                    queue.append(t)
    return problems


def code_of(text):
    """The C a file compiles: no comments, strings, characters or preprocessor lines."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    text = re.sub(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)', ' ', text)
    return re.sub(r'^[ \t]*#(?:\\\n|[^\n])*', ' ', text, flags=re.M)  # with its continued lines


IDENT = re.compile(r'[A-Za-z_]\w*')
MACRO = re.compile(r'[A-Z][A-Z0-9_]*$')  # FAKE_HIDDEN after a name: an attribute, not the name
TOKEN = re.compile(r'[{}()\[\]=;,*]|[A-Za-z_]\w*')
HIDDEN = {'static', 'typedef', 'extern'}


def data_name(decl, fptr, cuda):
    """The name a file-scope declarator defines as data, or None: decl is the declaration's tokens
    up to the declarator's end (its = , or ;), fptr the name inside (*NAME)."""
    if '=' in decl or HIDDEN & set(decl) or (cuda and {'const', 'constexpr'} & set(decl)):
        return None  # (namespace-scope const in C++ is the file's own)
    if fptr:
        return fptr
    words = list(decl)
    while len(words) > 2 and MACRO.match(words[-1]):
        words.pop()
    if len(words) < 2 or not IDENT.fullmatch(words[-1]) or words[-2] in ('struct', 'union', 'enum'):
        return None
    return words[-1]


def definitions(code, cuda=False):
    """The functions and data a .c or .cu file defines for others: at file scope, not static,
    extern or typedef; a function is a name, its parameters and a body (a name under a macro's
    arguments is not one), data a name with or without an initializer, after a comma, under
    struct {...}, or a pointer to a function (a table another file reads is as much an arrow as a
    function it calls). A macro's use with no semicolon after it ends its declaration."""
    out, tokens = set(), TOKEN.findall(code)
    depth = paren = bracket = 0
    decl, name, fptr, prefix, closed, body = [], None, None, [], False, False
    for i, s in enumerate(tokens):
        if depth:  # inside a body or an initializer: only its braces count
            depth += {'{': 1, '}': -1}.get(s, 0)
            if depth == 0:
                if body:
                    decl, name, body = [], None, False
                else:
                    decl.append('}')  # struct {...} x; or = {...}
            continue
        if bracket:  # an array's size is no name of its own
            bracket += {'[': 1, ']': -1}.get(s, 0)
            continue
        if paren:  # parameters, a macro's arguments, (*NAME)
            paren += {'(': 1, ')': -1}.get(s, 0)
            closed = paren == 0
            if fptr == '' and IDENT.fullmatch(s):
                fptr = s
            continue
        if s == '{':
            body = bool(name) and '=' not in decl
            if body and not HIDDEN & set(decl):
                out.add(name)
            depth = 1
        elif s == '[':
            bracket = 1
        elif s == '(':
            if '=' not in decl and fptr is None and not name:
                if i + 1 < len(tokens) and tokens[i + 1] == '*':
                    fptr = ''  # void (*NAME)(...): data, named inside
                elif decl and IDENT.fullmatch(decl[-1]) and not decl[-1].startswith('_'):
                    name = decl[-1]
            paren, closed = 1, False
        elif s in ('=', ';', ','):
            if '=' not in decl and not name:
                found = data_name(decl, fptr, cuda)
                if found:
                    out.add(found)
                prefix = [t for t in decl if t != '*'][:-1] if not fptr else []
            if s == ';':
                decl, name, fptr, prefix = [], None, None, []
            elif s == ',':
                decl, name, fptr = list(prefix), None, None
            else:
                decl.append(s)
            closed = False
        elif s in ('}', ')'):
            continue
        else:
            if closed and name:  # MACRO(args) with no ; after it: a declaration of its own
                decl, name = [], None
            closed = False
            decl.append(s)
    return out


def call_edges(root, files):
    """{file: {callee file: a name it calls there}} for every .c or .cu file's use of a function
    or data that one other .c or .cu file alone defines (two definers, such as the MPI and the
    single process transports, or a kernel and its fake twin, are a choice the build makes: no
    arrow)."""
    code = {}
    for f in files:
        if f.endswith(('.c', '.cu')):
            with open(os.path.join(root, f), encoding='utf-8') as fh:
                code[f] = code_of(fh.read())
    definers = {}
    for f, c in code.items():
        for name in definitions(c, f.endswith('.cu')):
            definers.setdefault(name, set()).add(f)
    edges = {f: {} for f in files}
    for f, c in code.items():
        c = re.sub(r'\b(?:struct|union|enum)\s+\w+', ' ', c)  # a tag is no call of a like-named function
        for name in sorted(set(IDENT.findall(c))):
            d = definers.get(name)
            if d and len(d) == 1 and f not in d:
                edges[f].setdefault(next(iter(d)), name)
    return edges


def circles(edges):
    """The strongly connected sets of more than one file (Tarjan's algorithm, without recursion)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = n
        n += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def describe(f, lf, why):
    if lf == 2:
        origin = '' if why[f] == f else f', reached from {why[f]}'
        return f'{f} ({probe_folder(f)}\'s arithmetic{origin})'
    return f'{f} ({NAMES[lf]})'


def check(root):
    files = set(sources(root))
    problems = [f'{f}: src/ holds main.c, meson.build and folders only' for f in sorted(files)
                if '/' not in f and f != 'main.c']
    problems += [f'{f}: src/probes/ holds the probe list and a folder a probe' for f in sorted(files)
                 if f.startswith('probes/') and f.count('/') == 1]
    problems += [f'{f}: {f.split("/")[0]}/ is no floor of the house (tests/layers.py FOLDERS)'
                 for f in sorted(files) if '/' in f and f.split('/')[0] not in FOLDERS
                 and f.split('/')[0] != 'probes']
    json_direct = {}
    edges = read_edges(root, files, problems, json_direct)
    problems += json_reach(files, edges, json_direct)
    seeds, framework_headers, split_problems = build_split(root, files)
    problems += split_problems
    why = arithmetic_closure(seeds, framework_headers, edges)
    calls = call_edges(root, files)
    cuda_probe = {}
    for f in sorted(files):
        arrows = [(t, 'includes', '') for t in edges[f]]
        arrows += [(t, 'calls', f' ({name})') for t, name in sorted(calls[f].items())]
        for target, verb, name in arrows:
            lf, lt = layer(f, why), layer(target, why)
            pf, pt = probe_folder(f), probe_folder(target)
            if f.endswith(CUDA) and pt and verb == 'includes':
                # the GPU module's source of one probe: that probe's headers, no other's
                if cuda_probe.setdefault(f, pt) != pt:
                    problems.append(f'{f} includes {target}: a CUDA source serves one probe '
                                    f'(it includes probes/{cuda_probe[f]}/ already)')
            elif f.endswith(CUDA) and target.endswith(CUDA) and pt and pt == pf:
                pass  # one lane's kernels, linked into one module
            elif lt > lf:
                problems.append(f'{describe(f, lf, why)} {verb} {describe(target, lt, why)}{name}: '
                                'an arrow back up')
            elif pt and pt != pf:
                problems.append(f'{f} {verb} {target}{name}: a probe folder\'s files are its own')
    graph = {f: set(edges[f]) | set(calls[f]) for f in files}
    problems += [f'circle: {f} includes itself' for f in sorted(files) if f in edges[f]]
    for comp in circles(graph):
        problems.append('circle: ' + ', '.join(comp) + ' reach each other through includes and calls')
    return problems, len(files), sum(len(v) for v in edges.values()), len(why), (graph, why)


def room(f):
    parts = f.split('/')
    return '/'.join(parts[:2]) if parts[0] == 'probes' and len(parts) > 2 else parts[0]


def draw(root):
    """The house in figures: rooms (src/'s folders, each probe folder one room), floors (the
    longest chain of rooms, each standing above all it reaches), arrows between rooms, file
    arrows that point up a floor, and circles of files."""
    problems, nfiles, _, _, (graph, why) = check(root)
    rooms = {}
    for f, targets in graph.items():
        rooms.setdefault(room(f), set()).update(room(t) for t in targets if room(t) != room(f))
    up = [p for p in problems if 'an arrow back up' in p]
    ncircles = sum(p.startswith('circle: ') for p in problems)
    height, busy = {}, set()

    def floor_of(r):  # rooms in a circle of rooms are counted once, on the floor first met
        if r in height:
            return height[r]
        if r in busy:
            return 0
        busy.add(r)
        height[r] = 1 + max((floor_of(t) for t in sorted(rooms[r])), default=-1)
        return height[r]

    for r in sorted(rooms):
        floor_of(r)
    print(f'{len(rooms)} rooms, {1 + max(height.values())} floors, '
          f'{sum(len(v) for v in rooms.values())} arrows, {len(up)} back up, {ncircles} circles '
          f'({nfiles} files)')
    for r in sorted(rooms, key=lambda r: (-height[r], r)):
        print(f'  floor {height[r]:2d}  {r:22s} -> {" ".join(sorted(rooms[r])) or "-"}')
    for p in up + [p for p in problems if p.startswith('circle: ')]:
        print('  ' + p)
    return 0


# File-scope C and what it defines for other files (C11 6.9, 6.7): the parse that calls and data
# arrows rest on, checked on each form before the planted trees.
PARSE_CASES = [
    ('int a = 1, b;', {'a', 'b'}),
    ('int a = f(1), b;', {'a', 'b'}),
    ('static int s; extern int e; typedef int t;', set()),
    ('char x[sizeof(long)];', {'x'}),
    ('void (*hook)(void);', {'hook'}),
    ('_Atomic(int) counter;', {'counter'}),
    ('_Alignas(64) char buf[64];', {'buf'}),
    ('struct { int a; } anon_x;', {'anon_x'}),
    ('enum e { A, B } chosen = A;', {'chosen'}),
    ('struct foo { int a; };', set()),
    ('int marked __attribute__((unused)) = 1;', {'marked'}),
    ('int v FAKE_HIDDEN = 1;', {'v'}),
    ('DECLARE(x)\nconst int *const table[] = { 0 };', {'table'}),
    ('DECL(x)\nstruct foo { int a; };', set()),
    ('int f(void) { return 0; }\nstatic int g(void) { return 1; }', {'f'}),
    ('int proto(void);', set()),
    ('const struct row t4[5] = { { 1 } }, t5[5] = { { 2 } };', {'t4', 't5'}),
]


def parse_self_test():
    failures = 0
    for text, want in PARSE_CASES + [('.cu: const int k = 3; int d = 1;', {'d'})]:
        cuda = text.startswith('.cu: ')
        got = definitions(code_of(text[5:] if cuda else text), cuda)
        if got != want:
            print(f'FAIL self-test: {text!r} defines {sorted(want)}, the parse said {sorted(got)}')
            failures += 1
    return failures


def self_test(root):
    """Plants one bad include of each kind in a copy of the tree; each must be reported."""
    plants = [
        ('kernels/crc32c.c', '#include "runner/runner.h"\n', 'back up'),
        ('runner/registry.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('probes/embbag/embbag.c', '#include "probes/gemm/abft.h"\n', "probe folder"),
        ('probes/allreduce/ring.cu', '#include "probes/gemm/gemm_data.h"\n', 'one probe'),
        ('probes/gemm/gemm.cu', '#include "runner/runner.h"\n', 'back up'),
        # a probe's arithmetic: no framework, directly or through the probe's own header
        ('probes/minitrain/mt_dlrm.c', '#include "run/record.h"\n',
         "minitrain's arithmetic) includes run/record.h"),
        ('probes/ecparity/parity.c', '#include "probes/ecparity/ecparity.h"\n',
         "ecparity's arithmetic) includes probes/ecparity/ecparity.h (probes)"),
        ('probes/gemm/gemm_data.h', '#include "probes/gemm/dist.h"\n',
         "gemm's arithmetic, reached from"),
        ('probes/minitrain/mt_internal.h', '#include "probe/probe.h"\n', "arithmetic, reached from"),
        ('probes/allreduce/ring_check.c', '#include "kernels/gemm_float.h"\n', None),
        ('probes/minitrain/minitrain.c', '#include "probes/minitrain/mt_ops.h"\n', None),
        # the floors below the probe interface know nothing of probes
        ('run/record.c', '#include "probe/probe.h"\n',
         '(run record) includes probe/probe.h (probe interface)'),
        ('mpi/transport.c', '#include "probe/command.h"\n', '(mpi) includes probe/command.h'),
        ('device/gpu_loader.c', '#include "mpi/transport.h"\n', '(device) includes mpi/transport.h (mpi)'),
        # calls count as arrows: a function that one file alone defines, called from below
        ('base/verdict.c', 'static void planted(void) { sdc_runner_execute(0, 0, 0); }\n',
         'calls runner/runner.c (runner) (sdc_runner_execute): an arrow back up'),
        ('probes/embbag/lane.c', 'static void planted(void) { sdc_calibration_find(0, 0, 0, 0); }\n',
         "a probe folder's files are its own"),
        # data counts as calls do: a table or a state one file alone defines, read from below
        # (a second name after a comma counts as the first)
        ('kernels/crc32c.c', 'static void *planted(void) { return &sdc_mpi; }\n',
         'calls mpi/rank.c (mpi) (sdc_mpi): an arrow back up'),
        ('base/verdict.c', 'static const void *planted(void) { return sdc_vabft_t5; }\n',
         '(sdc_vabft_t5): an arrow back up'),
        # a circle of files on one floor: the report's fields calling up into its export
        ('runner/report_fields.c', 'static void planted(void) { sdc_export_junit(0, 0, 0, 0); }\n',
         'circle: runner/export.c, runner/report_fields.c'),
        # src/ holds main.c and folders
        ('loose.c', '/* a file left in the hallway */\n', 'src/ holds main.c, meson.build and folders only'),
        # the split is read from the probes' build lists: a name there that is no file, a source
        # no list names and a probe folder the probe list leaves out are said, not skipped
        ('probes/gemm/meson.build', "probe_kernel_sources += files('gone.c')\n",
         'which is not a file under src/'),
        ('probes/gemm/stray.c', '/* a source the build never compiles */\n',
         'no list of probes/gemm/meson.build names it (not built)'),
        ('probes/newprobe/newprobe.c', '/* a probe left out of the list */\n',
         "probes/newprobe/ is not in probes/meson.build's probe list"),
        ('probes/minitrain/meson.build', "probe_framework_sources += files('model.c')\n",
         "minitrain's arithmetic"),
        ('probes/gemm/meson.build', "probe_kernel_sources += files('dist.c')\n",
         'in probe_framework_sources and in probe_kernel_sources: a source is built once'),
        ('probes/gemm/meson.build', "if true\n  probe_kernel_sources += other_list\nendif\n",
         'cannot read "probe_kernel_sources += ..."'),
        ('probes/loose.c', '/* beside the probes, in none */\n', 'src/probes/ holds the probe list'),
        ('probes/meson.build', "# probe_names = ['gemm'] (a comment, not the list)\n", None),
        ('probe/golden_file.c', '#include "run/record.h"\n', None),
        # the JSON format stays out of the probes: directly, through the framework's headers, or
        # through a probe's own header; the framework itself may include it
        ('probes/ecparity/bench.c', '#include <jansson.h>\n',
         'probes/ecparity/bench.c reaches the JSON format (probes/ecparity/bench.c -> <jansson.h>)'),
        ('probes/gemm/campaign.c', '#include "run/facts_json.h"\n',
         '(probes/gemm/campaign.c -> run/facts_json.h'),
        ('probe/bench_race.h', '#include <jansson.h>\n', ' -> probe/bench_race.h -> <jansson.h>)'),
        ('probes/gemm/calibration.h', '#include <jansson.h>\n',
         '(probes/gemm/calibrate.c -> probes/gemm/calibration.h -> <jansson.h>)'),
        ('probe/bench_race.c', '#include "run/facts_json.h"\n', None),
        ('base/message.h', '#include "base/rng.h"\n', None),  # a legal include: must not be reported
        ('base/rng.h', '#include "base/philox.h"\n#include "base/message.h"\n', None),
        ('base/message.h', '#include "base/message.h"\n', 'circle'),
    ]
    failures = parse_self_test()
    for path, line, expect in plants:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, 'src')
            shutil.copytree(root, copy)
            target = os.path.join(copy, path)
            text = ''
            if os.path.exists(target):
                with open(target, encoding='utf-8') as fh:
                    text = fh.read()
            os.makedirs(os.path.dirname(target), exist_ok=True)
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
    if len(sys.argv) == 3 and sys.argv[1] == '--draw':
        return draw(sys.argv[2])
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems, nfiles, nedges, narith, _ = check(sys.argv[1])
    for p in problems:
        print('FAIL', p)
    print(f'{nfiles} files ({narith} of them probe arithmetic), {nedges} includes and calls: '
          + ('PASS' if not problems else f'{len(problems)} problem(s)'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
