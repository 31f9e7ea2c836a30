#!/bin/sh
# The Prometheus textfile (--prom, runner/export.h) says what each run was, one run of each kind:
# every probe on every device has a status label (ok, corrupt, crashed, degraded, error, hung,
# interrupted, skipped) and sdcscan_probe_failed 1 only where something was found or could not be
# tested: a Ctrl-C reads interrupted and 0, never corrupt; a busy node's skipped run reads skipped
# and 0; a run that died reads error (sdcscan status --prom), without the run before's findings.
# sdcscan_probe_findings counts the report's findings of each. profile and injected labels on
# every per-run series; no empty label anywhere (a CPU has no gpu or UUID label; a GPU has
# dcgm-exporter's). sdcscan_last_success_timestamp_seconds and
# sdcscan_last_full_run_timestamp_seconds (the node's freshness): a clean full scheduled run's own
# end (with --no-state too), kept from the state after any other run, 0 with neither; a partial
# run (--set, --cpus) never moves them.
# Each textfile passes `promtool check metrics`. The expectations come from what each run was
# made to be (an injected fault, a fake GPU's failure, a signal), never from the exporter.
# usage: metrics.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML [OUT_DIR]
#   OUT_DIR: keep the textfiles there (tests/packaging/prometheus.sh checks the shipped alert
#   rules and dashboard against them).
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
OUT=${4:-$TMP/prom}
mkdir -p "$OUT" "$TMP/bin"
export SDCSCAN_GPU_MODULE="$FAKE_GPU" SDCSCAN_NVML_LIBRARY="$FAKE_NVML"
unset FAKE_GPU_COUNT FAKE_GPU_FAIL FAKE_NVML_NEW_UNC FAKE_NVML_PROCS
UUID=GPU-00000000-0000-0000-0000-000000000000 # the fake GPU's (tests/gpu/fake_nvml.c)
GPU0="device=\"nvidia0\",gpu=\"0\",UUID=\"$UUID\""
G="run --probe gemm --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.refresh=2 --set gemm.gpu_m=48 \
--set gemm.gpu_n=40 --set gemm.gpu_k=64 --set gemm.gpu_refresh=2 --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8"
ONE="--cpus 0 --set gemm.iterations=16"
TWO="--cpus 0-1 --gpus none --duration 2"

# has NAME LINE...: each LINE is a whole line of $OUT/NAME.prom
has() {
	f=$OUT/$1.prom
	shift
	for l in "$@"; do
		grep -Fqx -- "$l" "$f" || fail "$(basename "$f"): no line $l; it has: $(grep '^sdcscan_probe\|^sdcscan_last_run_info' "$f" | tr '\n' ' ')"
	done
}
value() { sed -n "s/^$2 //p" "$OUT/$1.prom"; }
# end NAME: when the run of $TMP/NAME.json ended (start + duration), as the textfile prints it
end() {
	python3 -c "import calendar, json, sys, time
r = json.load(open(sys.argv[1]))['run']
print('%.3f' % (calendar.timegm(time.strptime(r['start'], '%Y-%m-%dT%H:%M:%SZ')) + r['duration_seconds']))" "$TMP/$1.json"
}
# nfind NAME PROBE DEVICE: the findings the report holds for the probe on the device
nfind() { json_get "$TMP/$1.json" "sum(1 for f in r['findings'] if f['probe'] == '$2' and f['device'] == '$3')"; }

# ok: a clean run on a core and a GPU, keeping state
S=$TMP/st
expect_exit 0 ok "$SDCSCAN" $G $ONE --state-dir "$S" --json "$TMP/ok.json" --prom "$OUT/ok.prom"
has ok "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_failed{probe=\"gemm\",$GPU0,status=\"ok\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_findings{probe=\"gemm\",device=\"cpu0\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_findings{probe=\"gemm\",$GPU0,profile=\"quick\",injected=\"false\"} 0" \
	'sdcscan_last_run_info{profile="quick",injected="false"} 1' 'sdcscan_verdict 0' 'sdcscan_last_run_verdict 0'
ok_end=$(end ok)
[ "$(value ok sdcscan_last_success_timestamp_seconds)" = 0.000 ] && [ "$(value ok sdcscan_last_full_run_timestamp_seconds)" = 0.000 ] &&
	[ "$(value ok sdcscan_last_run_timestamp_seconds)" = "$ok_end" ] ||
	fail "ok (partial): last success $(value ok sdcscan_last_success_timestamp_seconds), full run $(value ok sdcscan_last_full_run_timestamp_seconds), last run $(value ok sdcscan_last_run_timestamp_seconds), the report says it ended $ok_end"

# full: the profile as it is (a full scheduled run): its own end is the last success and the freshness
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    gpu_dtypes: [int8]\n    gpu_m: 48\n    gpu_n: 40\n    gpu_k: 64\n    duration: 1\n' >"$TMP/full.yaml"
expect_exit 0 full "$SDCSCAN" run --profile "$TMP/full.yaml" --state-dir "$S" --json "$TMP/full.json" --prom "$OUT/full.prom"
full_end=$(end full)
[ "$(value full sdcscan_last_success_timestamp_seconds)" = "$full_end" ] && [ "$(value full sdcscan_last_full_run_timestamp_seconds)" = "$full_end" ] ||
	fail "full: last success $(value full sdcscan_last_success_timestamp_seconds), full run $(value full sdcscan_last_full_run_timestamp_seconds), the report says it ended $full_end"

# degraded: a core below the throughput floor (WARNING); the last success stays the clean run's
expect_exit 1 degraded "$SDCSCAN" $G $ONE --gpus none --set gemm.int8_floor=1000000 --state-dir "$S" \
	--json "$TMP/degraded.json" --prom "$OUT/degraded.prom"
n=$(nfind degraded gemm cpu0)
[ "$n" -ge 1 ] || fail "degraded: no finding at cpu0"
has degraded "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"degraded\",profile=\"quick\",injected=\"false\"} 1" \
	"sdcscan_probe_findings{probe=\"gemm\",device=\"cpu0\",profile=\"quick\",injected=\"false\"} $n"
[ "$(value degraded sdcscan_last_success_timestamp_seconds)" = "$full_end" ] && [ "$(value degraded sdcscan_last_full_run_timestamp_seconds)" = "$full_end" ] ||
	fail "degraded: last success $(value degraded sdcscan_last_success_timestamp_seconds), not the full run's $full_end"

# a clean run without state: its own end; one that is not clean, without state: none known
expect_exit 0 nostate "$SDCSCAN" run --profile "$TMP/full.yaml" --no-state --json "$TMP/nostate.json" --prom "$OUT/nostate.prom"
[ "$(value nostate sdcscan_last_success_timestamp_seconds)" = "$(end nostate)" ] ||
	fail "nostate: last success $(value nostate sdcscan_last_success_timestamp_seconds), the clean run ended $(end nostate)"

# error: the GPU fails as a sticky CUDA error would (UNKNOWN); the core is still ok
FAKE_GPU_FAIL=multiply expect_exit 3 error "$SDCSCAN" $G $ONE --no-state --prom "$OUT/error.prom"
has error "sdcscan_probe_failed{probe=\"gemm\",$GPU0,status=\"error\",profile=\"quick\",injected=\"false\"} 1" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"quick\",injected=\"false\"} 0" \
	'sdcscan_last_success_timestamp_seconds 0.000'

# corrupt, not injected: a new uncorrectable ECC error on the GPU during the run (the health
# checks' finding: a probe and device of its own)
FAKE_NVML_NEW_UNC=1 expect_exit 2 ecc "$SDCSCAN" $G $ONE --no-state --json "$TMP/ecc.json" --prom "$OUT/ecc.prom"
has ecc "sdcscan_probe_failed{probe=\"health\",$GPU0,status=\"corrupt\",profile=\"quick\",injected=\"false\"} 1" \
	"sdcscan_probe_findings{probe=\"health\",$GPU0,profile=\"quick\",injected=\"false\"} $(nfind ecc health gpu0)" \
	"sdcscan_probe_failed{probe=\"gemm\",$GPU0,status=\"ok\",profile=\"quick\",injected=\"false\"} 0" 'sdcscan_verdict 2'

# corrupt, injected: a flipped bit at cpu1
expect_exit 2 corrupt "$SDCSCAN" $G $TWO --no-state --json "$TMP/corrupt.json" --prom "$OUT/corrupt.prom" \
	--inject "gemm/int8:C:device=1,iter=1,row=3,col=4,bit=12"
has corrupt "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"corrupt\",profile=\"quick\",injected=\"true\"} 1" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"quick\",injected=\"true\"} 0" \
	"sdcscan_probe_findings{probe=\"gemm\",device=\"cpu1\",profile=\"quick\",injected=\"true\"} $(nfind corrupt gemm cpu1)" \
	'sdcscan_last_run_info{profile="quick",injected="true"} 1'
[ "$(nfind corrupt gemm cpu1)" -ge 1 ] || fail "corrupt: no finding at cpu1"

# crashed and hung: a worker's fault and a livelock at cpu1 (runner/burn.h)
expect_exit 2 crashed "$SDCSCAN" $G $TWO --no-state --prom "$OUT/crashed.prom" --inject "gemm:SEGV:iter=1,device=1"
has crashed "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"crashed\",profile=\"quick\",injected=\"true\"} 1" \
	"sdcscan_probe_findings{probe=\"gemm\",device=\"cpu1\",profile=\"quick\",injected=\"true\"} 1"
expect_exit 3 hung "$SDCSCAN" $G $TWO --no-state --set gemm.hang_timeout=3 --prom "$OUT/hung.prom" \
	--inject "gemm:HANG:iter=1,device=1"
has hung "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"hung\",profile=\"quick\",injected=\"true\"} 1" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"quick\",injected=\"true\"} 0"

# interrupted: a Ctrl-C two seconds into a minute's run (gemm cut short, embbag never started):
# the run is UNKNOWN, but nothing failed and nothing is corrupt
"$SDCSCAN" run --probe gemm --probe embbag --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.dtypes=int8 \
	--cpus 0-1 --gpus none --duration 60 --no-state --json "$TMP/int.json" --prom "$OUT/interrupted.prom" >"$TMP/int.out" 2>&1 &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 3 ] || fail "interrupted: exit $rc, expected 3"
[ "$(json_get "$TMP/int.json" "sorted(set((x['probe'], x['status'], x['interrupted']) for x in r['results']))")" = \
	"[('embbag', 'not-run', False), ('gemm', 'ok', True)]" ] || fail "interrupted: not the run this test asks for: $(tail -3 "$TMP/int.out")"
has interrupted 'sdcscan_last_run_verdict 3' \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"interrupted\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"interrupted\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_failed{probe=\"embbag\",device=\"cpu1\",status=\"interrupted\",profile=\"quick\",injected=\"false\"} 0"

# skipped: --if-idle on a node Slurm says runs a job (a stand-in scontrol)
printf '#!/bin/sh\necho "NodeName=$(hostname -s) Arch=x86_64 State=MIXED ThreadsPerCore=1"\n' >"$TMP/bin/scontrol"
chmod +x "$TMP/bin/scontrol"
PATH="$TMP/bin:$PATH" expect_exit 3 skipped "$SDCSCAN" $G $TWO --if-idle --state-dir "$S" --prom "$OUT/skipped.prom"
has skipped "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"skipped\",profile=\"quick\",injected=\"false\"} 0" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"skipped\",profile=\"quick\",injected=\"false\"} 0" \
	'sdcscan_last_run_verdict 3'
[ "$(value skipped sdcscan_last_success_timestamp_seconds)" = "$full_end" ] || fail "skipped: last success moved"

# died: a run killed (SIGKILL) after an injected corrupt one; status --prom writes its metrics:
# every probe on every device error, none of the run before's findings, not injected
D=$TMP/died
expect_exit 2 before "$SDCSCAN" $G $TWO --state-dir "$D" --inject "gemm/int8:C:device=1,iter=1,row=3,col=4,bit=12"
"$SDCSCAN" $G $TWO --duration 30 --state-dir "$D" >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect_exit 3 died "$SDCSCAN" status --state-dir "$D" --prom "$OUT/died.prom"
has died "sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"error\",profile=\"quick\",injected=\"false\"} 1" \
	"sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"error\",profile=\"quick\",injected=\"false\"} 1" \
	"sdcscan_probe_findings{probe=\"gemm\",device=\"cpu1\",profile=\"quick\",injected=\"false\"} 0" 'sdcscan_verdict 3'

# Every file: promtool's lint; no empty label; no gpu or UUID label but on a GPU's series; the
# status label one of the eight; sdcscan_probe_failed 1 exactly for the five that fail.
for f in "$OUT"/*.prom; do
	promtool check metrics <"$f" >"$TMP/lint.out" 2>&1 || fail "promtool check metrics $(basename "$f"): $(cat "$TMP/lint.out")"
done
bad=$(python3 - "$OUT" <<'PY'
import glob, re, sys
fail = {"corrupt": "1", "crashed": "1", "degraded": "1", "error": "1", "hung": "1",
        "ok": "0", "skipped": "0", "interrupted": "0"}
bad, seen = [], set()
for path in sorted(glob.glob(sys.argv[1] + "/*.prom")):
    for line in open(path):
        if line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line.rstrip("\n"))
        if not m:
            bad.append("%s: not a sample: %s" % (path, line.strip()))
            continue
        labels = dict(re.findall(r'([A-Za-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if any(v == "" for v in labels.values()):
            bad.append("%s: an empty label: %s" % (path, line.strip()))
        gpu = labels.get("device", "").startswith("nvidia")
        if not gpu and ("gpu" in labels or "UUID" in labels):
            bad.append("%s: gpu or UUID on a series not a GPU's: %s" % (path, line.strip()))
        if gpu and not (labels.get("gpu") and labels.get("UUID")):
            bad.append("%s: a GPU without gpu and UUID: %s" % (path, line.strip()))
        if m.group(1) == "sdcscan_probe_failed":
            s = labels.get("status")
            seen.add(s)
            if fail.get(s) != m.group(3):
                bad.append("%s: status %s with value %s" % (path, s, m.group(3)))
if seen != set(fail):
    bad.append("statuses seen: %s" % sorted(x or "" for x in seen))
print("\n".join(bad))
PY
)
[ -z "$bad" ] || fail "$bad"
finish
