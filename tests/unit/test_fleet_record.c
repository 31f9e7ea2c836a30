/*
 * A peer rank's results are outside input: the reader takes a well-formed record and refuses,
 * with the reason, one whose rank, verdict or any field the vote and the report read is missing
 * or of another type (the vote would otherwise read a NULL string).
 */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "runner/fleet_vote.h"

static const char *const good =
	"{\"rank\": 2, \"host\": \"n2\", \"verdict\": \"CRITICAL\", \"summary\": \"1 finding\", \"results\": "
	"[{\"probe\": \"gemm\", \"variant\": \"int8\", \"device\": \"cpu0\", \"model\": \"m\", \"status\": \"corrupt\", "
	"\"work_digest\": \"00ff\", \"kernel\": \"avx2\", \"corruptions\": 1}], \"findings\": [{\"probe\": \"gemm\", "
	"\"variant\": \"int8\", \"device\": \"cpu0\", \"kind\": \"checksum-mismatch\", \"target\": \"C\", \"expected\": "
	"\"0x1\", \"actual\": \"0x3\", \"expected_value\": \"1\", \"actual_value\": \"3\", \"xor_mask\": \"0x2\", "
	"\"detail\": \"d\", \"row\": 1, \"col\": 2, \"iteration\": 3}]}";

/* good, with the first occurrence of `from` replaced by `to` */
static void edited(char *buf, size_t len, const char *from, const char *to)
{
	const char *at = strstr(good, from);
	snprintf(buf, len, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
}

int main(void)
{
	char why[160];
	json_t *r = sdc_fleet_rank_record(good, strlen(good), 2, why, sizeof(why));
	CHECK_MSG(r != NULL, "a well-formed record refused: %s", why);
	json_decref(r);
	/* a rank's ecparity rebuild rides along (fleet_vote.c) */
	char with_env[2048];
	edited(with_env, sizeof(with_env), "\"summary\"", "\"environment\": {\"ecparity\": {\"rebuild\": {}}}, \"summary\"");
	r = sdc_fleet_rank_record(with_env, strlen(with_env), 2, why, sizeof(why));
	CHECK_MSG(r != NULL, "a record with an ecparity environment refused: %s", why);
	json_decref(r);
	CHECK(!sdc_fleet_rank_record(good, strlen(good), 3, why, sizeof(why)) && strstr(why, "rank 2"));
	static const struct {
		const char *from, *to, *why;
	} bad[] = {
		{ "\"CRITICAL\"", "\"BROKEN\"", "verdict" },
		{ "\"device\": \"cpu0\", \"model\"", "\"device\": 7, \"model\"", "results[0] has no string device" },
		{ "\"corruptions\": 1", "\"corruptions\": \"1\"", "results[0] has no integer corruptions" },
		{ "\"row\": 1", "\"row\": null", "findings[0] has no integer row" },
		{ "\"results\": [", "\"results\": 5, \"x\": [", "no results list" },
		{ "\"host\": \"n2\"", "\"hostname\": \"n2\"", "no string host" },
		{ "\"summary\"", "\"environment\": [1], \"summary\"", "its environment is not an object" },
		{ "\"summary\"", "\"environment\": {\"ecparity\": 3}, \"summary\"", "with an ecparity object" },
	};
	char buf[2048];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		edited(buf, sizeof(buf), bad[i].from, bad[i].to);
		r = sdc_fleet_rank_record(buf, strlen(buf), 2, why, sizeof(why));
		CHECK_MSG(!r && strstr(why, bad[i].why), "case %zu accepted or said '%s'", i, r ? "" : why);
		json_decref(r);
	}
	CHECK(!sdc_fleet_rank_record("{\"rank\": 2", 10, 2, why, sizeof(why)) && strstr(why, "not JSON"));
	CHECK(!sdc_fleet_rank_record("[2]", 3, 2, why, sizeof(why)) && strstr(why, "the record is not an object"));
	return check_done("test_fleet_record");
}
