/* The bytes of an MPI call that a burn's process hands to the run's parent: what the process's
 * side writes (mpi/transport_remote.c) and the parent's side reads (mpi/transport_serve.c). */
#ifndef SDC_MPI_TRANSPORT_WIRE_H
#define SDC_MPI_TRANSPORT_WIRE_H

#include <stdint.h>

#include "mpi/transport.h"

enum op { OP_SENDRECV, OP_EXCHANGE, OP_STALL, OP_ALLGATHER, OP_SUM_U64, OP_ALLTOALL, OP_KEEPALIVE, OP_LEAVE,
	  OP_LEFT, OP_ALLREDUCE_F32, OP_N };

#define MAX_PARTS (2 * SDC_MPI_REMOTE_MAX_RANKS)

struct call {
	uint32_t op, nparts, nlive, pad;
	int32_t i[4];
	double d;
};

struct part_at {
	uint64_t off, len;
};

struct answer {
	int32_t rc, late;
	uint32_t nlens, nlive;
	uint64_t value;
};

#endif
