#!/bin/sh
# Inputs that must be refused (exit 3, saying what was wrong): golden entries that name no
# variant or a malformed seed, a golden file too large to be one (refused before it is read),
# a directory or FIFO given as a profile, golden or calibration file (refused without blocking);
# numbers in another base than ten; a report where no file can be made, a file as the state
# directory; control characters in what is echoed back. And the start record's boot id.
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
# Numbers are decimal, as everywhere: gemm.m=010 is ten (it was octal 8), and 0x40 (taken as 64), a
# hexadecimal --duration (0x10 burned 16 s) or --seed are refused before anything runs, naming the
# option, the value and why.
expect_exit 0 m010 "$SDCSCAN" run $SMALL --set gemm.m=010 --set gemm.dtypes=int8 --duration 0.2 --cpus 0 -q \
	--json "$TMP/m010.json"
[ "$(json_get "$TMP/m010.json" 'r["run"]["probes"][0]["options"]["m"]')" = 10 ] || fail "m010: gemm.m=010 is not ten"
expect_exit 3 m0x40 "$SDCSCAN" run $SMALL --set gemm.m=0x40 --set gemm.dtypes=int8 --duration 0.2 --cpus 0
expect_grep m0x40 err "--set gemm.m: '0x40' is not valid (expected an integer from 1 to [0-9]*, in decimal)"
expect_exit 3 dur0x10 timeout 10 "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --duration 0x10 --cpus 0
expect_grep dur0x10 err "--duration '0x10': expected .*, in decimal"
expect_exit 3 seed0x10 "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --duration 0.2 --seed 0x10 --cpus 0
expect_grep seed0x10 err "--seed '0x10': expected a non-negative integer, in decimal"
for name in m0x40 dur0x10 seed0x10; do
	if grep -q "OK\|CRITICAL" "$TMP/$name.out"; then fail "$name: ran before the value was refused"; fi
done

# A report path where no file can be made (procfs: root passes access(2) there) is refused before the
# burn, not after it; a state directory that is a file is "not a directory", not "File exists".
start=$(date +%s)
expect_exit 3 jproc "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --duration 5 --cpus 0 --json /proc/version
expect_grep jproc err "^sdcscan run: --json: .*/proc/version"
[ $(($(date +%s) - start)) -lt 4 ] || fail "jproc: refused only after the burn"
if grep -q "OK\|CRITICAL" "$TMP/jproc.out"; then fail "jproc: burned before refusing --json"; fi
: >"$TMP/plainfile"
expect_exit 3 statefile "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --duration 0.2 --cpus 0 --state-dir "$TMP/plainfile"
expect_grep statefile err "state directory $TMP/plainfile: not a directory"
if grep -q "File exists" "$TMP/statefile.err"; then fail "statefile: 'File exists' for a file given as a folder"; fi

# A run's start record names this boot, as the kernel does (procfs says its file is empty; the
# reader took that for a file that changed while read, and the line was always empty).
"$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --duration 3 --cpus 0 -q --state-dir "$TMP/bootst" >/dev/null 2>&1 &
run_pid=$!
for _ in $(seq 50); do
	[ -s "$TMP/bootst/started" ] && break
	sleep 0.1
done
boot=$(sed -n 's/^boot //p' "$TMP/bootst/started" 2>/dev/null)
wait $run_pid
[ -n "$boot" ] && [ "$boot" = "$(cat /proc/sys/kernel/random/boot_id)" ] ||
	fail "started: boot '$boot', the kernel's is '$(cat /proc/sys/kernel/random/boot_id)'"

# What was typed is echoed escaped (\x1b), never as a raw ESC a terminal would act on: in every error of
# --set, --probe, --variant, --inject, an unknown option or command.
esc=$(printf '\033')
n=0
for args in "--set gemm.dtypes=int8${esc}[31m" "--set gemm.m=4${esc}" "--set gemm.n${esc}=4" "--set g${esc}.m=4" \
	"--set x${esc}" "--probe g${esc}" "--variant gemm/i${esc}" "--variant g${esc}" "--inject g${esc}" \
	"--inject gemm/int8:C:device=${esc}" "--duration 1${esc}" "--cpus 0${esc}" "--no${esc}"; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # (each word one argument, as typed)
	expect_exit 3 esc$n "$SDCSCAN" run --cpus 0 --duration 0.2 $args
	if grep -q "$esc" "$TMP/esc$n.err" "$TMP/esc$n.out"; then fail "esc$n: a raw ESC echoed for $(echo "$args" | cat -v)"; fi
	expect_grep esc$n err '\\x1b'
done
expect_exit 3 esccmd "$SDCSCAN" "run${esc}"
if grep -q "$esc" "$TMP/esccmd.err"; then fail "esccmd: a raw ESC echoed for the command"; fi
expect_grep esccmd err "unknown command 'run\\\\x1b'"
# list shows each built-in profile's description whole (quick's ran past 255 characters and was cut)
tail=$(sed -n 's/^description: "\(.*\)"$/\1/p' "$(dirname "$0")/../../profiles/quick.yaml" | tail -c 40)
expect_exit 0 list "$SDCSCAN" list
expect_grep list out "^  quick .*$tail \[default\]"
finish
