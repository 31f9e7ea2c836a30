/*
 * Linux EDAC's memory error counters (hwerr/hwerr.h): read from sysfs, compared between two readings.
 * The layout, from the kernel's Documentation/ABI/testing/sysfs-devices-edac and
 * drivers/edac/edac_mc_sysfs.c: /sys/devices/system/edac/mc/mcN/{ce_count, ue_count,
 * ce_noinfo_count, ue_noinfo_count, seconds_since_reset, mc_name}; per DIMM mcN/dimmM/ (rankM/ on
 * a chip-select based controller, edac_create_dimm_object) with dimm_ce_count, dimm_ue_count,
 * dimm_label, dimm_location; on kernels with the legacy interface only, mcN/csrowK/ with
 * chJ_ce_count, chJ_dimm_label and the row's ue_count.
 */
#include "hwerr/hwerr.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/parse.h"

/* The first line of dir/name, without its newline; false when it cannot be read. */
static bool read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	const bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static int64_t read_count(const char *dir, const char *name)
{
	char buf[64];
	int64_t v;
	return read_line(dir, name, buf, sizeof(buf)) && sdc_parse_i64(buf, &v) && v >= 0 ? v : -1;
}

/* N of "<prefix>N", or -1 when name is not one. */
static int numbered(const char *name, const char *prefix)
{
	const size_t n = strlen(prefix);
	int64_t v;
	if (strncmp(name, prefix, n) || !name[n] || !sdc_parse_i64(name + n, &v) || v < 0 || v > 1 << 20)
		return -1;
	return (int)v;
}

static int cmp_mc(const void *a, const void *b)
{
	const struct sdc_edac_mc *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

static int cmp_dimm(const void *a, const void *b)
{
	const struct sdc_edac_dimm *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static struct sdc_edac_dimm *add_dimm(struct sdc_edac_mc *mc)
{
	struct sdc_edac_dimm *d = realloc(mc->dimms, (size_t)(mc->ndimms + 1) * sizeof(*d));
	if (!d)
		return NULL;
	mc->dimms = d;
	d += mc->ndimms++;
	memset(d, 0, sizeof(*d));
	d->ce = d->ue = -1;
	return d;
}

/* A legacy csrowK: each chJ a DIMM for corrected errors; the row itself, named with every
 * channel's label, for uncorrected ones (the row counts them, not its channels). */
static int read_csrow(const char *rowdir, const char *row, struct sdc_edac_mc *mc)
{
	char labels[80] = "";
	for (int ch = 0; ch < 16; ch++) {
		char name[32], label[80] = "";
		snprintf(name, sizeof(name), "ch%d_ce_count", ch);
		const int64_t ce = read_count(rowdir, name);
		if (ce < 0)
			break;
		struct sdc_edac_dimm *d = add_dimm(mc);
		if (!d)
			return -1;
		snprintf(d->name, sizeof(d->name), "%.20s/ch%d", row, ch);
		snprintf(name, sizeof(name), "ch%d_dimm_label", ch);
		read_line(rowdir, name, label, sizeof(label));
		sdc_strlcpy(d->label, label, sizeof(d->label));
		d->ce = ce;
		const size_t used = strlen(labels);
		if (label[0] && used < sizeof(labels))
			snprintf(labels + used, sizeof(labels) - used, "%s%s", used ? " or " : "", label);
	}
	struct sdc_edac_dimm *r = add_dimm(mc);
	if (!r)
		return -1;
	sdc_strlcpy(r->name, row, sizeof(r->name));
	sdc_strlcpy(r->label, labels, sizeof(r->label));
	r->ue = read_count(rowdir, "ue_count");
	return 0;
}

static int read_mc(const char *mcdir, struct sdc_edac_mc *mc)
{
	mc->ce = read_count(mcdir, "ce_count");
	mc->ue = read_count(mcdir, "ue_count");
	mc->ce_noinfo = read_count(mcdir, "ce_noinfo_count");
	mc->ue_noinfo = read_count(mcdir, "ue_noinfo_count");
	mc->since_reset = read_count(mcdir, "seconds_since_reset");
	read_line(mcdir, "mc_name", mc->name, sizeof(mc->name));
	DIR *d = opendir(mcdir);
	if (!d)
		return 0;
	struct dirent *de;
	bool have_dimms = false;
	int rc = 0;
	while ((de = readdir(d)) && !rc) {
		if (numbered(de->d_name, "dimm") < 0 && numbered(de->d_name, "rank") < 0)
			continue;
		char sub[512];
		snprintf(sub, sizeof(sub), "%.440s/%.60s", mcdir, de->d_name);
		struct sdc_edac_dimm *x = add_dimm(mc);
		if (!x) {
			rc = -1;
			break;
		}
		sdc_strlcpy(x->name, de->d_name, sizeof(x->name));
		x->ce = read_count(sub, "dimm_ce_count");
		x->ue = read_count(sub, "dimm_ue_count");
		read_line(sub, "dimm_label", x->label, sizeof(x->label));
		read_line(sub, "dimm_location", x->location, sizeof(x->location));
		have_dimms = true;
	}
	/* The legacy rows only where the controller has no DIMM objects: both count the same errors. */
	rewinddir(d);
	while (!have_dimms && !rc && (de = readdir(d))) {
		if (numbered(de->d_name, "csrow") < 0)
			continue;
		char sub[512];
		snprintf(sub, sizeof(sub), "%.440s/%.60s", mcdir, de->d_name);
		rc = read_csrow(sub, de->d_name, mc);
	}
	closedir(d);
	if (mc->ndimms)
		qsort(mc->dimms, (size_t)mc->ndimms, sizeof(*mc->dimms), cmp_dimm);
	return rc;
}

int sdc_edac_read(const char *dir, struct sdc_edac *e)
{
	memset(e, 0, sizeof(*e));
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			snprintf(e->why, sizeof(e->why), "no %.120s: no EDAC driver for this host's memory controllers is loaded",
				 dir);
		else
			snprintf(e->why, sizeof(e->why), "%.150s: %s", dir, strerror(errno));
		return 0;
	}
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && !rc) {
		const int idx = numbered(de->d_name, "mc");
		if (idx < 0)
			continue;
		struct sdc_edac_mc *m = realloc(e->mcs, (size_t)(e->nmcs + 1) * sizeof(*m));
		if (!m) {
			rc = -1;
			break;
		}
		e->mcs = m;
		m += e->nmcs++;
		memset(m, 0, sizeof(*m));
		m->index = idx;
		char sub[512];
		snprintf(sub, sizeof(sub), "%.440s/%.60s", dir, de->d_name);
		rc = read_mc(sub, m);
	}
	closedir(d);
	if (rc) {
		sdc_edac_release(e);
		snprintf(e->why, sizeof(e->why), "out of memory reading %.150s", dir);
		return -1;
	}
	qsort(e->mcs, (size_t)e->nmcs, sizeof(*e->mcs), cmp_mc);
	e->read = true;
	if (!e->nmcs)
		snprintf(e->why, sizeof(e->why), "%.150s holds no memory controller", dir);
	return 0;
}

void sdc_edac_release(struct sdc_edac *e)
{
	for (int i = 0; i < e->nmcs; i++)
		free(e->mcs[i].dimms);
	free(e->mcs);
	e->mcs = NULL;
	e->nmcs = 0;
}

/* New errors of a counter: after - before; a counter reset during the run counts from zero. */
static int64_t grown(int64_t before, int64_t after, bool reset_in_run)
{
	if (after < 0)
		return 0;
	if (reset_in_run)
		return after;
	return before >= 0 && after > before ? after - before : 0;
}

static void edac_event(struct sdc_hwerr_event *ev, const struct sdc_edac_mc *mc, bool ue, int64_t count)
{
	memset(ev, 0, sizeof(*ev));
	ev->cls = ue ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED;
	sdc_strlcpy(ev->kind, ue ? "edac-uncorrected" : "edac-corrected", sizeof(ev->kind));
	sdc_strlcpy(ev->source, "edac", sizeof(ev->source));
	snprintf(ev->key, sizeof(ev->key), "mc%d", mc->index);
	ev->gpu = -1;
	ev->count = count;
	ev->when = -1;
	snprintf(ev->operation, sizeof(ev->operation), "EDAC memory controller mc%d%s%.60s%s", mc->index,
		 mc->name[0] ? " (" : "", mc->name, mc->name[0] ? ")" : "");
}

/* The counter's name in sysfs, for the detail. */
static const char *counter_name(const struct sdc_edac_dimm *d, bool ue)
{
	if (!strncmp(d->name, "csrow", 5))
		return ue ? "ue_count" : strchr(d->name, '/') ? "chN_ce_count" : "ce_count";
	return ue ? "dimm_ue_count" : "dimm_ce_count";
}

int sdc_edac_compare(const struct sdc_edac *before, const struct sdc_edac *after, struct sdc_hwerr_event *out,
		     int max)
{
	int n = 0;
	for (int a = 0; a < after->nmcs; a++) {
		const struct sdc_edac_mc *ma = &after->mcs[a], *mb = NULL;
		for (int b = 0; b < before->nmcs; b++)
			if (before->mcs[b].index == ma->index)
				mb = &before->mcs[b];
		if (!mb)
			continue; /* a controller that appeared during the run: nothing to compare with */
		/* seconds_since_reset went down: someone reset the counters (reset_counters) meanwhile. */
		const bool reset = ma->since_reset >= 0 && mb->since_reset >= 0 && ma->since_reset < mb->since_reset;
		const char *why_reset = reset ? " (the counters were reset during the run)" : "";
		for (int ue = 1; ue >= 0; ue--) {
			const char *what = ue ? "uncorrected" : "corrected";
			int64_t on_dimms = 0;
			for (int i = 0; i < ma->ndimms; i++) {
				const struct sdc_edac_dimm *da = &ma->dimms[i], *db = NULL;
				for (int k = 0; k < mb->ndimms; k++)
					if (!strcmp(mb->dimms[k].name, da->name))
						db = &mb->dimms[k];
				const int64_t d = !db ? 0 : ue ? grown(db->ue, da->ue, reset) : grown(db->ce, da->ce, reset);
				if (!d || n == max)
					continue;
				on_dimms += d;
				struct sdc_hwerr_event *ev = &out[n++];
				edac_event(ev, ma, ue, d);
				snprintf(ev->detail, sizeof(ev->detail),
					 "%" PRId64 " new %s memory error%s on DIMM %.80s (mc%d %.32s%s%.64s): %s %" PRId64
					 " -> %" PRId64 "%s",
					 d, what, d == 1 ? "" : "s", da->label[0] ? da->label : da->name, ma->index, da->name,
					 da->location[0] ? ", " : "", da->location, counter_name(da, ue),
					 reset ? 0 : ue ? db->ue : db->ce, ue ? da->ue : da->ce, why_reset);
			}
			/* What the controller counted beyond its DIMMs: errors it could not place. */
			const int64_t total = ue ? grown(mb->ue, ma->ue, reset) : grown(mb->ce, ma->ce, reset);
			if (total > on_dimms && n < max) {
				struct sdc_hwerr_event *ev = &out[n++];
				edac_event(ev, ma, ue, total - on_dimms);
				snprintf(ev->detail, sizeof(ev->detail),
					 "%" PRId64 " new %s memory error%s on mc%d%s (%s %" PRId64 " -> %" PRId64 ")%s",
					 total - on_dimms, what, total - on_dimms == 1 ? "" : "s", ma->index,
					 ma->ndimms ? ", not placed on a DIMM" : "", ue ? "ue_count" : "ce_count",
					 reset ? 0 : ue ? mb->ue : mb->ce, ue ? ma->ue : ma->ce, why_reset);
			}
		}
	}
	return n;
}
