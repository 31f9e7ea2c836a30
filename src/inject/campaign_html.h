/*
 * sdcscan campaign ... --html FILE: a campaign's detection tables drawn as charts (base/html.h)
 * in one self-contained page, from the same facts --json writes (run/facts.h), so the page and the
 * JSON cannot disagree. One renderer for every campaign: it draws what the object holds (gemm's
 * Table II, per-bit and tightness tables, gemm --gpus' tightness, embbag's Table III cells and
 * per-bit tables, cpu-faults' outcomes by variant, bit and register).
 */
#ifndef SDC_CAMPAIGN_HTML_H
#define SDC_CAMPAIGN_HTML_H

#include <stddef.h>

struct sdc_facts;

/* 0 for NULL or a path the page can be written to (checked before the campaign runs), else -1
 * with err saying why. */
int sdc_campaign_html_path_ok(const char *path, char *err, size_t errlen);

/* Writes the page of campaign (its name: gemm, embbag, cpu-faults) drawn from its facts (its
 * JSON object), atomically; 0, or -1 having said why. */
int sdc_campaign_html(const char *path, const char *campaign, const struct sdc_facts *facts);

/* The page as text (malloc'd, NUL-terminated), or NULL when out of memory: for the above and
 * for tests that draw a JSON file of their own. */
char *sdc_campaign_html_text(const char *campaign, const struct sdc_facts *facts, size_t *len);

#endif
