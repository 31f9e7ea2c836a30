/* The MPI transport's functions in a build without MPI (mpi/transport.c holds them with it): one process, alone;
 * exchanges with others fail, collectives over one rank are the identity. */
#include "mpi/transport.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sdc_config.h"

#if !HAVE_MPI
int sdc_mpi_init(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	gethostname(sdc_mpi.host, sizeof(sdc_mpi.host) - 1);
	return 0;
}

void sdc_mpi_end(int code)
{
	(void)code;
}

const char *sdc_mpi_host(int rank)
{
	(void)rank;
	return sdc_mpi.host;
}

bool sdc_mpi_interrupt_poll(bool local, int *from)
{
	(void)local;
	*from = -1;
	return false;
}

int sdc_mpi_sendrecv(const void *sbuf, int sbytes, int dst, void *rbuf, int rbytes, int src, int tag,
		       double timeout, int *late)
{
	(void)sbuf, (void)sbytes, (void)dst, (void)rbuf, (void)rbytes, (void)src, (void)tag, (void)timeout;
	*late = 0;
	return -1;
}

int sdc_mpi_exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
		       int nrecv, int src, int tag, double timeout, int *late)
{
	(void)send, (void)nsend, (void)dst, (void)recv, (void)nrecv, (void)src, (void)tag, (void)timeout;
	*late = 0;
	return -1;
}

int sdc_mpi_sum_u64(uint64_t *v, double timeout)
{
	(void)v, (void)timeout;
	return 0;
}

int sdc_mpi_allgather(const void *in, int bytes, void *out, double timeout)
{
	(void)timeout;
	memcpy(out, in, (size_t)bytes);
	return 0;
}

int sdc_mpi_alltoall(const struct sdc_mpi_part *send, struct sdc_mpi_part *recv, bool *live, int tag,
		       double timeout)
{
	(void)send, (void)recv, (void)live, (void)tag, (void)timeout;
	return -1;
}

int sdc_mpi_allreduce_f32(const float *in, float *out, int64_t n, double timeout)
{
	(void)timeout;
	memcpy(out, in, (size_t)n * 4);
	return 0;
}

int sdc_mpi_serve(const void *req, size_t len, const struct sdc_mpi_serving *sv, void *reply, size_t max,
		    size_t *rlen)
{
	(void)req, (void)len, (void)sv, (void)reply, (void)max;
	*rlen = 0; /* (no fleet: no burn process makes a call) */
	return -1;
}

void sdc_mpi_leave(const bool *live)
{
	(void)live;
}

bool sdc_mpi_left(int rank)
{
	(void)rank;
	return false;
}

void sdc_mpi_keepalive(const bool *live, double period)
{
	(void)live, (void)period;
}

int sdc_mpi_to_root(const char *text, int32_t *answer, int tag)
{
	(void)text, (void)answer, (void)tag;
	return -1;
}

void sdc_mpi_gather_texts(char **texts, int tag)
{
	(void)tag;
	texts[0] = NULL;
}

void sdc_mpi_answer(const bool *alive, int32_t answer, int tag)
{
	(void)alive, (void)answer, (void)tag;
}

#endif
