/*
 * Golden results: what a probe computes on a known-good host, recorded once and verified
 * anywhere (sdcscan golden record|verify|show). A golden file is JSON:
 *
 *   { "format": "sdcscan-golden", "version": 1,
 *     "recorded": { "tool", "host", "cpu", "date" },
 *     "entries": [ { "key": {...}, "result": {...} }, ... ],
 *     "sha256": hex of the file's canonical form without this member }
 *
 * A key names what was computed: probe, variant, numerics class, seed, every option that
 * changes the result and, for the fast class, the CPU model and BLAS library. A result is
 * either the work digest of the first iterations (any probe) or a trajectory (minitrain):
 * the loss bits at every step, per-step XXH3 hashes of the state entering each step and of
 * the gradients, and the SHA-256 of every parameter and optimizer-state tensor every N steps.
 * The goldens of the default profiles are compiled in (the files under goldens/).
 */
#ifndef SDC_GOLDEN_H
#define SDC_GOLDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "probe/probe.h"

#define SDC_GOLDEN_FORMAT "sdcscan-golden"
#define SDC_GOLDEN_VERSION 1

struct sdc_golden_traj {
	int steps, every;
	uint32_t *loss;    /* [steps] fp32 bits */
	uint64_t *entry;   /* [steps] state entering each step */
	uint64_t *grads;   /* [steps] gradients before each update (data parallel: rank 0's) */
	int nranks;          /* data parallel: the world size the next field covers, else 0 */
	uint64_t *rank_grads; /* [nranks][steps]: each rank's own gradients, before the all-reduce */
	int ncheck, ntensors;
	int *check_step;   /* [ncheck]: a checkpoint is the state entering that step (steps: the end) */
	char (*names)[24]; /* [ntensors] */
	uint8_t *sha;      /* [ncheck][ntensors][32] */
};

struct sdc_golden_entry {
	void *key; /* json_t, owned by the file */
	char probe[24], variant[24];
	char work_digest[65];
	int iterations;
	bool has_traj;
	struct sdc_golden_traj traj;
};

struct sdc_golden {
	void *root; /* json_t */
	char origin[256];
	struct sdc_golden_entry *entries;
	int n;
};

/* Parses and checks a golden file's text (format, version, sha256, every field). */
int sdc_golden_parse(const char *text, size_t len, const char *origin, struct sdc_golden *g, char *err,
		     size_t errlen);
int sdc_golden_load(const char *path, struct sdc_golden *g, char *err, size_t errlen);
void sdc_golden_free(struct sdc_golden *g);

/* The key of a probe's variant as run with opts and the run's seed (json_t *, new reference); a
 * fast-class key names the device model and the library it ran on. */
void *sdc_golden_key(const struct sdc_probe *p, const void *opts, const struct sdc_variant *variant, uint64_t seed,
		     const char *device_model);
/* The numerics class of a variant, as keys name it: "exact" or "fast". */
const char *sdc_golden_class(const struct sdc_variant *v);

/*
 * The golden for this key: from the file given to `golden verify` if any, else the built-in
 * ones. NULL when none matches; *origin says where one came from.
 */
const struct sdc_golden_entry *sdc_golden_find(const void *key, const char **origin);
/* The same for a probe's variant as run with opts and seed on device_model (sdc_golden_key's key). */
const struct sdc_golden_entry *sdc_golden_find_for(const struct sdc_probe *p, const void *opts,
						   const struct sdc_variant *variant, uint64_t seed,
						   const char *device_model, const char **origin);
/* Makes g the file sdc_golden_find looks in first (NULL: none). */
void sdc_golden_use(const struct sdc_golden *g);
/* The golden sdc_golden_use put in place, as the text it parses from (malloc'd; NULL: none), and
 * its origin: what a burn's process is handed (runner/burn.h), since it parses it again. */
char *sdc_golden_in_use(char *origin, size_t len);
/* Records a probe's trajectory here (under mpirun: every rank takes part) into *out, as a golden
 * file would hold it (selftest uses it for options no shipped golden covers). */
struct sdc_run;
int sdc_golden_record_here(const struct sdc_probe *p, const void *opts, const struct sdc_variant *variant,
			   uint64_t seed, const struct sdc_run *run, struct sdc_golden *out, char *err, size_t errlen);
/* A golden file's JSON (json_t *) around entries (a json_t array, stolen), recorded by this run's host. */
void *sdc_golden_file_json(void *entries, const struct sdc_run *run);

/* A trajectory as a golden file holds it, from its parts (the recorder's side: a probe's golden_record). */
struct sdc_facts;
struct sdc_facts *sdc_golden_traj_facts(const struct sdc_golden_traj *t);

#endif
