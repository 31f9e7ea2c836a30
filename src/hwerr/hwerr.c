/*
 * Hardware error counters around a run (hwerr/hwerr.h): the sources read before and after it, the
 * poller during it, and the findings and report entry they make.
 *
 * The poller is one thread for the whole run, not one a GPU lane: an Xid counts whenever it
 * happens during the run (while the CPU variants burn, between variants, in a lane that hung),
 * NVML delivers the events of every registered GPU through one event set, and the lanes belong
 * to the probes while this is the framework's. It polls NVML every POLL_SECONDS without waiting
 * (nvmlEventSetWait_v2 with a timeout of 0), and once more after the run. It also reads the
 * kernel log every KMSG_TICKS polls, so a long run's records are read before the kernel's ring
 * buffer overwrites them.
 */
#include "hwerr/hwerr.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "mpi/transport.h"
#include "device/nvml.h"
#include "base/message.h"
#include "base/clock.h"

#define POLL_SECONDS 0.1
#define KMSG_TICKS 10

struct sdc_hwerr {
	double start;
	bool host; /* this process reads the host's sources (the first rank on a host does) */
	char edac_dir[300], kmsg_path[300], ras_path[300];
	struct sdc_edac edac0;
	struct sdc_kmsg kmsg;
	struct sdc_ras ras;

	int ngpus;
	int *gpu_dev; /* the run's device index of each GPU */
	struct sdc_nvml_events *nv;
	pthread_t poller;
	bool polling, poll_failed;
	bool poller_stuck; /* it did not stop when told: still inside NVML, it keeps h (never freed) */
	atomic_bool stop;
	pthread_mutex_t lock; /* the Xid events, added by the poller */
	struct sdc_hwerr_event xid[SDC_HWERR_EVENTS_MAX];
	int nxid;
	char poll_note[200];
	bool xid_polled; /* some GPU is registered */
	/* the kernel log's events: the poller's while it runs, then sdc_hwerr_end's */
	struct sdc_hwerr_event kev[SDC_HWERR_EVENTS_MAX];
	int nkev;
};

/* ---- merging ---- */

int sdc_hwerr_merge(struct sdc_hwerr_event *ev, int n)
{
	int kept = 0;
	bool named_mce = false;
	for (int i = 0; i < n; i++)
		named_mce |= ev[i].gpu < 0 && strcmp(ev[i].key, "mce-logged") &&
			     (!strcmp(ev[i].kind, "mce") || !strncmp(ev[i].kind, "edac-", 5) ||
			      !strcmp(ev[i].kind, "memory-failure"));
	for (int i = 0; i < n; i++) {
		struct sdc_hwerr_event *e = &ev[i];
		if (named_mce && !strcmp(e->key, "mce-logged"))
			continue; /* "events logged" says less than the source that names them */
		struct sdc_hwerr_event *first = NULL;
		for (int k = 0; k < kept && !first; k++)
			if (ev[k].cls == e->cls && ev[k].gpu == e->gpu && !strcmp(ev[k].key, e->key))
				first = &ev[k];
		if (!first) {
			ev[kept++] = *e;
			continue;
		}
		if (!strcmp(first->source, e->source)) {
			first->count += e->count; /* one source's repeats */
			continue;
		}
		/* another source's view of the same errors: named, not counted twice */
		const size_t used = strlen(first->detail);
		if (!strstr(first->detail, "; also in ") && used < sizeof(first->detail))
			snprintf(first->detail + used, sizeof(first->detail) - used, "; also in %s", e->source);
		else if (!strstr(first->detail, e->source) && used < sizeof(first->detail))
			snprintf(first->detail + used, sizeof(first->detail) - used, ", %s", e->source);
	}
	return kept;
}

/* ---- the Xid poller ---- */

static void take_xids(struct sdc_hwerr *h, const struct sdc_nvml_xid *x, int n)
{
	const double when = sdc_now() - h->start;
	pthread_mutex_lock(&h->lock); /* wait-ok: held only to append events */
	for (int i = 0; i < n; i++) {
		const char *name, *why;
		const enum sdc_finding_class cls = sdc_xid_class(x[i].xid, &name, &why);
		if (h->nxid == SDC_HWERR_EVENTS_MAX)
			break;
		struct sdc_hwerr_event *ev = &h->xid[h->nxid++];
		memset(ev, 0, sizeof(*ev));
		ev->cls = cls;
		sdc_strlcpy(ev->kind, "gpu-xid", sizeof(ev->kind));
		sdc_strlcpy(ev->source, "nvml", sizeof(ev->source));
		ev->gpu = x[i].gpu;
		ev->count = 1;
		ev->when = when;
		snprintf(ev->key, sizeof(ev->key), "xid %llu", x[i].xid);
		snprintf(ev->operation, sizeof(ev->operation), "NVML critical Xid event %llu", x[i].xid);
		char mig[64] = "";
		if (x[i].gpu_instance != 0xFFFFFFFFu)
			snprintf(mig, sizeof(mig), " (MIG GPU instance %u, compute instance %u)", x[i].gpu_instance,
				 x[i].compute_instance);
		snprintf(ev->detail, sizeof(ev->detail), "Xid %llu, %s%s, %.1f s into the run: %s", x[i].xid, name, mig,
			 when, why);
	}
	pthread_mutex_unlock(&h->lock);
}

/* Polls once; false when polling should stop (the event set failed). */
static bool poll_once(struct sdc_hwerr *h)
{
	struct sdc_nvml_xid x[16];
	char why[160] = "";
	int n;
	while ((n = sdc_nvml_events_poll(h->nv, x, (int)SDC_ARRAY_SIZE(x), why, sizeof(why))) > 0)
		take_xids(h, x, n);
	if (n < 0) {
		pthread_mutex_lock(&h->lock); /* wait-ok: held only to write a note */
		snprintf(h->poll_note, sizeof(h->poll_note), "polling stopped %.1f s into the run: %.140s",
			 sdc_now() - h->start, why);
		h->poll_failed = true;
		pthread_mutex_unlock(&h->lock);
		return false;
	}
	return true;
}

static void *poller_main(void *arg)
{
	struct sdc_hwerr *h = arg;
	const struct timespec tick = { 0, (long)(POLL_SECONDS * 1e9) };
	for (unsigned t = 1; !atomic_load(&h->stop); t++) {
		if (h->xid_polled && !h->poll_failed)
			poll_once(h);
		if (t % KMSG_TICKS == 0)
			sdc_kmsg_collect(&h->kmsg, h->start, h->kev, &h->nkev, SDC_HWERR_EVENTS_MAX);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* The GPUs of the run, registered for Xid events. */
static void register_gpus(struct sdc_hwerr *h, struct sdc_run *run)
{
	for (int d = 0; d < run->ndevices; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU)
			h->ngpus++;
	if (!h->ngpus)
		return;
	h->gpu_dev = calloc((size_t)h->ngpus, sizeof(*h->gpu_dev));
	const char **bus = calloc((size_t)h->ngpus, sizeof(*bus));
	if (!h->gpu_dev || !bus) {
		free(bus);
		free(h->gpu_dev);
		h->gpu_dev = NULL;
		h->ngpus = 0;
		return;
	}
	for (int d = 0, g = 0; d < run->ndevices; d++) {
		if (run->devices[d].kind != SDC_DEVICE_GPU)
			continue;
		h->gpu_dev[g] = d;
		bus[g++] = run->devices[d].gpu.pci_bus_id;
	}
	if (!h->host) {
		free(bus);
		return;
	}
	h->nv = sdc_nvml_events_open(bus, h->ngpus);
	free(bus);
	char why[160];
	for (int g = 0; g < h->ngpus; g++)
		h->xid_polled |= sdc_nvml_events_registered(h->nv, g, why, sizeof(why));
}

/* ---- the run ---- */

struct sdc_hwerr *sdc_hwerr_begin(struct sdc_run *run)
{
	struct sdc_hwerr *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->start = sdc_now();
	pthread_mutex_init(&h->lock, NULL);
	/* Under MPI the ranks on one host share its counters and GPUs: the first reads them. */
	h->host = !sdc_mpi.active || sdc_mpi.local_rank == 0;
	const char *root = getenv("SDCSCAN_HOST_ROOT");
	if (!root || !*root)
		root = "";
	snprintf(h->edac_dir, sizeof(h->edac_dir), "%.200s/sys/devices/system/edac/mc", root);
	snprintf(h->kmsg_path, sizeof(h->kmsg_path), "%.200s/dev/kmsg", root);
	snprintf(h->ras_path, sizeof(h->ras_path), "%.200s/var/lib/rasdaemon/ras-mc_event.db", root);
	h->kmsg.fd = -1;
	if (h->host) {
		sdc_edac_read(h->edac_dir, &h->edac0);
		sdc_kmsg_open(h->kmsg_path, &h->kmsg);
		sdc_ras_open(h->ras_path, &h->ras);
	}
	register_gpus(h, run);
	if ((h->xid_polled || h->kmsg.read) && !pthread_create(&h->poller, NULL, poller_main, h))
		h->polling = true;
	else if (h->xid_polled || h->kmsg.read)
		sdc_strlcpy(h->poll_note, "cannot start a thread: Xid events and the kernel log read once after the run",
			    sizeof(h->poll_note));
	return h;
}

/* Seconds the poller has to stop once told: a poll and a tick take well under one. */
#define POLLER_STOP_SECONDS 5

static void stop_poller(struct sdc_hwerr *h)
{
	if (h->polling) {
		atomic_store(&h->stop, true);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += POLLER_STOP_SECONDS;
		if (pthread_timedjoin_np(h->poller, NULL, &until)) {
			/* a call into NVML that does not return (a hung driver): the run ends all the same */
			pthread_detach(h->poller);
			h->poller_stuck = h->poll_failed = true;
			pthread_mutex_lock(&h->lock); /* wait-ok: the poller takes it only to append events */
			snprintf(h->poll_note, sizeof(h->poll_note), "the poller did not stop within %d s of the run's end "
				 "(a call into NVML that does not return: the driver may be hung); the last events not read",
				 POLLER_STOP_SECONDS);
			pthread_mutex_unlock(&h->lock);
		}
		h->polling = false;
	}
	if (h->poller_stuck)
		return;
	/* the events of the run's last moments */
	if (h->xid_polled && !h->poll_failed)
		poll_once(h);
	sdc_kmsg_collect(&h->kmsg, h->start, h->kev, &h->nkev, SDC_HWERR_EVENTS_MAX);
}

static void add_finding(struct sdc_run *run, const struct sdc_hwerr *h, const struct sdc_hwerr_event *e)
{
	struct sdc_finding f = { .cls = e->cls, .device = e->gpu >= 0 ? h->gpu_dev[e->gpu] : -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "health", sizeof(f.probe));
	sdc_strlcpy(f.variant, e->source, sizeof(f.variant));
	sdc_strlcpy(f.kind, e->kind, sizeof(f.kind));
	sdc_strlcpy(f.operation, e->operation, sizeof(f.operation));
	f.time_to_failure = e->when >= 0 ? e->when : sdc_now() - h->start;
	if (e->count > 1 && !strcmp(e->source, "nvml"))
		snprintf(f.detail, sizeof(f.detail), "%" PRId64 " times: %s", e->count, e->detail);
	else
		sdc_strlcpy(f.detail, e->detail, sizeof(f.detail));
	sdc_run_add_finding(run, &f);
}

static json_t *source_json(const char *name, const char *path, bool read, const char *why)
{
	json_t *o = json_pack("{s:s, s:b}", "name", name, "read", read);
	if (path)
		json_object_set_new(o, "path", json_string(path));
	if (!read)
		json_object_set_new(o, "why", json_string(why[0] ? why : "not read"));
	return o;
}

/* run.environment.hardware_errors: which sources were read, which not and why, what they found. */
static void report_sources(struct sdc_run *run, const struct sdc_hwerr *h, int nfound)
{
	const char *other = "read by the first rank on this host";
	json_t *src = json_array();
	json_t *e = source_json("edac", h->edac_dir, h->host && h->edac0.read, h->host ? h->edac0.why : other);
	if (h->host && h->edac0.read) {
		int dimms = 0;
		for (int i = 0; i < h->edac0.nmcs; i++)
			dimms += h->edac0.mcs[i].ndimms;
		json_object_set_new(e, "memory_controllers", json_integer(h->edac0.nmcs));
		json_object_set_new(e, "dimms", json_integer(dimms));
	}
	json_array_append_new(src, e);
	e = source_json("kmsg", h->kmsg_path, h->host && h->kmsg.read, h->host ? h->kmsg.why : other);
	if (h->host && h->kmsg.read) {
		json_object_set_new(e, "records", json_integer((json_int_t)h->kmsg.records));
		if (h->kmsg.note[0])
			json_object_set_new(e, "note", json_string(h->kmsg.note));
	}
	json_array_append_new(src, e);
	json_array_append_new(src,
			      source_json("rasdaemon", h->ras_path, h->host && h->ras.read, h->host ? h->ras.why : other));
	json_t *gpus = json_array();
	bool any = false;
	for (int g = 0; g < h->ngpus; g++) {
		char why[160] = "";
		const bool ok = h->host && sdc_nvml_events_registered(h->nv, g, why, sizeof(why));
		json_t *o = json_pack("{s:s, s:b}", "device", run->devices[h->gpu_dev[g]].id, "read", ok);
		if (!ok)
			json_object_set_new(o, "why", json_string(h->host ? (why[0] ? why : "not registered") : other));
		json_array_append_new(gpus, o);
		any |= ok;
	}
	e = source_json("nvml-xid", NULL, any,
			!h->ngpus ? "no GPU in this run" : !h->host ? other : "no GPU could be registered");
	json_object_set_new(e, "gpus", gpus);
	if (h->poll_note[0])
		json_object_set_new(e, "note", json_string(h->poll_note));
	json_array_append_new(src, e);
	json_object_set_new(run->environment, "hardware_errors",
			    json_pack("{s:o, s:i}", "sources", src, "findings", nfound));
}

void sdc_hwerr_end(struct sdc_hwerr *h, struct sdc_run *run)
{
	if (!h)
		return;
	stop_poller(h);
	struct sdc_hwerr_event *ev = run ? calloc(SDC_HWERR_EVENTS_MAX, sizeof(*ev)) : NULL;
	int n = 0;
	if (ev && h->host) {
		struct sdc_edac after;
		if (h->edac0.read) {
			sdc_edac_read(h->edac_dir, &after);
			if (after.read)
				n = sdc_edac_compare(&h->edac0, &after, ev, SDC_HWERR_EVENTS_MAX);
			else
				snprintf(h->edac0.why, sizeof(h->edac0.why), "read before the run, not after: %.160s", after.why);
			h->edac0.read = after.read;
			sdc_edac_release(&after);
		}
		for (int i = 0; i < h->nkev && n < SDC_HWERR_EVENTS_MAX; i++)
			ev[n++] = h->kev[i];
		sdc_ras_collect(&h->ras, ev, &n, SDC_HWERR_EVENTS_MAX);
		n = sdc_hwerr_merge(ev, n);
	}
	if (ev) {
		pthread_mutex_lock(&h->lock); /* wait-ok: the poller holds it only to append events */
		const int nx = sdc_hwerr_merge(h->xid, h->nxid);
		for (int i = 0; i < nx && n < SDC_HWERR_EVENTS_MAX; i++)
			ev[n++] = h->xid[i];
		pthread_mutex_unlock(&h->lock);
		for (int i = 0; i < n; i++)
			add_finding(run, h, &ev[i]);
		report_sources(run, h, n);
	}
	free(ev);
	if (h->poller_stuck)
		return; /* (what it uses stays: it may still come back) */
	sdc_kmsg_close(&h->kmsg);
	sdc_edac_release(&h->edac0);
	sdc_nvml_events_close(h->nv);
	pthread_mutex_destroy(&h->lock);
	free(h->gpu_dev);
	free(h);
}
