/*
 * The framework's side of run/facts.h: a struct sdc_facts is a jansson object, and the framework
 * (the runner, the report, the commands' JSON writers) hands it to jansson as one. Never included
 * under src/probes/: a probe states facts and never sees the format (tests/layers.py fails on a
 * probe that reaches the jansson header, directly or through a header like this one).
 */
#ifndef SDC_FACTS_JSON_H
#define SDC_FACTS_JSON_H

#include <jansson.h>

#include "run/facts.h"

static inline json_t *sdc_facts_json(struct sdc_facts *f)
{
	return (json_t *)f;
}

static inline struct sdc_facts *sdc_facts_of(json_t *j)
{
	return (struct sdc_facts *)j;
}

#endif
