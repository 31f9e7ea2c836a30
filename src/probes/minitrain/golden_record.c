/* The golden recorder of minitrain (sdcscan golden record): one variant's trajectory on the calling thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "probes/minitrain/minitrain.h"
#include "base/message.h"

struct recorder {
	struct sdc_mt_model *m;
	struct sdc_mt_tensor *grads;
	int ngrads;
	uint64_t grad_hash;
	size_t total;
	float *local, *all;
	uint64_t *hashes; /* [world]: one step's gradient hash of every rank */
	bool failed;
};

static void record_reduce_hook(void *ctx, int step)
{
	(void)step;
	struct recorder *r = ctx;
	if (!r->failed && sdc_mt_dp_reduce(r->grads, r->ngrads, r->total, r->local, r->all))
		r->failed = true;
}

static void record_grads_hook(void *ctx, int step)
{
	(void)step;
	struct recorder *r = ctx;
	r->grad_hash = sdc_mt_tensors_hash(r->grads, r->ngrads, NULL);
}

struct sdc_facts *sdc_mt_golden_record(const void *opts, const struct sdc_variant *variant, uint64_t seed, char *err,
				       size_t len)
{
	const struct minitrain_opts *o = opts;
	struct sdc_mt_cfg cfg;
	sdc_mt_cfg_from_opts(o, variant, seed, &cfg);
	if (sdc_mt_check_cfg(&cfg, err, len))
		return NULL;
	/* The plain scalar kernel: the recording is made by the reference implementation. */
	struct sdc_mt_model *m = sdc_mt_create(&cfg, sdc_xgemm_plain, err, len);
	if (!m)
		return NULL;
	struct sdc_golden_traj t = { .steps = (int)o->steps, .every = (int)o->checkpoint };
	struct sdc_mt_tensor *traj;
	struct recorder rec = { .m = m };
	const int ntraj = sdc_mt_tensors(m, &traj);
	rec.ngrads = sdc_mt_grads(m, &rec.grads);
	t.ntensors = ntraj;
	t.ncheck = t.steps / t.every + (t.steps % t.every != 0);
	t.loss = calloc((size_t)t.steps, 4);
	t.entry = calloc((size_t)t.steps, 8);
	t.grads = calloc((size_t)t.steps, 8);
	t.check_step = calloc((size_t)t.ncheck, sizeof(int));
	t.names = calloc((size_t)ntraj, sizeof(*t.names));
	t.sha = calloc((size_t)t.ncheck * ntraj, SDC_SHA256_LEN);
	struct sdc_sha256 sha = { 0 };
	struct sdc_facts *out = NULL;
	if (!t.loss || !t.entry || !t.grads || !t.check_step || !t.names || !t.sha || sdc_sha256_init(&sha)) {
		snprintf(err, len, "out of memory");
		goto done;
	}
	for (int i = 0; i < ntraj; i++)
		sdc_strlcpy(t.names[i], traj[i].name, sizeof(t.names[i]));
	/* Data parallel (recorded under mpirun, every rank taking part): gradients all-reduced as in a run. */
	const bool dp = cfg.nshards > 1;
	if (dp) {
		for (int i = 0; i < rec.ngrads; i++)
			rec.total += sdc_mt_numel(&rec.grads[i]);
		rec.local = malloc(sizeof(float) * rec.total);
		rec.all = malloc(sizeof(float) * rec.total * (size_t)sdc_mpi.size);
		t.nranks = sdc_mpi.size;
		t.rank_grads = calloc((size_t)t.nranks * t.steps, sizeof(uint64_t));
		rec.hashes = calloc((size_t)t.nranks, sizeof(uint64_t));
		if (!rec.local || !rec.all || !t.rank_grads || !rec.hashes) {
			snprintf(err, len, "out of memory");
			goto done;
		}
	}
	const struct sdc_mt_hooks hooks = { .ctx = &rec, .gradients = record_grads_hook,
					    .reduce = dp ? record_reduce_hook : NULL };
	int c = 0;
	for (int s = 0; s <= t.steps; s++) {
		if (s && (s % t.every == 0 || s == t.steps)) {
			t.check_step[c] = s;
			sdc_mt_tensors_sha(&sha, traj, ntraj, t.sha + (size_t)c * ntraj * SDC_SHA256_LEN);
			c++;
		}
		if (s == t.steps)
			break;
		t.entry[s] = sdc_mt_tensors_hash(traj, ntraj, NULL);
		const float loss = sdc_mt_step(m, s, &hooks);
		memcpy(&t.loss[s], &loss, 4);
		t.grads[s] = rec.grad_hash;
		/* every rank's own gradients of this step, before the all-reduce */
		if (dp && !rec.failed && sdc_mpi_allgather(&rec.grad_hash, 8, rec.hashes, sdc_mpi.timeout))
			rec.failed = true;
		for (int r = 0; dp && r < t.nranks; r++)
			t.rank_grads[(size_t)r * t.steps + s] = rec.hashes[r];
	}
	if (rec.failed) {
		snprintf(err, len, "a rank did not take part in a gradient all-reduce within %.0f s", sdc_mpi.timeout);
		goto done;
	}
	out = sdc_golden_traj_facts(&t);
done:
	sdc_sha256_release(&sha);
	free(t.loss), free(t.entry), free(t.grads), free(t.rank_grads), free(t.check_step), free(t.names), free(t.sha);
	free(rec.local), free(rec.all), free(rec.hashes);
	sdc_mt_free(m);
	return out;
}

