/*
 * The steps both embbag lanes (embbag.c) share once a check fails or a fault is due: findings, the
 * table where the lane keeps it (this core's memory, or the GPU's: a row read, compared with its
 * truth, repaired), a failing bag's report, fault injection, and the sweep at rest. The state
 * they act on: lane.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probe/probe.h"
#include "probes/embbag/abft.h"
#include "probes/embbag/lane.h"
#include "base/macros.h"

/* Elements reported in detail per bag, and bags per batch. */
#define ELEMENTS_DETAILED 8
#define BAGS_DETAILED 4

/* ---- findings ---- */

static void finding_init(struct sdc_finding *f, const struct embbag_shared *sh, uint64_t iter, const char *kind,
			 const char *target, int64_t row, int64_t col)
{
	sdc_finding_corruption(f, kind, sh->operation, target, iter, row, col);
}

/* "bag 3 of batch 17 (94 rows: 812, 77, 5, 90 ...)" */
static void describe_bag(char *buf, size_t len, const struct sdc_eb_batch *b, int bag)
{
	const struct sdc_eb_bag g = sdc_eb_batch_bag(b, bag);
	int used = snprintf(buf, len, "bag %d of batch %" PRIu64 " (%d %srows:", bag, b->index, g.len,
			    b->weighted ? "weighted " : "");
	for (int r = 0; r < g.len && r < 4 && used > 0 && (size_t)used < len; r++)
		used += snprintf(buf + used, len - (size_t)used, " %" PRIu32 "%s", g.idx[r], r + 1 < g.len ? "," : "");
	if (used > 0 && (size_t)used < len)
		snprintf(buf + used, len - (size_t)used, "%s)", g.len > 4 ? " ..." : "");
}

/* A scale or bias from its bits: fp32 in 8-bit rows, fp16 in 4-bit ones. */
static double param_value(const struct sdc_eb_layout *l, uint64_t bits)
{
	if (l->fmt == SDC_EB_4BIT)
		return sdc_half_to_float((uint16_t)bits);
	const uint32_t u = (uint32_t)bits;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* ---- the table where the lane keeps it: this core's memory, or the GPU's ---- */

void sdc_eb_lane_gpu_lost(struct eb_worker *ew)
{
	if (!ew->lost)
		sdc_worker_device_lost(ew->w, "%s (%s): iteration %" PRIu64 ": %s", ew->w->dev->id,
				       ew->w->dev->gpu.pci_bus_id, ew->iter, ew->m->eb_error(ew->g));
	ew->lost = true;
}

static uint8_t *row_here(struct eb_worker *ew, uint64_t row)
{
	return sdc_eb_row(ew->t, row);
}

static void stored_here(struct eb_worker *ew, uint64_t row)
{
	(void)ew, (void)row; /* (the bytes were changed where they lie) */
}

static void repair_here(struct eb_worker *ew, uint64_t row)
{
	sdc_eb_row_repair(ew->t, row);
}

static uint8_t *row_on_gpu(struct eb_worker *ew, uint64_t row)
{
	if (ew->m->eb_row(ew->g, 0, row, ew->row_buf)) {
		sdc_eb_lane_gpu_lost(ew);
		return NULL;
	}
	return ew->row_buf;
}

static void stored_on_gpu(struct eb_worker *ew, uint64_t row)
{
	if (ew->m->eb_row(ew->g, 1, row, ew->row_buf))
		sdc_eb_lane_gpu_lost(ew);
}

static void repair_on_gpu(struct eb_worker *ew, uint64_t row)
{
	sdc_eb_truth_row(ew->t, row, ew->row_buf);
	stored_on_gpu(ew, row);
}

/* Compares a stored row with its truth; reports and repairs. Returns how many elements differed. */
static int verify_row(struct eb_worker *ew, uint64_t row, const char *how, int *reported)
{
	const struct sdc_eb_layout *l = &ew->t->l;
	const uint8_t *p = ew->table->row_at(ew, row);
	if (!p)
		return 0;
	sdc_eb_truth_row(ew->t, row, ew->truth_row);
	if (!memcmp(p, ew->truth_row, l->stride))
		return 0;
	int off = 0;
	for (int col = 0; col <= SDC_EB_COL_WSUM(l); col++) {
		int bits;
		const int64_t e = sdc_eb_element(l, ew->truth_row, col, &bits), a = sdc_eb_element(l, p, col, &bits);
		if (e == a)
			continue;
		off++;
		if ((*reported)++ >= ELEMENTS_DETAILED) {
			ew->w->corruptions++;
			continue;
		}
		struct sdc_finding f;
		char name[16];
		sdc_eb_element_name(l, col, name, sizeof(name));
		finding_init(&f, ew->sh, ew->iter, "table-corrupt", "T", (int64_t)row, col);
		sdc_finding_set_bits(&f, (uint64_t)e, (uint64_t)a, bits);
		if (col == SDC_EB_COL_SCALE(l) || col == SDC_EB_COL_BIAS(l)) {
			snprintf(f.expected_value, sizeof(f.expected_value), "%.9g", param_value(l, (uint64_t)e));
			snprintf(f.actual_value, sizeof(f.actual_value), "%.9g", param_value(l, (uint64_t)a));
		} else {
			snprintf(f.expected_value, sizeof(f.expected_value), "%" PRId64, e);
			snprintf(f.actual_value, sizeof(f.actual_value), "%" PRId64, a);
		}
		snprintf(f.detail, sizeof(f.detail), "table row %" PRIu64 " %s changed in memory; %s", row, name, how);
		sdc_worker_report(ew->w, &f);
	}
	if (!off) {
		/* Bytes differ but no element does: only unused padding could, and there is none. */
		struct sdc_finding f;
		finding_init(&f, ew->sh, ew->iter, "table-corrupt", "T", (int64_t)row, -1);
		snprintf(f.detail, sizeof(f.detail), "table row %" PRIu64 " differs from its truth; %s", row, how);
		sdc_worker_report(ew->w, &f);
		off = 1;
	}
	ew->table->row_repair(ew, row);
	return off;
}

/*
 * A bag failed its check: its rows are compared with the truth (a corrupted one is named and
 * repaired), then the bag is recomputed from the truth and every element that differs is reported.
 */
void sdc_eb_lane_report_bag(struct eb_worker *ew, int bag, const float *out, const struct sdc_eb_verdict *v,
		       int *bags_reported)
{
	const struct embbag_shared *sh = ew->sh;
	const struct sdc_eb_layout *l = &ew->t->l;
	const struct sdc_eb_bag g = sdc_eb_batch_bag(&ew->batch, bag);
	const int d = l->d;
	char where[112];
	describe_bag(where, sizeof(where), &ew->batch, bag);
	const int64_t bag_in_iter = (int64_t)(ew->batch.index % (uint64_t)sh->batches) * sh->cfg.batch + bag;

	int table_off = 0, reported = 0;
	char how[200];
	snprintf(how, sizeof(how), "found when %s failed its check", where);
	for (int r = 0; r < g.len; r++)
		table_off += verify_row(ew, g.idx[r], how, &reported);

	sdc_eb_reference(ew->t, &g, ew->scratch, ew->ref);
	int off = 0;
	for (int j = 0; j < d; j++) {
		uint32_t e, a;
		memcpy(&e, &ew->ref[j], 4);
		memcpy(&a, &out[j], 4);
		if (e == a)
			continue;
		off++;
		if (off > ELEMENTS_DETAILED || *bags_reported >= BAGS_DETAILED) {
			ew->w->corruptions++;
			continue;
		}
		struct sdc_finding f;
		finding_init(&f, sh, ew->iter, "checksum-mismatch", "R", bag_in_iter, j);
		sdc_finding_set_f32(&f, ew->ref[j], out[j]);
		if (sh->cfg.cls == SDC_EB_FAST) {
			f.threshold = v->tc;
			f.margin = v->tc > 0 ? fabs(v->dc) / v->tc : 0;
		}
		snprintf(f.detail, sizeof(f.detail), "%s: sums off by %.6g and %.6g (thresholds %.3g, %.3g)%s%s", where,
			 v->dc, v->dw, v->tc, v->tw,
			 j == v->col ? "; the weighted sum locates this column, the recomputed bag agrees"
				     : "; found by recomputing the bag",
			 table_off ? "; a row it read was corrupted in the table" : "");
		sdc_worker_report(ew->w, &f);
	}
	if (off || table_off) {
		(*bags_reported)++;
		return;
	}
	/* The check failed but the rows and the output are right. */
	struct sdc_finding f;
	const bool fast = sh->cfg.cls == SDC_EB_FAST;
	finding_init(&f, sh, ew->iter, fast ? "threshold-breach" : "verification-glitch", "R", bag_in_iter, v->col);
	f.threshold = v->tc;
	f.margin = v->tc > 0 ? fabs(v->dc) / v->tc : 0;
	snprintf(f.detail, sizeof(f.detail),
		 fast ? "%s: sums off by %.6g and %.6g, beyond thresholds %.3g and %.3g, yet the bag recomputes "
			"bit for bit: the check's own arithmetic, or a threshold too tight for this data"
		      : "%s: sums off by %.6g and %.6g yet the bag recomputes bit for bit: the check itself "
			"glitched (thresholds %.3g, %.3g)",
		 where, v->dc, v->dw, v->tc, v->tw);
	sdc_worker_report(ew->w, &f);
	(*bags_reported)++;
}

/* ---- fault injection ---- */

/* The T faults due this iteration (ew->batch: its first batch, where the default row comes from). */
void sdc_eb_lane_table_faults(struct eb_worker *ew, const struct sdc_fault *faults, int nf)
{
	const struct sdc_eb_layout *l = &ew->t->l;
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		/* Default row: one the iteration's first batch reads, so the lookup sees it. */
		const int64_t row = f->row >= 0 ? f->row
						: ew->batch.idx[sdc_fault_draw(f, 0, ew->batch.off[ew->batch.nbags])];
		const int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, l->d);
		int bits = 0;
		if (row < 0 || (uint64_t)row >= ew->sh->cfg.rows || col > SDC_EB_COL_WSUM(l) ||
		    sdc_eb_element(l, ew->truth_row, (int)col, &bits) < 0) {
			sdc_worker_error(ew->w, "--inject %s: row %" PRId64 ", col %" PRId64 " outside the table (%" PRIu64
						" rows, columns 0..%d)",
					 ew->w->ctx->run->inject[f->spec].text, row, col, ew->sh->cfg.rows,
					 SDC_EB_COL_WSUM(l));
			continue;
		}
		const int bit = f->bit >= 0 ? f->bit : (int)sdc_fault_draw(f, 2, bits);
		if (bit >= bits) {
			sdc_worker_error(ew->w, "--inject %s: bit %d outside a %d-bit element",
					 ew->w->ctx->run->inject[f->spec].text, bit, bits);
			continue;
		}
		uint8_t *p = ew->table->row_at(ew, (uint64_t)row);
		if (!p)
			return;
		const uint64_t before = (uint64_t)sdc_eb_element(l, p, (int)col, &bits), after = before ^ (1ull << bit);
		sdc_eb_element_set(l, p, (int)col, after);
		ew->table->row_stored(ew, (uint64_t)row);
		char hb[24], ha[24];
		sdc_hex_bits(hb, sizeof(hb), before, bits);
		sdc_hex_bits(ha, sizeof(ha), after, bits);
		sdc_worker_fault_applied(ew->w, f, "T", ew->iter, row, col, bit, hb, ha);
	}
}

/* Output faults due at one bag (row = the bag's number within the iteration), before its check. */
void sdc_eb_lane_output_faults(struct eb_worker *ew, int64_t this_bag, struct sdc_fault *faults, int nf)
{
	const int d = ew->sh->cfg.d, nbags = ew->batch.nbags;
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		const int64_t total = (int64_t)ew->sh->batches * nbags;
		const int64_t bag = f->row >= 0 ? f->row : sdc_fault_draw(f, 0, total);
		if (bag != this_bag)
			continue;
		const int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, d);
		const int bit = f->bit >= 0 ? f->bit : (int)sdc_fault_draw(f, 2, 32);
		if (col >= d || bit >= 32) {
			sdc_worker_error(ew->w, "--inject %s: col %" PRId64 ", bit %d outside a bag's output (%d fp32 elements)",
					 ew->w->ctx->run->inject[f->spec].text, col, bit, d);
			continue;
		}
		float *elem = ew->out + (size_t)(bag % nbags) * d + col;
		uint32_t before, after;
		memcpy(&before, elem, 4);
		after = before ^ (1u << bit);
		memcpy(elem, &after, 4);
		char hb[24], ha[24];
		sdc_hex_bits(hb, sizeof(hb), before, 32);
		sdc_hex_bits(ha, sizeof(ha), after, 32);
		sdc_worker_fault_applied(ew->w, f, "R", ew->iter, bag, col, bit, hb, ha);
	}
}

/*
 * On a GPU, the R faults due this iteration become flips of its outputs in GPU memory before the
 * checks there (member: the bag within the iteration). Returns how many.
 */
int sdc_eb_lane_output_flips(struct eb_worker *ew, const struct sdc_fault *faults, int nf, struct sdc_gpu_flip *flips,
			int *from)
{
	const int d = ew->sh->cfg.d;
	const int64_t total = (int64_t)ew->sh->batches * ew->sh->cfg.batch;
	int n = 0;
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		const int64_t bag = f->row >= 0 ? f->row : sdc_fault_draw(f, 0, total);
		const int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, d);
		const int bit = f->bit >= 0 ? f->bit : (int)sdc_fault_draw(f, 2, 32);
		if (bag >= total || col >= d || bit >= 32) {
			sdc_worker_error(ew->w, "--inject %s: bag %" PRId64 ", col %" PRId64 ", bit %d outside an iteration's "
						"outputs (%" PRId64 " bags of %d fp32 elements)",
					 ew->w->ctx->run->inject[f->spec].text, bag, col, bit, total, d);
			continue;
		}
		from[n] = i;
		flips[n++] = (struct sdc_gpu_flip){ .member = (int)bag, .el = col, .bit = bit };
	}
	return n;
}

/* The flips as the outputs came back (flip k from fault from[k]): each element before is the
 * element with the bit flipped back. */
void sdc_eb_lane_report_flips(struct eb_worker *ew, const struct sdc_fault *faults, const struct sdc_gpu_flip *flips,
			 const int *from, int nflips)
{
	for (int k = 0; k < nflips; k++) {
		const struct sdc_gpu_flip *x = &flips[k];
		uint32_t after;
		memcpy(&after, ew->out + (size_t)x->member * ew->sh->cfg.d + x->el, 4);
		char hb[24], ha[24];
		sdc_hex_bits(hb, sizeof(hb), after ^ (1u << x->bit), 32);
		sdc_hex_bits(ha, sizeof(ha), after, 32);
		sdc_worker_fault_applied(ew->w, &faults[from[k]], "R", ew->iter, x->member, x->el, x->bit, hb, ha);
	}
}

/* ---- the sweep ---- */

/* On a GPU: the slice compared there with its truth and its sums; what failed is read back. */
static void sweep_gpu(struct eb_worker *ew)
{
	const uint64_t rows = ew->sh->cfg.rows, n = SDC_MIN(ew->sh->sweep_rows, rows);
	uint64_t bad[64];
	int nbad = 0, reported = 0;
	if (!n)
		return;
	if (ew->m->eb_sweep(ew->g, ew->sweep_cursor, n, bad, 64, &nbad)) {
		sdc_eb_lane_gpu_lost(ew);
		return;
	}
	ew->sweep_cursor = (ew->sweep_cursor + n) % rows;
	for (int i = 0; i < nbad && i < 64 && !ew->lost; i++)
		if (!verify_row(ew, bad[i], "found by the sweep at rest on the GPU (the row against its truth, and its sums)",
				&reported) && !ew->lost) {
			struct sdc_finding f;
			finding_init(&f, ew->sh, ew->iter, "verification-glitch", "T", (int64_t)bad[i], -1);
			snprintf(f.detail, sizeof(f.detail),
				 "table row %" PRIu64 " failed the GPU's sweep but reads back as its truth", bad[i]);
			sdc_worker_report(ew->w, &f);
		}
	ew->w->corruptions += nbad > 64 ? nbad - 64 : 0;
}

/* Here: each row of the slice against its CRC32C and sums; one that fails, against its truth. */
static void sweep_here(struct eb_worker *ew)
{
	const uint64_t rows = ew->sh->cfg.rows;
	int reported = 0;
	for (uint64_t k = 0; k < ew->sh->sweep_rows && k < rows; k++) {
		const uint64_t r = ew->sweep_cursor;
		ew->sweep_cursor = ew->sweep_cursor + 1 == rows ? 0 : ew->sweep_cursor + 1;
		if (sdc_eb_row_intact(ew->t, r))
			continue;
		if (!verify_row(ew, r, "found by the sweep at rest (CRC32C and row sums)", &reported)) {
			struct sdc_finding f;
			finding_init(&f, ew->sh, ew->iter, "verification-glitch", "T", (int64_t)r, -1);
			snprintf(f.detail, sizeof(f.detail),
				 "table row %" PRIu64 " failed its CRC32C or row sums but matches its truth", r);
			sdc_worker_report(ew->w, &f);
		}
	}
}

const struct sdc_eb_table_ops sdc_eb_table_here = {
	.row_at = row_here, .row_stored = stored_here, .row_repair = repair_here, .sweep = sweep_here,
};
const struct sdc_eb_table_ops sdc_eb_table_on_gpu = {
	.row_at = row_on_gpu, .row_stored = stored_on_gpu, .row_repair = repair_on_gpu, .sweep = sweep_gpu,
};
