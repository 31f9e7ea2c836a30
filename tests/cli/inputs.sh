#!/bin/sh
# Inputs that must be refused (exit 3, saying what was wrong): golden entries that name no
# variant or a malformed seed, a golden file too large to be one (refused before it is read),
# a directory or FIFO given as a profile, golden or calibration file (refused without blocking).
. "$(dirname "$0")/lib.sh"

expect_exit 0 record "$SDCSCAN" golden record --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 \
	--set gemm.k=64 --output "$TMP/g.json" --cpus 0 --quiet
# Entries edited, and re-signed as sdcscan signs them (sorted keys, compact), so only the edit is wrong.
python3 - "$TMP" <<'PY'
import hashlib, json, sys
d = json.load(open(sys.argv[1] + "/g.json"))
def signed(edit, name):
    e = json.loads(json.dumps(d))
    e.pop("sha256")
    edit(e["entries"][0]["key"])
    e["sha256"] = hashlib.sha256(json.dumps(e, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    json.dump(e, open(sys.argv[1] + "/" + name, "w"))
signed(lambda k: k.update(variant="nosuch"), "nosuch.json")
signed(lambda k: k.update(seed="12x"), "seed.json")
PY
expect_exit 3 nosuch "$SDCSCAN" golden verify "$TMP/nosuch.json" --cpus 0
expect_grep nosuch err "entries\[0\]: gemm has no variant 'nosuch' with these options"
if grep -q "OK" "$TMP/nosuch.out"; then fail "nosuch: a verify that ran nothing said OK"; fi
expect_exit 3 seed "$SDCSCAN" golden verify "$TMP/seed.json" --cpus 0
# the whole message, so an uninitialised buffer printed after it would show
[ "$(cat "$TMP/seed.err")" = "sdcscan golden: $TMP/seed.json: entries[0]: seed: expected an unsigned integer" ] ||
	fail "seed: $(cat "$TMP/seed.err")"

# Too large to be a golden file: refused at once, not read.
truncate -s 200M "$TMP/huge.json"
start=$(date +%s)
expect_exit 3 huge "$SDCSCAN" golden verify "$TMP/huge.json" --cpus 0
expect_grep huge err "209715200 bytes, more than a golden file may have"
[ $(($(date +%s) - start)) -lt 5 ] || fail "huge: took too long (read before refused?)"

# A directory, a FIFO: named as such, and a FIFO never blocks the open.
mkdir "$TMP/d"
mkfifo "$TMP/fifo"
expect_exit 3 pdir "$SDCSCAN" run --profile "$TMP/d" --cpus 0
expect_grep pdir err "not a regular file (a directory), so not a profile"
expect_exit 3 pfifo timeout 20 "$SDCSCAN" run --profile "$TMP/fifo" --cpus 0
expect_grep pfifo err "not a regular file (a FIFO), so not a profile"
expect_exit 3 gfifo timeout 20 "$SDCSCAN" golden verify "$TMP/fifo" --cpus 0
expect_grep gfifo err "a FIFO), so not a golden file"
expect_exit 3 cdir "$SDCSCAN" run $SMALL --set gemm.dtypes=fp32-fast --set gemm.calibration="$TMP/d" --duration 1 --cpus 0
expect_grep cdir out "not a regular file (a directory), so not a calibration file"
# list shows each built-in profile's description whole (quick's ran past 255 characters and was cut)
tail=$(sed -n 's/^description: "\(.*\)"$/\1/p' "$(dirname "$0")/../../profiles/quick.yaml" | tail -c 40)
expect_exit 0 list "$SDCSCAN" list
expect_grep list out "^  quick .*$tail \[default\]"
finish
