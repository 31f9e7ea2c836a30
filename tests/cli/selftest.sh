#!/bin/sh
# selftest finds and locates every fault it injects, on every CPU, for several seeds.
. "$(dirname "$0")/lib.sh"
for seed in 1 2 3; do
	expect_exit 0 "selftest$seed" "$SDCSCAN" selftest --seed "$seed"
	expect_grep "selftest$seed" out "found and located"
	expect_grep "selftest$seed" out "^OK: selftest passed"
	if grep -q "MISSED\|FALSE ALARM" "$TMP/selftest$seed.out"; then fail "selftest seed $seed: missed or false alarm"; fi
done
finish
