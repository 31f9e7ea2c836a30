#!/bin/sh
# ecparity: clean runs keep every parity exact (no finding in over a million group
# verifications) and match a replay of their training at the end; each fault kind is found and
# located at its server, entry, word and bit (a gradient computed wrong by the replay); a
# lost server is rebuilt bit for bit (checked against a replay of its training); one CPU runs two
# servers; bad options are refused with exit 3; the benchmark prints its targets.
. "$(dirname "$0")/lib.sh"
EC="run --probe ecparity --no-state"

# 10 rounds of 65536 entries on 2 servers (k = 1): 2 x 65536 stripes and 2 columns a round.
expect_exit 0 clean "$SDCSCAN" $EC --set ecparity.iterations=10 --set ecparity.steps=20 --duration 60 --cpus 0-1 \
	--json "$TMP/clean.json"
[ "$(json_get "$TMP/clean.json" "sum(x['iterations'] for x in r['results'])")" = 20 ] || fail "clean: not 10 rounds on each server"
[ "$(json_get "$TMP/clean.json" "len(r['findings'])")" = 0 ] || fail "clean: findings"

SMALL="--set ecparity.rows=4096 --set ecparity.batch=64 --set ecparity.steps=4 --set ecparity.iterations=6 --duration 60"
expect_exit 2 faults "$SDCSCAN" $EC $SMALL --cpus 0-1 --json "$TMP/f.json" \
	--inject "ecparity:E:iter=1,device=0,row=100,col=5,bit=17" --inject "ecparity:O:iter=2,device=1,row=7,bit=30" \
	--inject "ecparity:U:iter=3,device=0,col=2,bit=20" --inject "ecparity:M:iter=4,device=1,col=3,bit=9"
[ "$(located "$TMP/f.json" same-step)" = ok ] || fail "faults: $(located "$TMP/f.json")"
expect_grep faults out "memory-corrupt at E\[100\]\[5\]"
expect_grep faults out "memory-corrupt at O\[7\]\[0\]"
expect_grep faults out "update-corrupt at U\["
expect_grep faults out "difference-corrupt at M\[.*failed its CRC32C"
[ "$(json_get "$TMP/f.json" "sorted(set(f['kind'] for f in r['findings']))")" = \
	"['difference-corrupt', 'memory-corrupt', 'update-corrupt']" ] || fail "faults: other findings than the four"
[ "$(json_get "$TMP/f.json" "len(r['findings'])")" = 4 ] || fail "faults: not exactly one finding a fault"

# A gradient computed wrong (G: training's own arithmetic, before its difference is taken): the
# parities follow it and no round's verification sees it; the end's replay of every server's
# training finds it at its server and entry. A clean run's replay check covers both servers.
expect_exit 2 gradient "$SDCSCAN" $EC $SMALL --cpus 0-1 --json "$TMP/g.json" --inject "ecparity:G:iter=2,device=1,col=3,bit=20"
[ "$(json_get "$TMP/g.json" "[(f['kind'], f['device'], f['row']) for f in r['findings']] == [('training-mismatch', 'cpu1', r['injections'][0]['row'])]")" = True ] ||
	fail "gradient: $(json_get "$TMP/g.json" "[(f['kind'], f['device'], f['row'], r['injections']) for f in r['findings']]")"
expect_grep gradient out "training-mismatch at E\\[.*its parities agreeing"
[ "$(json_get "$TMP/clean.json" "[r['run']['environment']['ecparity']['replay_check'][k] for k in ('servers', 'unfinished', 'rounds')]")" = "[2, 0, 10]" ] ||
	fail "clean: $(json_get "$TMP/clean.json" "r['run']['environment']['ecparity']")"

# A time already past when the first round is decided (1 us): the round is trained and checked all
# the same, as every variant's first iteration is (the time reserve for the end's replay once
# stopped it before round 0: "no iteration finished before the deadline")
expect_exit 0 instant "$SDCSCAN" $EC --cpus 0-1 --duration 0.000001 --json "$TMP/instant.json"
[ "$(json_get "$TMP/instant.json" "[x['iterations'] >= 1 for x in r['results']]")" = "[True, True]" ] ||
	fail "instant: $(tail -2 "$TMP/instant.out")"

# A lost server, rebuilt while the run goes on: OK, with the rebuild's figures, verified by replay.
expect_exit 0 lost "$SDCSCAN" $EC --set ecparity.iterations=4 --cpus 0-1 --duration 60 --json "$TMP/l.json" \
	--inject "ecparity:L:iter=1,device=1"
[ "$(json_get "$TMP/l.json" "r['run']['environment']['ecparity']['rebuild']['verified_by_replay']")" = True ] ||
	fail "lost: the rebuild was not verified by the replay"
[ "$(json_get "$TMP/l.json" "r['run']['environment']['ecparity']['rebuild']['gb_per_s'] > 0")" = True ] || fail "lost: no rate"

# The rebuild runs while the others train the next round (4 servers on 2 CPUs, k = 2): a helper
# slow enough that training moves rows under it (R: a survivor busy); those rows are set aside and
# done again at the round's end, and the shard is still the replay's bits; the server then trains
# the round it missed.
expect_exit 0 concurrent "$SDCSCAN" $EC --set ecparity.servers=4 --set ecparity.iterations=4 --cpus 0-1 --duration 60 \
	--json "$TMP/c.json" --inject "ecparity:L:iter=1,device=1" --inject "ecparity:R:iter=1,device=1"
[ "$(json_get "$TMP/c.json" "sorted((i['target'], i['iteration'], i['device']) for i in r['injections'])")" = \
	"[('L', 1, 'cpu1'), ('R', 1, 'cpu1')]" ] || fail "concurrent rebuild: injections $(json_get "$TMP/c.json" "r['injections']")"
[ "$(json_get "$TMP/c.json" "[r['run']['environment']['ecparity']['rebuild'][k] for k in ('server', 'round', 'installed_round', 'verified_by_replay', 'while_training', 'caught_up')]")" = \
	"[1, 1, 2, True, True, True]" ] || fail "concurrent rebuild: $(json_get "$TMP/c.json" "r['run']['environment']['ecparity']")"
[ "$(json_get "$TMP/c.json" "r['run']['environment']['ecparity']['rebuild']['rows_redone'] > 0")" = True ] ||
	fail "concurrent rebuild: no row moved under the helper (the redo path was not exercised)"
# A loss in the last round: the rebuild is finished after the rounds, and a wrong one still found.
expect_exit 2 last_round "$SDCSCAN" $EC --set ecparity.iterations=2 --cpus 0-1 --duration 60 --json "$TMP/lr.json" \
	--inject "ecparity:L:iter=1,device=1,row=11,col=4,bit=7"
[ "$(located "$TMP/lr.json" same-step)" = ok ] || fail "last round: $(located "$TMP/lr.json")"
[ "$(json_get "$TMP/lr.json" "r['run']['environment']['ecparity']['rebuild']['caught_up']")" = False ] ||
	fail "last round: a catch-up that cannot have happened"
expect_exit 3 bad_servers "$SDCSCAN" $EC --set ecparity.servers=1 --cpus 0-1 --duration 1
expect_grep bad_servers out "at least 2 servers"

# A rebuild that goes wrong (the survivor corrupts the copy) is caught by the replay, at its word.
expect_exit 2 bad_rebuild "$SDCSCAN" $EC $SMALL --cpus 0-1 --json "$TMP/r.json" \
	--inject "ecparity:L:iter=1,device=1,row=11,col=4,bit=7"
[ "$(located "$TMP/r.json" same-step)" = ok ] || fail "bad rebuild: $(located "$TMP/r.json")"
expect_grep bad_rebuild out "rebuild-mismatch at L\[11\]\[4\]"
# (named as the rebuild's, not again as training's at the end: training went on from that copy)
[ "$(json_get "$TMP/r.json" "sorted(set(f['kind'] for f in r['findings']))")" = "['rebuild-mismatch']" ] ||
	fail "bad rebuild: $(json_get "$TMP/r.json" "[f['kind'] for f in r['findings']]")"
[ "$(json_get "$TMP/r.json" "r['run']['environment']['ecparity']['rebuild']['verified_by_replay']")" = False ] ||
	fail "bad rebuild: the report says the rebuild was verified"

# One CPU: two servers on its one thread; faults and the rebuild work the same.
expect_exit 2 one_cpu "$SDCSCAN" $EC $SMALL --cpus 0 --json "$TMP/o.json" --inject "ecparity:L:iter=1" \
	--inject "ecparity:E:iter=2,row=9,col=1,bit=12"
[ "$(json_get "$TMP/o.json" "[(f['target'], f['row'], f['col'], f['iteration'], f['xor_mask']) for f in r['findings']]")" = \
	"[('E', 9, 1, 2, '0x00001000')]" ] || fail "one cpu: $(json_get "$TMP/o.json" "r['findings']")"
[ "$(json_get "$TMP/o.json" "r['run']['environment']['ecparity']['rebuild']['verified_by_replay']")" = True ] ||
	fail "one cpu: rebuild not verified"

expect_exit 3 bad_k "$SDCSCAN" $EC --set ecparity.k=3 --cpus 0-1 --duration 1
expect_grep bad_k out "k must be at least 1, less than the servers and divide them"
expect_exit 3 bad_dim "$SDCSCAN" $EC --set ecparity.dim=0 --duration 1
expect_exit 3 bad_entry "$SDCSCAN" $EC $SMALL --cpus 0-1 --inject "ecparity:E:iter=1,device=0,row=99999"
expect_grep bad_entry out "outside the shard"

"$SDCSCAN" bench ecparity --seconds 0.3 --rows 16384 --json "$TMP/b.json" >"$TMP/bench.out" 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 2 ] || fail "bench ecparity: exit $rc"
expect_grep bench out "^target: parity maintenance within 10% of the probe's training time on its core (ECRM: 4% of a DLRM step): \(met\|MISSED\)$"
expect_grep bench out "^  bare Adagrad  *[0-9.]* Mupd/s   (gradients drawn beforehand): +parity [-+][0-9.]*%"
[ "$(json_get "$TMP/b.json" "all(r[k] > 0 for k in ('training_mupd_s', 'parity_mupd_s', 'bare_mupd_s'))")" = True ] ||
	fail "bench ecparity: the report's rates"
expect_grep bench out "^target: rebuild at least 50% of memcpy bandwidth, bit for bit: \(met\|MISSED\)$"
expect_grep bench out "parities consistent after: yes"
expect_grep bench out "bit for bit: yes"
finish
