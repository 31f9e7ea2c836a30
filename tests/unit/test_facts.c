/*
 * run/facts.h: what a probe states comes out as the JSON written here by hand (compact, in the order
 * stated, as jansson writes a report without the indentation): each type, paths and names that
 * are data, lists and rows, restated names, merges, what is left out; reading back; the file
 * form and its digest (the expected SHA-256 from sha256sum over the canonical text); and
 * workers publishing into one run at once (the lock is the framework's: without it the keys of
 * concurrent publishes are lost or the object is torn).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "run/facts_json.h"
#include "run/record.h"

/* f as compact JSON, in order; compared with want, then f freed. */
static void expect(struct sdc_facts *f, const char *want, int line)
{
	char *text = json_dumps(sdc_facts_json(f), JSON_COMPACT | JSON_PRESERVE_ORDER);
	CHECK_MSG(text && !strcmp(text, want), "line %d:\n  got  %s\n  want %s", line, text ? text : "(null)", want);
	free(text);
	sdc_facts_free(f);
}
#define EXPECT(f, want) expect(f, want, __LINE__)

static void types(void)
{
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_int(f, "i", -3);
	sdc_facts_int(f, "big", INT64_C(9007199254740993));
	sdc_facts_real(f, "one", 1.0);
	sdc_facts_real(f, "half", 0.5);
	sdc_facts_str(f, "s", "ring/ll");
	sdc_facts_str(f, "none", NULL);
	sdc_facts_bool(f, "t", true);
	sdc_facts_bool(f, "f", false);
	sdc_facts_null(f, "n");
	EXPECT(f, "{\"i\":-3,\"big\":9007199254740993,\"one\":1.0,\"half\":0.5,\"s\":\"ring/ll\",\"none\":null,"
		  "\"t\":true,\"f\":false,\"n\":null}");
}

static void names(void)
{
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_int(f, "rebuild.server", 3);
	sdc_facts_real(f, "rebuild.seconds", 2.25);
	sdc_facts_str(f, "state_sha256", "ab");
	sdc_facts_bool(f, "rebuild.deep.ok", true);
	sdc_facts_int(f, "rebuild.server", 4); /* keeps its place */
	sdc_facts_real(f, "rebuild.seconds", NAN); /* not a JSON number: left out, the old value kept */
	sdc_facts_real(f, "inf", INFINITY);
	struct sdc_facts *k = sdc_facts_key(sdc_facts_group(f, "gpus"), "H100, cuBLASLt 13.1.0");
	sdc_facts_int(k, "rows", 7);
	CHECK(sdc_facts_key(sdc_facts_group(f, "gpus"), "H100, cuBLASLt 13.1.0") == k); /* the same group */
	sdc_facts_int(f, "s.x", 1); /* a path through a fact that is not a group replaces it */
	sdc_facts_int(f, "state_sha256.y", 2);
	EXPECT(f, "{\"rebuild\":{\"server\":4,\"seconds\":2.25,\"deep\":{\"ok\":true}},\"state_sha256\":{\"y\":2},"
		  "\"gpus\":{\"H100, cuBLASLt 13.1.0\":{\"rows\":7}},\"s\":{\"x\":1}}");
}

static void lists(void)
{
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_real(f, "target", 0.95);
	for (int i = 0; i < 2; i++) {
		struct sdc_facts *r = sdc_facts_row(f, "rows");
		sdc_facts_int(r, "n", 64 << i);
		sdc_facts_bool(r, "met", i == 0);
		sdc_facts_append_real(r, "rates", 100.0);
		sdc_facts_append_real(r, "rates", 12.5);
	}
	sdc_facts_list(f, "uuids");
	sdc_facts_list(f, "sizes");
	sdc_facts_append_int(f, "sizes", 1024);
	sdc_facts_append_str(f, "sizes", "x");
	sdc_facts_append_real(f, "sizes", NAN);
	sdc_facts_list(f, "sizes"); /* there already: kept */
	struct sdc_facts *deep = sdc_facts_row(f, "a.b");
	sdc_facts_int(deep, "k", 1);
	EXPECT(f, "{\"target\":0.94999999999999996,\"rows\":[{\"n\":64,\"met\":true,\"rates\":[100.0,12.5]},"
		  "{\"n\":128,\"met\":false,\"rates\":[100.0,12.5]}],\"uuids\":[],\"sizes\":[1024,\"x\"],"
		  "\"a\":{\"b\":[{\"k\":1}]}}");
}

static void put_merge(void)
{
	struct sdc_facts *f = sdc_facts_new(), *g = sdc_facts_new(), *h = sdc_facts_new();
	sdc_facts_int(f, "a", 1);
	sdc_facts_int(f, "g.old", 1);
	sdc_facts_int(g, "x", 2);
	sdc_facts_put(f, "g", g); /* replaces the group in its place */
	sdc_facts_int(f, "z", 9);
	sdc_facts_int(h, "g.y", 3);
	sdc_facts_int(h, "a", 5);
	sdc_facts_int(h, "new", 6);
	sdc_facts_merge(f, h); /* group into group; a's value replaced in place; new after */
	EXPECT(f, "{\"a\":5,\"g\":{\"x\":2,\"y\":3},\"z\":9,\"new\":6}");
}

static void reading(void)
{
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_int(f, "p.rows", 12);
	sdc_facts_real(f, "p.emax", 0.25);
	sdc_facts_str(f, "p.name", "fp32");
	sdc_facts_int(sdc_facts_row(f, "p.sizes"), "k", 64);
	sdc_facts_append_int(f, "p.sizes", 3);
	sdc_facts_int(sdc_facts_key(f, "a.b"), "c", 1);
	int64_t i = 0;
	double d = 0;
	CHECK(sdc_facts_get_int(f, "p.rows", &i) && i == 12);
	CHECK(!sdc_facts_get_real(f, "p.rows", &d)); /* an integer is not a real */
	CHECK(sdc_facts_get_real(f, "p.emax", &d) && d == 0.25);
	CHECK(!sdc_facts_get_int(f, "p.emax", &i));
	CHECK(!sdc_facts_get_int(f, "p.none", &i) && !sdc_facts_get_int(f, "q.none", &i));
	CHECK(!strcmp(sdc_facts_get_str(f, "p.name"), "fp32") && !sdc_facts_get_str(f, "p.rows"));
	CHECK(sdc_facts_has(f, "p.name") && !sdc_facts_has(f, "p.nothing"));
	CHECK(sdc_facts_rows(f, "p.sizes") == 2 && sdc_facts_rows(f, "p.rows") == 0 && sdc_facts_rows(f, "x") == 0);
	CHECK(sdc_facts_get_int(sdc_facts_row_at(f, "p.sizes", 0), "k", &i) && i == 64);
	CHECK(!sdc_facts_row_at(f, "p.sizes", 1) && !sdc_facts_row_at(f, "p.sizes", 2));
	CHECK(sdc_facts_find(f, "p") && !sdc_facts_find(f, "p.rows") && !sdc_facts_find(NULL, "p"));
	CHECK(!sdc_facts_find(f, "a.b") && sdc_facts_find_key(f, "a.b"));
	CHECK(sdc_facts_get_int(sdc_facts_find_key(f, "a.b"), "c", &i) && i == 1);
	/* the names in the order stated, then NULL; none in what is not a group */
	CHECK(!strcmp(sdc_facts_name_at(f, 0), "p") && !strcmp(sdc_facts_name_at(f, 1), "a.b"));
	CHECK(!sdc_facts_name_at(f, 2) && !sdc_facts_name_at(NULL, 0));
	CHECK(!strcmp(sdc_facts_name_at(sdc_facts_find(f, "p"), 3), "sizes"));
	sdc_facts_free(f);
}

static void files(void)
{
	char dir[] = "/tmp/test_facts.XXXXXX", path[64], err[700];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/f.json", dir);
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_str(f, "b", "x");
	sdc_facts_int(f, "a", 1);
	sdc_facts_append_real(f, "c", 0.5);
	sdc_facts_append_int(f, "c", 2);
	char hex[65];
	CHECK(sdc_facts_sha256(f, hex) == 0);
	/* printf '{"a":1,"b":"x","c":[0.5,2]}' | sha256sum */
	CHECK(!strcmp(hex, "0278e112370df23e2ccb6d7629da5498c7cde90012f0229a5fe179aa966ea465"));
	sdc_facts_str(f, "sha256", hex);
	char again[65];
	CHECK(sdc_facts_sha256(f, again) == 0 && !strcmp(again, hex)); /* without its own digest */
	CHECK(sdc_facts_write(path, f, err, sizeof(err)) == 0);
	sdc_facts_free(f);
	FILE *fh = fopen(path, "r");
	char text[512] = "";
	CHECK(fh && fread(text, 1, sizeof(text) - 1, fh) > 0);
	if (fh)
		fclose(fh);
	CHECK_MSG(!strcmp(text, "{\n  \"b\": \"x\",\n  \"a\": 1,\n  \"c\": [\n    0.5,\n    2\n  ],\n  \"sha256\": \""
				"0278e112370df23e2ccb6d7629da5498c7cde90012f0229a5fe179aa966ea465\"\n}\n"),
		  "%s", text);
	struct sdc_facts *back = sdc_facts_load(path, 1 << 20, "test file", err, sizeof(err));
	int64_t a = 0;
	CHECK(back && sdc_facts_get_int(back, "a", &a) && a == 1 && sdc_facts_rows(back, "c") == 2);
	sdc_facts_free(back);
	/* a file that is not JSON: where, in jansson's words */
	FILE *bad = fopen(path, "w");
	if (bad) {
		fputs("{\"a\": 1,\n  x}", bad);
		fclose(bad);
	}
	CHECK(!sdc_facts_load(path, 1 << 20, "test file", err, sizeof(err)));
	CHECK_MSG(strstr(err, "test file ") == err && strstr(err, "(line 2, column"), "%s", err);
	unlink(path);
	CHECK(!sdc_facts_load(path, 1 << 20, "test file", err, sizeof(err)) && strstr(err, "test file ") == err);
	rmdir(dir);
}

#define WORKERS 8
#define PUBLISHES 400

static void *worker(void *arg)
{
	struct sdc_run *run = arg;
	static _Atomic int next;
	const int me = next++;
	for (int i = 0; i < PUBLISHES; i++) {
		struct sdc_facts *f = sdc_facts_new();
		char name[32];
		snprintf(name, sizeof(name), "w%d_%d", me, i);
		sdc_facts_int(f, name, i);
		sdc_facts_int(f, "shared.count", i);
		sdc_run_facts(run, "probe", f);
	}
	return NULL;
}

static void run_facts(void)
{
	struct sdc_run run;
	CHECK(sdc_run_init(&run) == 0);
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_str(f, "version", "first");
	sdc_facts_int(f, "rebuild.server", 1);
	sdc_run_facts(&run, "nccl", f);
	f = sdc_facts_new();
	sdc_facts_str(f, "version", "second"); /* the first worker's say stays */
	sdc_facts_int(f, "rebuild.round", 2);
	sdc_run_facts_keep(&run, "nccl", f);
	f = sdc_facts_new();
	sdc_facts_int(f, "rebuild.server", 5); /* updated in place */
	sdc_run_facts(&run, "nccl", f);
	f = sdc_facts_new();
	sdc_facts_int(f, "paths.auto", 1);
	sdc_facts_int(f, "paths.ring", 2);
	sdc_facts_str(f, "last", "x");
	sdc_run_facts(&run, "nccl", f);
	f = sdc_facts_new();
	sdc_facts_int(f, "paths.tree", 3); /* the group replaced whole, in its place */
	sdc_facts_str(f, "last", "y");
	sdc_run_facts_replace(&run, "nccl", f);
	char *text = json_dumps(run.environment, JSON_COMPACT | JSON_PRESERVE_ORDER);
	CHECK_MSG(text && !strcmp(text, "{\"nccl\":{\"version\":\"first\",\"rebuild\":{\"server\":5,\"round\":2},"
				     "\"paths\":{\"tree\":3},\"last\":\"y\"}}"),
		  "%s", text ? text : "(null)");
	free(text);

	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, &run) == 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	const json_t *p = json_object_get(run.environment, "probe");
	CHECK_MSG(json_object_size(p) == WORKERS * PUBLISHES + 1, "%zu facts", json_object_size(p));
	int missing = 0;
	for (int w = 0; w < WORKERS; w++)
		for (int i = 0; i < PUBLISHES; i++) {
			char name[32];
			snprintf(name, sizeof(name), "w%d_%d", w, i);
			missing += json_integer_value(json_object_get(p, name)) != i;
		}
	CHECK_MSG(!missing, "%d facts lost", missing);
	CHECK(json_is_integer(json_object_get(json_object_get(p, "shared"), "count")));
	sdc_run_release(&run);
}

int main(void)
{
	types();
	names();
	lists();
	put_merge();
	reading();
	files();
	run_facts();
	return check_done("facts");
}
