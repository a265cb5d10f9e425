/*
 * check_workspace.c - the owning workspace: scripted accounting, team
 * exclusivity, re-entrancy, trim, barriers, traced growths and failures.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scratch.h"
#include "suites.h"

#define KIB 1024u

static struct scratch_workspace_stats stats_of(scratch_workspace_t *ws)
{
	struct scratch_workspace_stats st = {.size = sizeof(st)};

	ck_assert_int_eq(scratch_workspace_stats(ws, &st), 0);
	ck_assert_uint_le(st.leased, st.retained);
	ck_assert_uint_le(st.panel_bytes, st.retained);
	return st;
}

static void expect(scratch_workspace_t *ws, uint64_t retained, uint64_t leased, uint64_t panel)
{
	struct scratch_workspace_stats st = stats_of(ws);

	ck_assert_uint_eq(st.retained, retained);
	ck_assert_uint_eq(st.leased, leased);
	ck_assert_uint_eq(st.panel_bytes, panel);
}

static size_t cap(const void *p)
{
	size_t c = scratch_usable_size(p);

	ck_assert_uint_gt(c, 0);
	return c;
}

/* A scripted sequence, checking the three figures after every step. */
START_TEST(test_scripted_accounting)
{
	scratch_workspace_t *ws = scratch_workspace_new("ck-script", 0);
	size_t min, max, a0, t1, pn, a0b;
	scratch_team_t *t;
	void *p, *q;

	ck_assert_ptr_nonnull(ws);
	ck_assert(scratch_range(&min, &max));
	expect(ws, 0, 0, 0);

	t = scratch_workspace_lease(ws, 2);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(scratch_team_members(t), 2);
	expect(ws, 0, 0, 0);
	p = scratch_team_slot(t, 0, SCRATCH_SLOT_A, 100 * KIB);
	ck_assert_ptr_nonnull(p);
	a0 = cap(p);
	ck_assert_uint_ge(a0, 100 * KIB);
	expect(ws, a0, a0, 0);
	q = scratch_team_slot(t, 1, SCRATCH_SLOT_TILE, 1000); /* below min_size */
	ck_assert_ptr_nonnull(q);
	t1 = cap(q);
	ck_assert_uint_ge(t1, min);
	expect(ws, a0 + t1, a0 + t1, 0);
	pn = cap(scratch_team_panel(t, 1024 * KIB));
	expect(ws, a0 + t1 + pn, a0 + t1 + pn, pn);
	/* a smaller request is served by the same buffer, no growth */
	ck_assert_ptr_eq(scratch_team_slot(t, 0, SCRATCH_SLOT_A, 50 * KIB), p);
	ck_assert_uint_eq(stats_of(ws).growths, 3);

	/* failures halfway leave everything as it was */
	errno = 0;
	ck_assert_ptr_null(scratch_team_slot(t, 0, SCRATCH_SLOT_A, max + 1));
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_ptr_null(scratch_team_panel(t, max + 1));
	ck_assert_ptr_null(scratch_team_slot(t, 2, SCRATCH_SLOT_A, 10));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(scratch_team_slot(t, 0, SCRATCH_SLOT_KINDS, 10));
	expect(ws, a0 + t1 + pn, a0 + t1 + pn, pn);
	ck_assert_ptr_eq(scratch_team_slot(t, 0, SCRATCH_SLOT_A, 1), p);
	ck_assert_uint_eq(stats_of(ws).growths, 3);

	ck_assert_int_eq(scratch_team_release(t), 0);
	expect(ws, a0 + t1 + pn, 0, pn);
	ck_assert_int_eq(scratch_team_release(t), -EINVAL);

	/* the same team comes back with its buffers */
	t = scratch_workspace_lease(ws, 2);
	expect(ws, a0 + t1 + pn, a0 + t1 + pn, pn);
	ck_assert_ptr_eq(scratch_team_slot(t, 0, SCRATCH_SLOT_A, 100 * KIB), p);
	/* growing replaces the block */
	a0b = cap(scratch_team_slot(t, 0, SCRATCH_SLOT_A, 3000 * KIB));
	expect(ws, a0b + t1 + pn, a0b + t1 + pn, pn);
	ck_assert_int_eq(scratch_workspace_destroy(ws), -EBUSY);
	ck_assert_int_eq(scratch_team_release(t), 0);
	expect(ws, a0b + t1 + pn, 0, pn);
	ck_assert_uint_eq(stats_of(ws).teams, 1);
	ck_assert_uint_eq(stats_of(ws).leases, 2);

	ck_assert_uint_eq(scratch_workspace_trim(ws), a0b + t1 + pn);
	expect(ws, 0, 0, 0);
	ck_assert_uint_eq(stats_of(ws).teams, 0);
	ck_assert_int_eq(scratch_workspace_destroy(ws), 0);
}
END_TEST

/* The workspace's bytes are blocks lent by this thread's pool. */
START_TEST(test_bytes_are_pool_blocks)
{
	struct scratch_stats before = {.size = sizeof(before)}, during = {.size = sizeof(during)},
	                     after = {.size = sizeof(after)};
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	scratch_team_t *t;

	ck_assert_int_eq(scratch_stats_thread(&before), 0);
	t = scratch_workspace_lease(ws, 1);
	ck_assert_ptr_nonnull(scratch_team_slot(t, 0, SCRATCH_SLOT_TILE, 200 * KIB));
	ck_assert_ptr_nonnull(scratch_team_panel(t, 700 * KIB));
	ck_assert_int_eq(scratch_stats_thread(&during), 0);
	ck_assert_uint_eq(during.leased - before.leased, stats_of(ws).retained);
	scratch_team_release(t);
	ck_assert_int_eq(scratch_workspace_destroy(ws), 0);
	ck_assert_int_eq(scratch_stats_thread(&after), 0);
	ck_assert_uint_eq(after.leased, before.leased);
}
END_TEST

START_TEST(test_rebuild_only_on_shape_change)
{
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	scratch_team_t *t;

	for (int i = 0; i < 5; i++) {
		t = scratch_workspace_lease(ws, 2);
		scratch_team_release(t);
	}
	ck_assert_uint_eq(stats_of(ws).rebuilds, 0);
	t = scratch_workspace_lease(ws, 3);
	ck_assert_uint_eq(scratch_team_members(t), 3);
	scratch_team_release(t);
	ck_assert_uint_eq(stats_of(ws).rebuilds, 1);
	t = scratch_workspace_lease(ws, 3);
	scratch_team_release(t);
	ck_assert_uint_eq(stats_of(ws).rebuilds, 1);
	ck_assert_uint_eq(stats_of(ws).teams, 1);
	ck_assert_ptr_null(scratch_workspace_lease(ws, 0));
	ck_assert_ptr_null(scratch_workspace_lease(ws, SCRATCH_WORKERS_MAX + 1));
	ck_assert_ptr_null(scratch_workspace_lease(NULL, 1));
	scratch_workspace_destroy(ws);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Re-entrancy                                                            */
/* ---------------------------------------------------------------------- */

START_TEST(test_reentrant_fresh_buffers)
{
	scratch_workspace_t *ws = scratch_workspace_new("ck-reent", SCRATCH_WORKSPACE_TRACED);
	struct scratch_growth rec[16];
	struct scratch_workspace_stats st = {.size = sizeof(st)};
	scratch_team_t *outer, *inner;
	void *p, *q;

	outer = scratch_workspace_lease(ws, 1);
	p = scratch_team_slot(outer, 0, SCRATCH_SLOT_A, 100 * KIB);
	ck_assert_ptr_nonnull(p);
	st = stats_of(ws);

	inner = scratch_workspace_lease(ws, 1);
	ck_assert_ptr_nonnull(inner);
	ck_assert_ptr_ne(inner, outer);
	q = scratch_team_slot(inner, 0, SCRATCH_SLOT_A, 100 * KIB);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(p, q);
	ck_assert_ptr_nonnull(scratch_team_panel(inner, 500 * KIB));
	/* call-local: not counted, not traced */
	expect(ws, st.retained, st.leased, st.panel_bytes);
	ck_assert_uint_eq(stats_of(ws).growths, st.growths);
	ck_assert_uint_eq(stats_of(ws).local_leases, 1);
	ck_assert_int_eq(scratch_team_release(inner), 0);
	expect(ws, st.retained, st.leased, st.panel_bytes);
	ck_assert_ptr_eq(scratch_team_slot(outer, 0, SCRATCH_SLOT_A, 1), p);
	ck_assert_int_eq(scratch_team_release(outer), 0);
	ck_assert_uint_eq(scratch_workspace_growths(ws, rec, 16), 1);
	ck_assert_uint_eq(stats_of(ws).teams, 1);
	scratch_workspace_destroy(ws);
}
END_TEST

struct reent_exec {
	scratch_workspace_t *ws;
	void *outer_slot[8];
	void *inner_slot[8];
	int inner_rc[8];
};

static void inner_member(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	struct reent_exec *r = ctx;

	ck_assert_uint_eq(n, 1);
	r->inner_slot[m] = scratch_team_slot(t, m, SCRATCH_SLOT_TILE, 64 * KIB);
}

struct inner_call {
	struct reent_exec *r;
	unsigned member;
};

static void inner_member_at(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	struct inner_call *c = ctx;

	(void)n;
	c->r->inner_slot[c->member] = scratch_team_slot(t, m, SCRATCH_SLOT_TILE, 64 * KIB);
}

static void outer_member(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	struct reent_exec *r = ctx;
	struct inner_call c = {r, m};

	(void)n;
	r->outer_slot[m] = scratch_team_slot(t, m, SCRATCH_SLOT_TILE, 64 * KIB);
	/* nested execute on the same workspace from inside a member */
	r->inner_rc[m] = scratch_workspace_execute(r->ws, NULL, inner_member_at, &c);
}

START_TEST(test_reentrant_execute)
{
	scratch_workers_t *w =
	        scratch_workers_new(&(struct scratch_workers_opts){3, 0, false, NULL});
	struct reent_exec r = {0};
	struct scratch_workspace_stats st = {.size = sizeof(st)};

	r.ws = scratch_workspace_new(NULL, 0);
	ck_assert_int_eq(scratch_workspace_execute(r.ws, w, outer_member, &r), 0);
	for (unsigned m = 0; m < 3; m++) {
		ck_assert_int_eq(r.inner_rc[m], 0);
		ck_assert_ptr_nonnull(r.outer_slot[m]);
		ck_assert_ptr_nonnull(r.inner_slot[m]);
		for (unsigned k = 0; k < 3; k++)
			ck_assert_ptr_ne(r.inner_slot[m], r.outer_slot[k]);
	}
	st = stats_of(r.ws);
	ck_assert_uint_eq(st.local_leases, 3);
	ck_assert_uint_eq(st.teams, 1);
	ck_assert_uint_eq(st.growths, 3);
	expect(r.ws, st.retained, 0, 0);
	/* a plain serial execute */
	ck_assert_int_eq(scratch_workspace_execute(r.ws, NULL, inner_member, &r), 0);
	ck_assert_int_eq(scratch_workspace_execute(r.ws, w, NULL, &r), -EINVAL);
	scratch_workspace_destroy(r.ws);
	scratch_workers_destroy(w);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Trim keeps live leases                                                 */
/* ---------------------------------------------------------------------- */

struct other {
	scratch_workspace_t *ws;
	size_t bytes;
};

static void *lease_grow_release(void *arg)
{
	struct other *o = arg;
	scratch_team_t *t = scratch_workspace_lease(o->ws, 1);

	o->bytes = cap(scratch_team_slot(t, 0, SCRATCH_SLOT_A, 300 * KIB));
	o->bytes += cap(scratch_team_panel(t, 100 * KIB));
	scratch_team_release(t);
	return NULL;
}

START_TEST(test_trim_keeps_live_leases)
{
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	struct other o = {ws, 0};
	scratch_team_t *live;
	pthread_t th;
	size_t live_bytes, live_panel;
	char *p;

	live = scratch_workspace_lease(ws, 1);
	p = scratch_team_slot(live, 0, SCRATCH_SLOT_A, 200 * KIB);
	live_panel = cap(scratch_team_panel(live, 64 * KIB));
	live_bytes = cap(p) + live_panel;
	ck_assert_int_eq(pthread_create(&th, NULL, lease_grow_release, &o), 0);
	pthread_join(th, NULL);
	ck_assert_uint_eq(stats_of(ws).teams, 2);
	expect(ws, live_bytes + o.bytes, live_bytes, live_panel + scratch_class_size(100 * KIB));

	ck_assert_uint_eq(scratch_workspace_trim(ws), o.bytes);
	expect(ws, live_bytes, live_bytes, live_panel);
	memset(p, 0x5a, 200 * KIB); /* still ours */
	ck_assert_ptr_eq(scratch_team_slot(live, 0, SCRATCH_SLOT_A, 200 * KIB), p);
	ck_assert_uint_eq(scratch_workspace_trim(ws), 0);
	ck_assert_int_eq(scratch_team_release(live), 0);
	ck_assert_uint_eq(scratch_workspace_trim(ws), live_bytes);
	expect(ws, 0, 0, 0);
	scratch_workspace_destroy(ws);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Execute: barriers, scatter, exclusivity, traced growths                */
/* ---------------------------------------------------------------------- */

struct gemm {
	unsigned serial_winners;
	unsigned bad;
	unsigned round;
	pid_t tid[SCRATCH_WORKERS_MAX];
};

/* A toy split-K reduction: each member writes its scatter slot, the
 * barrier publishes them, each member checks every other member's. */
static void gemm_member(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	struct gemm *g = ctx;
	uint32_t *mine = scratch_team_slot(t, m, SCRATCH_SLOT_SCATTER, 64 * KIB);
	void *const *scatter;

	g->tid[m] = (pid_t)syscall(SYS_gettid);
	ck_assert_ptr_nonnull(scratch_team_slot(t, m, SCRATCH_SLOT_A, 128 * KIB));
	if (m == 0)
		ck_assert_ptr_nonnull(scratch_team_panel(t, 512 * KIB));
	for (int i = 0; i < 1024; i++)
		mine[i] = g->round * 1000 + m;
	if (scratch_team_barrier(t))
		__atomic_fetch_add(&g->serial_winners, 1, __ATOMIC_RELAXED);
	scatter = scratch_team_scatter(t);
	for (unsigned k = 0; k < n; k++) {
		const uint32_t *theirs = scatter[k];

		if (!theirs || theirs[1023] != g->round * 1000 + k)
			__atomic_fetch_add(&g->bad, 1, __ATOMIC_RELAXED);
	}
	/* nobody overwrites a scatter slot before everyone read them all */
	scratch_team_barrier(t);
}

START_TEST(test_execute_barrier_scatter)
{
	scratch_workers_t *w =
	        scratch_workers_new(&(struct scratch_workers_opts){3, 0, false, NULL});
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	struct gemm g = {0};
	struct scratch_workspace_stats st = {.size = sizeof(st)};

	for (g.round = 1; g.round <= 50; g.round++)
		ck_assert_int_eq(scratch_workspace_execute(ws, w, gemm_member, &g), 0);
	ck_assert_uint_eq(g.bad, 0);
	/* one barrier per call returned true exactly once */
	ck_assert_uint_eq(g.serial_winners, 50);
	st = stats_of(ws);
	ck_assert_uint_eq(st.teams, 1);
	ck_assert_uint_eq(st.growths, 3 * 2 + 1);
	ck_assert_uint_eq(st.rebuilds, 0);
	expect(ws, st.retained, 0, scratch_class_size(512 * KIB));
	scratch_workspace_destroy(ws);
	scratch_workers_destroy(w);
}
END_TEST

START_TEST(test_traced_growths_from_workers)
{
	scratch_workers_t *w =
	        scratch_workers_new(&(struct scratch_workers_opts){3, 0, false, NULL});
	scratch_workspace_t *ws = scratch_workspace_new("ck-traced", SCRATCH_WORKSPACE_TRACED);
	struct scratch_growth rec[64];
	struct gemm g = {.round = 1};
	size_t n;
	pid_t self = (pid_t)syscall(SYS_gettid);

	ck_assert_int_eq(scratch_workspace_execute(ws, w, gemm_member, &g), 0);
	n = scratch_workspace_growths(ws, rec, 64);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(scratch_workspace_growths(ws, rec + n, 64), 0);
	/* every growth names the thread that runs the member, and members 0
	 * and 1 are the worker threads, not the caller */
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (unsigned m = 0; m < 3; m++)
			found |= rec[i].tid == (uint64_t)g.tid[m];
		ck_assert(found);
		ck_assert_uint_ge(rec[i].bytes, 64 * KIB);
	}
	ck_assert_int_ne(g.tid[0], self);
	ck_assert_int_ne(g.tid[1], self);
	ck_assert_int_ne(g.tid[0], g.tid[1]);
	ck_assert_int_eq(g.tid[2], self);
	/* the same members again: nothing grows, nothing is recorded */
	ck_assert_int_eq(scratch_workspace_execute(ws, w, gemm_member, &g), 0);
	ck_assert_uint_eq(scratch_workspace_growths(ws, rec, 64), 0);
	ck_assert_uint_eq(stats_of(ws).lost, 0);
	scratch_workspace_destroy(ws);
	scratch_workers_destroy(w);
}
END_TEST

/* Concurrent executes: a team is never in two calls at once. */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const void *team;
	const void *call;
	unsigned inside;
} users[16];
static unsigned shared_violations;

static void enter(const void *team, const void *call)
{
	pthread_mutex_lock(&users_lock);
	for (int i = 0; i < 16; i++) {
		if (users[i].team == team && users[i].inside > 0) {
			if (users[i].call != call)
				shared_violations++;
			users[i].inside++;
			goto out;
		}
	}
	for (int i = 0; i < 16; i++) {
		if (users[i].inside == 0) {
			users[i].team = team;
			users[i].call = call;
			users[i].inside = 1;
			break;
		}
	}
out:
	pthread_mutex_unlock(&users_lock);
}

static void leave(const void *team)
{
	pthread_mutex_lock(&users_lock);
	for (int i = 0; i < 16; i++)
		if (users[i].team == team && users[i].inside > 0) {
			users[i].inside--;
			break;
		}
	pthread_mutex_unlock(&users_lock);
}

struct call_ctx {
	unsigned id;
};

static void busy_member(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	char *tile;

	(void)n;
	enter(t, ctx);
	tile = scratch_team_slot(t, m, SCRATCH_SLOT_TILE, 64 * KIB);
	memset(tile, (int)m, 4096);
	scratch_team_barrier(t);
	leave(t);
}

struct exec_racer {
	scratch_workspace_t *ws;
	scratch_workers_t *w;
	int failures;
};

static void *exec_racer_main(void *arg)
{
	struct exec_racer *r = arg;

	for (unsigned i = 0; i < 100; i++) {
		struct call_ctx c = {i};

		if (scratch_workspace_execute(r->ws, r->w, busy_member, &c) != 0)
			r->failures++;
	}
	return NULL;
}

START_TEST(test_concurrent_executes_never_share)
{
	scratch_workers_t *w =
	        scratch_workers_new(&(struct scratch_workers_opts){3, 0, false, NULL});
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	struct exec_racer r[3];
	pthread_t th[3];
	struct scratch_workspace_stats st = {.size = sizeof(st)};

	for (int i = 0; i < 3; i++) {
		r[i] = (struct exec_racer){ws, w, 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, exec_racer_main, &r[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].failures, 0);
	}
	ck_assert_uint_eq(shared_violations, 0);
	st = stats_of(ws);
	ck_assert_uint_eq(st.leases, 300);
	ck_assert_uint_eq(st.leased, 0);
	ck_assert_uint_ge(st.teams, 1);
	ck_assert_uint_le(st.teams, 3);
	ck_assert_uint_eq(scratch_workspace_trim(ws), st.retained);
	expect(ws, 0, 0, 0);
	scratch_workspace_destroy(ws);
	scratch_workers_destroy(w);
}
END_TEST

/* A member failing to grow mid-call leaves exact figures behind. */
static void failing_member(void *ctx, scratch_team_t *t, unsigned m, unsigned n)
{
	size_t *max = ctx;

	(void)n;
	ck_assert_ptr_nonnull(scratch_team_slot(t, m, SCRATCH_SLOT_A, 100 * KIB));
	if (m == 1)
		ck_assert_ptr_null(scratch_team_slot(t, m, SCRATCH_SLOT_TILE, *max + 1));
}

START_TEST(test_failure_midway_exact)
{
	scratch_workers_t *w =
	        scratch_workers_new(&(struct scratch_workers_opts){3, 0, false, NULL});
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	size_t min, max;

	ck_assert(scratch_range(&min, &max));
	ck_assert_int_eq(scratch_workspace_execute(ws, w, failing_member, &max), 0);
	expect(ws, 3 * scratch_class_size(100 * KIB), 0, 0);
	ck_assert_uint_eq(stats_of(ws).growths, 3);
	ck_assert_int_eq(scratch_workspace_destroy(ws), 0);
	scratch_workers_destroy(w);
}
END_TEST

START_TEST(test_misuse)
{
	scratch_workspace_t *ws = scratch_workspace_new(NULL, 0);
	struct scratch_workspace_stats st = {.size = sizeof(st)};
	scratch_team_t *t;

	errno = 0;
	ck_assert_ptr_null(scratch_workspace_new(NULL, 0x10));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(scratch_workspace_stats(NULL, &st), -EINVAL);
	ck_assert_int_eq(scratch_team_release(NULL), -EINVAL);
	ck_assert_ptr_null(scratch_team_slot(NULL, 0, SCRATCH_SLOT_A, 1));
	ck_assert_ptr_null(scratch_team_panel(NULL, 1));
	ck_assert_uint_eq(scratch_team_members(NULL), 0);
	ck_assert(scratch_team_barrier(NULL));
	ck_assert_uint_eq(scratch_workspace_trim(NULL), 0);
	ck_assert_int_eq(scratch_workspace_destroy(NULL), 0);
	/* a lone member's barrier returns at once */
	t = scratch_workspace_lease(ws, 1);
	ck_assert(scratch_team_barrier(t));
	scratch_team_release(t);
	scratch_workspace_destroy(ws);
}
END_TEST

/* A call-local team (a second lease on one thread) keeps its workspace
 * alive like a kept team does: destroy refuses while it is out, in either
 * release order, and the local team still grows afterwards. */
START_TEST(test_destroy_waits_for_local_teams)
{
	scratch_workspace_t *ws = scratch_workspace_new("ckws-local", 0);
	scratch_team_t *kept = scratch_workspace_lease(ws, 1);
	scratch_team_t *local = scratch_workspace_lease(ws, 1);

	ck_assert_ptr_nonnull(kept);
	ck_assert_ptr_nonnull(local);
	ck_assert_int_eq(scratch_team_release(kept), 0);
	ck_assert_int_eq(scratch_workspace_destroy(ws), -EBUSY);
	ck_assert_ptr_nonnull(scratch_team_slot(local, 0, SCRATCH_SLOT_A, 1 << 20));
	ck_assert_int_eq(scratch_team_release(local), 0);
	ck_assert_int_eq(scratch_workspace_destroy(ws), 0);
}
END_TEST

Suite *workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *acct = tcase_create("accounting");
	TCase *exec = tcase_create("execute");
	TCase *misuse = tcase_create("misuse");

	tcase_set_timeout(acct, 60);
	tcase_add_test(acct, test_scripted_accounting);
	tcase_add_test(acct, test_bytes_are_pool_blocks);
	tcase_add_test(acct, test_rebuild_only_on_shape_change);
	tcase_add_test(acct, test_reentrant_fresh_buffers);
	tcase_add_test(acct, test_trim_keeps_live_leases);
	suite_add_tcase(s, acct);

	tcase_set_timeout(exec, 60);
	tcase_add_test(exec, test_reentrant_execute);
	tcase_add_test(exec, test_execute_barrier_scatter);
	tcase_add_test(exec, test_traced_growths_from_workers);
	tcase_add_test(exec, test_concurrent_executes_never_share);
	tcase_add_test(exec, test_failure_midway_exact);
	suite_add_tcase(s, exec);

	tcase_add_test(misuse, test_misuse);
	tcase_add_test(misuse, test_destroy_waits_for_local_teams);
	suite_add_tcase(s, misuse);
	return s;
}
