/*
 * A GPU module that runs on the CPU (kernels/gpu_module.h), for testing the host side of every GPU
 * path without a GPU: sdcscan loads it as it loads the CUDA module ($SDCSCAN_GPU_MODULE). This is
 * its base (the devices and the main table, as kernels/cuda/module.cu; NCCL's communicators in
 * fake_nccl.c); each family's operations are a twin in the family's probe folder, doing what that
 * family's CUDA code does from the same element definitions and check arithmetic:
 * probes/gemm/fake_gemm.c, probes/minitrain/fake_minitrain.c, probes/embbag/fake_embbag.c,
 * probes/allreduce/fake_allreduce.c (each lists the knobs that exercise its failure paths).
 *
 * Environment:
 *   FAKE_GPU_COUNT=N      GPUs (default 1); 0: "no GPU found"
 *   FAKE_GPU_STALE=NAME   the table of family NAME (gemm, minitrain, embbag, allreduce) reports a
 *                         version one below its header's (a module built against an older
 *                         sdcscan): sdcscan must turn off that family's lanes alone
 */
#include <stdio.h>
#include <string.h>

#include "kernels/fake/fake_nccl.h"

static int fake_count(char *why, size_t len)
{
	const int n = fake_env_int("FAKE_GPU_COUNT", 1);
	if (n <= 0)
		snprintf(why, len, "no CUDA-capable device is detected (fake module)");
	return n;
}

static int fake_props(int index, struct sdc_gpu_props *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "sdcscan fake GPU (CPU emulation)");
	snprintf(p->uuid, sizeof(p->uuid), "GPU-00000000-0000-0000-0000-%012d", index);
	snprintf(p->pci_bus_id, sizeof(p->pci_bus_id), "0000:%02x:00.0", 0xf0 + index);
	p->cc_major = 9;
	p->cc_minor = 0;
	p->sm_count = FAKE_SMS;
	p->memory_bytes = (uint64_t)1 << 30;
	p->ecc_enabled = 1;
	p->driver_version = 13000;
	return 0;
}

static int fake_bind(int index, char *err, size_t errlen)
{
	if (index < 0 || index >= fake_env_int("FAKE_GPU_COUNT", 1)) {
		snprintf(err, errlen, "cudaErrorInvalidDevice (fake)");
		return -1;
	}
	fake_bound = index;
	return 0;
}

const struct sdc_gpu_module *sdc_gpu_module(void);
const struct sdc_gpu_module *sdc_gpu_module(void)
{
	static struct sdc_gpu_module m;
	if (!m.abi) {
		m.cuda_runtime = "fake";
		m.blas = "fake cuBLASLt";
		m.count = fake_count;
		m.props = fake_props;
		m.bind = fake_bind;
		m.ping = fake_ping;
		m.nccl_version = fake_nccl_version;
		m.nccl_unique_id = fake_nccl_unique_id;
		m.nccl_init = fake_nccl_init;
		m.nccl_destroy = fake_nccl_destroy;
#define FAKE_FAMILY_FILL(name) m.name = fake_##name##_family ? fake_##name##_family() : NULL;
		SDC_GPU_FAMILIES(FAKE_FAMILY_FILL)
		m.abi = SDC_GPU_MODULE_ABI;
	}
	return &m;
}
