#!/usr/bin/env python3
"""Validate real sdcscan reports against schema/report.schema.json with a real validator.

usage: validate_reports.py SDCSCAN SCHEMA
Produces reports from a clean run, an injected run, an interrupted run and a selftest, checks
each against the schema, and checks that the validator does reject a broken report (so this
test can fail).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import jsonschema

SMALL = ['--probe', 'gemm', '--set', 'gemm.m=48', '--set', 'gemm.n=40', '--set', 'gemm.k=64']


def main():
    sdcscan, schema_path = sys.argv[1], sys.argv[2]
    with open(schema_path) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=jsonschema.FormatChecker())
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            'clean': (['run'] + SMALL + ['--duration', '1'], 0),
            'injected': (['run'] + SMALL + ['--duration', '1', '--inject', 'gemm:C:count=3',
                                            '--inject', 'gemm/fp32:B'], 2),
            'npd': (['run'] + SMALL + ['--duration', '0.5', '--exit-codes', 'npd', '--inject', 'gemm:A'], 1),
            'embbag': (['run', '--probe', 'embbag', '--set', 'embbag.rows=65536', '--duration', '2',
                        '--inject', 'embbag:T', '--inject', 'embbag:R:bit=30'], 2),
            'selftest': (['selftest'], 0),
        }
        reports = {}
        for name, (args, want) in runs.items():
            path = os.path.join(tmp, name + '.json')
            rc = subprocess.run([sdcscan] + args + ['--json', path, '--quiet'],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).returncode
            if rc != want:
                print(f'FAIL {name}: exit {rc}, expected {want}')
                failures += 1
            reports[name] = path

        path = os.path.join(tmp, 'interrupted.json')
        p = subprocess.Popen([sdcscan, 'run'] + SMALL + ['--duration', '30', '--json', path, '--quiet'],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
        reports['interrupted'] = path

        for name, path in reports.items():
            with open(path) as f:
                report = json.load(f)
            errors = sorted(validator.iter_errors(report), key=str)
            for e in errors:
                print(f'FAIL {name}: {"/".join(map(str, e.absolute_path))}: {e.message}')
            failures += bool(errors)
            if report['tool']['exit_status'] != {'clean': 0, 'injected': 2, 'npd': 1, 'embbag': 2, 'selftest': 0,
                                                 'interrupted': 3}[name]:
                print(f'FAIL {name}: tool.exit_status {report["tool"]["exit_status"]}')
                failures += 1
            print(f'{name}: {len(report["results"])} results, {len(report["findings"])} findings, '
                  f'verdict {report["verdict"]["status"]}: {"invalid" if errors else "valid"}')

        # The validator must be able to say no.
        with open(reports['injected']) as f:
            broken = json.load(f)
        broken['verdict']['status'] = 'FINE'
        del broken['findings'][0]['kind']
        if validator.is_valid(broken):
            print('FAIL: a broken report was accepted')
            failures += 1
    print('PASS' if not failures else f'{failures} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
