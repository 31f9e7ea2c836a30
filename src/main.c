/* sdcscan: find machines that compute wrong answers without crashing. See man/sdcscan.1. */
#include "base/env.h"
#include "command.h"

int main(int argc, char **argv)
{
	/* before any thread (Open MPI's start at MPI_Init): the NCCL paths' variables, changed later
	 * while threads run */
	sdc_env_reserve("NCCL_ALGO");
	sdc_env_reserve("NCCL_PROTO");
	return sdc_main(argc, argv);
}
