/*
 * kvset.c - a set of buffers that grows together and is freed late, by
 * another thread: the K/V cache a decoder hands to a garbage-collected
 * host. Under node, ONNX Runtime's outputs become ArrayBuffers (calloc,
 * then a copy of the output), 12 a step (K and V of 6 layers), each 8 KiB
 * larger than the step before; V8's collector frees them about a dozen
 * steps later, on its own threads (docs/performance.md measured it).
 *
 * Each step the main thread callocs --set buffers of the step's size (from
 * --from KiB, growing by --grow KiB a step), fills each with a copy and
 * reads it back; a collector thread frees the buffers of the step --lag
 * steps before, while the main thread goes on. What it measures is what
 * reusing the memory of a set that outgrew its sizes costs: new pages, or
 * old ones moved, or old ones reused in place.
 *
 * The program uses plain calloc/free and never links libscratch, so any
 * allocator can be LD_PRELOADed under it unchanged.
 *
 * Output: a human line, then one line "kvset key=value ..." for scripts:
 * ms_step and cpu_ms_step (after --warmup steps), faults_step (minflt +
 * majflt, both threads), peak RSS (VmHWM) in KiB and a checksum of what
 * was read back (the same under every allocator).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define KIB ((size_t)1 << 10)

struct kvset {
	unsigned steps;
	unsigned set;
	unsigned lag;
	unsigned from_kib;
	unsigned grow_kib;
	unsigned warmup;
};

/* The buffers of the last lag + 2 steps, a row of set a step; the
 * collector frees a row once the main thread has moved lag steps past it. */
static char **rows;
static unsigned nrows, set;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long posted = -1; /* the last step whose row may be freed */
static long freed = -1;  /* the last step whose row was freed */
static int done;

static void *collector(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (freed == posted && !done)
			pthread_cond_wait(&cond, &lock);
		if (freed == posted && done)
			break;
		long s = ++freed;
		pthread_mutex_unlock(&lock);
		for (unsigned i = 0; i < set; i++) {
			char **p = &rows[(size_t)(s % nrows) * set + i];

			free(*p);
			*p = NULL;
		}
		pthread_mutex_lock(&lock);
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: kvset [--steps N] [--set N] [--lag N] [--from KIB] [--grow KIB] "
	        "[--warmup N]\n"
	        "  --steps N   steps (default 200)\n"
	        "  --set N     buffers a step (default 12)\n"
	        "  --lag N     steps a buffer lives before the collector frees it (default 12)\n"
	        "  --from KIB  the first step's size (default 512)\n"
	        "  --grow KIB  what each step adds (default 8)\n"
	        "  --warmup N  steps before the timer (default 8)\n");
}

/* Parse argv into k. Returns 0, 1 (help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct kvset *k)
{
	const struct bench_opt opts[] = {
	        {"--steps", &k->steps, 1, 65536},   {"--set", &k->set, 1, 65536},
	        {"--lag", &k->lag, 1, 65536},       {"--from", &k->from_kib, 1, 65536},
	        {"--grow", &k->grow_kib, 0, 65536}, {"--warmup", &k->warmup, 0, 65536},
	};
	int rc = bench_parse_opts("kvset", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), usage);

	if (rc != 0)
		return rc;
	if (k->warmup >= k->steps) {
		fprintf(stderr, "kvset: --warmup (%u) must be below --steps (%u)\n", k->warmup,
		        k->steps);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kvset k = {
	        .steps = 200, .set = 12, .lag = 12, .from_kib = 512, .grow_kib = 8, .warmup = 8};
	size_t largest;
	char *src;
	pthread_t t;
	double t0 = 0, c0 = 0;
	long f0 = 0;
	uint64_t sum = 0;
	int rc = parse_args(argc, argv, &k);

	if (rc != 0)
		return rc < 0 ? 2 : 0;
	set = k.set;
	nrows = k.lag + 2;
	largest = ((size_t)k.from_kib + (size_t)k.grow_kib * (k.steps - 1)) * KIB;
	rows = calloc((size_t)nrows * set, sizeof(*rows));
	src = malloc(largest);
	if (rows == NULL || src == NULL) {
		fprintf(stderr, "kvset: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < largest; i++)
		src[i] = (char)(i * 131 + 7);
	if (pthread_create(&t, NULL, collector, NULL) != 0) {
		fprintf(stderr, "kvset: pthread_create failed\n");
		return 1;
	}
	for (unsigned s = 0; s < k.steps; s++) {
		size_t n = ((size_t)k.from_kib + (size_t)k.grow_kib * s) * KIB;

		if (s == k.warmup) {
			t0 = bench_now_s();
			c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
			f0 = bench_faults();
		}
		pthread_mutex_lock(&lock);
		/* this step's row held step s - nrows: wait until it was freed */
		while (freed < (long)s - (long)nrows)
			pthread_cond_wait(&cond, &lock);
		if ((long)s - (long)k.lag - 1 > posted) {
			posted = (long)s - (long)k.lag - 1;
			pthread_cond_broadcast(&cond);
		}
		pthread_mutex_unlock(&lock);
		for (unsigned i = 0; i < set; i++) {
			char *p = calloc(1, n);

			if (p == NULL) {
				fprintf(stderr, "kvset: calloc(%zu) failed\n", n);
				return 1;
			}
			if (p[n / 2] != 0) {
				fprintf(stderr, "kvset: calloc returned memory that is not zero\n");
				return 1;
			}
			memcpy(p, src, n);
			sum += (unsigned char)p[n - 1] + (unsigned char)p[n / 3];
			rows[(size_t)(s % nrows) * set + i] = p;
		}
	}
	double secs = bench_now_s() - t0;
	double cpu = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	long faults = bench_faults() - f0;
	unsigned timed = k.steps - k.warmup;

	pthread_mutex_lock(&lock);
	posted = (long)k.steps - 1;
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	free(src);
	free(rows);
	printf("kvset: %u buffers a step from %u KiB growing %u KiB a step, freed %u steps "
	       "late by another thread: %.3f ms a step (%.3f ms CPU), %.1f faults a step, peak RSS "
	       "%.1f MiB\n",
	       k.set, k.from_kib, k.grow_kib, k.lag, 1000 * secs / timed, 1000 * cpu / timed,
	       (double)faults / timed, (double)bench_peak_rss_kib() / 1024);
	printf("kvset steps=%u set=%u lag=%u from_kib=%u grow_kib=%u ms_step=%.4f cpu_ms_step=%.4f "
	       "faults_step=%.2f peak_rss_kib=%ld sum=%llu\n",
	       k.steps, k.set, k.lag, k.from_kib, k.grow_kib, 1000 * secs / timed,
	       1000 * cpu / timed, (double)faults / timed, bench_peak_rss_kib(),
	       (unsigned long long)sum);
	return 0;
}
