/*
 * sdcscan campaign ... --html FILE (inject/campaign_html.h): the campaign's JSON object drawn as charts.
 * Each chart's bars stack what became of the faults of one category (a target such as B or C,
 * a bit position, a variant, a register); red is a fault a check had to find and did not
 * (MISSED), so a miss stands out however few. Amber is a fault no check is asked to find (a
 * fast-class flip too small for any threshold), grey one that left the output unchanged. The
 * counts are the JSON's; the cpu-faults charts by bit and register count its fault list.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/html.h"
#include "base/message.h"
#include "base/files.h"
#include "inject/campaign_html.h"
#include "run/facts_json.h"

#define MAX_EXTRA 8

/* ---- reading the JSON: a missing or mistyped member reads as 0 or "" ---- */

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static double num_at(const json_t *o, const char *key, size_t i)
{
	const json_t *v = json_array_get(json_object_get(o, key), i);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static double sum_of(const json_t *o, const char *key)
{
	double s = 0;
	for (size_t i = 0; i < json_array_size(json_object_get(o, key)); i++)
		s += num_at(o, key, i);
	return s;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static const char *str_or(const json_t *v)
{
	return json_string_value(v) ? json_string_value(v) : "";
}

static double pct(double a, double b)
{
	return b > 0 ? 100 * a / b : 0;
}

/* ---- a chart being filled: categories added one at a time, their strings owned here ---- */

struct chart {
	struct sdc_html_chart c;
	char id[96], title[300];
	char **cat, **group, **extra;
	double *v;
	int cap;
	bool *oom;
};

static void chart_init(struct chart *b, bool *oom, const char *id, const char *title, const char *x_label,
		       const char *y_label, const struct sdc_html_series *s, int nseries, int mark)
{
	memset(b, 0, sizeof(*b));
	/* an id is a word: what the JSON named it with, anything but letters, digits, - and _ as _ */
	size_t n = 0;
	for (const char *p = id; *p && n + 1 < sizeof(b->id); p++)
		b->id[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
					     *p == '-' || *p == '_'
				     ? *p
				     : '_';
	snprintf(b->title, sizeof(b->title), "%s", title);
	b->c = (struct sdc_html_chart){ .id = b->id, .title = b->title, .x_label = x_label, .y_label = y_label,
					.series = s, .nseries = nseries, .mark = mark };
	b->oom = oom;
}

static void chart_extras(struct chart *b, int n, const char *const *head)
{
	b->c.nextra = n;
	b->c.extra_head = head;
}

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

/* A new category (its values 0, its extra cells empty): its index, or -1 out of memory. */
static int cat_add(struct chart *b, const char *group, const char *fmt, ...) SDC_PRINTF(3, 4);
static int cat_add(struct chart *b, const char *group, const char *fmt, ...)
{
	const int i = b->c.ncat;
	if (i == b->cap) {
		const int cap = b->cap ? 2 * b->cap : 16;
		char **c = realloc(b->cat, (size_t)cap * sizeof(*c)), **g = c ? realloc(b->group, (size_t)cap * sizeof(*g)) : NULL;
		if (c)
			b->cat = c;
		if (g)
			b->group = g;
		char **e = g ? realloc(b->extra, (size_t)cap * MAX_EXTRA * sizeof(*e)) : NULL;
		if (e)
			b->extra = e;
		double *v = e ? realloc(b->v, (size_t)cap * (size_t)b->c.nseries * sizeof(*v)) : NULL;
		if (!v)
			return *b->oom = true, -1;
		b->v = v;
		b->cap = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	b->cat[i] = vformat(fmt, ap);
	va_end(ap);
	b->group[i] = strdup(group ? group : "");
	memset(b->extra + (size_t)i * MAX_EXTRA, 0, MAX_EXTRA * sizeof(*b->extra));
	memset(b->v + (size_t)i * (size_t)b->c.nseries, 0, (size_t)b->c.nseries * sizeof(*b->v));
	b->c.ncat++;
	if (!b->cat[i] || !b->group[i])
		*b->oom = true;
	return i;
}

static void set(struct chart *b, int i, int s, double v)
{
	if (i >= 0)
		b->v[i * b->c.nseries + s] = v;
}

static void extra(struct chart *b, int i, int e, const char *fmt, ...) SDC_PRINTF(4, 5);
static void extra(struct chart *b, int i, int e, const char *fmt, ...)
{
	if (i < 0 || e >= MAX_EXTRA)
		return;
	va_list ap;
	va_start(ap, fmt);
	free(b->extra[i * MAX_EXTRA + e]);
	if (!(b->extra[i * MAX_EXTRA + e] = vformat(fmt, ap)))
		*b->oom = true;
	va_end(ap);
}

/* Draws the chart (unless it is empty or memory ran out) and lets its strings go. The extra
 * columns no category filled are left out, and the groups where none was named. */
static void chart_draw(FILE *f, struct chart *b, const char *note)
{
	const char **cells = calloc((size_t)b->c.ncat * MAX_EXTRA + 1, sizeof(*cells)), *head[MAX_EXTRA];
	int n = 0;
	bool groups = false;
	if (!cells)
		*b->oom = true;
	int keep[MAX_EXTRA];
	for (int e = 0; e < b->c.nextra; e++) {
		bool any = false;
		for (int i = 0; i < b->c.ncat; i++)
			any |= b->extra[i * MAX_EXTRA + e] != NULL;
		if (any)
			keep[n] = e, head[n++] = b->c.extra_head[e];
	}
	for (int i = 0; cells && i < b->c.ncat; i++)
		for (int e = 0; e < n; e++)
			cells[i * n + e] = b->extra[i * MAX_EXTRA + keep[e]] ? b->extra[i * MAX_EXTRA + keep[e]] : "";
	b->c.nextra = cells ? n : 0;
	for (int i = 0; i < b->c.ncat; i++)
		groups |= b->group[i] && *b->group[i];
	b->c.extra_head = head;
	b->c.cat = (const char *const *)b->cat;
	b->c.group = groups ? (const char *const *)b->group : NULL;
	b->c.v = b->v;
	b->c.extra = cells;
	b->c.note = note;
	if (b->c.ncat && !*b->oom)
		sdc_html_bars(f, &b->c);
	for (int i = 0; i < b->c.ncat; i++) {
		free(b->cat[i]);
		free(b->group[i]);
		for (int e = 0; e < MAX_EXTRA; e++)
			free(b->extra[i * MAX_EXTRA + e]);
	}
	free(cells);
	free(b->cat), free(b->group), free(b->extra), free(b->v);
}

/* An IEEE 754 binary32 or binary64 field of a bit. */
static const char *float_field(int bit, int width)
{
	const int mant = width == 64 ? 52 : 23;
	return bit == width - 1 ? "sign" : bit >= mant ? "exponent" : "mantissa";
}

/* ---- the verdict and the targets ---- */

static void banner(FILE *f, const json_t *j)
{
	const json_t *missed = json_object_get(j, "missed"), *met = json_object_get(j, "targets_met");
	char line[300];
	if (json_is_integer(missed)) {
		const json_int_t n = json_integer_value(missed);
		if (n)
			snprintf(line, sizeof(line), "CRITICAL: %lld fault%s MISSED: changed the work and nothing reported %s",
				 (long long)n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
		else
			snprintf(line, sizeof(line), "%s", strcmp(str(j, "status"), "OK") ? "UNKNOWN: the campaign did not run to its end"
											 : "OK: no fault was missed");
		sdc_html_para(f, n || strcmp(str(j, "status"), "OK") ? "bad" : "ok", line);
	} else if (json_is_boolean(met)) {
		sdc_html_para(f, json_is_true(met) ? "ok" : "bad",
			      json_is_true(met) ? "OK: every target met" : "CRITICAL: a target was MISSED (red below)");
	}
	sdc_html_para(f, "note",
		      "Every number is the campaign's own (the object its --json writes). Hover a bar for its count; the "
		      "table beside each chart holds the same numbers. Red: MISSED, a fault a check had to find and did "
		      "not. Amber: not found, where no check is asked to (too small for any threshold). Grey: masked, the "
		      "output unchanged. A non-zero count is drawn at least a few pixels tall.");
}

static void targets_table(FILE *f, const json_t *targets)
{
	const size_t n = json_array_size(targets);
	if (!n)
		return;
	static const char *const head[] = { "table", "class", "target", "count", "of", "result" };
	char (*num_cells)[2][32] = calloc(n, sizeof(*num_cells));
	const char **cells = calloc(n * 6, sizeof(*cells));
	bool *bad = calloc(n, sizeof(*bad));
	if (num_cells && cells && bad) {
		for (size_t i = 0; i < n; i++) {
			const json_t *t = json_array_get(targets, i);
			snprintf(num_cells[i][0], 32, "%.0f", num(t, "count"));
			snprintf(num_cells[i][1], 32, "%.0f", num(t, "of"));
			bad[i] = !json_is_true(json_object_get(t, "met"));
			const char *row[] = { str(t, "table"), str(t, "class"), str(t, "target"), num_cells[i][0],
					      num_cells[i][1], bad[i] ? "MISSED" : "met" };
			memcpy(cells + i * 6, row, sizeof(row));
		}
		sdc_html_heading(f, 2, "Targets");
		sdc_html_table(f, "targets", 6, head, (int)n, cells, bad);
	}
	free(num_cells), free(cells), free(bad);
}

/* ---- campaign gemm ---- */

static const struct sdc_html_series gemm_series[] = {
	{ "detected", "found by the checks", SDC_HTML_GREEN },
	{ "masked", "masked (output unchanged)", SDC_HTML_GREY },
	{ "below", "not found, below any threshold", SDC_HTML_AMBER },
	{ "clean", "clean, no alarm", SDC_HTML_BLUE },
	{ "false_alarm", "false alarm", SDC_HTML_ORANGE },
	{ "missed", "MISSED", SDC_HTML_RED },
};
enum { G_DET, G_MASKED, G_BELOW, G_CLEAN, G_FALSE, G_MISSED, G_N };

/* Li et al. Table II form: per class, flips in B and in C, and clean GEMMs. */
static void gemm_table2(FILE *f, const json_t *t2, bool *oom)
{
	static const char *const head[] = { "found", "digest", "located", "Li et al. Table II (int8)" };
	struct chart b;
	chart_init(&b, oom, "table2", "Li et al. Table II form: single-bit flips by target, per class", "target",
		   "trials", gemm_series, G_N, G_MISSED);
	chart_extras(&b, 4, head);
	const char *cls;
	const json_t *o;
	json_object_foreach((json_t *)t2, cls, o) {
		const json_t *B = json_object_get(o, "B"), *C = json_object_get(o, "C"), *N = json_object_get(o, "none");
		/* missed: flips the checks must find (changed the output; fast: sure to breach) and did not */
		int i = cat_add(&b, cls, "B");
		double missed = num(B, "significant") - num(B, "significant_detected");
		set(&b, i, G_DET, num(B, "detected"));
		set(&b, i, G_MASKED, num(B, "masked"));
		set(&b, i, G_MISSED, missed);
		set(&b, i, G_BELOW, fmax(0, num(B, "missed") - missed));
		extra(&b, i, 0, "%.2f%%", pct(num(B, "detected"), num(B, "trials")));
		extra(&b, i, 1, "%.0f", num(B, "digest"));
		extra(&b, i, 3, "2663/137 (95.11%%)");
		i = cat_add(&b, cls, "C");
		missed = num(C, "significant") - num(C, "significant_detected");
		set(&b, i, G_DET, num(C, "detected"));
		set(&b, i, G_MISSED, missed);
		set(&b, i, G_BELOW, fmax(0, num(C, "trials") - num(C, "detected") - missed));
		extra(&b, i, 0, "%.2f%%", pct(num(C, "detected"), num(C, "trials")));
		extra(&b, i, 2, "%.0f", num(C, "located"));
		extra(&b, i, 3, "2800/0 (100%%)");
		i = cat_add(&b, cls, "clean");
		set(&b, i, G_CLEAN, num(N, "trials") - num(N, "false_positive_trials"));
		set(&b, i, G_FALSE, num(N, "false_positive_trials"));
		extra(&b, i, 0, "%.4f%% false", pct(num(N, "false_positive_trials"), num(N, "trials")));
		extra(&b, i, 3, "0/2800");
	}
	sdc_html_heading(f, 2, "Detection by target (Li et al. Table II form)");
	chart_draw(f, &b,
		   "Each trial checks a clean GEMM, one random single-bit flip in C before verification and one in B "
		   "after encoding. MISSED: a flip that changed the output (exact classes) or moved an element by more "
		   "than its row's threshold plus its clean difference (fast classes), not found by the checks. digest: "
		   "B flips the operand digest found; located: C flips named at their element.");
}

/* V-ABFT Tables 8-9 form: per fast class, flips of each bit of a C element, all distributions. */
static void gemm_bits(FILE *f, const json_t *bits, const json_t *dists, bool *oom)
{
	const char *cls;
	const json_t *rows;
	const size_t nd = SDC_MIN(json_array_size(dists), (size_t)MAX_EXTRA - 1);
	const char *head[MAX_EXTRA];
	char heads[MAX_EXTRA][48];
	for (size_t d = 0; d < nd; d++) {
		snprintf(heads[d], sizeof(heads[d]), "%% found %s", str_or(json_array_get(dists, d)));
		head[d] = heads[d];
	}
	head[nd] = "target";
	if (json_object_size(bits))
		sdc_html_heading(f, 2, "Detection by bit position (V-ABFT Tables 8-9 form)");
	json_object_foreach((json_t *)bits, cls, rows) {
		struct chart b;
		char id[64], title[200];
		const int width = json_array_size(rows) > 32 ? 64 : 32;
		snprintf(id, sizeof(id), "bits-%s", cls);
		snprintf(title, sizeof(title), "%s: single-bit flips of a C element by bit, every distribution", cls);
		chart_init(&b, oom, id, title, "bit", "flips", gemm_series, G_N, G_MISSED);
		chart_extras(&b, (int)nd + 1, head);
		size_t r;
		const json_t *row;
		json_array_foreach(rows, r, row) {
			const int bit = (int)num(row, "bit");
			const bool target = json_is_true(json_object_get(row, "target"));
			double trials = sum_of(row, "trials"), det = sum_of(row, "detected");
			if (!json_object_get(row, "trials")) /* rates only: one hundred a distribution */
				trials = 100.0 * (double)nd, det = sum_of(row, "detection_percent");
			/* the campaign's target holds every flip of its bits; elsewhere, those sure to breach */
			const double missed = target ? trials - det : sum_of(row, "must_find") - sum_of(row, "must_find_detected");
			const int i = cat_add(&b, float_field(bit, width), "%d", bit);
			set(&b, i, G_DET, det);
			set(&b, i, G_MISSED, missed);
			set(&b, i, G_BELOW, fmax(0, trials - det - missed));
			for (size_t d = 0; d < nd; d++)
				extra(&b, i, (int)d, "%.2f", num_at(row, "detection_percent", d));
			extra(&b, i, (int)nd, "%s", target ? "every flip" : "");
		}
		chart_draw(f, &b,
			   "MISSED: a flip of the top four exponent bits (the campaign's target: every one found) or one that "
			   "moved a value by more than its row's threshold plus its clean difference, not found.");
	}
}

/* V-ABFT Tables 4-5 form on the CPU, and the GPU's Table 5 form: tightness per size. */
static void tightness_chart(FILE *f, const char *id, const char *title, const json_t *rows, const double *band,
			    bool *oom)
{
	/* with a target range, a size outside it is red: the campaign's own rule (inclusive bounds) */
	static const struct sdc_html_series s[] = { { "tightness", "mean threshold / mean |E|", SDC_HTML_BLUE },
						    { "outside", "outside V-ABFT's range (MISSED)", SDC_HTML_RED } };
	static const char *const head[] = { "mean |E|", "max |E|", "mean threshold", "A-ABFT threshold",
					    "threshold @ H100 e_max", "false + rows" };
	struct chart b;
	chart_init(&b, oom, id, title, "n (n x n x n)", "tightness (x)", s, band ? 2 : 1, band ? 1 : -1);
	chart_extras(&b, 6, head);
	b.c.band = band;
	b.c.exclusive = true;
	size_t r;
	const json_t *row;
	json_array_foreach(rows, r, row) {
		const int i = cat_add(&b, NULL, "%.0f", num(row, "n"));
		const double t = num(row, "tightness");
		set(&b, i, band && (t < band[0] || t > band[1]) ? 1 : 0, t);
		extra(&b, i, 0, "%.3g", num(row, "mean_abs_e"));
		extra(&b, i, 1, "%.3g", num(row, "max_abs_e"));
		extra(&b, i, 2, "%.3g", num(row, "mean_threshold"));
		if (json_object_get(row, "a_abft_threshold"))
			extra(&b, i, 3, "%.3g", num(row, "a_abft_threshold"));
		if (json_object_get(row, "threshold_at_h100_emax"))
			extra(&b, i, 4, "%.3g", num(row, "threshold_at_h100_emax"));
		if (json_object_get(row, "false_positive_rows"))
			extra(&b, i, 5, "%.0f", num(row, "false_positive_rows"));
	}
	chart_draw(f, &b, band ? "Shaded: V-ABFT's range for this precision (7-20x FP32, Table 5; 7-15x FP64, Table 4)."
			       : NULL);
}

static void gemm_tightness(FILE *f, const json_t *t, bool *oom)
{
	static const double fp32[2] = { 7, 20 }, fp64[2] = { 7, 15 };
	if (!json_object_size(t))
		return;
	sdc_html_heading(f, 2, "Threshold tightness (V-ABFT Tables 4-5 form, U(-1,1))");
	const char *p;
	const json_t *rows;
	json_object_foreach((json_t *)t, p, rows) {
		char id[48], title[160];
		snprintf(id, sizeof(id), "tight-%s", p);
		snprintf(title, sizeof(title), "%s: threshold over the actual verification difference, per size", p);
		tightness_chart(f, id, title, rows, strcmp(p, "fp64") ? fp32 : fp64, oom);
	}
}

/* campaign gemm --gpus: the tightness per type, and the rows whose threshold fell below |E|. */
static void gpu_tightness(FILE *f, const json_t *g, bool *oom)
{
	static const double fp32[2] = { 7, 20 };
	static const struct sdc_html_series s[] = { { "clean", "threshold above |E|", SDC_HTML_BLUE },
						    { "false_alarm", "false positive (threshold below |E|)", SDC_HTML_RED } };
	char line[400];
	snprintf(line, sizeof(line), "Threshold tightness on %s (%s, %s), V-ABFT Table 5 form", str(g, "device"),
		 str(g, "name"), str(g, "blas"));
	sdc_html_heading(f, 2, line);
	struct chart b;
	chart_init(&b, oom, "gpu-false-positives", "Clean rows per type and size: threshold above or below |E|", "n",
		   "rows", s, 2, 1);
	const char *type;
	const json_t *rows;
	json_object_foreach(json_object_get(g, "types"), type, rows) {
		char id[64], title[160];
		snprintf(id, sizeof(id), "gpu-tight-%s", type);
		snprintf(title, sizeof(title), "%s on the GPU: threshold over |E|, per size", type);
		tightness_chart(f, id, title, rows, strcmp(type, "fp32-fast") ? NULL : fp32, oom);
		size_t r;
		const json_t *row;
		json_array_foreach(rows, r, row) {
			const int i = cat_add(&b, type, "%.0f", num(row, "n"));
			set(&b, i, 0, num(row, "rows") - num(row, "false_positive_rows"));
			set(&b, i, 1, num(row, "false_positive_rows"));
		}
	}
	chart_draw(f, &b, "Target: no row's threshold below its |E| (a false positive), for every type.");
}

/* ---- campaign embbag ---- */

/* Li et al. Table III's columns, in its order, with its figures (seeds/000, section VI-B2). */
static const char *const eb_kinds[] = { "table_high", "table_low", "output_high", "output_low", "clean" };
static const char *const eb_labels[] = { "table hi", "table lo", "output hi", "output lo", "clean" };
static const char *const eb_paper[] = { "99.5%", "47.0%", "-", "-", "9.5% FP" };

static void embbag_bits(FILE *f, const char *cell, const json_t *bits, bool *oom)
{
	char id[96], title[200];
	snprintf(id, sizeof(id), "embbag-bits-%s", cell);
	snprintf(title, sizeof(title), "%s: single-bit flips of a bag's fp32 output by bit", cell);
	struct chart b;
	chart_init(&b, oom, id, title, "bit", "flips", gemm_series, G_N, G_MISSED);
	for (size_t r = json_array_size(bits); r-- > 0;) { /* the sign bit first, as the papers' tables */
		const json_t *row = json_array_get(bits, r);
		const int bit = (int)num(row, "bit");
		/* a bit without a target (fast class, below the top four) may go unseen by a threshold */
		const json_t *target = json_object_get(row, "target");
		const double trials = num(row, "trials"), det = num(row, "detected");
		const double missed = target && !json_is_true(target) ? 0 : trials - det;
		const int i = cat_add(&b, float_field(bit, 32), "%d", bit);
		set(&b, i, G_DET, det);
		set(&b, i, G_MISSED, missed);
		set(&b, i, G_BELOW, trials - det - missed);
	}
	chart_draw(f, &b, NULL);
}

/* The Table III chart's series: as gemm's, but a column whose target is a share (the fast class's
 * table lo, 90%) may leave flips unfound and still meet it: those are not MISSED. */
static const struct sdc_html_series eb_series[] = {
	{ "detected", "found by the checks", SDC_HTML_GREEN },
	{ "masked", "masked (output unchanged)", SDC_HTML_GREY },
	{ "below", "not found, as its target allows (or below any threshold)", SDC_HTML_AMBER },
	{ "clean", "clean, no alarm", SDC_HTML_BLUE },
	{ "false_alarm", "false alarm", SDC_HTML_ORANGE },
	{ "missed", "MISSED (its target not met)", SDC_HTML_RED },
};

/* One cell's five columns into the Table III chart. */
static void embbag_cell(struct chart *b, const char *cell, const json_t *o)
{
	for (int k = 0; k < 5; k++) {
		const json_t *x = json_object_get(o, eb_kinds[k]), *need = json_object_get(x, "target_percent");
		const double trials = num(x, "trials"), det = num(x, "detected");
		const int i = cat_add(b, cell, "%s", eb_labels[k]);
		if (k == 4) { /* clean trials: any bag flagged is a false alarm */
			set(b, i, G_CLEAN, trials - det);
			set(b, i, G_FALSE, det);
		} else {
			/* MISSED only where the column's target is not met: a column without a target (fast
			 * output lo: below any threshold), or one whose share was met, has none */
			const bool met = !json_is_number(need) || pct(det, trials) >= json_number_value(need);
			const double missed = need && met ? 0 : trials - det;
			set(b, i, G_DET, det);
			set(b, i, G_MISSED, missed);
			set(b, i, G_BELOW, trials - det - missed);
		}
		extra(b, i, 0, "%.3f%%", pct(det, trials));
		if (k < 4)
			extra(b, i, 1, "%.0f", num(x, "located"));
		extra(b, i, 2, "%.3f%%", pct(num(x, "li_et_al"), trials));
		if (json_is_number(need))
			extra(b, i, 3, "%s%g%%", json_number_value(need) < 100 ? ">= " : "", json_number_value(need));
		extra(b, i, 4, "%s", eb_paper[k]);
	}
}

/* Cells a chart: 4 cells of 5 columns keep a column 28 px wide (base/html.c's layout), so a
 * group's name ("8bit-fast-d256") fits under its 140 px and never runs into the next one's. */
#define EB_CELLS_A_CHART 4

static void embbag(FILE *f, const json_t *j, bool *oom)
{
	static const char *const head[] = { "found", "located", "Li et al. Alg. 2 here", "target", "Li et al. Table III" };
	const char *cell;
	const json_t *o;
	size_t ncells = 0;
	json_object_foreach((json_t *)j, cell, o)
		ncells += json_is_object(o) && json_object_get(o, "table_high");
	size_t done = 0;
	do {
		struct chart b;
		char id[32], title[200];
		snprintf(id, sizeof(id), done ? "embbag-%zu" : "embbag", done / EB_CELLS_A_CHART + 1);
		snprintf(title, sizeof(title), "Li et al. Table III form: single-bit flips by target, per row format, class and "
					       "width%s", done ? " (continued)" : "");
		chart_init(&b, oom, id, title, "target", "trials", eb_series, G_N, G_MISSED);
		chart_extras(&b, 5, head);
		size_t k = 0;
		json_object_foreach((json_t *)j, cell, o) {
			if (!json_is_object(o) || !json_object_get(o, "table_high"))
				continue;
			if (k >= done && k < done + EB_CELLS_A_CHART)
				embbag_cell(&b, cell, o);
			k++;
		}
		if (!b.c.ncat) {
			chart_draw(f, &b, NULL);
			return;
		}
		if (!done)
			sdc_html_heading(f, 2, "Detection by target (Li et al. Table III form)");
		done += EB_CELLS_A_CHART;
		chart_draw(f, &b,
			   done < ncells ? NULL
					 : "table hi/lo: a flip in the upper or lower half of a quantised table element; output "
					   "hi/lo: in the top or bottom four bits of a bag's fp32 output; clean: trials with any "
					   "bag flagged. \"Li et al. Alg. 2 here\": the paper's own check (fp32 sums, relative "
					   "bound 1e-5) on the same bags. MISSED: flips a column had to find to meet its target "
					   "and did not (a column whose target is a share, met, misses none).");
	} while (done < ncells);
	bool heading = false;
	json_object_foreach((json_t *)j, cell, o) {
		const json_t *bits = json_object_get(o, "output_bits");
		if (!json_array_size(bits))
			continue;
		if (!heading)
			sdc_html_heading(f, 2, "Output flips by bit position");
		heading = true;
		embbag_bits(f, cell, bits, oom);
	}
}

/* ---- campaign cpu-faults (campaign_cpu.c's outcome classes) ---- */

#define CF_N 8
static const struct sdc_html_series cf_series[CF_N] = {
	{ "masked", "masked", SDC_HTML_GREY },
	{ "found_located", "found+located", SDC_HTML_GREEN },
	{ "vote_golden_only", "vote/golden only", "#00838f" },
	{ "crash", "crash", "#6a1b9a" },
	{ "hang", "hang", "#795548" },
	{ "no_verdict", "NO VERDICT", "#880e4f" }, /* (must be 0, as missed: sdcscan itself failed) */
	{ "other", "other", SDC_HTML_AMBER },
	{ "missed", "MISSED", SDC_HTML_RED },
};

static int cf_outcome(const char *key)
{
	for (int o = 0; o < CF_N; o++)
		if (!strcmp(key, cf_series[o].key))
			return o;
	return -1;
}

/* Bits a register of this name holds: gpr 64, xmm 128, ymm 256, zmm 512. */
static int reg_width(const char *cls, const char *reg)
{
	if (strcmp(cls, "vector"))
		return 64;
	return reg[0] == 'z' ? 512 : reg[0] == 'y' ? 256 : 128;
}

static const char *bit_group(bool vector, int bit)
{
	if (!vector)
		return bit >= 32 ? "bits 63-32" : "bits 31-0";
	return bit >= 256 ? "zmm upper (256-511)" : bit >= 128 ? "ymm upper (128-255)" : "xmm (0-127)";
}

/* The injected faults of every variant of one register class, by bit: at most 64 bars. */
static void cf_bits(FILE *f, const json_t *variants, const char *cls, bool *oom)
{
	int width = 0;
	size_t v, k;
	const json_t *var, *x;
	json_array_foreach(variants, v, var)
		json_array_foreach(json_object_get(var, "fault_list"), k, x)
			if (!strcmp(str(x, "class"), cls) && json_object_get(x, "register") && cf_outcome(str(x, "outcome")) >= 0)
				width = SDC_MAX(width, reg_width(cls, str(x, "register")));
	if (!width)
		return;
	const int per = width / 64 ? width / 64 : 1, nbins = width / per;
	double (*n)[CF_N] = calloc((size_t)nbins, sizeof(*n));
	if (!n) {
		*oom = true;
		return;
	}
	json_array_foreach(variants, v, var)
		json_array_foreach(json_object_get(var, "fault_list"), k, x) {
			const int o = cf_outcome(str(x, "outcome")), bit = (int)num(x, "bit");
			if (!strcmp(str(x, "class"), cls) && o >= 0 && bit >= 0 && bit < width)
				n[bit / per][o]++;
		}
	char id[32], title[160];
	snprintf(id, sizeof(id), "cpu-bits-%s", cls);
	snprintf(title, sizeof(title), "%s registers: faults by bit flipped%s", cls, per > 1 ? " (a bar a group of bits)" : "");
	struct chart b;
	chart_init(&b, oom, id, title, "bit", "faults", cf_series, CF_N, CF_N - 1);
	for (int i = nbins - 1; i >= 0; i--) {
		const int c = per > 1 ? cat_add(&b, bit_group(width > 64, i * per), "%d-%d", i * per + per - 1, i * per)
				      : cat_add(&b, bit_group(width > 64, i), "%d", i);
		for (int o = 0; o < CF_N; o++)
			set(&b, c, o, n[i][o]);
	}
	free(n);
	chart_draw(f, &b, NULL);
}

static bool vector_name(const char *reg)
{
	return reg[0] && strchr("xyz", reg[0]) && reg[1] == 'm' && reg[2] == 'm';
}

/* Register names in the order a reader looks for them: gpr first, then by name and number. */
static int by_register(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	const size_t px = strcspn(x, "0123456789"), py = strcspn(y, "0123456789");
	if (vector_name(x) != vector_name(y))
		return vector_name(x) - vector_name(y);
	const int c = px != py ? (int)px - (int)py : strncmp(x, y, px);
	return c ? c : atoi(x + px) - atoi(y + py);
}

static void cf_registers(FILE *f, const json_t *variants, bool *oom)
{
	json_t *seen = json_object();
	size_t v, k;
	const json_t *var, *x;
	json_array_foreach(variants, v, var)
		json_array_foreach(json_object_get(var, "fault_list"), k, x) {
			const int o = cf_outcome(str(x, "outcome"));
			const char *reg = str(x, "register");
			if (o < 0 || !*reg)
				continue;
			json_t *counts = json_object_get(seen, reg);
			if (!counts) {
				counts = json_pack("[iiiiiiii]", 0, 0, 0, 0, 0, 0, 0, 0);
				json_object_set_new(seen, reg, counts);
			}
			json_array_set_new(counts, (size_t)o, json_integer(json_integer_value(json_array_get(counts, (size_t)o)) + 1));
		}
	const size_t nreg = json_object_size(seen);
	const char **names = calloc(nreg + 1, sizeof(*names));
	size_t i = 0;
	const char *key;
	json_t *val;
	json_object_foreach(seen, key, val)
		if (names)
			names[i++] = key;
	if (names)
		qsort(names, nreg, sizeof(*names), by_register);
	struct chart b;
	chart_init(&b, oom, "cpu-registers", "Faults by register flipped", "register", "faults", cf_series, CF_N, CF_N - 1);
	for (i = 0; names && i < nreg; i++) {
		const json_t *counts = json_object_get(seen, names[i]);
		const int c = cat_add(&b, vector_name(names[i]) ? "vector" : "general-purpose", "%s", names[i]);
		for (int o = 0; o < CF_N; o++)
			set(&b, c, o, (double)json_integer_value(json_array_get(counts, (size_t)o)));
	}
	if (!names && nreg)
		*oom = true;
	chart_draw(f, &b, NULL);
	free(names);
	json_decref(seen);
}

static void cpu_faults(FILE *f, const json_t *j, bool *oom)
{
	static const char *const head[] = { "not injected", "unfaulted run (s)" };
	const json_t *variants = json_object_get(j, "variants");
	char line[300];
	snprintf(line, sizeof(line), "Register faults on %s (seed %.0f, %.0f a probe, %s registers, at %s instants, %s "
		 "breakpoints)", str(j, "faulted_device"), num(j, "seed"), num(j, "faults_per_probe"), str(j, "registers"),
		 str(j, "instant"), str(j, "breakpoints"));
	sdc_html_heading(f, 2, line);
	struct chart b;
	size_t v;
	const json_t *var;
	if (json_array_size(json_object_get(j, "probes"))) {
		chart_init(&b, oom, "cpu-probes", "Faults by probe: what became of each", "probe", "faults", cf_series,
			   CF_N, CF_N - 1);
		json_array_foreach(json_object_get(j, "probes"), v, var) {
			const int i = cat_add(&b, NULL, "%s", str(var, "probe"));
			for (int o = 0; o < CF_N; o++)
				set(&b, i, o, num(var, cf_series[o].key));
		}
		chart_draw(f, &b, NULL);
	}
	chart_init(&b, oom, "cpu-targets", "Faults by probe/variant: what became of each", "probe/variant", "faults",
		   cf_series, CF_N, CF_N - 1);
	chart_extras(&b, 2, head);
	json_array_foreach(variants, v, var) {
		const int i = cat_add(&b, NULL, "%s/%s", str(var, "probe"), str(var, "variant"));
		for (int o = 0; o < CF_N; o++)
			set(&b, i, o, num(var, cf_series[o].key));
		extra(&b, i, 0, "%.0f", num(var, "not_injected"));
		extra(&b, i, 1, "%.2f", num(var, "reference_seconds"));
	}
	chart_draw(f, &b,
		   "masked: nothing reported, the unfaulted work digest; found+located: the probe's own checks at the "
		   "faulted CPU; vote/golden only: found by the vote or a golden alone; crash, hang: named at that CPU; "
		   "NO VERDICT: the run died, was killed or wrote no verdict (sdcscan itself failed); other: anything "
		   "else; MISSED: the work changed and nothing reported it.");
	sdc_html_heading(f, 2, "By bit position and register (counted from the fault list)");
	cf_bits(f, variants, "gpr", oom);
	cf_bits(f, variants, "vector", oom);
	cf_registers(f, variants, oom);
	size_t i;
	const json_t *x;
	json_array_foreach(json_object_get(j, "left_out"), i, x) {
		snprintf(line, sizeof(line), "%s: left out: %s", str(x, "probe"), str(x, "why"));
		sdc_html_para(f, "note", line);
	}
}

/* ---- the page ---- */

char *sdc_campaign_html_text(const char *campaign, const struct sdc_facts *facts, size_t *len)
{
	const json_t *j = sdc_facts_json((struct sdc_facts *)facts);
	char *buf = NULL, title[96];
	size_t n = 0;
	bool oom = false;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return NULL;
	snprintf(title, sizeof(title), "sdcscan campaign %s", campaign);
	sdc_html_begin(f, title);
	banner(f, j);
	targets_table(f, json_object_get(j, "targets"));
	if (json_is_object(json_object_get(j, "table2")))
		gemm_table2(f, json_object_get(j, "table2"), &oom);
	if (json_is_object(json_object_get(j, "bits")))
		gemm_bits(f, json_object_get(j, "bits"), json_object_get(j, "distributions"), &oom);
	if (json_is_object(json_object_get(j, "tightness")))
		gemm_tightness(f, json_object_get(j, "tightness"), &oom);
	if (json_is_object(json_object_get(j, "gpu_tightness")))
		gpu_tightness(f, json_object_get(j, "gpu_tightness"), &oom);
	embbag(f, j, &oom);
	if (json_is_array(json_object_get(j, "variants")))
		cpu_faults(f, j, &oom);
	sdc_html_end(f);
	if (fclose(f) || oom) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

int sdc_campaign_html_path_ok(const char *path, char *err, size_t errlen)
{
	char where[4096];
	return path && sdc_output_path(path, where, sizeof(where), err, errlen) ? -1 : 0;
}

int sdc_campaign_html(const char *path, const char *campaign, const struct sdc_facts *facts)
{
	size_t len = 0;
	char err[600];
	char *page = sdc_campaign_html_text(campaign, facts, &len);
	int rc = 0;
	if (!page) {
		sdc_error("campaign %s --html %s: out of memory", campaign, path);
		return -1;
	}
	if (sdc_write_atomic(path, page, len, err, sizeof(err))) {
		sdc_error("campaign %s --html: %s", campaign, err);
		rc = -1;
	}
	free(page);
	return rc;
}
