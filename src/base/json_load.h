/*
 * jansson's json_loadb for text from outside (reports, peers' records, golden, calibration and
 * node-state files), refusing a raw NUL byte first: JSON has none (RFC 8259), and jansson 2.14
 * takes one that follows a number or keyword (base/json_scan.h, sdc_json_nul). A refusal fills
 * the json_error_t as jansson would, so each caller's message names it like any syntax error.
 */
#ifndef SDC_JSON_LOAD_H
#define SDC_JSON_LOAD_H

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/json_scan.h"

static inline json_t *sdc_json_loadb(const char *text, size_t len, size_t flags, json_error_t *je)
{
	const char *nul = sdc_json_nul(text, len);
	if (!nul)
		return json_loadb(text, len, flags, je);
	const size_t at = (size_t)(nul - text);
	int line = 1, column = 1;
	for (size_t i = 0; i < at; i++)
		if (text[i] == '\n')
			line++, column = 1;
		else
			column++;
	memset(je, 0, sizeof(*je));
	je->line = line, je->column = column, je->position = (int)at;
	snprintf(je->source, sizeof(je->source), "<buffer>");
	snprintf(je->text, sizeof(je->text), "a NUL byte at offset %zu", at);
	return NULL;
}

#endif
