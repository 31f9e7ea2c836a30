#!/usr/bin/env python3
"""
The run's rule on the host side (DESIGN.md "Where work runs", runner/burn.h): the run's own process
waits on nothing without a deadline, so a sick core's process, a hung GPU driver call, a stuck
scheduler command or a dead MPI peer can delay a run by a bound the man page states, never stop
it. This lint reads the C sources the run's process executes and fails on every call that can
wait without a deadline:

  join     pthread_join (pthread_timedjoin_np has one)
  lock     pthread_mutex_lock, pthread_rwlock_*lock, sem_wait, pthread_cond_wait (the timed forms
           have one)
  child    waitpid / wait4 / waitid without WNOHANG, wait(), popen, pclose, system (each waits for
           a child with none)
  fdwait   poll / epoll_wait with a timeout of -1, select with a NULL timeout, recv / recvfrom /
           recvmsg / accept / send / sendto / sendmsg without MSG_DONTWAIT (a peer that does not read
           fills the socket), flock without LOCK_NB, lockf(F_LOCK), fcntl(F_SETLKW)
  mpi      MPI calls that block (MPI_Wait*, MPI_Recv, MPI_Send, MPI_Probe, the collectives,
           MPI_Init*, MPI_Comm_dup, MPI_Finalize)

A call that is bounded another way says so where it is made: a comment holding "wait-ok:" and the
reason, on its line or the line before (a lock held only to copy into an array; an MPI call
under mpi/transport.c's watchdog, which ends the process past its deadline). The burn's own processes
(runner/burn_child.c, probe/worker.c, inject/fatal.c, the probes) are bounded by the parent, which kills
them; the tools that are not the run (campaigns, benchmarks, the fleet comparison) keep their own
bounds: the files left out are listed below, each with why.

usage: host_wait_lint.py SRC_DIR     (src/)
       host_wait_lint.py --self-test (only the canaries below)
Every run first lints built-in canaries: each rule must fire where it should and nowhere else.
"""
import os
import re
import sys

# Files of src/ the run's process never executes, with why (everything else is linted).
LEFT_OUT = {
    'runner/burn_child.c': "the burn's own processes: the parent kills them past their deadline",
    'probe/worker.c': "what a probe's worker calls, in the burn's processes",
    'inject/fatal.c': "faults met in the burn's processes",
    'inject/regfault.c': "the register-fault campaign's ptrace injector (sdcscan campaign cpu-faults)",
    'commands/campaign_cpu.c': "the register-fault campaign, bounded per child run by its injector",
    'commands/fleet.c': "the fleet comparison of reports on disk, not a run",
    'commands/fleet_bench.c': "the fleet comparison's benchmark, not a run",
    'commands/fleet_store.c': "the fleet comparison's store, not a run",
    'commands/fleet_read.c': "the fleet comparison's reader, not a run",
    'device/parallel.c': "the calibration and campaigns' thread pool, not a run",
}
LEFT_OUT_DIRS = {
    'probes/': "the probes run in the burn's processes (their tools are not the run)",
    'kernels/': "arithmetic, in the burn's processes",
}

RULES = [
    ('join', re.compile(r'\bpthread_join\s*\(')),
    ('lock', re.compile(r'\b(pthread_mutex_lock|pthread_rwlock_rdlock|pthread_rwlock_wrlock|sem_wait|'
                        r'pthread_cond_wait)\s*\(')),
    ('child', re.compile(r'\b(waitpid|wait4|waitid)\s*\((?![^;]*\bWNOHANG\b)')),
    ('child', re.compile(r'(?<![\w.>])wait\s*\(')),
    ('child', re.compile(r'\b(popen|pclose|system)\s*\(')),
    ('fdwait', re.compile(r'\b(poll|epoll_wait)\s*\([^;]*,\s*-1\s*\)')),
    ('fdwait', re.compile(r'\bselect\s*\([^;]*,\s*NULL\s*\)')),
    ('fdwait', re.compile(r'\b(recv|recvfrom|recvmsg|accept|accept4|send|sendto|sendmsg)\s*\((?![^;]*\bMSG_DONTWAIT\b)')),
    ('fdwait', re.compile(r'\bflock\s*\((?![^;]*\bLOCK_NB\b)')),
    ('fdwait', re.compile(r'\blockf\s*\([^;]*\bF_LOCK\b')),
    ('fdwait', re.compile(r'\bfcntl\s*\([^;]*\bF_SETLKW\b')),
    ('mpi', re.compile(r'\bMPI_(Wait|Waitall|Waitany|Waitsome|Recv|Send|Ssend|Sendrecv|Probe|Barrier|Bcast|'
                       r'Allreduce|Reduce|Allgather|Allgatherv|Gather|Gatherv|Scatter|Alltoall|Alltoallv|'
                       r'Init|Init_thread|Comm_dup|Comm_split|Finalize)\s*\(')),
]
OK = re.compile(r'wait-ok:\s*\S')

CANARIES = {
    # (source, the rules expected to fire, in order)
    'join': ('\tpthread_join(t, NULL);\n', ['join']),
    'timedjoin': ('\tpthread_timedjoin_np(t, NULL, &ts);\n', []),
    'lock': ('\tpthread_mutex_lock(&m);\n', ['lock']),
    'lock-ok': ('\tpthread_mutex_lock(&m); /* wait-ok: held to copy */\n', []),
    'lock-ok-above': ('\t/* wait-ok: held to copy */\n\tpthread_mutex_lock(&m);\n', []),
    'cond': ('\tpthread_cond_wait(&c, &m);\n', ['lock']),
    'condtimed': ('\tpthread_cond_timedwait(&c, &m, &ts);\n', []),
    'waitpid': ('\twaitpid(pid, &st, 0);\n', ['child']),
    'waitpid-nohang': ('\twaitpid(pid, &st, WNOHANG);\n', []),
    'wait': ('\twait(&st);\n', ['child']),
    'popen': ('\tFILE *p = popen(cmd, "r");\n', ['child']),
    'poll-forever': ('\tpoll(pfd, n, -1);\n', ['fdwait']),
    'poll-bounded': ('\tpoll(pfd, n, 100);\n', []),
    'recv': ('\tn = recv(fd, buf, len, 0);\n', ['fdwait']),
    'recv-nowait': ('\tn = recv(fd, buf, len, MSG_DONTWAIT);\n', []),
    'send': ('\tsend(fd, buf, len, MSG_NOSIGNAL);\n', ['fdwait']),
    'send-nowait': ('\tsend(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);\n', []),
    'flock': ('\tflock(fd, LOCK_EX);\n', ['fdwait']),
    'flock-nb': ('\tflock(fd, LOCK_EX | LOCK_NB);\n', []),
    'mpi': ('\tMPI_Barrier(comm);\n', ['mpi']),
    'mpi-test': ('\tMPI_Test(&r, &flag, MPI_STATUS_IGNORE);\n', []),
    'comment': ('\t/* pthread_join(t, NULL) would wait */\n', []),
    'string': ('\tputs("pthread_join(t, NULL)");\n', []),
}


def strip(text):
    """Comments and string literals blanked (their line breaks kept), so only code is matched;
    the comments are returned per line for the wait-ok notes."""
    code, notes = [], {}
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            chunk = text[i:end]
            for k, part in enumerate(chunk.split('\n')):
                notes[line + k] = notes.get(line + k, '') + part
            code.append(re.sub(r'[^\n]', ' ', chunk))
            line += chunk.count('\n')
            i = end
        elif text.startswith('//', i):
            end = text.find('\n', i)
            end = n if end < 0 else end
            notes[line] = notes.get(line, '') + text[i:end]
            code.append(' ' * (end - i))
            i = end
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            code.append(c + ' ' * (j - i - 1) + c)
            i = j + 1
        else:
            if c == '\n':
                line += 1
            code.append(c)
            i += 1
    return ''.join(code), notes


def lint_text(name, text):
    code, notes = strip(text)
    problems = []
    line_starts = [0] + [m.end() for m in re.finditer('\n', code)]
    for rule, rx in RULES:
        for m in rx.finditer(code):
            line = next(k for k in range(len(line_starts), 0, -1) if line_starts[k - 1] <= m.start())
            if OK.search(notes.get(line, '')) or OK.search(notes.get(line - 1, '')):
                continue
            problems.append((line, rule, f'{name}:{line}: {rule}: {m.group(0).strip()}...: a wait with no '
                             'deadline in the run\'s process (give it one, or say "wait-ok: why" where it is)'))
    problems.sort()
    return problems


def self_test():
    bad = []
    for name, (src, want) in CANARIES.items():
        got = [rule for _, rule, _ in lint_text(name, 'void f(void)\n{\n' + src + '}\n')]
        if got != want:
            bad.append(f'canary {name}: the lint says {got}, it should say {want}')
    return bad


def sources(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(d, f), root)
            if not f.endswith('.c') or rel in LEFT_OUT or any(rel.startswith(p) for p in LEFT_OUT_DIRS):
                continue
            yield rel


def main(argv):
    problems = self_test()
    if len(argv) == 2 and argv[1] == '--self-test':
        pass
    elif len(argv) == 2:
        root = argv[1]
        for rel in LEFT_OUT:
            if not os.path.exists(os.path.join(root, rel)):
                problems.append(f'{rel}: left out by this lint, but not a file under {root} (update LEFT_OUT)')
        n = 0
        for rel in sources(root):
            with open(os.path.join(root, rel), encoding='utf-8') as fh:
                problems += [p for _, _, p in lint_text(rel, fh.read())]
            n += 1
        if not n:
            problems.append(f'{root}: no C sources found')
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        return 1
    print('host_wait_lint: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
