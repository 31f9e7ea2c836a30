/*
 * sdcscan fleet: the reports that independent runs (cron, timers) left on many hosts, collected
 * into one place, compared offline. The same work (probe, variant, seed, options, device model,
 * kernel and library) must give the same work digest on every device: the digests of each group
 * are majority-voted and the minority named (host, device). Hosts whose last report found
 * something, is stale, missing (--hosts) or unreadable are named too. Text, --json, --html,
 * --csv, exit code. A host is its hostname and its machine's identity (fleet_data.h): machines
 * that share a hostname are each named; a CRITICAL is never hidden by a clock ahead; links out of
 * the folder are not followed; a refused file's bytes are never printed.
 *
 * Reports are read one at a time by a thread a core, each into a few fields (fleet_read.c, no
 * JSON tree), and only what stands for each host is kept, compactly (fleet_store.c): memory grows
 * with the hosts and the distinct kinds of report, not with the reports' bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"
#include "base/files.h"
#include "commands/commands.h"
#include "commands/fleet_data.h"
#include "runner/report.h"
#include "runner/report_read.h"
#include "base/json_load.h"

struct fleet_opts {
	double max_age;
	const char *hosts, *html, *csv;
	int64_t threads;
};

#define OPT(f) offsetof(struct fleet_opts, f)
static const struct sdc_option fleet_options[] = {
	{ .name = "max-age", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(max_age), .parse = sdc_cli_opt_age,
	  .def = "172800", .help = "a host whose last report is older than this is stale (default two days)" },
	{ .name = "hosts", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(hosts),
	  .help = "the hosts that should have reported, one name a line: those without a report are missing" },
	{ .name = "html", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(html),
	  .help = "write the fleet as one self-contained HTML page: hosts x probes, devices' rates" },
	{ .name = "csv", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(csv),
	  .help = "write one CSV row a host and probe/variant (columns: sdcscan(1))" },
	{ .name = "threads", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(threads), .def = "0", .imin = 0,
	  .imax = 256, .help = "threads that read reports (0: one an online CPU)" },
	SDC_OPT_END,
};

/* ---- the files to read ---- */

struct paths {
	char **v;
	size_t n, cap;
};

static int path_add(struct paths *p, const char *path)
{
	if (p->n == p->cap) {
		const size_t c = p->cap ? 2 * p->cap : 1024;
		char **v = realloc(p->v, c * sizeof(*v));
		if (!v)
			return -1;
		p->v = v, p->cap = c;
	}
	if (!(p->v[p->n] = strdup(path)))
		return -1;
	p->n++;
	return 0;
}

/*
 * A link under the folder given: followed only to a file that lies inside that folder (its real
 * path); a link to a folder is never followed (inside, its reports are read where they lie, and a
 * link such as "loop -> .." would read them again and again; outside, it is not the fleet's), nor
 * one that leads out of the folder (x.json -> /etc/shadow): those are listed (store.links) and
 * said once. true: path is a file to read.
 */
static bool take_link(struct fl_store *st, const char *root, const char *path, bool json)
{
	char *real = realpath(path, NULL);
	const bool resolved = real != NULL;
	struct stat sb;
	const size_t n = strlen(root);
	const bool inside = real && !strncmp(real, root, n) && (real[n] == '/' || !strcmp(root, "/"));
	const bool got = real && !stat(real, &sb), file = got && S_ISREG(sb.st_mode), dir = got && S_ISDIR(sb.st_mode);
	free(real);
	if (json && inside && file)
		return true;
	if (!json && !dir)
		return false; /* (a file that is not a report: not read, as any such file) */
	const char *why = !resolved ? "leads nowhere" : !inside ? "leads out of the folder" : dir ? "a folder" : "not a file";
	if (st->nlinks == st->clinks) { /* (read before the threads start) */
		struct fl_named *v = realloc(st->links, (2 * st->clinks + 8) * sizeof(*v));
		if (!v)
			return false;
		st->links = v, st->clinks = 2 * st->clinks + 8;
	}
	st->links[st->nlinks++] = (struct fl_named){ strdup(path), strdup(why), 0 };
	return false;
}

/* A directory: every *.json under it, three levels down at most (DIR/host/last.json and the
 * like); root: the real path of the folder given. */
static void take_dir(struct fl_store *st, struct paths *p, const char *root, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		sdc_fleet_store_unreadable(st, dir, strerror(errno));
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		const size_t n = strlen(e->d_name);
		const bool json = n > 5 && !strcmp(e->d_name + n - 5, ".json");
		/* (d_type spares a stat a file; a link or an unknown type is stat'ed, as it always was) */
		if (e->d_type == DT_REG) {
			if (json)
				path_add(p, path);
			continue;
		}
		struct stat sb;
		if (lstat(path, &sb))
			continue;
		if (S_ISLNK(sb.st_mode)) {
			if (take_link(st, root, path, json))
				path_add(p, path);
			continue;
		}
		if (S_ISDIR(sb.st_mode) && depth < 3)
			take_dir(st, p, root, path, depth + 1);
		else if (S_ISREG(sb.st_mode) && json)
			path_add(p, path);
	}
	closedir(d);
}

/* ---- reading, a thread a core ---- */

struct reader {
	struct fl_store *st;
	struct paths *paths;
	atomic_size_t *next;
};

/* The file into *buf (grown as needed), as sdc_read_regular_file reads and refuses. */
static int read_file(const char *path, char **buf, size_t *cap, size_t *len, char *why, size_t whylen)
{
	const size_t max = 64u << 20;
	const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not wait for a writer */
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max) {
		close(fd);
		/* (the reason in the words every reader gives) */
		free(sdc_read_regular_file(path, max, len, "report", why, whylen));
		return -1;
	}
	if ((size_t)sb.st_size + 1 > *cap) {
		free(*buf);
		*cap = (size_t)sb.st_size + 1 + ((size_t)sb.st_size >> 2);
		if (!(*buf = malloc(*cap))) {
			*cap = 0;
			close(fd);
			snprintf(why, whylen, "%s: out of memory", path);
			return -1;
		}
	}
	size_t n = 0;
	for (;;) {
		const ssize_t r = read(fd, *buf + n, (size_t)sb.st_size + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, whylen, "%s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		n += (size_t)r;
		if (r == 0 || n > (size_t)sb.st_size)
			break;
	}
	close(fd);
	*len = n;
	return 0;
}

/*
 * Why a report was refused, as sdc_report_parse says it, but where the text is not JSON, what was
 * expected and at which byte: never jansson's "near '...'", which quotes the file's own bytes
 * (a link to /etc/shadow would print its first token).
 */
static json_t *report_parse(const char *text, size_t len, char *why, size_t whylen)
{
	json_error_t je;
	json_t *j = sdc_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		char *near = strstr(je.text, " near ");
		if (near)
			*near = '\0';
		snprintf(why, whylen, "not JSON: %s, at line %d, column %d (byte %d)", je.text, je.line, je.column, je.position);
		return NULL;
	}
	json_decref(j);
	return sdc_report_parse(text, len, why, whylen);
}

/* One report: read, checked, kept if it is what stands for its host. */
static void take_report(struct fl_store *st, struct fleet_rec *rec, struct fl_scratch *sc, char **buf, size_t *cap,
			const char *path)
{
	char why[700];
	size_t len;
	if (read_file(path, buf, cap, &len, why, sizeof(why))) {
		sdc_fleet_store_unreadable(st, path, why);
		return;
	}
	int rc = sdc_fleet_rec_read(rec, *buf, len);
	if (rc) {
		/* refused: jansson says why; where jansson takes what the scanner did not, its own
		 * compact text of the report is read instead */
		json_t *r = report_parse(*buf, len, why, sizeof(why));
		char *again = r ? json_dumps(r, JSON_COMPACT) : NULL;
		json_decref(r);
		if (!r) {
			sdc_fleet_store_unreadable(st, path, why);
			return;
		}
		rc = again ? sdc_fleet_rec_read(rec, again, strlen(again)) : -1;
		free(again);
		if (rc) {
			sdc_fleet_store_unreadable(st, path, "jansson reads it, sdcscan fleet's reader does not (a bug: please report it)");
			return;
		}
	}
	if (!*FL_S(rec, rec->host)) {
		sdc_fleet_store_unreadable(st, path, "no host.hostname");
		return;
	}
	sdc_fleet_store_add(st, sc, rec, path);
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct fleet_rec rec = { 0 };
	struct fl_scratch sc = { 0 };
	char *buf = NULL;
	size_t cap = 0, i;
	while ((i = atomic_fetch_add(rd->next, 1)) < rd->paths->n) {
		take_report(rd->st, &rec, &sc, &buf, &cap, rd->paths->v[i]);
		free(rd->paths->v[i]);
		rd->paths->v[i] = NULL;
	}
	free(buf);
	sdc_fleet_rec_release(&rec);
	sdc_fl_scratch_release(&sc);
	return NULL;
}

int sdc_fleet_threads(int64_t asked)
{
	long n = asked > 0 ? (long)asked : sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static void read_all(struct fl_store *st, struct paths *p, int nthreads)
{
	atomic_size_t next = 0;
	struct reader rd = { st, p, &next };
	pthread_t t[256];
	int started = 0;
	if ((size_t)nthreads > p->n)
		nthreads = p->n ? (int)p->n : 1;
	for (int i = 1; i < nthreads; i++)
		if (!pthread_create(&t[started], NULL, reader_main, &rd))
			started++;
	reader_main(&rd);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

/* ---- a group named by what sets it apart ---- */

static void add(char *buf, size_t len, size_t *n, const char *fmt, const char *a)
{
	if (*n < len)
		*n += (size_t)snprintf(buf + *n, len - *n, fmt, a);
}

/* A value of an options object as text ("" when unset). */
static char *opt_text(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return strdup("");
	if (json_is_string(v))
		return strdup(json_string_value(v));
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* ", options k=v ...": the options whose values differ among the groups of g's probe/variant. */
static void options_diff(const struct fl_store *st, const struct fl_group *g, char *buf, size_t len, size_t *n)
{
	json_t *mine = json_loads(fl_str(&st->strs, g->options), 0, NULL), *keys = json_object();
	bool first = true;
	if (!json_is_object(mine)) {
		add(buf, len, n, ", options %s", fl_str(&st->strs, g->options));
		goto out;
	}
	for (uint32_t k = 0; k < st->ngroups; k++) {
		const struct fl_group *o = &st->groups[k];
		if (o->pv != g->pv || o->options == g->options)
			continue;
		json_t *theirs = json_loads(fl_str(&st->strs, o->options), 0, NULL);
		const char *key;
		json_t *v;
		/* a key of either whose value is not the same in both */
		json_object_foreach(mine, key, v)
			if (!json_equal(v, json_object_get(theirs, key)))
				json_object_set_new(keys, key, json_true());
		json_object_foreach(theirs, key, v)
			if (!json_object_get(mine, key))
				json_object_set_new(keys, key, json_true());
		json_decref(theirs);
	}
	const char **sorted = malloc((json_object_size(keys) + 1) * sizeof(*sorted));
	size_t m = 0;
	const char *key;
	json_t *v;
	json_object_foreach(keys, key, v)
		if (sorted)
			sorted[m++] = key;
	for (size_t i = 1; i < m; i++) /* (a few keys) */
		for (size_t j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
			const char *t = sorted[j];
			sorted[j] = sorted[j - 1], sorted[j - 1] = t;
		}
	for (size_t i = 0; i < m; i++) {
		char *t = opt_text(mine, sorted[i]);
		add(buf, len, n, first ? ", options %s=" : " %s=", sorted[i]);
		add(buf, len, n, "%s", t && *t ? t : "(unset)");
		free(t);
		first = false;
	}
	free(sorted);
out:
	json_decref(mine);
	json_decref(keys);
}

void sdc_fleet_group_short(const struct fl_store *st, const struct fl_group *g, char *buf, size_t len)
{
	bool seed = false, model = false, kernel = false, blas = false, iter = false, opts = false;
	for (uint32_t k = 0; k < st->ngroups; k++) {
		const struct fl_group *o = &st->groups[k];
		if (o->pv != g->pv)
			continue;
		seed |= o->seed != g->seed, model |= o->model != g->model, kernel |= o->kernel != g->kernel;
		blas |= o->blas != g->blas, iter |= o->iterations != g->iterations, opts |= o->options != g->options;
	}
	size_t n = 0;
	add(buf, len, &n, "%s", fl_str(&st->strs, g->pv));
	if (seed)
		add(buf, len, &n, " seed %s", fl_str(&st->strs, g->seed));
	if (model)
		add(buf, len, &n, " on %s", fl_str(&st->strs, g->model));
	if (kernel)
		add(buf, len, &n, ", kernel %s", fl_str(&st->strs, g->kernel));
	if (blas)
		add(buf, len, &n, ", %s", fl_str(&st->strs, g->blas));
	if (iter) {
		char it[32];
		snprintf(it, sizeof(it), "%lld", g->iterations);
		add(buf, len, &n, ", %s iterations", it);
	}
	if (opts)
		options_diff(st, g, buf, len, &n);
}

/* ---- the verdict and what is printed ---- */

static int by_a(const void *x, const void *y)
{
	const struct fl_named *a = x, *b = y;
	const int c = strcmp(a->a, b->a);
	return c ? c : strcmp(a->b, b->b);
}

struct lists {
	json_t *findings, *stale, *missing;
	enum sdc_verdict worst;
};

/* The names a host answers to in --hosts: its hostname, and the folder its report lies in
 * (reports/node-a/last.json: node-a), for fleets collected a folder a machine. */
static int known_names(const struct fl_store *st, struct fl_intern *names)
{
	for (size_t i = 0; i < st->nhosts; i++) {
		const struct fl_host *h = &st->hosts[i];
		if (!h->present)
			continue;
		const char *name = fl_str(&st->hostnames, h->name), *end = strrchr(h->path, '/'), *start = end;
		while (start && start > h->path && start[-1] != '/')
			start--;
		if (sdc_fl_intern(names, name, strlen(name)) == FL_NONE ||
		    (end && end > start && sdc_fl_intern(names, start, (size_t)(end - start)) == FL_NONE))
			return -1;
	}
	return 0;
}

static int read_hosts_file(const char *file, const struct fl_store *st, struct lists *l, struct fleet_out *out,
			   char *why, size_t whylen)
{
	size_t len;
	char *text = sdc_read_regular_file(file, 16u << 20, &len, "hosts file", why, whylen);
	struct fl_intern names = { 0 };
	if (!text)
		return -1;
	if (known_names(st, &names)) {
		snprintf(why, whylen, "%s: out of memory", file);
		free(text), sdc_fl_intern_release(&names);
		return -1;
	}
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, " \t\r#")] = '\0';
		if (*line && sdc_fl_intern_find(&names, line, strlen(line)) == FL_NONE) {
			json_array_append_new(l->missing, json_string(line));
			l->worst = sdc_verdict_worst(l->worst, SDC_WARNING);
			char **v = realloc(out->missing, (out->nmissing + 1) * sizeof(*v));
			if (v)
				out->missing = v, out->missing[out->nmissing++] = strdup(line);
		}
	}
	free(text);
	sdc_fl_intern_release(&names);
	return 0;
}

static void host_lists(const struct fl_store *st, double max_age, struct lists *l)
{
	const double now = sdc_wall_now();
	for (size_t o = 0; o < st->nhosts; o++) {
		const struct fl_host *h = &st->hosts[st->host_order[o]];
		if (!h->present)
			continue;
		const char *host = sdc_fl_host_name(st, h);
		const double age = now - h->end;
		if (age > max_age) {
			json_array_append_new(l->stale, json_pack("{s:s, s:f, s:s}", "host", host, "age_seconds", age, "path", h->path));
			l->worst = sdc_verdict_worst(l->worst, SDC_WARNING);
		}
		if (h->verdict != SDC_OK) {
			/* a report dated ahead says so beside its verdict: its verdict stands, its date does not */
			char skew[128] = "";
			if (h->future)
				snprintf(skew, sizeof(skew), " (the report is dated %.0f s in the future: its clock is wrong)",
					 h->end - st->now);
			char *summary = malloc(strlen(h->summary) + strlen(skew) + 1);
			if (summary)
				strcat(strcpy(summary, h->summary), skew);
			json_array_append_new(l->findings, json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "host", host, "verdict",
								     sdc_verdict_name((enum sdc_verdict)h->verdict), "summary",
								     summary ? summary : h->summary, "machine",
								     fl_host_identity(&st->hostnames, h->name), "path", h->path,
								     "clock_ahead", h->future));
			free(summary);
			/* a host that could not test is a warning of the fleet, not its corruption */
			l->worst = sdc_verdict_worst(l->worst, h->verdict == SDC_UNKNOWN ? SDC_WARNING : (enum sdc_verdict)h->verdict);
		}
	}
}

static size_t present_hosts(const struct fl_store *st)
{
	size_t n = 0;
	for (size_t i = 0; i < st->nhosts; i++)
		n += st->hosts[i].present;
	return n;
}

static const char *majority_hex(const struct fl_store *st, const struct fl_group *g)
{
	return g->best == FL_NONE ? "" : fl_str(&st->strs, g->best);
}

static void print_text(const struct fl_store *st, struct lists *l, char **shortname)
{
	const size_t nhosts = present_hosts(st);
	printf("sdcscan fleet: %ld report file%s, %zu host%s, %u group%s of the same work\n", st->files,
	       st->files == 1 ? "" : "s", nhosts, nhosts == 1 ? "" : "s", st->ngroups, st->ngroups == 1 ? "" : "s");
	for (size_t m = 0; m < st->nminority; m++) {
		const struct fl_minority *x = &st->minority[m];
		const struct fl_host *h = &st->hosts[x->host];
		const struct fl_group *g = &st->groups[x->group];
		const char *best = majority_hex(st, g);
		sdc_print_line(stdout,
			       "disagrees: %s %s: %s: digest %.16s..., the majority (%" PRIu32 " of %" PRIu32
			       " devices) %.16s%s",
			       sdc_fl_host_name(st, h), fl_str(&st->strs, st->shapes[h->shape].res[x->index].dev),
			       shortname[x->group], fl_str(&st->strs, x->digest), g->agreeing, g->devices,
			       *best ? best : "none (no majority)", *best ? "..." : "");
	}
	size_t i;
	json_t *e;
	json_array_foreach(l->findings, i, e)
		sdc_print_line(stdout, "%s: %s: %s", sdc_json_str(e, "verdict"), sdc_json_str(e, "host"),
			       sdc_json_str(e, "summary"));
	for (size_t k = 0; k < st->nsamename; k++)
		sdc_print_line(stdout, "same-hostname: %s", st->samename[k].b);
	json_array_foreach(l->stale, i, e)
		sdc_print_line(stdout, "stale: %s: last report %.1f days old (%s)", sdc_json_str(e, "host"),
			       json_real_value(json_object_get(e, "age_seconds")) / 86400, sdc_json_str(e, "path"));
	json_array_foreach(l->missing, i, e)
		sdc_print_line(stdout, "missing: %s: no report", json_string_value(e));
	for (size_t k = 0; k < st->nunreadable; k++)
		sdc_print_line(stdout, "unreadable: %s: %s", st->unreadable[k].a, st->unreadable[k].b);
	for (size_t k = 0; k < st->nskewed; k++)
		sdc_print_line(stdout, "clock-skew: %s: a report dated %.0f s in the future (%s): its clock is wrong",
			       st->skewed[k].a, st->skewed[k].x, st->skewed[k].b);
	if (st->nlinks) { /* said once, every link named */
		char *line = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&line, &len);
		for (size_t k = 0; f && k < st->nlinks; k++)
			fprintf(f, "%s%s (%s)", k ? ", " : "", st->links[k].a, st->links[k].b);
		if (f && !fclose(f))
			sdc_print_line(stdout, "links not followed: %zu link%s that lead%s out of the folder or to a folder: %s",
				       st->nlinks, st->nlinks == 1 ? "" : "s", st->nlinks == 1 ? "s" : "", line);
		free(line);
	}
	printf("%s: %zu minority device%s, %zu host%s with findings, %zu stale, %zu missing, %zu unreadable, %zu "
	       "clock-skewed, %zu hostname%s shared\n",
	       sdc_verdict_name(l->worst), st->nminority, st->nminority == 1 ? "" : "s", json_array_size(l->findings),
	       json_array_size(l->findings) == 1 ? "" : "s", json_array_size(l->stale), json_array_size(l->missing),
	       st->nunreadable, st->nskewed, st->nsamename, st->nsamename == 1 ? "" : "s");
}

static json_t *json_out_pack(const struct fl_store *st, struct lists *l, json_t *groups, json_t *minority, json_t *unreadable,
			     json_t *skew);

static json_t *json_out(const struct fl_store *st, struct lists *l)
{
	json_t *groups = json_array(), *minority = json_array(), *unreadable = json_array(), *skew = json_array();
	char key[8192];
	json_t **gmin = calloc(st->ngroups ? st->ngroups : 1, sizeof(*gmin));
	if (!gmin)
		return NULL;
	for (uint32_t g = 0; g < st->ngroups; g++)
		gmin[g] = json_array();
	for (size_t m = 0; m < st->nminority; m++) {
		const struct fl_minority *x = &st->minority[m];
		const struct fl_host *h = &st->hosts[x->host];
		const struct fl_group *g = &st->groups[x->group];
		const char *host = sdc_fl_host_name(st, h), *dev = fl_str(&st->strs, st->shapes[h->shape].res[x->index].dev);
		sdc_fleet_group_key(st, g, key, sizeof(key));
		json_array_append_new(gmin[x->group], json_pack("{s:s, s:s, s:s}", "host", host, "device", dev, "digest",
								fl_str(&st->strs, x->digest)));
		json_array_append_new(minority, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "work", key, "host", host,
							  "device", dev, "digest", fl_str(&st->strs, x->digest), "majority",
							  majority_hex(st, g), "agreeing", (json_int_t)g->agreeing, "devices",
							  (json_int_t)g->devices));
	}
	for (uint32_t o = 0; o < st->ngroups; o++) {
		const uint32_t gi = st->group_order[o];
		const struct fl_group *g = &st->groups[gi];
		sdc_fleet_group_key(st, g, key, sizeof(key));
		json_array_append_new(groups, json_pack("{s:s, s:I, s:I, s:s, s:o}", "work", key, "devices",
							(json_int_t)g->devices, "agreeing", (json_int_t)g->agreeing,
							"majority", majority_hex(st, g), "minority", gmin[gi]));
	}
	free(gmin);
	for (size_t k = 0; k < st->nunreadable; k++)
		json_array_append_new(unreadable, json_pack("{s:s, s:s}", "path", st->unreadable[k].a, "why", st->unreadable[k].b));
	for (size_t k = 0; k < st->nskewed; k++)
		json_array_append_new(skew, json_pack("{s:s, s:s, s:f}", "host", st->skewed[k].a, "path", st->skewed[k].b,
						      "ahead_seconds", st->skewed[k].x));
	json_t *same = json_array(), *links = json_array();
	for (size_t k = 0; k < st->nsamename; k++) {
		json_t *machines = json_array();
		for (size_t o = 0; o < st->nhosts; o++) {
			const struct fl_host *h = &st->hosts[st->host_order[o]];
			if (h->present && !strcmp(fl_str(&st->hostnames, h->name), st->samename[k].a))
				json_array_append_new(machines, json_pack("{s:s, s:s, s:s}", "host", sdc_fl_host_name(st, h), "machine",
									  fl_host_identity(&st->hostnames, h->name), "path", h->path));
		}
		json_array_append_new(same, json_pack("{s:s, s:o}", "hostname", st->samename[k].a, "machines", machines));
	}
	for (size_t k = 0; k < st->nlinks; k++)
		json_array_append_new(links, json_pack("{s:s, s:s}", "path", st->links[k].a, "why", st->links[k].b));
	json_t *j = json_out_pack(st, l, groups, minority, unreadable, skew);
	json_object_set_new(j, "same_hostname", same);
	json_object_set_new(j, "links_not_followed", links);
	return j;
}

static json_t *json_out_pack(const struct fl_store *st, struct lists *l, json_t *groups, json_t *minority, json_t *unreadable,
			     json_t *skew)
{
	return json_pack("{s:[i,i], s:I, s:I, s:o, s:o, s:O, s:O, s:O, s:o, s:o, s:{s:s, s:i}}", "schema_version",
			 SDC_SCHEMA_MAJOR, SDC_SCHEMA_MINOR, "report_files", (json_int_t)st->files, "hosts",
			 (json_int_t)present_hosts(st), "groups", groups, "minority", minority, "hosts_with_findings",
			 l->findings, "stale", l->stale, "missing", l->missing, "unreadable", unreadable, "clock_skew", skew,
			 "verdict", "status", sdc_verdict_name(l->worst), "code", (int)l->worst);
}

static int fleet_main(struct sdc_cmd *c)
{
	const struct fleet_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	struct fl_store st;
	if (sdc_fleet_store_init(&st, sdc_wall_now()))
		return sdc_cli_unknown(cli);
	struct paths p = { 0 };
	int rc = 0;
	/* a place the page or rows cannot go is said before any report is read */
	const char *const outs[] = { o->html, o->csv };
	for (int i = 0; i < 2 && !rc; i++) {
		char where[4096], err[600];
		if (outs[i] && sdc_output_path(outs[i], where, sizeof(where), err, sizeof(err)))
			rc = sdc_cli_bad(cli, "--%s %s", i ? "csv" : "html", err);
	}
	for (int a = 0; a < c->nargs && !rc; a++) {
		struct stat sb;
		if (stat(c->args[a], &sb))
			rc = sdc_cli_bad(cli, "%s: %s", c->args[a], strerror(errno));
		else if (S_ISDIR(sb.st_mode)) {
			char *root = realpath(c->args[a], NULL);
			take_dir(&st, &p, root ? root : c->args[a], c->args[a], 0);
			free(root);
		}
		else
			path_add(&p, c->args[a]);
	}
	st.files = (long)p.n;
	if (!rc) {
		/* jansson's hash seed set here, before the threads: "Jansson is thread safe and has no
		 * mutable global state", but for the seed, which json_object_seed() should set before
		 * other threads start (jansson.readthedocs.io, Thread safety) */
		json_object_seed(0);
		read_all(&st, &p, sdc_fleet_threads(o->threads));
		if (sdc_fleet_vote_all(&st))
			rc = sdc_cli_unknown(cli);
	}
	for (size_t i = 0; i < p.n; i++)
		free(p.v[i]);
	free(p.v);
	if (rc) {
		sdc_fleet_store_release(&st);
		return rc;
	}
	sdc_sort(st.unreadable, st.nunreadable, sizeof(*st.unreadable), by_a);
	sdc_sort(st.skewed, st.nskewed, sizeof(*st.skewed), by_a);
	sdc_sort(st.links, st.nlinks, sizeof(*st.links), by_a);
	struct lists l = { json_array(), json_array(), json_array(), SDC_OK };
	struct fleet_out out = { .html = o->html, .csv = o->csv, .max_age = o->max_age };
	char why[700];
	host_lists(&st, o->max_age, &l);
	if (o->hosts && read_hosts_file(o->hosts, &st, &l, &out, why, sizeof(why))) {
		rc = sdc_cli_bad(cli, "--hosts %s", why);
		goto out;
	}
	/* WARNING: a report not read, a clock ahead, two machines under one name, a link not followed */
	if (st.nunreadable || st.nskewed || st.nsamename || st.nlinks)
		l.worst = sdc_verdict_worst(l.worst, SDC_WARNING);
	if (st.nminority)
		l.worst = sdc_verdict_worst(l.worst, SDC_CRITICAL);
	if (!present_hosts(&st))
		l.worst = SDC_UNKNOWN;
	/* text: names, summaries and paths from reports with their control characters escaped */
	char **shortname = calloc(st.ngroups ? st.ngroups : 1, sizeof(*shortname));
	for (uint32_t g = 0; shortname && g < st.ngroups; g++) {
		char buf[2048];
		sdc_fleet_group_short(&st, &st.groups[g], buf, sizeof(buf));
		shortname[g] = strdup(buf);
	}
	if (!shortname) {
		rc = sdc_cli_unknown(cli);
		goto out;
	}
	print_text(&st, &l, shortname);
	for (uint32_t g = 0; g < st.ngroups; g++)
		free(shortname[g]);
	free(shortname);
	rc = sdc_exit_code(l.worst, cli->exit_style);
	if ((o->html && sdc_fleet_write_html(&st, &out, (int)l.worst)) || (o->csv && sdc_fleet_write_csv(&st, &out)))
		rc = sdc_cli_unknown(cli);
	if (cli->json) {
		json_t *j = json_out(&st, &l);
		if (!j || sdc_cli_write_json(cli->json, j, "fleet"))
			rc = sdc_cli_unknown(cli);
		json_decref(j);
	}
out:
	json_decref(l.findings), json_decref(l.stale), json_decref(l.missing);
	for (size_t i = 0; i < out.nmissing; i++)
		free(out.missing[i]);
	free(out.missing);
	sdc_fleet_store_release(&st);
	return rc;
}

const struct sdc_command sdc_command_fleet = {
	.name = "fleet",
	.summary = "compare the reports many hosts' runs left (collected in DIR or given as FILEs): majority-vote the "
		   "work digests of the same work, name the minority, and the hosts with findings, stale, missing or "
		   "unreadable reports",
	.args = "DIR|FILE...",
	.min_args = 1,
	.max_args = 1 << 20,
	.options = fleet_options,
	.opts_size = sizeof(struct fleet_opts),
	.common = SDC_CF_JSON | SDC_CF_EXIT,
	.fn = fleet_main,
};
