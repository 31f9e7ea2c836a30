#!/bin/sh
# Safe outputs, as root (the way the timer and cron run sdcscan): no report, metrics, JUnit or
# state file is written through a symbolic link at its own name (refused before the burn, exit 3,
# the link's target untouched); a link among the folders above is followed only where the link
# and the folder holding it are root's and that folder is not group- or world-writable; "--prom -"
# is refused rather than creating a file named "-"; a folder another user owns (node_exporter's
# textfile folder is the prometheus user's) is still written, through a new file renamed over the
# name. status and fleet print hostnames, summaries, details and paths from reports with their
# control characters escaped (\n, \x1b): the bytes of their output are checked.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "not root: links and folders of another user cannot be made; skipped"
	exit 77
fi
NOBODY=$(id -u nobody) || { echo "no user nobody; skipped"; exit 77; }
RUN="run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --set gemm.iterations=2"
# (a run that got past the checks prints its header line; --duration 30 shows any burn in the time)
LONG="run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --duration 30"
printf 'root:x:0:0:victim\n' >"$TMP/victim"

# refused NAME: exit 3 at once, nothing burned (no header), the victim as it was
refused() {
	r_name=$1
	shift
	expect_exit 3 "$r_name" timeout 60 "$SDCSCAN" $LONG "$@"
	[ "$(cat "$TMP/victim")" = "root:x:0:0:victim" ] || fail "$r_name: the link's target was written"
	if grep -q "^sdcscan .*: profile" "$TMP/$r_name.out" "$TMP/$r_name.err"; then
		fail "$r_name: the run started (its header was printed) before the output was refused"
	fi
}

# A link at the file's own name, whoever owns it: refused for --json, --prom, --junit.
ln -s "$TMP/victim" "$TMP/out.link"
for opt in json prom junit; do
	refused "final_$opt" --no-state "--$opt" "$TMP/out.link"
	expect_grep "final_$opt" err "refusing $TMP/out.link: a symbolic link (to $TMP/victim, owner root)"
done
# ... and for the state directory's files: the report, the node's state, the last success, the start
for f in last.json state.json last-success started; do
	name=state_$(echo "$f" | tr -c 'a-z\n' _)
	rm -rf "$TMP/st"
	mkdir "$TMP/st"
	ln -s "$TMP/victim" "$TMP/st/$f"
	refused "$name" --state-dir "$TMP/st"
	expect_grep "$name" err "refusing $TMP/st/$f: a symbolic link"
done

# A link among the folders: another user's link, or a link in another user's folder, or in a
# folder its group can write: refused, naming the link, its owner, and the folder's owner and mode.
mkdir "$TMP/real"
mkdir "$TMP/theirs"
chown nobody "$TMP/theirs"
ln -s "$TMP/real" "$TMP/theirs/d"
refused in_their_folder --no-state --json "$TMP/theirs/d/r.json"
expect_grep in_their_folder err "refusing the symbolic link $TMP/theirs/d (owner root) in $TMP/theirs (owner uid $NOBODY"
expect_grep in_their_folder err "mode 0755)"
ln -s "$TMP/real" "$TMP/their_link"
chown -h nobody "$TMP/their_link"
refused their_link --no-state --prom "$TMP/their_link/sdcscan.prom"
expect_grep their_link err "refusing the symbolic link $TMP/their_link (owner uid $NOBODY"
mkdir "$TMP/shared"
chmod 0775 "$TMP/shared"
ln -s "$TMP/real" "$TMP/shared/d"
refused group_writable --no-state --junit "$TMP/shared/d/j.xml"
expect_grep group_writable err "in $TMP/shared (owner root, mode 0775)"
# a link to the state directory from another user's folder
ln -s "$TMP/real" "$TMP/theirs/state"
refused state_dir_link --state-dir "$TMP/theirs/state"
expect_grep state_dir_link err "refusing the symbolic link $TMP/theirs/state"
[ -z "$(ls "$TMP/real")" ] || fail "refused runs left files in the links' target: $(ls "$TMP/real")"

# Root's links in root's folders (0755) are followed: absolute, relative, and to the state directory.
ln -s "$TMP/real" "$TMP/mine"
mkdir "$TMP/sub"
ln -s ../real "$TMP/sub/rel"
mkdir "$TMP/real/st"
ln -s "$TMP/real/st" "$TMP/st_link"
expect_exit 0 trusted "$SDCSCAN" $RUN --state-dir "$TMP/st_link" --json "$TMP/mine/r.json" --prom "$TMP/sub/rel/m.prom" \
	--junit "$TMP/mine/j.xml"
for f in r.json m.prom j.xml st/last.json st/state.json; do
	[ -f "$TMP/real/$f" ] && [ ! -L "$TMP/real/$f" ] || fail "trusted: $TMP/real/$f not written through root's link"
done
[ "$(json_get "$TMP/real/r.json" "r['verdict']['status']")" = OK ] || fail "trusted: no report through the link"

# Another user's folder without links (the textfile folder): written, a file of root's, 0644.
expect_exit 0 their_folder "$SDCSCAN" $RUN --no-state --prom "$TMP/theirs/sdcscan.prom"
[ -f "$TMP/theirs/sdcscan.prom" ] && [ "$(stat -c '%U %a' "$TMP/theirs/sdcscan.prom")" = "root 644" ] ||
	fail "their_folder: metrics not written into another user's folder"
[ -z "$(ls "$TMP/theirs" | grep '\.tmp\.')" ] || fail "their_folder: a temporary file was left: $(ls "$TMP/theirs")"

# "--prom -" and "--junit -": refused (the metrics and JUnit go to files), no file named "-".
mkdir "$TMP/cwd"
abs=$(cd "$(dirname "$SDCSCAN")" && pwd)/$(basename "$SDCSCAN")
for opt in prom junit; do
	(cd "$TMP/cwd" && timeout 60 "$abs" $LONG --no-state "--$opt" - >"$TMP/dash_$opt.out" 2>"$TMP/dash_$opt.err")
	rc=$?
	[ $rc = 3 ] || fail "--$opt -: exit $rc, expected 3"
	[ ! -e "$TMP/cwd/-" ] || fail "--$opt -: a file named - was created"
	expect_grep "dash_$opt" err "^sdcscan run: --$opt: - (standard output) is not taken here"
done

# status and fleet: control characters of reports escaped, byte for byte.
expect_exit 0 base "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --set gemm.iterations=2 \
	--no-state --json "$TMP/ok.json"
expect_exit 2 base_crit "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --set gemm.iterations=2 \
	--no-state --inject gemm/int8:C --json "$TMP/crit.json"
mkdir "$TMP/fl"
python3 - "$TMP" <<'PY'
import datetime, json, sys
t = sys.argv[1]
EVIL_HOST, EVIL_SUM = "evil\nhost\x1b[2J", "fine\n\x1b[2Jstill \x9b fine"
ok = json.load(open(t + "/ok.json"))
ok["host"]["hostname"] = EVIL_HOST
ok["verdict"]["summary"] = "OK: " + EVIL_SUM
json.dump(ok, open(t + "/evil_ok.json", "w"))
ahead = (datetime.datetime.utcnow() + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
ok["run"]["start"] = ahead
json.dump(ok, open(t + "/evil_future.json", "w"))
crit = json.load(open(t + "/crit.json"))
crit["host"]["hostname"] = EVIL_HOST
crit["verdict"]["summary"] = "CRITICAL: " + EVIL_SUM
crit["findings"][0]["detail"] = "row off\r\x1b[1Aby one"
json.dump(crit, open(t + "/fl/crit.json", "w"))
json.dump(crit, open(t + "/evil_crit.json", "w"))
open(t + "/fl/broken\x1b[2J.json", "w").write("{")
PY
# escaped FILE LINES LITERAL...: FILE has LINES lines, no control byte but their newlines, and
# each LITERAL (backslashes as printed)
escaped() {
	python3 - "$@" <<'PY' || fail "$(basename "$1"): not escaped (see above)"
import sys
b = open(sys.argv[1], "rb").read()
bad = []
if b.count(b"\n") != int(sys.argv[2]): bad.append("%d lines, expected %s" % (b.count(b"\n"), sys.argv[2]))
ctl = sorted(set(c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f))
if ctl: bad.append("control bytes %s" % ["0x%02x" % c for c in ctl])
bad += ["'%s' not in it" % s for s in sys.argv[3:] if s.encode() not in b]
if bad:
    print("%s: %s\n%r" % (sys.argv[1], "; ".join(bad), b), file=sys.stderr)
    sys.exit(1)
PY
}
SUM='fine\n\x1b[2Jstill \xc2\x9b fine'
expect_exit 0 status_ok "$SDCSCAN" status "$TMP/evil_ok.json"
escaped "$TMP/status_ok.out" 1 "OK: $SUM"
expect_exit 1 status_future "$SDCSCAN" status "$TMP/evil_future.json"
escaped "$TMP/status_future.out" 1 'clock skew: the last run on evil\nhost\x1b[2J is dated'
expect_exit 2 status_crit "$SDCSCAN" status "$TMP/evil_crit.json"
escaped "$TMP/status_crit.out" 1 'row off\r\x1b[1Aby one'
expect_exit 1 status_npd "$SDCSCAN" status --exit-codes npd "$TMP/evil_crit.json"
escaped "$TMP/status_npd.out" 1
[ "$(head -1 "$TMP/status_npd.out" | wc -c)" -le 81 ] || fail "status npd: a line over 80 characters"
escaped "$TMP/status_npd.err" 1 "CRITICAL: $SUM" 'row off\r\x1b[1Aby one'
expect_exit 2 fleet "$SDCSCAN" fleet "$TMP/fl"
escaped "$TMP/fleet.out" 4 "CRITICAL: evil\\nhost\\x1b[2J: CRITICAL: $SUM" 'broken\x1b[2J.json: not JSON'
finish
