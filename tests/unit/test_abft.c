/*
 * The exact-class checksums against hand-worked numbers, then single errors located at every
 * column, double errors refused, and the fp32 rules for values that are not exact integers.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "kernels/abft_exact.h"
#include "kernels/abft_sums.h"

/* C = A * B_ext by the schoolbook loop, for the small examples here. */
static void multiply(int m, int k, int ne, const int64_t *a, const int64_t *b, int32_t *c)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < ne; j++) {
			int64_t s = 0;
			for (int p = 0; p < k; p++)
				s += a[i * k + p] * b[p * ne + j];
			c[i * ne + j] = (int32_t)s;
		}
}

int main(void)
{
	struct sdc_abft_layout l;
	int64_t d[8];

	/* Balanced base-128 digits, worked by hand: -114 = 14 + (-1) * 128. */
	sdc_abft_digits(-114, 7, 2, d);
	CHECK(d[0] == 14 && d[1] == -1);
	sdc_abft_digits(4, 7, 2, d);
	CHECK(d[0] == 4 && d[1] == 0);
	sdc_abft_digits(64, 7, 2, d); /* 64 = -64 + 1 * 128 */
	CHECK(d[0] == -64 && d[1] == 1);

	/* int8 B (|B| <= 128), n = 3: r1 reaches 384 and r2 768, two digits each (reach 8127). */
	sdc_abft_layout_init(&l, 3, 128, 7);
	CHECK(l.nd1 == 2 && l.nd2 == 2 && l.n_ext == 7);

	/* Row [127, -128, 5]: r1 = 4, r2 = 127 - 256 + 15 = -114. */
	int64_t row[7] = { 127, -128, 5 };
	sdc_abft_encode_row_i64(&l, row, row);
	CHECK(row[3] == 4 && row[4] == 0 && row[5] == 14 && row[6] == -1);

	/*
	 * A = [1 2; 3 4], B = [1 -1 2; 0 3 -2]: C = [1 5 -2; 3 9 -2].
	 * Row sums 4 and 10, weighted sums 1 + 10 - 6 = 5 and 3 + 18 - 6 = 15.
	 */
	int64_t a[4] = { 1, 2, 3, 4 };
	int64_t b[2 * 7] = { 1, -1, 2, 0, 0, 0, 0, 0, 3, -2, 0, 0, 0, 0 };
	sdc_abft_encode_row_i64(&l, b, b);
	sdc_abft_encode_row_i64(&l, b + 7, b + 7);
	int32_t c[2 * 7];
	multiply(2, 2, 7, a, b, c);
	CHECK(c[0] == 1 && c[1] == 5 && c[2] == -2 && c[7] == 3 && c[8] == 9 && c[9] == -2);
	struct sdc_abft_row r;
	sdc_abft_check_row_i32(&l, c, &r);
	CHECK(sdc_abft_row_ok(&r) && r.s1 == 4 && r.s2 == 5 && r.e1 == 4 && r.e2 == 5);
	sdc_abft_check_row_i32(&l, c + 7, &r);
	CHECK(sdc_abft_row_ok(&r) && r.s1 == 10 && r.s2 == 15);
	/* C[1][2] from -2 to 6: D1 = 8, D2 = 3 * 8 = 24, so the error sits at column 24/8 - 1 = 2. */
	c[9] = 6;
	sdc_abft_check_row_i32(&l, c + 7, &r);
	CHECK(!sdc_abft_row_ok(&r) && r.s1 - r.e1 == 8 && r.s2 - r.e2 == 24);
	CHECK(sdc_abft_locate(&l, &r) == 2);
	/* A second error in the same row: no single column. */
	c[7] = 4;
	sdc_abft_check_row_i32(&l, c + 7, &r);
	CHECK(!sdc_abft_row_ok(&r) && sdc_abft_locate(&l, &r) == -1);
	/* Two errors that cancel in the plain sum are still caught by the weighted one. */
	c[7] = 3 + 5;
	c[9] = -2 - 5;
	sdc_abft_check_row_i32(&l, c + 7, &r);
	CHECK(r.s1 == r.e1 && r.s2 != r.e2 && !sdc_abft_row_ok(&r));

	/* Every single-bit flip at every column of a wider row is detected and located. */
	enum { N = 97 };
	sdc_abft_layout_init(&l, N, 128, 7);
	int32_t big[N + 16];
	int64_t brow[N + 16];
	for (int j = 0; j < N; j++)
		brow[j] = (j * 37) % 256 - 128;
	sdc_abft_encode_row_i64(&l, brow, brow);
	for (int j = 0; j < l.n_ext; j++)
		big[j] = (int32_t)(brow[j] * 100); /* a row of C for A = [100] */
	sdc_abft_check_row_i32(&l, big, &r);
	CHECK(sdc_abft_row_ok(&r));
	int located = 0, total = 0;
	for (int j = 0; j < N; j++)
		for (int bit = 0; bit < 32; bit++) {
			big[j] ^= (int32_t)(1u << bit);
			sdc_abft_check_row_i32(&l, big, &r);
			total++;
			located += !sdc_abft_row_ok(&r) && sdc_abft_locate(&l, &r) == j;
			big[j] ^= (int32_t)(1u << bit);
		}
	CHECK_MSG(located == total, "%d of %d flips located", located, total);

	/* fp32: fractions, INF and NaN are bad values; one bad value is located, two are not. */
	float f[N + 16];
	for (int j = 0; j < l.n_ext; j++)
		f[j] = (float)big[j];
	sdc_abft_check_row_f32(&l, f, &r);
	CHECK(sdc_abft_row_ok(&r));
	const float bad[] = { 0.5f, INFINITY, -INFINITY, NAN, 3e9f };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		float keep = f[40];
		f[40] = keep + bad[i];
		sdc_abft_check_row_f32(&l, f, &r);
		CHECK(!sdc_abft_row_ok(&r) && r.nbad == 1 && r.first_bad == 40 && sdc_abft_locate(&l, &r) == 40);
		f[41] += 1.0f; /* a second, integral error in the row */
		sdc_abft_check_row_f32(&l, f, &r);
		CHECK(!sdc_abft_row_ok(&r) && sdc_abft_locate(&l, &r) == -1);
		f[41] -= 1.0f;
		f[40] = keep;
	}
	/* -0.0 never comes out of an exact dot product here: a flipped sign of a zero is caught. */
	float keep0 = f[7];
	f[7] = 0.0f;
	f[N] -= keep0; /* keep the checksums consistent with a zero at column 7 */
	sdc_abft_check_row_f32(&l, f, &r);
	CHECK(r.nbad == 0);
	f[7] = -0.0f;
	sdc_abft_check_row_f32(&l, f, &r);
	CHECK(!sdc_abft_row_ok(&r) && r.nbad == 1 && r.first_bad == 7);
	f[7] = keep0;
	f[N] += keep0;
	/* Every SIMD path of the row sums agrees with the portable one, and with a plain loop. */
	for (int len = 0; len < 300; len += 7) {
		int32_t v[300];
		int64_t want1 = 0, want2 = 0;
		for (int j = 0; j < len; j++) {
			v[j] = (int32_t)((j * 2654435761u) >> 3) - (1 << 28);
			want1 += v[j];
			want2 += (int64_t)(j + 1) * v[j];
		}
		for (int isa = 0; isa < SDC_ISA_COUNT; isa++) {
			const struct sdc_abft_sums_fns *t = sdc_abft_sums_isa((enum sdc_isa)isa);
			int64_t g1, g2;
			if (!t)
				continue;
			t->i32(v, len, &g1, &g2);
			CHECK_MSG(g1 == want1 && g2 == want2, "sums %s, n %d", sdc_isa_name((enum sdc_isa)isa), len);
		}
	}
	/* A bad checksum column: detected, pinned on no data column. */
	f[N] = 0.25f;
	sdc_abft_check_row_f32(&l, f, &r);
	CHECK(!sdc_abft_row_ok(&r) && r.first_bad == N && sdc_abft_locate(&l, &r) == -1);
	return check_done("test_abft");
}
