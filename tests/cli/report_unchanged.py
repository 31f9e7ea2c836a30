#!/usr/bin/env python3
"""Two reports of the same command and seed say the same, times and the host aside.

usage: report_unchanged.py BEFORE.json AFTER.json

Dropped before comparing: what a clock or the machine decides (seconds, rates, starts, ends,
the host, its devices' identity, the kernels and libraries chosen for this CPU, the tool's
build and command line, the node's state) -- the exact class's results, digests, findings and
injections do not depend on any of them (tests/cli/work_digest.sh: every kernel gives the same
digest). Everything else must be equal: each difference is printed, and the exit status is 1.
"""
import json
import sys

MACHINE = {'host', 'devices', 'tool', 'node', 'environment', 'kernel'}
# Changes made on purpose since the reference was written, each with why: (path, before, after).
MEANT = [
    # issue 39: the GPU burn deepened so the row check's re-read of C is within 5% by the roofline
    ('report.run.probes[0].options.gpu_k', '4096', '32768'),
]


def timeless(x):
    if isinstance(x, dict):
        return {k: timeless(v) for k, v in x.items()
                if k not in MACHINE and k not in ('rate', 'start', 'end')
                and not k.endswith(('seconds', '_time', '_at'))}
    if isinstance(x, list):
        return [timeless(v) for v in x]
    return x


def differences(a, b, path='report'):
    if type(a) is not type(b):
        return [f'{path}: {a!r:.80} became {b!r:.80}']
    if isinstance(a, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f'{path}.{k}')]
    if isinstance(a, list):
        out = [] if len(a) == len(b) else [f'{path}: {len(a)} entries became {len(b)}']
        return out + [d for i, (u, v) in enumerate(zip(a, b)) for d in differences(u, v, f'{path}[{i}]')]
    return [] if a == b else [f'{path}: {a!r:.80} became {b!r:.80}']


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    before, after = (timeless(json.load(open(p, encoding='utf-8'))) for p in sys.argv[1:])
    meant = {f'{p}: {a!r:.80} became {b!r:.80}' for p, a, b in MEANT}
    found = [d for d in differences(before, after) if d not in meant]
    for d in found:
        print('FAIL', d)
    # the comparison must have had something to compare: results with digests, and findings
    digests = sum(bool(r.get('work_digest')) for r in before.get('results', []))
    if digests < 5 or not before.get('findings'):
        print(f'FAIL the reference holds {digests} work digests and {len(before.get("findings", []))} findings')
        return 1
    print(f'{len(before["results"])} results ({digests} work digests), {len(before["findings"])} findings, '
          f'{len(before["injections"])} injections: ' + ('the same' if not found else f'{len(found)} differences'))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
