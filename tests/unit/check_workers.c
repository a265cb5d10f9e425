/*
 * check_workers.c - the worker pool: dispatch, sleeping, nesting,
 * concurrency, destruction, row spaces and the bit-identical matvecs.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "scratch.h"
#include "suites.h"

static scratch_workers_t *pool_of(int threads, int spin)
{
	struct scratch_workers_opts o = {.threads = threads, .spin = spin, .name = "ckw"};
	scratch_workers_t *w = scratch_workers_new(&o);

	ck_assert_ptr_nonnull(w);
	return w;
}

/* ---------------------------------------------------------------------- */
/* One call: every participant once, distinct indices                     */
/* ---------------------------------------------------------------------- */

struct tally {
	unsigned calls;
	unsigned n_seen;
	unsigned bad_n;
	uint64_t mask;
};

static void tally_job(void *ctx, unsigned p, unsigned n)
{
	struct tally *t = ctx;

	__atomic_fetch_add(&t->calls, 1, __ATOMIC_RELAXED);
	if (p >= n || p >= 64)
		__atomic_fetch_add(&t->bad_n, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_or(&t->mask, (uint64_t)1 << p, __ATOMIC_RELAXED);
	__atomic_store_n(&t->n_seen, n, __ATOMIC_RELAXED);
}

/* Run once and check: exactly n calls, indices distinct and covering [0, n). */
static void run_and_check(scratch_workers_t *w, unsigned want_n)
{
	struct tally t = {0};

	ck_assert_int_eq(scratch_workers_run(w, tally_job, &t), 0);
	ck_assert_uint_eq(t.calls, want_n);
	ck_assert_uint_eq(t.n_seen, want_n);
	ck_assert_uint_eq(t.bad_n, 0);
	ck_assert_uint_eq(t.mask, want_n == 64 ? ~0ull : ((uint64_t)1 << want_n) - 1);
}

START_TEST(test_hundred_runs)
{
	scratch_workers_t *w = pool_of(4, SCRATCH_WORKERS_DEFAULT);
	struct scratch_workers_stats st = {.size = sizeof(st)};

	ck_assert_uint_eq(scratch_workers_size(w), 4);
	for (int i = 0; i < 100; i++)
		run_and_check(w, 4);
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.workers, 3);
	ck_assert_uint_eq(st.dispatches, 100);
	ck_assert_uint_eq(st.inline_runs, 0);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

START_TEST(test_spin0_parks_never_misses)
{
	scratch_workers_t *w = pool_of(3, 0);
	struct scratch_workers_stats st = {.size = sizeof(st)};

	for (int i = 0; i < 50; i++) {
		run_and_check(w, 3);
		usleep(i % 5 == 0 ? 3000 : 200);
	}
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.spin, 0);
	ck_assert_uint_eq(st.dispatches, 50);
	/* With no spin budget a worker sleeps after every job: at least the
	 * waits after the longer sleeps were real futex waits, and each
	 * dispatch to sleepers needed a wake. */
	ck_assert_uint_ge(st.parks, 10);
	ck_assert_uint_ge(st.wakes, 10);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

START_TEST(test_spinners_need_no_wake)
{
	/* A budget far longer than the test: workers never sleep, so no
	 * dispatch may make a wake call. */
	scratch_workers_t *w = pool_of(2, 1 << 26);
	struct scratch_workers_stats st = {.size = sizeof(st)};

	for (int i = 0; i < 100; i++)
		run_and_check(w, 2);
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.dispatches, 100);
	ck_assert_uint_eq(st.parks, 0);
	ck_assert_uint_eq(st.wakes, 0);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

START_TEST(test_serial_pools)
{
	scratch_workers_t *w = pool_of(0, SCRATCH_WORKERS_DEFAULT);
	scratch_workers_t *w1 = pool_of(1, SCRATCH_WORKERS_DEFAULT);
	struct scratch_workers_stats st = {.size = sizeof(st)};

	ck_assert_uint_eq(scratch_workers_size(w), 1);
	ck_assert_uint_eq(scratch_workers_size(w1), 1);
	ck_assert_uint_eq(scratch_workers_size(NULL), 1);
	run_and_check(w, 1);
	run_and_check(w1, 1);
	run_and_check(NULL, 1);
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.workers, 0);
	ck_assert_uint_eq(st.dispatches, 0);
	ck_assert_uint_eq(st.inline_runs, 1);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
	ck_assert_int_eq(scratch_workers_destroy(w1), 0);
	ck_assert_int_eq(scratch_workers_destroy(NULL), 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Sizes from the environment and the options                             */
/* ---------------------------------------------------------------------- */

static unsigned usable_cpus(void)
{
	cpu_set_t set;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	return (unsigned)CPU_COUNT(&set);
}

START_TEST(test_env_threads)
{
	scratch_workers_t *w;
	struct scratch_workers_stats st = {.size = sizeof(st)};

	setenv("SCRATCH_THREADS", "3", 1);
	setenv("SCRATCH_SPIN", "17", 1);
	w = scratch_workers_new(NULL);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(scratch_workers_size(w), 3);
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.spin, 17);
	run_and_check(w, 3);
	scratch_workers_destroy(w);

	setenv("SCRATCH_THREADS", "1", 1);
	w = scratch_workers_new(NULL);
	ck_assert_uint_eq(scratch_workers_size(w), 1);
	scratch_workers_destroy(w);

	setenv("SCRATCH_THREADS", "0", 1);
	w = scratch_workers_new(NULL);
	ck_assert_uint_eq(scratch_workers_size(w), 1);
	scratch_workers_destroy(w);

	/* A bad value warns once, with what the variable takes and no control
	 * character, and keeps the default: ncpu, at most 9. */
	setenv("SCRATCH_THREADS", "lo\x1b[2Jts", 1);
	setenv("SCRATCH_SPIN", "-5", 1);
	{
		char text[512];
		int fds[2], saved = dup(STDERR_FILENO);
		ssize_t n;

		ck_assert_int_ge(saved, 0);
		ck_assert_int_eq(pipe(fds), 0); /* the two lines fit in its buffer */
		ck_assert_int_eq(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
		close(fds[1]);
		w = scratch_workers_new(NULL);
		scratch_workers_destroy(w);
		w = scratch_workers_new(NULL); /* no second warning */
		ck_assert_int_eq(dup2(saved, STDERR_FILENO), STDERR_FILENO);
		close(saved);
		n = read(fds[0], text, sizeof(text) - 1);
		close(fds[0]);
		ck_assert_int_gt(n, 0);
		text[n] = '\0';
		ck_assert_str_eq(
		        text,
		        "scratch: invalid value for SCRATCH_THREADS: 'lo?[2Jts' (expected a "
		        "whole number from 0 to 256), using the default\n"
		        "scratch: invalid value for SCRATCH_SPIN: '-5' (expected a whole number "
		        "from 0 to 2147483647), using the default\n");
	}
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_ge(scratch_workers_size(w), 1);
	ck_assert_uint_le(scratch_workers_size(w), 9);
	ck_assert_uint_eq(scratch_workers_size(w), usable_cpus() > 9 ? 9 : usable_cpus());
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	ck_assert_uint_eq(st.spin, 4000);
	scratch_workers_destroy(w);

	/* Explicit options win over the environment. */
	setenv("SCRATCH_THREADS", "1", 1);
	w = pool_of(2, 5);
	ck_assert_uint_eq(scratch_workers_size(w), 2);
	scratch_workers_destroy(w);
	unsetenv("SCRATCH_THREADS");
	unsetenv("SCRATCH_SPIN");
}
END_TEST

START_TEST(test_bad_opts)
{
	struct scratch_workers_opts o = {.threads = -7, .spin = 0};

	errno = 0;
	ck_assert_ptr_null(scratch_workers_new(&o));
	ck_assert_int_eq(errno, EINVAL);
	o.threads = SCRATCH_WORKERS_MAX + 1;
	ck_assert_ptr_null(scratch_workers_new(&o));
	o.threads = 2;
	o.spin = -3;
	ck_assert_ptr_null(scratch_workers_new(&o));
	ck_assert_int_eq(scratch_workers_run(NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(scratch_workers_run_rows(NULL, 5, 0, NULL, NULL), -EINVAL);
	ck_assert_int_eq(scratch_workers_run_many(NULL, NULL, 2), -EINVAL);
	ck_assert_int_eq(scratch_workers_stats(NULL, NULL), -EINVAL);
}
END_TEST

/* Worker threads carry the prefix and their number in their names. */
START_TEST(test_thread_names_and_pinning)
{
	struct scratch_workers_opts o = {.threads = 3, .spin = 0, .pin = true, .name = "cknm"};
	scratch_workers_t *w = scratch_workers_new(&o);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int named = 0;
	unsigned pinned_mask = 0;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "cknm-", 5) == 0) {
			cpu_set_t set;

			named++;
			/* pinned: exactly one CPU, the (i+1)-th usable one */
			ck_assert_int_eq(sched_getaffinity(atoi(e->d_name), sizeof(set), &set), 0);
			ck_assert_int_eq(CPU_COUNT(&set), 1);
			pinned_mask |= 1u << (atoi(comm + 5) % 32);
		}
		fclose(f);
	}
	closedir(d);
	ck_assert_int_eq(named, 2);
	ck_assert_uint_eq(pinned_mask, 0x6); /* "cknm-1" and "cknm-2" */
	run_and_check(w, 3);
	scratch_workers_destroy(w);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Nested and concurrent dispatch, destruction                            */
/* ---------------------------------------------------------------------- */

struct nest {
	scratch_workers_t *w;
	struct tally inner[64];
	unsigned outer_calls;
	int rc[64];
	int destroy_rc[64];
};

static void nested_job(void *ctx, unsigned p, unsigned n)
{
	struct nest *ns = ctx;

	(void)n;
	__atomic_fetch_add(&ns->outer_calls, 1, __ATOMIC_RELAXED);
	/* Each participant dispatches again on the same pool: that call runs
	 * inline on this thread as participant 0 of 1. */
	ns->rc[p] = scratch_workers_run(ns->w, tally_job, &ns->inner[p]);
	ns->destroy_rc[p] = scratch_workers_destroy(ns->w);
}

START_TEST(test_nested_dispatch)
{
	struct nest ns = {0};
	struct scratch_workers_stats st = {.size = sizeof(st)};
	unsigned n;

	ns.w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	n = scratch_workers_size(ns.w);
	for (int round = 0; round < 20; round++) {
		memset(ns.inner, 0, sizeof(ns.inner));
		ns.outer_calls = 0;
		ck_assert_int_eq(scratch_workers_run(ns.w, nested_job, &ns), 0);
		ck_assert_uint_eq(ns.outer_calls, n);
		for (unsigned p = 0; p < n; p++) {
			ck_assert_int_eq(ns.rc[p], 0);
			ck_assert_int_eq(ns.destroy_rc[p], -EBUSY);
			ck_assert_uint_eq(ns.inner[p].calls, 1);
			ck_assert_uint_eq(ns.inner[p].n_seen, 1);
			ck_assert_uint_eq(ns.inner[p].mask, 1);
		}
	}
	ck_assert_int_eq(scratch_workers_stats(ns.w, &st), 0);
	ck_assert_uint_eq(st.dispatches, 20);
	ck_assert_uint_eq(st.inline_runs, 20 * n);
	/* The pool still works normally after the nesting. */
	run_and_check(ns.w, n);
	ck_assert_int_eq(scratch_workers_destroy(ns.w), 0);
}
END_TEST

/* Nested row dispatch from inside a row job covers its rows too. */
struct nest_rows {
	scratch_workers_t *w;
	unsigned hits[40][16];
};

static void inner_rows(void *ctx, size_t b, size_t e, unsigned p)
{
	unsigned *row = ctx;

	(void)p;
	for (size_t i = b; i < e; i++)
		row[i]++;
}

static void outer_rows(void *ctx, size_t b, size_t e, unsigned p)
{
	struct nest_rows *nr = ctx;

	(void)p;
	for (size_t i = b; i < e; i++)
		ck_assert_int_eq(scratch_workers_run_rows(nr->w, 16, 3, inner_rows, nr->hits[i]),
		                 0);
}

START_TEST(test_nested_rows)
{
	struct nest_rows nr = {0};
	unsigned wrong = 0;

	nr.w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	ck_assert_int_eq(scratch_workers_run_rows(nr.w, 40, 1, outer_rows, &nr), 0);
	for (int i = 0; i < 40; i++)
		for (int j = 0; j < 16; j++)
			wrong += nr.hits[i][j] != 1;
	ck_assert_uint_eq(wrong, 0);
	scratch_workers_destroy(nr.w);
}
END_TEST

struct racer {
	scratch_workers_t *w;
	int runs;
	int failures;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < r->runs; i++) {
		struct tally t = {0};

		if (scratch_workers_run(r->w, tally_job, &t) != 0 || t.calls != t.n_seen ||
		    t.bad_n != 0 || t.mask != ((uint64_t)1 << t.n_seen) - 1)
			r->failures++;
	}
	return NULL;
}

START_TEST(test_concurrent_dispatch)
{
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	struct racer r[3];
	pthread_t th[3];
	struct scratch_workers_stats st = {.size = sizeof(st)};

	for (int i = 0; i < 3; i++) {
		r[i] = (struct racer){.w = w, .runs = 200};
		ck_assert_int_eq(pthread_create(&th[i], NULL, racer_main, &r[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].failures, 0);
	}
	ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
	/* Every call either went to the workers or ran inline, never both. */
	ck_assert_uint_eq(st.dispatches + st.inline_runs, 600);
	ck_assert_uint_gt(st.dispatches, 0);
	run_and_check(w, 3);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

START_TEST(test_destroy_while_parked)
{
	for (int round = 0; round < 5; round++) {
		scratch_workers_t *w = pool_of(3, 0);
		struct scratch_workers_stats st = {.size = sizeof(st)};

		run_and_check(w, 3);
		/* Wait until both workers are asleep in the futex. */
		for (int i = 0; i < 2000; i++) {
			ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
			if (st.parks >= 2)
				break;
			usleep(1000);
		}
		ck_assert_uint_ge(st.parks, 2);
		ck_assert_int_eq(scratch_workers_destroy(w), 0);
	}
}
END_TEST

START_TEST(test_destroy_while_spinning)
{
	for (int round = 0; round < 5; round++) {
		scratch_workers_t *w = pool_of(3, 1 << 26);

		run_and_check(w, 3);
		ck_assert_int_eq(scratch_workers_destroy(w), 0);
	}
	/* and right after creation, before a worker ever ran */
	ck_assert_int_eq(scratch_workers_destroy(pool_of(3, 0)), 0);
	ck_assert_int_eq(scratch_workers_destroy(pool_of(3, 1 << 26)), 0);
}
END_TEST

/* A child of fork has no workers: the pool runs serially there. */
START_TEST(test_fork_child_runs_serially)
{
	scratch_workers_t *w = pool_of(3, 0);
	int status;
	pid_t pid;

	run_and_check(w, 3);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct tally t = {0};
		int ok = scratch_workers_run(w, tally_job, &t) == 0 && t.calls == 1 &&
		         t.n_seen == 1 && t.mask == 1 && scratch_workers_destroy(w) == 0;

		_exit(ok ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	run_and_check(w, 3);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

/* A dispatcher that forks inside its own share: the child returns from the
 * dispatch (its workers stayed with the parent) instead of waiting for them
 * forever, and the pool runs serially there afterwards. */
struct fork_in_job {
	pid_t child;
	int in_child;
};

static void fork_in_job(void *ctx, unsigned participant, unsigned n)
{
	struct fork_in_job *f = ctx;

	if (participant != n - 1) {
		usleep(100000); /* the workers are still busy when the caller forks */
		return;
	}
	f->child = fork();
	if (f->child == 0) {
		f->in_child = 1;
		alarm(20); /* a hang here fails the test instead of stalling it */
	}
}

START_TEST(test_fork_inside_own_share)
{
	scratch_workers_t *w = pool_of(2, 10);
	struct fork_in_job f = {0};
	int status;

	ck_assert_int_eq(scratch_workers_run(w, fork_in_job, &f), 0);
	if (f.in_child) {
		struct tally t = {0};
		int ok = scratch_workers_run(w, tally_job, &t) == 0 && t.calls == 1 &&
		         scratch_workers_destroy(w) == 0;

		_exit(ok ? 0 : 1);
	}
	ck_assert_int_ne(f.child, -1);
	ck_assert_int_eq(waitpid(f.child, &status, 0), f.child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	run_and_check(w, 2);
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

/* A pool serving a job inline refuses to be destroyed from inside it. */
struct destroy_inside {
	scratch_workers_t *w;
	int rc;
};

static void destroy_inside(void *ctx, unsigned participant, unsigned n)
{
	struct destroy_inside *d = ctx;

	(void)participant;
	(void)n;
	d->rc = scratch_workers_destroy(d->w);
}

START_TEST(test_destroy_inside_inline_job)
{
	struct destroy_inside d = {.w = pool_of(1, 0), .rc = 1}; /* serial: every job inline */

	ck_assert_uint_eq(scratch_workers_size(d.w), 1);
	ck_assert_int_eq(scratch_workers_run(d.w, destroy_inside, &d), 0);
	ck_assert_int_eq(d.rc, -EBUSY);
	ck_assert_int_eq(scratch_workers_destroy(d.w), 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Row spaces                                                             */
/* ---------------------------------------------------------------------- */

struct cover {
	unsigned *hits;
	size_t grain;
	unsigned too_big;
	uint64_t participants;
};

static void cover_rows(void *ctx, size_t b, size_t e, unsigned p)
{
	struct cover *c = ctx;

	if (e <= b || e - b > c->grain)
		__atomic_fetch_add(&c->too_big, 1, __ATOMIC_RELAXED);
	for (size_t i = b; i < e; i++)
		__atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_or(&c->participants, (uint64_t)1 << p, __ATOMIC_RELAXED);
}

/* Row counts near SIZE_MAX: the last grain ends at rows, never wraps. */
struct span_sum {
	size_t covered;
	unsigned bad;
};

static void sum_span(void *ctx, size_t b, size_t e, unsigned p)
{
	struct span_sum *s = ctx;

	(void)p;
	if (e <= b)
		__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&s->covered, e - b, __ATOMIC_RELAXED);
}

START_TEST(test_rows_near_size_max)
{
	scratch_workers_t *w = pool_of(2, 0);
	size_t rows = SIZE_MAX - 256;

	for (size_t grain = rows - 1; grain >= rows - 3; grain--) {
		struct span_sum s = {0};

		ck_assert_int_eq(scratch_workers_run_rows(w, rows, grain, sum_span, &s), 0);
		ck_assert_uint_eq(s.bad, 0);
		ck_assert_uint_eq(s.covered, rows);
		memset(&s, 0, sizeof(s));
		ck_assert_int_eq(scratch_workers_run_rows(NULL, rows, grain, sum_span, &s), 0);
		ck_assert_uint_eq(s.bad, 0);
		ck_assert_uint_eq(s.covered, rows);
	}
	ck_assert_int_eq(scratch_workers_destroy(w), 0);
}
END_TEST

START_TEST(test_rows_cover_once)
{
	static const size_t grains[] = {0, 1, 7, 64, 1000, 5000};
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	unsigned *hits = calloc(1000, sizeof(*hits));
	unsigned wrong = 0;

	for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++) {
		struct cover c = {.hits = hits, .grain = grains[g] ? grains[g] : 1000};

		memset(hits, 0, 1000 * sizeof(*hits));
		ck_assert_int_eq(scratch_workers_run_rows(w, 1000, grains[g], cover_rows, &c), 0);
		ck_assert_uint_eq(c.too_big, 0);
		for (int i = 0; i < 1000; i++)
			wrong += hits[i] != 1;
		ck_assert_uint_eq(wrong, 0);
		ck_assert_uint_eq(c.participants & ~7ull, 0);
	}
	/* zero rows: no call at all */
	ck_assert_int_eq(scratch_workers_run_rows(w, 0, 0, cover_rows, NULL), 0);
	free(hits);
	scratch_workers_destroy(w);
}
END_TEST

START_TEST(test_many_parts_own_indices)
{
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	unsigned h0[10] = {0}, h1[1] = {0}, h2[333] = {0};
	struct cover c0 = {.hits = h0, .grain = 3}, c1 = {.hits = h1, .grain = 1},
	             c2 = {.hits = h2, .grain = 333};
	struct scratch_rows_part parts[] = {
	        {cover_rows, &c0, 10, 3},
	        {cover_rows, NULL, 0, 0},
	        {cover_rows, &c1, 1, 0},
	        {cover_rows, &c2, 333, 0},
	};

	ck_assert_int_eq(scratch_workers_run_many(w, parts, 4), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(h0[i], 1);
	ck_assert_uint_eq(h1[0], 1);
	for (int i = 0; i < 333; i++)
		ck_assert_uint_eq(h2[i], 1);
	ck_assert_uint_eq(c0.too_big + c1.too_big + c2.too_big, 0);
	ck_assert_int_eq(scratch_workers_run_many(w, parts, 0), 0);
	parts[1].rows = 4; /* rows without a function */
	parts[1].fn = NULL;
	ck_assert_int_eq(scratch_workers_run_many(w, parts, 4), -EINVAL);
	scratch_workers_destroy(w);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Matvec                                                                 */
/* ---------------------------------------------------------------------- */

/* The documented order, written out with scalars. */
static float ref_dot(const float *a, const float *x, size_t n)
{
	float s[8] = {0}, t;
	size_t j = 0;

	for (; j + 8 <= n; j += 8)
		for (int k = 0; k < 8; k++)
			s[k] += a[j + k] * x[j + k];
	t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
	for (; j < n; j++)
		t += a[j] * x[j];
	return t;
}

static void fill(float *v, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = (float)(int32_t)seed / 2147483648.0f;
	}
}

START_TEST(test_matvec_bit_identical)
{
	static const size_t shapes[][2] = {{1, 1}, {7, 13}, {257, 1031}, {64, 8}, {3, 0}};
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		size_t rows = shapes[s][0], cols = shapes[s][1];
		float *a = malloc(rows * cols * sizeof(float) + 1),
		      *x = malloc(cols * sizeof(float) + 1);
		float *y = malloc(rows * sizeof(float)), *ys = malloc(rows * sizeof(float));
		float *yr = malloc(rows * sizeof(float));

		fill(a, rows * cols, 1 + (uint32_t)s);
		fill(x, cols, 99);
		for (size_t i = 0; i < rows; i++)
			yr[i] = ref_dot(a + i * cols, x, cols);
		ck_assert_int_eq(scratch_matvec(w, a, x, y, rows, cols), 0);
		ck_assert_int_eq(scratch_matvec(NULL, a, x, ys, rows, cols), 0);
		ck_assert_int_eq(memcmp(y, yr, rows * sizeof(float)), 0);
		ck_assert_int_eq(memcmp(ys, yr, rows * sizeof(float)), 0);
		free(a), free(x), free(y), free(ys), free(yr);
	}
	ck_assert_int_eq(scratch_matvec(w, NULL, NULL, NULL, 3, 3), -EINVAL);
	ck_assert_int_eq(scratch_matvec(w, NULL, NULL, NULL, SIZE_MAX / 2, 4), -EINVAL);
	scratch_workers_destroy(w);
}
END_TEST

START_TEST(test_matvec2_is_two_singles)
{
	const size_t rows = 301, cols = 517;
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	float *a = malloc(rows * cols * sizeof(float));
	float x0[517], x1[517], y0[301], y1[301], z0[301], z1[301];

	fill(a, rows * cols, 5);
	fill(x0, cols, 6);
	fill(x1, cols, 7);
	ck_assert_int_eq(scratch_matvec2(w, a, x0, x1, y0, y1, rows, cols), 0);
	ck_assert_int_eq(scratch_matvec(w, a, x0, z0, rows, cols), 0);
	ck_assert_int_eq(scratch_matvec(w, a, x1, z1, rows, cols), 0);
	ck_assert_int_eq(memcmp(y0, z0, sizeof(y0)), 0);
	ck_assert_int_eq(memcmp(y1, z1, sizeof(y1)), 0);
	ck_assert_int_eq(scratch_matvec2(NULL, a, x0, x1, z0, z1, rows, cols), 0);
	ck_assert_int_eq(memcmp(y0, z0, sizeof(y0)), 0);
	ck_assert_int_eq(memcmp(y1, z1, sizeof(y1)), 0);
	free(a);
	scratch_workers_destroy(w);
}
END_TEST

/* Three matvecs in one run_many dispatch equal three serial ones. */
struct mv_part {
	const float *a, *x;
	float *y;
	size_t cols;
};

static void mv_part_rows(void *ctx, size_t b, size_t e, unsigned p)
{
	const struct mv_part *m = ctx;

	(void)p;
	for (size_t i = b; i < e; i++)
		m->y[i] = scratch_dot(m->a + i * m->cols, m->x, m->cols);
}

START_TEST(test_run_many_bit_identical)
{
	static const size_t rows[3] = {129, 64, 200}, cols[3] = {300, 77, 1};
	scratch_workers_t *w = pool_of(3, SCRATCH_WORKERS_DEFAULT);
	struct mv_part m[3];
	struct scratch_rows_part parts[3];
	float *ref[3];

	for (int k = 0; k < 3; k++) {
		float *a = malloc(rows[k] * cols[k] * sizeof(float));
		float *x = malloc(cols[k] * sizeof(float));

		fill(a, rows[k] * cols[k], 10 + (uint32_t)k);
		fill(x, cols[k], 20 + (uint32_t)k);
		m[k] = (struct mv_part){a, x, calloc(rows[k], sizeof(float)), cols[k]};
		ref[k] = malloc(rows[k] * sizeof(float));
		ck_assert_int_eq(scratch_matvec(NULL, a, x, ref[k], rows[k], cols[k]), 0);
		parts[k] = (struct scratch_rows_part){mv_part_rows, &m[k], rows[k], k == 1 ? 5 : 0};
	}
	ck_assert_int_eq(scratch_workers_run_many(w, parts, 3), 0);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(memcmp(m[k].y, ref[k], rows[k] * sizeof(float)), 0);
		free((void *)m[k].a), free((void *)m[k].x), free(m[k].y), free(ref[k]);
	}
	scratch_workers_destroy(w);
}
END_TEST

Suite *workers_suite(void)
{
	Suite *s = suite_create("workers");
	TCase *core = tcase_create("core");
	TCase *sleep = tcase_create("sleep");
	TCase *misuse = tcase_create("misuse");
	TCase *rows = tcase_create("rows");

	tcase_set_timeout(core, 60);
	tcase_add_test(core, test_hundred_runs);
	tcase_add_test(core, test_serial_pools);
	tcase_add_test(core, test_env_threads);
	tcase_add_test(core, test_thread_names_and_pinning);
	suite_add_tcase(s, core);

	tcase_set_timeout(sleep, 60);
	tcase_add_test(sleep, test_spin0_parks_never_misses);
	tcase_add_test(sleep, test_spinners_need_no_wake);
	tcase_add_test(sleep, test_destroy_while_parked);
	tcase_add_test(sleep, test_destroy_while_spinning);
	suite_add_tcase(s, sleep);

	tcase_set_timeout(misuse, 60);
	tcase_add_test(misuse, test_bad_opts);
	tcase_add_test(misuse, test_nested_dispatch);
	tcase_add_test(misuse, test_nested_rows);
	tcase_add_test(misuse, test_concurrent_dispatch);
	tcase_add_test(misuse, test_fork_child_runs_serially);
	tcase_add_test(misuse, test_fork_inside_own_share);
	tcase_add_test(misuse, test_destroy_inside_inline_job);
	suite_add_tcase(s, misuse);

	tcase_set_timeout(rows, 60);
	tcase_add_test(rows, test_rows_cover_once);
	tcase_add_test(rows, test_rows_near_size_max);
	tcase_add_test(rows, test_many_parts_own_indices);
	tcase_add_test(rows, test_matvec_bit_identical);
	tcase_add_test(rows, test_matvec2_is_two_singles);
	tcase_add_test(rows, test_run_many_bit_identical);
	suite_add_tcase(s, rows);
	return s;
}
