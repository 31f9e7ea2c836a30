/* sdcscan version: the version, the optional features built in, and what GPUs can be tested. */
#include <stdio.h>
#include <stdlib.h>

#include "commands/commands.h"
#include "device/gpu_loader.h"
#include "sdc_config.h"

static int version_main(struct sdc_cmd *c)
{
	(void)c;
	printf("sdcscan %s\nfeatures: cuda=%s nccl=%s mpi=%s blas=%s\n", SDC_VERSION, HAVE_CUDA ? "yes" : "no",
	       HAVE_NCCL ? "yes" : "no", HAVE_MPI ? "yes" : "no", HAVE_BLAS ? "yes" : "no");
	/* "gpus: 2 (NVIDIA H100 ..., ...), module PATH, CUDA runtime 13.0, cuBLASLt 13.1.0", or why none */
	struct sdc_device *devs = NULL;
	int n = 0;
	char note[512] = "", err[256];
	if (sdc_gpu_discover(NULL, &devs, &n, note, sizeof(note), err, sizeof(err)))
		snprintf(note, sizeof(note), "%s", err);
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	if (n) {
		printf("gpus: %d (", n);
		for (int i = 0; i < n; i++)
			printf("%s%s", i ? ", " : "", devs[i].model);
		printf("), module %s, CUDA runtime %s, %s\n", sdc_gpu_module_path(), m->cuda_runtime, m->blas);
	} else {
		printf("gpus: none: %s\n", note);
	}
	/* "gpu families: gemm 1, minitrain 1, embbag 1, allreduce 1": each family's table as the module
	 * has it (not built: "-"), its version first (kernels/gpu_module.h); each probe takes its own
	 * only at the version it was built with */
	if (m) {
		const char *sep = " ";
		printf("gpu families:");
#define SHOW_FAMILY(name)                                                                                              \
	if (m->name)                                                                                                   \
		printf("%s%s %d", sep, #name, *(const int *)m->name);                                                  \
	else                                                                                                           \
		printf("%s%s -", sep, #name);                                                                          \
	sep = ", ";
		SDC_GPU_FAMILIES(SHOW_FAMILY)
#undef SHOW_FAMILY
		printf("\n");
	}
	free(devs);
	return 0;
}

const struct sdc_command sdc_command_version = {
	.name = "version",
	.summary = "print the version, the optional features built in, and the GPUs that can be tested (or why none)",
	.fn = version_main,
};
