/*
 * base/message.c sdc_escape and sdc_print_line: what status, fleet and the MPI summary print from
 * reports and peers. Expected strings are written by hand from the rule (C0 and DEL per ASCII,
 * C1 = U+0080..U+009F per ISO 6429) and the UTF-8 cases from RFC 3629's table of well-formed
 * sequences and Markus Kuhn's decoder stress test (UTF-8-test.txt: overlong forms, surrogates,
 * U+10FFFF and the first code point above it, a sequence cut short). Then what rank 0 prints
 * of the other ranks under MPI (runner/output.c sdc_output_fleet_ranks): a peer's host, summary
 * and findings as it sent them, escaped.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "check.h"
#include "runner/output.h"

static void expect(const char *in, const char *want)
{
	char out[256];
	const size_t n = sdc_escape(out, sizeof(out), in);
	CHECK_MSG(!strcmp(out, want), "in %zu bytes: got '%s', want '%s'", strlen(in), out, want);
	CHECK_MSG(n == strlen(want), "length %zu, want %zu for '%s'", n, strlen(want), want);
	CHECK(sdc_escape(NULL, 0, in) == strlen(want));
}

int main(void)
{
	/* what a hostile report holds: a new line and "clear the screen" */
	expect("evil\nhost", "evil\\nhost");
	expect("\x1b[2J", "\\x1b[2J");
	expect("a\tb\rc\\d", "a\\tb\\rc\\\\d");
	expect("\x01\x07\x08\x1f \x7f~", "\\x01\\x07\\x08\\x1f \\x7f~");
	expect("plain ASCII: OK, 42 results [x] {y} \"q\"", "plain ASCII: OK, 42 results [x] {y} \"q\"");
	expect("", "");
	/* valid UTF-8 kept: 2, 3 and 4 bytes, U+00A0 just past C1, U+10FFFF the last code point */
	expect("n\xc5\x93ud \xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e", "n\xc5\x93ud \xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
	expect("\xc2\xa0|\xf4\x8f\xbf\xbf", "\xc2\xa0|\xf4\x8f\xbf\xbf");
	/* C1 controls as UTF-8 (CSI U+009B, NEL U+0085, U+0080) and as bare bytes */
	expect("\xc2\x9b" "2J", "\\xc2\\x9b2J");
	expect("\xc2\x85\xc2\x80", "\\xc2\\x85\\xc2\\x80");
	expect("\x9b" "2J", "\\x9b2J");
	/* not UTF-8: overlong '/', a surrogate, above U+10FFFF, F5, a sequence cut short */
	expect("\xc0\xaf", "\\xc0\\xaf");
	expect("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	expect("\xed\xa0\x80", "\\xed\\xa0\\x80");
	expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	expect("\xf5\x80", "\\xf5\\x80");
	expect("\xe2\x82" "A", "\\xe2\\x82A");
	expect("x\xe2\x82", "x\\xe2\\x82");

	/* a short buffer: never half an escape or half a character, always terminated */
	char small[8];
	memset(small, 'Z', sizeof(small));
	CHECK(sdc_escape(small, 4, "\n\n") == 4);
	CHECK(!strcmp(small, "\\n"));
	CHECK(sdc_escape(small, 3, "a\xe2\x82\xac") == 4);
	CHECK(!strcmp(small, "a"));
	CHECK(sdc_escape(small, 1, "abc") == 3);
	CHECK(!strcmp(small, ""));
	CHECK(sdc_escape(small, 5, "ab\x1b") == 6);
	CHECK(!strcmp(small, "ab"));

	/* a whole line: every argument escaped, one newline at the end; a line past the stack buffer */
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	CHECK(f != NULL);
	if (f) {
		sdc_print_line(f, "%s: %s: %d", "CRITICAL", "h\nx\x1b[2J", 7);
		char *longer = malloc(5001);
		if (longer) {
			memset(longer, 'a', 5000);
			longer[4990] = '\n';
			longer[5000] = '\0';
		}
		sdc_print_line(f, "[%s]", longer ? longer : "");
		fclose(f);
		const char *want1 = "CRITICAL: h\\nx\\x1b[2J: 7\n";
		CHECK_MSG(buf && !strncmp(buf, want1, strlen(want1)), "got '%s'", buf ? buf : "(null)");
		if (buf && longer) {
			const char *l2 = buf + strlen(want1);
			CHECK(strlen(l2) == 5000 + 1 + 2 + 1); /* 'a's, the \n as two, brackets, the newline */
			CHECK(l2[0] == '[' && !strncmp(l2 + 4991, "\\na", 3) && !strcmp(l2 + 5002, "]\n"));
			CHECK(!strchr(l2, '\n') || strchr(l2, '\n') == l2 + strlen(l2) - 1);
		}
		free(longer);
	}
	free(buf);

	/* a peer's lines: its host, summary, and a finding's kind, device, target, values and detail */
	json_t *fleet = json_pack("{s:[{s:i, s:s, s:s, s:[]}, {s:i, s:s, s:s, s:[{s:s, s:s, s:s, s:i, s:i, s:i, s:s, "
				  "s:s, s:s, s:s}]}]}",
				  "ranks", "rank", 0, "host", "self", "summary", "OK", "findings", "rank", 1, "host",
				  "evil\nhost\x1b[2J", "summary", "CRITICAL: x\x1b]0;title\x07", "findings", "kind",
				  "checksum-mismatch\r", "device", "cpu\x1b[31m0", "target", "C\n", "iteration", 3, "row", 1,
				  "col", 2, "expected", "0x1\x1b", "actual", "0x2", "xor_mask", "0x3", "detail", "row off\nby 1");
	buf = NULL;
	size = 0;
	f = open_memstream(&buf, &size);
	CHECK(fleet && f);
	if (fleet && f) {
		struct sdc_output o = { .fp = f };
		sdc_output_fleet_ranks(&o, fleet);
		fclose(f);
		const char *want = "rank 1 (evil\\nhost\\x1b[2J): CRITICAL: x\\x1b]0;title\\x07\n"
				   "    rank 1 cpu\\x1b[31m0 iteration 3: checksum-mismatch\\r at C\\n[1][2]: expected "
				   "0x1\\x1b, actual 0x2, xor 0x3; row off\\nby 1\n";
		CHECK_MSG(buf && !strcmp(buf, want), "got '%s'\nwant '%s'", buf ? buf : "(null)", want);
	}
	free(buf);
	json_decref(fleet);
	return check_done("escape");
}
