#!/bin/sh
# The exact class has one right answer: every kernel, every CPU, gives the same work digest.
# (Independent implementations, from portable C to VNNI and OpenBLAS, must agree bit for bit.)
. "$(dirname "$0")/lib.sh"

digests() { # digests DTYPE KERNEL-OPTION KERNEL -> one sha256 per CPU
	"$SDCSCAN" run -q --probe gemm --set gemm.dtypes="$1" --set gemm.iterations=16 \
		--set "gemm.$2=$3" --set gemm.m=64 --set gemm.n=96 --set gemm.k=256 --json "$TMP/d.json" >/dev/null 2>&1 \
		|| { fail "$1 $3 run failed"; return; }
	json_get "$TMP/d.json" "'\n'.join(x['work_digest']['sha256'] for x in r['results'])"
}

for pair in "int8 int8_kernel" "fp32 float_kernel"; do
	set -- $pair
	dtype=$1 opt=$2
	case $dtype in
	int8) kernels="portable avx2 avx512bw avx512vnni" ;;
	*) kernels="portable openblas" ;;
	esac
	ref=""
	for k in $kernels; do
		out=$(digests "$dtype" "$opt" "$k" 2>/dev/null)
		if [ -z "$out" ]; then
			echo "$dtype kernel $k: not available here"
			continue
		fi
		[ "$(echo "$out" | sort -u | wc -l)" -eq 1 ] || fail "$dtype $k: CPUs disagree: $out"
		d=$(echo "$out" | head -1)
		echo "$dtype kernel $k: $d"
		[ -z "$ref" ] && ref=$d
		[ "$d" = "$ref" ] || fail "$dtype kernel $k gives $d, the first kernel gave $ref"
	done
	[ -n "$ref" ] || fail "no $dtype kernel ran"
done
finish
