/* A burn's process's side of its MPI calls, which mpi/transport.c hands on to the run's parent (mpi/transport_remote.c). */
#ifndef SDC_MPI_TRANSPORT_REMOTE_H
#define SDC_MPI_TRANSPORT_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "mpi/transport.h"

/* Whether this process's MPI calls go to the run's parent (a burn's process under MPI). */
bool sdc_mpi_remote_on(void);
const char *sdc_mpi_remote_host(int rank);
int sdc_mpi_remote_exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
			      int nrecv, int src, int tag, double timeout, int *late, bool neighbours);
void sdc_mpi_remote_stall(void);
int sdc_mpi_remote_allgather(const void *in, int bytes, void *out, double timeout);
int sdc_mpi_remote_sum_u64(uint64_t *v, double timeout);
int sdc_mpi_remote_allreduce_f32(const float *in, float *out, int64_t n, double timeout);
int sdc_mpi_remote_alltoall(const struct sdc_mpi_part *send, struct sdc_mpi_part *recv, bool *live, int tag,
			      double timeout);
void sdc_mpi_remote_keepalive(const bool *live, double period, bool leave);
bool sdc_mpi_remote_left(int rank);

#endif
