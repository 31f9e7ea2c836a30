#!/usr/bin/env python3
"""
The shipped alert rules, their promtool unit tests and the Grafana dashboard ask only for what
sdcscan writes: every metric name, label name and label value in their PromQL (and in the rule
tests' input series, the dashboard's legends and the alerts' $labels) is checked against the
textfiles of real runs (tests/cli/metrics.sh writes one of each kind). A metric or label renamed
in sdcscan, or misspelt in a rule or panel, fails here.

    promql_check.py TEXTFILE_DIR RULES RULE_TESTS DASHBOARD
    promql_check.py --self-test TEXTFILE_DIR RULES RULE_TESTS DASHBOARD
        (the check itself: a renamed metric, a label dropped, a misspelt value, label or legend
        each make it fail)

The PromQL reader is small on purpose: selectors, matchers, by/without/on/ignoring/group_*
lists and label_values(); a regex matcher must be a plain alternation (a|b) or hold a Grafana
variable, or it is refused as too complex to check.
"""
import glob
import json
import os
import re
import shutil
import sys
import tempfile

import yaml  # Debian: python3-yaml

TARGET = {"instance", "job"}  # added by the scrape, not by sdcscan
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2"}
# aggregations: their by/without list may come before the parenthesis
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile"}
TOKEN = re.compile(r'''\s+|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)|(?P<var>\$\{[^}]*\}|\$\w+)'''
                   r'''|(?P<num>\d+(?:\.\d+)?(?:ms|[smhdwy])?)|(?P<id>[A-Za-z_:][A-Za-z0-9_:]*)'''
                   r'''|(?P<op>==|!=|=~|!~|>=|<=|[-+*/%^<>=(){}\[\],@])''')
PLAIN = re.compile(r"^[A-Za-z0-9_.:-]+(\|[A-Za-z0-9_.:-]+)*$")


def tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError("cannot read %r at %r" % (expr, expr[pos:pos + 20]))
        pos = m.end()
        kind = m.lastgroup
        if kind:
            text = m.group(kind)
            out.append((kind, text[1:-1] if kind == "str" else text))
    return out


class Query:
    """What one PromQL expression asks for: selectors (name, [(label, op, value)]), grouping labels."""

    def __init__(self, expr):
        self.expr, self.selectors, self.grouping, self.label_args = expr, [], [], []
        t = tokens(expr)
        i = 0
        while i < len(t):
            kind, text = t[i]
            nxt = t[i + 1][1] if i + 1 < len(t) else None
            if kind == "id" and text in GROUPING:
                i += 1
                if nxt == "(":
                    i += 1
                    while t[i][1] != ")":
                        if t[i][0] == "id":
                            self.grouping.append(t[i][1])
                        i += 1
                    i += 1
                continue
            if kind == "id" and (text in KEYWORDS or text in AGGREGATIONS):
                i += 1
                continue
            if kind == "id" and nxt == "(":
                if text == "label_values":  # Grafana: label_values([selector,] label)
                    depth, j = 0, i + 1
                    while True:
                        depth += {"(": 1, ")": -1}.get(t[j][1], 0)
                        if depth == 0:
                            break
                        j += 1
                    if t[j - 1][0] == "id":
                        self.label_args.append(t[j - 1][1])
                        t = t[:j - 1] + t[j:]  # (the label is not a metric name)
                i += 2
                continue
            if kind == "id" or text == "{":
                name = text if kind == "id" else None
                i += 1 if kind == "id" else 0
                matchers = []
                if i < len(t) and t[i][1] == "{":
                    i += 1
                    while t[i][1] != "}":
                        if t[i][1] == ",":
                            i += 1
                            continue
                        matchers.append((t[i][1], t[i + 1][1], t[i + 2][1]))
                        i += 3
                    i += 1
                self.selectors.append((name, matchers))
                continue
            if text == "[":
                while t[i][1] != "]":
                    i += 1
            i += 1

    def metrics(self):
        return [n for n, _ in self.selectors if n]


class Real:
    """The series of real runs' textfiles: names, label-name sets, label values."""

    def __init__(self, folder):
        self.sets, self.values = {}, {}
        files = sorted(glob.glob(os.path.join(folder, "*.prom")))
        if not files:
            raise SystemExit("promql_check: no *.prom in %s" % folder)
        for f in files:
            for line in open(f):
                if line.startswith("#") or not line.strip():
                    continue
                m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? \S+$", line.rstrip("\n"))
                if not m:
                    raise SystemExit("promql_check: %s: not a sample: %s" % (f, line.strip()))
                labels = dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
                self.sets.setdefault(m.group(1), set()).add(frozenset(labels))
                for k, v in labels.items():
                    self.values.setdefault((m.group(1), k), set()).add(v)

    def labels(self, name):
        return set().union(*self.sets.get(name, [set()]))


def check_query(real, q, where, extra_labels=()):
    """Problems with one expression; extra_labels: labels its legend or annotations name."""
    bad, names = [], set()
    for name, matchers in q.selectors:
        if name is None:
            bad.append("%s: a selector without a metric name: %s" % (where, q.expr))
            continue
        if name not in real.sets:
            bad.append("%s: no metric %s in the real runs' textfiles" % (where, name))
            continue
        names.add(name)
        for label, op, value in matchers:
            if label in TARGET:
                continue
            if label not in real.labels(name):
                bad.append("%s: %s has no label %s" % (where, name, label))
                continue
            if "$" in value or value in (".*", ".+"):
                continue  # a Grafana variable or anything
            if op in ("=~", "!~") and not PLAIN.match(value):
                bad.append("%s: %s%s%r: a regex too complex to check" % (where, label, op, value))
                continue
            for v in value.split("|") if op in ("=~", "!~") else [value]:
                if v not in real.values.get((name, label), set()):
                    bad.append("%s: %s{%s} is never %r in the real runs (it is: %s)" % (
                        where, name, label, v, ", ".join(sorted(real.values.get((name, label), set())))))
    known = set().union(*[real.labels(n) for n in names] or [set()]) | TARGET
    for label in list(q.grouping) + list(q.label_args) + list(extra_labels):
        if label not in known:
            bad.append("%s: label %s is not on %s" % (where, label, ", ".join(sorted(names)) or "any metric"))
    return bad


def check_series(real, text, where):
    """A rule test's input series: a real metric with a real label set and real values."""
    q = Query(text)
    if len(q.selectors) != 1 or not q.selectors[0][0]:
        return ["%s: not one series: %s" % (where, text)]
    name, matchers = q.selectors[0]
    bad = check_query(real, q, where)
    have = frozenset(label for label, _, _ in matchers if label not in TARGET)
    if name in real.sets and have not in real.sets[name]:
        bad.append("%s: %s with labels {%s}: the real runs write it with {%s}" % (
            where, name, ",".join(sorted(have)), "} or {".join(",".join(sorted(s)) for s in real.sets[name])))
    return bad


def dashboard_exprs(node, path="dashboard"):
    """(where, expr, legend) of every query in the dashboard, panels and variables."""
    if isinstance(node, dict):
        if isinstance(node.get("expr"), str):
            yield path, node["expr"], node.get("legendFormat", "")
        if node.get("type") == "query" and isinstance(node.get("definition"), str):
            yield path, node["definition"], ""
        for k, v in node.items():
            yield from dashboard_exprs(v, "%s/%s" % (path, node.get("title", node.get("name", k))))
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_exprs(v, path)


def check(folder, rules_path, tests_path, dash_path):
    real = Real(folder)
    bad = []
    rules = yaml.safe_load(open(rules_path))
    alerts = set()
    for g in rules["groups"]:
        for r in g["rules"]:
            where = "%s: %s" % (os.path.basename(rules_path), r.get("alert", r.get("record")))
            alerts.add(r.get("alert"))
            named = set()
            for text in r.get("annotations", {}).values():
                named |= set(re.findall(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", text))
            bad += check_query(real, Query(r["expr"]), where, sorted(named))
    tests = yaml.safe_load(open(tests_path))
    fired = set()
    for n, t in enumerate(tests["tests"]):
        for s in t.get("input_series", []):
            bad += check_series(real, s["series"], "%s: test %d" % (os.path.basename(tests_path), n))
        for a in t.get("alert_rule_test", []):
            if a.get("exp_alerts"):
                fired.add(a["alertname"])
    for a in sorted(alerts - fired - {None}):
        bad.append("%s: no test where %s fires" % (os.path.basename(tests_path), a))
    dash = json.load(open(dash_path))
    nexpr = 0
    for where, expr, legend in dashboard_exprs(dash):
        nexpr += 1
        legend_labels = re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", legend or "")
        bad += check_query(real, Query(expr), where, legend_labels)
    if nexpr < 5:
        bad.append("%s: only %d queries found" % (os.path.basename(dash_path), nexpr))
    return bad


def self_test(folder, rules_path, tests_path, dash_path):
    """Each planted fault must be found (and the shipped files must pass)."""
    if check(folder, rules_path, tests_path, dash_path):
        return ["the shipped files do not pass"]
    out = []
    work = tempfile.mkdtemp(prefix="promql-check-")
    try:
        def plant(name, edit_prom=None, edit=None):
            d = os.path.join(work, name)
            os.makedirs(d)
            for f in glob.glob(os.path.join(folder, "*.prom")):
                text = open(f).read()
                open(os.path.join(d, os.path.basename(f)), "w").write(edit_prom(text) if edit_prom else text)
            paths = []
            for p in (rules_path, tests_path, dash_path):
                text = open(p).read()
                q = os.path.join(d, os.path.basename(p) + ".x")
                open(q, "w").write(edit(p, text) if edit else text)
                paths.append(q)
            if not check(d, *paths):
                out.append("planted fault not found: " + name)

        plant("metric-renamed", lambda s: s.replace("sdcscan_probe_failed", "sdcscan_probe_state"))
        plant("label-dropped", lambda s: re.sub(r',injected="[a-z]*"', "", s))
        plant("status-value-gone", lambda s: s.replace('status="hung"', 'status="stuck"'))
        plant("rule-value-misspelt", edit=lambda p, s: s.replace('status="degraded"', 'status="degradd"')
              if p == rules_path else s)
        plant("dashboard-label-misspelt", edit=lambda p, s: s.replace("count by (status)", "count by (stauts)")
              if p == dash_path else s)
        plant("dashboard-legend-misspelt", edit=lambda p, s: s.replace('"{{probe}}"', '"{{prob}}"')
              if p == dash_path else s)
        plant("annotation-label-misspelt", edit=lambda p, s: s.replace("$labels.device", "$labels.devise", 1)
              if p == rules_path else s)
        plant("test-series-label-extra", edit=lambda p, s: s.replace(',status="interrupted"', ',state="interrupted"')
              if p == tests_path else s)
        plant("untested-alert", edit=lambda p, s: s.replace("alertname: SDCScanDegraded\n        exp_alerts:",
                                                            "alertname: SDCScanDegraded\n        exp_alerts: []\n        x:")
              if p == tests_path else s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv):
    selftest = argv[1:2] == ["--self-test"]
    args = argv[2:] if selftest else argv[1:]
    if len(args) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bad = self_test(*args) if selftest else check(*args)
    for b in bad:
        print("promql_check: " + b, file=sys.stderr)
    if not bad:
        print("promql_check: %s" % ("every planted fault found" if selftest else "every query asks for what the runs write"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
