#include "inject.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

static int parse_key(struct sdc_inject_spec *spec, const char *key, const char *val, char *err,
		     size_t errlen)
{
	static const char *const keys[] = { "device", "iter", "row", "col", "bit", "count", "every", "rate", "tensor", "rank" };
	bool known = false;
	for (size_t i = 0; i < SDC_ARRAY_SIZE(keys); i++)
		known |= !strcmp(key, keys[i]);
	if (!known) {
		snprintf(err, errlen, "unknown key '%s' (valid keys: device, iter, row, col, bit, count, every, rate, tensor, rank)",
			 key);
		return -1;
	}
	int64_t v;
	if (!strcmp(key, "tensor")) {
		/* Which named tensor (minitrain); checked against the probe's names when it runs. */
		if (!*val || strlen(val) >= sizeof(spec->tensor)) {
			snprintf(err, errlen, "tensor=%s: expected a tensor name of 1 to %zu characters", val,
				 sizeof(spec->tensor) - 1);
			return -1;
		}
		sdc_strlcpy(spec->tensor, val, sizeof(spec->tensor));
		return 0;
	}
	if (!strcmp(key, "rate")) {
		double r;
		if (!sdc_parse_double(val, &r) || r <= 0 || r > 1) {
			snprintf(err, errlen, "rate=%s: expected a probability in (0, 1]", val);
			return -1;
		}
		spec->rate = r;
		return 0;
	}
	if (!sdc_parse_i64(val, &v) || v < 0) {
		snprintf(err, errlen, "%s=%s: expected a non-negative integer", key, val);
		return -1;
	}
	if (!strcmp(key, "rank")) {
		if (v >= 1 << 24)
			goto range;
		spec->rank = (int)v;
	} else if (!strcmp(key, "device")) {
		if (v >= 1 << 20)
			goto range;
		spec->device = (int)v;
	} else if (!strcmp(key, "iter")) {
		spec->iter = v;
	} else if (!strcmp(key, "row")) {
		spec->row = v;
	} else if (!strcmp(key, "col")) {
		spec->col = v;
	} else if (!strcmp(key, "bit")) {
		if (v > 63)
			goto range;
		spec->bit = (int)v;
	} else if (!strcmp(key, "count")) {
		if (v < 1 || v > 100000)
			goto range;
		spec->count = (int)v;
	} else { /* every: the keys were checked above */
		if (v < 1)
			goto range;
		spec->every = v;
	}
	return 0;
range:
	snprintf(err, errlen, "%s=%s is out of range", key, val);
	return -1;
}

int sdc_inject_parse(const char *s, struct sdc_inject_spec *spec, char *err, size_t errlen)
{
	memset(spec, 0, sizeof(*spec));
	spec->device = -1;
	spec->iter = -1;
	spec->rank = -1;
	spec->row = -1;
	spec->col = -1;
	spec->bit = -1;
	spec->count = 1;
	spec->every = 1;
	sdc_strlcpy(spec->text, s, sizeof(spec->text));

	char buf[512];
	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "spec too long");
		return -1;
	}
	sdc_strlcpy(buf, s, sizeof(buf));
	char *probe = buf, *target = strchr(buf, ':');
	if (!target || target == buf) {
		snprintf(err, errlen, "'%s': expected PROBE[/VARIANT]:TARGET[:KEY=VALUE,...]", s);
		return -1;
	}
	*target++ = '\0';
	char *keys = strchr(target, ':');
	if (keys)
		*keys++ = '\0';
	char *variant = strchr(probe, '/');
	if (variant)
		*variant++ = '\0';
	if (!*target || strlen(target) >= sizeof(spec->target) || strlen(probe) >= sizeof(spec->probe) ||
	    (variant && (!*variant || strlen(variant) >= sizeof(spec->variant)))) {
		snprintf(err, errlen, "'%s': expected PROBE[/VARIANT]:TARGET[:KEY=VALUE,...]", s);
		return -1;
	}
	sdc_strlcpy(spec->probe, probe, sizeof(spec->probe));
	sdc_strlcpy(spec->variant, variant ? variant : "", sizeof(spec->variant));
	sdc_strlcpy(spec->target, target, sizeof(spec->target));

	for (char *tok = keys ? strtok(keys, ",") : NULL; tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			snprintf(err, errlen, "'%s': expected KEY=VALUE", tok);
			return -1;
		}
		*eq = '\0';
		if (parse_key(spec, tok, eq + 1, err, errlen))
			return -1;
	}
	return 0;
}

int64_t sdc_fault_draw(const struct sdc_fault *f, unsigned which, int64_t bound)
{
	return (int64_t)sdc_rng_below(&f->rng, f->base + which, (uint64_t)bound);
}
