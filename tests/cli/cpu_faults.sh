#!/bin/sh
# sdcscan campaign cpu-faults (commands/campaign_cpu*.c, regfault*.c): one bit of one register of
# cpu1's burn worker flipped through ptrace in each faulted run, the injector following the run's
# processes from birth (the run, the variant's leader it spawns, the worker processes the leader
# forks) to that worker. On gemm/int8, minitrain/xfmr and ecparity (whose digest is its state at
# the end, run.environment.ecparity.state_sha256): no fault missed and no run without a verdict;
# each fault's outcome, reclassified here from the run's own report by the campaign's rules
# (written again below, from the man page), is the one the campaign gave (so every crash and hang
# is a crash or hang finding at cpu1); the table's rows (a probe's, then its variants') add up to
# the faults injected and the JSON holds the same numbers and every fault's seed, attempt,
# register, bit, instant and outcome; every process of each run without address-space
# randomisation; no crash or hang at cpu0 where the workers share nothing (a fault stays in its
# process, and no breakpoint of the injector's is left in the other's), and no trap at a
# function's entry (an int3 left behind). Software breakpoints (forced): with --instant start
# the same seed gives the same faults twice, with the same outcomes but where a flipped pointer's
# landing moved, and a flipped loop counter is found; a fault's "replay" line runs it again alone.
# Hardware breakpoints (forced) where a debug register traps here; where none does the campaign
# refuses them (UNKNOWN, saying why) and that part is skipped, said. --instant random goes in
# after a delay within an iteration; the default, anywhere, spreads its instants over the
# worker's whole lane, its start and its end included. --faults admit is 300 a probe. Where a
# seccomp filter refuses ptrace, UNKNOWN naming the cause. Skipped (77) where ptrace is not
# allowed here, saying why.
# usage: cpu_faults.sh SDCSCAN
. "$(dirname "$0")/lib.sh"
V=gemm/int8,minitrain/xfmr,ecparity

"$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 1 --instant start --breakpoints software > "$TMP/can.out" 2> "$TMP/can.err"
rc=$?
if [ "$rc" = 3 ] && grep -q "ptrace is not allowed here" "$TMP/can.err"; then
	echo "SKIP: $(cat "$TMP/can.err")"
	exit 77
fi
[ "$rc" = 0 ] || fail "can: exit $rc: $(cat "$TMP/can.err")"
# the entries of this executable's functions: an injector's int3 left at one traps one byte past it
nm "$SDCSCAN" 2>/dev/null | awk '$2 ~ /^[Tt]$/ { print $1 }' > "$TMP/entries"

# check NAME KEPT-DIR [any]: the campaign's JSON ($TMP/NAME.json), table ($TMP/NAME.out) and the
# runs' reports agree, and (unless "any": random instants may all land where none crashes) one
# fault at least crashed or hung; prints "ok" or what does not
check() {
	python3 - "$TMP/$1.json" "$TMP/$1.out" "$2" "${3:-}" "$TMP/entries" "$(basename "$SDCSCAN")" <<'PY'
import json, os, re, sys
out = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
kept = sys.argv[3]
need_crash = sys.argv[4] != "any"
entries = {int(x, 16) + 1 for x in open(sys.argv[5]).read().split()}
exe = sys.argv[6]
dev = out["faulted_device"]
other = "cpu" + out["cpus"].split(",")[0]
cols = ["masked", "found_located", "vote_golden_only", "crash", "hang", "no_verdict", "other", "missed"]
bad = []

def outcome(rep, ref_digest, probe, run):
    """The rules of sdcscan(1), campaign cpu-faults, applied to one run's report."""
    if rep is None or run["killed"] or not run["child_exit"].startswith("exit "):
        return "no_verdict"
    v = rep.get("verdict", {})
    codes = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
    if v.get("status") not in codes or v.get("code") != codes[v["status"]] or run["child_exit"] != "exit %d" % v["code"]:
        return "no_verdict"
    fs = rep["findings"]
    def at(cls):
        return [f for f in fs if f["class"] == cls and f["device"] == dev]
    vote = lambda k: k == "device-disagreement" or k.startswith("golden-") or k.startswith("rank-")
    if at("crash"):
        return "crash"
    if at("hang"):
        return "hang"
    if [f for f in at("corruption") if not vote(f["kind"])]:
        return "found_located"
    if [f for f in fs if f["class"] == "corruption" and vote(f["kind"])]:
        return "vote_golden_only"
    if fs or v["status"] != "OK":
        return "other"
    res = [x for x in rep["results"] if x["device"] == dev][0]
    if res["iterations"] < 16:
        return "other"
    return "masked" if digest(rep, probe) == ref_digest else "missed"

def digest(rep, probe):
    """cpu1's work digest; ecparity: the state of every shard and parity at the end."""
    if probe == "ecparity":
        return rep["run"]["environment"]["ecparity"].get("state_sha256")
    res = [x for x in rep["results"] if x["device"] == dev][0]
    return (res.get("work_digest") or {}).get("sha256")

def left_trap(f):
    """A SIGTRAP one byte past a function's entry: an int3 of the injector's left in the text."""
    m = re.match(r"(.*)\+0x([0-9a-f]+)$", f.get("ip", ""))
    return f.get("signal") == "SIGTRAP" and m and m.group(1) == exe and int(m.group(2), 16) in entries

def row(name, counts):
    m = re.search(r"^%s +(\d+)((?: +\d+){8})" % re.escape(name), table, re.M)
    if not m or [int(m.group(1))] + [int(x) for x in m.group(2).split()] != [counts["faults"]] + [counts[c] for c in cols]:
        bad.append("%s: the table's row is not the JSON's" % name.strip())

total = {c: 0 for c in cols}
probes = {}
for v in out["variants"]:
    name = "%s-%s" % (v["probe"], v["variant"])
    ref = json.load(open(os.path.join(kept, name + "-reference.json")))
    if digest(ref, v["probe"]) != v["unfaulted_digest"]:
        bad.append("%s: the unfaulted digest is not the reference run's" % name)
    if v["address_randomisation_off"] is not True:
        bad.append("%s: a process of its run had address-space randomisation on" % name)
    n = {c: 0 for c in cols}
    for f in v["fault_list"]:
        if f["seed"] != out["seed"] or f["instant"] != out["instant"] or f["breakpoints"] != out["breakpoints"] \
                or not isinstance(f["attempt"], int) or not f.get("replay"):
            bad.append("%s #%d: its seed, attempt, instant, breakpoints or replay line is not said" % (name, f["attempt"]))
        if f["outcome"] == "not-injected":
            continue
        if not isinstance(f.get("bit"), int) or not f.get("register"):
            bad.append("%s #%d: no register or bit" % (name, f["attempt"]))
        path = os.path.join(kept, "%s-%d.json" % (name, f["attempt"]))
        rep = json.load(open(path)) if os.path.exists(path) else None
        want = outcome(rep, v["unfaulted_digest"], v["probe"], f)
        if want != f["outcome"]:
            bad.append("%s #%d: %s, its report says %s" % (name, f["attempt"], f["outcome"], want))
        for x in (rep or {}).get("findings", []):
            if left_trap(x):
                bad.append("%s #%d: a trap at a function's entry at %s: an int3 left behind" % (name, f["attempt"], x["device"]))
            elif v["probe"] != "ecparity" and x["device"] == other and x["class"] in ("crash", "hang"):
                bad.append("%s #%d: a %s at %s, whose process was not faulted" % (name, f["attempt"], x["class"], other))
        n[f["outcome"]] += 1
    if sum(n.values()) != v["faults"] or any(n[c] != v[c] for c in cols):
        bad.append("%s: the fault list does not add up to the counts" % name)
    row("  %s/%s" % (v["probe"], v["variant"]), v)
    p = probes.setdefault(v["probe"], dict({c: 0 for c in cols}, faults=0))
    for c in cols + ["faults"]:
        p[c] += v[c]
    for c in cols:
        total[c] += v[c]
for p in out["probes"]:
    if any(p[c] != probes[p["probe"]][c] for c in cols + ["faults"]):
        bad.append("%s: the probe's totals are not its variants' sum" % p["probe"])
    row(p["probe"], p)
if out["missed"] != 0 or total["missed"] != 0:
    bad.append("%d missed" % total["missed"])
if out["no_verdict"] != 0 or total["no_verdict"] != 0:
    bad.append("%d runs without a verdict" % total["no_verdict"])
if need_crash and total["crash"] + total["hang"] < 1:
    bad.append("no crash or hang among the faults: the check that they are named at %s saw none" % dev)
print(" ".join(bad) or "ok")
PY
}

# --instant start, software breakpoints forced: the same seed, the same faults at the same
# instructions, twice, and the same outcomes but for one latitude (sdcscan(1)): a flipped pointer
# can land in memory that is mapped at that moment in one run and not in the other (a stack, a
# malloc arena that grows and shrinks), so where one run crashed another may find the damage by
# its checks or the vote (clang's build did so once in 17 runs), or read garbage that changes
# nothing (masked; seen once: minitrain/xfmr's rdi, its worker pointer, moved 2 MiB up); never
# missed.
for i in 1 2; do
	expect_exit 0 start$i "$SDCSCAN" campaign cpu-faults --variants $V -n 6 --instant start --seed 3 \
		--breakpoints software --keep "$TMP/k$i" --json "$TMP/start$i.json"
	[ "$(check start$i "$TMP/k$i")" = ok ] || fail "start$i: $(check start$i "$TMP/k$i")"
done
[ "$(json_get "$TMP/start1.json" "r['breakpoints']")" = software ] || fail "start1: software breakpoints not said"
same=$(python3 - "$TMP/start1.json" "$TMP/start2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
fa, fb = ([(v["probe"] + "/" + v["variant"], f) for v in r["variants"] for f in v["fault_list"]] for r in (a, b))
key = lambda f: (f["register"], f["bit"], f["iteration"], f.get("at"))
bad = []
if [(n, key(f)) for n, f in fa] != [(n, key(f)) for n, f in fb]:
    bad.append("other faults: %s / %s" % ([key(f) for _, f in fa], [key(f) for _, f in fb]))
detected = {"crash", "hang", "found_located", "vote_golden_only", "masked"}
for (n, f), (_, g) in zip(fa, fb):
    o = {f["outcome"], g["outcome"]}
    if len(o) > 1 and not (f["class"] == "gpr" and o <= detected):
        bad.append("%s #%d %s bit %d: %s, then %s (%s -> %s, then %s -> %s)" % (n, f["attempt"], f["register"], f["bit"],
                   f["outcome"], g["outcome"], f.get("before"), f.get("after"), g.get("before"), g.get("after")))
print("; ".join(bad) or "ok")
PY
)
[ "$same" = ok ] || fail "the same seed: $same"

# a fault's replay line: the same fault (register, bit, iteration, instruction) alone
replay=$(json_get "$TMP/start1.json" "[f for v in r['variants'] for f in v['fault_list'] if v['probe'] == 'gemm' and f['outcome'] != 'not-injected'][0]['replay']")
expect_exit 0 replay "$SDCSCAN" ${replay#sdcscan } --json "$TMP/replay.json"
[ "$(python3 - "$TMP/start1.json" "$TMP/replay.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
f = [f for v in a["variants"] for f in v["fault_list"] if v["probe"] == "gemm" and f["outcome"] != "not-injected"][0]
g = b["variants"][0]["fault_list"]
key = lambda f: (f["attempt"], f["register"], f["bit"], f["iteration"], f.get("at"))
print("ok" if len(g) == 1 and key(g[0]) == key(f) else "%s, replayed as %s" % (key(f), [key(x) for x in g]))
PY
)" = ok ] || fail "replay: not the same fault: $replay"

# a flipped loop counter: seed 1's 40 faults on gemm/int8 hold one (r12 bit 26 at iteration 11 in
# the release build of the burn in processes) whose digests went on under a count 2^26 ahead; the
# vote never compared them and nothing was reported (missed) until out-of-order digests became an
# iteration-jump finding (the run's own check of a worker's digest ring says so too)
expect_exit 0 counter "$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 40 --instant start --seed 1 \
	--keep "$TMP/kc" --json "$TMP/counter.json"
[ "$(check counter "$TMP/kc")" = ok ] || fail "counter: $(check counter "$TMP/kc")"

# hardware breakpoints forced: where a debug register traps here, the same checks; where none
# does (a hypervisor that drops them), refused as UNKNOWN, saying why, and skipped
"$SDCSCAN" campaign cpu-faults --variants gemm/int8,minitrain/xfmr -n 4 --instant start --seed 3 \
	--breakpoints hardware --keep "$TMP/kh" --json "$TMP/hw.json" > "$TMP/hw.out" 2> "$TMP/hw.err"
rc=$?
if [ $rc = 3 ] && grep -q "hardware breakpoints do not trap here" "$TMP/hw.err"; then
	echo "SKIP (hardware breakpoints only): $(cat "$TMP/hw.err")"
else
	[ $rc = 0 ] || fail "hardware: exit $rc: $(cat "$TMP/hw.err")"
	[ "$(check hw "$TMP/kh" any)" = ok ] || fail "hardware: $(check hw "$TMP/kh" any)"
	[ "$(json_get "$TMP/hw.json" "r['breakpoints']")" = hardware ] || fail "hardware: another kind said"
fi

# --instant random: after a delay within the drawn iteration (PTRACE_INTERRUPT)
expect_exit 0 random "$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 6 --instant random --seed 5 \
	--keep "$TMP/kr" --json "$TMP/random.json"
[ "$(check random "$TMP/kr" any)" = ok ] || fail "random: $(check random "$TMP/kr" any)"
[ "$(json_get "$TMP/random.json" "len([f for v in r['variants'] for f in v['fault_list'] if f['delay_seconds'] > 0])")" -ge 1 ] ||
	fail "random: no fault went in after a delay"

# the default, --instant anywhere (and --breakpoints auto): instants over the worker's whole
# lane, drawn as a share of its measured length: some in its first tenth (before its first
# iterations' checks), some in its last (its last checks, its stop); seed 24 draws 3 and 6 there
expect_exit 0 anywhere "$SDCSCAN" campaign cpu-faults --variants $V -n 8 --seed 24 --keep "$TMP/ka" --json "$TMP/anywhere.json"
[ "$(check anywhere "$TMP/ka" any)" = ok ] || fail "anywhere: $(check anywhere "$TMP/ka" any)"
spread=$(json_get "$TMP/anywhere.json" "sorted(round(f['delay_seconds'] / v['lane_seconds'], 3) for v in r['variants'] for f in v['fault_list'] if f['outcome'] != 'not-injected')")
[ "$(json_get "$TMP/anywhere.json" "r['instant']")" = anywhere ] || fail "anywhere: not the default"
python3 -c "import sys; s = $spread; sys.exit(not (s[0] < 0.1 and s[-1] > 0.9))" ||
	fail "anywhere: the instants do not reach the lane's first and last tenth: $spread"
auto=$(json_get "$TMP/anywhere.json" "r['breakpoints']")
if grep -q "hardware breakpoints do not trap here" "$TMP/hw.err" 2>/dev/null; then
	[ "$auto" = software ] || fail "auto: $auto breakpoints where hardware ones do not trap"
fi
echo "auto chose $auto breakpoints: $(json_get "$TMP/anywhere.json" "r['breakpoints_why']")"

# --faults admit: 300 a probe (one attempt of it here), and what is not a number of faults refused
expect_exit 0 admit "$SDCSCAN" campaign cpu-faults --variants gemm/int8 --faults admit --attempt 0 --instant start \
	--json "$TMP/admit.json"
[ "$(json_get "$TMP/admit.json" "(r['faults_per_probe'], len(r['variants'][0]['fault_list']))")" = "(300, 1)" ] ||
	fail "admit: not 300 a probe, or not one attempt"
expect_exit 3 few "$SDCSCAN" campaign cpu-faults --faults 0
expect_grep few err "or admit (300)"

# Where a seccomp filter refuses ptrace (as a container's may): UNKNOWN, saying so and why
python3 - "$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 1 > "$TMP/denied.out" 2> "$TMP/denied.err" <<'PY'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
# seccomp(2): load the syscall number; ptrace (101 on x86-64) gets EPERM, the rest are allowed
op = lambda code, k, jt=0, jf=0: struct.pack("HBBI", code, jt, jf, k)
prog = op(0x20, 0) + op(0x15, 101, 0, 1) + op(0x06, 0x00050000 | 1) + op(0x06, 0x7FFF0000)
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fp), 0, 0):  # NO_NEW_PRIVS, SECCOMP
    sys.exit("cannot install a seccomp filter: %s" % os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
PY
rc=$?
[ "$rc" = 3 ] || fail "denied: exit $rc, expected 3 (UNKNOWN)"
expect_grep denied err "ptrace is not allowed here: PTRACE_SEIZE of a child of its own failed: Operation not permitted"

# -q: the verdict line alone
"$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 1 --instant start -q > "$TMP/q.out" 2> /dev/null
[ "$(cat "$TMP/q.out")" = "OK: no fault was missed, and every run ended in its verdict" ] ||
	fail "-q: not the verdict line alone: $(cat "$TMP/q.out")"

# --json -: only JSON on stdout
"$SDCSCAN" campaign cpu-faults --variants gemm/int8 -n 1 --instant start --json - > "$TMP/stdout.json" 2> /dev/null
python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$TMP/stdout.json" || fail "--json -: stdout is not JSON alone"

finish
