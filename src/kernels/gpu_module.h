/*
 * The GPU module's interface: the CUDA code is built into a shared module that sdcscan loads at
 * run time (device/gpu_loader.c, dlopen), so the one binary starts on hosts without the CUDA libraries or driver
 * and says why no GPU can be tested there. The module exports one symbol, sdc_gpu_module, returning
 * the main table below; a module whose abi differs is refused.
 *
 * The main table is what every GPU lane shares: the devices (count, props, bind) here, and inside the
 * module the streams, workspaces, deadlines and sticky errors of kernels/cuda/cuda_util.h. Each
 * probe with a GPU lane is a family: its own table of operations, declared in its folder (as
 * probes/gemm/gpu_ops.h) with its own version, and its CUDA code beside it. The main table holds one
 * pointer a family, NULL where the module was built without it; sdcscan checks each family's
 * version on its own (device/gpu_loader.c), so a change to one family's table bumps only that family's version
 * and a module of another version turns off that family's lanes alone, saying why.
 *
 * Every call takes the calling thread's current GPU (bind), reports failure as a non-zero return
 * with err naming what failed (a CUDA or library error, or a deadline), and never blocks past
 * the engine's deadline: waits poll the stream (cudaEventQuery) until it passes; copies between
 * host and device memory go through pinned staging on the call's own stream and are waited for so;
 * memory is freed in stream order (cudaFreeAsync), never by a call that waits for the device. Once
 * a wait on a GPU has passed its deadline that GPU is given up: nothing more is started on it and
 * nothing of it is freed (kernels/cuda/cuda_util.h; tests/gpu/wait_lint.py checks the sources).
 *
 * kernels/fake/fake_module.c and one twin a family in its probe folder (probes/gemm/fake_gemm.c,
 * ...) implement the same tables on the CPU, from the same reference arithmetic, so CI tests the
 * host side of every GPU path.
 */
#ifndef SDC_GPU_MODULE_H
#define SDC_GPU_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hd.h"

/* The main table's layout; the families' tables have versions of their own (SDC_GPU_FAMILIES). */
#define SDC_GPU_MODULE_ABI 8
#define SDC_GPU_MODULE_SYMBOL "sdc_gpu_module"

/* What the CUDA runtime says of one GPU. */
struct sdc_gpu_props {
	char name[96];
	char uuid[48];       /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	char pci_bus_id[24]; /* "0000:3b:00.0" */
	int cc_major, cc_minor;
	int sm_count;
	uint64_t memory_bytes;
	int ecc_enabled;
	int driver_version;  /* cudaDriverGetVersion: 13000 for CUDA 13.0 */
};

/* A bit of an output flipped in GPU memory before its check (member, element): the fault the
 * embbag and allreduce families inject. */
struct sdc_gpu_flip {
	int member;
	int64_t el;
	int bit;
};

/*
 * The families, one a probe with a GPU lane: its name is the main table's field, a pointer to its table,
 * struct sdc_gpu_NAME_ops, declared in the probe's folder (gemm's in probes/gemm/gpu_ops.h) with
 * the version that header defines, the table's first member (`int version`). Where the list is
 * expanded, the module declares each family's constructor (sdc_cuda_NAME_family, module.cu) and
 * sdcscan names the families (device/gpu_loader.c); each probe asks for its own table with its own version
 * (device/gpu_loader.h, SDC_GPU_FAMILY), as only it may include its header (tests/layers.py).
 */
#define SDC_GPU_FAMILIES(X) X(gemm) X(minitrain) X(embbag) X(allreduce)

#define SDC_GPU_FAMILY_FIELD(name) const struct sdc_gpu_##name##_ops *name;

/* NCCL's unique id (ncclUniqueId), and a communicator the families run their work on. */
#define SDC_GPU_NCCL_ID_BYTES 128
struct sdc_gpu_comm;

struct sdc_gpu_module {
	int abi;
	const char *cuda_runtime; /* "13.0" */
	const char *blas;         /* "cuBLASLt 13.1.0": the libraries' version, as `sdcscan version` says it */

	/* How many GPUs; 0 with why (no driver, driver too old, no device). */
	int (*count)(char *why, size_t len);
	int (*props)(int index, struct sdc_gpu_props *p, char *err, size_t errlen);
	/* Makes index the calling thread's GPU. */
	int (*bind)(int index, char *err, size_t errlen);
	/* Whether GPU device (a CUDA ordinal; -1: the calling thread's) still runs a kernel within the
	 * deadline (after a collective timed out: a stuck GPU is told from a peer that never came). */
	int (*ping)(int device, double timeout, char *err, size_t errlen);

	/* ---- NCCL's communicators (kernels/cuda/nccl.cu), on which allreduce's collectives and
	 * minitrain's data-parallel mean run: NULL in a module built without nccl.h. libnccl.so.2 is
	 * opened at run time, so the module loads on hosts without it. ---- */
	/* NCCL's version ("2.28.9"), or NULL with why it cannot be used. */
	const char *(*nccl_version)(char *why, size_t len);
	/* ncclGetUniqueId: what one rank makes and the others are given (SDC_GPU_NCCL_ID_BYTES). */
	int (*nccl_unique_id)(uint8_t *id, char *err, size_t errlen);
	/* A non-blocking communicator (ncclCommInitRankConfig, blocking = 0) of nranks, of which this
	 * process holds nmem GPUs (devices[], CUDA ordinals) as ranks first_rank .. first_rank + nmem - 1:
	 * one under mpirun (one rank a GPU), every GPU of the host in a single process (initialised in
	 * one group, as ncclCommInitAll does); at most 64. Its initialisation is polled until the
	 * deadline and aborted past it. algo and proto (NULL or "": NCCL's choice) name the path: the
	 * caller sets NCCL_ALGO and NCCL_PROTO around this call (device/gpu_loader.c, sdc_gpu_nccl_init: NCCL's tuning
	 * reads them while the communicator initialises; the module never touches the environment,
	 * which other threads read); n: floats a collective moves, device buffers for them made here.
	 * The families' entries act on every member, launching them in one group so none waits for
	 * another. */
	struct sdc_gpu_comm *(*nccl_init)(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					  const char *algo, const char *proto, int64_t n, double timeout, char *err,
					  size_t errlen);
	/* Frees it: ncclCommFinalize then ncclCommDestroy, or ncclCommAbort (abort: after a deadline,
	 * when nothing on it may be waited for). */
	void (*nccl_destroy)(struct sdc_gpu_comm *c, int abort);

	/* One table a family (struct sdc_gpu_gemm_ops *gemm; ...), NULL where not built. */
	SDC_GPU_FAMILIES(SDC_GPU_FAMILY_FIELD)
};

typedef const struct sdc_gpu_module *(*sdc_gpu_module_fn)(void);

#endif
