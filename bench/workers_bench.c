/*
 * workers_bench.c - the worker pool against OpenMP (libgomp) and against
 * spawning threads per call, side by side in one run:
 *   1. an empty dispatch round trip: scratch_workers_run with an empty job,
 *      an empty "#pragma omp parallel" region, pthread_create+join per call,
 *      and the pool with a spin budget of 0 (workers always asleep);
 *   2. a 4096x4096 float matvec: serial, scratch_matvec (run_rows) and an
 *      "omp parallel for" over the same row kernel (scratch_dot).
 * Every figure is the median of interleaved rounds (the machine is shared);
 * the ratios are printed next to the project's targets.
 *
 * Environment: BENCH_ROUNDS (default 5).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench.h"
#include "scratch.h"

#define MAX_ROUNDS 15
#define N          4096

/* Let spinning threads of the previous contender go to sleep, so that
 * they do not steal the CPUs of the next one. */
static void settle(void)
{
	usleep(50000);
}

/* ---------------------------------------------------------------------- */
/* Empty dispatch                                                         */
/* ---------------------------------------------------------------------- */

static void empty_job(void *ctx, unsigned participant, unsigned n)
{
	(void)ctx;
	(void)participant;
	(void)n;
}

static double pool_dispatch_ns(scratch_workers_t *w, int iters)
{
	double t0;

	for (int i = 0; i < iters / 10; i++) /* warm: workers awake */
		scratch_workers_run(w, empty_job, NULL);
	t0 = (double)bench_now_ns();
	for (int i = 0; i < iters; i++)
		scratch_workers_run(w, empty_job, NULL);
	return ((double)bench_now_ns() - t0) / iters;
}

static double omp_region_ns(unsigned threads, int iters)
{
#ifdef _OPENMP
	double t0;
	int sink = 0;

	for (int i = 0; i < iters / 10; i++) {
#pragma omp parallel num_threads(threads)
		{
			__atomic_fetch_add(&sink, 0, __ATOMIC_RELAXED);
		}
	}
	t0 = (double)bench_now_ns();
	for (int i = 0; i < iters; i++) {
#pragma omp parallel num_threads(threads)
		{
			__atomic_fetch_add(&sink, 0, __ATOMIC_RELAXED);
		}
	}
	return ((double)bench_now_ns() - t0) / iters;
#else
	(void)threads;
	(void)iters;
	return 0;
#endif
}

static void *empty_thread(void *arg)
{
	return arg;
}

/* What a program without a pool does: start the helpers, join them. */
static double spawn_ns(unsigned threads, int iters)
{
	pthread_t th[SCRATCH_WORKERS_MAX];
	double t0 = (double)bench_now_ns();

	for (int i = 0; i < iters; i++) {
		for (unsigned k = 0; k + 1 < threads; k++)
			pthread_create(&th[k], NULL, empty_thread, NULL);
		for (unsigned k = 0; k + 1 < threads; k++)
			pthread_join(th[k], NULL);
	}
	return ((double)bench_now_ns() - t0) / iters;
}

/* ---------------------------------------------------------------------- */
/* Matvec                                                                 */
/* ---------------------------------------------------------------------- */

static double matvec_ns(scratch_workers_t *w, const float *a, const float *x, float *y, int reps)
{
	double t0 = (double)bench_now_ns();

	for (int r = 0; r < reps; r++)
		scratch_matvec(w, a, x, y, N, N);
	return ((double)bench_now_ns() - t0) / reps;
}

static double omp_matvec_ns(unsigned threads, const float *a, const float *x, float *y, int reps)
{
#ifdef _OPENMP
	double t0 = (double)bench_now_ns();

	for (int r = 0; r < reps; r++) {
#pragma omp parallel for num_threads(threads) schedule(static)
		for (int i = 0; i < N; i++)
			y[i] = scratch_dot(a + (size_t)i * N, x, N);
	}
	return ((double)bench_now_ns() - t0) / reps;
#else
	(void)threads, (void)a, (void)x, (void)y, (void)reps;
	return 0;
#endif
}

int main(void)
{
	const char *env = getenv("BENCH_ROUNDS");
	int rounds = env ? atoi(env) : 5;
	struct scratch_workers_opts spin0 = {.threads = SCRATCH_WORKERS_DEFAULT, .spin = 0};
	scratch_workers_t *w = scratch_workers_new(NULL), *w0 = scratch_workers_new(&spin0);
	double d_pool[MAX_ROUNDS], d_omp[MAX_ROUNDS], d_spawn[MAX_ROUNDS], d_spin0[MAX_ROUNDS];
	double m_ser[MAX_ROUNDS], m_pool[MAX_ROUNDS], m_omp[MAX_ROUNDS];
	double pool, omp, spawn, zero, ser, mpool, momp;
	float *a, *x, *y, *ys;
	unsigned p;
	int have_omp = 0;

#ifdef _OPENMP
	have_omp = 1;
#endif
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	if (!w || !w0) {
		perror("scratch_workers_new");
		return 1;
	}
	p = scratch_workers_size(w);
	a = malloc(sizeof(float) * N * N);
	x = malloc(sizeof(float) * N);
	y = malloc(sizeof(float) * N);
	ys = malloc(sizeof(float) * N);
	if (!a || !x || !y || !ys)
		return 1;
	for (size_t i = 0; i < (size_t)N * N; i++)
		a[i] = (float)(i % 17) * 0.125f - 1.0f;
	for (int j = 0; j < N; j++)
		x[j] = 1.0f / (float)(j + 1);

	for (int r = 0; r < rounds; r++) {
		d_pool[r] = pool_dispatch_ns(w, 20000);
		settle();
		d_omp[r] = omp_region_ns(p, 20000);
		settle();
		d_spawn[r] = spawn_ns(p, 1000);
		d_spin0[r] = pool_dispatch_ns(w0, 2000);
		settle();
		m_ser[r] = matvec_ns(NULL, a, x, ys, 5);
		m_pool[r] = matvec_ns(w, a, x, y, 5);
		settle();
		m_omp[r] = omp_matvec_ns(p, a, x, y, 5);
		settle();
	}
	pool = bench_median(d_pool, rounds);
	omp = bench_median(d_omp, rounds);
	spawn = bench_median(d_spawn, rounds);
	zero = bench_median(d_spin0, rounds);
	ser = bench_median(m_ser, rounds);
	mpool = bench_median(m_pool, rounds);
	momp = bench_median(m_omp, rounds);

	printf("== worker pool: empty dispatch round trip, %u participants (ns per call, "
	       "median of %d rounds)\n",
	       p, rounds);
	printf("%-28s %10s %10s   %s\n", "", "ns/call", "vs pool", "target");
	printf("%-28s %10.0f %9.2fx\n", "scratch_workers_run", pool, 1.0);
	if (have_omp)
		printf("%-28s %10.0f %9.2fx   >= 1.50x (pool faster than OpenMP): %s\n",
		       "omp parallel (libgomp)", omp, omp / pool,
		       omp / pool >= 1.5 ? "ok" : "MISS");
	else
		printf("%-28s %10s\n", "omp parallel (libgomp)", "no OpenMP");
	printf("%-28s %10.0f %9.2fx\n", "pthread_create+join", spawn, spawn / pool);
	printf("%-28s %10.0f %9.2fx   (workers asleep at every dispatch)\n", "pool, SCRATCH_SPIN=0",
	       zero, zero / pool);
	printf("\n== worker pool: %dx%d float matvec, %u participants (ms per matvec, "
	       "median of %d rounds)\n",
	       N, N, p, rounds);
	printf("%-28s %10s %10s   %s\n", "", "ms", "speedup", "target");
	printf("%-28s %10.2f %9.2fx\n", "serial", ser / 1e6, 1.0);
	printf("%-28s %10.2f %9.2fx\n", "scratch_matvec (run_rows)", mpool / 1e6, ser / mpool);
	if (have_omp) {
		printf("%-28s %10.2f %9.2fx\n", "omp parallel for", momp / 1e6, ser / momp);
		printf("%-28s %10s %9.2fx   >= 1.00x (speedup no worse than OpenMP's): %s\n",
		       "pool speedup / OpenMP's", "", (ser / mpool) / (ser / momp),
		       (ser / mpool) / (ser / momp) >= 1.0 ? "ok" : "MISS");
	}
	printf("(parallel == serial bit for bit: %s)\n",
	       memcmp(y, ys, sizeof(float) * N) == 0 ? "yes" : "no");
	scratch_workers_destroy(w);
	scratch_workers_destroy(w0);
	free(a), free(x), free(y), free(ys);
	return 0;
}
