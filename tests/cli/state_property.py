#!/usr/bin/env python3
"""A property test of the node's state (man sdcscan, "The verdict's life"; DESIGN.md, "Verdicts and
exit codes"): random sequences of real sdcscan runs, clears and corrupted files on a fresh state
folder each, checked after every step against a small model of the lifecycle written here from the
documented rules, not from the code.

usage: state_property.py SDCSCAN FAKE_GPU_SO FAKE_NVML_SO SGEMM_FLIP_SO [--seed N] [--steps N]
                         [--sequences N] [--sequence-seed N] [--keep]

The faults are real ones sdcscan did not plant: SGEMM_FLIP_SO (LD_PRELOADed, it flips bit 28 of
one element of a cblas_sgemm result; here SGEMM_FLIP_EVERY=1, every call's, for a run this short
on a busy host may make fewer than 20: the fp32 variant finds it on every device) or the fake
GPU with FAKE_GPU_BAD_SM=3 (gpu0's SM 3 computes wrong). Every run uses the fake GPU and NVML, so
it sees the same devices on every host.

The model (the rules checked):
  * a run is full scheduled when it is the profile as it is (none of --probe, --variant, --inject,
    --set, --duration, --cpus, --gpus), not interrupted, and it tested something;
  * a run that is not injected and finds corruption (a real fault: exit 2) makes the node
    CRITICAL, whatever kind of run it was; an injected run never changes the node's state;
  * a CRITICAL stays until `sdcscan clear` or K = clear_after_clean_runs (K > 0) full scheduled
    runs in a row are OK. Whether a run of another kind between them breaks "in a row" is not
    pinned down by the docs, so the model keeps two counts since the last CRITICAL found: one that
    only a non-OK full scheduled run resets (fewer than K: it must stay CRITICAL) and one that any
    other saved run resets too (K or more: it must be cleared); between them either is accepted,
    and what status says decides it for the checks that follow;
  * a run SIGKILLed saves nothing, but status says the last run died until the next run (or a
    person's clear, which answers it): exit 2
    naming the CRITICAL when the node is CRITICAL, else UNKNOWN (3); status --prom then says
    sdcscan_last_run_verdict 3;
  * when the node is CRITICAL: status exits 2 with a line starting "CRITICAL" that names the
    device; status --exit-codes npd exits 1 with one line that says CRITICAL; the run's --prom has
    sdcscan_verdict 2; fleet on a folder holding a copy of last.json exits 2. When it is not,
    status (exit 0, 1 or 3), its npd line and sdcscan_verdict (the node's verdict) do not say
    CRITICAL; fleet is not held to that (a report made before a clear is still a CRITICAL one);
    A run that ends on a CRITICAL node says CRITICAL (its own verdict, or that the node stays so);
  * a full state folder (a tmpfs with 12 KB free) does not lose a CRITICAL: its run exits 2, says
    a write failed, and the CRITICAL is the node's state once the space is freed. It may lose the
    history entry and the report (documented): fleet is not checked until a run writes last.json
    again, and a state.json spoiled before then may lose the state (two faults at once);
  * a corrupted state.json or last.json is rebuilt from history (a CRITICAL kept) or the next run
    refuses with an error naming the file (the test then puts the file back, as a person would);
    never a silent restart: history's sequence numbers stay unique and grow with every saved run.
    A rebuild from history may bring back a CRITICAL that was cleared (the clear lived in the lost
    state.json): that is accepted, a CRITICAL from nowhere is not.

Each failure prints the sequence so far and a command that replays it. Default size (CI): 3
sequences of 25 steps, about 90 s on two cores; --steps 300 for a long run by hand.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NEVER = -10**9  # a strict count that can no longer force a clear
FREE_BYTES = 12 * 1024  # what the full-disk step leaves free
GEMM = "gemm: {dtypes: [int8, fp32], m: 48, n: 40, k: 64, gpu_dtypes: [bf16], gpu_m: 48, gpu_n: 40, gpu_k: 64"
PARTIALS = [["--set", "gemm.m=32"], ["--duration", "0.2"], ["--cpus", "0"], ["--probe", "gemm"],
            ["--gpus", "none"], ["--probe", "allreduce"]]
# (operation, weight)
OPS = [("ok", 5), ("critical", 3), ("interrupted", 1), ("killed", 1), ("injected", 1), ("replay", 2),
       ("partial", 3), ("skewed", 1), ("full_disk", 1), ("clear", 2), ("corrupt", 1)]
WRITE_FAILED = re.compile(r"no space left|not (all )?written|could not (be )?writ|write fail", re.I)
DEVICE = re.compile(r"\b(cpu|gpu)\d+\b")


class Failure(Exception):
    pass


class Model:
    """What the documented rules say the node's state is."""

    def __init__(self, k):
        self.k = k
        self.crit = False  # True, False, or None: either is allowed, what status says decides
        self.died = False  # a SIGKILLed run since the last run that ended (None: not known)
        self.lenient = 0  # clean full scheduled runs in a row since the last CRITICAL found
        self.strict = 0  # the same, reset by any other saved run too
        self.rebuild = False  # state.json corrupted, not yet rebuilt by a run: a cleared CRITICAL may return

    def found(self):
        self.crit, self.lenient, self.strict = True, 0, 0

    def run(self, full, found, clean):
        """A run that ended: full scheduled or not, found corruption (not injected), ended OK."""
        self.died = False
        if found:
            self.found()
            return
        if not full:
            self.strict = 0 if self.strict != NEVER else NEVER
            return
        if not clean:
            self.lenient, self.strict = 0, (0 if self.strict != NEVER else NEVER)
        else:
            self.lenient += 1
            self.strict = self.strict + 1 if self.strict != NEVER else NEVER
        if self.crit and self.k > 0 and self.strict >= self.k:
            self.crit = False
        elif self.crit and self.k > 0 and self.lenient >= self.k:
            self.crit = None

    def cleared(self):
        # (a person's clear also answers a run that died before it: status then says the clear)
        self.crit, self.lenient, self.strict, self.died = False, 0, 0, False

    def resolve(self, says_critical):
        if self.crit is None:
            self.crit = says_critical
            if not says_critical:
                self.lenient, self.strict = 0, 0

    def describe(self):
        c = {True: "CRITICAL", False: "not CRITICAL", None: "CRITICAL or cleared"}[self.crit]
        return "%s (K=%d, clean in a row %d/%s%s%s)" % (
            c, self.k, self.lenient, "-" if self.strict == NEVER else self.strict,
            ", last run died" if self.died else "", ", state.json lost" if self.rebuild else "")


class Sequence:
    def __init__(self, tool, seed, steps, keep):
        self.t, self.seed, self.steps, self.keep = tool, seed, steps, keep
        self.rng = random.Random(seed)
        self.model = Model(self.rng.randint(0, 3))
        self.tmp = tempfile.mkdtemp(prefix="sdcscan-prop.")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.mounted = tool.can_mount and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "none", self.mnt], capture_output=True).returncode == 0
        self.dir = os.path.join(self.mnt, "st")
        self.log = []  # one line a step, for the failure's report
        self.notes = []  # what was not checked, and why
        # the files corrupt steps spoiled since the last run that ended: name -> (path, bytes, the
        # model's (crit, lenient, strict) when it was spoiled; a file put back brings that state back)
        self.backup = {}
        self.report_lost = False  # the full disk kept the run's report from last.json
        self.only_in_state = False  # ... and its history entry: state.json alone holds the state
        self.prof = self.profile("p.yaml", 0.3)
        self.long = self.profile("long.yaml", 20)

    def profile(self, name, duration):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("clear_after_clean_runs: %d\nprobes: {%s, duration: %s}}\n" % (self.model.k, GEMM, duration))
        return path

    def close(self):
        if self.keep and os.path.isdir(self.dir):
            shutil.copytree(self.dir, os.path.join(self.tmp, "st"), symlinks=True)
            print("kept: %s/st" % self.tmp)
        if self.mounted and subprocess.run(["umount", self.mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # running sdcscan -------------------------------------------------------------------------
    def env(self, fault):
        e = dict(os.environ)
        for v in ("LD_PRELOAD", "FAKE_GPU_BAD_SM", "SDCSCAN_STATE_DIR"):
            e.pop(v, None)
        e.update(SDCSCAN_GPU_MODULE=self.t.gpu, SDCSCAN_NVML_LIBRARY=self.t.nvml, NO_COLOR="1",
                 OPENBLAS_NUM_THREADS="1")
        # the shim and libfaketime are preloaded ahead of a sanitized build's ASan runtime, which
        # would refuse to start; neither replaces malloc (a no-op in a build without ASan)
        e["ASAN_OPTIONS"] = ":".join(filter(None, (e.get("ASAN_OPTIONS"), "verify_asan_link_order=0")))
        if fault == "shim":  # every call's result, not every 20th: a short run on a busy host makes few
            e.update(LD_PRELOAD=self.t.flip, SGEMM_FLIP_EVERY="1")
        elif fault == "gpu":
            e["FAKE_GPU_BAD_SM"] = "3"
        return e

    def sdc(self, args, fault=None, prefix=(), timeout=120):
        cmd = list(prefix) + [self.t.sdcscan] + args
        try:
            p = subprocess.run(cmd, env=self.env(fault), capture_output=True, text=True, errors="replace",
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("timed out after %d s: %s" % (timeout, " ".join(cmd)))
        return p

    def run_args(self, extra, prom, profile=None):
        return ["run", "--profile", profile or self.prof, "--state-dir", self.dir, "--prom", prom] + extra

    def signalled(self, sig, fault):
        """A scheduled run of the long profile, stopped by SIG to its process group after ~1 s."""
        prom = os.path.join(self.tmp, "run.prom")
        if os.path.exists(prom):
            os.remove(prom)
        cmd = [self.t.sdcscan] + self.run_args([], prom, self.long)
        p = subprocess.Popen(cmd, env=self.env(fault), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace", start_new_session=True)
        started, wait = os.path.join(self.dir, "started"), self.rng.random() * 0.5
        deadline = time.time() + 30  # a busy host may take long to start it: stop it once it burns
        while not os.path.exists(started) and p.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5 + wait)
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise Failure("the run did not end within 60 s of signal %d" % sig)
        if sig == signal.SIGKILL:  # its workers too, as an OOM kill of the group would
            time.sleep(0.1)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err), prom

    # the state folder ------------------------------------------------------------------------
    def history(self):
        h = os.path.join(self.dir, "history")
        names = sorted(os.listdir(h)) if os.path.isdir(h) else []
        return [n for n in names if re.match(r"^\d{6}-", n)]

    def seqs(self):
        return [int(n[:6]) for n in self.history()]

    def real_critical_in_history(self):
        return any(n.endswith("-CRITICAL.json") and "-injected-" not in n for n in self.history())

    def read(self, name):
        try:
            with open(os.path.join(self.dir, name), "rb") as f:
                return f.read()
        except OSError:
            return None

    # the steps ---------------------------------------------------------------------------------
    def step(self, i):
        """Draws every random choice (the same ones whatever the host can do, so a seed replays
        anywhere), logs the step and does it; returns what check() needs, or None."""
        op = self.rng.choices([o for o, _ in OPS], [w for _, w in OPS])[0]
        fault = self.rng.choice(["shim", "shim", "gpu"]) if self.rng.random() < 0.5 else None
        partial = self.rng.choice(PARTIALS)
        spoil = self.rng.choice(["state.json:half", "state.json:empty", "last.json:garbage"])
        what = {"critical": "shim" if fault != "gpu" else "gpu", "full_disk": "shim" if fault != "gpu" else "gpu",
                "injected": None, "ok": None, "clear": None, "corrupt": None}.get(op, fault)
        desc = op + (" " + " ".join(partial) if op == "partial" else "") + (" " + spoil if op == "corrupt" else "") + \
            (" fault=" + what if what else "")
        self.log.append("step %d: %s" % (i, desc))
        self.t.counts[op] = self.t.counts.get(op, 0) + 1
        if op == "clear":
            return self.op_clear()
        if op == "corrupt":
            return self.op_corrupt(spoil)
        if op in ("interrupted", "killed"):
            return self.op_signalled(op, what)
        return self.op_run(op, what, partial)

    def op_run(self, op, fault, partial):
        prom = os.path.join(self.tmp, "run.prom")
        if os.path.exists(prom):
            os.remove(prom)
        extra, prefix, full, expect = [], (), True, {0} if fault is None else {2}
        if op == "injected":
            extra, full, expect = ["--inject", "gemm/int8:C:iter=1,row=1,col=2,bit=20"], False, {2}
        elif op == "replay":
            extra, full = ["--variant", "gemm/fp32"], False
        elif op == "partial":
            extra, full = list(partial), False
            if partial == ["--probe", "allreduce"]:
                expect = {3}  # tests nothing without mpirun: UNKNOWN, never OK
            elif partial == ["--gpus", "none"] and fault == "gpu":
                expect = {0}
        elif op == "skewed":
            if not self.t.faketime:
                self.t.skipped.add("skewed-clock runs: faketime is not installed (Debian package faketime)")
                self.log[-1] += " (skipped: no faketime)"
                return None
            prefix = (self.t.faketime, "-f", "+1d")
        elif op == "full_disk":
            return self.op_full_disk(fault, prom)
        before = self.seqs()
        p = self.sdc(self.run_args(extra, prom), fault, prefix)
        return self.after_run(p, prom, before, full=full, injected=op == "injected", expect=expect)

    def after_run(self, p, prom, before, full, injected, expect, disk_full=False):
        """The model follows a run that ended; the history's sequence numbers are checked."""
        m = self.model
        self.log[-1] += ": exit %d" % p.returncode
        after = self.seqs()
        if self.backup and p.returncode == 3 and after == before and \
                re.search(r"state\.json|last\.json", p.stderr):
            # it refused the spoiled file with an error naming it: allowed; a person puts it back
            self.log[-1] += " (refused the spoiled file; put back)"
            for name, (path, data, state) in self.backup.items():
                with open(path, "wb") as f:
                    f.write(data)
                if name == "state.json":  # status read the spoiled file since: the model follows the file
                    (m.crit, m.lenient, m.strict), m.rebuild = state, False
            self.backup = {}
            return {"prom": None}
        if p.returncode not in expect:
            raise Failure("the run exited %d, expected %s\n%s" % (p.returncode, sorted(expect), self.outputs(p)))
        if len(set(after)) != len(after):
            raise Failure("history holds two runs of one sequence number (a silent restart?): %s" % self.history())
        if not disk_full and (not after or (before and max(after) <= max(before))):
            raise Failure("the run saved no history numbered above %s (a restart that reused a number?): %s" %
                          (max(before) if before else "none", self.history()))
        new = [n for n in self.history() if int(n[:6]) > (max(before) if before else 0)]
        if any(("-scheduled-" in n) != full for n in new):
            raise Failure("the run was saved as %s: it is %sa full scheduled run\n%s" % (
                " ".join(new), "" if full else "not ", self.outputs(p)))
        m.run(full, p.returncode == 2 and not injected, p.returncode == 0)
        self.backup = {}
        if not disk_full:
            self.report_lost = self.only_in_state = False
        return {"prom": prom, "ran": True, "run": p}

    def op_signalled(self, op, fault):
        before = self.seqs()
        if op == "interrupted":
            p, prom = self.signalled(signal.SIGINT, fault)
            # interrupted is UNKNOWN, CRITICAL if a fault was found before the stop
            return self.after_run(p, prom, before, full=False, injected=False, expect={3} if fault is None else {2, 3})
        p, _ = self.signalled(signal.SIGKILL, fault)
        self.log[-1] += ": exit %d" % p.returncode
        if p.returncode != -signal.SIGKILL:
            raise Failure("the SIGKILLed run exited %d\n%s" % (p.returncode, self.outputs(p)))
        if self.seqs() != before:
            raise Failure("a SIGKILLed run changed history: %s -> %s" % (before, self.seqs()))
        self.model.died = True
        return {"prom": None, "status_prom": True}

    def op_full_disk(self, fault, prom):
        if not self.mounted:
            self.t.skipped.add("full-disk runs: could not mount a tmpfs (not root, and unshare -Urm failed)")
            self.log[-1] += " (skipped: no tmpfs)"
            return None
        filler = os.path.join(self.mnt, "filler")
        s = os.statvfs(self.mnt)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, max(s.f_bavail * s.f_frsize - FREE_BYTES, 1))
        finally:
            os.close(fd)
        free = os.statvfs(self.mnt).f_bavail * s.f_frsize
        before, report = self.seqs(), self.read("last.json")
        try:
            p = self.sdc(self.run_args([], prom), fault)
        finally:
            os.remove(filler)
        self.log[-1] += " (%d bytes free)" % free
        st = self.after_run(p, prom, before, full=True, injected=False, expect={2}, disk_full=True)
        if not WRITE_FAILED.search(p.stdout + p.stderr):
            raise Failure("the run on a full disk does not say a write failed\n%s" % self.outputs(p))
        self.model.died = None  # whether it could remove its started file is not said
        # "a disk that fills loses the history entry and the report, never the verdict": until a
        # run saves them again, last.json may be an older report, and state.json the CRITICAL's only record
        self.report_lost = self.read("last.json") == report
        self.only_in_state = self.seqs() == before
        return st

    def op_clear(self):
        m = self.model
        before = self.read("state.json")
        p = self.sdc(["clear", "--state-dir", self.dir, "--reason", "property test"])
        self.log[-1] += ": exit %d" % p.returncode
        if m.rebuild:  # state.json spoiled: it may refuse, or clear what it rebuilt
            if p.returncode == 0:
                m.cleared()
            elif not re.search(r"state\.json|CRITICAL", p.stderr):
                raise Failure("clear on a spoiled state.json failed without naming it\n%s" % self.outputs(p))
        elif m.crit:
            if p.returncode != 0:
                raise Failure("clear of a CRITICAL node exited %d\n%s" % (p.returncode, self.outputs(p)))
            m.cleared()
        else:
            if p.returncode == 0:
                raise Failure("clear of a node that is not CRITICAL exited 0\n%s" % self.outputs(p))
            if self.read("state.json") != before:
                raise Failure("a refused clear changed state.json")
        return {"prom": None}

    def op_corrupt(self, spoil):
        name, how = spoil.split(":")
        data = self.read(name)
        if data is None:
            self.log[-1] += " (no %s yet: nothing done)" % name
            return {"prom": None}
        path = os.path.join(self.dir, name)
        if name not in self.backup:
            m = self.model
            self.backup[name] = (path, data, (m.crit, m.lenient, m.strict))
        new = {"half": data[:len(data) // 2], "empty": b"", "garbage": b"\x00garbage\xff{[\n" * 7}[how]
        with open(path, "wb") as f:
            f.write(new)
        if name == "state.json":
            self.model.rebuild, self.model.strict = True, NEVER
            if self.only_in_state:  # two faults: the full disk lost the history that would rebuild it
                self.model.crit = None
                self.log[-1] += " (after a full disk: the state may be lost)"
        return {"prom": None}

    # the checks --------------------------------------------------------------------------------
    def outputs(self, p):
        cut = lambda s: s if len(s) < 3000 else s[:1500] + "\n...\n" + s[-1500:]
        return "  $ %s\n  exit %d\n  stdout: %s\n  stderr: %s" % (
            " ".join(p.args), p.returncode, cut(p.stdout).rstrip().replace("\n", "\n          "),
            cut(p.stderr).rstrip().replace("\n", "\n          "))

    def check(self, st):
        """Every output that reports the node's state agrees with the model."""
        m = self.model
        if m.rebuild and m.crit is False and self.real_critical_in_history():
            m.crit = None  # a rebuild from history may bring back a CRITICAL that was cleared
        s = self.sdc(["status", "--state-dir", self.dir])
        m.resolve(s.returncode == 2)
        line = (s.stdout.splitlines() or [""])[0]
        errs = self.check_status(s, line)
        npd = self.sdc(["status", "--state-dir", self.dir, "--exit-codes", "npd"])
        errs += self.check_npd(npd)
        proms = []
        if st.get("prom"):
            proms.append(("the run's --prom", st["prom"], None))
        if st.get("status_prom"):
            f = os.path.join(self.tmp, "status.prom")
            if os.path.exists(f):
                os.remove(f)
            sp = self.sdc(["status", "--state-dir", self.dir, "--prom", f])
            proms.append(("status --prom after the run died", f, sp))
        for what, f, p in proms:
            errs += self.check_prom(what, f, p)
        errs += self.check_fleet()
        run = st.get("run")
        if run is not None and m.crit and "CRITICAL" not in run.stdout:
            errs.append("the run's output does not say the node stays CRITICAL\n" + self.outputs(run))
        if st.get("ran"):
            m.rebuild = False
        if errs:
            raise Failure("model: %s\n%s" % (m.describe(), "\n".join(errs)))

    def check_status(self, s, line):
        m, errs = self.model, []
        if m.crit:
            if s.returncode != 2 or not line.startswith("CRITICAL"):
                errs.append("status does not say CRITICAL (exit 2, a line starting CRITICAL)")
            elif not DEVICE.search(line):
                errs.append("status's CRITICAL line names no device")
        else:
            if s.returncode not in (0, 1, 3) or line.startswith("CRITICAL"):
                errs.append("status says CRITICAL (or exits %d) on a node that is not" % s.returncode)
        if m.died:
            if "died" not in line:
                errs.append("status does not say the last run died")
            if not m.crit and s.returncode != 3:
                errs.append("status after a run died exits %d, not 3 (UNKNOWN)" % s.returncode)
        return [e + "\n" + self.outputs(s) for e in errs]

    def check_npd(self, p):
        lines = p.stdout.splitlines()
        says = bool(lines) and re.match(r"^(\S+:\s*)?CRITICAL\b", lines[0]) is not None
        if self.model.crit and (p.returncode != 1 or len(lines) != 1 or "CRITICAL" not in lines[0]):
            return ["status --exit-codes npd does not say CRITICAL (exit 1, one line naming it)\n" + self.outputs(p)]
        if not self.model.crit and (says or p.returncode not in (0, 1, 2)):
            return ["status --exit-codes npd says CRITICAL on a node that is not\n" + self.outputs(p)]
        return []

    def check_prom(self, what, path, p):
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            return ["%s: not written (%s)%s" % (what, e, "\n" + self.outputs(p) if p else "")]
        v = re.search(r"^sdcscan_verdict (\S+)$", text, re.M)
        errs = []
        if not v:
            errs.append("%s: no sdcscan_verdict" % what)
        elif (v.group(1) == "2") != bool(self.model.crit):
            errs.append("%s: sdcscan_verdict %s, the node is %s" % (what, v.group(1), self.model.describe()))
        if p is not None:
            lr = re.search(r"^sdcscan_last_run_verdict (\S+)$", text, re.M)
            if not lr or lr.group(1) != "3":
                errs.append("%s: sdcscan_last_run_verdict %s, not 3 (the run died)" % (what, lr and lr.group(1)))
        return errs

    def check_fleet(self):
        data = self.read("last.json")
        try:
            json.loads(data) if data is not None else None
        except ValueError:
            data = None
        if data is None or self.report_lost:
            self.log[-1] += " [fleet not checked: %s]" % (
                "the full disk kept the report from last.json" if data else "no readable last.json")
            return []
        d = os.path.join(self.tmp, "fleet")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "node"))
        with open(os.path.join(d, "node", "last.json"), "wb") as f:
            f.write(data)
        p = self.sdc(["fleet", d])
        # only one way: a report of a run before a clear may still be CRITICAL to the fleet
        if self.model.crit and p.returncode != 2:
            return ["fleet on a copy of last.json exits %d, the node is %s\n%s" %
                    (p.returncode, self.model.describe(), self.outputs(p))]
        return []

    def run(self):
        print("sequence %d: K=%d, %d steps, state on %s" % (
            self.seed, self.model.k, self.steps, "a tmpfs" if self.mounted else "the disk (no full-disk steps)"),
            flush=True)
        for i in range(self.steps):
            try:
                st = self.step(i)
                if st is not None:
                    self.check(st)
            except Failure as e:
                self.fail(i, e)
                return False
        return True

    def fail(self, i, e):
        print("FAIL: sequence %d, step %d: %s" % (self.seed, i, e))
        print("  the sequence so far:")
        for l in self.log:
            print("    " + l)
        print("  history: %s" % " ".join(self.history()))
        state = self.read("state.json")
        if state is not None:
            print("  state.json: %s" % " ".join(state.decode("utf-8", "replace").split())[:1500])
        print("  repro: python3 %s %s --sequence-seed %d --steps %d" % (
            os.path.relpath(__file__), " ".join(self.t.argv), self.seed, i + 1), flush=True)


class Tool:
    def __init__(self, a):
        self.sdcscan, self.gpu, self.nvml, self.flip = (os.path.abspath(x) for x in (a.sdcscan, a.gpu, a.nvml, a.flip))
        self.argv = [a.sdcscan, a.gpu, a.nvml, a.flip]
        self.faketime = shutil.which("faketime")
        self.can_mount = os.geteuid() == 0
        self.counts, self.skipped = {}, set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sdcscan")
    ap.add_argument("gpu")
    ap.add_argument("nvml")
    ap.add_argument("flip")
    ap.add_argument("--seed", type=int, help="the seed of the whole test (default: a random one, printed)")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--sequences", type=int, default=3)
    ap.add_argument("--sequence-seed", type=int, help="run the one sequence of this seed (a failure's repro)")
    ap.add_argument("--keep", action="store_true", help="keep each sequence's folder")
    ap.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    for f in (a.sdcscan, a.gpu, a.nvml, a.flip):
        if not os.path.exists(f):
            print("skip: %s is not built" % f)
            return 77
    if os.geteuid() != 0 and not a.in_namespace and shutil.which("unshare") and \
            subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode == 0:
        # a user and mount namespace of its own, where it may mount the full-disk steps' tmpfs
        os.execvp("unshare", ["unshare", "-Urm", sys.executable, os.path.abspath(__file__)] + sys.argv[1:] +
                  ["--in-namespace"])
    t = Tool(a)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2**31)
    rng = random.Random(seed)
    seeds = [a.sequence_seed] if a.sequence_seed is not None else \
        [rng.randrange(1, 2**31) for _ in range(a.sequences)]
    print("state_property: seed %d (--seed %d replays it), %d sequences of %d steps" % (
        seed, seed, len(seeds), a.steps), flush=True)
    start, failed = time.time(), 0
    for s in seeds:
        seq = Sequence(t, s, a.steps, a.keep)
        try:
            failed += not seq.run()
        finally:
            seq.close()
    print("steps: %s; %.0f s" % (", ".join("%s %d" % kv for kv in sorted(t.counts.items())), time.time() - start))
    for s in sorted(t.skipped):
        print("skipped: " + s)
    print("%s: %d of %d sequences failed" % ("FAIL" if failed else "PASS", failed, len(seeds)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
