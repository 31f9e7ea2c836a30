/*
 * sdcscan bench fleet: sdcscan fleet against a plain reader of the same reports. It makes the
 * reports (from one real run of this host's, cloned to hosts of 128 CPUs and 8 GPUs, and of 2
 * CPUs, one device of one host planted with another digest), caches them (rebuilt only when
 * missing or made by another version of this bench), then times, one after the other, a plain
 * reader that reads and json_loadb's every file in the same threads, and `sdcscan fleet`, each in
 * a child process whose peak memory getrusage gives (ru_maxrss). Targets: the large hosts'
 * fleet in at most 512 MB and at a rate no lower than the plain reader's; the 2-CPU fleet in
 * under 5 s; the planted device named, and nothing else; and the three hosts planted afresh in
 * each fleet (PLANT_*: two machines of one hostname, a report dated a day ahead, a CRITICAL one)
 * each named.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "base/files.h"
#include "commands/commands.h"
#include "commands/fleet_data.h"
#include "runner/report_read.h"

/* Bumped when the generated reports change: a cache made by another version is made again. */
#define GEN_VERSION 2

struct bench_opts {
	int64_t reports, threads, turns;
	int kind;
	const char *dir;
	double max_mb, max_seconds;
};

static const char *const kinds[] = { "both", "large", "small", NULL };

#define OPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "reports", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(reports), .def = "10000", .imin = 8,
	  .imax = 1000000, .help = "hosts' reports in each fleet" },
	{ .name = "kind", .metavar = "KIND", .type = SDC_OPT_ENUM, .offset = OPT(kind), .def = "both", .choices = kinds,
	  .help = "large (128 CPUs and 8 GPUs a host), small (2 CPUs) or both" },
	{ .name = "dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(dir),
	  .help = "where the reports are made and kept (default /var/cache/sdcscan-ci/fleet-bench where it can be made, "
		  "else $TMPDIR/sdcscan-fleet-bench)" },
	{ .name = "threads", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(threads), .def = "0", .imin = 0,
	  .imax = 256, .help = "reader threads, the same for both readers (0: one an online CPU)" },
	{ .name = "turns", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(turns), .def = "1", .imin = 1, .imax = 9,
	  .help = "turns of both readers, one after the other; the medians count" },
	{ .name = "max-mb", .metavar = "MB", .type = SDC_OPT_DOUBLE, .offset = OPT(max_mb), .def = "512", .dmin = 1,
	  .dmax = 1e6, .help = "the target: the large hosts' fleet's peak memory at most this" },
	{ .name = "max-seconds", .metavar = "S", .type = SDC_OPT_DOUBLE, .offset = OPT(max_seconds), .def = "5",
	  .dmin = 0.001, .dmax = 1e6, .help = "the target: the 2-CPU hosts' fleet in less than this" },
	SDC_OPT_END,
};

/* ---- the reports ---- */

/* a "/" b into out, cut to fit (paths here are the bench's own, far below PATH_MAX) */
static void join(char *out, size_t len, const char *a, const char *b)
{
	const size_t na = strlen(a), nb = strlen(b);
	if (na + 1 + nb + 1 > len) {
		sdc_strlcpy(out, a, len);
		return;
	}
	memcpy(out, a, na);
	out[na] = '/';
	memcpy(out + na + 1, b, nb + 1);
}

static int write_all(const char *path, const char *a, size_t na, const char *b, size_t nb, const char *c, size_t nc)
{
	const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	const struct {
		const char *p;
		size_t n;
	} parts[3] = { { a, na }, { b, nb }, { c, nc } };
	for (int i = 0; i < 3; i++)
		for (size_t off = 0; off < parts[i].n;) {
			const ssize_t w = write(fd, parts[i].p + off, parts[i].n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return close(fd), -1;
			off += (size_t)w;
		}
	return close(fd);
}

/* A GPU of a large host, as the report gives one (schema/report.schema.json). */
static json_t *gpu_device(int k)
{
	char uuid[64], bus[32];
	snprintf(uuid, sizeof(uuid), "GPU-5e1f0c2a-%04x-4b7d-9e3f-00000000%04x", k, k);
	snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x18 + 0x10 * k);
	json_t *health = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:i, s:[]}", "ecc_mode", "enabled",
				   "ecc_volatile_uncorrected", 0, "ecc_volatile_corrected", 0, "retired_pages", 0,
				   "remapped_rows", 0, "sm_clock_mhz", 1980, "power_watts", 612.5, "temperature_c", 61,
				   "throttle_reasons");
	return json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:{s:o, s:O}}", "type", "gpu", "index", k, "model", "NVIDIA H100 80GB HBM3", "uuid", uuid, "pci_bus_id", bus,
			 "compute_capability", "9.0", "sm_count", 132, "memory_bytes", (json_int_t)85520809984, "driver",
			 "580.65.06", "cuda_runtime", "13.0", "health", "before", health, "after", health);
}

/*
 * One host's report from the template run's (cpu0's results): cpus CPUs, gpus GPUs (their gemm,
 * embbag and minitrain results cloned from cpu0's with the GPU's variants), hostname "@@HOST@@@"
 * and the digest of cpu1's first result "@" x 64: the places the generator fills in.
 */
static char *host_text(json_t *tmpl, int cpus, int gpus, char *digest, size_t dlen)
{
	json_t *r = json_deep_copy(tmpl);
	json_t *dev0 = json_deep_copy(json_array_get(json_object_get(r, "devices"), 0));
	json_t *res0 = json_deep_copy(json_object_get(r, "results"));
	json_t *devices = json_array(), *results = json_array();
	for (int c = 0; c < cpus; c++) {
		char id[16];
		snprintf(id, sizeof(id), "cpu%d", c);
		json_t *d = json_deep_copy(dev0);
		json_object_set_new(d, "id", json_string(id));
		json_object_set_new(d, "logical_cpu", json_integer(c));
		json_object_set_new(d, "core_id", json_integer(c % 64));
		json_object_set_new(d, "package_id", json_integer(c / 64));
		json_array_append_new(devices, d);
	}
	static const char *const gpu_variants[][2] = { { "gemm", "int8" },	 { "gemm", "bf16" },
						       { "gemm", "fp16" },	 { "gemm", "fp32-fast" },
						       { "gemm", "tf32-fast" }, { "gemm", "bf16-fast" },
						       { "embbag", "8bit-d64" }, { "minitrain", "dlrm" } };
	for (int k = 0; k < gpus; k++) {
		json_t *d = gpu_device(k);
		char id[16];
		snprintf(id, sizeof(id), "gpu%d", k);
		json_object_set_new(d, "id", json_string(id));
		json_array_append_new(devices, d);
	}
	size_t i;
	json_t *x;
	json_array_foreach(res0, i, x)
		for (int c = 0; c < cpus; c++) {
			char id[16];
			snprintf(id, sizeof(id), "cpu%d", c);
			json_t *y = json_deep_copy(x);
			json_object_set_new(y, "device", json_string(id));
			/* the planted place: cpu1's first digest (a result of under 16 iterations has
			 * "work_digest": null, as the template's gemm/int8 had in the ASan build) */
			json_t *wd = json_object_get(y, "work_digest");
			const char *sha = json_string_value(json_object_get(wd, "sha256"));
			if (c == 1 && sha && strlen(sha) == 64 && !digest[0]) {
				snprintf(digest, dlen, "%s", sha);
				json_object_set_new(wd, "sha256", json_string("@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"));
			}
			json_array_append_new(results, y);
		}
	for (int k = 0; k < gpus; k++)
		for (size_t v = 0; v < sizeof(gpu_variants) / sizeof(gpu_variants[0]); v++) {
			json_t *y = NULL;
			json_array_foreach(res0, i, x)
				if (!y && !strcmp(json_string_value(json_object_get(x, "probe")), gpu_variants[v][0]))
					y = json_deep_copy(x);
			if (!y)
				continue;
			char id[16];
			snprintf(id, sizeof(id), "gpu%d", k);
			json_object_set_new(y, "device", json_string(id));
			json_object_set_new(y, "variant", json_string(gpu_variants[v][1]));
			json_object_set_new(y, "kernel", json_string("cublasLt"));
			json_array_append_new(results, y);
		}
	json_object_set_new(r, "devices", devices);
	json_object_set_new(r, "results", results);
	json_t *host = json_object_get(r, "host");
	json_object_set_new(host, "hostname", json_string("@@HOST@@@"));
	json_object_set_new(host, "machine_id", json_string("################################"));
	json_object_del(host, "product_uuid"), json_object_del(host, "product_serial"), json_object_del(host, "boot_id");
	json_object_set_new(host, "online_cpus", json_integer(cpus));
	json_object_del(host, "gpu_note");
	char sum[96];
	snprintf(sum, sizeof(sum), "OK: %zu results clean on %d CPUs%s", json_array_size(results), cpus, gpus ? " and 8 GPUs" : "");
	json_object_set_new(json_object_get(r, "verdict"), "summary", json_string(sum));
	/* (dated as the template run: the fleet is given --max-age of ten years, past any cache's age) */
	json_decref(dev0), json_decref(res0);
	char *text = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER); /* as a report is written (probe/command.c) */
	json_decref(r);
	return text;
}

/* The template: one real quick run of this host's cpu0, kept in dir. 4 s, not 1: a result has a
 * work digest only from its 16th iteration, which at 1 s (0.09 s a variant) an ASan build on a
 * slow machine may reach in no variant at all. */
#define TEMPLATE_SECONDS "4"

static json_t *template_report(const char *dir)
{
	char path[4096];
	join(path, sizeof(path), dir, "template.json");
	json_t *t = json_load_file(path, 0, NULL);
	if (t)
		return t;
	printf("bench fleet: making the template: sdcscan run --profile quick --duration " TEMPLATE_SECONDS
	       " --cpus 0 --gpus none\n");
	fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		const int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl("/proc/self/exe", "sdcscan", "run", "--profile", "quick", "--duration", TEMPLATE_SECONDS, "--cpus",
		      "0", "--gpus", "none", "--no-state", "--json", path, (char *)NULL);
		_exit(127);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return NULL;
	return json_load_file(path, 0, NULL);
}

/* The fleet's folder, made when missing or made by another version; its planted host's name in planted. */
static int make_fleet(const char *dir, const char *name, int cpus, int gpus, long n, char *planted, size_t plen)
{
	char folder[4096], stamp[4096], want[256], have[256] = "";
	join(folder, sizeof(folder), dir, name);
	join(stamp, sizeof(stamp), folder, ".made");
	snprintf(want, sizeof(want), "sdcscan bench fleet %d: %ld reports, %d CPUs, %d GPUs\n", GEN_VERSION, n, cpus, gpus);
	snprintf(planted, plen, "node%05ld", (n / 2 + 42 < n ? n / 2 + 42 : n / 2) % 100000);
	FILE *f = fopen(stamp, "r");
	if (f) {
		if (!fgets(have, sizeof(have), f))
			have[0] = '\0';
		fclose(f);
	}
	if (!strcmp(have, want))
		return 0;
	json_t *tmpl = template_report(dir);
	if (!tmpl) {
		fprintf(stderr, "sdcscan bench fleet: no template run in %s\n", dir);
		return -1;
	}
	printf("bench fleet: making %ld reports in %s\n", n, folder);
	fflush(stdout);
	char digest[128] = "";
	char *text = host_text(tmpl, cpus, gpus, digest, sizeof(digest));
	json_decref(tmpl);
	char *h = text ? strstr(text, "@@HOST@@@") : NULL, *d = text ? strstr(text, "@@@@@@@@@@@@@@@@") : NULL;
	char *mid = text ? strstr(text, "################################") : NULL;
	if (!h || !d || !mid || d < h || strlen(digest) != 64) {
		if (strlen(digest) != 64)
			fprintf(stderr, "sdcscan bench fleet: the template run (%s/template.json) has no result with a work "
					"digest (each ran under 16 iterations?): remove it to run it again\n", dir);
		free(text);
		return -1;
	}
	char err[300];
	unlink(stamp);
	if (sdc_make_parent_dirs(stamp, 0755, err, sizeof(err))) {
		free(text);
		return -1;
	}
	int rc = 0;
	for (long i = 0; i < n && !rc; i++) {
		char path[4200], host[32], file[48], dg[65];
		snprintf(host, sizeof(host), "node%05ld", i % 100000);
		snprintf(file, sizeof(file), "%s.json", host);
		join(path, sizeof(path), folder, file);
		memcpy(h, host, 9);
		char id[40];
		snprintf(id, sizeof(id), "%032lx", 0x5dc0000000L + i); /* the machine's own machine-id */
		memcpy(mid, id, 32);
		memcpy(dg, !strcmp(host, planted) ? "0000000000000000000000000000000000000000000000000000000000000000" : digest, 64);
		memcpy(d, dg, 64);
		rc = write_all(path, text, strlen(text), "", 0, "", 0);
	}
	free(text);
	f = rc ? NULL : fopen(stamp, "w");
	if (!f || fputs(want, f) < 0 || fclose(f))
		return -1;
	return 0;
}

/*
 * The hosts planted afresh before each fleet's race (their files rewritten, the rest kept): the
 * report of PLANT_TWIN gives the hostname of PLANT_TWIN + 1 (another machine-id: two machines of
 * one name), PLANT_AHEAD's is dated a day ahead of now, PLANT_CRITICAL's is CRITICAL.
 */
#define PLANT_TWIN 0
#define PLANT_AHEAD 2
#define PLANT_CRITICAL 3

static int plant_hosts(const char *folder)
{
	for (int k = PLANT_TWIN; k <= PLANT_CRITICAL; k++) {
		if (k == PLANT_TWIN + 1)
			continue;
		char path[4200], file[48];
		snprintf(file, sizeof(file), "node%05d.json", k);
		join(path, sizeof(path), folder, file);
		json_t *r = json_load_file(path, 0, NULL);
		if (!r)
			return -1;
		if (k == PLANT_TWIN) {
			char name[32];
			snprintf(name, sizeof(name), "node%05d", PLANT_TWIN + 1);
			json_object_set_new(json_object_get(r, "host"), "hostname", json_string(name));
		} else if (k == PLANT_AHEAD) {
			char when[40];
			const time_t t = (time_t)sdc_wall_now() + 86400;
			struct tm tm;
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
			json_object_set_new(json_object_get(r, "run"), "start", json_string(when));
		} else {
			json_object_set_new(r, "verdict", json_pack("{s:s, s:i, s:s}", "status", "CRITICAL", "code", 2, "summary",
								    "CRITICAL: planted by sdcscan bench fleet"));
		}
		const int rc = json_dump_file(r, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(r);
		if (rc)
			return -1;
	}
	return 0;
}

/* Whether the fleet's --json names each planted host: the two machines of one hostname, the
 * report a day ahead, the CRITICAL host; each said, yes or MISSED. */
static bool named_planted_hosts(const char *json)
{
	json_t *r = json_load_file(json, 0, NULL), *x;
	char twin[32], ahead[32], crit[32];
	snprintf(twin, sizeof(twin), "node%05d", PLANT_TWIN + 1);
	snprintf(ahead, sizeof(ahead), "node%05d", PLANT_AHEAD);
	snprintf(crit, sizeof(crit), "node%05d", PLANT_CRITICAL);
	bool t = false, a = false, c = false;
	size_t i;
	json_array_foreach(json_object_get(r, "same_hostname"), i, x)
		t |= !strcmp(sdc_json_str(x, "hostname"), twin) && json_array_size(json_object_get(x, "machines")) == 2;
	json_array_foreach(json_object_get(r, "clock_skew"), i, x)
		a |= !strcmp(sdc_json_str(x, "host"), ahead);
	json_array_foreach(json_object_get(r, "hosts_with_findings"), i, x)
		c |= !strcmp(sdc_json_str(x, "host"), crit) && !strcmp(sdc_json_str(x, "verdict"), "CRITICAL");
	json_decref(r);
	printf("  two machines of hostname %s both named: %s\n", twin, t ? "yes" : "NO  MISSED");
	printf("  the report a day ahead (%s) named: %s\n", ahead, a ? "yes" : "NO  MISSED");
	printf("  the CRITICAL host (%s) named: %s\n", crit, c ? "yes" : "NO  MISSED");
	return t && a && c;
}

/* ---- the plain reader: read and json_loadb every file, in threads ---- */

struct plain {
	char **paths;
	size_t n;
	atomic_size_t next, bad, bytes;
};

static void *plain_main(void *arg)
{
	struct plain *p = arg;
	char *buf = NULL;
	size_t cap = 0, i;
	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		const int fd = open(p->paths[i], O_RDONLY | O_CLOEXEC);
		struct stat sb;
		if (fd < 0 || fstat(fd, &sb)) {
			atomic_fetch_add(&p->bad, 1);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if ((size_t)sb.st_size + 1 > cap) {
			free(buf);
			cap = (size_t)sb.st_size + 1 + ((size_t)sb.st_size >> 2);
			buf = malloc(cap);
		}
		size_t len = 0;
		for (ssize_t r; buf && (r = read(fd, buf + len, cap - len)) > 0;)
			len += (size_t)r;
		close(fd);
		json_t *j = buf ? json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
		if (!j)
			atomic_fetch_add(&p->bad, 1);
		json_decref(j);
		atomic_fetch_add(&p->bytes, len);
	}
	free(buf);
	return NULL;
}

/* The plain reader's run (in a child process): exit 0 when every file parsed. */
static int plain_read(const char *folder, int threads)
{
	struct plain p = { 0 };
	DIR *d = opendir(folder);
	struct dirent *e;
	size_t cap = 0;
	while (d && (e = readdir(d))) {
		const size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 5, ".json"))
			continue;
		if (p.n == cap) {
			cap = cap ? 2 * cap : 1024;
			p.paths = realloc(p.paths, cap * sizeof(*p.paths));
		}
		char path[4200];
		join(path, sizeof(path), folder, e->d_name);
		p.paths[p.n++] = strdup(path);
	}
	if (d)
		closedir(d);
	pthread_t t[256];
	int started = 0;
	for (int i = 1; i < threads; i++)
		started += !pthread_create(&t[started], NULL, plain_main, &p);
	plain_main(&p);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return p.n && !p.bad ? 0 : 1;
}

struct timed {
	double seconds, peak_mb;
	int status;
};

/* A child's wall time, peak resident memory and exit status: the plain reader (argv NULL) or argv. */
static struct timed child(const char *folder, int threads, char *const argv[])
{
	struct timed t = { -1, -1, -1 };
	fflush(stdout);
	const double t0 = sdc_now();
	const pid_t pid = fork();
	if (pid == 0) {
		if (!argv)
			_exit(plain_read(folder, threads));
		const int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid > 0 && wait4(pid, &status, 0, &ru) == pid) {
		t.seconds = sdc_now() - t0;
		t.peak_mb = (double)ru.ru_maxrss / 1024.0; /* kilobytes (getrusage(2)) */
		t.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	return t;
}

static int cmp_timed(const void *a, const void *b)
{
	const double x = ((const struct timed *)a)->seconds, y = ((const struct timed *)b)->seconds;
	return (x > y) - (x < y);
}

/* What the fleet named: exactly the planted host's cpu1. */
static bool named_planted(const char *json, const char *planted)
{
	json_t *r = json_load_file(json, 0, NULL), *m = json_object_get(r, "minority");
	const bool ok = json_array_size(m) == 1 && !strcmp(sdc_json_str(json_array_get(m, 0), "host"), planted) &&
			!strcmp(sdc_json_str(json_array_get(m, 0), "device"), "cpu1");
	json_decref(r);
	return ok;
}

/* ---- the race ---- */

struct kind {
	const char *name, *what;
	int cpus, gpus;
};

static double folder_bytes(const char *folder)
{
	double bytes = 0;
	DIR *d = opendir(folder);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[4200];
		struct stat sb;
		join(path, sizeof(path), folder, e->d_name);
		if (e->d_name[0] != '.' && !stat(path, &sb) && S_ISREG(sb.st_mode))
			bytes += (double)sb.st_size;
	}
	if (d)
		closedir(d);
	return bytes;
}

static bool race(const struct bench_opts *o, const char *dir, const struct kind *k, int threads, json_t *out)
{
	char planted[32], folder[4096], json[4200], nthreads[16];
	if (make_fleet(dir, k->name, k->cpus, k->gpus, (long)o->reports, planted, sizeof(planted))) {
		fprintf(stderr, "sdcscan bench fleet: could not make the %s fleet in %s\n", k->name, dir);
		return false;
	}
	char name[128];
	snprintf(name, sizeof(name), "%s-fleet.json", k->name);
	join(folder, sizeof(folder), dir, k->name);
	if (plant_hosts(folder)) {
		fprintf(stderr, "sdcscan bench fleet: could not plant the hosts in %s\n", folder);
		return false;
	}
	join(json, sizeof(json), dir, name);
	snprintf(nthreads, sizeof(nthreads), "%d", threads);
	char *argv[] = { "sdcscan", "fleet", "--threads", nthreads, "--max-age", "315360000", "--json", json, folder, NULL };
	const double bytes = folder_bytes(folder), n = (double)o->reports;
	struct timed plain[9], fleet[9];
	bool named = true;
	for (int t = 0; t < o->turns; t++) {
		plain[t] = child(folder, threads, NULL);
		fleet[t] = child(folder, threads, argv);
		named &= fleet[t].status == 2 && named_planted(json, planted);
	}
	/* then once with the page and the rows: their time and size */
	char html[4200], csv[4200], hname[128], cname[128];
	snprintf(hname, sizeof(hname), "%s-fleet.html", k->name);
	snprintf(cname, sizeof(cname), "%s-fleet.csv", k->name);
	join(html, sizeof(html), dir, hname);
	join(csv, sizeof(csv), dir, cname);
	char *argv_pages[] = { "sdcscan", "fleet", "--threads", nthreads, "--max-age", "315360000", "--html", html, "--csv", csv,
			       folder, NULL };
	const struct timed pages = child(folder, threads, argv_pages);
	struct stat hs, cs;
	const double hbytes = stat(html, &hs) ? -1 : (double)hs.st_size, cbytes = stat(csv, &cs) ? -1 : (double)cs.st_size;
	qsort(plain, (size_t)o->turns, sizeof(plain[0]), cmp_timed);
	qsort(fleet, (size_t)o->turns, sizeof(fleet[0]), cmp_timed);
	const struct timed p = plain[o->turns / 2], f = fleet[o->turns / 2];
	const double ratio = p.seconds / f.seconds; /* the fleet's rate over the plain reader's */
	const bool large = k->gpus > 0;
	const bool mem_ok = !large || f.peak_mb <= o->max_mb, rate_ok = !large || ratio >= 1.0,
		   time_ok = large || f.seconds < o->max_seconds, read_ok = p.status == 0;
	printf("\n%s: %.0f reports, %.2f GB (%.0f KB each), %d threads\n", k->what, n, bytes / 1e9, bytes / n / 1e3, threads);
	printf("  %-22s %9s %11s %9s %9s\n", "reader", "seconds", "reports/s", "MB/s", "peak MB");
	printf("  %-22s %9.2f %11.0f %9.0f %9.0f%s\n", "plain (json_loadb)", p.seconds, n / p.seconds,
	       bytes / p.seconds / 1e6, p.peak_mb, read_ok ? "" : "  (a file did not parse)");
	printf("  %-22s %9.2f %11.0f %9.0f %9.0f\n", "sdcscan fleet", f.seconds, n / f.seconds, bytes / f.seconds / 1e6,
	       f.peak_mb);
	printf("  fleet's rate / the plain reader's: %.2f%s\n", ratio, large ? (rate_ok ? "  (target >= 1)" : "  (target >= 1)  MISSED") : "");
	if (large)
		printf("  fleet's peak memory: %.0f MB  (target <= %g MB)%s\n", f.peak_mb, o->max_mb, mem_ok ? "" : "  MISSED");
	else
		printf("  fleet's time: %.2f s  (target < %g s)%s\n", f.seconds, o->max_seconds, time_ok ? "" : "  MISSED");
	printf("  the planted device (%s cpu1) named, and nothing else: %s\n", planted, named ? "yes" : "NO  MISSED");
	const bool hosts_named = named_planted_hosts(json);
	printf("  with --html and --csv: %.2f s, %.0f MB peak; the page %.2f MB, the rows %.2f MB (%s)\n", pages.seconds,
	       pages.peak_mb, hbytes / 1e6, cbytes / 1e6, html);
	json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:f, s:i, s:{s:f, s:f, s:i}, s:{s:f, s:f, s:i}, s:f, s:b, s:f, s:f, s:f, s:b}",
					     "fleet", k->name, "hosts", k->what, "reports", (json_int_t)o->reports, "bytes", bytes,
					     "threads", threads, "plain", "seconds", p.seconds, "peak_mb", p.peak_mb,
					     "exit", p.status, "sdcscan_fleet", "seconds", f.seconds, "peak_mb", f.peak_mb,
					     "exit", f.status, "rate_ratio", ratio, "planted_named", named, "html_bytes", hbytes, "csv_bytes", cbytes,
					     "pages_seconds", pages.seconds,
					     "targets_met", mem_ok && rate_ok && time_ok && named && read_ok && hosts_named));
	json_object_set_new(json_array_get(out, json_array_size(out) - 1), "planted_hosts_named", json_boolean(hosts_named));
	return mem_ok && rate_ok && time_ok && named && read_ok && hosts_named;
}

static int bench_main(struct sdc_cmd *c)
{
	const struct bench_opts *o = c->opts;
	char dir[1024], probe[1100], err[300];
	const char *tmp = getenv("TMPDIR");
	if (o->dir && strlen(o->dir) > 900)
		return sdc_cli_bad(&c->cli, "--dir: a path of at most 900 bytes");
	sdc_strlcpy(dir, o->dir ? o->dir : "/var/cache/sdcscan-ci/fleet-bench", sizeof(dir));
	join(probe, sizeof(probe), dir, "x");
	if (sdc_make_parent_dirs(probe, 0755, err, sizeof(err)) || access(dir, W_OK)) {
		if (o->dir)
			return sdc_cli_bad(&c->cli, "--dir %s: %s", o->dir, err[0] ? err : strerror(errno));
		join(dir, sizeof(dir), tmp && *tmp && strlen(tmp) < 900 ? tmp : "/tmp", "sdcscan-fleet-bench");
		join(probe, sizeof(probe), dir, "x");
		if (sdc_make_parent_dirs(probe, 0755, err, sizeof(err)))
			return sdc_cli_bad(&c->cli, "%s", err);
	}
	const int threads = sdc_fleet_threads(o->threads);
	static const struct kind all[] = { { "large-128cpu-8gpu", "hosts of 128 CPUs and 8 GPUs", 128, 8 },
					   { "small-2cpu", "hosts of 2 CPUs", 2, 0 } };
	json_t *out = json_pack("{s:s, s:[]}", "benchmark", "fleet", "fleets");
	bool met = true;
	for (int i = 0; i < 2; i++)
		if (o->kind == 0 || o->kind == i + 1)
			met &= race(o, dir, &all[i], threads, json_object_get(out, "fleets"));
	const int rc = sdc_cli_targets_end(&c->cli, out, met);
	json_decref(out);
	return rc;
}

const struct sdc_command sdc_command_bench_fleet = {
	.name = "fleet",
	.summary = "sdcscan fleet against a plain reader (read + json_loadb) of the same generated reports: 10,000 "
		   "hosts of 128 CPUs and 8 GPUs, and of 2 CPUs; time, rate, peak memory; exit 0 every target met, "
		   "2 one missed",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_JSON,
	.fn = bench_main,
};
