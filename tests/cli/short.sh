#!/bin/sh
# Short runs are not flaky: at --duration 0.5 every variant still finishes one checked iteration
# (embbag builds its tables inside its time, so without that rule it never would), five times in a
# row, and the output says when a run was too short to mean much.
. "$(dirname "$0")/lib.sh"
i=0
while [ $i -lt 5 ]; do
	expect_exit 0 "short$i" "$SDCSCAN" run --duration 0.5 --cpus 0 --gpus none --json "$TMP/short$i.json"
	[ "$(json_get "$TMP/short$i.json" "min(x['iterations'] for x in r['results'])")" -ge 1 ] ||
		fail "short$i: a variant finished no iteration"
	i=$((i + 1))
done
# A result whose one iteration overran says so. Not read off short0: there embbag's first iteration
# overruns by 0.2 s on one machine and by under the 0.05 s that counts on a faster one (CI). Here
# 4M rows take about 1 s to build and sweep against a 0.05 s share: twenty times the margin.
expect_exit 0 overran "$SDCSCAN" run --variant embbag/8bit-d64 --set embbag.rows=4000000 --duration 0.05 \
	--cpus 0 --gpus none --no-state --json "$TMP/overran.json"
expect_grep overran out "embbag/.*(its one iteration ran .* s past its time: too short a run to mean much)"
[ "$(json_get "$TMP/overran.json" "len([x for x in r['results'] if x.get('overrun_seconds', 0) > 0])")" -eq 1 ] ||
	fail "the report does not say which result overran"
# The header says at once that the shares are short, counting the variants that run here (one CPU,
# no GPU: every result of the report), not every variant a probe has.
n=$(json_get "$TMP/short0.json" "len(r['results'])")
expect_grep short0 out "^  a short run: $n variants have [0-9.]* s or less each"
# ... and nothing where one variant has the whole time.
expect_exit 0 one_variant "$SDCSCAN" run --variant gemm/int8 --duration 2 --cpus 0 --gpus none --no-state
grep -q "a short run" "$TMP/one_variant.out" && fail "one_variant: a short-run line for one variant of 2 s"
finish
