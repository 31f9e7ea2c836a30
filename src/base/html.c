/*
 * Self-contained HTML pages with SVG bar charts (html.h). The page carries its CSS inline and
 * uses the browser's own sans-serif font; a chart is one inline <svg> whose every segment holds a
 * <title> (its hover text, SVG 1.1 section 5.4 "The 'desc' and 'title' elements") and data-*
 * attributes naming its chart, category, series and value, which the table beside it repeats.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/html.h"

#define PLOT_H 220.0   /* the value axis, px */
#define LEFT 64.0      /* value ticks and the axis label */
#define RIGHT 16.0
#define TOP 58.0       /* title and legend */
#define MIN_SEG 2.5    /* a non-zero segment is at least this tall */
#define MIN_MARK 5.0   /* and a marked (missed) one this tall */
#define CHAR_W 6.6     /* an estimate of a character's width at 11-12 px, for the layout only */

void sdc_html_escape(FILE *f, const char *text)
{
	for (const char *p = text ? text : ""; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*p, f);
		}
	}
}

static const char page_css[] =
	"body{font-family:sans-serif;margin:16px 24px;color:#212121;background:#fff}"
	"h1{font-size:21px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}h3{font-size:15px}"
	"figure.chart{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start;margin:10px 0 22px}"
	"figure.chart svg{flex:none}"
	".side{overflow:auto}"
	"table{border-collapse:collapse;font-size:12px}"
	"td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}"
	"th{background:#f3f3f3}td.l,th.l{text-align:left}"
	"td.missed,tr.bad td{background:" SDC_HTML_RED ";color:#fff;font-weight:bold}"
	"p.ok,p.bad{color:#fff;padding:6px 10px;font-weight:bold;display:inline-block}"
	"p.ok{background:" SDC_HTML_GREEN "}p.bad{background:" SDC_HTML_RED "}"
	"p.note{color:#555;font-size:12px;max-width:70em}"
	"svg text{font-family:sans-serif;fill:#212121}"
	"svg .tick{font-size:11px}svg .ctitle{font-size:14px;font-weight:bold}"
	"svg .mark{fill:" SDC_HTML_RED ";font-size:11px;font-weight:bold}";

void sdc_html_begin(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>", f);
	sdc_html_escape(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n<h1>", page_css);
	sdc_html_escape(f, title);
	fputs("</h1>\n", f);
}

void sdc_html_end(FILE *f)
{
	fputs("</body></html>\n", f);
}

void sdc_html_heading(FILE *f, int level, const char *text)
{
	level = level == 3 ? 3 : 2;
	fprintf(f, "<h%d>", level);
	sdc_html_escape(f, text);
	fprintf(f, "</h%d>\n", level);
}

void sdc_html_para(FILE *f, const char *css_class, const char *text)
{
	if (css_class)
		fprintf(f, "<p class=\"%s\">", css_class);
	else
		fputs("<p>", f);
	sdc_html_escape(f, text);
	fputs("</p>\n", f);
}

void sdc_html_table(FILE *f, const char *id, int ncols, const char *const *head, int nrows, const char *const *cells,
		    const bool *bad)
{
	fputs("<table id=\"", f);
	sdc_html_escape(f, id);
	fputs("\"><thead><tr>", f);
	for (int c = 0; c < ncols; c++) {
		fputs("<th class=\"l\">", f);
		sdc_html_escape(f, head[c]);
		fputs("</th>", f);
	}
	fputs("</tr></thead><tbody>\n", f);
	for (int r = 0; r < nrows; r++) {
		fputs(bad && bad[r] ? "<tr class=\"bad\">" : "<tr>", f);
		for (int c = 0; c < ncols; c++) {
			fputs("<td class=\"l\">", f);
			sdc_html_escape(f, cells[r * ncols + c]);
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

/* A value as the page prints it: integers whole, others to four significant digits. */
static void fmt_value(char *buf, size_t len, double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.4g", v);
}

/* The axis' top and tick step: 1, 2 or 5 times a power of ten, at most about six ticks. */
static void nice_scale(double max, double *top, double *step)
{
	if (!(max > 0)) {
		*top = *step = 1;
		return;
	}
	const double raw = max / 5, mag = pow(10, floor(log10(raw)));
	const double mult[] = { 1, 2, 5, 10 };
	*step = 10 * mag;
	for (int i = 0; i < 4; i++)
		if (mult[i] * mag >= raw) {
			*step = mult[i] * mag;
			break;
		}
	*top = ceil(max / *step - 1e-9) * *step;
}

static bool used(const struct sdc_html_chart *c, int s);

/* The geometry of one chart, from its categories and labels. */
struct layout {
	double slot, bar, plot_w, width, height, label_h, group_h, top, step;
	bool vertical; /* category labels written upward */
};

static struct layout plan(const struct sdc_html_chart *c)
{
	struct layout l = { 0 };
	l.slot = c->ncat <= 12 ? 46 : c->ncat <= 24 ? 28 : c->ncat <= 48 ? 18 : 13;
	l.plot_w = fmax(240, l.slot * c->ncat);
	l.slot = l.plot_w / (c->ncat > 0 ? c->ncat : 1);
	l.bar = l.slot * 0.74;
	size_t longest = 0, legend = 0;
	for (int i = 0; i < c->ncat; i++)
		longest = fmax(longest, strlen(c->cat[i]));
	for (int s = 0; s < c->nseries; s++)
		legend += used(c, s) ? strlen(c->series[s].name) + 5 : 0;
	l.vertical = longest * CHAR_W > l.slot - 2;
	l.label_h = l.vertical ? fmin(120, longest * CHAR_W + 10) : 18;
	l.group_h = c->group ? 24 : 0;
	l.width = fmax(LEFT + l.plot_w + RIGHT, fmax(LEFT + legend * CHAR_W, strlen(c->title) * 8.0 + 20));
	l.height = TOP + PLOT_H + l.label_h + l.group_h + 22;
	double max = 0;
	bool whole = true; /* counts: no tick between two whole numbers */
	for (int i = 0; i < c->ncat; i++) {
		double sum = 0;
		for (int s = 0; s < c->nseries; s++) {
			sum += c->v[i * c->nseries + s];
			whole &= c->v[i * c->nseries + s] == floor(c->v[i * c->nseries + s]);
		}
		max = fmax(max, sum);
	}
	if (c->band)
		max = fmax(max, c->band[1]);
	nice_scale(max * 1.04, &l.top, &l.step);
	if (whole && l.step < 1)
		l.step = 1, l.top = ceil(l.top);
	return l;
}

/* Whether a series appears: the marked one always (a legend that says what red would be), the
 * others where a category has some of it. */
static bool used(const struct sdc_html_chart *c, int s)
{
	for (int i = 0; i < c->ncat && s != c->mark; i++)
		if (c->v[i * c->nseries + s] != 0)
			return true;
	return s == c->mark;
}

static double total_of(const struct sdc_html_chart *c, int i)
{
	double sum = 0;
	for (int s = 0; s < c->nseries; s++)
		sum += c->v[i * c->nseries + s];
	return sum;
}

/* The frame: title, legend, value axis with its ticks and grid, the target band, axis labels. */
static void draw_frame(FILE *f, const struct sdc_html_chart *c, const struct layout *l)
{
	fputs("<text class=\"ctitle\" x=\"4\" y=\"17\">", f);
	sdc_html_escape(f, c->title);
	fputs("</text>\n<g class=\"legend\">", f);
	double x = LEFT;
	for (int s = 0; s < c->nseries; s++) {
		if (!used(c, s))
			continue;
		fprintf(f, "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text class=\"tick\" x=\"%.1f\" y=\"38.5\"%s>", x, c->series[s].colour, x + 16,
			s == c->mark ? " style=\"font-weight:bold\"" : "");
		sdc_html_escape(f, c->series[s].name);
		fputs("</text>", f);
		x += (strlen(c->series[s].name) + 5) * CHAR_W;
	}
	fputs("</g>\n", f);
	const double y0 = TOP + PLOT_H;
	if (c->band) {
		const double a = y0 - c->band[1] / l->top * PLOT_H, b = y0 - c->band[0] / l->top * PLOT_H;
		fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#e8f5e9\"/>\n",
			LEFT, a, l->plot_w, b - a);
	}
	for (double t = 0; t <= l->top * (1 + 1e-9); t += l->step) {
		const double y = y0 - t / l->top * PLOT_H;
		char v[40];
		fmt_value(v, sizeof(v), t);
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>"
			   "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			LEFT, LEFT + l->plot_w, y, y, LEFT - 5, y + 4, v);
	}
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#424242\"/>", LEFT, LEFT, TOP, y0);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#424242\"/>\n", LEFT,
		LEFT + l->plot_w, y0, y0);
	fprintf(f, "<text class=\"tick\" transform=\"translate(14,%.1f) rotate(-90)\" text-anchor=\"middle\">",
		TOP + PLOT_H / 2);
	sdc_html_escape(f, c->y_label);
	fprintf(f, "</text>\n<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", LEFT + l->plot_w / 2,
		l->height - 6);
	sdc_html_escape(f, c->x_label);
	fputs("</text>\n", f);
}

/* Category labels under the axis, and each group's bracket and name under them. */
static void draw_labels(FILE *f, const struct sdc_html_chart *c, const struct layout *l)
{
	const double y0 = TOP + PLOT_H;
	for (int i = 0; i < c->ncat; i++) {
		const double x = LEFT + (i + 0.5) * l->slot;
		if (l->vertical)
			fprintf(f, "<text class=\"tick\" transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"end\">",
				x + 4, y0 + 6);
		else
			fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, y0 + 14);
		sdc_html_escape(f, c->cat[i]);
		fputs("</text>\n", f);
	}
	for (int i = 0, g = 0; c->group && i < c->ncat; g++) {
		int j = i;
		while (j + 1 < c->ncat && !strcmp(c->group[j + 1] ? c->group[j + 1] : "", c->group[i] ? c->group[i] : ""))
			j++;
		const double a = LEFT + i * l->slot + 2, b = LEFT + (j + 1) * l->slot - 2, y = y0 + l->label_h + 4;
		if (g % 2) /* every other group shaded, so where one ends shows in the plot too */
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>", a - 2,
				TOP, b - a + 4, PLOT_H);
		fprintf(f, "<path d=\"M%.1f %.1fv5H%.1fv-5\" stroke=\"#757575\" fill=\"none\"/>"
			   "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
			a, y + 5, b, (a + b) / 2, y + 19);
		sdc_html_escape(f, c->group[i]);
		fputs("</text>\n", f);
		i = j + 1;
	}
}

/* The hover text of one segment: category (group): series value of total (share). */
static void seg_title(FILE *f, const struct sdc_html_chart *c, int i, int s, double total)
{
	char v[40], t[40];
	fmt_value(v, sizeof(v), c->v[i * c->nseries + s]);
	fmt_value(t, sizeof(t), total);
	fputs("<title>", f);
	sdc_html_escape(f, c->cat[i]);
	if (c->group && c->group[i]) {
		fputs(" (", f);
		sdc_html_escape(f, c->group[i]);
		fputs(")", f);
	}
	fputs(": ", f);
	sdc_html_escape(f, c->series[s].name);
	fprintf(f, " %s", v);
	if (c->nseries > 1 && !c->exclusive)
		fprintf(f, " of %s (%.2f%%)", t, total > 0 ? 100 * c->v[i * c->nseries + s] / total : 0.0);
	fputs("</title>", f);
}

/* One bar: its segments stacked from the axis in series order, the marked count above it. */
static void draw_bar(FILE *f, const struct sdc_html_chart *c, const struct layout *l, int i)
{
	const double total = total_of(c, i), x = LEFT + i * l->slot + (l->slot - l->bar) / 2;
	double y = TOP + PLOT_H;
	for (int s = 0; s < c->nseries; s++) {
		const double v = c->v[i * c->nseries + s];
		if (!(v > 0))
			continue;
		const double h = fmax(v / l->top * PLOT_H, s == c->mark ? MIN_MARK : MIN_SEG);
		char vs[40];
		fmt_value(vs, sizeof(vs), v);
		y -= h;
		fprintf(f, "<rect id=\"%s-c%d-%s\" data-chart=\"%s\" data-cat=\"", c->id, i, c->series[s].key, c->id);
		sdc_html_escape(f, c->cat[i]);
		fprintf(f, "\" data-series=\"%s\" data-value=\"%s\" x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" "
			   "fill=\"%s\">", c->series[s].key, vs, x, y, l->bar, h, c->series[s].colour);
		seg_title(f, c, i, s, total);
		fputs("</rect>\n", f);
	}
	if (c->mark >= 0 && c->v[i * c->nseries + c->mark] > 0) {
		char vs[40];
		fmt_value(vs, sizeof(vs), c->v[i * c->nseries + c->mark]);
		fprintf(f, "<text class=\"mark\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			x + l->bar / 2, fmax(TOP - 4, y - 4), vs);
	}
}

/* The table beside the chart: a row a category, a column a series, then the total and extras. */
static void draw_table(FILE *f, const struct sdc_html_chart *c, double height)
{
	fprintf(f, "<div class=\"side\" style=\"max-height:%.0fpx\"><table id=\"%s-table\"><thead><tr>", height, c->id);
	if (c->group)
		fputs("<th class=\"l\"></th>", f);
	fputs("<th class=\"l\">", f);
	sdc_html_escape(f, c->x_label);
	fputs("</th>", f);
	for (int s = 0; s < c->nseries; s++) {
		if (!used(c, s))
			continue;
		fputs("<th>", f);
		sdc_html_escape(f, c->series[s].name);
		fputs("</th>", f);
	}
	if (c->nseries > 1 && !c->exclusive)
		fputs("<th>total</th>", f);
	for (int e = 0; e < c->nextra; e++) {
		fputs("<th>", f);
		sdc_html_escape(f, c->extra_head[e]);
		fputs("</th>", f);
	}
	fputs("</tr></thead><tbody>\n", f);
	int empty = 0;
	for (int i = 0; i < c->ncat; i++) {
		if (c->nseries > 1 && total_of(c, i) == 0 && !c->nextra) { /* a bit no fault hit: the chart shows it */
			empty++;
			continue;
		}
		fputs("<tr><td class=\"l\">", f);
		if (c->group) {
			sdc_html_escape(f, c->group[i]);
			fputs("</td><td class=\"l\">", f);
		}
		sdc_html_escape(f, c->cat[i]);
		fputs("</td>", f);
		for (int s = 0; s < c->nseries; s++) {
			const double v = c->v[i * c->nseries + s];
			if (!used(c, s))
				continue;
			char vs[40] = ""; /* exclusive: a value is in one column, the others empty (not 0) */
			if (v != 0 || !c->exclusive)
				fmt_value(vs, sizeof(vs), v);
			fprintf(f, "<td%s data-chart=\"%s\" data-cat=\"", s == c->mark && v > 0 ? " class=\"missed\"" : "",
				c->id);
			sdc_html_escape(f, c->cat[i]);
			fprintf(f, "\" data-series=\"%s\">%s</td>", c->series[s].key, vs);
		}
		if (c->nseries > 1 && !c->exclusive) {
			char t[40];
			fmt_value(t, sizeof(t), total_of(c, i));
			fprintf(f, "<td>%s</td>", t);
		}
		for (int e = 0; e < c->nextra; e++) {
			fputs("<td>", f);
			sdc_html_escape(f, c->extra[i * c->nextra + e]);
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>", f);
	if (empty)
		fprintf(f, "<p class=\"note\">%d rows with nothing in them left out</p>", empty);
	fputs("</div>\n", f);
}

void sdc_html_bars(FILE *f, const struct sdc_html_chart *c)
{
	const struct layout l = plan(c);
	fprintf(f, "<figure class=\"chart\" id=\"%s\">\n<svg width=\"%.0f\" "
		   "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>", c->id, l.width, l.height, l.width,
		l.height);
	sdc_html_escape(f, c->title);
	fputs("</title>\n", f);
	draw_frame(f, c, &l);
	draw_labels(f, c, &l);
	for (int i = 0; i < c->ncat; i++)
		draw_bar(f, c, &l, i);
	fputs("</svg>\n", f);
	draw_table(f, c, l.height);
	fputs("</figure>\n", f);
	if (c->note)
		sdc_html_para(f, "note", c->note);
}
