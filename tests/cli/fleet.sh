#!/bin/sh
# sdcscan fleet: reports that cron runs left on several hosts, collected in one directory: the
# planted minority digest is named with its host and device, a host with findings, a stale one,
# a missing one (--hosts) and an unreadable file are named; the exit code is the fleet's; a
# "disagrees" line names only what sets its work apart from the fleet's other work of that
# probe/variant (another CPU model, another option), not every option; the threads' order
# changes nothing; 10,000 reports are compared in seconds (printed); and bench fleet runs small.
. "$(dirname "$0")/lib.sh"

expect_exit 0 base "$SDCSCAN" run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 \
	--duration 1 --cpus 0-1 --seed 7 --json "$TMP/base.json" --no-state
mkdir -p "$TMP/fleet/rack1" "$TMP/fleet/rack2"
# the report names its machine (/etc/machine-id, read here by the test itself) and its boot
if [ -r /etc/machine-id ] && [ -s /etc/machine-id ]; then
	[ "$(json_get "$TMP/base.json" 'r["host"].get("machine_id")')" = "$(cat /etc/machine-id)" ] ||
		fail "the report's host.machine_id is not /etc/machine-id: $(json_get "$TMP/base.json" 'r["host"]')"
fi
[ "$(json_get "$TMP/base.json" 'r["host"].get("boot_id")')" = "$(cat /proc/sys/kernel/random/boot_id)" ] ||
	fail "the report's host.boot_id is not this boot's: $(json_get "$TMP/base.json" 'r["host"]')"
python3 - "$TMP/base.json" "$TMP/fleet" <<'PY'
import copy, json, sys, datetime
base = json.load(open(sys.argv[1]))
def put(path, host, edit=None):
    r = copy.deepcopy(base)
    r["host"]["hostname"] = host
    if edit: edit(r)
    json.dump(r, open(sys.argv[2] + "/" + path, "w"))
for i in range(1, 5):
    put("rack1/n%d.json" % i, "n%d" % i)
def flip(r):  # n5's cpu1 computed another digest for the same work
    for x in r["results"]:
        if x["device"] == "cpu1": x["work_digest"]["sha256"] = "f" * 64
put("rack2/n5.json", "n5", flip)
def crit(r):
    r["verdict"] = {"status": "CRITICAL", "code": 2, "summary": "CRITICAL: cpu0 gemm int8: 1 corrupt result"}
put("rack2/n6.json", "n6", crit)
def old(r):
    r["run"]["start"] = (datetime.datetime.utcnow() - datetime.timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
put("rack2/n8.json", "n8", old)
# an older report of n1 with another digest: only a host's newest report counts
def older_other(r):
    r["run"]["start"] = "2020-01-01T00:00:00Z"
    for x in r["results"]: x["work_digest"]["sha256"] = "e" * 64
put("rack1/n1-2020.json", "n1", older_other)
open(sys.argv[2] + "/rack2/broken.json", "w").write('{"schema_version": [1, 0], "tool"')
PY
printf 'n1\nn2\nn3\nn4\nn5\nn6\nn7 # in the rack, never reported\nn8\n' >"$TMP/hosts"
expect_exit 2 fleet "$SDCSCAN" fleet --hosts "$TMP/hosts" --json "$TMP/f.json" "$TMP/fleet"
expect_grep fleet out "^disagrees: n5 cpu1: gemm/int8: digest ffffffffffffffff\.\.\., the majority (13 of 14 devices) [0-9a-f]\{16\}\.\.\.$"
expect_grep fleet out "^CRITICAL: n6: CRITICAL: cpu0 gemm int8"
expect_grep fleet out "^stale: n8: last report 5.0 days old"
expect_grep fleet out "^missing: n7: no report"
expect_grep fleet out "^unreadable: .*broken.json: not JSON"
expect_grep fleet out "^CRITICAL: 1 minority device, 1 host with findings, 1 stale, 1 missing, 1 unreadable"
check=$(python3 - "$TMP/f.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
if [(m["host"], m["device"]) for m in r["minority"]] != [("n5", "cpu1")]: bad.append("minority %s" % r["minority"])
if r["hosts"] != 7 or r["report_files"] != 9: bad.append("hosts %d files %d" % (r["hosts"], r["report_files"]))
g = {x["work"].split(" on ")[0]: x for x in r["groups"]}
if sorted((k, x["devices"], x["agreeing"]) for k, x in g.items()) != [("gemm/int8 seed 7", 14, 13)]:
    bad.append("groups %s" % [(x["work"][:30], x["devices"], x["agreeing"]) for x in r["groups"]])
if r["verdict"] != {"status": "CRITICAL", "code": 2}: bad.append("verdict %s" % r["verdict"])
print("; ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "fleet JSON: $check"
# Work that differs: hosts m1-m3 have another CPU model and another gemm option (refresh); m3's
# cpu0 disagrees with m1 and m2. Each line names the model and the option, and nothing else.
mkdir -p "$TMP/fleet2"
cp "$TMP/fleet/rack1/n1.json" "$TMP/fleet/rack1/n2.json" "$TMP/fleet/rack1/n3.json" "$TMP/fleet/rack2/n5.json" "$TMP/fleet2/"
python3 - "$TMP/base.json" "$TMP/fleet2" <<'PY'
import copy, json, sys
base = json.load(open(sys.argv[1]))
for i in (1, 2, 3):
    r = copy.deepcopy(base)
    r["host"]["hostname"] = "m%d" % i
    for d in r["devices"]: d["model"] = "Zen 9 prototype"
    for p in r["run"]["probes"]:
        if p["name"] == "gemm": p["options"]["refresh"] = "97"
    if i == 3:
        for x in r["results"]:
            if x["device"] == "cpu0": x["work_digest"]["sha256"] = "d" * 64
    json.dump(r, open("%s/m%d.json" % (sys.argv[2], i), "w"))
PY
expect_exit 2 differ "$SDCSCAN" fleet "$TMP/fleet2"
expect_grep differ out "^disagrees: m3 cpu0: gemm/int8 on Zen 9 prototype, options refresh=97: digest dddddddddddddddd\.\.\., the majority (5 of 6 devices)"
expect_grep differ out "^disagrees: n5 cpu1: gemm/int8 on .*, options refresh=[0-9]*: digest ffffffffffffffff\.\.\., the majority (7 of 8 devices)"
# (the whole key, every option, is still in --json's "work")
long=$(awk '/^disagrees:/ && (length($0) > 200 || /seed|kernel|iterations|dtypes/)' "$TMP/differ.out")
[ -z "$long" ] || fail "disagrees lines name what does not differ: $long"

# A clean fleet is OK; npd exit codes follow the verdict.
rm "$TMP/fleet/rack2/n5.json" "$TMP/fleet/rack2/n6.json" "$TMP/fleet/rack2/n8.json" "$TMP/fleet/rack2/broken.json"
expect_exit 0 clean "$SDCSCAN" fleet "$TMP/fleet"
expect_grep clean out "^OK: 0 minority devices"
expect_exit 3 nothing "$SDCSCAN" fleet "$TMP/nosuch"
expect_exit 3 empty_fleet "$SDCSCAN" fleet "$TMP/fleet/rack2"

# Issue 37 row 4: two machines that both say "localhost", collected a folder a machine; one is
# CRITICAL. Each is a host (its machine-id tells them apart), both are named as sharing the name,
# the CRITICAL is kept; --hosts may name them by their folders. Then the same reports as older
# sdcscan wrote them (no identity): told apart by their folders.
mkdir -p "$TMP/same/node-a" "$TMP/same/node-b" "$TMP/same_old/node-a" "$TMP/same_old/node-b"
python3 - "$TMP/base.json" "$TMP" <<'PY'
import copy, json, sys
base = json.load(open(sys.argv[1]))
for folder, ident in (("same", True), ("same_old", False)):
    for node, mid, crit in (("node-a", "aaaa1111aaaa1111aaaa1111aaaa1111", False), ("node-b", "bbbb2222bbbb2222bbbb2222bbbb2222", True)):
        r = copy.deepcopy(base)
        r["host"]["hostname"] = "localhost"
        for k in ("machine_id", "product_uuid", "product_serial", "boot_id"):
            r["host"].pop(k, None)
        if ident:
            r["host"]["machine_id"] = mid
        if crit:
            r["verdict"] = {"status": "CRITICAL", "code": 2, "summary": "CRITICAL: cpu1 gemm int8: 1 corrupt result"}
        json.dump(r, open("%s/%s/%s/last.json" % (sys.argv[2], folder, node), "w"))
PY
expect_exit 2 same "$SDCSCAN" fleet --json "$TMP/same.json" "$TMP/same"
expect_grep same out "^sdcscan fleet: 2 report files, 2 hosts,"
expect_grep same out "^CRITICAL: localhost (machine-id bbbb2222bbbb): CRITICAL: cpu1 gemm int8"
expect_grep same out "^same-hostname: two machines report hostname localhost: machine-id aaaa1111aaaa1111aaaa1111aaaa1111 (.*/node-a/last.json) and machine-id bbbb2222bbbb2222bbbb2222bbbb2222 (.*/node-b/last.json)$"
[ "$(json_get "$TMP/same.json" '[m["machine"] for m in r["same_hostname"][0]["machines"]]')" = \
	"['machine-id aaaa1111aaaa1111aaaa1111aaaa1111', 'machine-id bbbb2222bbbb2222bbbb2222bbbb2222']" ] ||
	fail "fleet --json same_hostname: $(cat "$TMP/same.json")"
printf 'node-a\nnode-b\n' >"$TMP/same_hosts"
expect_exit 2 same_hosts "$SDCSCAN" fleet --hosts "$TMP/same_hosts" "$TMP/same"
expect_grep same_hosts out "0 missing"
expect_exit 2 same_old "$SDCSCAN" fleet "$TMP/same_old"
expect_grep same_old out "^CRITICAL: localhost (folder node-b): CRITICAL: cpu1 gemm int8"
expect_grep same_old out "^same-hostname: two machines report hostname localhost: folder .*/node-a (.*/node-a/last.json) and folder .*/node-b (.*/node-b/last.json)$"
# an older report (no identity) beside a newer one of the same machine (with one) is one host
cp "$TMP/same_old/node-a/last.json" "$TMP/same/node-a/2020.json"
python3 - "$TMP/same/node-a/2020.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["run"]["start"] = "2020-01-01T00:00:00Z"; json.dump(r, open(sys.argv[1], "w"))
PY
expect_exit 2 same_mixed "$SDCSCAN" fleet "$TMP/same"
expect_grep same_mixed out "^sdcscan fleet: 3 report files, 2 hosts,"
# and where the report without an identity is the newer, it stands for that machine (CRITICAL kept)
mkdir -p "$TMP/mixed/node-b"
cp "$TMP/same/node-a/last.json" "$TMP/mixed/node-b/2020-with-id.json"
cp "$TMP/same_old/node-b/last.json" "$TMP/mixed/node-b/last.json"
python3 - "$TMP/mixed/node-b/2020-with-id.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["run"]["start"] = "2020-01-01T00:00:00Z"; json.dump(r, open(sys.argv[1], "w"))
PY
expect_exit 2 mixed "$SDCSCAN" fleet --max-age 315360000 "$TMP/mixed"
expect_grep mixed out "^sdcscan fleet: 2 report files, 1 host,"
expect_grep mixed out "^CRITICAL: localhost: CRITICAL: cpu1 gemm int8"

# Row 5: one host's folder holds an older OK report and a CRITICAL one made with its clock a day
# ahead: CRITICAL, and the skew said beside it.
mkdir -p "$TMP/skew/n1"
python3 - "$TMP/base.json" "$TMP/skew/n1" <<'PY'
import copy, datetime, json, sys
base = json.load(open(sys.argv[1]))
ok = copy.deepcopy(base); ok["host"]["hostname"] = "n1"
ok["run"]["start"] = (datetime.datetime.utcnow() - datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
json.dump(ok, open(sys.argv[2] + "/ok.json", "w"))
crit = copy.deepcopy(ok)
crit["run"]["start"] = (datetime.datetime.utcnow() + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
crit["verdict"] = {"status": "CRITICAL", "code": 2, "summary": "CRITICAL: cpu0 gemm int8: 1 corrupt result"}
json.dump(crit, open(sys.argv[2] + "/crit.json", "w"))
PY
expect_exit 2 skew "$SDCSCAN" fleet "$TMP/skew"
expect_grep skew out "^CRITICAL: n1: CRITICAL: cpu0 gemm int8: 1 corrupt result (the report is dated 8[0-9]\{4\} s in the future: its clock is wrong)$"
expect_grep skew out "^clock-skew: n1: a report dated 8[0-9]\{4\} s in the future (.*crit.json)"
expect_grep skew out "^CRITICAL: 0 minority devices, 1 host with findings"

# Row 12: links in the reports' folder: one to its parent (a loop) and one out of it to a file
# that is not a report. Neither is followed, both are named in one line, and no byte of the file
# behind a link (nor of a broken report) is printed: the error says what was expected, and where.
mkdir -p "$TMP/links/h1"
cp "$TMP/fleet/rack1/n1.json" "$TMP/links/h1/"
printf 'Shadowtoken:x:0:0:Secrettoken\n' >"$TMP/outside.json"
printf 'Zebrabytes {' >"$TMP/links/h1/bad.json"
ln -s .. "$TMP/links/loop"
ln -s "$TMP/outside.json" "$TMP/links/x.json"
expect_exit 1 links "$SDCSCAN" fleet --html "$TMP/links.html" --json "$TMP/links.json" "$TMP/links"
expect_grep links out "^sdcscan fleet: 2 report files, 1 host,"
expect_grep links out "^links not followed: 2 links that lead out of the folder or to a folder: .*/links/loop (leads out of the folder), .*/links/x.json (leads out of the folder)$"
expect_grep links out "^unreadable: .*/h1/bad.json: not JSON: .*(byte [0-9]*)$"
[ "$(grep -c '^links not followed' "$TMP/links.out")" = 1 ] || fail "links: said more than once"
if grep -q -e Shadow -e Secret -e Zebra "$TMP/links.out" "$TMP/links.err" "$TMP/links.html" "$TMP/links.json"; then
	fail "links: a file's bytes were printed: $(grep -h -e Shadow -e Secret -e Zebra "$TMP/links.out" "$TMP/links.err")"
fi

# 10,000 hosts' reports, timed.
python3 - "$TMP/base.json" "$TMP/big" <<'PY'
import json, os, sys
base = json.load(open(sys.argv[1]))
os.makedirs(sys.argv[2])
for i in range(10000):
    base["host"]["hostname"] = "node%05d" % i
    if i == 4242:
        base["results"][0]["work_digest"]["sha256"] = "0" * 64
    json.dump(base, open("%s/node%05d.json" % (sys.argv[2], i), "w"))
    if i == 4242:
        base = json.load(open(sys.argv[1]))
PY
t0=$(date +%s%N)
expect_exit 2 big "$SDCSCAN" fleet "$TMP/big"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_grep big out "^disagrees: node04242 cpu0"
expect_grep big out "majority (19999 of 20000 devices)"
echo "fleet: 10,000 reports compared in $ms ms"
# one reader thread or several: the same output, byte for byte
expect_exit 2 big1 "$SDCSCAN" fleet --threads 1 "$TMP/big"
expect_exit 2 big3 "$SDCSCAN" fleet --threads 3 "$TMP/big"
cmp -s "$TMP/big1.out" "$TMP/big3.out" && cmp -s "$TMP/big1.out" "$TMP/big.out" || fail "fleet: the output depends on the threads"

# sdcscan bench fleet, small: it makes its reports from a real run, races the plain reader, and
# the fleet names the one planted device (the 10,000-host figures are made by hand: sdcscan(1)).
expect_exit 0 bench "$SDCSCAN" bench fleet --reports 40 --dir "$TMP/bench" --json "$TMP/bench.json"
expect_grep bench out "^hosts of 128 CPUs and 8 GPUs: 40 reports"
expect_grep bench out "^  the planted device (node00020 cpu1) named, and nothing else: yes"
# (issue 37, requirement 3: two machines of one hostname, a report a day ahead, a CRITICAL host)
expect_grep bench out "^  two machines of hostname node00001 both named: yes"
expect_grep bench out "^  the report a day ahead (node00002) named: yes"
expect_grep bench out "^  the CRITICAL host (node00003) named: yes"
expect_grep bench out "^hosts of 2 CPUs: 40 reports"
[ "$(json_get "$TMP/bench.json" 'len([f for f in r["fleets"] if f["planted_named"] and f["sdcscan_fleet"]["exit"] == 2])')" = 2 ] ||
	fail "bench fleet --json: $(cat "$TMP/bench.json")"
cat "$TMP/bench.out"
# a target it cannot meet is MISSED, exit 2 (the reports made above are reused)
expect_exit 2 bench_miss "$SDCSCAN" bench fleet --reports 40 --dir "$TMP/bench" --max-mb 1 --max-seconds 0.001
expect_grep bench_miss out "^  fleet's peak memory: [0-9]* MB  (target <= 1 MB)  MISSED$"
expect_grep bench_miss out "^  fleet's time: [0-9.]* s  (target < 0.001 s)  MISSED$"
expect_grep bench_miss out "^CRITICAL: a target was missed"
# a template whose first result ran under 16 iterations ("work_digest": null, as the ASan build's
# gemm/int8 did): the planted digest is the first real one, not "(null)"
mkdir -p "$TMP/bench_short"
python3 - "$TMP/bench/template.json" "$TMP/bench_short/template.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["results"][0]["work_digest"] = None
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
expect_exit 0 bench_short "$SDCSCAN" bench fleet --reports 40 --dir "$TMP/bench_short"
expect_grep bench_short out "^  the planted device (node00020 cpu1) named, and nothing else: yes"
finish
