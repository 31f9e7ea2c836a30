/* sdcscan: find machines that compute wrong answers without crashing. See man/sdcscan.1. */
#include <string.h>

#include "base/env.h"
#include "probe/command.h"
#include "runner/burn.h"

int main(int argc, char **argv)
{
	/* before any thread (Open MPI's start at MPI_Init, a GPU lane's NCCL): the NCCL paths'
	 * variables, changed later while threads run */
	sdc_env_reserve("NCCL_ALGO");
	sdc_env_reserve("NCCL_PROTO");
	/* a variant's own process, exec'd by a run (runner/burn.h): before anything else of a command */
	if (argc > 1 && !strcmp(argv[1], SDC_BURN_ARGV1))
		return sdc_burn_main(argc, argv);
	sdc_burn_remember_self(argv[0]);
	return sdc_main(argc, argv);
}
