/*
 * Every operation of minitrain's steps except the GEMM (mt_dlrm.c, mt_xfmr.c), written once for
 * the CPU and the GPU as "threads": an operation is a struct sdc_mt_op of n threads, and thread t
 * computes its own outputs in full, in the fixed order the models define, from inputs no other
 * thread of the operation writes. So the result does not depend on which threads run when:
 *   - on the CPU, sdc_mt_op_run_host runs threads 0 .. n - 1 in one sdc_mt_op_range;
 *   - on a GPU, probes/minitrain/minitrain.cu launches one CUDA thread per t, calling the same
 *     function for the range [t, t + 1) (sdc_mt_op_thread), compiled for the device;
 * and both get the same bits: every float operation is an xops.h macro (a correctly rounded
 * IEEE-754 + - * / or sqrt, never fused: the _rn intrinsics on the device, -ffp-contract=off on the
 * host), exp and log are sdc_xexp and sdc_xlog, there are no atomics and no reductions across
 * threads. tests/unit/test_mt_ops.c runs every operation with its threads in other orders and
 * checks the bits do not move (a thread reading another's output would), and the golden suite
 * checks the CPU's trajectories, recorded before these functions existed, still hold.
 *
 * Matrices are row-major; "ld" is a row's length in elements.
 */
#ifndef SDC_MT_OPS_H
#define SDC_MT_OPS_H

#include <stdint.h>

#include "base/hd.h"
#include "kernels/xops.h"

enum sdc_mt_opcode {
	SDC_MT_OP_TRANSPOSE,    /* x (n x m, ld i3) = a^T (a: m = i0 x n = i1, ld i2); thread: one element */
	SDC_MT_OP_COPY2D,       /* x (ld i3) = a (ld i2), i0 rows x i1 cols; thread: one element */
	SDC_MT_OP_ADD_BIAS,     /* x[r][c] += a[c], i0 x i1 */
	SDC_MT_OP_RELU,         /* x = max(x, 0) */
	SDC_MT_OP_RELU_MASK,    /* x = 0 where a (the ReLU's output) is 0 */
	SDC_MT_OP_COLSUM,       /* x[c] = sum over rows r of a[r][c], i0 x i1; thread: one column */
	SDC_MT_OP_SGD,          /* x -= f0 a */
	SDC_MT_OP_ADD,          /* x = a + b (x may be a) */
	/* dlrm */
	SDC_MT_OP_EMB_POOL,     /* x[b][j] = sum of the bag's rows of table a (idx ia, off ib, len ic); B i0, E i1 */
	SDC_MT_OP_INTERACT,     /* x (B x NI) = [z0, dots of the pairs]: a z0, b the pooled bags; B i0, E i1, T i2, NI i3 */
	SDC_MT_OP_INTERACT_BACK,/* x (T + 1 vectors of B x E) = the gradients of z0 and the bags from c (B x NI) */
	SDC_MT_OP_LOGISTIC,     /* one thread: x dlogit, y[0] the loss, from a logits, b labels, c[0] the bias; B i0 */
	SDC_MT_OP_EMB_GRAD,     /* x (a table's gradient) rows ib[i] += the bags ic[ia[i] .. ia[i+1]) of a; E i0 */
	SDC_MT_OP_ADAGRAD,      /* rows ia[i] of x (weights), y (state), z (gradient, zeroed); E i0; lr f0, eps f1 */
	/* xfmr */
	SDC_MT_OP_LAYER_NORM,   /* rows of a (i0 x i1): x xh, y rstd, z = xh b + c; eps f0; thread: one row */
	SDC_MT_OP_LN_BACK_PARAMS, /* x dg, y db from a dout, b xh; i0 x i1; thread: one column */
	SDC_MT_OP_LN_BACK_X,    /* x += the input's gradient from a dout, b xh, c rstd, d g; thread: one row */
	SDC_MT_OP_SOFTMAX,      /* x rows = softmax(a rows f0); i0 x i1; thread: one row */
	SDC_MT_OP_SOFTMAX_BACK, /* x = a (P) (b (dP) - rowsum(b a)) f0; i0 x i1; thread: one row */
	SDC_MT_OP_MSE_GRAD,     /* x = a + b; y = 2 (x - c) f0 */
	SDC_MT_OP_MSE_LOSS,     /* one thread: x[0] = f0 sum of (a - b)^2 over i0 elements, in order */
	SDC_MT_OP_ADAM,         /* x weights, y m, z v from a gradients; f: lr, beta1, beta2, eps, 1-beta1, 1-beta2, bc1, bc2 */
	/* ATTNChecker's checksums (attn_check.h) */
	SDC_MT_OP_ATTN_ASUMS,   /* da[0..k) 1^T A, [k..2k) w^T A, [2k..3k) 1^T|A|; A: a, m i0, k i1, ld i2; thread: one p */
	SDC_MT_OP_ATTN_CSUMS,   /* db[j], db[n + j], db[2n + j]: d1, d2 and the bound of column j; m i0, n i1, k i2,
				 * B: b (ld i3), C: c (ld i4), da the A sums; thread: one column */
	SDC_MT_NOPS,
};

struct sdc_mt_op {
	int code;
	long n; /* threads */
	int i[6];
	float f[8];
	const float *a, *b, *c, *d;
	float *x, *y, *z;
	const int32_t *ia, *ib, *ic;
	double *da, *db;
};

/* The vector k (0: z0, k > 0: table k - 1's pooled bags) of sample bb, as the interaction sees it. */
SDC_HD const float *sdc_mt_ivec(const float *z0, const float *bags, int B, int E, int k, int bb)
{
	return k == 0 ? z0 + (long)bb * E : bags + ((long)(k - 1) * B + bb) * E;
}

/* mt_dlrm.c's interaction: column p of sample bb, [z0, v_i . v_j for i < j in order]. */
SDC_HD void sdc_mt_interact(const struct sdc_mt_op *o, long t)
{
	const int B = o->i[0], E = o->i[1], T = o->i[2], NI = o->i[3];
	const int bb = (int)(t / NI), p = (int)(t % NI);
	if (p < E) {
		o->x[t] = o->a[(long)bb * E + p];
		return;
	}
	int q = E;
	for (int i = 0; i <= T; i++)
		for (int j = i + 1; j <= T; j++, q++) {
			if (q != p)
				continue;
			const float *vi = sdc_mt_ivec(o->a, o->b, B, E, i, bb), *vj = sdc_mt_ivec(o->a, o->b, B, E, j, bb);
			float s = 0.0f;
			for (int e = 0; e < E; e++)
				s = sdc_xmac(s, vi[e], vj[e]);
			o->x[t] = s;
			return;
		}
}

/* The interaction's backward: element q of vector k of sample bb; dz0 starts from the passed-through
 * z0 columns, the bags from +0, then every pair that holds k adds its part, pairs in the forward order. */
SDC_HD void sdc_mt_interact_back_at(const struct sdc_mt_op *o, int k, int bb, int q)
{
	const int B = o->i[0], E = o->i[1], T = o->i[2], NI = o->i[3];
	const float *tb = o->c + (long)bb * NI;
	float acc = k == 0 ? tb[q] : 0.0f;
	int p = E;
	for (int i = 0; i <= T; i++)
		for (int j = i + 1; j <= T; j++, p++) {
			if (i == k)
				acc = sdc_xmac(acc, tb[p], sdc_mt_ivec(o->a, o->b, B, E, j, bb)[q]);
			else if (j == k)
				acc = sdc_xmac(acc, tb[p], sdc_mt_ivec(o->a, o->b, B, E, i, bb)[q]);
		}
	o->x[((long)k * B + bb) * E + q] = acc;
}

/* The logistic loss over the batch and each logit's gradient: max(l, 0) - l y + log(1 + exp(-|l|)),
 * and the sigmoid from the same exp (l >= 0: 1 / (1 + e^-l); else e^l / (1 + e^l)). One thread:
 * the loss is a sum in batch order. */
SDC_HD void sdc_mt_logistic(const struct sdc_mt_op *o)
{
	const int B = o->i[0];
	const float inv_b = SDC_XDIV(1.0f, (float)B);
	float loss = 0.0f;
	for (int b = 0; b < B; b++) {
		const float l = SDC_XADD(o->a[b], o->c[0]), yb = o->b[b];
		const double el = sdc_xexp(-fabs((double)l));
		const double lin = SDC_XSUBD((double)(l > 0.0f ? l : 0.0f), SDC_XMULD((double)l, (double)yb));
		const float lb = (float)SDC_XADDD(lin, sdc_xlog(SDC_XADDD(1.0, el)));
		loss = SDC_XADD(loss, lb);
		const float p = (float)(l >= 0.0f ? SDC_XDIVD(1.0, SDC_XADDD(1.0, el)) : SDC_XDIVD(el, SDC_XADDD(1.0, el)));
		o->x[b] = SDC_XMUL(SDC_XSUB(p, yb), inv_b);
	}
	o->y[0] = SDC_XMUL(loss, inv_b);
}

/* Layer norm of one row: xh = (x - mean) / sqrt(var + eps); out = xh g + b. */
SDC_HD void sdc_mt_layer_norm(const struct sdc_mt_op *o, long i)
{
	const int d = o->i[1];
	const float inv_d = SDC_XDIV(1.0f, (float)d);
	const float *r = o->a + i * d;
	float mean = 0.0f, var = 0.0f;
	for (int j = 0; j < d; j++)
		mean = SDC_XADD(mean, r[j]);
	mean = SDC_XMUL(mean, inv_d);
	for (int j = 0; j < d; j++) {
		const float c = SDC_XSUB(r[j], mean);
		var = sdc_xmac(var, c, c);
	}
	var = SDC_XMUL(var, inv_d);
	const float rs = SDC_XDIV(1.0f, SDC_XSQRT(SDC_XADD(var, o->f[0])));
	o->y[i] = rs;
	for (int j = 0; j < d; j++) {
		const float v = SDC_XMUL(SDC_XSUB(r[j], mean), rs);
		o->x[i * d + j] = v;
		o->z[i * d + j] = SDC_XADD(SDC_XMUL(v, o->b[j]), o->c[j]);
	}
}

/* The layer norm's input gradient for one row, added to x: rstd (dxh - mean(dxh) - xh mean(dxh xh)). */
SDC_HD void sdc_mt_ln_back_x(const struct sdc_mt_op *o, long i)
{
	const int d = o->i[1];
	const float inv_d = SDC_XDIV(1.0f, (float)d);
	const float *dr = o->a + i * d, *xr = o->b + i * d, *g = o->d;
	float m1 = 0.0f, m2 = 0.0f;
	for (int j = 0; j < d; j++) {
		const float dxh = SDC_XMUL(dr[j], g[j]);
		m1 = SDC_XADD(m1, dxh);
		m2 = sdc_xmac(m2, dxh, xr[j]);
	}
	m1 = SDC_XMUL(m1, inv_d), m2 = SDC_XMUL(m2, inv_d);
	for (int j = 0; j < d; j++) {
		const float dxh = SDC_XMUL(dr[j], g[j]);
		const float v = SDC_XSUB(SDC_XSUB(dxh, m1), SDC_XMUL(xr[j], m2));
		o->x[i * d + j] = SDC_XADD(o->x[i * d + j], SDC_XMUL(o->c[i], v));
	}
}

/* Softmax of one row of a scaled by f0, from sdc_xexp: max first, then exp(v - max), then / sum. */
SDC_HD void sdc_mt_softmax(const struct sdc_mt_op *o, long i)
{
	const int T = o->i[1];
	const float scale = o->f[0], *si = o->a + i * T;
	float *pi = o->x + i * T;
	float mx = SDC_XMUL(si[0], scale);
	for (int j = 1; j < T; j++) {
		const float v = SDC_XMUL(si[j], scale);
		mx = v > mx ? v : mx;
	}
	float sum = 0.0f;
	for (int j = 0; j < T; j++) {
		pi[j] = (float)sdc_xexp((double)SDC_XSUB(SDC_XMUL(si[j], scale), mx));
		sum = SDC_XADD(sum, pi[j]);
	}
	for (int j = 0; j < T; j++)
		pi[j] = SDC_XDIV(pi[j], sum);
}

/* dS = P (dP - rowsum(dP P)) scale, one row. */
SDC_HD void sdc_mt_softmax_back(const struct sdc_mt_op *o, long i)
{
	const int T = o->i[1];
	const float *pi = o->a + i * T, *dpi = o->b + i * T;
	float dot = 0.0f;
	for (int j = 0; j < T; j++)
		dot = sdc_xmac(dot, dpi[j], pi[j]);
	for (int j = 0; j < T; j++)
		o->x[i * T + j] = SDC_XMUL(SDC_XMUL(pi[j], SDC_XSUB(dpi[j], dot)), o->f[0]);
}

/* One element of Adam: m and v from the gradient, then the bias-corrected step. */
SDC_HD void sdc_mt_adam(const struct sdc_mt_op *o, long j)
{
	const float *f = o->f, g = o->a[j];
	const float mm = SDC_XADD(SDC_XMUL(f[1], o->y[j]), SDC_XMUL(f[4], g));
	const float vv = SDC_XADD(SDC_XMUL(f[2], o->z[j]), SDC_XMUL(f[5], SDC_XMUL(g, g)));
	o->y[j] = mm, o->z[j] = vv;
	const float mh = SDC_XDIV(mm, f[6]), vh = SDC_XDIV(vv, f[7]);
	o->x[j] = SDC_XSUB(o->x[j], SDC_XDIV(SDC_XMUL(f[0], mh), SDC_XADD(SDC_XSQRT(vh), f[3])));
}

/* ATTNChecker's checksums of A's column p: 1^T A, w^T A (w = 1, 2, ..., m) and 1^T |A|, in double. */
SDC_HD void sdc_mt_attn_asums(const struct sdc_mt_op *o, long p)
{
	const int m = o->i[0], k = o->i[1], lda = o->i[2];
	double s1 = 0.0, sw = 0.0, sa = 0.0;
	for (int i = 0; i < m; i++) {
		const double v = (double)o->a[(long)i * lda + p];
		s1 = SDC_XADDD(s1, v);
		sw = SDC_XADDD(sw, SDC_XMULD((double)(i + 1), v));
		sa = SDC_XADDD(sa, fabs(v));
	}
	o->da[p] = s1, o->da[k + p] = sw, o->da[2 * k + p] = sa;
}

/* Column j: the checksums carried through B, less C's column sums: d1, d2, and the rounding bound
 * (k + 2) u (1^T|A|)|B| of an fp32 k-term sum (attn_check.h). */
SDC_HD void sdc_mt_attn_csums(const struct sdc_mt_op *o, long j)
{
	const int m = o->i[0], n = o->i[1], k = o->i[2], ldb = o->i[3], ldc = o->i[4];
	const double *s1 = o->da, *sw = s1 + k, *sa = sw + k;
	double e1 = 0.0, ew = 0.0, ea = 0.0;
	for (int p = 0; p < k; p++) {
		const double br = (double)o->b[(long)p * ldb + j];
		e1 = SDC_XADDD(e1, SDC_XMULD(s1[p], br));
		ew = SDC_XADDD(ew, SDC_XMULD(sw[p], br));
		ea = SDC_XADDD(ea, SDC_XMULD(sa[p], fabs(br)));
	}
	for (int i = 0; i < m; i++) {
		const double cr = (double)o->c[(long)i * ldc + j];
		e1 = SDC_XSUBD(e1, cr);
		ew = SDC_XSUBD(ew, SDC_XMULD((double)(i + 1), cr));
	}
	const double rel = SDC_XMULD((double)(k + 2), 0x1p-24);
	o->db[j] = -e1, o->db[n + j] = -ew, o->db[2 * n + j] = SDC_XADDD(SDC_XMULD(rel, ea), 0x1p-100);
}

/* Thread t of an operation whose threads each own their outputs wherever they lie (the others
 * are in sdc_mt_op_range). */
SDC_HD void sdc_mt_op_one(const struct sdc_mt_op *o, long t)
{
	switch (o->code) {
	case SDC_MT_OP_TRANSPOSE: {
		const long r = t / o->i[1], c = t % o->i[1];
		o->x[c * o->i[3] + r] = o->a[r * o->i[2] + c];
		break;
	}
	case SDC_MT_OP_COPY2D: {
		const long r = t / o->i[1], c = t % o->i[1];
		o->x[r * o->i[3] + c] = o->a[r * o->i[2] + c];
		break;
	}
	case SDC_MT_OP_INTERACT:
		sdc_mt_interact(o, t);
		break;
	case SDC_MT_OP_LOGISTIC:
		sdc_mt_logistic(o);
		break;
	case SDC_MT_OP_LAYER_NORM:
		sdc_mt_layer_norm(o, t);
		break;
	case SDC_MT_OP_LN_BACK_PARAMS: {
		float dg = 0.0f, db = 0.0f;
		for (long r = 0; r < o->i[0]; r++) {
			const float dr = o->a[r * o->i[1] + t];
			dg = sdc_xmac(dg, dr, o->b[r * o->i[1] + t]);
			db = SDC_XADD(db, dr);
		}
		o->x[t] = dg, o->y[t] = db;
		break;
	}
	case SDC_MT_OP_LN_BACK_X:
		sdc_mt_ln_back_x(o, t);
		break;
	case SDC_MT_OP_SOFTMAX:
		sdc_mt_softmax(o, t);
		break;
	case SDC_MT_OP_SOFTMAX_BACK:
		sdc_mt_softmax_back(o, t);
		break;
	case SDC_MT_OP_MSE_GRAD: {
		const float x2 = SDC_XADD(o->a[t], o->b[t]);
		o->x[t] = x2;
		o->y[t] = SDC_XMUL(SDC_XMUL(2.0f, SDC_XSUB(x2, o->c[t])), o->f[0]);
		break;
	}
	case SDC_MT_OP_MSE_LOSS: {
		float loss = 0.0f;
		for (long e = 0; e < o->i[0]; e++) {
			const float d = SDC_XSUB(o->a[e], o->b[e]);
			loss = sdc_xmac(loss, d, d);
		}
		o->x[0] = SDC_XMUL(loss, o->f[0]);
		break;
	}
	case SDC_MT_OP_ADAM:
		sdc_mt_adam(o, t);
		break;
	case SDC_MT_OP_ATTN_ASUMS:
		sdc_mt_attn_asums(o, t);
		break;
	case SDC_MT_OP_ATTN_CSUMS:
		sdc_mt_attn_csums(o, t);
		break;
	default:
		break;
	}
}


/*
 * Threads [t0, t1) of o: the CPU takes them all at once, a GPU's thread t takes [t, t + 1). Where
 * consecutive threads are consecutive columns of one row (a bag's or a table row's elements, a
 * column sum's columns), the loops put the columns innermost, so on the CPU they vectorise; each
 * element is still summed in its own thread's order into its own output (a float in memory holds
 * what a register would), so any split of the range gives the same bits (tests/unit/test_mt_ops.c
 * runs the threads one by one in several orders and the whole range, and compares). The elementwise
 * operations are plain loops here; the others go thread by thread (sdc_mt_op_one).
 */
SDC_HD void sdc_mt_op_range(const struct sdc_mt_op *o, long t0, long t1)
{
	float *x = o->x;
	const float *a = o->a;
	switch (o->code) {
	case SDC_MT_OP_ADD_BIAS: {
		const long cols = o->i[1];
		for (long t = t0; t < t1; t++)
			x[t] = SDC_XADD(x[t], a[t % cols]);
		return;
	}
	case SDC_MT_OP_RELU:
		for (long t = t0; t < t1; t++)
			x[t] = x[t] > 0.0f ? x[t] : 0.0f;
		return;
	case SDC_MT_OP_RELU_MASK:
		for (long t = t0; t < t1; t++)
			x[t] = a[t] > 0.0f ? x[t] : 0.0f;
		return;
	case SDC_MT_OP_SGD: {
		const float lr = o->f[0];
		for (long t = t0; t < t1; t++)
			x[t] = SDC_XSUB(x[t], SDC_XMUL(lr, a[t]));
		return;
	}
	case SDC_MT_OP_ADD:
		for (long t = t0; t < t1; t++)
			x[t] = SDC_XADD(a[t], o->b[t]);
		return;
	case SDC_MT_OP_COLSUM: {
		const long rows = o->i[0], cols = o->i[1];
		for (long c = t0; c < t1; c++)
			x[c] = 0.0f;
		for (long r = 0; r < rows; r++)
			for (long c = t0; c < t1; c++)
				x[c] = SDC_XADD(x[c], a[r * cols + c]);
		return;
	}
	case SDC_MT_OP_INTERACT_BACK: {
		/* (the thread's coordinates counted up rather than divided out of t) */
		const int B = o->i[0], E = o->i[1];
		int k = (int)(t0 / ((long)B * E)), bb = (int)(t0 / E % B), q = (int)(t0 % E);
		for (long t = t0; t < t1; t++) {
			sdc_mt_interact_back_at(o, k, bb, q);
			if (++q == E && (q = 0, ++bb == B))
				bb = 0, k++;
		}
		return;
	}
	case SDC_MT_OP_ADAGRAD: {
		const long E = o->i[0];
		const float lr = o->f[0], eps = o->f[1];
		for (long t = t0; t < t1;) {
			const long j0 = t % E, j1 = j0 + (t1 - t) < E ? j0 + (t1 - t) : E, row = (long)o->ia[t / E] * E;
			float *w = x + row, *st = o->y + row, *g = o->z + row;
			for (long j = j0; j < j1; j++) {
				const float gj = g[j], sj = sdc_xmac(st[j], gj, gj);
				st[j] = sj;
				w[j] = SDC_XSUB(w[j], SDC_XDIV(SDC_XMUL(lr, gj), SDC_XADD(SDC_XSQRT(sj), eps)));
				g[j] = 0.0f;
			}
			t += j1 - j0;
		}
		return;
	}
	case SDC_MT_OP_EMB_POOL:
	case SDC_MT_OP_EMB_GRAD: {
		/* thread t = item t / E (a bag; a touched row), column t % E */
		const long E = o->code == SDC_MT_OP_EMB_POOL ? o->i[1] : o->i[0];
		for (long t = t0; t < t1;) {
			const long item = t / E, j0 = t % E, j1 = j0 + (t1 - t) < E ? j0 + (t1 - t) : E;
			if (o->code == SDC_MT_OP_EMB_POOL) {
				float *out = x + item * E;
				for (long j = j0; j < j1; j++)
					out[j] = 0.0f;
				for (int i = 0; i < o->ic[item]; i++) {
					const float *row = a + (long)o->ia[o->ib[item] + i] * E;
					for (long j = j0; j < j1; j++)
						out[j] = SDC_XADD(out[j], row[j]);
				}
			} else {
				float *g = x + (long)o->ib[item] * E;
				for (int q = o->ia[item]; q < o->ia[item + 1]; q++) {
					const float *bag = a + (long)o->ic[q] * E;
					for (long j = j0; j < j1; j++)
						g[j] = SDC_XADD(g[j], bag[j]);
				}
			}
			t += j1 - j0;
		}
		return;
	}
	default:
		for (long t = t0; t < t1; t++)
			sdc_mt_op_one(o, t);
	}
}

/* Thread t of operation o: what a GPU's CUDA thread runs (probes/minitrain/minitrain.cu). */
SDC_HD void sdc_mt_op_thread(const struct sdc_mt_op *o, long t)
{
	sdc_mt_op_range(o, t, t + 1);
}

#ifndef __CUDACC__
/* The CPU: every thread, in order. */
static inline void sdc_mt_op_run_host(const struct sdc_mt_op *o)
{
	sdc_mt_op_range(o, 0, o->n);
}
#endif

#endif
