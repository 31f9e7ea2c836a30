/* sdcscan version: the version and the optional features built in. */
#include <stdio.h>

#include "commands/commands.h"
#include "sdc_config.h"

static int version_main(struct sdc_cmd *c)
{
	(void)c;
	printf("sdcscan %s\nfeatures: cuda=%s nccl=%s mpi=%s blas=%s\n", SDC_VERSION, HAVE_CUDA ? "yes" : "no",
	       HAVE_NCCL ? "yes" : "no", HAVE_MPI ? "yes" : "no", HAVE_BLAS ? "yes" : "no");
	return 0;
}

const struct sdc_command sdc_command_version = {
	.name = "version",
	.summary = "print the version and the optional features built in",
	.fn = version_main,
};
