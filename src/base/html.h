/*
 * Self-contained HTML pages with SVG bar charts: no script, no font, no file or host besides the
 * page, so a page opens anywhere, offline. A chart is stacked bars (one bar a category, one
 * segment a series) with a title, axes, a legend, each segment's count on hover (an SVG <title>)
 * and the same counts in a table beside it. One series may be marked (a miss): its non-zero
 * counts get their number above the bar and a red cell in the table, so one miss in ten thousand
 * trials is still seen. Every text written is escaped. Campaigns draw with it (inject/campaign_html.c);
 * any command can.
 */
#ifndef SDC_HTML_H
#define SDC_HTML_H

#include <stdbool.h>
#include <stdio.h>

/* Colours every page uses for the same meaning. */
#define SDC_HTML_RED "#d32f2f"	  /* missed: a fault no check found */
#define SDC_HTML_GREEN "#2e7d32"  /* detected */
#define SDC_HTML_GREY "#9e9e9e"	  /* masked: the output did not change */
#define SDC_HTML_AMBER "#f9a825"  /* not found, where no check is asked to find it */
#define SDC_HTML_ORANGE "#ef6c00" /* a false alarm */
#define SDC_HTML_BLUE "#1565c0"	  /* neutral: clean trials, plain quantities */

struct sdc_html_series {
	const char *key;    /* a word: data-series attribute and element ids */
	const char *name;   /* legend and table heading */
	const char *colour; /* #rrggbb */
};

struct sdc_html_chart {
	const char *id;	 /* a word, unique in the page: the chart's element ids start with it */
	const char *title, *x_label, *y_label;
	const char *note; /* a line under the chart, or NULL */
	int ncat, nseries;
	const struct sdc_html_series *series;
	const char *const *cat;	  /* ncat labels */
	const char *const *group; /* ncat group labels (consecutive equal ones make a group), or NULL */
	const double *v;	  /* ncat x nseries values, category-major */
	int mark;		  /* the series whose non-zero values must stand out (missed), or -1 */
	/* columns after the series in the table: nextra headings and ncat x nextra cells (NULL: empty) */
	int nextra;
	const char *const *extra_head;
	const char *const *extra;
	const double *band; /* two values: a shaded range on the value axis (a target), or NULL */
	bool exclusive;	    /* a category's value is in one series only: no total, no share */
};

/* text with & < > " ' as character references: safe in element content and quoted attributes */
void sdc_html_escape(FILE *f, const char *text);
/* The page up to its <h1> (escaped title) and after its last chart. */
void sdc_html_begin(FILE *f, const char *title);
void sdc_html_end(FILE *f);
/* A heading (level 2 or 3) and a paragraph; css_class is one of the page's (ok, bad, note) or NULL. */
void sdc_html_heading(FILE *f, int level, const char *text);
void sdc_html_para(FILE *f, const char *css_class, const char *text);
/* A plain table: ncols headings, nrows x ncols cells (NULL: empty); a row whose bad[] is true is
 * drawn red (bad may be NULL). */
void sdc_html_table(FILE *f, const char *id, int ncols, const char *const *head, int nrows, const char *const *cells,
		    const bool *bad);
/* One chart and its table, side by side. */
void sdc_html_bars(FILE *f, const struct sdc_html_chart *c);

#endif
