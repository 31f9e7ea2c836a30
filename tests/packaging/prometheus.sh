#!/bin/sh
# packaging/prometheus and packaging/grafana: the alert rules pass `promtool check rules` and their
# unit tests (`promtool test rules`); those tests' input series, the rules' and the dashboard's
# queries, legends and $labels name only metrics, labels and values that real runs write (the
# textfiles of tests/cli/metrics.sh, one run of each kind; tests/packaging/promql_check.py, whose
# own self-test plants a renamed metric, a dropped label and misspellings); meson install puts the
# rules and the dashboard in share/sdcscan, where the .deb and the RPM take them from.
# usage: prometheus.sh SDCSCAN SOURCE_ROOT BUILD_ROOT FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/../cli/lib.sh"
SRC=${2:?source root}
BLD=${3:?build root}
RULES=$SRC/packaging/prometheus/sdcscan-rules.yml
TESTS=$SRC/packaging/prometheus/sdcscan-rules.test.yml
DASH=$SRC/packaging/grafana/sdcscan-dashboard.json
command -v promtool >/dev/null || { fail "promtool not found (apt-get install prometheus)"; finish; }

# the textfiles of real runs, one of each kind (and metrics.sh's own checks of them)
sh "$SRC/tests/cli/metrics.sh" "$SDCSCAN" "$4" "$5" "$TMP/prom" >"$TMP/metrics.out" 2>&1 ||
	fail "tests/cli/metrics.sh: $(cat "$TMP/metrics.out")"

promtool check rules "$RULES" >"$TMP/check.out" 2>&1 || fail "promtool check rules: $(cat "$TMP/check.out")"
grep -q "SUCCESS: 6 rules found" "$TMP/check.out" || fail "promtool check rules: $(cat "$TMP/check.out")"
# (rule_files is relative to the test file's folder)
(cd "$(dirname "$TESTS")" && promtool test rules "$(basename "$TESTS")") >"$TMP/test.out" 2>&1 ||
	fail "promtool test rules: $(cat "$TMP/test.out")"
cat "$TMP/check.out" "$TMP/test.out"

python3 "$SRC/tests/packaging/promql_check.py" "$TMP/prom" "$RULES" "$TESTS" "$DASH" >"$TMP/names.out" 2>&1 ||
	fail "$(cat "$TMP/names.out")"
python3 "$SRC/tests/packaging/promql_check.py" --self-test "$TMP/prom" "$RULES" "$TESTS" "$DASH" >"$TMP/self.out" 2>&1 ||
	fail "$(cat "$TMP/self.out")"
cat "$TMP/names.out" "$TMP/self.out"

# the dashboard: JSON Grafana imports (a uid, panels with ids and places, each query on the
# dashboard's datasource variable)
bad=$(python3 - "$DASH" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
if not d.get("uid") or not d.get("title") or not isinstance(d.get("schemaVersion"), int):
    bad.append("no uid, title or schemaVersion")
ids = [p.get("id") for p in d["panels"]]
if len(set(ids)) != len(ids) or None in ids:
    bad.append("panel ids not unique: %s" % ids)
for p in d["panels"]:
    if not all(k in p.get("gridPos", {}) for k in "xywh"):
        bad.append("%s: no gridPos" % p["title"])
    for t in p.get("targets", []):
        if t.get("datasource", {}).get("uid") != "${datasource}" or not t.get("expr"):
            bad.append("%s: a query without the datasource variable or an expr" % p["title"])
if "datasource" not in [v["name"] for v in d["templating"]["list"] if v["type"] == "datasource"]:
    bad.append("no datasource variable")
print("\n".join(bad))
PY
)
[ -z "$bad" ] || fail "dashboard: $bad"

# README's command that loads the rules into Prometheus, on a prometheus.yml as Debian ships it
# (rule_files: with commented examples) and on one without rule_files: promtool finds the rules.
cmd=$(grep '^install -m 0644 /usr/share/sdcscan/prometheus/sdcscan-rules.yml' "$SRC/README.md")
[ -n "$cmd" ] || fail "README: no command that installs the rules"
for conf in debian bare; do
	mkdir -p "$TMP/$conf/share/prometheus"
	cp "$RULES" "$TMP/$conf/share/prometheus/"
	printf 'global:\n  evaluation_interval: 15s\n' >"$TMP/$conf/prometheus.yml"
	[ $conf = bare ] || printf 'rule_files:\n  # - "first_rules.yml"\n  # - "second_rules.yml"\n' >>"$TMP/$conf/prometheus.yml"
	printf 'scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [localhost:9100]\n' >>"$TMP/$conf/prometheus.yml"
	# (twice: a second time adds nothing)
	for k in 1 2; do
		sh -c "$(printf '%s' "$cmd" | sed "s|/usr/share/sdcscan/|$TMP/$conf/share/|g; s|/etc/prometheus/|$TMP/$conf/|g; \
			s|systemctl reload prometheus|true|")" >"$TMP/$conf.out" 2>&1 || fail "README's rules command, $conf prometheus.yml: $(cat "$TMP/$conf.out")"
		grep -q "SUCCESS: 1 rule files found" "$TMP/$conf.out" && grep -q "SUCCESS: 6 rules found" "$TMP/$conf.out" ||
			fail "README's rules command, $conf prometheus.yml: $(cat "$TMP/$conf.out")"
	done
	[ "$(grep -c sdcscan-rules.yml "$TMP/$conf/prometheus.yml")" = 1 ] || fail "README's rules command, twice: $(cat "$TMP/$conf/prometheus.yml")"
done

# meson install: where the other packaging files go (share/sdcscan), so the .deb (dh installs what
# meson installs) and the RPM (%{_datadir}/sdcscan/) carry them
DESTDIR=$TMP/root meson install -C "$BLD" --no-rebuild >"$TMP/install.out" 2>&1 || fail "meson install: $(tail -5 "$TMP/install.out")"
for f in prometheus/sdcscan-rules.yml grafana/sdcscan-dashboard.json; do
	got=$(find "$TMP/root" -path "*/share/sdcscan/$f" -type f)
	[ -n "$got" ] && cmp -s "$got" "$SRC/packaging/$f" || fail "meson install did not install share/sdcscan/$f"
done
grep -q '^%{_datadir}/sdcscan/$' "$SRC/packaging/sdcscan.spec" || fail "the RPM's %files does not take share/sdcscan/"
finish
