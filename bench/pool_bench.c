/*
 * pool_bench.c - the pool microbenchmark (issue 2).
 *
 * Side by side in one run: ns per scratch_acquire+scratch_release pair on
 * a cache hit, and ns per allocate+free of glibc (its __libc_* entry
 * points) and jemalloc (mallocx/dallocx) for 64 KiB .. 64 MiB blocks that
 * are written once per use, with 1 and 2 threads.
 *
 *   bench/pool              the tables; with VALGRIND set in the environment,
 *                           also instructions per hit pair (callgrind)
 *   bench/pool --hit-loop N only N pooled hit pairs (what callgrind counts)
 */
#include "config.h"

#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#include "scratch.h"

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);

enum alloc_kind { POOL, GLIBC, JEMALLOC, NKINDS };
static const char *const kind_name[NKINDS] = {"scratch", "glibc", "jemalloc"};

static void *get(enum alloc_kind k, size_t size)
{
	switch (k) {
	case POOL:
		return scratch_acquire(size);
	case GLIBC:
		return __libc_malloc(size);
	default:
		return mallocx(size, 0);
	}
}

static void put(enum alloc_kind k, void *p)
{
	switch (k) {
	case POOL:
		scratch_release(p);
		break;
	case GLIBC:
		__libc_free(p);
		break;
	default:
		dallocx(p, 0);
		break;
	}
}

struct job {
	enum alloc_kind kind;
	size_t size;
	long iters;
	int write;
	pthread_barrier_t *start;
	double seconds;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	double t0;

	/* one warm-up pair, so the first-touch of a fresh pool is not timed
	 * (the other allocators get the same courtesy) */
	put(j->kind, get(j->kind, j->size));
	pthread_barrier_wait(j->start);
	t0 = bench_now_s();
	for (long i = 0; i < j->iters; i++) {
		char *p = get(j->kind, j->size);

		if (p == NULL)
			abort();
		if (j->write)
			memset(p, (int)i, j->size);
		else
			bench_keep(p);
		put(j->kind, p);
	}
	j->seconds = bench_now_s() - t0;
	return NULL;
}

/* ns per pair, averaged over threads that run at the same time */
static double measure(enum alloc_kind k, size_t size, long iters, int threads, int write)
{
	pthread_t t[2];
	struct job j[2];
	pthread_barrier_t start;
	double sum = 0;

	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){k, size, iters, write, &start, 0};
		pthread_create(&t[i], NULL, run_job, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += j[i].seconds;
	}
	pthread_barrier_destroy(&start);
	return sum / threads / (double)iters * 1e9;
}

static double best_of(int rounds, enum alloc_kind k, size_t size, long iters, int threads,
                      int write)
{
	double best = 1e300;

	for (int r = 0; r < rounds; r++) {
		double v = measure(k, size, iters, threads, write);

		if (v < best)
			best = v;
	}
	return best;
}

/* Instructions callgrind counts inside scratch_acquire and scratch_release
 * for a run of n hit pairs; -1 when valgrind cannot run. */
static double callgrind_count(const char *valgrind, const char *self, long n)
{
	char cmd[4096], line[512];
	double collected = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
	         "'%s' --tool=callgrind --callgrind-out-file=/dev/null "
	         "--toggle-collect=scratch_acquire --toggle-collect=scratch_release "
	         "'%s' --hit-loop %ld 2>&1",
	         valgrind, self, n);
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *c = strstr(line, "Collected :");

		if (c != NULL)
			collected = strtod(c + 11, NULL);
	}
	return pclose(f) == 0 ? collected : -1;
}

static void human(size_t size, char *buf, size_t len)
{
	if (size >= (1u << 20))
		snprintf(buf, len, "%zu MiB", size >> 20);
	else
		snprintf(buf, len, "%zu KiB", size >> 10);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {64 << 10, 1 << 20, 16 << 20, 64 << 20};
	double hit[NKINDS];

	if (argc == 3 && strcmp(argv[1], "--hit-loop") == 0) {
		long n = atol(argv[2]);

		put(POOL, get(POOL, 64 << 10));
		for (long i = 0; i < n; i++) {
			void *p = scratch_acquire(64 << 10);

			bench_keep(p);
			scratch_release(p);
		}
		return 0;
	}

	printf("== pool: allocate+free pair, same thread, no write (64 KiB; ns per pair, best of "
	       "5)\n");
	for (int k = 0; k < NKINDS; k++)
		hit[k] = best_of(5, (enum alloc_kind)k, 64 << 10, 2000000, 1, 0);
	printf("%-10s %10s %10s %10s   %s\n", "", "scratch", "glibc", "jemalloc", "target");
	printf("%-10s %10.1f %10.1f %10.1f   scratch <= 25 ns: %s\n", "ns/pair", hit[POOL],
	       hit[GLIBC], hit[JEMALLOC], hit[POOL] <= 25 ? "ok" : "MISS");
	printf("%-10s %10s %9.2fx %9.2fx   (other / scratch)\n", "ratio", "1.00x",
	       hit[GLIBC] / hit[POOL], hit[JEMALLOC] / hit[POOL]);
	if (getenv("VALGRIND") != NULL && *getenv("VALGRIND") != '\0') {
		char self[4096];
		ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		double a = -1, b = -1;

		if (len > 0) {
			self[len] = '\0';
			a = callgrind_count(getenv("VALGRIND"), self, 100000);
			b = callgrind_count(getenv("VALGRIND"), self, 200000);
		}
		if (a > 0 && b > a)
			printf("%-10s %10.1f %10s %10s   scratch <= 100 instructions (callgrind, "
			       "acquire+release only): %s\n",
			       "instr/pair", (b - a) / 100000.0, "", "",
			       (b - a) / 100000.0 <= 100 ? "ok" : "MISS");
		else
			printf("instr/pair: callgrind did not run\n");
	}
	printf("\n");

	printf("== pool: blocks written once per use (ns per allocate+write+free, best of 3)\n");
	printf("%-8s %3s %12s %12s %12s %9s %9s\n", "size", "thr", "scratch", "glibc", "jemalloc",
	       "glibc/s", "jemalloc/s");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int threads = 1; threads <= 2; threads++) {
			double v[NKINDS];
			char name[32];
			long iters = (long)((256u << 20) / sizes[i]) + 8;

			for (int k = 0; k < NKINDS; k++)
				v[k] = best_of(3, (enum alloc_kind)k, sizes[i], iters, threads, 1);
			human(sizes[i], name, sizeof(name));
			printf("%-8s %3d %12.0f %12.0f %12.0f %8.2fx %8.2fx\n", name, threads,
			       v[POOL], v[GLIBC], v[JEMALLOC], v[GLIBC] / v[POOL],
			       v[JEMALLOC] / v[POOL]);
		}
	}
	printf("(ratios above 1 mean scratch is faster; %s, %s and %s measured in this run)\n",
	       kind_name[POOL], kind_name[GLIBC], kind_name[JEMALLOC]);
	return 0;
}
