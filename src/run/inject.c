/* --inject specs: parsed, planned, and due to a worker (run/inject.h). */
#include "run/inject.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/parse.h"

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
	if (!strcmp(key, "device") && (!strncmp(val, "gpu", 3) || !strncmp(val, "cpu", 3))) {
		/* gpuN names a GPU, cpuN (like a bare N) a logical CPU */
		if (!sdc_parse_i64(val + 3, &v) || v < 0 || v >= 1 << 20) {
			snprintf(err, errlen, "device=%s: expected a logical CPU (3 or cpu3) or a GPU (gpu0)", val);
			return -1;
		}
		spec->device = (int)v;
		spec->device_kind = val[0] == 'g' ? SDC_DEVICE_GPU : SDC_DEVICE_CPU;
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
	if (!strcmp(key, "bit") && !strcmp(val, "grow")) {
		spec->bit = SDC_FAULT_BIT_GROW;
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

bool sdc_inject_spec_device(const struct sdc_inject_spec *s, const struct sdc_device *dev)
{
	if (s->device < 0)
		return true;
	if (dev->kind != s->device_kind)
		return false;
	return s->device == (dev->kind == SDC_DEVICE_GPU ? dev->gpu.index : dev->cpu.logical);
}

/* ---- planning ---- */

struct planned_fault {
	int spec;
	int worker;
	uint64_t iter;
};

struct sdc_fault_plan {
	const struct sdc_inject_spec *specs;
	uint64_t seed;
	struct planned_fault *items;
	int n;
	int *rate_specs; /* specs with a rate, matching this probe and variant */
	int nrates;
};

static bool spec_matches(const struct sdc_inject_spec *s, const char *probe, const char *variant)
{
	return !strcmp(s->probe, probe) && (!s->variant[0] || !strcmp(s->variant, variant));
}

/* The RNG lane of a device's faults: the logical CPU (below CPU_SETSIZE), or 0x8000 + a GPU's index. */
static unsigned fault_lane(const struct sdc_device *dev)
{
	return dev->kind == SDC_DEVICE_GPU ? 0x8000u + (unsigned)dev->gpu.index : (unsigned)dev->cpu.logical;
}

struct sdc_fault_plan *sdc_fault_plan_new(const struct sdc_inject_spec *specs, int nspecs, const char *probe,
					  const char *variant, uint64_t seed, const struct sdc_device *const *devs,
					  int nworkers)
{
	struct sdc_fault_plan *fp = calloc(1, sizeof(*fp));
	if (!fp)
		return NULL;
	fp->specs = specs;
	fp->seed = seed;
	int total = 0;
	for (int i = 0; i < nspecs; i++)
		if (spec_matches(&specs[i], probe, variant))
			total += specs[i].rate > 0 ? 0 : specs[i].count;
	fp->items = calloc((size_t)total + 1, sizeof(*fp->items));
	fp->rate_specs = calloc((size_t)nspecs + 1, sizeof(int));
	if (!fp->items || !fp->rate_specs) {
		sdc_fault_plan_free(fp);
		return NULL;
	}
	for (int i = 0; i < nspecs; i++) {
		const struct sdc_inject_spec *s = &specs[i];
		if (!spec_matches(s, probe, variant))
			continue;
		if (s->rate > 0) {
			fp->rate_specs[fp->nrates++] = i;
			continue;
		}
		/*
		 * Unspecified device and first iteration are drawn from the seed, once per spec: its
		 * count faults land on that device at first, first + every, ... and the run replays.
		 */
		struct sdc_rng rng = sdc_rng_make(seed, SDC_RNG_PROBE_INJECT, (unsigned)i, SDC_RNG_SHARED, 0);
		int worker = -1;
		if (s->device >= 0) {
			for (int w = 0; w < nworkers && worker < 0; w++)
				if (sdc_inject_spec_device(s, devs[w]))
					worker = w;
		} else {
			worker = (int)sdc_rng_below(&rng, 0, (uint64_t)nworkers);
		}
		const uint64_t first = s->iter >= 0 ? (uint64_t)s->iter : sdc_rng_below(&rng, 1, 8);
		for (int j = 0; j < s->count; j++) {
			struct planned_fault *pf = &fp->items[fp->n++];
			pf->spec = i;
			pf->worker = worker;
			pf->iter = first + (uint64_t)j * (uint64_t)s->every;
		}
	}
	return fp;
}

void sdc_fault_plan_free(struct sdc_fault_plan *fp)
{
	if (!fp)
		return;
	free(fp->items);
	free(fp->rate_specs);
	free(fp);
}

static void make_fault(const struct sdc_fault_plan *fp, int spec, const struct sdc_device *dev, uint64_t iter,
		       struct sdc_fault *f)
{
	const struct sdc_inject_spec *s = &fp->specs[spec];
	f->spec = spec;
	f->row = s->row;
	f->col = s->col;
	f->bit = s->bit;
	f->rng = sdc_rng_make(fp->seed, SDC_RNG_PROBE_INJECT, (unsigned)spec, fault_lane(dev), 1);
	f->base = iter * 16;
}

int sdc_fault_plan_due(const struct sdc_fault_plan *fp, int worker, const struct sdc_device *dev, int rank,
		       const char *target, uint64_t iter, struct sdc_fault *out, int max)
{
	int n = 0;
	if (!fp || (!fp->n && !fp->nrates))
		return 0;
	for (int i = 0; i < fp->n && n < max; i++) {
		const struct planned_fault *pf = &fp->items[i];
		const struct sdc_inject_spec *s = &fp->specs[pf->spec];
		if (s->rank >= 0 && s->rank != rank)
			continue;
		if (pf->worker == worker && pf->iter == iter && !strcmp(s->target, target))
			make_fault(fp, pf->spec, dev, iter, &out[n++]);
	}
	for (int i = 0; i < fp->nrates && n < max; i++) {
		const struct sdc_inject_spec *s = &fp->specs[fp->rate_specs[i]];
		if (strcmp(s->target, target) || !sdc_inject_spec_device(s, dev) || (s->rank >= 0 && s->rank != rank))
			continue;
		struct sdc_rng r = sdc_rng_make(fp->seed, SDC_RNG_PROBE_INJECT, (unsigned)fp->rate_specs[i],
						fault_lane(dev), 2);
		if (sdc_rng_uniform(&r, iter) < s->rate)
			make_fault(fp, fp->rate_specs[i], dev, iter, &out[n++]);
	}
	return n;
}

int sdc_fault_bit(const struct sdc_fault *f, uint64_t value, int bits, bool is_float)
{
	if (f->bit >= 0)
		return f->bit;
	if (f->bit != SDC_FAULT_BIT_GROW)
		return (int)sdc_fault_draw(f, 2, bits);
	if (!is_float || (bits != 32 && bits != 64))
		return bits - 2; /* an integer: the bit below the sign */
	const int hi = bits == 32 ? 30 : 62, lo = bits == 32 ? 23 : 52;
	for (int b = hi; b >= lo; b--)
		if (!(value >> b & 1))
			return b;
	return hi; /* INF or NaN already: any exponent bit */
}
