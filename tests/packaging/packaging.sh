#!/bin/sh
# packaging/: the systemd units pass systemd-analyze verify, the cron file keeps cron's rules, the
# node-problem-detector plugin and the Slurm health check do what their hosts expect of them
# (checked against a stand-in scontrol that records its calls, as scontrol(1) documents them),
# meson install lays everything out, and rpmspec parses the spec.
# usage: packaging.sh SDCSCAN SOURCE_ROOT BUILD_ROOT
. "$(dirname "$0")/../cli/lib.sh"
SRC=${2:?source root}
BLD=${3:?build root}
PK=$BLD/packaging

# systemd: the units as installed, ExecStart pointed at this build's binary.
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TMP/units"
	sed "s|^ExecStart=[^ ]*/sdcscan|ExecStart=$(cd "$(dirname "$SDCSCAN")" && pwd)/sdcscan|" "$PK/sdcscan.service" >"$TMP/units/sdcscan.service"
	cp "$SRC/packaging/systemd/sdcscan.timer" "$TMP/units/"
	systemd-analyze verify --man=no "$TMP/units/sdcscan.service" "$TMP/units/sdcscan.timer" >"$TMP/verify.out" 2>&1 ||
		fail "systemd-analyze verify: $(cat "$TMP/verify.out")"
else
	fail "systemd-analyze not found (apt-get install systemd)"
fi
for k in "Type=oneshot" "SuccessExitStatus=1 2"; do
	grep -qx "$k" "$PK/sdcscan.service" || fail "service: no $k"
done
for k in "OnCalendar=" "RandomizedDelaySec=" "AccuracySec=1us" "Persistent=true"; do
	grep -q "^$k" "$SRC/packaging/systemd/sdcscan.timer" || fail "timer: no $k"
done

# cron.d: a name without dots, a user field, the test -x guard, flock -n against overlap.
case $(basename "$SRC/packaging/cron/sdcscan.in" .in) in *.*) fail "cron.d file name has a dot" ;; esac
line=$(grep -v '^#' "$PK/cron.d-sdcscan" | grep -v '^[A-Z]*=' | grep -v '^$')
set -f
set -- $line
set +f
[ "$6" = root ] || fail "cron: the sixth field is not the user: $line"
echo "$line" | grep -q "test -x .*/sdcscan && flock -n " || fail "cron: no test -x guard or flock -n: $line"

# node-problem-detector: its config parses, names the installed script, limits output to 80;
# the script prints one line and exits 0 OK / 1 problem / 2 unknown.
npd=$(python3 - "$SRC/packaging/npd/sdcscan-plugin.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
bad = []
if c["plugin"] != "custom": bad.append("plugin")
if c["pluginConfig"]["max_output_length"] > 80: bad.append("max_output_length")
if [r["path"] for r in c["rules"]] != ["/usr/share/sdcscan/npd/check-sdcscan.sh"]: bad.append("path")
if any(r["condition"] not in [x["type"] for x in c["conditions"]] for r in c["rules"]): bad.append("condition")
print("; ".join(bad) or "ok")
PY
)
[ "$npd" = ok ] || fail "npd config: $npd"
sed "s|exec [^ ]*/sdcscan|exec $SDCSCAN|" "$PK/check-sdcscan.sh" >"$TMP/check.sh"
export SDCSCAN_STATE_DIR="$TMP/state"
expect_exit 2 npd_none sh "$TMP/check.sh"
expect_exit 0 scan_ok "$SDCSCAN" run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 \
	--duration 1 --cpus 0
expect_exit 0 npd_ok sh "$TMP/check.sh"
expect_grep npd_ok out "^SDC: OK"

# Slurm: CRITICAL drains with an "sdcscan:" reason; OK resumes only a node sdcscan drained;
# UNKNOWN leaves it. The stand-in scontrol logs its arguments and shows the reason given.
cat >"$TMP/scontrol" <<'SH'
#!/bin/sh
echo "$*" >>"$SCONTROL_LOG"
[ "$1" = show ] && echo "   State=IDLE+DRAIN Reason=$REASON [root@2026-11-24T00:00:00]" | sed 's/ \[.*//'
exit 0
SH
chmod +x "$TMP/scontrol"
hc() { # hc REASON: runs the health check with the node's current drain reason
	: >"$TMP/scontrol.log"
	SDCSCAN=$SDCSCAN SCONTROL=$TMP/scontrol SCONTROL_LOG=$TMP/scontrol.log NODE=node7 REASON=$1 sh "$PK/sdcscan-healthcheck.sh" \
		>"$TMP/hc.out" 2>&1 || fail "health check exited non-zero"
}
hc "sdcscan: cpu1 gemm/int8 checksum-mismatch"
grep -qx "update NodeName=node7 State=RESUME" "$TMP/scontrol.log" || fail "OK did not resume a node sdcscan drained: $(cat "$TMP/scontrol.log")"
hc "admin: bad DIMM"
grep -q "update" "$TMP/scontrol.log" && fail "OK resumed a node an admin drained: $(cat "$TMP/scontrol.log")"
expect_exit 2 scan_bad "$SDCSCAN" run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 \
	--duration 1 --cpus 0 --set gemm.iterations=3 --inject "gemm/int8:C:device=0,iter=1,row=3,col=4,bit=12"
hc ""
grep -q '^update NodeName=node7 State=DRAIN Reason=sdcscan: cpu0 gemm/int8 checksum-mismatch C\[3\]\[4\]' "$TMP/scontrol.log" ||
	fail "CRITICAL did not drain with an sdcscan: reason: $(cat "$TMP/scontrol.log")"
SDCSCAN_STATE_DIR=$TMP/none hc "sdcscan: old"
grep -q "update" "$TMP/scontrol.log" && fail "UNKNOWN changed the node: $(cat "$TMP/scontrol.log")"

# NHC: check_sdcscan fails the node (die) on CRITICAL only; run under bash with NHC's die stubbed.
if command -v bash >/dev/null; then
	sed "s|[^ (]*/sdcscan status|$SDCSCAN status|" "$PK/sdcscan.nhc" >"$TMP/sdcscan.nhc"
	nhc() { bash -c '. "$1"; die() { echo "DIE $*"; }; check_sdcscan; echo "rc=$?"' nhc "$TMP/sdcscan.nhc"; }
	out=$(nhc)
	case $out in *"DIE 1 check_sdcscan: sdcscan: CRITICAL"*"rc=1"*) ;; *) fail "NHC on CRITICAL: $out" ;; esac
	out=$(SDCSCAN_STATE_DIR=$TMP/none nhc)
	[ "$out" = "rc=0" ] || fail "NHC without a result: $out"
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

# RPM: rpmspec parses the spec with meson's macros.
if command -v rpmspec >/dev/null; then
	rpmspec --load "$SRC/tests/packaging/macros.meson" -P "$SRC/packaging/sdcscan.spec" >"$TMP/spec.out" 2>&1 ||
		fail "rpmspec: $(cat "$TMP/spec.out")"
	grep -q "meson setup --buildtype=plain" "$TMP/spec.out" || fail "rpmspec: %meson not expanded"
	grep -q "warning" "$TMP/spec.out" && fail "rpmspec warns: $(grep warning "$TMP/spec.out")"
else
	fail "rpmspec not found (apt-get install rpm)"
fi
finish
