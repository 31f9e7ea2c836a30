/* The one list of probes. A probe that is not built here stays listed and says why. */
#ifndef SDC_REGISTRY_H
#define SDC_REGISTRY_H

#include <stddef.h>

#include "probe/probe.h"

extern const struct sdc_probe *const sdc_probes[]; /* NULL-terminated */

const struct sdc_probe *sdc_probe_find(const char *name);
/* "gemm, embbag, ...", for "valid probes" messages. */
void sdc_probe_names(char *buf, size_t len);
/* Whether probe can run on this host; why not in `why`. */
bool sdc_probe_usable(const struct sdc_probe *p, const struct sdc_run *run, char *why, size_t len);

#endif
