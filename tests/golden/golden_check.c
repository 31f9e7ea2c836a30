/*
 * The golden cross-check: recomputes every minitrain trajectory in the golden files given on the
 * command line with the exact kernels this program was linked with, and compares every loss,
 * every per-step hash and every checkpoint SHA-256. tests/meson.build links it against the exact
 * sources built at the project's flags, at -O0 and at -O3 -march=native, and tests/cli/golden_clang.sh
 * builds it with clang: every build must reproduce the shipped goldens bit for bit. It parses the
 * files and hashes the tensors itself (not through probe/golden_file.c or the probe), so it checks them too.
 *
 * usage: golden_check [--kernel tiled|plain] FILE...
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "probes/minitrain/model.h"

static int opt_int(json_t *opts, const char *name)
{
	const char *s = json_string_value(json_object_get(opts, name));
	if (!s) {
		fprintf(stderr, "golden_check: key has no option %s\n", name);
		exit(2);
	}
	return atoi(s);
}

static uint64_t hash_list(struct sdc_mt_tensor *t, int n)
{
	uint64_t h[64];
	for (int i = 0; i < n; i++)
		h[i] = XXH3_64bits(t[i].data, sdc_mt_numel(&t[i]) * sizeof(float));
	return XXH3_64bits(h, sizeof(uint64_t) * (size_t)n);
}

static void sha_hex(const void *p, size_t n, char out[65])
{
	unsigned char d[32];
	unsigned len = 0;
	EVP_Digest(p, n, d, &len, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

struct grads_ctx {
	struct sdc_mt_tensor *g;
	int n;
	uint64_t h;
};

static void on_grads(void *ctx, int step)
{
	(void)step;
	struct grads_ctx *c = ctx;
	c->h = hash_list(c->g, c->n);
}

static int check_entry(json_t *e, const char *file, int idx, sdc_xgemm_fn gemm, const char *kname)
{
	json_t *key = json_object_get(e, "key"), *opts = json_object_get(key, "options");
	json_t *t = json_object_get(json_object_get(e, "result"), "trajectory");
	const char *probe = json_string_value(json_object_get(key, "probe"));
	const char *variant = json_string_value(json_object_get(key, "variant"));
	if (!probe || strcmp(probe, "minitrain") || !t)
		return 0;
	if (strstr(variant, "-dp")) {
		/* several ranks' shards: reproduced by the mpi suite under mpirun, not here */
		printf("%s entries[%d] minitrain/%s: data parallel, checked by the mpi suite\n", file, idx, variant);
		return 0;
	}
	struct sdc_mt_cfg c = { .seed = strtoull(json_string_value(json_object_get(key, "seed")), NULL, 10) };
	if (!strcmp(variant, "dlrm")) {
		c.kind = SDC_MT_DLRM, c.batch = opt_int(opts, "dlrm_batch"), c.dense = 16, c.bottom = 64, c.top = 64;
		c.emb_dim = opt_int(opts, "dlrm_dim"), c.tables = opt_int(opts, "dlrm_tables");
		c.rows = opt_int(opts, "dlrm_rows"), c.pooling = opt_int(opts, "dlrm_pooling");
	} else {
		c.kind = SDC_MT_XFMR, c.batch = opt_int(opts, "xfmr_batch"), c.seq = opt_int(opts, "xfmr_seq");
		c.dmodel = opt_int(opts, "xfmr_dim"), c.heads = opt_int(opts, "xfmr_heads"), c.dff = opt_int(opts, "xfmr_ff");
	}
	char err[256];
	struct sdc_mt_model *m = sdc_mt_create(&c, gemm, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "golden_check: %s: %s\n", variant, err);
		return 1;
	}
	struct sdc_mt_tensor *traj;
	const int nt = sdc_mt_tensors(m, &traj);
	struct grads_ctx gc;
	gc.n = sdc_mt_grads(m, &gc.g);
	const struct sdc_mt_hooks hooks = { .ctx = &gc, .gradients = on_grads };
	const int steps = (int)json_integer_value(json_object_get(t, "steps"));
	json_t *loss = json_object_get(t, "loss"), *entry = json_object_get(t, "entry"), *grads = json_object_get(t, "grads");
	json_t *checks = json_object_get(t, "checkpoints");
	int compared = 0, bad = 0;
	size_t ck = 0;
	char hex[65];
	for (int s = 0; s <= steps && !bad; s++) {
		json_t *cp = json_array_get(checks, ck);
		if (cp && json_integer_value(json_object_get(cp, "step")) == s) {
			json_t *ts = json_object_get(cp, "tensors");
			for (int i = 0; i < nt && !bad; i++) {
				sha_hex(traj[i].data, sdc_mt_numel(&traj[i]) * sizeof(float), hex);
				json_t *pair = json_array_get(ts, (size_t)i);
				compared++;
				if (strcmp(json_string_value(json_array_get(pair, 0)), traj[i].name) ||
				    strcmp(json_string_value(json_array_get(pair, 1)), hex)) {
					fprintf(stderr, "%s: %s: checkpoint at step %d: %s sha256 %s differs from the golden\n",
						file, variant, s, traj[i].name, hex);
					bad = 1;
				}
			}
			ck++;
		}
		if (s == steps)
			break;
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)hash_list(traj, nt));
		compared++;
		if (strcmp(hex, json_string_value(json_array_get(entry, (size_t)s)))) {
			fprintf(stderr, "%s: %s: state entering step %d hashes to %s, golden %s\n", file, variant, s, hex,
				json_string_value(json_array_get(entry, (size_t)s)));
			bad = 1;
			break;
		}
		const float l = sdc_mt_step(m, s, &hooks);
		uint32_t u;
		memcpy(&u, &l, 4);
		char lh[9], gh[17];
		snprintf(lh, sizeof(lh), "%08x", u);
		snprintf(gh, sizeof(gh), "%016llx", (unsigned long long)gc.h);
		compared += 2;
		if (strcmp(lh, json_string_value(json_array_get(loss, (size_t)s))) ||
		    strcmp(gh, json_string_value(json_array_get(grads, (size_t)s)))) {
			fprintf(stderr, "%s: %s: step %d: loss %s / gradients %s, golden %s / %s\n", file, variant, s, lh, gh,
				json_string_value(json_array_get(loss, (size_t)s)),
				json_string_value(json_array_get(grads, (size_t)s)));
			bad = 1;
		}
	}
	if (ck != json_array_size(checks) && !bad) {
		fprintf(stderr, "%s: %s: %zu of %zu checkpoints reached\n", file, variant, ck, json_array_size(checks));
		bad = 1;
	}
	printf("%s entries[%d] minitrain/%s, kernel %s: %s (%d digests compared over %d steps)\n", file, idx, variant,
	       kname, bad ? "DIFFERS" : "reproduced", compared, steps);
	sdc_mt_free(m);
	return bad;
}

int main(int argc, char **argv)
{
	sdc_xgemm_fn gemm = sdc_xgemm;
	const char *kname = sdc_xgemm_kernel();
	int first = 1, bad = 0, files = 0;
	if (argc > 2 && !strcmp(argv[1], "--kernel")) {
		if (!strcmp(argv[2], "plain"))
			gemm = sdc_xgemm_plain, kname = "plain";
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		json_error_t je;
		json_t *root = json_load_file(argv[i], 0, &je);
		json_t *entries = json_object_get(root, "entries");
		if (!json_is_array(entries)) {
			fprintf(stderr, "golden_check: %s: %s\n", argv[i], root ? "no entries" : je.text);
			return 2;
		}
		for (size_t k = 0; k < json_array_size(entries); k++)
			bad |= check_entry(json_array_get(entries, k), argv[i], (int)k, gemm, kname);
		json_decref(root);
		files++;
	}
	if (!files) {
		fprintf(stderr, "usage: golden_check [--kernel tiled|plain] FILE...\n");
		return 2;
	}
	return bad;
}
