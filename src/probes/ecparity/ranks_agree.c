/*
 * ecparity across ranks: the agreement on who is still there (a loop of exchanges of every live
 * rank's view, until every view is the same), and what a loss undoes: every holder takes back
 * what it applied this round from the lost rank's servers, and the lost server's rebuild starts
 * on the next surviving rank (ranks_rebuild.c). A rank taken away by --inject L leaves here.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"
#include "base/message.h"

/*
 * Every live rank's view of who is still there, and whether it goes on; repeated until every
 * view received is this rank's own. mine: whether this rank goes on. Returns how many ranks of
 * before[] (the live ones before) are lost now, or -1 (cut off); *go_on: every rank goes on.
 */
int sdc_ec_rk_agree(struct sdc_ec_rk *k, bool mine, bool *go_on, const bool *before)
{
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	uint32_t *view = malloc(((size_t)k->P + 1) * 4);
	int rc = -1;
	if (!cap || !view)
		goto out;
	for (;;) {
		sdc_ec_rk_clear_out(k);
		view[0] = mine;
		for (int p = 0; p < k->P; p++)
			view[1 + p] = k->x.live[p];
		for (int p = 0; p < k->P; p++) {
			cap[p] = k->x.live[p] ? (size_t)k->P + 1 : 0;
			if (k->x.live[p] && sdc_ec_rk_put(k, p, view, (size_t)k->P + 1))
				goto out;
		}
		const int lost = sdc_ec_rk_exchange(k, SDC_EC_TAG_AGREE, cap);
		if (lost < 0)
			goto out;
		bool same = lost == 0;
		*go_on = mine;
		for (int p = 0; p < k->P; p++) {
			if (!k->x.live[p])
				continue;
			const uint32_t *v = sdc_ec_rk_take(k, p, (size_t)k->P + 1);
			if (!v)
				goto out;
			*go_on &= v[0] != 0;
			for (int r = 0; r < k->P; r++) {
				same &= (v[1 + r] != 0) == (view[1 + r] != 0);
				if (!v[1 + r])
					k->x.live[r] = false; /* lost in another's view: lost in all */
			}
		}
		if (!k->x.live[k->me]) {
			k->x.cut_off = true;
			sdc_worker_error(k->w, "the other ranks took this rank as lost: it leaves the ecparity job");
			goto out;
		}
		if (same)
			break;
	}
	rc = 0;
	for (int p = 0; p < k->P; p++)
		rc += before[p] && !k->x.live[p];
out:
	free(cap), free(view);
	return rc;
}

/*
 * After the agreement found a rank lost: its server moves to the next surviving rank, every
 * holder takes back what it applied from it this round (so the parities are those of its state
 * at the round's start, whatever part of this round's messages got through), and its rebuild
 * starts (struct sdc_ec_rk_rebuild). A parity rebuilds one server: two lost at once, or one lost
 * while another is rebuilt, end the probe on every rank with why.
 */
int sdc_ec_rk_recover(struct sdc_ec_rk *k, uint64_t round)
{
	bool *lost = calloc((size_t)k->S, sizeof(bool));
	int rc = -1, D = -1, nlost = 0;
	if (!lost)
		goto out;
	for (int s = 0; s < k->S; s++) {
		lost[s] = !k->x.live[k->at.host[s]];
		if (lost[s])
			D = s, nlost++;
	}
	if (k->rb.on) {
		sdc_worker_error(k->w, "server %d cannot be rebuilt: server %d was lost during its rebuild (a parity "
				       "rebuilds one lost server at a time)",
				 k->rb.D, D);
		goto out;
	}
	if (nlost > 1) {
		sdc_worker_error(k->w, "%d servers were lost together (server %d the last of them): a parity rebuilds one "
				       "lost server at a time", nlost, D);
		goto out;
	}
	/* what this round's messages from it did to the parities held here, taken back */
	for (size_t i = 0; i < k->msg.nlog; i += 3 + (size_t)k->l.words) {
		const uint32_t *e = k->msg.log + i;
		if (!lost[e[0]])
			continue;
		const struct sdc_ec_msg m = { .from = e[0], .kind = e[1], .row = e[2] };
		struct sdc_ec_rk_server *h = k->at.srv[sdc_ec_rk_holder_of(k, &m)];
		uint32_t *p = m.kind ? h->col : h->held + (size_t)m.row * k->l.words;
		for (int x = 0; x < k->l.words; x++)
			p[x] -= e[3 + x];
	}
	const int was = k->at.host[D];
	int q = was;
	for (int i = 1; i <= k->P && !k->x.live[q]; i++)
		q = (was + i) % k->P;
	k->at.host[D] = q;
	sdc_ec_rk_hosts_changed(k);
	rc = sdc_ec_rk_rb_start(k, D, was, round);
out:
	free(lost);
	return rc;
}

/* L: this rank is taken away: its servers dropped, the others told, and it leaves the job. */
bool sdc_ec_rk_taken_away(struct sdc_ec_rk *k, uint64_t round)
{
	struct sdc_fault lf;
	if (!k->at.srv[k->me] || !sdc_ec_faults(k->w, k->me, "L", round, &lf, 1))
		return false;
	/* the loss, here (with a row, the rebuilder records the corruption of its copy too) */
	sdc_worker_fault_applied(k->w, &lf, "L", round, -1, -1, -1, "", "");
	for (int s = 0; s < k->S; s++) {
		sdc_ec_rk_server_free(k->at.srv[s]);
		k->at.srv[s] = NULL;
	}
	sdc_ec_rk_hosts_changed(k);
	sdc_mpi_leave(k->x.live);
	sdc_note("ecparity: rank %d leaves the job at round %" PRIu64 " (--inject L): its servers are rebuilt elsewhere",
		 k->me, round);
	return true;
}
