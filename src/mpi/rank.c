/*
 * This process's place among the run's ranks (struct sdc_mpi, mpi/transport.h), one definition
 * below the transport's files, which all read it (transport.c calls transport_remote.c).
 */
#include "mpi/transport.h"

struct sdc_mpi sdc_mpi = { .rank = 0, .size = 1, .local_size = 1, .timeout = 30 };
