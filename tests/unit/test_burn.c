/* The burn's channel as the run reads it (runner/burn_records.h): a record a sound burn process
 * writes is taken, and each way its bytes can go wrong (a class no code writes, a text that does
 * not end, a device not the variant's, a size, a time or a scale out of range, facts that are not
 * an object or hold a NUL) is refused; the leader forks only while it is one thread; a crash
 * record becomes the finding its signal says. Expected values are the cases' own construction. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "runner/burn_records.h"
#include "runner/crash.h"
#include "runner/registry.h"
#include "mpi/transport.h"
#include "sdc_config.h"
#include "base/clock.h"

static struct sdc_burn burn_of(struct sdc_run *run, struct sdc_plan_entry *e, struct sdc_variant *v,
			       struct sdc_burn_worker *w)
{
	struct sdc_burn b = { 0 };
	b.rq = (struct sdc_burn_request){ .run = run, .entry = e, .variant = v, .nworkers = 2 };
	b.w = w;
	w[0].device = 0, w[1].device = 1;
	b.t_spawn = sdc_now() - 1;
	return b;
}

static struct sdc_finding good_finding(void)
{
	struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .device = 1, .row = 3, .col = 4, .time_to_failure = 0.5 };
	strcpy(f.probe, "gemm");
	strcpy(f.variant, "int8");
	strcpy(f.kind, "checksum-mismatch");
	return f;
}

static void findings(const struct sdc_burn *b)
{
	struct sdc_finding f = good_finding(), out;
	int at = -5;
	char why[160];
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == 0 && at == 1);
	f.device = -1; /* the host */
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == 0 && at == -1);
	f = good_finding();
	f.cls = (enum sdc_finding_class)77;
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == -1);
	f = good_finding();
	memset(f.detail, 'x', sizeof(f.detail)); /* no NUL */
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == -1);
	f = good_finding();
	f.device = 2; /* a device of the run, not of the variant's workers */
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == -1);
	f = good_finding();
	strcpy(f.variant, "fp32");
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == -1);
	f = good_finding();
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f) - 1, &out, &at, why, sizeof(why)) == -1);
	f.time_to_failure = 0.0 / 0.0;
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == -1);
	f = good_finding();
	f.margin = 1.0 / 0.0; /* what a fault makes of a margin: kept */
	CHECK(sdc_burn_check_finding(b, &f, sizeof(f), &out, &at, why, sizeof(why)) == 0);
}

static void results_and_setup(const struct sdc_burn *b)
{
	char why[160];
	struct sdc_burn_result r = { .iterations = 5, .ops = 10, .t_start = 1, .t_end = 2 }, out;
	CHECK(sdc_burn_check_result(&r, sizeof(r), &out, why, sizeof(why)) == 0 && out.iterations == 5);
	r.t_end = 0.5; /* ended before it began */
	CHECK(sdc_burn_check_result(&r, sizeof(r), &out, why, sizeof(why)) == -1);
	r.t_end = 2, r.ops = -1;
	CHECK(sdc_burn_check_result(&r, sizeof(r), &out, why, sizeof(why)) == -1);
	struct sdc_burn_setup su = { .rate_scale = 1e9, .t_start = sdc_now(), .setup_seconds = 0.1, .fleet_timeout = 30 }, so;
	strcpy(su.rate_unit, "GOP/s");
	CHECK(sdc_burn_check_setup(b, &su, sizeof(su), &so, why, sizeof(why)) == 0);
	su.rate_scale = 0;
	CHECK(sdc_burn_check_setup(b, &su, sizeof(su), &so, why, sizeof(why)) == -1);
	su.rate_scale = 1e9, su.t_start = b->t_spawn - 10; /* before it was spawned */
	CHECK(sdc_burn_check_setup(b, &su, sizeof(su), &so, why, sizeof(why)) == -1);
	su.t_start = sdc_now() + 100;
	CHECK(sdc_burn_check_setup(b, &su, sizeof(su), &so, why, sizeof(why)) == -1);
}

static void facts(void)
{
	char why[160], name[32];
	int how;
	struct sdc_facts *f = NULL;
	unsigned char rec[256];
	struct sdc_burn_facts_head h = { .how = SDC_FACTS_MERGE };
	strcpy(h.name, "gemm");
	memcpy(rec, &h, sizeof(h));
	const char *ok = "{\"a\":1}";
	memcpy(rec + sizeof(h), ok, strlen(ok) + 1);
	CHECK(sdc_burn_check_facts(rec, sizeof(h) + strlen(ok) + 1, name, sizeof(name), &how, &f, why, sizeof(why)) == 0 &&
	      !strcmp(name, "gemm"));
	sdc_facts_free(f);
	const char arr[] = "[1,2]";
	memcpy(rec + sizeof(h), arr, sizeof(arr));
	CHECK(sdc_burn_check_facts(rec, sizeof(h) + sizeof(arr), name, sizeof(name), &how, &f, why, sizeof(why)) == -1);
	const char nul[] = "{\"a\":\"x\0y\"}";
	memcpy(rec + sizeof(h), nul, sizeof(nul));
	CHECK(sdc_burn_check_facts(rec, sizeof(h) + sizeof(nul), name, sizeof(name), &how, &f, why, sizeof(why)) == -1);
	h.how = 9;
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), ok, strlen(ok) + 1);
	CHECK(sdc_burn_check_facts(rec, sizeof(h) + strlen(ok) + 1, name, sizeof(name), &how, &f, why, sizeof(why)) == -1);
}

static void crashes(void)
{
	struct sdc_finding f;
	struct sdc_crash_seen c = { .signo = SIGSEGV, .code = SEGV_MAPERR, .recorded = true, .is_fault = true,
				    .addr = 0x10, .ip = 0x1234, .iteration = 7, .module = "sdcscan", .module_offset = 0x99,
				    .device = "cpu1" };
	sdc_crash_finding(&c, &f);
	CHECK(f.cls == SDC_FINDING_CRASH && !strcmp(f.signal, "SIGSEGV") && !strcmp(f.si_code, "SEGV_MAPERR"));
	CHECK(!strcmp(f.fault_address, "0x10") && !strncmp(f.ip, "sdcscan+0x99", 12) && f.iteration == 7);
	/* a SIGKILL from outside, no record: not the core's fault */
	c = (struct sdc_crash_seen){ .signo = SIGKILL, .is_fault = sdc_signal_is_fault(SIGKILL), .module = "",
				     .device = "cpu1" };
	sdc_crash_finding(&c, &f);
	CHECK(f.cls == SDC_FINDING_ERROR && strstr(f.detail, "not by a fault of its own") && strstr(f.detail, "cpu1"));
	/* an abort with no record (its handler could not run): still the host's */
	c = (struct sdc_crash_seen){ .signo = SIGABRT, .is_fault = sdc_signal_is_fault(SIGABRT), .module = "",
				     .device = "cpu1" };
	sdc_crash_finding(&c, &f);
	CHECK(f.cls == SDC_FINDING_CRASH);
}

static void *park(void *arg)
{
	char c;
	return read(*(int *)arg, &c, 1) < 0 ? NULL : arg;
}

static void forking(void)
{
	char why[256] = "";
	/* (the test runs with OPENBLAS_NUM_THREADS=1, as the run starts a variant's process) */
	CHECK_MSG(sdc_burn_fork_safe(why, sizeof(why)), "%s", why);
	int fd[2];
	pthread_t t;
	if (pipe(fd) || pthread_create(&t, NULL, park, &fd[0]))
		return;
	CHECK(!sdc_burn_fork_safe(why, sizeof(why)) && strstr(why, "2 threads"));
	close(fd[1]);
	pthread_join(t, NULL);
}

/* The fleet's calls a burn process asks the run to make: looped straight into the run's side, with
 * a window the run sees smaller than the process does when asked. Each call here must be refused
 * before any MPI call is made (this test never joins MPI: one that got through would crash it). */
static size_t serve_bytes;
static unsigned char window[1 << 20];
static int served_refused;

static int loop(void *arg, const void *req, size_t reqlen, void *reply, size_t replymax, size_t *replylen, double t)
{
	(void)arg, (void)t;
	const struct sdc_mpi_serving sv = { .window = window, .bytes = serve_bytes, .max_timeout = 30 };
	served_refused += sdc_mpi_serve(req, reqlen, &sv, reply, replymax, replylen) != 0;
	return 0;
}

static void fleet_calls(void)
{
	sdc_mpi.active = true, sdc_mpi.size = 4, sdc_mpi.rank = 0;
	sdc_mpi_set_remote(loop, NULL, window, sizeof(window));
	char buf[64] = "x";
	int late;
	serve_bytes = sizeof(window);
	CHECK(sdc_mpi_sendrecv(buf, 8, 9, buf, 8, 1, 0x3d0, 1, &late) == -1 && served_refused == 1); /* no rank 9 */
	CHECK(sdc_mpi_sendrecv(buf, 8, 1, buf, 8, -1, 0x3d0, 1, &late) == -1 && served_refused == 2); /* any source */
	CHECK(sdc_mpi_sendrecv(buf, 8, 1, buf, 8, 1, 0x7e0, 1, &late) == -1 && served_refused == 3); /* the fleet's tag */
	CHECK(sdc_mpi_sendrecv(buf, 8, 1, buf, 8, 1, 0x5dc, 1, &late) == -1 && served_refused == 4); /* the gather's */
	sdc_mpi_stall(); /* no --inject asked for the stall */
	CHECK(served_refused == 5);
	serve_bytes = 32; /* the parts lie past what the run maps */
	CHECK(sdc_mpi_sendrecv(buf, 40, 1, buf, 8, 1, 0x3d0, 1, &late) == -1 && served_refused == 6);
	CHECK(sdc_mpi_allgather(buf, 16, buf, 1) == -1 && served_refused == 7);
	sdc_mpi_set_remote(NULL, NULL, NULL, 0);
	sdc_mpi.active = false, sdc_mpi.size = 1;
}

int main(void)
{
	struct sdc_run run = { 0 };
	struct sdc_device devs[3] = { { .id = "cpu0" }, { .id = "cpu1" }, { .id = "cpu2" } };
	run.devices = devs, run.ndevices = 3;
	struct sdc_plan_entry e = { .probe = sdc_probe_find("gemm") };
	struct sdc_variant v = { .name = "int8" };
	struct sdc_burn_worker w[2] = { 0 };
	const struct sdc_burn b = burn_of(&run, &e, &v, w);
	findings(&b);
	results_and_setup(&b);
	facts();
	crashes();
	if (HAVE_MPI) /* (without MPI no burn process makes a call: mpi/transport_single.c) */
		fleet_calls();
	forking();
	return check_done("burn");
}
