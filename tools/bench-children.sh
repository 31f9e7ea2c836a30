#!/bin/sh
# What burns in child processes cost: this tree's sdcscan against the release before the change
# (each burn a thread), the quick profile side by side (tools/bench_children.py says what is
# measured and its targets). The release before is built once from git into a cache outside the
# checkout (SDCSCAN_CACHE, default /var/cache/sdcscan-ci), without CUDA (the CPU's burns).
# usage: tools/bench-children.sh [BUILD_DIR] [--runs N] [--json FILE] [-- RUN_ARGS...]
set -eu
cd "$(dirname "$0")/.."
build=build
case "${1:-}" in
-* | "") ;;
*) build=$1; shift ;;
esac
# the last landing before the burns moved into processes (threads: runner/supervise.c's handler)
before=9ae7b0dc793c847a3371eee5d9ed056aa1b2c204
cache=${SDCSCAN_CACHE:-/var/cache/sdcscan-ci}/before-$(echo "$before" | cut -c1-12)
if [ ! -x "$cache/build/src/sdcscan" ]; then
	rm -rf "$cache"
	mkdir -p "$cache/src"
	git archive "$before" | tar -x -C "$cache/src"
	meson setup "$cache/build" "$cache/src" -Dcuda=disabled -Dnccl=disabled -Dman-pages=disabled >/dev/null
	ninja -C "$cache/build" src/sdcscan >/dev/null
fi
[ -x "$build/src/sdcscan" ] || ninja -C "$build" src/sdcscan >/dev/null
exec python3 tools/bench_children.py "$build/src/sdcscan" "$cache/build/src/sdcscan" "$@"
