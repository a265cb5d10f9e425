/*
 * host_bursty.c - a host that bursts, then goes quiet for good.
 *
 * Usage: host_bursty THREADS ROUNDS
 *
 * Each thread runs ROUNDS rounds of three live buffers of 8-24 MiB (sizes
 * that change every round, as an inference loop's temporaries do), filled
 * and checked, then parks on a condition variable and never calls malloc
 * again. The main thread then prints "quiet" on stdout and waits, making
 * no call either, until stdin closes (or 120 s pass). Under the shim the
 * burst's blocks sit idle in the parked threads' caches: only something
 * that runs on its own can give their pages back.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "host_common.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done, stop;
static long rounds;

static void *burst(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 1000;
	int bad = 0;

	for (long r = 0; r < rounds; r++) {
		void *p[3];
		size_t n[3];

		for (int i = 0; i < 3; i++) {
			n[i] = (8 + (size_t)((r * 7 + i * 5) % 17)) * HOST_MIB;
			p[i] = malloc(n[i]);
			if (p[i] == NULL)
				exit(3);
			host_fill(p[i], n[i], seed + (uint64_t)(r * 3 + i));
		}
		for (int i = 0; i < 3; i++) {
			bad |= !host_check(p[i], n[i], n[i], seed + (uint64_t)(r * 3 + i));
			free(p[i]);
		}
	}
	if (bad)
		exit(4);
	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_broadcast(&cv);
	while (!stop)
		pthread_cond_wait(&cv, &lock); /* parked: no call from here on */
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc == 3 ? atol(argv[1]) : 0;
	pthread_t t[16];
	char c;

	rounds = argc == 3 ? atol(argv[2]) : 0;
	if (threads < 1 || threads > 16 || rounds < 1) {
		fprintf(stderr, "usage: host_bursty THREADS(1-16) ROUNDS\n");
		return 2;
	}
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, burst, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	pthread_mutex_lock(&lock);
	while (done < threads)
		pthread_cond_wait(&cv, &lock);
	pthread_mutex_unlock(&lock);
	printf("quiet\n");
	fflush(stdout);
	alarm(120);
	while (read(0, &c, 1) > 0)
		;
	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
