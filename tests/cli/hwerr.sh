#!/bin/sh
# Hardware error counters around real runs, on a fake host: $SDCSCAN_HOST_ROOT points sdcscan at
# a tree holding sys/devices/system/edac/mc (two controllers, their counters already above zero,
# as on a host that has lived), dev/kmsg (a regular file in /dev/kmsg's record format, with an old
# uncorrected error before the run) and var/lib/rasdaemon/ras-mc_event.db (rasdaemon's tables,
# with old rows); the GPU is the fake module's, its NVML the stand-in (tests/gpu/fake_nvml.c).
# Checked: nothing old counts (OK); a DIMM's uncorrected count bumped mid-run by a background
# writer is CRITICAL and names the DIMM's label; an EDAC corrected line the kernel logs mid-run is
# WARNING, a process's forged machine check is not the kernel's; a kernel machine check is
# CRITICAL and names CPU and bank; a row rasdaemon adds mid-run is a finding; an Xid during the
# run is a finding on its GPU, classed as NVIDIA documents it (79 CRITICAL, 92 WARNING, 13
# UNKNOWN); without any source the run is OK and the report says why each was not read.
# usage: hwerr.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
export SDCSCAN_GPU_MODULE="$FAKE_GPU" SDCSCAN_NVML_LIBRARY="$FAKE_NVML"
unset FAKE_GPU_COUNT FAKE_GPU_BAD_SM FAKE_GPU_FAIL FAKE_NVML_NEW_UNC FAKE_NVML_XID FAKE_NVML_NO_XID_EVENTS
RUN="run --probe gemm --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.refresh=2 --set gemm.gpu_m=48
--set gemm.gpu_n=40 --set gemm.gpu_k=64 --set gemm.gpu_refresh=2 --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8
--cpus 0 --set gemm.duration=1.5 --set gemm.gpu_duration=1.5"
H="$TMP/host"
MC="$H/sys/devices/system/edac/mc"
DB="$H/var/lib/rasdaemon/ras-mc_event.db"

w() { mkdir -p "$(dirname "$1")" && printf '%s\n' "$2" >"$1"; }

sql() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$DB" "$1"; }

fake_host() {
	rm -rf "$H"
	w "$MC/mc0/mc_name" "Skylake Socket#0 IMC#0"
	w "$MC/mc0/ce_count" 12
	w "$MC/mc0/ue_count" 0
	w "$MC/mc0/seconds_since_reset" 86400
	w "$MC/mc0/dimm0/dimm_label" "CPU_SrcID#0_MC#0_Chan#0_DIMM#0"
	w "$MC/mc0/dimm0/dimm_location" "channel 0 slot 0"
	w "$MC/mc0/dimm0/dimm_ce_count" 12
	w "$MC/mc0/dimm0/dimm_ue_count" 0
	w "$MC/mc0/dimm1/dimm_label" "CPU_SrcID#0_MC#0_Chan#1_DIMM#0"
	w "$MC/mc0/dimm1/dimm_location" "channel 1 slot 0"
	w "$MC/mc0/dimm1/dimm_ce_count" 0
	w "$MC/mc0/dimm1/dimm_ue_count" 0
	w "$MC/mc1/mc_name" "Skylake Socket#1 IMC#0"
	w "$MC/mc1/ce_count" 0
	w "$MC/mc1/ue_count" 1
	w "$MC/mc1/seconds_since_reset" 86400
	w "$H/dev/kmsg" "3,200,1000000,-;EDAC MC1: 1 UE memory read error on DIMM_OLD (channel:0 slot:0 page:0x0 offset:0x0 grain:32)"
	mkdir -p "$(dirname "$DB")"
	sql "CREATE TABLE mc_event (id INTEGER PRIMARY KEY, timestamp TEXT, err_count INTEGER, err_type TEXT,
	       err_msg TEXT, label TEXT, mc INTEGER, top_layer INTEGER, middle_layer INTEGER, lower_layer INTEGER,
	       address INTEGER, grain INTEGER, syndrome INTEGER, driver_detail TEXT);
	     CREATE TABLE aer_event (id INTEGER PRIMARY KEY, timestamp TEXT, dev_name TEXT, err_type TEXT, err_msg TEXT);
	     INSERT INTO mc_event (timestamp, err_count, err_type, err_msg, label, mc)
	       VALUES ('2026-11-01 10:00:00 +0000', 1, 'Uncorrected', 'memory read error', 'DIMM_OLD', 1);
	     INSERT INTO aer_event (timestamp, dev_name, err_type, err_msg)
	       VALUES ('2026-11-01 10:00:00 +0000', '0000:3b:00.0', 'Uncorrected (Fatal)', 'old');" ||
		fail "python3's sqlite3 cannot make rasdaemon's database"
}

# the report's hardware-error findings, one "variant kind device" a line
found() {
	json_get "$TMP/$1.json" "'\n'.join('%s %s %s' % (f['variant'], f['kind'], f['device']) for f in r['findings'] if f['probe'] == 'health') or 'none'"
}

export SDCSCAN_HOST_ROOT="$H"

# Counters above zero and errors logged before the run are not the run's: OK, every source read.
fake_host
expect_exit 0 clean "$SDCSCAN" $RUN --json "$TMP/clean.json"
[ "$(found clean)" = none ] || fail "clean: $(found clean)"
check=$(python3 - "$TMP/clean.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = {x["name"]: x for x in r["run"]["environment"]["hardware_errors"]["sources"]}
bad = []
if not (s["edac"]["read"] and s["edac"]["memory_controllers"] == 2 and s["edac"]["dimms"] == 2):
    bad.append("edac %r" % s["edac"])
if not (s["kmsg"]["read"] and s["kmsg"]["records"] == 0):
    bad.append("kmsg %r" % s["kmsg"])
if not s["rasdaemon"]["read"]:
    bad.append("rasdaemon %r" % s["rasdaemon"])
if not (s["nvml-xid"]["read"] and s["nvml-xid"]["gpus"] == [{"device": "gpu0", "read": True}]):
    bad.append("nvml-xid %r" % s["nvml-xid"])
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "clean sources: $check"

# A DIMM's uncorrected count grows during the run: CRITICAL, named by its label.
fake_host
during edac_ue sh -c "echo 1 >'$MC/mc0/dimm1/dimm_ue_count'; echo 1 >'$MC/mc0/ue_count'"
expect_exit 2 edac_ue "$SDCSCAN" $RUN --json "$TMP/edac_ue.json"
wait
[ "$(found edac_ue)" = "edac edac-uncorrected host" ] || fail "edac_ue: $(found edac_ue)"
expect_grep edac_ue out "^CRITICAL: host health edac: 1 new uncorrected memory error on DIMM CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (mc0 dimm1, channel 1 slot 0): dimm_ue_count 0 -> 1"
expect_grep edac_ue out "host iteration 0: edac-uncorrected"

# The kernel logs an EDAC corrected error during the run: WARNING. A process writing a machine
# check into the log (facility 1, as /dev/kmsg gives every write from user space) is not one.
fake_host
during kmsg_ce sh -c "printf '%s\n' '12,300,2000000,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: be00000000800400' \
'4,301,2000001,-;EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x1 offset:0x0 grain:32 syndrome:0x0)' \
' SUBSYSTEM=edac' >>'$H/dev/kmsg'"
expect_exit 1 kmsg_ce "$SDCSCAN" $RUN --json "$TMP/kmsg_ce.json"
wait
[ "$(found kmsg_ce)" = "kmsg edac-corrected host" ] || fail "kmsg_ce: $(found kmsg_ce)"
expect_grep kmsg_ce out "^WARNING: host health kmsg: kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0"

# An uncorrected machine check the kernel logs during the run: CRITICAL, with its CPU and bank.
fake_host
# Its time is the record's own (the kernel's clock, CLOCK_MONOTONIC in microseconds, as /dev/kmsg
# stamps records), not when sdcscan read it: stamped 2.8 s before it is written here (after the
# first variant's 3 s, so within the run), which no reading time can be. Variants of 3 s, not
# 1.5: the writer may start up to 2.8 s late (0.35 s here) and still land in the window.
during mce python3 -c 'import sys, time; open(sys.argv[1], "a").write("0,302,%d,-;mce: [Hardware Error]: CPU 1: Machine Check Exception: 5 Bank 4: be00000000800400\n" % ((time.monotonic() - 2.8) * 1e6))' "$H/dev/kmsg"
expect_exit 2 mce "$SDCSCAN" $RUN --set gemm.duration=3 --set gemm.gpu_duration=3 --json "$TMP/mce.json"
wait
[ "$(found mce)" = "kmsg mce host" ] || fail "mce: $(found mce)"
[ "$(json_get "$TMP/mce.json" "[f['operation'] for f in r['findings'] if f['kind'] == 'mce']")" = "['machine check, CPU 1 bank 4']" ] ||
	fail "mce: CPU and bank not named"
expect_grep mce out "uncorrected machine check on CPU 1 bank 4: MCi_STATUS 0xbe00000000800400 (processor context corrupt)"
ttf=$(json_get "$TMP/mce.json" "[f['time_to_failure_seconds'] for f in r['findings'] if f['kind'] == 'mce'][0]")
python3 -c "import sys; t = float(sys.argv[1]); sys.exit(not 0.1 < t < 3)" "$ttf" ||
	fail "mce: at $ttf s into the run, not when the kernel logged it (2.8 s before it was written)"

# A row rasdaemon records during the run (an uncorrectable PCIe error): CRITICAL.
fake_host
during ras sql "INSERT INTO aer_event (timestamp, dev_name, err_type, err_msg) VALUES
	('2026-11-21 10:00:00 +0000', '0000:17:00.0', 'Uncorrected (Non-Fatal)', 'Poisoned TLP');"
expect_exit 2 ras "$SDCSCAN" $RUN --json "$TMP/ras.json"
wait
[ "$(found ras)" = "rasdaemon pcie-aer host" ] || fail "ras: $(found ras)"
expect_grep ras out "pcie-aer: Uncorrected (Non-Fatal) PCIe error at 0000:17:00.0"

# Xid events during the run, on the GPU that raised them, classed as NVIDIA documents them.
fake_host
FAKE_NVML_XID=0000:f0:00.0=79 expect_exit 2 xid79 "$SDCSCAN" $RUN --json "$TMP/xid79.json"
[ "$(found xid79)" = "nvml gpu-xid gpu0" ] || fail "xid79: $(found xid79)"
expect_grep xid79 out "^CRITICAL: gpu0 health nvml: Xid 79, GPU has fallen off the bus"
ttf=$(json_get "$TMP/xid79.json" "[f['time_to_failure_seconds'] for f in r['findings'] if f['kind'] == 'gpu-xid'][0]")
# the fake raises it 0.3 s into the run, of 3 s: polled while the run goes on, not only at its end
python3 -c "import sys; t = float(sys.argv[1]); sys.exit(not 0.25 <= t < 1.5)" "$ttf" ||
	fail "xid79: seen $ttf s into the run, not when it happened (0.3 s)"
FAKE_GPU_COUNT=2 FAKE_NVML_XID=0000:f1:00.0=48 expect_exit 2 xid48 "$SDCSCAN" $RUN --json "$TMP/xid48.json"
[ "$(found xid48)" = "nvml gpu-xid gpu1" ] || fail "xid48 on the second GPU: $(found xid48)"
FAKE_NVML_XID=0000:f0:00.0=92 expect_exit 1 xid92 "$SDCSCAN" $RUN
expect_grep xid92 out "^WARNING: gpu0 health nvml: Xid 92, High single-bit ECC error rate"
FAKE_NVML_XID=0000:f0:00.0=13,0000:f0:00.0=13 expect_exit 3 xid13 "$SDCSCAN" $RUN
expect_grep xid13 out "^UNKNOWN: gpu0 health nvml: 2 times: Xid 13, Graphics Engine Exception"

# No EDAC, no kernel log, no rasdaemon, a GPU without Xid events: OK, and the report says why.
export SDCSCAN_HOST_ROOT="$TMP/bare"
mkdir -p "$SDCSCAN_HOST_ROOT"
FAKE_NVML_NO_XID_EVENTS=1 expect_exit 0 bare "$SDCSCAN" $RUN --json "$TMP/bare.json"
[ "$(found bare)" = none ] || fail "bare: $(found bare)"
check=$(python3 - "$TMP/bare.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = {x["name"]: x for x in r["run"]["environment"]["hardware_errors"]["sources"]}
want = {"edac": "no EDAC driver", "kmsg": "kernel log", "rasdaemon": "rasdaemon is not installed",
        "nvml-xid": "no GPU could be registered"}
bad = ["%s: %r" % (k, s[k]) for k, w in want.items() if s[k]["read"] or w not in s[k]["why"]]
g = s["nvml-xid"]["gpus"]
if len(g) != 1 or g[0]["read"] or "reports no Xid events" not in g[0]["why"]:
    bad.append("gpus %r" % g)
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "bare sources: $check"

# The reports hold to the schema, hardware_errors included.
check=$(python3 - "$(dirname "$0")/../../schema/report.schema.json" "$TMP"/clean.json "$TMP"/edac_ue.json \
	"$TMP"/xid79.json "$TMP"/bare.json <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    print("ok")  # tests/schema's report_schema test says so loudly
    sys.exit()
schema = json.load(open(sys.argv[1]))
v = jsonschema.validators.validator_for(schema)(schema)
bad = ["%s: %s" % (f.rsplit("/", 1)[-1], e.message[:160]) for f in sys.argv[2:] for e in v.iter_errors(json.load(open(f)))]
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "schema: $check"

finish
