/*
 * YAML profiles (libyaml). A profile names probes and their options:
 *
 *   description: "what this profile is for"
 *   seed: 1 | daily | random          # optional, default daily
 *   expect_gpus: 8                    # optional: fewer GPUs found is WARNING
 *   probes:
 *     gemm:
 *       duration: 20                  # common keys: duration, iterations, optional
 *       dtypes: [int8, fp32]          # then the probe's own options
 *
 * Every error names file:line:column, what was wrong and the valid choices, and is found
 * before any probe runs. Built-in profiles are compiled in from profiles/.
 */
#ifndef SDC_PROFILE_H
#define SDC_PROFILE_H

#include <stddef.h>

#include "base/builtin.h"
#include "runner/plan.h"

extern const struct sdc_builtin_file sdc_builtin_profiles[];

#define SDC_DEFAULT_PROFILE "quick"

/* Parses YAML text into plan. `file` names it in errors. Returns 0 or -1 with err set. */
int sdc_profile_parse(const char *file, const char *text, size_t len, struct sdc_plan *plan, char *err,
		      size_t errlen);

/* NAME of a built-in profile, or a path to a YAML file. Returns 0 or -1 with err set. */
int sdc_profile_load(const char *name_or_path, struct sdc_plan *plan, char *err, size_t errlen);

#endif
