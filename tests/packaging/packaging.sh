#!/bin/sh
# packaging/: the systemd units pass systemd-analyze verify and scan only an idle node; the cron
# file keeps cron's rules, spreads the fleet over a window and logs to syslog; the
# node-problem-detector config passes NPD's own validation rules and each of its conditions says
# one thing (corruption, stale or degraded, not tested); the Slurm health check and the NHC check
# do what their hosts expect of them and say a stale or failed scan without draining (checked
# against a stand-in scontrol that records its calls, as scontrol(1) documents them); a skipped
# run shows in the metrics; meson install lays everything out; rpmspec parses the spec with MPI.
# usage: packaging.sh SDCSCAN SOURCE_ROOT BUILD_ROOT
. "$(dirname "$0")/../cli/lib.sh"
SRC=${2:?source root}
BLD=${3:?build root}
PK=$BLD/packaging
SDC=$(cd "$(dirname "$SDCSCAN")" && pwd)/$(basename "$SDCSCAN")
SMALL_RUN="run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --duration 1 --cpus 0"

# systemd: the units as installed, ExecStart pointed at this build's binary.
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TMP/units"
	sed "s|^ExecStart=[^ ]*/sdcscan|ExecStart=$SDC|" "$PK/sdcscan.service" >"$TMP/units/sdcscan.service"
	cp "$SRC/packaging/systemd/sdcscan.timer" "$TMP/units/"
	systemd-analyze verify --man=no "$TMP/units/sdcscan.service" "$TMP/units/sdcscan.timer" >"$TMP/verify.out" 2>&1 ||
		fail "systemd-analyze verify: $(cat "$TMP/verify.out")"
else
	fail "systemd-analyze not found (apt-get install systemd)"
fi
for k in "Type=oneshot" "SuccessExitStatus=1 2" "StateDirectory=sdcscan sdcscan/metrics"; do
	grep -qx "$k" "$PK/sdcscan.service" || fail "service: no $k"
done
# the scan burns only an idle node, and writes its metrics where only root writes
grep -q "^ExecStart=.* run .*--if-idle" "$PK/sdcscan.service" || fail "service: the scan is not --if-idle"
grep -q "^ExecStart=.* --prom /var/lib/sdcscan/metrics/sdcscan.prom" "$PK/sdcscan.service" ||
	fail "service: the metrics are not written into /var/lib/sdcscan/metrics"
# a run killed before its verdict shows in the metrics too: the unit's ExecStopPost, as systemd
# runs it after a SIGKILL (here the run is killed by hand, in a state directory of its own)
post=$(sed -n 's/^ExecStopPost=-//p' "$PK/sdcscan.service")
case $post in *" status --prom /var/lib/sdcscan/metrics/sdcscan.prom") ;; *) fail "service: no ExecStopPost status --prom: $post" ;; esac
SDCSCAN_STATE_DIR=$TMP/killed "$SDCSCAN" $SMALL_RUN --duration 30 >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
mkdir -p "$TMP/killed-metrics"
SDCSCAN_STATE_DIR=$TMP/killed sh -c "$(printf '%s' "$post" | sed "s|^[^ ]*/sdcscan |$SDC |; s|/var/lib/sdcscan/metrics/|$TMP/killed-metrics/|")" >/dev/null 2>&1
grep -q "^sdcscan_last_run_verdict 3$" "$TMP/killed-metrics/sdcscan.prom" 2>/dev/null ||
	fail "service: a killed run is not in the metrics after ExecStopPost: $(cat "$TMP/killed-metrics/sdcscan.prom" 2>&1 | head -2)"
for k in "OnCalendar=" "RandomizedDelaySec=" "AccuracySec=1us" "Persistent=true"; do
	grep -q "^$k" "$SRC/packaging/systemd/sdcscan.timer" || fail "timer: no $k"
done

# cron.d (crontab(5)): a name without dots; five time fields in range, the user, the command;
# the test -x guard, flock -n against overlap, --if-idle; no % (cron makes it a newline); spread
# over a window (cron has no RandomizedDelaySec); output to syslog, not /dev/null.
case $(basename "$SRC/packaging/cron/sdcscan.in" .in) in *.*) fail "cron.d file name has a dot" ;; esac
line=$(grep -v '^#' "$PK/cron.d-sdcscan" | grep -v '^[A-Z]*=' | grep -v '^$')
[ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || fail "cron: not one job line: $line"
bad=$(python3 - "$line" <<'PY'
import sys
f = sys.argv[1].split(None, 6)
ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
def ok(field, lo, hi):
    for part in field.split(","):
        rng, _, step = part.partition("/")
        if step and not step.isdigit(): return False
        if rng == "*": continue
        a, _, b = rng.partition("-")
        if not a.isdigit() or (b and not b.isdigit()): return False
        if not lo <= int(a) <= hi or (b and not int(a) <= int(b) <= hi): return False
    return True
bad = [n for n, (x, r) in enumerate(zip(f[:5], ranges)) if not ok(x, *r)]
print("fields %s" % bad if len(f) < 7 or bad else "")
PY
)
[ -z "$bad" ] || fail "cron: time fields out of crontab(5)'s ranges ($bad): $line"
set -f
set -- $line
set +f
[ "$6" = root ] || fail "cron: the sixth field is not the user: $line"
cmd=${line#* * * * * root }
case $cmd in *%*) fail "cron: a % in the command (cron turns it into a newline): $cmd" ;; esac
echo "$cmd" | grep -q "^test -x .*/sdcscan && " || fail "cron: no test -x guard: $cmd"
echo "$cmd" | grep -q "flock -n [^ ]* .*/sdcscan run .*--if-idle" || fail "cron: no flock -n, or the scan not --if-idle: $cmd"
echo "$cmd" | grep -q "/dev/null" && fail "cron: output thrown away: $cmd"
echo "$cmd" | grep -q "2>&1 | logger -t sdcscan" || fail "cron: the output does not go to syslog (logger -t sdcscan): $cmd"
# the spread: a sleep drawn per run within 3 h (the timer's RandomizedDelaySec window)
draw=$(printf '%s' "$cmd" | sed -n 's/.*sleep "\$(\([^)]*\))".*/\1/p')
[ -n "$draw" ] || fail "cron: no random sleep before the scan: $cmd"
if [ -n "$draw" ]; then
	vals=$(for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do sh -c "$draw"; done)
	[ "$(printf '%s\n' "$vals" | sort -u | wc -l)" -ge 2 ] || fail "cron: the sleep is not spread: $(echo $vals)"
	for v in $vals; do [ "$v" -ge 0 ] && [ "$v" -lt 10800 ] || fail "cron: a sleep of $v s, outside 0-3 h"; done
fi
# The job as cron runs it (sh -c, cron's PATH) with stand-ins for sleep and logger, this build's
# sdcscan, and Slurm saying the node runs a job: a skipped run, said in syslog.
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "sleep $*" >>"%s/cron.log"\n' "$TMP" >"$TMP/bin/sleep"
printf '#!/bin/sh\necho "logger $*" >>"%s/cron.log"\ncat >>"%s/cron.log"\n' "$TMP" "$TMP" >"$TMP/bin/logger"
printf '#!/bin/sh\necho "NodeName=$(hostname -s) Arch=x86_64 State=MIXED ThreadsPerCore=1"\n' >"$TMP/bin/scontrol"
chmod +x "$TMP/bin/sleep" "$TMP/bin/logger" "$TMP/bin/scontrol"
job=$(printf '%s' "$cmd" | sed "s|/run/sdcscan.cron.lock|$TMP/cron.lock|; s|/var/lib/sdcscan/metrics/|$TMP/metrics/|; \
	s|[^ ]*bin/sdcscan |$SDC |g; s|--profile cron|--probe gemm --set gemm.dtypes=int8 --duration 1 --cpus 0|")
mkdir -p "$TMP/metrics"
SDCSCAN_STATE_DIR=$TMP/cronstate PATH="$TMP/bin:/usr/sbin:/usr/bin:/sbin:/bin" sh -c "$job"
grep -q "^sleep [0-9]" "$TMP/cron.log" || fail "cron job: did not sleep first: $(cat "$TMP/cron.log")"
grep -q "^logger -t sdcscan" "$TMP/cron.log" && grep -q "UNKNOWN: .*skipped, the node is busy: Slurm: node .* is MIXED" "$TMP/cron.log" ||
	fail "cron job: the skipped run not said to syslog: $(cat "$TMP/cron.log")"
# ... and the metrics say it: the node's verdict as it was (none yet: the skipped run's), the run's own UNKNOWN
grep -q "^sdcscan_last_run_verdict 3$" "$TMP/metrics/sdcscan.prom" 2>/dev/null ||
	fail "cron job: a skipped run is not in the metrics: $(cat "$TMP/metrics/sdcscan.prom" 2>&1 | head -3)"
# A skipped run after an OK one: the node's verdict stays 0 (OK), the run's own is 3 (UNKNOWN).
export SDCSCAN_STATE_DIR="$TMP/skip"
# (a full scheduled run of a small profile: a partial run never makes a node fresh)
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    duration: 1\n' >"$TMP/small.yaml"
expect_exit 0 skip_ok "$SDCSCAN" run --profile "$TMP/small.yaml"
PATH="$TMP/bin:$PATH" expect_exit 3 skip "$SDCSCAN" $SMALL_RUN --if-idle --prom "$TMP/skip.prom"
grep -q "^sdcscan_verdict 0$" "$TMP/skip.prom" && grep -q "^sdcscan_last_run_verdict 3$" "$TMP/skip.prom" ||
	fail "metrics of a skipped run: $(grep -E '^sdcscan_(last_run_)?verdict' "$TMP/skip.prom")"
expect_exit 0 skip_status "$SDCSCAN" status
expect_grep skip_status out "skipped"

# Node states for the checks below, each in its own state directory: OK; CRITICAL (a real one:
# a scheduled run on a GPU whose SM 3 computes wrong, the fake GPU module; an injected run never
# changes the node's state); WARNING (stale: status --max-age 1 through a wrapper, a second
# after an OK run); UNKNOWN (no run at all).
export SDCSCAN_STATE_DIR="$TMP/ok"
expect_exit 0 scan_ok "$SDCSCAN" run --profile "$TMP/small.yaml"
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    gpu_dtypes: [bf16]\n    gpu_m: 48\n    gpu_n: 40\n    gpu_k: 64\n    duration: 2\n' >"$TMP/sched.yaml"
SDCSCAN_GPU_MODULE=$BLD/tests/fake-gpu.so SDCSCAN_NVML_LIBRARY=$BLD/tests/fake-nvml.so FAKE_GPU_BAD_SM=3 \
	SDCSCAN_STATE_DIR=$TMP/crit expect_exit 2 scan_crit "$SDCSCAN" run --profile "$TMP/sched.yaml"
# CRITICAL and a clock a day ahead: both corruption and degraded (the skew is not hidden by it)
cp -r "$TMP/crit" "$TMP/critskew"
SDCSCAN_STATE_DIR=$TMP/critskew expect_exit 0 scan_skew faketime -f '+1d' "$SDCSCAN" $SMALL_RUN
printf '#!/bin/sh\nexec %s "$@" --max-age 1\n' "$SDC" >"$TMP/stale-sdcscan"
chmod +x "$TMP/stale-sdcscan"
sleep 1.2
state() { # state NAME: SDCSCAN and SDCSCAN_STATE_DIR for that node state
	case $1 in
	ok) SDCSCAN=$SDC SDCSCAN_STATE_DIR=$TMP/ok ;;
	critical) SDCSCAN=$SDC SDCSCAN_STATE_DIR=$TMP/crit ;;
	critskew) SDCSCAN=$SDC SDCSCAN_STATE_DIR=$TMP/critskew ;;
	stale) SDCSCAN=$TMP/stale-sdcscan SDCSCAN_STATE_DIR=$TMP/ok ;;
	unknown) SDCSCAN=$SDC SDCSCAN_STATE_DIR=$TMP/none ;;
	broken) SDCSCAN=$TMP/no-such-sdcscan SDCSCAN_STATE_DIR=$TMP/ok ;;
	esac
	export SDCSCAN SDCSCAN_STATE_DIR
}
for s in ok:0 critical:2 stale:1 unknown:3; do
	(state "${s%:*}" && "$SDCSCAN" status >/dev/null 2>&1; [ $? = "${s#*:}" ]) || fail "state ${s%:*}: status does not exit ${s#*:}"
done

# node-problem-detector: its config passes the checks NPD makes when it loads one
# (pkg/custompluginmonitor/types/config.go: ApplyConfiguration, Validate; field names from the
# json tags there and in types.go: json.Unmarshal drops a misspelt one without a word), each
# condition has one permanent rule, and the rules ask the script the three questions.
npd=$(python3 - "$SRC/packaging/npd/sdcscan-plugin.json" <<'PY'
import json, re, sys
c = json.load(open(sys.argv[1]))
bad = []
def dur(s):  # Go's time.ParseDuration, the units NPD's configs use
    m = re.fullmatch(r"((\d+(\.\d+)?)(ns|us|ms|s|m|h))+", s or "")
    if not m: return None
    return sum(float(n) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[u]
               for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|ms|s|m|h)", s))
top = {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
glob = {"invoke_interval", "timeout", "max_output_length", "concurrency",
        "enable_message_change_based_condition_update", "skip_initial_status"}
rule_keys = {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"}
cond_keys = {"type", "reason", "message"}
bad += ["unknown field %s" % k for k in set(c) - top]
bad += ["unknown pluginConfig field %s" % k for k in set(c["pluginConfig"]) - glob]
for r in c["rules"]: bad += ["unknown rule field %s" % k for k in set(r) - rule_keys]
for x in c["conditions"]: bad += ["unknown condition field %s" % k for k in set(x) - cond_keys]
if c.get("plugin") != "custom": bad.append("plugin is not custom")
g = dur(c["pluginConfig"].get("timeout", "5s"))
if g is None or dur(c["pluginConfig"].get("invoke_interval", "30s")) is None: bad.append("global durations")
if c["pluginConfig"].get("max_output_length", 80) > 80: bad.append("max_output_length over 80")
for r in c["rules"]:
    t = dur(r.get("timeout", c["pluginConfig"].get("timeout", "5s")))
    if t is None or (g is not None and t > g): bad.append("rule timeout over the global one: %s" % r)
    if r.get("type") not in ("permanent", "temporary"): bad.append("rule type %s" % r.get("type"))
    if r["type"] == "permanent" and r["condition"] not in [x["type"] for x in c["conditions"]]:
        bad.append("permanent rule without its default condition: %s" % r["condition"])
    if r["path"] != "/usr/share/sdcscan/npd/check-sdcscan.sh": bad.append("path %s" % r["path"])
# sdcscan's meaning: one rule per condition, each asking its own question
want = {"SilentDataCorruption": ["corruption"], "SDCScanDegraded": ["degraded"], "SDCScanNotTested": ["untested"]}
got = {r["condition"]: r.get("args") for r in c["rules"] if r["type"] == "permanent"}
if got != want: bad.append("conditions and questions %s, expected %s" % (got, want))
if len({r["reason"] for r in c["rules"]}) != len(c["rules"]): bad.append("two rules with one reason")
print("; ".join(bad) or "ok")
PY
)
[ "$npd" = ok ] || fail "npd config: $npd"
# The script's answers (exit 0 False, 1 True, 2 Unknown; stdout at most 80 characters) to each
# question in each state: corruption only for CRITICAL, never for a stale result.
for row in "ok 0 0 0" "critical 1 0 0" "critskew 1 1 0" "stale 0 1 0" "unknown 0 0 1" "broken 2 2 2"; do
	set -- $row
	st=$1
	shift
	for q in corruption degraded untested; do
		out=$(state "$st" && sh "$PK/check-sdcscan.sh" "$q" 2>/dev/null)
		rc=$?
		[ "$rc" = "$1" ] || fail "npd: '$q' in state $st: exit $rc, expected $1 ($out)"
		[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [ ${#out} -le 80 ] || fail "npd: '$q' in state $st: stdout not one short line: $out"
		shift
	done
done
out=$(state critical && sh "$PK/check-sdcscan.sh" corruption 2>/dev/null)
case $out in "SDC: CRITICAL gpu0 gemm"*) ;; *) fail "npd: the CRITICAL line: $out" ;; esac

# Slurm: CRITICAL drains with an "sdcscan:" reason; OK resumes only a node sdcscan drained;
# WARNING and UNKNOWN leave the node in service and say so in its Comment (once, over no
# comment or one of sdcscan's), cleared on OK. The stand-in scontrol logs its arguments and
# shows the node's reason and comment as scontrol show node does (each on its own line).
cat >"$TMP/scontrol" <<'SH'
#!/bin/sh
echo "$*" >>"$SCONTROL_LOG"
if [ "$1" = show ]; then
	echo "NodeName=$3 Arch=x86_64 CoresPerSocket=1"
	echo "   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
	[ -n "$REASON" ] && echo "   Reason=$REASON [root@2026-11-24T00:00:00]"
	[ -n "$COMMENT" ] && echo "   Comment=$COMMENT"
fi
exit 0
SH
printf '#!/bin/sh\necho "logger $*" >>"%s/logger.log"\n' "$TMP" >"$TMP/hclogger"
chmod +x "$TMP/scontrol" "$TMP/hclogger"
hc() { # hc STATE REASON COMMENT: the health check on a node in that state, with that reason and comment
	: >"$TMP/scontrol.log"
	: >"$TMP/logger.log"
	(state "$1" && SCONTROL=$TMP/scontrol SCONTROL_LOG=$TMP/scontrol.log LOGGER=$TMP/hclogger NODE=node7 REASON=$2 \
		COMMENT=$3 sh "$PK/sdcscan-healthcheck.sh" >"$TMP/hc.out" 2>&1) || fail "health check exited non-zero"
	updates=$(grep "^update" "$TMP/scontrol.log")
}
hc ok "sdcscan: cpu1 gemm/int8 checksum-mismatch" ""
[ "$updates" = "update NodeName=node7 State=RESUME" ] || fail "OK did not resume a node sdcscan drained: $updates"
hc ok "admin: bad DIMM" ""
[ -z "$updates" ] || fail "OK changed a node an admin drained: $updates"
hc critical "" ""
case $updates in "update NodeName=node7 State=DRAIN Reason=sdcscan: "*"gpu0 gemm"*) ;;
*) fail "CRITICAL did not drain with an sdcscan: reason: $updates" ;; esac
hc unknown "sdcscan: old" ""
case $updates in "update NodeName=node7 Comment=sdcscan: UNKNOWN: "*) ;; *) fail "UNKNOWN: not said in the node's comment: $updates" ;; esac
grep -q "RESUME\|DRAIN" "$TMP/scontrol.log" && fail "UNKNOWN changed the node's state: $updates"
grep -q "^logger -t sdcscan-healthcheck node7: UNKNOWN: " "$TMP/logger.log" || fail "UNKNOWN: not said to syslog: $(cat "$TMP/logger.log")"
hc stale "" ""
case $updates in "update NodeName=node7 Comment=sdcscan: WARNING: "*stale*) ;; *) fail "stale: not said in the node's comment: $updates" ;; esac
hc stale "" "sdcscan: WARNING: OK since ... stale"
[ -z "$updates" ] || fail "stale, said already: the comment was set again: $updates"
hc stale "" "rack 4, replaced PSU"
[ -z "$updates" ] || fail "stale: an admin's comment was replaced: $updates"
hc ok "" "sdcscan: WARNING: OK since ... stale"
[ "$updates" = "update NodeName=node7 Comment=" ] || fail "OK: sdcscan's comment not cleared: $updates"
hc broken "" ""
case $updates in "update NodeName=node7 Comment=sdcscan: UNKNOWN: sdcscan status exit 127"*) ;;
*) fail "sdcscan missing: not said: $updates" ;; esac

# NHC: check_sdcscan fails the node (die) on CRITICAL only; WARNING and UNKNOWN are logged (NHC's
# log and syslog), the node passes. Run under bash with NHC's die, log and syslog stubbed.
if command -v bash >/dev/null; then
	sed 's|[^ (]*/sdcscan status|"$SDCSCAN" status|' "$PK/sdcscan.nhc" >"$TMP/sdcscan.nhc"
	nhc() { (state "$1" && bash -c '. "$1"; die() { echo "DIE $*"; }; log() { echo "LOG $*"; }; syslog() { echo "SYSLOG $*"; }
		check_sdcscan; echo "rc=$?"' nhc "$TMP/sdcscan.nhc"); }
	out=$(nhc critical)
	case $out in *"DIE 1 check_sdcscan: sdcscan: CRITICAL"*"rc=1"*) ;; *) fail "NHC on CRITICAL: $out" ;; esac
	out=$(nhc ok)
	[ "$out" = "rc=0" ] || fail "NHC on OK: $out"
	out=$(nhc unknown)
	case $out in "LOG check_sdcscan: sdcscan (exit 3, node left in service): UNKNOWN"*"SYSLOG "*"rc=0") ;;
	*) fail "NHC without a result: $out" ;; esac
	out=$(nhc stale)
	case $out in "LOG check_sdcscan: sdcscan (exit 1, node left in service): WARNING"*"rc=0") ;; *) fail "NHC stale: $out" ;; esac
fi

# meson install: the binary, the man page, the units and the examples.
DESTDIR=$TMP/root meson install -C "$BLD" --no-rebuild >"$TMP/install.out" 2>&1 || fail "meson install: $(tail -5 "$TMP/install.out")"
# (the man page where the build has them: -Dman-pages=disabled leaves it out)
man=share/man/man1/sdcscan.1
grep -q "^#define HAVE_MAN_PAGES 1" "$BLD/sdc_config.h" 2>/dev/null || man=
for f in bin/sdcscan $man share/sdcscan/npd/check-sdcscan.sh share/sdcscan/npd/sdcscan-plugin.json \
	share/sdcscan/slurm/sdcscan-healthcheck.sh share/sdcscan/nhc/sdcscan.nhc share/sdcscan/examples/cron.d-sdcscan; do
	[ -n "$(find "$TMP/root" -path "*/$f" -type f)" ] || fail "meson install did not install $f"
done
[ -n "$(find "$TMP/root" -name sdcscan.timer)" ] && [ -n "$(find "$TMP/root" -name sdcscan.service)" ] ||
	fail "meson install did not install the systemd units"
[ -x "$(find "$TMP/root" -name check-sdcscan.sh)" ] || fail "the npd script is not executable"
# Debian: the package owns the metrics folder the unit and cron.d write into
grep -qx "var/lib/sdcscan/metrics" "$SRC/packaging/debian/dirs" 2>/dev/null || fail "debian: no var/lib/sdcscan/metrics in dirs"

# RPM: rpmspec parses the spec with meson's macros; it builds with Open MPI as Fedora's MPI
# guidelines have it (sdcscan-openmpi: a second build, -Dmpi=enabled, under openmpi-devel's
# module), and has what -Dman-pages=enabled needs (man, from man-db); --without mpi drops it.
if command -v rpmspec >/dev/null; then
	spec() { rpmspec --load "$SRC/tests/packaging/macros.meson" "$@" "$SRC/packaging/sdcscan.spec"; }
	spec -P >"$TMP/spec.out" 2>&1 || fail "rpmspec: $(cat "$TMP/spec.out")"
	grep -q "meson setup --buildtype=plain" "$TMP/spec.out" || fail "rpmspec: %meson not expanded"
	grep -q "warning" "$TMP/spec.out" && fail "rpmspec warns: $(grep warning "$TMP/spec.out")"
	for k in "^BuildRequires: *openmpi-devel" "^BuildRequires: *man-db" "meson setup .* -Dmpi=enabled" \
		"meson setup .* -Dman-pages=enabled" "sdcscan_openmpi" "version | grep -q 'mpi=yes'"; do
		grep -q -- "$k" "$TMP/spec.out" || fail "rpmspec: no $k"
	done
	[ "$(grep -c "meson setup" "$TMP/spec.out")" = 2 ] || fail "rpmspec: not a serial and an MPI build"
	[ "$(spec -q --qf '%{NAME}\n' 2>/dev/null | tr '\n' ' ')" = "sdcscan sdcscan-openmpi " ] ||
		fail "rpmspec: packages $(spec -q --qf '%{NAME} ' 2>&1)"
	spec -P --without mpi 2>&1 | grep -q "Dmpi=enabled\|^BuildRequires: *openmpi" && fail "rpmspec --without mpi: still MPI"
else
	fail "rpmspec not found (apt-get install rpm)"
fi
finish
