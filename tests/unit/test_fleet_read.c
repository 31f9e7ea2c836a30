/*
 * sdcscan fleet's reader against jansson, the library every other reader of reports uses:
 * base/json_scan.c must accept and refuse what jansson 2.14's json_loadb(JSON_REJECT_DUPLICATES)
 * does (crafted cases from RFC 8259's grammar and jansson's own limits, then 20,000 seeded
 * mutations of a report: bytes flipped, cut, inserted), and decode strings to the same bytes;
 * commands/fleet_read.c must take exactly the reports sdc_report_parse takes and read the same
 * fields from them as jansson's tree holds. jansson is the independent side of each comparison.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_scan.h"
#include "check.h"
#include "commands/fleet_data.h"
#include "runner/report_read.h"

/* jansson's answer: 1 accepts, 0 refuses, -1 refuses for a duplicate key (the scanner does not
 * look for those in what it skips: json_scan.h). A raw NUL byte is refused whatever jansson says:
 * RFC 8259 has none, and jansson 2.14 loses one that follows a number or keyword (json_scan.h). */
static int jansson_takes(const char *text, size_t len)
{
	if (memchr(text, '\0', len))
		return 0;
	json_error_t e;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
	json_decref(j);
	return j ? 1 : strstr(e.text, "duplicate") ? -1 : 0;
}

static bool scan_takes(const char *text, size_t len)
{
	struct sdc_jscan s;
	sdc_jscan_init(&s, text, len);
	const enum sdc_jtype t = sdc_jscan_peek(&s);
	return (t == SDC_JOBJECT || t == SDC_JARRAY) && sdc_jscan_skip(&s) && sdc_jscan_end(&s);
}

static void same(const char *text, size_t len, const char *what)
{
	const int j = jansson_takes(text, len);
	if (j < 0)
		return;
	CHECK_MSG(scan_takes(text, len) == (j == 1), "%s: jansson %s it, the scanner does not: %.*s", what,
		  j ? "takes" : "refuses", (int)(len < 200 ? len : 200), text);
}

static void crafted(void)
{
	static const char *const cases[] = {
		"{}", "[]", " {\"a\" : [1, -0, 0.5, -1.5e+10, 1E-3, true, false, null, \"\"]}\n", "{\"a\":1,}",
		"[1,]", "[,1]", "{\"a\" 1}", "{a:1}", "[01]", "[-]", "[1.]", "[.5]", "[1e]", "[1e+]", "[+1]",
		"[0x10]", "[1.5e308]", "[1e309]", "[-1e400]", "[1e-400]", "[9223372036854775807]",
		"[9223372036854775808]", "[-9223372036854775808]", "[-9223372036854775809]",
		"[123456789012345678901234567890]", "[tru]", "[truex]", "[nul]", "[True]", "{\"a\":1}x", "{} {}",
		"[\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"]", "[\"\\u0000\"]", "[\"\\ud800\"]", "[\"\\udc00\"]",
		"[\"\\ud800\\u0041\"]", "[\"\\ud800x\"]", "[\"\\uDBFF\\uDFFF\"]", "[\"\\u00G0\"]", "[\"\\x41\"]",
		"[\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"]", "[\"a\tb\"]", "[\"a\x01\"]", "[\"\x7f\"]", "[\"\xc3\xa9\"]",
		"[\"\xc3\"]", "[\"\xc0\xaf\"]", "[\"\xe0\x80\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]",
		"[\"\xf0\x9f\x98\x80\"]", "[\"\xff\"]", "[\"abc", "[\"abc\\", "{\"a\":{\"b\":[1,{\"c\":null}]}}",
		"{\"a\":1,\"a\":2}", "\"str\"", "42", "", "   ", "[1] \n\t\r", "[1]\f", "\xef\xbb\xbf[]", "[1 2]",
		"{\"a\":[}]", "[{]}", "{\"\":0}",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same(cases[i], strlen(cases[i]), "crafted");
	/* a NUL byte inside the buffer */
	same("[\"a\0b\"]", 7, "NUL in a string");
	same("[1]\0", 4, "NUL after the value");
	/* one that jansson 2.14 takes (found by tests/fuzz/fuzz_fleet_read in CI): every reader refuses it */
	static const char after_keyword[] = "{\"a\":true\0,\"b\":1}", after_number[] = "[1\0]";
	CHECK_MSG(!scan_takes(after_keyword, sizeof(after_keyword) - 1), "the scanner takes a NUL after true");
	CHECK_MSG(!scan_takes(after_number, sizeof(after_number) - 1), "the scanner takes a NUL after a number");
	/* jansson's depth limit: every value counts, the innermost scalar too */
	for (int depth = SDC_JSCAN_MAX_DEPTH - 1; depth <= SDC_JSCAN_MAX_DEPTH + 1; depth++)
		for (int scalar = 0; scalar < 2; scalar++) {
			char *t = malloc(2 * (size_t)depth + 2);
			size_t n = 0;
			for (int k = 0; k < depth; k++)
				t[n++] = '[';
			if (scalar)
				t[n++] = '1';
			for (int k = 0; k < depth; k++)
				t[n++] = ']';
			same(t, n, scalar ? "deep with a scalar" : "deep");
			free(t);
		}
	/* decoded strings: the scanner's bytes are jansson's */
	static const char *const strs[] = { "[\"plain\"]", "[\"evil\\nhost\\u001b[2J\"]", "[\"\\u00e9\\u20ac\\ud83d\\ude00\"]",
					    "[\"\xc3\xa9t\xc3\xa9\"]", "[\"q\\\"\\\\\\/\"]" };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		json_t *j = json_loads(strs[i], 0, NULL);
		struct sdc_jscan s;
		sdc_jscan_init(&s, strs[i], strlen(strs[i]));
		size_t n = 0, len = 0;
		char out[64];
		CHECK(sdc_jscan_open(&s, '[') && sdc_jscan_item(&s, &n) == 1 && sdc_jscan_string(&s, out, sizeof(out), &len));
		const char *want = json_string_value(json_array_get(j, 0));
		CHECK_MSG(want && len == strlen(want) && !strcmp(out, want), "%s decoded as '%s'", strs[i], out);
		/* cut to fit, NUL-terminated, the whole length still told */
		sdc_jscan_init(&s, strs[i], strlen(strs[i]));
		n = 0;
		char small[4];
		CHECK(sdc_jscan_open(&s, '[') && sdc_jscan_item(&s, &n) == 1 && sdc_jscan_string(&s, small, sizeof(small), &len));
		CHECK(want && len == strlen(want) && strlen(small) <= 3 && !strncmp(small, want, strlen(small)));
		json_decref(j);
	}
}

/* A report as sdcscan writes one, small: two CPUs, a digest each, a finding-free OK. */
static const char *const REPORT =
	"{\"schema_version\": [1, 3], \"tool\": {\"name\": \"sdcscan\", \"argv\": [\"x\"]},\n"
	" \"host\": {\"hostname\": \"evil\\nhost\\u001b[2J\", \"os\": \"Debian\"},\n"
	" \"devices\": [{\"id\": \"cpu0\", \"type\": \"cpu\", \"model\": \"AMD EPYC\", \"microcode\": \"0x1\"},\n"
	"  {\"id\": \"cpu1\", \"type\": \"cpu\", \"model\": \"AMD EPYC\", \"nvml\": {\"a\": [1, 2.5e3, null]}}],\n"
	" \"run\": {\"profile\": \"quick\", \"seed\": \"7\", \"start\": \"2026-11-25T23:14:42Z\", \"duration_seconds\": 5.25,\n"
	"  \"kind\": \"scheduled\", \"sequence\": 12, \"probes\": [{\"name\": \"gemm\", \"options\": {\"n\": \"40\", \"m\": \"48\"}}],\n"
	"  \"environment\": {\"blas\": {\"library\": \"OpenBLAS\", \"version\": \"0.3.21\", \"core\": \"Zen\", \"threads\": 1}}},\n"
	" \"results\": [{\"probe\": \"gemm\", \"variant\": \"int8\", \"device\": \"cpu0\", \"status\": \"ok\", \"rate\": 83.5,\n"
	"   \"rate_unit\": \"GOP/s\", \"kernel\": \"avx2\", \"work_digest\": {\"iterations\": 16, \"sha256\": \"abc\"}},\n"
	"  {\"probe\": \"gemm\", \"variant\": \"int8\", \"device\": \"cpu1\", \"status\": \"ok\", \"rate\": 80,\n"
	"   \"kernel\": \"avx2\", \"work_digest\": {\"iterations\": 16, \"sha256\": \"abd\"}}, 7],\n"
	" \"totals\": [], \"findings\": [], \"findings_not_kept\": 0, \"injections\": [],\n"
	" \"verdict\": {\"status\": \"OK\", \"code\": 0, \"summary\": \"OK: 2 results clean\"}}\n";

/* Replaces the first `from` in REPORT with `to`. */
static char *edit(const char *from, const char *to)
{
	const char *at = strstr(REPORT, from);
	if (!at)
		return NULL;
	char *out = malloc(strlen(REPORT) + strlen(to) + 1);
	const size_t pre = (size_t)(at - REPORT);
	memcpy(out, REPORT, pre);
	strcpy(out + pre, to);
	strcat(out, at + strlen(from));
	return out;
}

static void reader_like_jansson(struct fleet_rec *rec, const char *text, const char *what)
{
	char why[700];
	json_t *r = sdc_report_parse(text, strlen(text), why, sizeof(why));
	const int mine = sdc_fleet_rec_read(rec, text, strlen(text));
	CHECK_MSG((mine == 0) == (r != NULL), "%s: sdc_report_parse %s it (%s), fleet's reader %s", what,
		  r ? "takes" : "refuses", r ? "" : why, mine ? "refuses" : "takes");
	if (r && !mine) {
		json_t *res = json_object_get(r, "results"), *run = json_object_get(r, "run");
		CHECK(!strcmp(FL_S(rec, rec->host), sdc_json_str(json_object_get(r, "host"), "hostname")));
		CHECK(!strcmp(FL_S(rec, rec->seed), sdc_json_str(run, "seed")));
		CHECK(rec->sequence == json_integer_value(json_object_get(run, "sequence")));
		CHECK(rec->code == json_integer_value(json_object_get(json_object_get(r, "verdict"), "code")));
		size_t i, k = 0;
		json_t *x;
		json_array_foreach(res, i, x) {
			if (!json_is_object(x))
				continue;
			json_t *wd = json_object_get(x, "work_digest");
			CHECK(k < rec->nres && !strcmp(FL_S(rec, rec->res[k].device), sdc_json_str(x, "device")) &&
			      !strcmp(FL_S(rec, rec->res[k].digest), sdc_json_str(wd, "sha256")) &&
			      rec->res[k].iterations == json_integer_value(json_object_get(wd, "iterations")) &&
			      rec->res[k].rate == json_number_value(json_object_get(x, "rate")));
			k++;
		}
		CHECK_MSG(k == rec->nres, "%s: %zu results, jansson %zu", what, rec->nres, k);
		CHECK(rec->ndev == json_array_size(json_object_get(r, "devices")));
		json_t *blas = json_object_get(json_object_get(run, "environment"), "blas");
		CHECK(!strcmp(FL_S(rec, rec->blas_core), sdc_json_str(blas, "core")));
		json_t *opts = json_object_get(json_array_get(json_object_get(run, "probes"), 0), "options");
		char *o = json_is_object(opts) ? json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		CHECK_MSG(rec->nprobe < 1 || !strcmp(FL_S(rec, rec->probe[0].options), o ? o : ""), "%s: options %s, jansson's %s",
			  what, FL_S(rec, rec->probe[0].options), o);
		free(o);
	}
	json_decref(r);
}

static void reports(void)
{
	struct fleet_rec rec = { 0 };
	reader_like_jansson(&rec, REPORT, "the report");
	CHECK(!strcmp(FL_S(&rec, rec.host), "evil\nhost\x1b[2J"));
	CHECK(!strcmp(FL_S(&rec, rec.probe[0].options), "{\"m\":\"48\",\"n\":\"40\"}"));
	CHECK(!strcmp(FL_S(&rec, rec.blas_core), "Zen") && rec.nres == 2 && !strcmp(FL_S(&rec, rec.res[1].digest), "abd"));
	/* a NUL byte after a number in the report (jansson 2.14 alone would take it): both refuse */
	{
		const char *code = strstr(REPORT, "\"code\": 0") + strlen("\"code\": 0");
		const size_t len = strlen(REPORT), at = (size_t)(code - REPORT);
		char *t = malloc(len + 2), why[700];
		memcpy(t, REPORT, at), t[at] = '\0', memcpy(t + at + 1, REPORT + at, len - at + 1);
		json_t *r = sdc_report_parse(t, len + 1, why, sizeof(why));
		CHECK_MSG(!r && strstr(why, "NUL byte"), "sdc_report_parse: %s", r ? "takes a NUL byte" : why);
		CHECK(sdc_fleet_rec_read(&rec, t, len + 1) != 0);
		json_decref(r);
		free(t);
	}
	static const char *const edits[][3] = {
		{ "[1, 3]", "[2, 0]", "another major" },
		{ "[1, 3]", "[\"1\", 3]", "a major that is a string" },
		{ "\"code\": 0", "\"code\": 2", "a code that is not its status" },
		{ "\"code\": 0", "\"code\": 0.0", "a real code" },
		{ "\"status\": \"OK\"", "\"status\": \"ok\"", "a status in lower case" },
		{ "\"start\": \"2026-11-25T23:14:42Z\"", "\"start\": \"yesterday\"", "a malformed start" },
		{ "\"duration_seconds\": 5.25", "\"duration_seconds\": -1", "a negative duration" },
		{ "\"duration_seconds\": 5.25", "\"duration_seconds\": \"5\"", "a duration that is a string" },
		{ "\"findings\": []", "\"findings\": {}", "findings not a list" },
		{ "\"findings\": []", "\"findings\": [{\"class\": \"corruption\", \"kind\": \"x\", \"device\": \"cpu0\"}]",
		  "an OK over a corruption finding" },
		{ "\"findings\": []", "\"findings\": [{\"class\": \"degraded\"}]", "an OK over a degraded finding" },
		{ "\"status\": \"ok\", \"rate\": 80", "\"status\": \"corrupt\", \"rate\": 80", "an OK over a corrupt result" },
		{ "\"hostname\": ", "\"hostname\": \"a\", \"hostname\": ", "a hostname twice" },
		{ "\"sha256\": \"abc\"", "\"sha256\": \"abc\", \"sha256\": \"abd\"", "a digest twice" },
		{ "\"code\": 0", "\"code\": 0, \"code\": 0", "a code twice" },
		{ "\"m\": \"48\"", "\"m\": \"48\", \"m\": \"49\"", "an option twice" },
		{ "\"run\": {", "\"run\": [], \"x\": {", "run not an object" },
		{ "\"hostname\": \"evil", "\"hostname\": \"\\u0065vil", "an escaped hostname" },
		{ "{\"schema_version\"", "{\"\\u0073chema_version\"", "an escaped key" },
		{ "\"sequence\": 12", "\"sequence\": 1.5", "a real sequence" },
		{ "\"iterations\": 16", "\"iterations\": \"16\"", "iterations as a string" },
		{ "\"rate\": 83.5", "\"rate\": \"fast\"", "a rate as a string" },
		{ "\"options\": {\"n\"", "\"options\": {\"n\": \"41\", \"n\"", "options with a key twice" },
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *t = edit(edits[i][0], edits[i][1]);
		CHECK_MSG(t, "edit %s: not found", edits[i][2]);
		if (t)
			reader_like_jansson(&rec, t, edits[i][2]);
		free(t);
	}
	/* mutations: the scanner agrees with jansson on every one; the reader with sdc_report_parse */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	const size_t len = strlen(REPORT);
	char *t = malloc(len + 16);
	static const char alphabet[] = "{}[]\",:\\0123456789.eE+-tfnul \n\x01\x80\xc3\xa9u";
	int taken = 0;
	for (int m = 0; m < 20000; m++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(t, REPORT, len + 1);
		size_t n = len;
		const size_t at = (size_t)(x >> 8) % len;
		const char c = alphabet[(x >> 40) % (sizeof(alphabet) - 1)];
		switch (x % 4) {
		case 0: t[at] = c; break;                                        /* flip */
		case 1: n = at; break;                                           /* cut */
		case 2: memmove(t + at + 1, t + at, len + 1 - at), t[at] = c, n++; break; /* insert */
		default: memmove(t + at, t + at + 1, len - at), n--; break;      /* delete */
		}
		same(t, n, "mutation");
		if (jansson_takes(t, n) >= 0) {
			char *z = malloc(n + 1); /* (sdc_report_parse reads len bytes; the reader's strlen needs no NUL inside) */
			memcpy(z, t, n);
			z[n] = '\0';
			if (strlen(z) == n) {
				reader_like_jansson(&rec, z, "mutation");
				taken += sdc_fleet_rec_read(&rec, z, n) == 0;
			}
			free(z);
		}
	}
	CHECK_MSG(taken > 1000, "only %d mutations were reports: the mutations test too little", taken);
	free(t);
	sdc_fleet_rec_release(&rec);
}

int main(void)
{
	crafted();
	reports();
	return check_done("fleet_read");
}
