/*
 * workers.c - a persistent worker pool: a parallel matvec that gives the
 * same bits as the serial one, and a job that runs on every participant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scratch.h"

enum { ROWS = 1024, COLS = 1024 };

static void hello(void *ctx, unsigned participant, unsigned n)
{
	unsigned *seen = ctx;

	(void)n;
	__atomic_fetch_or(seen, 1u << participant, __ATOMIC_RELAXED);
}

int main(void)
{
	/* SCRATCH_THREADS and SCRATCH_SPIN decide the defaults. */
	scratch_workers_t *w = scratch_workers_new(NULL);
	float *a = malloc(sizeof(float) * ROWS * COLS), x[COLS], y[ROWS], ys[ROWS];
	struct scratch_workers_stats st = {.size = sizeof(st)};
	unsigned seen = 0, n;

	if (!w || !a) {
		perror("scratch_workers_new");
		return 1;
	}
	n = scratch_workers_size(w);
	for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
		a[i] = (float)(i % 13) * 0.25f - 1.0f;
	for (int j = 0; j < COLS; j++)
		x[j] = 1.0f / (float)(j + 1);

	scratch_matvec(w, a, x, y, ROWS, COLS);     /* rows spread over the pool */
	scratch_matvec(NULL, a, x, ys, ROWS, COLS); /* serial */
	scratch_workers_run(w, hello, &seen);
	scratch_workers_stats(w, &st);
	printf("%u participants, %llu dispatches, parallel == serial: %s\n", n,
	       (unsigned long long)st.dispatches, memcmp(y, ys, sizeof(y)) == 0 ? "yes" : "no");
	scratch_workers_destroy(w);
	free(a);
	return memcmp(y, ys, sizeof(y)) == 0 && seen == (1u << n) - 1 ? 0 : 1;
}
