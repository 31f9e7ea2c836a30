#!/usr/bin/env python3
"""
What burns in child processes cost (issue 36): the quick profile run by this sdcscan (each burn
in processes of its own, runner/burn.h) and by the release before the change (each burn a thread of
the run's process), side by side in one run, alternating so a noisy machine weighs on both alike.

Prints, per variant, the throughput of both (the report's totals, summed over the devices; the
best of the runs, as load on a shared machine only ever slows a run) and their ratio, the wall
time of the whole run, the children's start (from the variant's spawn to the worker's lane, less
the probe's setup: what the process costs that a thread did not) and the host's memory for the
run: the peak of the sum of RSS and of PSS over the run's processes, sampled every 20 ms (RSS
counts a page every process shares once per process; PSS splits it).

Targets: the geometric mean of the throughput ratios >= 0.99 (within 1%), and the mean child start
under 50 ms; a target not met prints MISSED and exits 1.

usage: tools/bench_children.py NEW_SDCSCAN OLD_SDCSCAN [--runs N] [--json FILE] [-- RUN_ARGS...]
       OLD_SDCSCAN: the release before (tools/bench-children.sh builds it from git, cached)
       RUN_ARGS: passed to `sdcscan run` (default: the quick profile as it ships, --gpus none)
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


def tree(pid):
    """pid and every process below it (children's children too), from /proc."""
    kids = {}
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            with open(f'/proc/{p}/stat') as fh:
                ppid = int(fh.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        todo += kids.get(q, [])
    return out


def memory(pids):
    """(RSS, PSS) in bytes summed over pids (those gone meanwhile count 0)."""
    rss = pss = 0
    for p in pids:
        try:
            with open(f'/proc/{p}/smaps_rollup') as fh:
                for line in fh:
                    if line.startswith('Rss:'):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith('Pss:'):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def one_run(binary, args, workdir, tag):
    report = os.path.join(workdir, f'{tag}.json')
    cmd = [binary, 'run', '--no-state', '--quiet', '--json', report] + args
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_rss = peak_pss = 0
    while p.poll() is None:
        rss, pss = memory(tree(p.pid))
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.02)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors='replace')
    if p.returncode not in (0, 1):
        sys.exit(f'{binary} run exited {p.returncode}: {err.strip()[-400:]}')
    with open(report) as fh:
        r = json.load(fh)
    totals = {f"{t['probe']}/{t['variant']}": t['rate'] for t in r.get('totals', [])}
    if not totals:  # (a report without totals: sum the results)
        for x in r['results']:
            k = f"{x['probe']}/{x['variant']}"
            totals[k] = totals.get(k, 0) + (x.get('rate') or 0)
    starts = [x['start_seconds'] for x in r['results'] if isinstance(x.get('start_seconds'), (int, float))
              and x['start_seconds'] >= 0]
    return {'wall': wall, 'totals': totals, 'rss': peak_rss, 'pss': peak_pss, 'starts': starts,
            'verdict': r['verdict']['status']}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('new')
    ap.add_argument('old')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--json')
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    o = ap.parse_args(argv[:argv.index('--')] if '--' in argv else argv)
    args = extra or ['--gpus', 'none']
    runs = {'new': [], 'old': []}
    with tempfile.TemporaryDirectory() as d:
        for i in range(o.runs):
            order = ('old', 'new') if i % 2 == 0 else ('new', 'old')
            for which in order:
                runs[which].append(one_run(getattr(o, which), args, d, f'{which}{i}'))
                print(f'run {i + 1}/{o.runs} {which}: {runs[which][-1]["wall"]:.1f} s, '
                      f'{runs[which][-1]["verdict"]}', file=sys.stderr)
    variants = sorted(set(runs['new'][0]['totals']) & set(runs['old'][0]['totals']))
    print(f'{"variant":26} {"threads":>12} {"children":>12} {"ratio":>7}')
    ratios = []
    rows = []
    for v in variants:
        # the best of the runs: what slows a run on a shared machine (another tenant, the host's
        # own work) never speeds one, so the best is the closest to what each can do
        old = max(r['totals'].get(v, 0) for r in runs['old'])
        new = max(r['totals'].get(v, 0) for r in runs['new'])
        ratio = new / old if old > 0 else float('nan')
        if old > 0 and new > 0:
            ratios.append(ratio)
        rows.append({'variant': v, 'threads': old, 'children': new, 'ratio': ratio})
        print(f'{v:26} {old:12.2f} {new:12.2f} {ratio:7.3f}')
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float('nan')
    # the noise floor: how far the release's own runs lie from each other (a shared machine)
    spreads = []
    for v in variants:
        xs = [r['totals'].get(v, 0) for r in runs['old']]
        if min(xs) > 0:
            spreads.append(max(xs) / min(xs))
    spread = math.exp(sum(math.log(x) for x in spreads) / len(spreads)) if spreads else float('nan')
    wall_old = statistics.median(r['wall'] for r in runs['old'])
    wall_new = statistics.median(r['wall'] for r in runs['new'])
    starts = [s for r in runs['new'] for s in r['starts']]
    start_mean = statistics.mean(starts) * 1e3 if starts else float('nan')
    start_max = max(starts) * 1e3 if starts else float('nan')
    rss_old = statistics.median(r['rss'] for r in runs['old'])
    rss_new = statistics.median(r['rss'] for r in runs['new'])
    pss_old = statistics.median(r['pss'] for r in runs['old'])
    pss_new = statistics.median(r['pss'] for r in runs['new'])
    tput_ok = geo >= 0.99
    start_ok = start_mean < 50
    print(f'\nthroughput, geometric mean of the ratios: {geo:.4f} (target >= 0.99){"" if tput_ok else "  MISSED"}')
    print(f'the release against itself: its runs of a variant differ by {100 * (spread - 1):.1f}% (geometric mean of '
          f'max/min over the variants): the noise a ratio here carries')
    print(f'wall time (median of {o.runs}): threads {wall_old:.1f} s, children {wall_new:.1f} s '
          f'({wall_new - wall_old:+.2f} s)')
    print(f'a child\'s start (spawn to its lane, less setup): mean {start_mean:.1f} ms, max {start_max:.1f} ms over '
          f'{len(starts)} workers (target: mean < 50 ms){"" if start_ok else "  MISSED"}')
    print(f'memory, peak over the run\'s processes: RSS threads {rss_old / 2**20:.0f} MiB, children '
          f'{rss_new / 2**20:.0f} MiB; PSS threads {pss_old / 2**20:.0f} MiB, children {pss_new / 2**20:.0f} MiB')
    if o.json:
        with open(o.json, 'w') as fh:
            json.dump({'variants': rows, 'throughput_geomean_ratio': geo, 'release_spread': spread, 'wall_threads': wall_old,
                       'wall_children': wall_new, 'start_ms_mean': start_mean, 'start_ms_max': start_max,
                       'rss_threads': rss_old, 'rss_children': rss_new, 'pss_threads': pss_old,
                       'pss_children': pss_new, 'runs': o.runs, 'run_args': args}, fh, indent=2)
    return 0 if tput_ok and start_ok else 1


if __name__ == '__main__':
    sys.exit(main())
