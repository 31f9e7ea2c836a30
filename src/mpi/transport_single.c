/* The fleet's functions in a build without MPI (fleet.c holds them with it): one process, alone;
 * exchanges with others fail, collectives over one rank are the identity. */
#include "fleet.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sdc_config.h"

#if !HAVE_MPI
int sdc_fleet_init(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	gethostname(sdc_fleet.host, sizeof(sdc_fleet.host) - 1);
	return 0;
}

void sdc_fleet_end(int code)
{
	(void)code;
}

const char *sdc_fleet_host(int rank)
{
	(void)rank;
	return sdc_fleet.host;
}

bool sdc_fleet_interrupt_poll(bool local, int *from)
{
	(void)local;
	*from = -1;
	return false;
}

int sdc_fleet_sendrecv(const void *sbuf, int sbytes, int dst, void *rbuf, int rbytes, int src, int tag,
		       double timeout, int *late)
{
	(void)sbuf, (void)sbytes, (void)dst, (void)rbuf, (void)rbytes, (void)src, (void)tag, (void)timeout;
	*late = 0;
	return -1;
}

int sdc_fleet_exchange(const struct sdc_fleet_part *send, int nsend, int dst, const struct sdc_fleet_part *recv,
		       int nrecv, int src, int tag, double timeout, int *late)
{
	(void)send, (void)nsend, (void)dst, (void)recv, (void)nrecv, (void)src, (void)tag, (void)timeout;
	*late = 0;
	return -1;
}

int sdc_fleet_sum_u64(uint64_t *v, double timeout)
{
	(void)v, (void)timeout;
	return 0;
}

int sdc_fleet_allgather(const void *in, int bytes, void *out, double timeout)
{
	(void)timeout;
	memcpy(out, in, (size_t)bytes);
	return 0;
}

int sdc_fleet_alltoall(const struct sdc_fleet_part *send, struct sdc_fleet_part *recv, bool *live, int tag,
		       double timeout)
{
	(void)send, (void)recv, (void)live, (void)tag, (void)timeout;
	return -1;
}

int sdc_fleet_allreduce_f32(const float *in, float *out, int64_t n, double timeout)
{
	(void)timeout;
	memcpy(out, in, (size_t)n * 4);
	return 0;
}

int sdc_fleet_serve(const void *req, size_t len, const struct sdc_fleet_serving *sv, void *reply, size_t max,
		    size_t *rlen)
{
	(void)req, (void)len, (void)sv, (void)reply, (void)max;
	*rlen = 0; /* (no fleet: no burn process makes a call) */
	return -1;
}

void sdc_fleet_leave(const bool *live)
{
	(void)live;
}

bool sdc_fleet_left(int rank)
{
	(void)rank;
	return false;
}

void sdc_fleet_keepalive(const bool *live, double period)
{
	(void)live, (void)period;
}

int sdc_fleet_to_root(const char *text, int32_t *answer, int tag)
{
	(void)text, (void)answer, (void)tag;
	return -1;
}

void sdc_fleet_gather_texts(char **texts, int tag)
{
	(void)tag;
	texts[0] = NULL;
}

void sdc_fleet_answer(const bool *alive, int32_t answer, int tag)
{
	(void)alive, (void)answer, (void)tag;
}

#endif
