/* ecparity on one host: a round's verification of every parity by its holder, and the
 * localisation of what broke, each server naming what is its own (host.h). */
#include <string.h>

#include "probes/ecparity/host.h"

#define MAX_BREAKS SDC_EC_HOST_MAX_BREAKS

/* The stripes whose parity server p holds, and the column it holds: their breaks, for everyone. */
void sdc_ec_host_verify(struct sdc_ec_host *sh, int p)
{
	struct sdc_ec_break sb[MAX_BREAKS], cb[MAX_BREAKS];
	struct sdc_ec_host_found *fd = &sh->found;
	/* a server being rebuilt: the parities it held and the groups it is in wait for it */
	if (p == sh->rb.server)
		return;
	const int64_t ns = sdc_ec_verify_held_stripes(&sh->st, p, sh->rb.server, sb, MAX_BREAKS);
	const int64_t nc = sdc_ec_verify_held_column(&sh->st, p, sh->rb.server, cb, MAX_BREAKS);
	if (!ns && !nc)
		return;
	if (sdc_ec_host_lock(sh, &fd->lock))
		return;
	for (int64_t i = 0; i < ns && i < MAX_BREAKS && fd->nsb < MAX_BREAKS; i++)
		fd->sb[fd->nsb++] = sb[i];
	for (int64_t i = 0; i < nc && i < MAX_BREAKS && fd->ncb < MAX_BREAKS; i++)
		fd->cb[fd->ncb++] = cb[i];
	pthread_mutex_unlock(&fd->lock);
}

/* Localisation for server s (server.c: sdc_ec_explain), and what the messages and the rebuild
 * left for it. */
void sdc_ec_host_localise(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round)
{
	const struct sdc_ec_host_found *fd = &sh->found;
	const struct sdc_ec_host_rebuild *rb = &sh->rb;
	struct sdc_ec_event ev[2 * MAX_BREAKS];
	struct sdc_finding f;
	const int n = sdc_ec_explain(&sh->st.l, fd->sb, fd->nsb, fd->cb, fd->ncb, s, sdc_ec_entry(&sh->st, s, 0),
				     sh->touched + (size_t)s * sh->st.l.rows, ev, 2 * MAX_BREAKS);
	for (int i = 0; i < n; i++) {
		/* a server put in service this round: a word of it that breaks its groups now and is
		 * still what the rebuild wrote is the rebuild's */
		if (s == rb->installed && round == rb->installed_round)
			sdc_ec_as_rebuild(&sh->st.l, &ev[i], rb->out, "from the parities");
		sdc_ec_finding(&f, sh->operation, round, &ev[i]);
		sdc_worker_report(w, &f);
	}
	/* (a rebuild's check against the replay, found later, is of the round it went in) */
	for (int i = 0; i < fd->nev; i++) {
		if (fd->ev[i].owner != s)
			continue;
		sdc_ec_finding(&f, sh->operation, !strcmp(fd->ev[i].kind, "rebuild-mismatch") ? rb->installed_round : round,
			       &fd->ev[i]);
		sdc_worker_report(w, &f);
	}
}
