/*
 * matvec.c - the row-parallel matvec and the dot product it is built on.
 *
 * Owns scratch_dot, scratch_matvec and scratch_matvec2 (see scratch.h).
 * Rows are shared out with scratch_workers_run_rows(); each row is one dot
 * product summed in a fixed order, so the parallel result is bit-identical
 * to the serial loop whatever the number of participants.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* Eight lanes as two 4-float vectors: lane k holds the partial sum over
 * j = k mod 8. Vector lanes round exactly as scalar operations do, so this
 * is the documented order, and eight independent sums keep the loop
 * memory-bound rather than bound by the latency of one add chain. */
typedef float v4f __attribute__((vector_size(16)));

struct lanes {
	v4f lo, hi;
};

static inline v4f load4(const float *p)
{
	v4f v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void lanes_add(struct lanes *s, const float *a, const float *x)
{
	s->lo += load4(a) * load4(x);
	s->hi += load4(a + 4) * load4(x + 4);
}

static inline float lanes_fold(const struct lanes *s)
{
	return ((s->lo[0] + s->lo[1]) + (s->lo[2] + s->lo[3])) +
	       ((s->hi[0] + s->hi[1]) + (s->hi[2] + s->hi[3]));
}

float scratch_dot(const float *a, const float *x, size_t n)
{
	struct lanes s = {{0}, {0}};
	size_t j = 0;
	float t;

	for (; j + 8 <= n; j += 8)
		lanes_add(&s, a + j, x + j);
	t = lanes_fold(&s);
	for (; j < n; j++)
		t += a[j] * x[j];
	return t;
}

/* Two dot products over one row, in the same order as scratch_dot. */
static void dot2(const float *a, const float *x0, const float *x1, size_t n, float *ret0,
                 float *ret1)
{
	struct lanes s0 = {{0}, {0}}, s1 = {{0}, {0}};
	size_t j = 0;
	float t0, t1;

	for (; j + 8 <= n; j += 8) {
		lanes_add(&s0, a + j, x0 + j);
		lanes_add(&s1, a + j, x1 + j);
	}
	t0 = lanes_fold(&s0);
	t1 = lanes_fold(&s1);
	for (; j < n; j++) {
		t0 += a[j] * x0[j];
		t1 += a[j] * x1[j];
	}
	*ret0 = t0;
	*ret1 = t1;
}

struct matvec {
	const float *a, *x0, *x1;
	float *y0, *y1;
	size_t cols;
};

static void matvec_rows(void *ctx, size_t begin, size_t end, unsigned participant)
{
	const struct matvec *m = ctx;

	(void)participant;
	for (size_t i = begin; i < end; i++)
		m->y0[i] = scratch_dot(m->a + i * m->cols, m->x0, m->cols);
}

static void matvec2_rows(void *ctx, size_t begin, size_t end, unsigned participant)
{
	const struct matvec *m = ctx;

	(void)participant;
	for (size_t i = begin; i < end; i++)
		dot2(m->a + i * m->cols, m->x0, m->x1, m->cols, &m->y0[i], &m->y1[i]);
}

static bool matvec_args_ok(const void *a, const void *x, const void *y, size_t rows, size_t cols)
{
	size_t total;

	if (__builtin_mul_overflow(rows, cols, &total) || total > SIZE_MAX / sizeof(float))
		return false;
	return rows == 0 || (a && y && (cols == 0 || x));
}

int scratch_matvec(scratch_workers_t *w, const float *a, const float *x, float *y, size_t rows,
                   size_t cols)
{
	struct matvec m = {.a = a, .x0 = x, .y0 = y, .cols = cols};

	if (!matvec_args_ok(a, x, y, rows, cols))
		return -EINVAL;
	return scratch_workers_run_rows(w, rows, 0, matvec_rows, &m);
}

int scratch_matvec2(scratch_workers_t *w, const float *a, const float *x0, const float *x1,
                    float *y0, float *y1, size_t rows, size_t cols)
{
	struct matvec m = {.a = a, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1, .cols = cols};

	if (!matvec_args_ok(a, x0, y0, rows, cols) || !matvec_args_ok(a, x1, y1, rows, cols))
		return -EINVAL;
	return scratch_workers_run_rows(w, rows, 0, matvec2_rows, &m);
}
