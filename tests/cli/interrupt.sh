#!/bin/sh
# SIGINT ends the run UNKNOWN within a moment, and the report keeps the partial results.
. "$(dirname "$0")/lib.sh"

"$SDCSCAN" run $SMALL --duration 60 --json "$TMP/int.json" >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
sleep 2
start=$(date +%s)
kill -INT $pid
wait $pid
code=$?
took=$(( $(date +%s) - start ))
[ "$code" = 3 ] || fail "interrupted run exit $code, expected 3"
[ "$took" -le 5 ] || fail "interrupted run took ${took}s to end"
[ "$(json_get "$TMP/int.json" "r['run']['interrupted']")" = True ] || fail "report does not say interrupted"
[ "$(json_get "$TMP/int.json" "r['verdict']['status']")" = UNKNOWN ] || fail "verdict is not UNKNOWN"
# int8 ran (partially) and kept its work; fp32 never started.
[ "$(json_get "$TMP/int.json" "all(x['iterations']>0 and x['interrupted'] for x in r['results'] if x['variant']=='int8')")" = True ] \
	|| fail "partial int8 results lost"
[ "$(json_get "$TMP/int.json" "sorted(set(x['status'] for x in r['results'] if x['variant']=='fp32'))")" = "['not-run']" ] \
	|| fail "fp32 should be not-run"
expect_grep int out "^UNKNOWN: "

# SIGHUP (the terminal went away) ends it the same way: a report and a verdict, not a silent death.
"$SDCSCAN" run $SMALL --duration 60 --json "$TMP/hup.json" >"$TMP/hup.out" 2>"$TMP/hup.err" &
pid=$!
sleep 2
kill -HUP $pid
wait $pid
code=$?
[ "$code" = 3 ] || fail "SIGHUP: exit $code, expected 3"
[ "$(json_get "$TMP/hup.json" "r['run']['interrupted'], r['verdict']['status']")" = "True UNKNOWN" ] ||
	fail "SIGHUP: the report does not say interrupted/UNKNOWN"
expect_grep hup out "^UNKNOWN: "

# The signals whose default is a quiet death (a log rotator's SIGUSR1 at the wrong pid, an alarm left
# behind, a file-size limit): an interruption with its report and verdict, never the end of the
# process without one; and a Ctrl-C at the terminal reaches the workers' processes too (one process
# group): they leave the stopping to the run, which still writes its report.
for sig in USR1 USR2 ALRM XCPU; do
	"$SDCSCAN" run $SMALL --duration 60 --json "$TMP/$sig.json" >"$TMP/$sig.out" 2>"$TMP/$sig.err" &
	pid=$!
	sleep 2
	kill -$sig $pid
	wait $pid
	code=$?
	[ "$code" = 3 ] || fail "SIG$sig: exit $code, expected 3"
	[ "$(json_get "$TMP/$sig.json" "r['run']['interrupted'], r['verdict']['status']")" = "True UNKNOWN" ] ||
		fail "SIG$sig: the report does not say interrupted/UNKNOWN"
done
# (a session of its own, as a terminal's job: the group is sdcscan and its workers)
python3 - "$SDCSCAN" "$TMP/grp.json" $SMALL <<'PY' >"$TMP/grp.out" 2>"$TMP/grp.err"
import os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "run"] + sys.argv[3:] + ["--duration", "60", "--json", sys.argv[2]],
                     start_new_session=True)
time.sleep(2)
os.killpg(p.pid, signal.SIGINT)
p.wait(timeout=30)
PY
[ "$(json_get "$TMP/grp.json" "r['run']['interrupted'], r['verdict']['status']")" = "True UNKNOWN" ] ||
	fail "SIGINT to the process group: the report does not say interrupted/UNKNOWN"
[ "$(json_get "$TMP/grp.json" "[x['status'] for x in r['results'] if x['variant'] == 'int8']")" = "['ok', 'ok']" ] ||
	[ "$(json_get "$TMP/grp.json" "all(x['iterations'] > 0 for x in r['results'] if x['variant'] == 'int8')")" = True ] ||
	fail "SIGINT to the process group: the workers' results were lost: $(json_get "$TMP/grp.json" "[(x['device'], x['status'], x['error']) for x in r['results']]")"

# A reader that goes away (`sdcscan run | head -1`): not a death by SIGPIPE (exit 141, no report,
# no state) but the same end, UNKNOWN, with the report and the state written.
code=$( ( "$SDCSCAN" run $SMALL --duration 60 --json "$TMP/pipe.json" --state-dir "$TMP/pst" 2>"$TMP/pipe.err"; echo $? >"$TMP/pipe.code" ) | head -1 >/dev/null; cat "$TMP/pipe.code")
[ "$code" = 3 ] || fail "SIGPIPE: exit $code, expected 3: $(cat "$TMP/pipe.err")"
[ "$(json_get "$TMP/pipe.json" "r['run']['interrupted'], r['verdict']['status']")" = "True UNKNOWN" ] ||
	fail "SIGPIPE: the report does not say interrupted/UNKNOWN"
[ "$(json_get "$TMP/pst/last.json" "r['run']['kind']")" = interrupted ] || fail "SIGPIPE: no state saved"
finish
