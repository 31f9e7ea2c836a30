/*
 * The GPU module loader (device/gpu_loader.h). The module is looked for, in order: $SDCSCAN_GPU_MODULE; next to
 * the running binary (a build tree, or a bundle); the installed module directory; the last two
 * only where the NVIDIA driver's libcuda.so.1 is found, or --gpus asked for a GPU. A module that
 * cannot be loaded (no CUDA libraries), has another ABI, or finds no usable GPU (no driver, a
 * driver too old for its runtime, no device) leaves its reason in the run's GPU note. Each
 * family's table (kernels/gpu_module.h) is checked on its own, when its probe asks for it with the
 * version it was built with: one not built into the module, or of another version, turns off that
 * family's lanes alone (sdc_gpu_family_why says why).
 */
#include "device/gpu_loader.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/message.h"
#include "device/nvml.h"
#include "sdc_config.h"

#define MODULE_FILE "sdcscan-gpu.so"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool gpus_asked; /* --gpus named GPUs: set before the first load */
static const struct sdc_gpu_module *module;
static char module_path[PATH_MAX];
static char load_note[512];

#define FAMILY_NAME(name) #name,
static const char *const family_names[] = { SDC_GPU_FAMILIES(FAMILY_NAME) };
#define NFAMILIES (sizeof(family_names) / sizeof(family_names[0]))
/* Why a family was refused, written once, at its first refusal (under family_lock). */
static char family_notes[NFAMILIES][PATH_MAX + 200];
static bool family_noted[NFAMILIES];
static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;

/* The loaded module's table of family i (SDC_GPU_FAMILIES' order). */
static const void *family_table(size_t i)
{
	size_t k = 0;
#define FAMILY_TABLE(name)                                                                                             \
	if (k++ == i)                                                                                                  \
		return module->name;
	SDC_GPU_FAMILIES(FAMILY_TABLE)
#undef FAMILY_TABLE
	return NULL;
}

static size_t family_index(const char *name)
{
	size_t i = 0;
	while (i < NFAMILIES && strcmp(family_names[i], name))
		i++;
	return i;
}

const void *sdc_gpu_family(const char *name, int want)
{
	const size_t i = family_index(name);
	const void *t = sdc_gpu_ops() && i < NFAMILIES ? family_table(i) : NULL;
	/* every table begins with its version (kernels/gpu_module.h): a pointer to a struct, converted,
	 * points to its first member (C11 6.7.2.1p15) */
	const int have = t ? *(const int *)t : 0;
	if (t && have == want)
		return t;
	if (!module || i == NFAMILIES)
		return NULL;
	pthread_mutex_lock(&family_lock); /* wait-ok: held only to write a note */
	if (!family_noted[i]) {
		if (!t)
			snprintf(family_notes[i], sizeof(family_notes[i]), "the GPU module %s was built without %s's GPU "
				 "operations", module_path, name);
		else
			snprintf(family_notes[i], sizeof(family_notes[i]), "the GPU module %s has %s's GPU operations at "
				 "version %d, this sdcscan needs version %d: install matching versions", module_path, name,
				 have, want);
		__atomic_store_n(&family_noted[i], true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&family_lock);
	return NULL;
}

static const struct sdc_gpu_module *try_load(const char *path, char *why, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, len, "GPU module %s cannot be loaded: %s", path, e ? e : "unknown error");
		return NULL;
	}
	sdc_gpu_module_fn fn = (sdc_gpu_module_fn)dlsym(h, SDC_GPU_MODULE_SYMBOL);
	const struct sdc_gpu_module *m = fn ? fn() : NULL;
	if (!m) {
		snprintf(why, len, "%s is not an sdcscan GPU module (no %s)", path, SDC_GPU_MODULE_SYMBOL);
		dlclose(h);
		return NULL;
	}
	if (m->abi != SDC_GPU_MODULE_ABI) {
		snprintf(why, len, "GPU module %s has interface %d, this sdcscan needs %d: install matching versions",
			 path, m->abi, SDC_GPU_MODULE_ABI);
		dlclose(h);
		return NULL;
	}
	return m; /* kept loaded for the life of the process */
}

/*
 * Whether the NVIDIA driver's library is here. Without it no GPU can be tested, and loading the
 * module (cuBLASLt and cuBLAS: 0.4 s and 200 MB) would only say so: a host without the driver runs
 * every command without them. dlopen follows the loader's own search (LD_LIBRARY_PATH, the cache);
 * the library stays loaded for the module's use.
 */
static bool driver_present(char *why, size_t len)
{
	if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL))
		return true;
	const char *e = dlerror();
	snprintf(why, len, "no NVIDIA driver here (libcuda.so.1: %s)", e ? e : "not found");
	return false;
}

static void load(void)
{
	const char *env = getenv("SDCSCAN_GPU_MODULE");
	if (env && *env) {
		sdc_strlcpy(module_path, env, sizeof(module_path));
		module = try_load(env, load_note, sizeof(load_note));
		return;
	}
	/* (--gpus asked for a GPU: the module is loaded anyway, to say in its own words why none) */
	if (HAVE_CUDA && !gpus_asked && !driver_present(load_note, sizeof(load_note)))
		return;
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char first_why[512] = "";
	if (n > 0) {
		exe[n] = '\0';
		snprintf(cand, sizeof(cand), "%s/%s", dirname(exe), MODULE_FILE);
		if (access(cand, F_OK) == 0) {
			sdc_strlcpy(module_path, cand, sizeof(module_path));
			if ((module = try_load(cand, load_note, sizeof(load_note))))
				return;
			sdc_strlcpy(first_why, load_note, sizeof(first_why));
		}
	}
	snprintf(cand, sizeof(cand), "%s/%s", SDC_GPU_MODULE_DIR, MODULE_FILE);
	if (access(cand, F_OK) == 0) {
		sdc_strlcpy(module_path, cand, sizeof(module_path));
		module = try_load(cand, load_note, sizeof(load_note));
		return;
	}
	if (first_why[0])
		sdc_strlcpy(load_note, first_why, sizeof(load_note));
	else if (HAVE_CUDA)
		snprintf(load_note, sizeof(load_note), "the GPU module (%s) is not installed next to sdcscan or in %s",
			 MODULE_FILE, SDC_GPU_MODULE_DIR);
	else
		snprintf(load_note, sizeof(load_note), "this sdcscan was built without CUDA (no GPU module)");
}

const struct sdc_gpu_module *sdc_gpu_ops(void)
{
	pthread_once(&once, load);
	return module;
}

const char *sdc_gpu_family_why(const char *family)
{
	if (!sdc_gpu_ops())
		return load_note;
	const size_t i = family_index(family);
	if (i == NFAMILIES)
		return "no such GPU family";
	return __atomic_load_n(&family_noted[i], __ATOMIC_ACQUIRE) ? family_notes[i] : "";
}

const char *sdc_gpu_module_path(void)
{
	pthread_once(&once, load);
	return module ? module_path : NULL;
}

static void fill_device(struct sdc_device *d, int index, const struct sdc_gpu_props *p, const struct sdc_gpu_module *m)
{
	memset(d, 0, sizeof(*d));
	d->kind = SDC_DEVICE_GPU;
	snprintf(d->id, sizeof(d->id), "gpu%d", index);
	sdc_strlcpy(d->model, p->name, sizeof(d->model));
	struct sdc_gpu_identity *g = &d->gpu;
	g->index = index;
	sdc_strlcpy(g->uuid, p->uuid, sizeof(g->uuid));
	sdc_strlcpy(g->pci_bus_id, p->pci_bus_id, sizeof(g->pci_bus_id));
	g->cc_major = p->cc_major;
	g->cc_minor = p->cc_minor;
	g->sm_count = p->sm_count;
	g->memory_bytes = p->memory_bytes;
	/* The driver's own version from NVML when it answers, else the CUDA version the driver supports. */
	if (sdc_nvml_driver_version(g->driver, sizeof(g->driver)))
		snprintf(g->driver, sizeof(g->driver), "CUDA %d.%d", p->driver_version / 1000,
			 p->driver_version % 1000 / 10);
	sdc_strlcpy(g->runtime, m->cuda_runtime, sizeof(g->runtime));
}

int sdc_gpu_discover(const struct sdc_gpu_select *sel, struct sdc_device **devs, int *n, char *note,
		     size_t notelen, char *err, size_t errlen)
{
	if (sel && sel->listed)
		gpus_asked = true; /* (discovery runs on the main thread, before any other asks for the module) */
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	if (!m) {
		if (sel && sel->listed) {
			snprintf(err, errlen, "--gpus: no GPU can be tested: %s", load_note);
			return -1;
		}
		snprintf(note, notelen, "%s", load_note);
		return 0;
	}
	char why[256] = "";
	const int count = m->count(why, sizeof(why));
	if (count <= 0) {
		if (sel && sel->listed) {
			snprintf(err, errlen, "--gpus: no GPU can be tested: %s", why);
			return -1;
		}
		snprintf(note, notelen, "%s", why[0] ? why : "no GPU found");
		return 0;
	}
	if (sel && sel->listed) {
		for (int i = count; i < 64; i++) {
			if (sel->indices >> i & 1) {
				snprintf(err, errlen, "--gpus: GPU %d is not there (this host has %d GPU%s: 0-%d)", i,
					 count, count == 1 ? "" : "s", count - 1);
				return -1;
			}
		}
	}
	for (int i = 0; i < count; i++) {
		if (sel && sel->listed && !(sel->indices >> i & 1))
			continue;
		struct sdc_gpu_props p;
		char perr[256];
		if (m->props(i, &p, perr, sizeof(perr))) {
			snprintf(err, errlen, "GPU %d: %s", i, perr);
			return -1;
		}
		struct sdc_device *grown = realloc(*devs, sizeof(**devs) * (size_t)(*n + 1));
		if (!grown) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		*devs = grown;
		fill_device(&grown[(*n)++], i, &p, m);
	}
	return 0;
}

int sdc_gpu_bind(const struct sdc_device *dev, char *err, size_t errlen)
{
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	if (!m) {
		snprintf(err, errlen, "%s: %s", dev->id, load_note);
		return -1;
	}
	char why[256];
	if (m->bind(dev->gpu.index, why, sizeof(why))) {
		snprintf(err, errlen, "%s (%s): %s", dev->id, dev->gpu.pci_bus_id, why);
		return -1;
	}
	return 0;
}

struct sdc_gpu_comm *sdc_gpu_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
				       const char *algo, const char *proto, int64_t n, double timeout, char *err,
				       size_t errlen)
{
	static pthread_mutex_t path_lock = PTHREAD_MUTEX_INITIALIZER;
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	if (!m || !m->nccl_init) {
		snprintf(err, errlen, "%s", m ? "this GPU module was built without NCCL" : load_note);
		return NULL;
	}
	const bool forced = (algo && *algo) || (proto && *proto);
	/* wait-ok: held across NCCL's init, only in a burn's process (its lanes), which the run kills */
	pthread_mutex_lock(&path_lock);
	if (forced && (sdc_env_put("NCCL_ALGO", algo && *algo ? algo : sdc_env_initial("NCCL_ALGO")) ||
		       sdc_env_put("NCCL_PROTO", proto && *proto ? proto : sdc_env_initial("NCCL_PROTO")))) {
		sdc_env_put("NCCL_ALGO", sdc_env_initial("NCCL_ALGO"));
		pthread_mutex_unlock(&path_lock);
		snprintf(err, errlen, "the path %s/%s cannot be set: NCCL_ALGO or NCCL_PROTO was not sdcscan's to change "
				      "(a value of over %d characters in the environment)", algo ? algo : "", proto ? proto : "",
			 SDC_ENV_VALUE_MAX);
		return NULL;
	}
	struct sdc_gpu_comm *c = m->nccl_init(id, nranks, first_rank, nmem, devices, algo, proto, n, timeout, err, errlen);
	if (forced) {
		sdc_env_put("NCCL_ALGO", sdc_env_initial("NCCL_ALGO"));
		sdc_env_put("NCCL_PROTO", sdc_env_initial("NCCL_PROTO"));
	}
	pthread_mutex_unlock(&path_lock);
	return c;
}
