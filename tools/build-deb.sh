#!/bin/sh
# Builds the Debian package from this tree and runs lintian on it (CI does):
#   tools/build-deb.sh OUT_DIR
# The tree (what git tracks, and files it does not ignore) is copied with packaging/debian as
# debian/, built with dpkg-buildpackage (unit tests only, see debian/rules), then lintian.
set -eu
out=${1:?usage: build-deb.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/sdcscan-0.1.0
mkdir -p "$src"
(cd "$here" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src" 2>/dev/null || true)
cp -r "$src/packaging/debian" "$src/debian"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
cp "$work"/*.deb "$work"/*.changes "$out/"
lintian --fail-on error,warning "$out"/sdcscan_*.deb | tee "$out/lintian.txt"
echo "built: $(ls "$out"/*.deb); lintian: $(wc -l <"$out/lintian.txt") lines"
