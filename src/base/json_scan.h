/*
 * A JSON scanner that builds nothing: it walks a document in memory, checks its syntax as jansson
 * does, and hands the caller only the members it asks for (sdcscan fleet reads 10,000 reports of
 * up to a megabyte each and keeps a few fields of each). Skipped values are checked, not kept.
 *
 * What it accepts is what jansson 2.14's json_loadb(..., JSON_REJECT_DUPLICATES) accepts
 * (tests/unit/test_fleet_read.c compares the two on crafted and mutated documents), but for one
 * thing: a key given twice in an object the caller skips is not looked for (where the caller
 * reads an object, it sees every key and can refuse the second one). jansson stays the reader
 * for everything else, and for the reason a document was refused.
 *
 * Usage:
 *	struct sdc_jscan s;
 *	sdc_jscan_init(&s, text, len);
 *	size_t n = 0;
 *	char key[64];
 *	if (!sdc_jscan_open(&s, '{')) ...;
 *	while (sdc_jscan_key(&s, &n, key, sizeof(key)) > 0)
 *		if (!strcmp(key, "name")) sdc_jscan_string(&s, buf, sizeof(buf), NULL);
 *		else sdc_jscan_skip(&s);
 *	ok = !s.bad && sdc_jscan_end(&s);
 * Every call after an error returns failure; s.bad stays set.
 */
#ifndef SDC_JSON_SCAN_H
#define SDC_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

enum sdc_jtype { SDC_JBAD, SDC_JOBJECT, SDC_JARRAY, SDC_JSTRING, SDC_JINT, SDC_JREAL, SDC_JTRUE, SDC_JFALSE, SDC_JNULL };

/* jansson's JSON_PARSER_MAX_DEPTH: nesting deeper than this is refused */
#define SDC_JSCAN_MAX_DEPTH 2048

struct sdc_jscan {
	const char *p, *end;
	int depth;
	bool bad;
};

void sdc_jscan_init(struct sdc_jscan *s, const char *text, size_t len);

/* The type of the next value (whitespace skipped), nothing consumed; SDC_JBAD where none can start. */
enum sdc_jtype sdc_jscan_peek(struct sdc_jscan *s);

/* Skips one value of any type, checking it. false (and s->bad) when it is malformed. */
bool sdc_jscan_skip(struct sdc_jscan *s);

/* Consumes the '{' or '[' that opens the next value; false when the next value is not that. */
bool sdc_jscan_open(struct sdc_jscan *s, char open);

/*
 * The next member of the object opened last: 1 with its key (decoded, NUL-terminated, cut at
 * keylen - 1 bytes) and the cursor on its value, which the caller must read or skip; 0 at the
 * closing '}' (consumed); -1 on an error. *n counts the members so far: 0 before the first.
 */
int sdc_jscan_key(struct sdc_jscan *s, size_t *n, char *key, size_t keylen);

/* The same for the elements of an array: 1 with the cursor on the next element, 0 at ']', -1. */
int sdc_jscan_item(struct sdc_jscan *s, size_t *n);

/*
 * A string value decoded (escapes, surrogate pairs) into out, NUL-terminated and cut at
 * outlen - 1 bytes; *len (when not NULL) gets its whole decoded length. false when the next
 * value is not a string or is malformed.
 */
bool sdc_jscan_string(struct sdc_jscan *s, char *out, size_t outlen, size_t *len);

/* A number: *is_int and *i for an integer token (jansson's json_int_t), *d either way. */
bool sdc_jscan_number(struct sdc_jscan *s, bool *is_int, long long *i, double *d);

/* Where the next value starts (whitespace skipped): with sdc_jscan_skip, the text of a value. */
const char *sdc_jscan_here(struct sdc_jscan *s);

/* Whether only whitespace is left (after the document's one value). */
bool sdc_jscan_end(struct sdc_jscan *s);

/*
 * The first NUL byte of a text, NULL where it has none. JSON has no raw NUL (RFC 8259: a string
 * spells it \u0000), and the scanner refuses one; jansson 2.14's json_loadb loses a NUL it reads
 * ahead and pushes back (after a number or keyword: its stream buffer is NUL-terminated), and so
 * takes {"a":true<NUL>}. Every reader of outside JSON loads through sdc_json_loadb (base/json_load.h).
 */
const char *sdc_json_nul(const char *text, size_t len);

#endif
