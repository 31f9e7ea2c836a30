#!/bin/sh
# The man pages render without a single warning from man/groff.
set -u
status=0
for page in "$@"; do
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "FAIL: $page:" >&2
		echo "$out" >&2
		status=1
	else
		echo "$page: no warnings"
	fi
done
exit $status
