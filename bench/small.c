/*
 * small.c - small-allocation throughput: malloc/free of 16 B to 1 KiB on several threads.
 *
 * Each thread keeps a window of live blocks and replaces one per step (free
 * the oldest, malloc a new one of a pseudo-random size, write its first and
 * last byte), the pattern of a program's ordinary small objects. None of these
 * requests is scratch-sized, so under the preload shim every call is a
 * pass-through: `make bench` runs this program under each shim and under its
 * backend alone to measure what the shim adds.
 *
 * Besides wall-clock throughput it reports CPU time per pair (each thread's
 * CLOCK_THREAD_CPUTIME_ID over its loop): on a shared machine other processes
 * steal wall-clock time, not the threads' own CPU time, so the shim-versus-
 * backend ratio is taken on CPU time.
 *
 * Output: a human line, then one line "small key=value ..." for scripts.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define MAX_THREADS 64
#define WINDOW      64
#define MIN_SIZE    16
#define MAX_SIZE    1024

/* One per thread, each on cache lines of its own (128 bytes: the adjacent-
 * line prefetcher pairs 64-byte lines), so no thread's writes slow another. */
struct runner {
	pthread_t thread;
	unsigned long ops;
	uint64_t seed;
	double cpu; /* seconds of this thread's CPU time in the loop */
	int failed;
} __attribute__((aligned(128)));

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static char *fresh(uint64_t *seed)
{
	size_t n = MIN_SIZE + xorshift(seed) % (MAX_SIZE - MIN_SIZE + 1);
	char *p = malloc(n);

	if (p) {
		p[0] = 1;
		p[n - 1] = 1;
		bench_keep(p);
	}
	return p;
}

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	char *live[WINDOW];
	uint64_t seed = r->seed; /* a local: the loop writes it every step */
	unsigned long i;
	unsigned j;
	double t0;

	for (j = 0; j < WINDOW; j++)
		if (!(live[j] = fresh(&seed)))
			goto out_fail;
	t0 = bench_clock_s(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < r->ops; i++) {
		j = (unsigned)(i % WINDOW);
		free(live[j]);
		if (!(live[j] = fresh(&seed)))
			goto out_fail;
	}
	r->cpu = bench_clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
	for (j = 0; j < WINDOW; j++)
		free(live[j]);
	return NULL;
out_fail:
	r->failed = 1;
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: small [--threads N] [--ops N]\n"
	        "  --threads N  threads allocating at once (default 2, max %d)\n"
	        "  --ops N      malloc+free pairs per thread (default 10000000)\n",
	        MAX_THREADS);
}

int main(int argc, char **argv)
{
	static struct runner r[MAX_THREADS];
	unsigned long threads = 2, ops = 10000000;
	double t0, secs, pairs, cpu = 0;
	unsigned long i;
	int rc;

	for (i = 1; i < (unsigned long)argc; i++) {
		unsigned long *target = NULL, hi = 1ul << 40;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--threads")) {
			target = &threads;
			hi = MAX_THREADS;
		} else if (!strcmp(argv[i], "--ops")) {
			target = &ops;
		}
		if (!target || i + 1 >= (unsigned long)argc ||
		    !bench_parse_ulong(argv[i + 1], 1, hi, target)) {
			fprintf(stderr, "small: bad option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
		i++;
	}
	t0 = bench_clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < threads; i++) {
		r[i].ops = ops;
		r[i].seed = 0x9e3779b97f4a7c15ull * (i + 1);
		rc = pthread_create(&r[i].thread, NULL, runner_main, &r[i]);
		if (rc) {
			fprintf(stderr, "small: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(r[i].thread, NULL);
		if (r[i].failed) {
			fprintf(stderr, "small: malloc failed\n");
			return 1;
		}
		cpu += r[i].cpu;
	}
	secs = bench_clock_s(CLOCK_MONOTONIC) - t0;
	pairs = (double)threads * (double)ops;
	printf("small: %lu threads x %lu malloc+free pairs of %d-%d bytes: %.2f M pairs/s, "
	       "%.1f ns of CPU time per pair\n",
	       threads, ops, MIN_SIZE, MAX_SIZE, pairs / secs / 1e6, cpu * 1e9 / pairs);
	printf("small threads=%lu ops=%lu seconds=%.4f mpairs_per_s=%.3f cpu_ns_per_pair=%.3f\n",
	       threads, ops, secs, pairs / secs / 1e6, cpu * 1e9 / pairs);
	return 0;
}
