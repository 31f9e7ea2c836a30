/* The one list of probes, and whether each is usable here (runner/registry.h). */
#include "runner/registry.h"

#include <stdio.h>
#include <string.h>

extern const struct sdc_probe sdc_probe_embbag;
extern const struct sdc_probe sdc_probe_minitrain;
extern const struct sdc_probe sdc_probe_allreduce;
extern const struct sdc_probe sdc_probe_gemm;
extern const struct sdc_probe sdc_probe_ecparity;

const struct sdc_probe *const sdc_probes[] = {
	&sdc_probe_gemm,
	&sdc_probe_embbag,
	&sdc_probe_minitrain,
	&sdc_probe_allreduce,
	&sdc_probe_ecparity,
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
