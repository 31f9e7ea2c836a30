/* Whether the host is busy with other work (runner/idle.h). */
#include "runner/idle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/message.h"
#include "device/nvml.h"

static void add(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	const size_t n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, fmt, n ? "; " : "", a, b);
}

/* Slurm's state of this node: 1 busy (why), 0 not, -1 no answer (why). scontrol is looked up on
 * PATH, as the packaging's health check does, and given 10 s. */
static int slurm_busy(char *why, size_t len)
{
	char host[256] = "", cmd[512], line[4096];
	const char *node = getenv("SLURMD_NODENAME");
	if (node && *node)
		sdc_strlcpy(host, node, sizeof(host));
	else if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	if (!host[0] || strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != strlen(host)) {
		snprintf(why, len, "no node name to ask Slurm about");
		return -1;
	}
	/* (timeout -k: a scontrol that ignores SIGTERM is killed 2 s later, so the read and pclose end) */
	snprintf(cmd, sizeof(cmd), "timeout -k 2 10 scontrol show node -o %s 2>/dev/null", host);
	FILE *p = popen(cmd, "r"); /* wait-ok: timeout -k bounds the command */
	const char *got = p ? fgets(line, sizeof(line), p) : NULL;
	const int rc = p ? pclose(p) : -1; /* wait-ok: timeout -k bounds the command */
	const char *st = got && rc == 0 ? strstr(line, "State=") : NULL;
	if (!st) {
		snprintf(why, len, "Slurm does not know node %s here (no scontrol, or not a Slurm node)", host);
		return -1;
	}
	char state[64];
	sscanf(st + 6, "%63[A-Z_+*]", state);
	const char *first = state;
	char base[64];
	sscanf(first, "%63[A-Z_]", base);
	if (!strcmp(base, "ALLOCATED") || !strcmp(base, "MIXED") || !strcmp(base, "COMPLETING")) {
		snprintf(why, len, "Slurm: node %s is %s (a job runs on it)", host, state);
		return 1;
	}
	snprintf(why, len, "Slurm: node %s is %s", host, state);
	return 0;
}

/* The share of time the listed CPUs were busy over the sample, from /proc/stat; -1 unreadable. */
static double cpu_busy(const struct sdc_run *run)
{
	unsigned long long busy[2] = { 0, 0 }, total[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		if (k) {
			const struct timespec ts = { (time_t)SDC_IDLE_SAMPLE_S, 0 };
			nanosleep(&ts, NULL);
		}
		FILE *f = fopen("/proc/stat", "r");
		char line[512];
		while (f && fgets(line, sizeof(line), f)) {
			int cpu;
			unsigned long long v[8] = { 0 };
			if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4],
				   &v[5], &v[6], &v[7]) < 5)
				continue;
			bool mine = false;
			for (int d = 0; d < run->ndevices && !mine; d++)
				mine = run->devices[d].kind == SDC_DEVICE_CPU && run->devices[d].cpu.logical == cpu;
			if (!mine)
				continue;
			unsigned long long t = 0;
			for (int i = 0; i < 8; i++)
				t += v[i];
			total[k] += t;
			busy[k] += t - v[3] - v[4]; /* all but idle and iowait */
		}
		if (f)
			fclose(f);
	}
	return total[1] > total[0] ? (double)(busy[1] - busy[0]) / (double)(total[1] - total[0]) : -1;
}

bool sdc_host_busy(const struct sdc_run *run, char *why, size_t len, char *checked, size_t clen)
{
	char said[512];
	why[0] = checked[0] = '\0';
	const int s = slurm_busy(said, sizeof(said));
	add(checked, clen, "%s%s%s", said, "");
	if (s == 1) {
		snprintf(why, len, "%s", said);
		return true;
	}
	for (int d = 0; d < run->ndevices; d++) {
		const struct sdc_device *dev = &run->devices[d];
		if (dev->kind != SDC_DEVICE_GPU)
			continue;
		const int n = sdc_nvml_gpu_processes(dev->gpu.pci_bus_id, said, sizeof(said));
		if (n > 0) {
			snprintf(why, len, "%s (%s) runs %d compute process%s of another job", dev->id, dev->gpu.pci_bus_id, n,
				 n == 1 ? "" : "es");
			add(checked, clen, "%s%s%s", why, "");
			return true;
		}
		add(checked, clen, "%s%s: %s", dev->id, n == 0 ? "no compute process" : said);
	}
	const double busy = cpu_busy(run);
	snprintf(said, sizeof(said), "the run's CPUs %.0f%% busy over %.0f s", busy * 100, SDC_IDLE_SAMPLE_S);
	add(checked, clen, "%s%s%s", busy < 0 ? "the CPUs' load unreadable (/proc/stat)" : said, "");
	if (busy > SDC_IDLE_CPU_BUSY) {
		snprintf(why, len, "%s (more than %.0f%%: other work runs there)", said, SDC_IDLE_CPU_BUSY * 100);
		return true;
	}
	return false;
}
