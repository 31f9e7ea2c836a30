/* The one list of probes, and whether each is usable here (runner/registry.h). */
#include "runner/registry.h"

#include <stdio.h>
#include <string.h>

/* SDC_PROBE_LIST(X): X(name) for each probe, in the order of src/probes/meson.build's list (the
 * build writes the header from it), each probe's descriptor being sdc_probe_NAME. */
#include "probes/probe_list.h"

#define SDC_PROBE_DECLARE(name) extern const struct sdc_probe sdc_probe_##name;
SDC_PROBE_LIST(SDC_PROBE_DECLARE)

#define SDC_PROBE_ENTRY(name) &sdc_probe_##name,
const struct sdc_probe *const sdc_probes[] = {
	SDC_PROBE_LIST(SDC_PROBE_ENTRY)
	NULL,
};

const struct sdc_probe *sdc_probe_find(const char *name)
{
	for (int i = 0; sdc_probes[i]; i++)
		if (!strcmp(sdc_probes[i]->name, name))
			return sdc_probes[i];
	return NULL;
}

void sdc_probe_names(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; sdc_probes[i]; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", sdc_probes[i]->name);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

bool sdc_probe_usable(const struct sdc_probe *p, const struct sdc_run *run, char *why, size_t len)
{
	if (p->available && !p->available(run, why, len))
		return false;
	why[0] = '\0';
	return true;
}
