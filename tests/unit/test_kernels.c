/*
 * Every GEMM kernel built in and supported here against the scalar reference, on random data,
 * on extreme values (u8 127 x s8 -128 would saturate vpmaddubsw if A could exceed 127) and on
 * awkward shapes (dav1d's checkasm idea). The allreduce probe's hop checks against a plain
 * int64 reference, with wrong elements planted where the vector loop and its tail meet.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/crc32c.h"
#include "kernels/gemm_float.h"
#include "probes/gemm/gemm_int8.h"
#include "probes/allreduce/ring_check.h"
#include "probes/allreduce/ring_hd.h"
#include "base/rng.h"

struct rows_seen {
	int *times;
	int calls;
};

static void count_rows(void *arg, int r0, int r1)
{
	struct rows_seen *s = arg;
	for (int i = r0; i < r1; i++)
		s->times[i]++;
	s->calls++;
}

static void check_int8(const struct sdc_gemm_u8s8_impl *impl, int m, int n, int k, int pattern)
{
	struct sdc_i8_packed bp;
	const int lda = (k + 3) / 4 * 4;
	uint8_t *a = calloc((size_t)m * lda, 1);
	int8_t *b = malloc((size_t)k * n);
	CHECK(a && b && sdc_i8_packed_alloc(&bp, k, n) == 0);
	int32_t *c = malloc(sizeof(int32_t) * (size_t)m * bp.np);
	int64_t *ref = malloc(sizeof(int64_t) * (size_t)n);
	struct sdc_rng r = sdc_rng_make((uint64_t)(m * 31 + n * 7 + k), 0, 0, 0, (uint32_t)pattern);
	uint32_t *w = malloc(4 * ((size_t)m * k + (size_t)k * n + 8));
	sdc_rng_fill_u32(&r, 0, w, (size_t)m * k + (size_t)k * n);
	for (int i = 0; i < m; i++)
		for (int p = 0; p < k; p++)
			a[(size_t)i * lda + p] = pattern == 1 ? 127 : (uint8_t)(w[i * k + p] & 0x7F);
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = pattern == 1 ? -128 : pattern == 2 ? 127 : (int8_t)w[(size_t)m * k + i];
	sdc_i8_pack(&bp, b, n);
	memset(c, 0x5A, sizeof(int32_t) * (size_t)m * bp.np);
	struct rows_seen seen = { calloc((size_t)m, sizeof(int)), 0 };
	const struct sdc_i8_rows_done done = { count_rows, &seen };
	impl->fn(m, a, lda, &bp, c, bp.np, pattern == 2 ? &done : NULL);
	if (pattern == 2) {
		/* Every row is reported exactly once. */
		int once = 0;
		for (int i = 0; i < m; i++)
			once += seen.times[i] == 1;
		CHECK_MSG(once == m, "%s: rows_done saw %d of %d rows once", impl->name, once, m);
	}
	free(seen.times);
	int bad = 0;
	for (int i = 0; i < m; i++) {
		sdc_gemm_u8s8_row_reference(k, n, a + (size_t)i * lda, b, n, ref);
		for (int j = 0; j < n; j++)
			bad += c[(size_t)i * bp.np + j] != ref[j];
		for (int j = n; j < bp.np; j++)
			bad += c[(size_t)i * bp.np + j] != 0; /* padding columns compute to zero */
	}
	CHECK_MSG(!bad, "int8 kernel %s, %dx%dx%d pattern %d: %d wrong elements", impl->name, m, n, k, pattern, bad);
	free(a);
	free(b);
	free(c);
	free(ref);
	free(w);
	sdc_i8_packed_release(&bp);
}

static void check_fp32(const struct sdc_fgemm_impl *impl, int m, int n, int k)
{
	float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
	float *c = malloc(sizeof(float) * (size_t)m * n);
	/* Small integers: every sum is exact, so any kernel must match the int64 reference exactly. */
	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (float)((int)(i * 2654435761u % 255) - 127);
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (float)((int)(i * 40503u % 255) - 127);
	impl->sgemm(m, n, k, a, k, b, n, c, n);
	int bad = 0;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			int64_t s = 0;
			for (int p = 0; p < k; p++)
				s += (int64_t)a[(size_t)i * k + p] * (int64_t)b[(size_t)p * n + j];
			bad += (double)c[(size_t)i * n + j] != (double)s;
		}
	CHECK_MSG(!bad, "fp32 kernel %s, %dx%dx%d: %d wrong elements", impl->name, m, n, k, bad);
	free(a);
	free(b);
	free(c);
}

/* fp64 on integers below 2^53 in every partial sum: exact too. */
static void check_fp64(const struct sdc_fgemm_impl *impl, int m, int n, int k)
{
	double *a = malloc(sizeof(double) * (size_t)m * k), *b = malloc(sizeof(double) * (size_t)k * n);
	double *c = malloc(sizeof(double) * (size_t)m * n);
	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (double)((int64_t)(i * 2654435761u % 65535) - 32767);
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (double)((int64_t)(i * 40503u % 65535) - 32767);
	impl->dgemm(m, n, k, a, k, b, n, c, n);
	int bad = 0;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			int64_t s = 0;
			for (int p = 0; p < k; p++)
				s += (int64_t)a[(size_t)i * k + p] * (int64_t)b[(size_t)p * n + j];
			bad += c[(size_t)i * n + j] != (double)s;
		}
	CHECK_MSG(!bad, "fp64 kernel %s, %dx%dx%d: %d wrong elements", impl->name, m, n, k, bad);
	free(a);
	free(b);
	free(c);
}

/* The value a set of count ranks whose numbers add up to rsum must hold, in int64 then rounded
 * once: what the kernels' float arithmetic must reproduce bit for bit. */
static float ring_reference(int8_t f, int8_t g, int count, int64_t rsum)
{
	return (float)((int64_t)count * f + rsum * g);
}

static void check_ring(int64_t n, int P)
{
	int8_t *f = malloc((size_t)n + 1), *g = malloc((size_t)n + 1);
	float *got = malloc(sizeof(float) * ((size_t)n + 1)), *dst = malloc(sizeof(float) * ((size_t)n + 1));
	float *own = malloc(sizeof(float) * ((size_t)n + 1)), *sums = malloc(sizeof(float) * ((size_t)n + 1));
	CHECK(f && g && got && dst && own && sums);
	sdc_ring_terms(n, (uint64_t)P * 977, f, g);
	int fr = 0, gr = 0;
	for (int64_t i = 0; i < n; i++)
		fr += f[i] < -8 || f[i] > 8, gr += g[i] < -2 || g[i] > 2;
	CHECK_MSG(!fr && !gr, "ring terms out of range: %d f, %d g", fr, gr);
	/* every subset size from one rank to all of them, with the rank sums of a ring's segments */
	for (int count = 1; count <= P; count++) {
		const int rsum = count * (count - 1) / 2 + (P - count) * (count > 1); /* some segment's sum */
		for (int64_t i = 0; i < n; i++) {
			got[i] = ring_reference(f[i], g[i], count, rsum);
			dst[i] = own[i] = (float)(i % 7);
		}
		int64_t planted = 0;
		const int64_t at[] = { 0, 15, 16, n / 2, n - 17, n - 1 };
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]) && count % 2; k++) {
			bool seen = at[k] < 0 || at[k] >= n;
			for (size_t j = 0; j < k; j++)
				seen |= at[j] == at[k];
			if (seen)
				continue;
			uint32_t u;
			memcpy(&u, &got[at[k]], 4);
			/* a flipped sign turns +0 into -0: wrong although equal as a value */
			u ^= k % 2 ? 0x80000000u : 1u << (k + 3);
			memcpy(&got[at[k]], &u, 4);
			planted++;
		}
		const int64_t w = sdc_ring_count_wrong(got, f, g, n, count, rsum);
		CHECK_MSG(w == planted, "ring count_wrong n=%lld P=%d count=%d: %lld, planted %lld", (long long)n, P,
			  count, (long long)w, (long long)planted);
		/* the form with the CRC32C of the sums folded in, out of place (as the probe calls it) */
		uint32_t crc1;
		CHECK(sdc_ring_check_add_crc(sums, own, (const uint32_t *)got, f, g, n, count, rsum, &crc1) == planted);
		/* out of place with odd rounds, in place with even ones */
		float *const to = count % 2 ? dst : own;
		CHECK(sdc_ring_check_add(to, own, (const uint32_t *)got, f, g, n, count, rsum) == planted);
		int bad = 0;
		for (int64_t i = 0; i < n; i++) {
			const float e = ring_reference(f[i], g[i], count, rsum), want = (float)(i % 7) + e;
			bad += memcmp(&want, &to[i], 4) != 0;
			const float inl = sdc_ring_expected(f, g, i, count, rsum);
			bad += memcmp(&inl, &e, 4) != 0;
		}
		CHECK_MSG(!bad, "ring check_add n=%lld P=%d count=%d: %d wrong sums", (long long)n, P, count, bad);
		CHECK_MSG(!memcmp(sums, to, sizeof(float) * (size_t)n), "ring check_add_crc n=%lld: other sums", (long long)n);
		CHECK_MSG(crc1 == sdc_crc32c(0, sums, (size_t)n * 4), "ring check_add_crc n=%lld P=%d: CRC of the sums",
			  (long long)n, P);
		/* the first wrong element, and putting every wrong one right */
		int64_t lowest = -1;
		for (int64_t i = 0; i < n && lowest < 0; i++) {
			const float e = ring_reference(f[i], g[i], count, rsum);
			if (memcmp(&e, &got[i], 4))
				lowest = i;
		}
		float first_got = 0;
		CHECK(sdc_ring_first_wrong(got, f, g, n, count, rsum, false, &first_got) == lowest);
		CHECK(lowest < 0 || memcmp(&first_got, &got[lowest], 4) == 0);
		const float before = lowest >= 0 ? got[lowest] : 0;
		CHECK(sdc_ring_first_wrong(got, f, g, n, count, rsum, true, &first_got) == lowest);
		CHECK(lowest < 0 || memcmp(&first_got, &before, 4) == 0); /* the value before the repair */
		CHECK(sdc_ring_count_wrong(got, f, g, n, count, rsum) == 0);
	}
	free(f), free(g), free(got), free(dst), free(own), free(sums);
}

/*
 * The ring's link attribution, without MPI: a chunk built as a sender builds it, sent through a
 * "wire" that may change it, judged as the receiver judges it (the value check, then the hop
 * verdict). A flip on the wire is the link's; wrong values under a right CRC are the sender's; a
 * damaged or stale header is the link's; a clean hop is nobody's.
 */
static void check_hop_attribution(void)
{
	enum { N = 1000, P = 5, COUNT = 3, RSUM = 1 + 2 + 3 };
	static int8_t f[N], g[N];
	static float sent[N], wire[N];
	sdc_ring_terms(N, 42, f, g);
	for (int64_t i = 0; i < N; i++)
		sent[i] = sdc_ring_expected(f, g, i, COUNT, RSUM);
	const uint32_t step = 1u << 16 | 2; /* all-gather, step 2 */
	struct {
		const char *name;
		int flip_after_crc, flip_before_crc; /* element whose bit 20 flips, -1: none */
		uint32_t header_xor, header_step;
		enum sdc_hop_fault want;
	} cases[] = {
		{ "clean", -1, -1, 0, step, SDC_HOP_OK },
		{ "payload flipped on the wire", 333, -1, 0, step, SDC_HOP_LINK },
		{ "sign flipped on the wire", N - 1, -1, 0, step, SDC_HOP_LINK },
		{ "sender's wrong value, CRC taken of it", -1, 17, 0, step, SDC_HOP_SENDER },
		{ "header's CRC word flipped on the wire", -1, -1, 1u << 3, step, SDC_HOP_LINK },
		{ "a stale chunk (another step's header)", -1, -1, 0, step - 1, SDC_HOP_LINK },
		{ "sender wrong and the wire flips another", 400, 17, 0, step, SDC_HOP_LINK },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(wire, sent, sizeof(wire));
		uint32_t u;
		if (cases[c].flip_before_crc >= 0) {
			memcpy(&u, &wire[cases[c].flip_before_crc], 4);
			u ^= 1u << 20;
			memcpy(&wire[cases[c].flip_before_crc], &u, 4);
		}
		uint32_t header[3];
		sdc_ring_hop_header(header, sdc_crc32c(0, wire, sizeof(wire)), cases[c].header_step);
		header[0] ^= cases[c].header_xor;
		if (cases[c].flip_after_crc >= 0) {
			const int e = cases[c].flip_after_crc;
			memcpy(&u, &wire[e], 4);
			u ^= e == N - 1 ? 0x80000000u : 1u << 20;
			memcpy(&wire[e], &u, 4);
		}
		const int64_t nbad = sdc_ring_count_wrong(wire, f, g, N, COUNT, RSUM);
		const int64_t planted = (cases[c].flip_after_crc >= 0) + (cases[c].flip_before_crc >= 0);
		CHECK_MSG(nbad == planted, "hop %s: %lld wrong elements, %lld planted", cases[c].name, (long long)nbad,
			  (long long)planted);
		struct sdc_hop_verdict v;
		sdc_ring_hop_verdict(header, step, wire, sizeof(wire), nbad, &v);
		CHECK_MSG(v.fault == cases[c].want, "hop %s: verdict %d, want %d", cases[c].name, v.fault, cases[c].want);
		CHECK_MSG(v.header_ok == (cases[c].header_xor == 0 && cases[c].header_step == step), "hop %s: header %s",
			  cases[c].name, v.header_ok ? "ok" : "bad");
		CHECK_MSG(v.crc == sdc_crc32c(0, wire, sizeof(wire)), "hop %s: the CRC reported is not the chunk's",
			  cases[c].name);
	}
}

/*
 * The GPU's hop arithmetic (ring_hd.h: the same source the CUDA kernels compile) against the CPU's
 * own kernels: CRC32C one byte at a time and in pieces joined as the GPU joins them, against the
 * SSE4.2 / slicing CRC; each element's check-add against sdc_ring_check_add_crc.
 */
static void check_ring_twins(void)
{
	enum { MAX = 70000 };
	uint8_t *buf = malloc(MAX);
	CHECK(buf != NULL);
	if (!buf)
		return;
	const struct sdc_rng r = sdc_rng_make(5, SDC_RNG_PROBE_ALLREDUCE, 9, 0, 0);
	for (int i = 0; i < MAX; i++)
		buf[i] = (uint8_t)sdc_rng_below(&r, (uint64_t)i, 256);
	static const int lens[] = { 0, 1, 3, 8, 63, 64, 65, 1000, 4095, 4096, 4097, 12289, MAX };
	static const int segs[] = { 1, 7, 64, 1024, 4096 };
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		const uint64_t len = (uint64_t)lens[l];
		const uint32_t want = sdc_crc32c(0, buf, len);
		CHECK_MSG(sdc_crc32c_hd(0, buf, len) == want, "crc32c_hd of %d bytes", lens[l]);
		for (size_t sg = 0; sg < sizeof(segs) / sizeof(segs[0]) && len; sg++) {
			const uint64_t seg = (uint64_t)segs[sg], n0 = (len + seg - 1) / seg;
			uint32_t *crc = malloc(n0 * 4), *c2 = malloc(n0 * 4);
			uint64_t *ln = malloc(n0 * 8), *l2 = malloc(n0 * 8);
			if (!crc || !c2 || !ln || !l2) {
				free(crc), free(c2), free(ln), free(l2);
				CHECK(false);
				continue;
			}
			for (uint64_t s = 0; s < n0; s++)
				sdc_crc32c_piece(buf, len, seg, s, &crc[s], &ln[s]);
			for (int64_t n = (int64_t)n0; n > 1; n = (n + 1) / 2) {
				for (int64_t i = 0; i < (n + 1) / 2; i++)
					sdc_crc32c_join(crc, ln, n, i, &c2[i], &l2[i]);
				memcpy(crc, c2, (size_t)(n + 1) / 2 * 4);
				memcpy(ln, l2, (size_t)(n + 1) / 2 * 8);
			}
			CHECK_MSG(crc[0] == want && ln[0] == len, "crc32c of %d bytes in pieces of %d: %08x, want %08x",
				  lens[l], segs[sg], crc[0], want);
			free(crc), free(c2), free(ln), free(l2);
		}
	}
	free(buf);
	/* the check-add, element by element, against the CPU's fused loop; wrong elements planted */
	enum { N = 5000 };
	int8_t f[N], g[N];
	float own[N], dst[N], dst_hd[N];
	uint32_t got[N];
	for (int P = 2; P <= 2896; P = P * 7 + 3)
		for (int count = 1; count < P; count += P / 3 + 1) {
			const int rsum = count * (count - 1) / 2 + (P - count);
			sdc_ring_terms(N, (uint64_t)P * 31 + (uint64_t)count, f, g);
			sdc_ring_values(own, N, 1, f, g);
			for (int i = 0; i < N; i++) {
				const float e = sdc_ring_expected(f, g, i, count, rsum);
				memcpy(&got[i], &e, 4);
				if (i % 997 == 13)
					got[i] ^= 1u << (i % 32);
			}
			uint32_t crc = 0;
			const int64_t nbad = sdc_ring_check_add_crc(dst, own, got, f, g, N, count, rsum, &crc);
			int64_t nbad_hd = 0;
			for (int i = 0; i < N; i++)
				nbad_hd += sdc_ring_check_add_one(&dst_hd[i], own[i], got[i], f[i], g[i], count, rsum);
			CHECK_MSG(nbad_hd == nbad && nbad == 6 && !memcmp(dst, dst_hd, sizeof(dst)) &&
					  sdc_crc32c_hd(0, (const uint8_t *)dst_hd, sizeof(dst_hd)) == crc,
				  "check-add twin, %d ranks, count %d: %lld wrong (CPU %lld)", P, count, (long long)nbad_hd,
				  (long long)nbad);
		}
}

/*
 * NCCL's native collectives' data (ring_hd.h, what the GPU and the fake module check against): each
 * rank's inputs summed in int64 as each collective defines its output, against sdc_coll_expect, bit
 * for bit; and nccl-tests' busbw factors (doc/PERFORMANCE.md) for 8 ranks.
 */
static void check_collectives(void)
{
	static const char ops[] = { 'A', 'R', 'G' };
	static const int ranks[] = { 2, 3, 8, 61 };
	for (size_t o = 0; o < 3; o++)
		for (size_t pi = 0; pi < sizeof(ranks) / sizeof(ranks[0]); pi++) {
			const int P = ranks[pi];
			const int64_t n = (int64_t)P * 37;
			const int64_t cn = n / P;
			const char op = ops[o];
			const uint32_t salt = sdc_ring_salt((uint64_t)P * 5 + o);
			CHECK(sdc_coll_in_count(op, n, P) == (op == 'G' ? cn : n) &&
			      sdc_coll_out_count(op, n, P) == (op == 'R' ? cn : n));
			int64_t bad = 0;
			for (int r = 0; r < P; r += P / 3 + 1)
				for (int64_t i = 0; i < sdc_coll_out_count(op, n, P); i++) {
					int64_t want = 0;
					if (op == 'G') /* chunk q of the output is rank q's input */
						want = (int64_t)sdc_coll_input(op, i % cn, (int)(i / cn), P, n, salt);
					else
						for (int q = 0; q < P; q++)
							want += (int64_t)sdc_coll_input(op, op == 'R' ? i + r * cn : i, q, P, n, salt);
					const float e = sdc_coll_expect(op, i, r, P, n, salt), w = (float)want;
					bad += memcmp(&e, &w, 4) != 0;
				}
			CHECK_MSG(!bad, "collective %c, %d ranks: %lld expected values differ from the inputs' sums", op, P,
				  (long long)bad);
		}
	CHECK(sdc_coll_bus_factor('A', 8) == 1.75 && sdc_coll_bus_factor('R', 8) == 0.875 &&
	      sdc_coll_bus_factor('G', 8) == 0.875);
}

int main(void)
{
	static const int shapes[][3] = { { 1, 1, 4 },   { 1, 16, 4 },    { 6, 64, 4 },   { 7, 65, 9 },
					 { 13, 80, 96 }, { 96, 200, 257 }, { 100, 37, 13 }, { 200, 130, 1100 } };
	int tested = 0;
	for (const struct sdc_gemm_u8s8_impl *impl = sdc_gemm_u8s8_impls; impl->name; impl++) {
		if (!impl->supported()) {
			printf("int8 kernel %s: not supported on this CPU, skipped\n", impl->name);
			continue;
		}
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (int pattern = 0; pattern < 3; pattern++)
				check_int8(impl, shapes[s][0], shapes[s][1], shapes[s][2], pattern);
		tested++;
	}
	CHECK(tested >= 1);
	CHECK(sdc_gemm_u8s8_find("auto") != NULL);
	CHECK(sdc_gemm_u8s8_find("nosuch") == NULL);
	for (const struct sdc_fgemm_impl *impl = sdc_fgemm_impls; impl->name; impl++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			if (shapes[s][2] <= 257) /* keep k * 127 * 127 below 2^24 */
				check_fp32(impl, shapes[s][0], shapes[s][1], shapes[s][2]);
			check_fp64(impl, shapes[s][0], shapes[s][1], shapes[s][2]);
		}
	/* around the fused kernel's blocks of 3 x 1024 elements too */
	static const int64_t ring_n[] = { 1, 15, 16, 17, 100, 3071, 3072, 3088, 4099, 2 * 3072, 3 * 3072 + 21 };
	for (size_t i = 0; i < sizeof(ring_n) / sizeof(ring_n[0]); i++)
		check_ring(ring_n[i], 4);
	check_ring(1000, 64);
	check_ring(300, 2896); /* the most ranks the kernels' fp32 arithmetic is exact for */
	check_hop_attribution();
	check_ring_twins();
	check_collectives();
	return check_done("test_kernels");
}
