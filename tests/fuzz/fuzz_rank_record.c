/* The reader of the results another rank sends (peers' bytes, the fleet's report of one rank):
 * a record it accepts then goes through the fleet vote beside a well-formed one. */
#include <pthread.h>

#include "runner/fleet_vote.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[160];
	json_t *r = sdc_fleet_rank_record((const char *)data, size, 1, why, sizeof(why));
	if (!r)
		return 0;
	json_t *ranks = json_array(), *votes = json_object();
	json_array_append_new(ranks,
			      json_pack("{s:i, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i}], s:[]}", "rank", 0,
					"host", "h0", "verdict", "OK", "summary", "", "results", "probe", "gemm", "variant",
					"int8-256x256x1024", "device", "cpu0", "model", "m", "status", "ok", "work_digest",
					"00ff", "kernel", "k", "corruptions", 0, "findings"));
	json_array_append_new(ranks, r);
	struct sdc_run run;
	memset(&run, 0, sizeof(run));
	pthread_mutex_init(&run.lock, NULL);
	sdc_fleet_vote(&run, ranks, votes);
	free(run.findings);
	pthread_mutex_destroy(&run.lock);
	json_decref(ranks);
	json_decref(votes);
	return 0;
}
