/*
 * The GPU module's entry point (kernels/gpu_module.h): devices as the CUDA runtime sees them, and
 * the main table sdcscan loads with dlopen, with a pointer to each family's table (each family's
 * CUDA code makes its own: the checked GEMM engine is gemm.cu). What the module's CUDA files
 * share (waits, memory, staging) is cuda_util.cu.
 */
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda/cuda_util.h"
#include "sdc_config.h"
#include "kernels/gpu_module.h"

/* ---- the module ---- */

static int m_count(char *why, size_t len)
{
	int n = 0;
	const cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaErrorInsufficientDriver) {
		int drv = 0;
		cudaDriverGetVersion(&drv);
		if (!drv) {
			snprintf(why, len, "no NVIDIA driver on this host (libcuda.so.1 not found): cudaErrorInsufficientDriver");
			return 0;
		}
		snprintf(why, len, "the NVIDIA driver supports CUDA %d.%d, this GPU module needs %d.%d (a driver >= 580): "
			 "cudaErrorInsufficientDriver", drv / 1000, drv % 1000 / 10, CUDART_VERSION / 1000,
			 CUDART_VERSION % 1000 / 10);
		return 0;
	}
	if (e != cudaSuccess) {
		snprintf(why, len, "no usable GPU: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
		return 0;
	}
	if (!n)
		snprintf(why, len, "no CUDA device on this host");
	return n;
}

static int m_props(int index, struct sdc_gpu_props *p, char *err, size_t errlen)
{
	cudaDeviceProp prop;
	memset(p, 0, sizeof(*p));
	cudaError_t e = cudaGetDeviceProperties(&prop, index);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaGetDeviceProperties", e);
		return -1;
	}
	snprintf(p->name, sizeof(p->name), "%.95s", prop.name);
	const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
	/* The form nvidia-smi and dcgm-exporter print. */
	snprintf(p->uuid, sizeof(p->uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	e = cudaDeviceGetPCIBusId(p->pci_bus_id, (int)sizeof(p->pci_bus_id), index);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaDeviceGetPCIBusId", e);
		return -1;
	}
	p->cc_major = prop.major;
	p->cc_minor = prop.minor;
	p->sm_count = prop.multiProcessorCount;
	p->memory_bytes = prop.totalGlobalMem;
	p->ecc_enabled = prop.ECCEnabled;
	cudaDriverGetVersion(&p->driver_version);
	return 0;
}

static int m_bind(int index, char *err, size_t errlen)
{
	const cudaError_t e = cudaSetDevice(index);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaSetDevice", e);
		return -1;
	}
	return 0;
}

static char runtime_text[16], blas_text[48];

/* Each family's table, made by its own CUDA code (sdc_cuda_NAME_family, the family's .cu files):
 * declared weak, so a family whose code is not linked into the module is a NULL pointer here (an
 * undefined weak hidden symbol is 0: the ELF gABI, "Symbol Table", STB_WEAK). */
#define SDC_CUDA_FAMILY_DECL(name)                                                                    \
	__attribute__((weak, visibility("hidden"))) const struct sdc_gpu_##name##_ops *sdc_cuda_##name##_family(void);
SDC_GPU_FAMILIES(SDC_CUDA_FAMILY_DECL)

/* The module's one export; everything else is hidden (-fvisibility=hidden, meson.build). */
extern "C" __attribute__((visibility("default"))) const struct sdc_gpu_module *sdc_gpu_module(void);
extern "C" const struct sdc_gpu_module *sdc_gpu_module(void)
{
	static struct sdc_gpu_module m;
	if (!m.abi) {
		snprintf(runtime_text, sizeof(runtime_text), "%d.%d", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
		const size_t v = cublasLtGetVersion();
		snprintf(blas_text, sizeof(blas_text), "cuBLASLt %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
		m.cuda_runtime = runtime_text;
		m.blas = blas_text;
		m.count = m_count;
		m.props = m_props;
		m.bind = m_bind;
#if HAVE_NCCL
		sdc_cuda_nccl_entries(&m); /* (without nccl.h at build time the entries stay NULL) */
#endif
#define SDC_CUDA_FAMILY_FILL(name) m.name = sdc_cuda_##name##_family ? sdc_cuda_##name##_family() : NULL;
		SDC_GPU_FAMILIES(SDC_CUDA_FAMILY_FILL)
		m.abi = SDC_GPU_MODULE_ABI;
	}
	return &m;
}
