/*
 * The gemm probe's GPU lane (gpu.c) looking at an iteration: its results collected from the engine,
 * the operands' fingerprints compared with the load's (a changed operand read back, located, named
 * and reloaded), failing rows read back and recomputed on the host from the regenerated operands
 * (gpu_truth.c), the failing tile recomputed on every SM (the SM replay), the closed form of extreme
 * data, every finding filed, and the iteration's digest given to the vote.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "inject/fatal.h"
#include "device/gpu_loader.h"
#include "kernels/abft_ref.h"
#include "probes/gemm/gemm_data.h"
#include "probes/gemm/gpu_lane.h"

/* ---- the lane's operands and their truth, which gpu.c's burn and the look below share ---- */

/* A platform failure: the GPU could not be tested (UNKNOWN), named with its bus id. */
void sdc_gemm_lane_error(struct gemm_lane *l, const char *what)
{
	sdc_worker_device_lost(l->w, "%s (%s): %s: %s", l->w->dev->id, l->w->dev->gpu.pci_bus_id, what, l->err);
}

int sdc_gemm_lane_load(struct gemm_lane *l, uint64_t set)
{
	l->set = set;
	l->pool = sdc_gpu_type_exact(l->sh->gcfg.type) ? NULL : l->sh->pools[set % (uint64_t)l->sh->npools].v;
	l->truth.valid = false;
	l->loaded = !l->m->gemm_load(l->g, set, l->pool, l->err, sizeof(l->err));
	return l->loaded ? 0 : -1;
}

int sdc_gemm_lane_truth(struct gemm_lane *l)
{
	if (l->truth.valid && l->truth.set == l->set)
		return 0;
	if (sdc_gpu_truth_load(&l->truth, l->set, l->pool)) {
		snprintf(l->err, sizeof(l->err), "out of memory for the host's copy of B");
		return -1;
	}
	return 0;
}

static const char *lane_op(const struct gemm_lane *l)
{
	return l->sh->gpu_operation;
}

void sdc_gemm_lane_finding(struct sdc_finding *f, const struct gemm_lane *l, const char *kind, const char *target,
			   int64_t row, int64_t col)
{
	char operation[sizeof(f->operation)];
	snprintf(operation, sizeof(operation), "%.78s %.15s", lane_op(l), l->w->dev->id);
	sdc_finding_corruption(f, kind, operation, target, l->iter, row, col);
}

/* ---- the SM replay ---- */

/*
 * How many distinct SMs the replay's blocks ran on. Nothing pins a block to an SM (GPU.md): the
 * blocks are sized to land one an SM, but a block that shares an SM with another, or moved while
 * it ran, leaves some SM untested. Where not every one of the GPU's sm_count SMs was reached,
 * reached says which were not (a "transient" verdict then covers only the SMs reached).
 */
static int replay_reach(const struct sdc_gpu_sm_replay *r, int sm_count, char *reached, size_t len)
{
	bool seen[SDC_GPU_MAX_SMS] = { false };
	int distinct = 0, moved = 0;
	for (int b = 0; b < r->blocks && b < SDC_GPU_MAX_SMS; b++) {
		const int sm = r->smid[b];
		if (sm < 0 || sm >= SDC_GPU_MAX_SMS)
			moved++;
		else if (!seen[sm])
			seen[sm] = true, distinct++;
	}
	const int want = sm_count < SDC_GPU_MAX_SMS ? sm_count : SDC_GPU_MAX_SMS;
	reached[0] = '\0';
	if (distinct >= want)
		return distinct;
	int n = snprintf(reached, len, "not reached:");
	for (int sm = 0, listed = 0; sm < want && n > 0 && (size_t)n < len; sm++)
		if (!seen[sm] && listed++ < 8)
			n += snprintf(reached + n, len - (size_t)n, "%s SM %d", listed > 1 ? "," : "", sm);
	if (n > 0 && (size_t)n < len)
		snprintf(reached + n, len - (size_t)n, "%s%s", want - distinct > 8 ? " ..." : "",
			 moved ? "; some blocks moved between SMs while they ran" : "; two blocks shared an SM");
	return distinct;
}

/*
 * Recomputes the tile around (row, col) on every SM with the module's own exact kernel and
 * writes what it shows into why: which SMs compute it wrong again (a persistent fault: the
 * finding names the first), or that none does (transient). Returns that SM, or -1.
 */
static int sm_replay(struct gemm_lane *l, int row, int col, char *why, size_t len)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	why[0] = '\0';
	if (!sdc_gpu_type_exact(c->type) || !l->tiles || sdc_gemm_lane_truth(l))
		return -1;
	struct sdc_gpu_sm_replay r = { .row0 = row / SDC_GPU_TILE * SDC_GPU_TILE, .col0 = col / SDC_GPU_TILE * SDC_GPU_TILE,
				       .tiles = l->tiles };
	r.rows = c->m - r.row0 < SDC_GPU_TILE ? c->m - r.row0 : SDC_GPU_TILE;
	r.cols = c->n_ext - r.col0 < SDC_GPU_TILE ? c->n_ext - r.col0 : SDC_GPU_TILE;
	char err[256];
	if (l->m->gemm_sm_replay(l->g, &r, err, sizeof(err))) {
		snprintf(why, len, "; the SM replay could not run: %s", err);
		return -1;
	}
	/* The tile's right bits (C is int32 for int8, fp32 holding an integer for the other exact types). */
	uint32_t expect[SDC_GPU_TILE][SDC_GPU_TILE];
	int64_t *ref = malloc(sizeof(int64_t) * (size_t)c->n_ext);
	if (!ref) {
		snprintf(why, len, "; the SM replay could not run: out of memory");
		return -1;
	}
	for (int i = 0; i < r.rows; i++) {
		sdc_gpu_truth_c_row(&l->truth, r.row0 + i, ref, NULL);
		for (int j = 0; j < r.cols; j++) {
			const float f = (float)ref[r.col0 + j];
			if (c->type == SDC_GPU_INT8)
				expect[i][j] = (uint32_t)(int32_t)ref[r.col0 + j];
			else
				memcpy(&expect[i][j], &f, 4);
		}
	}
	free(ref);
	int wrong = 0, first_sm = -1, wrong_at_element = 0;
	for (int b = 0; b < r.blocks; b++) {
		bool bad = false;
		for (int i = 0; i < r.rows; i++)
			for (int j = 0; j < r.cols; j++) {
				if (r.tiles[((size_t)b * r.rows + i) * r.cols + j] != expect[i][j]) {
					bad = true;
					wrong_at_element += (r.row0 + i == row && r.col0 + j == col);
				}
			}
		if (bad && !wrong++)
			first_sm = r.smid[b];
	}
	char reached[160];
	const int sms = replay_reach(&r, l->w->dev->gpu.sm_count, reached, sizeof(reached));
	if (!wrong && reached[0])
		snprintf(why, len, "; tile (%d, %d) recomputed by sdcscan's exact kernel on %d of the GPU's %d SMs (%s): "
			 "all right there; the SMs not reached cannot be judged", r.row0, r.col0, sms,
			 l->w->dev->gpu.sm_count, reached);
	else if (!wrong)
		snprintf(why, len, "; tile (%d, %d) recomputed on each of %d SMs by sdcscan's exact kernel: all right, so "
			 "the fault did not repeat (transient, or in cuBLASLt's path)", r.row0, r.col0, sms);
	else
		snprintf(why, len, "; tile (%d, %d) recomputed on %s%d SMs: %d SM%s computed it wrong again (persistent), "
			 "first SM %d%s", r.row0, r.col0, reached[0] ? "" : "each of ", sms, wrong, wrong == 1 ? "" : "s",
			 first_sm, wrong_at_element ? ", at this element" : "");
	return wrong ? first_sm : -1;
}

/* ---- reporting ---- */

static void set_c_values(struct sdc_finding *f, const struct gemm_lane *l, int j, uint64_t actual_bits)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const bool exact = sdc_gpu_type_exact(c->type);
	if (c->type == SDC_GPU_INT8) {
		const int32_t e = (int32_t)l->ref_i64[j], a = (int32_t)(uint32_t)actual_bits;
		sdc_finding_set_bits(f, (uint32_t)e, (uint32_t)a, 32);
		snprintf(f->expected_value, sizeof(f->expected_value), "%" PRId32, e);
		snprintf(f->actual_value, sizeof(f->actual_value), "%" PRId32, a);
		return;
	}
	/* C is fp32 for every other type. */
	float a;
	uint32_t u = (uint32_t)actual_bits;
	memcpy(&a, &u, 4);
	sdc_finding_set_f32(f, exact ? (float)l->ref_i64[j] : (float)l->ref_f64[j], a);
}

/* |C[i][j] - reference| (INF when not finite; exact: 0 or 1, by bits). */
static double deviation(const struct gemm_lane *l, int j, uint64_t bits)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	if (c->type == SDC_GPU_INT8)
		return (int32_t)(uint32_t)bits != (int32_t)l->ref_i64[j];
	float v;
	uint32_t u = (uint32_t)bits;
	memcpy(&v, &u, 4);
	if (sdc_gpu_type_exact(c->type)) {
		const float e = (float)l->ref_i64[j];
		uint32_t eb;
		memcpy(&eb, &e, 4);
		return u != eb;
	}
	return isfinite(v) ? fabs((double)v - l->ref_f64[j]) : INFINITY;
}

/* Reads a failing row back, recomputes it, and files every element that is off. Returns how many. */
static int report_row(struct gemm_lane *l, const struct sdc_gpu_bad_row *bad, bool operand_fault, int skip, bool replay)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const bool exact = sdc_gpu_type_exact(c->type);
	if (sdc_gemm_lane_truth(l) ||
	    l->m->gemm_read(l->g, l->slot, 'C', bad->row, 0, c->n_ext, l->row, l->err, sizeof(l->err))) {
		sdc_gemm_lane_error(l, "reading a failing row back");
		return 0;
	}
	sdc_gpu_truth_c_row(&l->truth, bad->row, l->ref_i64, l->ref_f64);
	const int located = exact ? sdc_ref_locate(c->n, bad->s1, bad->s2, bad->e1, bad->e2, bad->nbad, bad->first_bad)
				  : -1;
	const char *why = operand_fault ? "; an operand was found corrupted in this iteration" : "";
	int off = 0, reported = 0;
	for (int j = 0; j < c->n_ext; j++) {
		uint64_t bits = 0;
		memcpy(&bits, (const char *)l->row + (size_t)j * 4, 4);
		const double tol = exact ? 0 : j == c->n + 1 ? bad->t1 * c->n : bad->t1;
		if (!(deviation(l, j, bits) > tol) || j == skip)
			continue;
		off++;
		if (reported++ >= 8) {
			l->w->corruptions++;
			continue;
		}
		struct sdc_finding f;
		sdc_gemm_lane_finding(&f, l, j < c->n ? "checksum-mismatch" : "checksum-column-corrupt", "C", bad->row, j);
		set_c_values(&f, l, j, bits);
		char sm[300] = "";
		if (replay && reported == 1) {
			f.sm = sm_replay(l, bad->row, j, sm, sizeof(sm));
			f.sm_known = f.sm >= 0;
		}
		if (!exact) {
			f.threshold = bad->t1;
			f.margin = fabs(bad->d1) / bad->t1;
			snprintf(f.detail, sizeof(f.detail), "row verification difference %.3g against its V-ABFT threshold %.3g; "
				 "found by recomputing the row on the host%s%s", bad->d1, bad->t1, why, sm);
		} else if (j == located) {
			snprintf(f.detail, sizeof(f.detail), "row checksum off by %" PRId64 ", weighted checksum locates "
				 "column %d (checked on %s); confirmed by recomputing the row on the host%s%s",
				 bad->s1 - bad->e1, j, l->w->dev->id, why, sm);
		} else {
			snprintf(f.detail, sizeof(f.detail), "found by recomputing the row on the host; the checksums point at "
				 "%s%s%s", located >= 0 ? "another column" : "no single column (several errors)", why, sm);
		}
		sdc_worker_report(l->w, &f);
	}
	if (!off && skip < 0) {
		struct sdc_finding f;
		sdc_gemm_lane_finding(&f, l, exact ? "verification-glitch" : "threshold-breach", "C", bad->row, -1);
		if (exact)
			snprintf(f.detail, sizeof(f.detail), "the device's row check failed but the row read back recomputes "
				 "correctly: the check itself, or the read, glitched");
		else
			snprintf(f.detail, sizeof(f.detail), "row difference %.3g > V-ABFT threshold %.3g though no element "
				 "is off by that much: small errors adding up, or e_max too tight here%s", bad->d1, bad->t1, why);
		sdc_worker_report(l->w, &f);
		return exact ? 0 : 1;
	}
	return off;
}

/* Compares an operand read back from the device with its regenerated truth; files what differs. */
static void report_operand(struct gemm_lane *l, char target, int *reported)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const int rows = target == 'A' ? c->m : c->k, cols = target == 'A' ? c->k : c->n_ext;
	uint8_t *buf = malloc((size_t)cols * (size_t)l->esz);
	if (!buf || sdc_gemm_lane_truth(l)) {
		free(buf);
		return;
	}
	const char name[2] = { target, 0 };
	for (int r = 0; r < rows; r++) {
		if (l->m->gemm_read(l->g, l->slot, target, r, 0, cols, buf, l->err, sizeof(l->err))) {
			sdc_gemm_lane_error(l, "reading an operand back");
			break;
		}
		for (int col = 0; col < cols; col++) {
			uint64_t a = 0;
			memcpy(&a, buf + (size_t)col * l->esz, (size_t)l->esz);
			const uint64_t e = target == 'A' ? sdc_gpu_truth_a(&l->truth, r, col) : sdc_gpu_truth_b(&l->truth, r, col);
			if (a == e)
				continue;
			if ((*reported)++ >= 8) {
				l->w->corruptions++;
				continue;
			}
			struct sdc_finding f;
			sdc_gemm_lane_finding(&f, l, "operand-corrupt", name, r, col);
			sdc_finding_set_bits(&f, e, a, 8 * l->esz);
			snprintf(f.detail, sizeof(f.detail), "operand %s%s changed in GPU memory after %s", name,
				 target == 'B' && col >= c->n ? " (checksum column)" : "",
				 target == 'A' ? "its fingerprint was taken" : "encoding");
			sdc_worker_report(l->w, &f);
		}
	}
	free(buf);
}

/* Operands at rest, by their fingerprints after the GEMM; a changed one is located, named and reloaded. */
static bool verify_operands(struct gemm_lane *l, const struct sdc_gpu_check *chk)
{
	const int a_ok = chk->a_intact, b_ok = chk->b_intact;
	if (a_ok && b_ok)
		return false;
	int reported = 0;
	if (!a_ok)
		report_operand(l, 'A', &reported);
	if (!b_ok)
		report_operand(l, 'B', &reported);
	if (!reported) {
		struct sdc_finding f;
		sdc_gemm_lane_finding(&f, l, "verification-glitch", a_ok ? "B" : "A", -1, -1);
		snprintf(f.detail, sizeof(f.detail), "operand fingerprint changed but every element matches");
		sdc_worker_report(l->w, &f);
	}
	if (sdc_gemm_lane_load(l, l->set)) /* repair, so the next iteration starts clean */
		sdc_gemm_lane_error(l, "reloading the operands");
	return true;
}

/* The operands' fingerprints alone, on slot (its C untouched), into chk's a_intact, b_intact. */
static int fingerprints_now(struct gemm_lane *l, int slot, struct sdc_gpu_check *chk)
{
	struct sdc_gpu_check fp = { .bad = NULL }; /* (a fingerprint-only collect lists no rows) */
	if (l->m->gemm_submit(l->g, slot, SDC_GPU_FINGERPRINT, l->err, sizeof(l->err)) ||
	    l->m->gemm_collect(l->g, slot, NULL, &fp, l->err, sizeof(l->err))) {
		sdc_gemm_lane_error(l, "taking the operands' fingerprints");
		return -1;
	}
	l->fingerprinted[slot] = true;
	chk->a_intact = fp.a_intact;
	chk->b_intact = fp.b_intact;
	return 0;
}

void sdc_gemm_lane_verify_at_end(struct gemm_lane *l, int slot, uint64_t iter)
{
	struct sdc_gpu_check chk = { .bad = l->bad };
	l->iter = iter;
	l->slot = slot;
	if (!fingerprints_now(l, slot, &chk))
		verify_operands(l, &chk);
}

static void report_rows(struct gemm_lane *l, const struct sdc_gpu_check *chk, bool operand_fault)
{
	const int listed = chk->nbad;
	/* The column most failing rows point at: a corrupted column of B fails every row there. */
	int common = -1, votes = 0;
	int *cols = malloc(sizeof(int) * (size_t)(listed + 1));
	for (int r = 0; cols && r < listed; r++) {
		const struct sdc_gpu_bad_row *b = &chk->bad[r];
		cols[r] = sdc_gpu_type_exact(l->sh->gcfg.type)
				  ? sdc_ref_locate(l->sh->gcfg.n, b->s1, b->s2, b->e1, b->e2, b->nbad, b->first_bad)
				  : -1;
		if (!votes)
			common = cols[r];
		votes += cols[r] == common ? 1 : -1;
	}
	int detailed = 0, rechecked = 0;
	for (int r = 0; r < listed && !l->w->failed; r++) {
		const bool odd = !cols || common < 0 || cols[r] != common;
		if (r < ROWS_DETAILED || (odd && detailed < 4 * ROWS_DETAILED)) {
			report_row(l, &chk->bad[r], operand_fault, -1, detailed == 0);
			detailed++;
		} else {
			l->w->corruptions++;
			if (rechecked++ < ROWS_RECHECKED)
				report_row(l, &chk->bad[r], operand_fault, common, false);
		}
	}
	free(cols);
	if (chk->nbad > detailed) {
		struct sdc_finding f;
		sdc_gemm_lane_finding(&f, l, "checksum-mismatch-rows", "C", -1, common);
		snprintf(f.detail, sizeof(f.detail), "%d of %d rows fail their checks on %s; %d more rows%s not listed: the "
			 "pattern of a corrupted column of B or of its products", chk->nbad, l->sh->gcfg.m, l->w->dev->id,
			 chk->nbad - detailed, common >= 0 ? " at the same column" : "");
		sdc_worker_report(l->w, &f);
	}
}

/*
 * Extreme data: every A element a, every B element b, so each row's sums have a closed form,
 * s1 = n k a b and s2 = n(n+1)/2 k a b, an expectation computed without the GPU. A row whose
 * sums differ lost bits in the accumulator (or elsewhere): its exactness bound does not hold here.
 */
static void check_closed_form(struct gemm_lane *l)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const int64_t a = sdc_gd_extreme_a(c->type == SDC_GPU_INT8, c->amax);
	const int64_t b = sdc_gd_extreme_b(c->type == SDC_GPU_INT8, c->bmax);
	const int64_t e1 = (int64_t)c->n * c->k * a * b, e2 = (int64_t)c->n * (c->n + 1) / 2 * c->k * a * b;
	int reported = 0;
	for (int i = 0; i < c->m; i++) {
		const int64_t s1 = (int64_t)l->sums[2 * i], s2 = (int64_t)l->sums[2 * i + 1];
		if (s1 == e1 && s2 == e2)
			continue;
		if (reported++ >= 4) {
			l->w->corruptions++;
			continue;
		}
		struct sdc_finding f;
		sdc_gemm_lane_finding(&f, l, "inexact-accumulation", "C", i, -1);
		sdc_finding_set_bits(&f, (uint64_t)e1, (uint64_t)s1, 64);
		snprintf(f.detail, sizeof(f.detail), "extreme data (every a = %" PRId64 ", b = %" PRId64 ", k = %d): row %d sums "
			 "to %" PRId64 " and %" PRId64 ", the closed form says %" PRId64 " and %" PRId64, a, b, c->k, i, s1,
			 s2, e1, e2);
		sdc_worker_report(l->w, &f);
	}
}

/*
 * Collects iteration iter from slot and files what it shows. *redo: its operands were found
 * changed and reloaded, so whatever was submitted after it ran on bad operands and must run
 * again. -1: the lane failed.
 */
int sdc_gemm_lane_look(struct gemm_lane *l, int slot, uint64_t iter, bool *redo)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	l->iter = iter;
	l->slot = slot;
	*redo = false;
	struct sdc_gpu_check chk = { .bad = l->bad };
	if (l->m->gemm_collect(l->g, slot, l->sums, &chk, l->err, sizeof(l->err))) {
		sdc_gemm_lane_error(l, "multiplying and checking");
		return -1;
	}
	/* Operands first: a changed input explains the rows that fail after it (an iteration that took
	 * no fingerprints takes them now, before its rows or the closed form blame the GPU). */
	const bool exact_closed_form = c->extreme && sdc_gpu_type_exact(c->type);
	if (!l->fingerprinted[slot] && (chk.nbad || exact_closed_form) && fingerprints_now(l, slot, &chk))
		return -1;
	const bool operand_fault = verify_operands(l, &chk);
	*redo = operand_fault;
	if (exact_closed_form)
		check_closed_form(l);
	if (chk.nbad)
		report_rows(l, &chk, operand_fault);
	if (l->w->failed)
		return -1;
	uint64_t digest;
	if (l->sh->gpu_burn) {
		digest = sdc_xxh64(l->sums, sizeof(uint64_t) * 2 * (size_t)c->m);
	} else {
		/* The CPU's digest of the same work: C as it lies in memory, padding columns included. */
		if (l->m->gemm_read(l->g, slot, 'C', 0, 0, c->m * c->ldc, l->c_host, l->err, sizeof(l->err))) {
			sdc_gemm_lane_error(l, "reading C back");
			return -1;
		}
		digest = sdc_xxh64(l->c_host, (size_t)c->m * (size_t)c->ldc * 4);
	}
	sdc_worker_fatal_faults(l->w, iter, l->sums); /* (in the lane's host thread: named at the GPU) */
	sdc_worker_digest(l->w, iter, digest);
	sdc_worker_account(l->w, 2.0 * c->m * c->n * c->k);
	return 0;
}

