#!/bin/sh
# sdcscan's container image (packaging/container/build-image.sh), as a node would run it:
#   its configuration: entrypoint /usr/bin/sdcscan, command version, volume /var/lib/sdcscan,
#     the OCI labels (title, version, revision: this tree's commit when SOURCE_ROOT is given) and
#     sdcscan's (the .deb, the GPU module and the CUDA libraries), the module's digest inside the
#     image equal to its label's;
#   sdcscan inside: `version` (its version the label's; the GPU module loaded, or, as the labels
#     say, none in the image or no cuBLAS beside it) and `selftest` (every injected fault found);
#   --full (CI): `run --profile quick --duration 5` with the host's state folder and a textfile
#     folder mounted, the report naming the host, the metrics written on the host's side; the
#     node agent's round (sdcscan-agent) and, under podman, a stopped agent ending its scan with
#     a verdict (exit 143, the run interrupted); sdcscan-npd-export's tool answering
#     `sdcscan status` from the host's state in an otherwise empty root, read-only, and
#     check-sdcscan.sh through it.
# Containers run with podman where it can run one here; flags are tried in turn (this sandbox:
# crun refuses cgroups v1+v2 hybrid mode, and without CAP_SYS_RESOURCE no rlimit can be raised, so
# runc with limits no higher than podman's own). Where none works, each error is printed and the
# image's root file system (buildah mount) is run under chroot instead, with /proc, /sys and /dev
# in a mount namespace of its own (unshare), as tests/gpu/rehearse.sh does.
# usage: container_image.sh [--full] IMAGE [SOURCE_ROOT]
#   SDCSCAN_TEST_RUNNER=chroot: chroot without trying podman (to test that way here)
# Exit: 0 passed, 1 failed, 77 skipped (not root, no buildah, no such image, or an image of
# another commit than SOURCE_ROOT's: build it again).
set -u
full=0
[ "${1:-}" = --full ] && { full=1; shift; }
image=${1:?usage: container_image.sh [--full] IMAGE [SOURCE_ROOT]}
src=${2:-}
[ "$(id -u)" = 0 ] || { echo "SKIP: the image test needs root (buildah's and podman's storage, chroot)"; exit 77; }
command -v buildah >/dev/null || { echo "SKIP: no buildah (apt-get install buildah podman runc)"; exit 77; }
buildah inspect --type image "$image" >/dev/null 2>&1 ||
	{ echo "SKIP: no image $image here (packaging/container/build-image.sh DEB GPU_MODULE makes it)"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sdcscan-image.XXXXXX")
ctr=
cleanup() {
	[ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
FAILED=0
fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}
T0=$(date +%s)
say() { echo "container_image: $* ($(($(date +%s) - T0)) s)"; }

# ---- the configuration ----
# (buildah 1.28's --format has no json function: the whole inspection, then its OCI config)
buildah inspect --type image "$image" | python3 -c 'import json,sys; json.dump(json.load(sys.stdin)["OCIv1"]["config"], sys.stdout)' \
	>"$TMP/config.json" || { fail "cannot read the configuration of $image"; exit 1; }
label() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("Labels", {}).get(sys.argv[2], ""))' "$TMP/config.json" "$1"; }
bad=$(python3 - "$TMP/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
bad = []
if c.get("Entrypoint") != ["/usr/bin/sdcscan"]:
    bad.append("entrypoint %r, not /usr/bin/sdcscan" % c.get("Entrypoint"))
if c.get("Cmd") != ["version"]:
    bad.append("command %r, not version" % c.get("Cmd"))
if "/var/lib/sdcscan" not in (c.get("Volumes") or {}):
    bad.append("no volume /var/lib/sdcscan: %r" % c.get("Volumes"))
labels = c.get("Labels") or {}
for k in ["org.opencontainers.image.title", "org.opencontainers.image.version", "org.opencontainers.image.revision",
          "org.opencontainers.image.source", "org.opencontainers.image.licenses", "org.example.sdcscan.deb",
          "org.example.sdcscan.gpu-module", "org.example.sdcscan.cuda-libs", "org.example.sdcscan.rootfs"]:
    if not labels.get(k):
        bad.append("no label " + k)
if labels.get("org.opencontainers.image.title") != "sdcscan":
    bad.append("title %r" % labels.get("org.opencontainers.image.title"))
print("; ".join(bad))
PY
)
[ -z "$bad" ] || fail "image configuration: $bad"
version=$(label org.opencontainers.image.version)
module=$(label org.example.sdcscan.gpu-module)
cudalibs=$(label org.example.sdcscan.cuda-libs)
if [ -n "$src" ]; then
	head=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
	rev=$(label org.opencontainers.image.revision)
	if [ "$rev" != "$head" ]; then
		echo "SKIP: $image was built from commit $rev, this tree is at $head: build it again"
		exit 77
	fi
fi

# ---- how to run it: podman, or chroot ----
# This process's hard limits (proc(5): /proc/self/limits), podman's at most; podman 4.3 keeps
# RLIMIT_NPROC at 32768 for itself (seen with strace here), so no more than that.
nofile=$(awk '/^Max open files/ { print $5 }' /proc/self/limits)
nproc=$(awk '/^Max processes/ { print $4 }' /proc/self/limits)
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
[ "$nofile" = unlimited ] && nofile=1048576
runner=
if [ "${SDCSCAN_TEST_RUNNER:-}" = chroot ]; then
	echo "container_image: SDCSCAN_TEST_RUNNER=chroot: podman not tried"
elif command -v podman >/dev/null; then
	for flags in "" "--runtime runc" "--runtime runc --ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"; do
		# shellcheck disable=SC2086
		if podman run --rm --network none $flags --entrypoint /bin/true "$image" >"$TMP/podman.err" 2>&1; then
			runner=podman
			pflags=$flags
			break
		fi
		echo "container_image: podman run ${flags:-(no flags)}: $(tail -1 "$TMP/podman.err")"
	done
else
	echo "container_image: no podman (apt-get install podman runc)"
fi
if [ -z "$runner" ]; then
	runner=chroot
	ctr=$(buildah from --pull=never "$image") && mnt=$(buildah mount "$ctr") || { fail "buildah could not mount $image"; exit 1; }
	[ "${SDCSCAN_TEST_RUNNER:-}" = chroot ] || echo "container_image: podman cannot run a container here:" \
		"the image's root file system under chroot instead"
	echo "container_image: chroot into $mnt (buildah mount)"
else
	echo "container_image: podman run ${pflags:-(no flags)}"
fi

# in_image [--privileged] [-v HOST:PATH]... [-e NAME=VALUE]... [--entrypoint PATH] -- ARGS...:
# the image's sdcscan (or PATH) with ARGS, the host's hostname, no network (under chroot: root's
# every privilege, always).
in_image() {
	vols= envs= entry=/usr/bin/sdcscan priv=
	while [ $# -gt 0 ]; do
		case $1 in
		--privileged) priv=--privileged; shift ;;
		-v) vols="$vols $2"; shift 2 ;;
		-e) envs="$envs $2"; shift 2 ;;
		--entrypoint) entry=$2; shift 2 ;;
		--) shift; break ;;
		esac
	done
	if [ $runner = podman ]; then
		set -- --entrypoint "$entry" "$image" "$@"
		for e in $envs; do set -- -e "$e" "$@"; done
		for v in $vols; do set -- -v "$v" "$@"; done
		# shellcheck disable=SC2086
		podman run --rm --network none --uts host $priv $pflags "$@"
	else
		unshare --mount --propagation private sh -euc '
			mnt=$1 vols=$2 envs=$3 entry=$4
			shift 4
			mount -t proc proc "$mnt/proc"
			mount --rbind /sys "$mnt/sys"
			mount --rbind /dev "$mnt/dev"
			for v in $vols; do
				h=${v%%:*} c=$mnt${v#*:}
				# (a file, or a device, is mounted on a file)
				if [ -d "$h" ]; then mkdir -p "$c"; else mkdir -p "${c%/*}" && touch "$c"; fi
				mount --bind "$h" "$c"
			done
			exec chroot "$mnt" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root $envs "$entry" "$@"
		' in_image "$mnt" "$vols" "$envs" "$entry" "$@"
	fi
}

# ---- sdcscan inside ----
in_image -- version >"$TMP/version.out" 2>&1 || fail "version: exit $?: $(cat "$TMP/version.out")"
grep -q "^sdcscan $version\$" "$TMP/version.out" || fail "version: not 'sdcscan $version' (the label's): $(head -1 "$TMP/version.out")"
gpus=$(grep '^gpus:' "$TMP/version.out")
case $module in
none) case $gpus in *"without CUDA"*) ;; *) fail "version: the image has no GPU module, yet: $gpus" ;; esac ;;
*)
	case $cudalibs in
	none*) # (--cuda-libs none: the module waits for the host's cuBLAS, and says so)
		case $gpus in *"cannot be loaded: libcublas"*) ;; *) fail "version: a module without cuBLAS, yet: $gpus" ;; esac ;;
	*) case $gpus in *"cannot be loaded"* | *"without CUDA"* | *"not installed"* | "") fail "version: the GPU module did not load: $gpus" ;; esac ;;
	esac
	path=${module%% *}
	sum=$(in_image --entrypoint /usr/bin/sha256sum -- "$path" | cut -d' ' -f1)
	[ "sha256:$sum" = "${module#* }" ] || fail "the module in the image ($path) is sha256:$sum, its label ${module#* }" ;;
esac
say "version: $(head -1 "$TMP/version.out"), $gpus"
in_image -- selftest >"$TMP/selftest.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^OK: selftest passed" "$TMP/selftest.out" || { fail "selftest: exit $rc"; tail -20 "$TMP/selftest.out" >&2; }
say "selftest: exit $rc: $(tail -1 "$TMP/selftest.out")"

if [ $full = 1 ]; then
	# As the DaemonSet runs it (packaging/container/sdcscan-daemonset.yaml): privileged, the
	# node's state, node_exporter's textfile folder (root's alone, as on a node), /sys and
	# /dev/kmsg under SDCSCAN_HOST_ROOT.
	mkdir -p -m 0755 "$TMP/state" "$TMP/textfile"
	in_image --privileged -v "$TMP/state:/var/lib/sdcscan" -v "$TMP/textfile:/textfile" -v /sys:/host/sys \
		-v /dev/kmsg:/host/dev/kmsg -e SDCSCAN_HOST_ROOT=/host -- \
		run --profile quick --duration 5 --prom /textfile/sdcscan.prom >"$TMP/quick.out" 2>&1
	rc=$?
	case $rc in 0 | 1) ;; *) fail "run --profile quick: exit $rc"; tail -20 "$TMP/quick.out" >&2 ;; esac
	host=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["hostname"])' "$TMP/state/last.json" 2>&1)
	[ "$host" = "$(hostname)" ] || fail "the report names host '$host', not this host's $(hostname)"
	# the hardware error counters read the host's, below /host (the kernel log: where this
	# host lets root read it)
	srcs=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
for s in r["run"]["environment"]["hardware_errors"]["sources"]:
    print(s["name"], s.get("path", "-"), s["read"])' "$TMP/state/last.json" 2>&1)
	echo "$srcs" | grep -q "^edac /host/sys/devices/system/edac/mc " || fail "EDAC not read below /host: $srcs"
	if dd if=/dev/kmsg of=/dev/null bs=8192 count=1 iflag=nonblock 2>/dev/null; then
		echo "$srcs" | grep -q "^kmsg /host/dev/kmsg True" || fail "the host's kernel log not read at /host/dev/kmsg: $srcs"
	fi
	grep -q "^sdcscan_verdict $rc\$" "$TMP/textfile/sdcscan.prom" 2>/dev/null ||
		fail "no sdcscan_verdict $rc in the textfile folder: $(cat "$TMP/textfile/sdcscan.prom" 2>&1 | head -3)"
	say "run --profile quick --duration 5: exit $rc: $(tail -1 "$TMP/quick.out")"

	# The node agent's round, as the DaemonSet runs it (one round: SDCSCAN_AGENT_ONCE).
	in_image -v "$TMP/state:/var/lib/sdcscan" -v "$TMP/textfile:/textfile" -e SDCSCAN_AGENT_ONCE=1 \
		-e SDCSCAN_AGENT_PROM=/textfile/agent.prom --entrypoint /usr/local/bin/sdcscan-agent -- \
		--probe gemm --set gemm.dtypes=int8 --duration 2 >"$TMP/agent.out" 2>&1
	rc=$?
	[ $rc = 0 ] && grep -q '^sdcscan_last_run_verdict 0$' "$TMP/textfile/agent.prom" 2>/dev/null ||
		{ fail "sdcscan-agent (one round): exit $rc, or not its verdict in agent.prom"; tail -5 "$TMP/agent.out" >&2; }
	say "sdcscan-agent, one round: exit $rc"
	if [ $runner = podman ]; then
		# A pod stopped mid-scan: SIGTERM to the agent (PID 1) reaches the scan, which ends
		# interrupted (UNKNOWN) with its report; the agent exits 143.
		# (a state folder of its own: a fresh last.json would make the agent wait out its interval)
		mkdir -p -m 0755 "$TMP/state2"
		# shellcheck disable=SC2086
		cid=$(podman run -d --network none --uts host $pflags -v "$TMP/state2:/var/lib/sdcscan" \
			-e SDCSCAN_AGENT_SPLAY=0 -e SDCSCAN_AGENT_PROM=/var/lib/sdcscan/agent.prom \
			--entrypoint /usr/local/bin/sdcscan-agent "$image" --probe gemm --set gemm.dtypes=int8 --duration 120)
		# stopped once the scan has begun (its start record written) and burnt a second
		for _ in $(seq 120); do [ -e "$TMP/state2/started" ] && break; sleep 0.25; done
		[ -e "$TMP/state2/started" ] || fail "the agent's scan did not start in 30 s"
		sleep 1
		podman stop -t 30 "$cid" >/dev/null
		code=$(podman inspect --format '{{.State.ExitCode}}' "$cid")
		podman rm "$cid" >/dev/null
		verdict=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["verdict"]; print(v["status"], v["summary"])' "$TMP/state2/last.json" 2>&1)
		[ "$code" = 143 ] || fail "a stopped agent exited $code, not 143"
		case $verdict in UNKNOWN*) ;; *) fail "a stopped agent's scan: verdict '$verdict', not UNKNOWN (interrupted)" ;; esac
		say "sdcscan-agent stopped mid-scan: exit $code, the scan's verdict $verdict"
	fi

	# node-problem-detector's tool: exported, then run in an empty root with only it and the
	# host's state (read-only), as NPD's container has nothing of sdcscan's.
	in_image -v "$TMP:/export" --entrypoint /usr/local/bin/sdcscan-npd-export -- /export/npd >"$TMP/export.out" 2>&1 ||
		fail "sdcscan-npd-export: $(cat "$TMP/export.out")"
	in_image -v "$TMP/state:/var/lib/sdcscan" -- status >/dev/null 2>&1
	want=$?
	r=$TMP/empty-root
	mkdir -p "$r/usr/share/sdcscan" "$r/var/lib/sdcscan" "$r/proc"
	loader=$(cd "$TMP/npd/status/lib" && ls ld-linux*)
	unshare --mount --propagation private sh -c '
		r=$1 tmp=$2 loader=$3
		mount --bind "$tmp/npd" "$r/usr/share/sdcscan"
		mount --bind "$tmp/state" "$r/var/lib/sdcscan" && mount -o remount,ro,bind "$r/var/lib/sdcscan"
		mount -t proc proc "$r/proc"
		d=/usr/share/sdcscan/status
		chroot "$r" "$d/lib/$loader" --library-path "$d/lib" "$d/bin/sdcscan" status
	' npd "$r" "$TMP" "$loader" >"$TMP/npd-status.out" 2>&1
	got=$?
	[ "$got" = "$want" ] || fail "the exported sdcscan status in an empty root: exit $got, in the image $want: $(cat "$TMP/npd-status.out")"
	SDCSCAN=$TMP/npd/status/sdcscan SDCSCAN_STATE_DIR=$TMP/state sh "$TMP/npd/npd/check-sdcscan.sh" untested >"$TMP/check.out" 2>/dev/null
	got=$?
	# untested is NonOK (1) only for UNKNOWN, which the stopped agent's scan left under podman
	case $want in 3) exp=1 ;; *) exp=0 ;; esac
	[ "$got" = "$exp" ] || fail "check-sdcscan.sh untested through the exported tool: exit $got, not $exp: $(cat "$TMP/check.out")"
	say "sdcscan-npd-export: $(du -sm "$TMP/npd" | cut -f1) MB; status in an empty root: exit $want, '$(head -1 "$TMP/npd-status.out")'"
fi
say "$runner: $([ $FAILED = 0 ] && echo passed || echo FAILED)"
exit $FAILED
