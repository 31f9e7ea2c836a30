/*
 * base/env.c: a reserved variable changes while other threads read the environment. What makes
 * that safe is that environ and its entries never move after the reservation (setenv and
 * unsetenv reallocate or shift them: the glibc behaviour that a concurrent getenv cannot survive),
 * so the test checks exactly that, with readers on other threads calling getenv all the while (an
 * entry moved or freed under them is what the ASan build would catch), then that getenv sees each
 * value put (and nothing when it is put absent) and the initial value kept. (A reader holding a
 * value across three of these back-to-back puts can see it rewritten: counted, not failed.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "check.h"

extern char **environ;

static const char *const values[] = { "Ring", "Tree", "NVLS,CollnetDirect", "Simple", NULL };
static atomic_bool stop;
static atomic_int stale_reads;

static void *reader(void *arg)
{
	const char *name = arg;
	while (!atomic_load(&stop)) {
		const char *v = getenv(name);
		bool ok = !v;
		for (int i = 0; values[i] && !ok; i++)
			ok = !strcmp(v, values[i]);
		if (!ok)
			atomic_fetch_add(&stale_reads, 1);
		(void)getenv("PATH"); /* the rest of the environment, read on the way */
	}
	return NULL;
}

int main(void)
{
	setenv("SDC_TEST_KEPT", "NVLS", 1);
	unsetenv("SDC_TEST_ABSENT");
	CHECK(sdc_env_reserve("SDC_TEST_KEPT") == 0);
	CHECK(sdc_env_reserve("SDC_TEST_ABSENT") == 0);
	CHECK(sdc_env_reserve("SDC_TEST_KEPT") == -1); /* once */
	CHECK(getenv("SDC_TEST_KEPT") && !strcmp(getenv("SDC_TEST_KEPT"), "NVLS"));
	CHECK(!getenv("SDC_TEST_ABSENT"));
	CHECK(!strcmp(sdc_env_initial("SDC_TEST_KEPT"), "NVLS"));
	CHECK(!sdc_env_initial("SDC_TEST_ABSENT"));

	/* environ and every entry's address, as they are now */
	char **before = environ;
	int n = 0;
	while (environ[n])
		n++;
	char **entries = malloc(sizeof(char *) * (size_t)(n + 1));
	memcpy(entries, environ, sizeof(char *) * (size_t)(n + 1));

	pthread_t t[2];
	pthread_create(&t[0], NULL, reader, "SDC_TEST_ABSENT");
	pthread_create(&t[1], NULL, reader, "SDC_TEST_KEPT");
	for (int round = 0; round < 20000; round++) {
		const char *v = values[round % 5];
		CHECK(sdc_env_put("SDC_TEST_ABSENT", v) == 0);
		CHECK(sdc_env_put("SDC_TEST_KEPT", values[(round + 2) % 5]) == 0);
		const char *got = getenv("SDC_TEST_ABSENT");
		CHECK_MSG(v ? got && !strcmp(got, v) : !got, "round %d: put %s, getenv %s", round, v ? v : "(absent)",
			  got ? got : "(absent)");
	}
	atomic_store(&stop, true);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("env: %d reads on other threads held a value past three puts\n", atomic_load(&stale_reads));

	CHECK_MSG(environ == before, "environ moved");
	int same = 1;
	for (int i = 0; i <= n; i++)
		same &= environ[i] == entries[i];
	CHECK_MSG(same, "an entry of environ moved or changed");
	free(entries);

	/* back to what it was; a value too long, or a name not reserved, is refused */
	CHECK(sdc_env_put("SDC_TEST_KEPT", sdc_env_initial("SDC_TEST_KEPT")) == 0);
	CHECK(!strcmp(getenv("SDC_TEST_KEPT"), "NVLS"));
	char longv[SDC_ENV_VALUE_MAX + 2];
	memset(longv, 'x', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	CHECK(sdc_env_put("SDC_TEST_KEPT", longv) == -1);
	CHECK(sdc_env_put("SDC_TEST_NOT_RESERVED", "Ring") == -1);
	return check_done("env");
}
