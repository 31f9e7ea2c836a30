#!/bin/sh
# Builds sdcscan's OCI image with buildah, from Debian's packages and sdcscan's .deb, pulling
# nothing from a container registry:
#   packaging/container/build-image.sh [OPTIONS] DEB GPU_MODULE|none
#     DEB          sdcscan's package (tools/build-deb.sh OUT_DIR makes OUT_DIR/sdcscan_*.deb)
#     GPU_MODULE   the GPU module of a CUDA build of the same tree (BUILD_DIR/src/sdcscan-gpu.so):
#                  the .deb is built without CUDA (packaging/debian/rules) and has none, so the
#                  image gets it here, in the folder the packaged binary looks in
#                  (/usr/lib/MULTIARCH/sdcscan); "none" makes a CPU-only image (its label says so)
#   --tag NAME            the image's name (default localhost/sdcscan:VERSION, VERSION the .deb's)
#   --cuda-libs DIR|none  where cuBLAS, cuBLASLt and NCCL come from (default: the folder where the
#                         module's libcublasLt.so.13 resolves on this machine, i.e. the toolkit it
#                         was linked against). The NVIDIA container toolkit brings the driver's
#                         libraries (libcuda, NVML) into a container, not these: an image without
#                         them ("none": 235 MB instead of 1.0 GB) tests no GPU unless the host's
#                         are mounted and named in LD_LIBRARY_PATH.
#   --archive FILE        also write the image as an OCI archive (podman load -i FILE)
#   --refresh             make the cached root file system again (security updates)
# Needs: root, buildah, debootstrap, dpkg-deb, and Debian's mirror on the first run. The image is
# committed to root's containers-storage (/var/lib/containers/storage), where podman finds it.
# Layers, each kept and used again while what made it is unchanged:
#   1. a root file system: debootstrap --variant=minbase bookworm with the packages the .deb
#      depends on, upgraded from bookworm-updates and bookworm-security, apt's lists removed.
#      Cached in $SDCSCAN_IMAGE_ROOTFS (default /var/cache/sdcscan-ci/image-rootfs, outside the
#      checkout; never the bare /var/cache/sdcscan-ci/rootfs that tests/gpu/rehearse.sh keeps),
#      made only when missing, when it lacks a package the .deb now depends on, or on --refresh;
#      committed as localhost/sdcscan-base:bookworm-KEY (KEY: a hash of how it was made).
#   2. the CUDA libraries, in /usr/lib/MULTIARCH/sdcscan/cuda (named in /etc/ld.so.conf.d):
#      localhost/sdcscan-base:bookworm-KEY-cuda-KEY2 (KEY2: their names, sizes and times).
#   3. sdcscan: the .deb installed with the image's own dpkg (chroot), the GPU module,
#      sdcscan-agent (the node agent's loop) and sdcscan-npd-export (for node-problem-detector)
#      in /usr/local/bin, and the configuration: entrypoint /usr/bin/sdcscan, command version,
#      volume /var/lib/sdcscan, labels (org.opencontainers.image.* and org.example.sdcscan.*:
#      the .deb's, the module's and the CUDA libraries' origins and digests).
# References: buildah-from(1), buildah-config(1), buildah-commit(1) (buildah 1.28, Debian 12);
# debootstrap(8); the label keys of the OCI image spec's annotations.md (pre-defined keys).
# Environment: SDCSCAN_IMAGE_ROOTFS (above), SDCSCAN_CI_MIRROR (default
# http://deb.debian.org/debian, as tests/gpu/rehearse.sh), SDCSCAN_IMAGE_SECURITY_MIRROR
# (default http://deb.debian.org/debian-security).
# Exit: 0 built (the last line names the image), 1 failed, 77 not root or no buildah (skipped).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: build-image.sh [--tag NAME] [--cuda-libs DIR|none] [--archive FILE] [--refresh] DEB GPU_MODULE|none"
tag= cuda=auto archive= refresh=0
while [ $# -gt 0 ]; do
	case $1 in
	--tag) tag=${2:?$usage}; shift 2 ;;
	--cuda-libs) cuda=${2:?$usage}; shift 2 ;;
	--archive) archive=${2:?$usage}; shift 2 ;;
	--refresh) refresh=1; shift ;;
	-*) echo "$usage" >&2; exit 1 ;;
	*) break ;;
	esac
done
[ $# = 2 ] || { echo "$usage" >&2; exit 1; }
deb=$1 module=$2
root=${SDCSCAN_IMAGE_ROOTFS:-/var/cache/sdcscan-ci/image-rootfs}
mirror=${SDCSCAN_CI_MIRROR:-http://deb.debian.org/debian}
security=${SDCSCAN_IMAGE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: build-image.sh needs root (debootstrap, chroot, buildah's storage)"
	exit 77
fi
command -v buildah >/dev/null || { echo "SKIP: no buildah (apt-get install buildah)"; exit 77; }
[ -f "$deb" ] || { echo "build-image: no such .deb: $deb" >&2; exit 1; }
[ "$module" = none ] || [ -f "$module" ] || { echo "build-image: no such GPU module: $module" >&2; exit 1; }
t_all=$(date +%s)
# A working container that a failure leaves behind is removed (commit --rm removes the others).
ctr=
trap '[ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1' EXIT
say() { echo "build-image: $*"; }
elapsed() { echo "$(($(date +%s) - $1)) s"; }

version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
case $arch in
amd64) multiarch=x86_64-linux-gnu ;;
arm64) multiarch=aarch64-linux-gnu ;;
*) echo "build-image: architecture $arch not supported" >&2; exit 1 ;;
esac
[ "$arch" = "$(dpkg --print-architecture)" ] || { echo "build-image: a $arch .deb on a $(dpkg --print-architecture) machine" >&2; exit 1; }
tag=${tag:-localhost/sdcscan:$version}
# The .deb's dependencies, first of each alternative, without versions (dpkg -i checks those).
deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep . | sort -u | tr '\n' ' ')

# ---- 1. the root file system, cached ----
installed() { # installed ROOT PKG: dpkg in ROOT has PKG installed
	[ "$(dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${db:Status-Status}' "$2" 2>/dev/null)" = installed ]
}
stamp=$root/.sdcscan-image-rootfs
missing=
if [ -f "$stamp" ]; then
	for p in $deps; do installed "$root" "$p" || missing="$missing $p"; done
fi
if [ ! -f "$stamp" ] || [ -n "$missing" ] || [ $refresh = 1 ]; then
	command -v debootstrap >/dev/null || { echo "build-image: no debootstrap (apt-get install debootstrap)" >&2; exit 1; }
	[ -z "$missing" ] || say "$root lacks$missing: making it again"
	t0=$(date +%s)
	rm -rf "$root.new"
	mkdir -p "$(dirname "$root")"
	log=$(dirname "$root")/image-rootfs.log
	incl=$(echo $deps | tr ' ' ',')
	debootstrap --variant=minbase --include="$incl" "$suite" "$root.new" "$mirror" >"$log" 2>&1 ||
		{ tail -20 "$log"; echo "build-image: debootstrap failed (log: $log)" >&2; exit 1; }
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$security" "$suite" >"$root.new/etc/apt/sources.list"
	cp /etc/resolv.conf "$root.new/etc/resolv.conf"
	# apt inside the new root (its own apt and keys), with /proc, in a mount namespace of its own.
	unshare --mount --propagation private sh -euc '
		mount -t proc proc "$1/proc"
		chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
			sh -euc "apt-get update && apt-get -y upgrade && apt-get clean"
	' upgrade "$root.new" >>"$log" 2>&1 || { tail -20 "$log"; echo "build-image: apt-get upgrade failed (log: $log)" >&2; exit 1; }
	# What a container runtime provides or a running system writes: not in an image.
	rm -rf "$root.new"/var/lib/apt/lists/* "$root.new"/var/cache/apt/*.bin "$root.new"/var/cache/debconf/*-old
	find "$root.new/var/log" -type f -delete
	: >"$root.new/etc/resolv.conf"
	: >"$root.new/etc/hostname"
	{
		echo "debootstrap --variant=minbase $suite $mirror, upgraded from $suite-updates and $security $suite-security"
		echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "packages: $deps"
	} >"$root.new/.sdcscan-image-rootfs"
	rm -rf "$root" && mv "$root.new" "$root"
	say "root file system $root: $(elapsed "$t0"), $(du -sm "$root" | cut -f1) MB"
fi

# image_exists NAME
image_exists() { buildah inspect --type image "$1" >/dev/null 2>&1; }
key=$(sha256sum "$stamp" | cut -c1-12)
base=localhost/sdcscan-base:$suite-$key
if ! image_exists "$base"; then
	t0=$(date +%s)
	ctr=$(buildah from scratch)
	mnt=$(buildah mount "$ctr")
	cp -a "$root/." "$mnt/"
	rm -f "$mnt/.sdcscan-image-rootfs"
	buildah umount "$ctr" >/dev/null
	buildah config --os linux --arch "$arch" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--label "org.example.sdcscan.rootfs=$(head -1 "$stamp"); $(sed -n 2p "$stamp")" "$ctr"
	buildah commit --quiet --format oci --rm "$ctr" "$base" >/dev/null
	ctr=
	say "layer 1, $base: $(elapsed "$t0")"
fi

# ---- 2. the CUDA libraries ----
cuda_note="none: this image carries no GPU module"
if [ "$module" != none ]; then
	if [ "$cuda" = auto ]; then
		lt=$(ldd "$module" 2>/dev/null | awk '$1 == "libcublasLt.so.13" && $3 ~ /^\// { print $3 }')
		cuda=none
		[ -n "$lt" ] && cuda=$(dirname "$(readlink -f "$lt")")
	fi
	cuda_note="none: cuBLAS, cuBLASLt and NCCL must come from the host (LD_LIBRARY_PATH)"
fi
if [ "$module" != none ] && [ "$cuda" != none ]; then
	libs=
	for so in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
		if [ -e "$cuda/$so" ]; then
			libs="$libs $cuda/$so"
		elif [ "$so" != libnccl.so.2 ]; then
			echo "build-image: no $so in $cuda" >&2
			exit 1
		fi
	done
	ckey=$(ls -lL --time-style=+%s $libs | awk '{ print $5, $6, $7 }' | sha256sum | cut -c1-12)
	cbase=$base-cuda-$ckey
	cdir=/usr/lib/$multiarch/sdcscan/cuda
	if ! image_exists "$cbase"; then
		t0=$(date +%s)
		ctr=$(buildah from --pull=never "$base")
		mnt=$(buildah mount "$ctr")
		mkdir -p "$mnt$cdir"
		for so in $libs; do cp -L "$so" "$mnt$cdir/"; done
		echo "$cdir" >"$mnt/etc/ld.so.conf.d/sdcscan-cuda.conf"
		chroot "$mnt" /sbin/ldconfig
		buildah umount "$ctr" >/dev/null
		buildah commit --quiet --format oci --rm "$ctr" "$cbase" >/dev/null
		ctr=
		say "layer 2, $cbase: $(elapsed "$t0"), $(du -scmL $libs | tail -1 | cut -f1) MB"
	fi
	base=$cbase
	cuda_note="$(for so in $libs; do basename "$so"; done | tr '\n' ' ')in $cdir, from $cuda"
fi

# ---- 3. sdcscan ----
t0=$(date +%s)
ctr=$(buildah from --pull=never "$base")
mnt=$(buildah mount "$ctr")
cp "$deb" "$mnt/tmp/sdcscan.deb"
# The image's own dpkg (no /proc needed); the maintainer scripts find no systemd and do nothing.
chroot "$mnt" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg -i /tmp/sdcscan.deb >"$mnt/tmp/dpkg.log" 2>&1 ||
	{ cat "$mnt/tmp/dpkg.log"; echo "build-image: dpkg -i failed (a dependency newer than $root has? --refresh)" >&2; exit 1; }
rm -f "$mnt/tmp/sdcscan.deb" "$mnt/tmp/dpkg.log"
moddir=/usr/lib/$multiarch/sdcscan
mod_note=none
if [ "$module" != none ]; then
	# The packaged binary must look where the module goes (meson.build: SDC_GPU_MODULE_DIR).
	grep -q "$moddir" "$mnt/usr/bin/sdcscan" || { echo "build-image: /usr/bin/sdcscan does not look in $moddir" >&2; exit 1; }
	install -D -m 0644 "$module" "$mnt$moddir/sdcscan-gpu.so"
	mod_note="$moddir/sdcscan-gpu.so sha256:$(sha256sum "$module" | cut -d' ' -f1)"
fi
install -m 0755 "$here/packaging/container/sdcscan-agent" "$here/packaging/container/sdcscan-npd-export" "$mnt/usr/local/bin/"
# Every library the binary and the module need is in the image (CUDA's only where carried).
nf=$(chroot "$mnt" ldd /usr/bin/sdcscan | grep 'not found' || true)
[ -z "$nf" ] || { echo "build-image: /usr/bin/sdcscan: $nf" >&2; exit 1; }
if [ "$module" != none ] && [ "$cuda" != none ]; then
	nf=$(chroot "$mnt" ldd "$moddir/sdcscan-gpu.so" | grep 'not found' || true)
	[ -z "$nf" ] || { echo "build-image: the GPU module: $nf" >&2; exit 1; }
fi
buildah umount "$ctr" >/dev/null
revision=$(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)
buildah config --entrypoint '["/usr/bin/sdcscan"]' --cmd version --volume /var/lib/sdcscan --workingdir / \
	--created-by "packaging/container/build-image.sh" \
	--label org.opencontainers.image.title=sdcscan \
	--label "org.opencontainers.image.description=$(dpkg-deb -f "$deb" Description | head -1)" \
	--label "org.opencontainers.image.version=$version" \
	--label "org.opencontainers.image.revision=$revision" \
	--label "org.opencontainers.image.source=$(dpkg-deb -f "$deb" Homepage)" \
	--label org.opencontainers.image.licenses=Apache-2.0 \
	--label "org.example.sdcscan.deb=$(basename "$deb") sha256:$(sha256sum "$deb" | cut -d' ' -f1)" \
	--label "org.example.sdcscan.gpu-module=$mod_note" \
	--label "org.example.sdcscan.cuda-libs=$cuda_note" \
	"$ctr"
old=$(buildah inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null || true)
buildah commit --quiet --format oci --rm "$ctr" "$tag" >/dev/null
ctr=
new=$(buildah inspect --type image --format '{{.FromImageID}}' "$tag")
# The image this tag named before, unless a container still uses it.
[ -z "$old" ] || [ "$old" = "$new" ] || buildah rmi "$old" >/dev/null 2>&1 || true
say "layer 3, sdcscan $version: $(elapsed "$t0")"
if [ -n "$archive" ]; then
	t0=$(date +%s)
	rm -f "$archive"
	buildah push --quiet "$tag" "oci-archive:$archive:$tag" >/dev/null
	say "archive $archive: $(elapsed "$t0"), $(du -m "$archive" | cut -f1) MB"
fi
size=$(podman image inspect --format '{{.Size}}' "$tag" 2>/dev/null || echo 0)
say "$tag: $(elapsed "$t_all") in all, $((size / 1048576)) MB; GPU module: $mod_note; CUDA libraries: $cuda_note"
echo "$tag"
