/*
 * check_stats_abi.c - the public stats structs' size and version fields.
 *
 * A program built against an older scratch.h passes a shorter struct: a
 * prefix of today's. The library must write only that prefix (guard bytes
 * after it stay as they were), a newer program's longer struct gets
 * today's fields and nothing past them, and a size that holds no counter
 * is refused without a write.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "scratch.h"
#include "suites.h"

#define GUARD 0xa5
#define MIB   ((size_t)1 << 20)

/* Room for any stats struct of today plus guard bytes. */
union caller {
	struct {
		uint32_t size, version;
		uint64_t v[63];
	} s;
	uint8_t bytes[512];
};

/* One stats call, on whatever object it needs (ctx). */
typedef int (*fill_fn)(void *ctx, void *ret);

static int fill_thread(void *ctx, void *ret)
{
	(void)ctx;
	return scratch_stats_thread(ret);
}

static int fill_total(void *ctx, void *ret)
{
	(void)ctx;
	return scratch_stats_total(ret);
}

static int fill_class(void *ctx, void *ret)
{
	(void)ctx;
	return scratch_stats_class(MIB, ret);
}

static int fill_arena(void *ctx, void *ret)
{
	return scratch_arena_stats(ctx, ret);
}

static int fill_workers(void *ctx, void *ret)
{
	return scratch_workers_stats(ctx, ret);
}

static int fill_workspace(void *ctx, void *ret)
{
	return scratch_workspace_stats(ctx, ret);
}

static union caller filled(fill_fn fill, void *ctx, uint32_t size)
{
	union caller c;

	memset(&c, GUARD, sizeof(c));
	c.s.size = size;
	ck_assert_int_eq(fill(ctx, &c), 0);
	return c;
}

static void assert_guard(const union caller *c, size_t from)
{
	for (size_t i = from; i < sizeof(c->bytes); i++)
		ck_assert_msg(c->bytes[i] == GUARD, "byte %zu of %zu written", i, sizeof(c->bytes));
}

/*
 * The rules for one call whose struct today is full bytes at version
 * version: today's size, an older caller's prefix (size and version and
 * the first two counters), a newer caller's longer struct, and sizes that
 * are refused. The counters are read twice, so they must not move between
 * calls (nothing runs on the pools meanwhile).
 */
static void check_abi(fill_fn fill, void *ctx, size_t full, uint32_t version)
{
	union caller now = filled(fill, ctx, (uint32_t)full);
	union caller old = filled(fill, ctx, 24);
	union caller newer = filled(fill, ctx, (uint32_t)full + 16);
	const uint32_t bad[] = {0, 8, 12, 20, (uint32_t)full - 4};

	ck_assert_uint_eq(now.s.size, full);
	ck_assert_uint_eq(now.s.version, version);
	assert_guard(&now, full);

	ck_assert_uint_eq(old.s.size, 24);
	ck_assert_uint_eq(old.s.version, version);
	ck_assert_uint_eq(old.s.v[0], now.s.v[0]);
	ck_assert_uint_eq(old.s.v[1], now.s.v[1]);
	assert_guard(&old, 24);

	ck_assert_uint_eq(newer.s.size, full + 16); /* the caller's own size, kept */
	ck_assert_int_eq(memcmp(newer.bytes + 4, now.bytes + 4, full - 4), 0);
	assert_guard(&newer, full);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		union caller c;

		memset(&c, GUARD, sizeof(c));
		c.s.size = bad[i];
		ck_assert_int_eq(fill(ctx, &c), -EINVAL);
		assert_guard(&c, 4);
	}
	ck_assert_int_eq(fill(ctx, NULL), -EINVAL);
}

/* Some traffic first, so the counters compared are not all zero. */
static void *busy_pool(void)
{
	void *p = scratch_acquire(MIB), *q;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(scratch_release(p), 0);
	q = scratch_acquire(MIB);
	ck_assert_ptr_eq(q, p);
	return q;
}

START_TEST(test_pool_stats_prefix)
{
	void *p = busy_pool();
	union caller t = filled(fill_thread, NULL, sizeof(struct scratch_stats));

	ck_assert_uint_eq(t.s.v[0], 2); /* allocs */
	ck_assert_uint_eq(t.s.v[1], 1); /* hits */
	check_abi(fill_thread, NULL, sizeof(struct scratch_stats), SCRATCH_STATS_VERSION);
	check_abi(fill_total, NULL, sizeof(struct scratch_stats), SCRATCH_STATS_VERSION);
	check_abi(fill_class, NULL, sizeof(struct scratch_class_stats),
	          SCRATCH_CLASS_STATS_VERSION);
	ck_assert_int_eq(scratch_release(p), 0);
}
END_TEST

START_TEST(test_arena_stats_prefix)
{
	scratch_arena_t *a = scratch_arena_new("abi", MIB);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 4096, 0));
	check_abi(fill_arena, a, sizeof(struct scratch_arena_stats), SCRATCH_ARENA_STATS_VERSION);
	ck_assert_uint_eq(filled(fill_arena, a, 24).s.v[0], 1); /* chunks */
	scratch_arena_destroy(a);
}
END_TEST

START_TEST(test_workers_stats_prefix)
{
	/* No spin: the worker sleeps at its start, and its parks count, which
	 * check_abi() reads twice, moves no more once it has (a worker still
	 * spinning parks between the two reads on a loaded machine). */
	struct scratch_workers_opts opts = {.threads = 2, .spin = 0};
	scratch_workers_t *w = scratch_workers_new(&opts);
	struct scratch_workers_stats st = {.size = sizeof(st)};
	const struct timespec tick = {0, 1000000};

	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < 10000; i++) {
		ck_assert_int_eq(scratch_workers_stats(w, &st), 0);
		if (st.parks != 0)
			break;
		nanosleep(&tick, NULL);
	}
	ck_assert_uint_eq(st.parks, 1);
	check_abi(fill_workers, w, sizeof(struct scratch_workers_stats),
	          SCRATCH_WORKERS_STATS_VERSION);
	ck_assert_uint_eq(filled(fill_workers, w, 24).s.v[0], 1); /* workers */
	scratch_workers_destroy(w);
}
END_TEST

START_TEST(test_workspace_stats_prefix)
{
	scratch_workspace_t *ws = scratch_workspace_new("abi", 0);

	ck_assert_ptr_nonnull(ws);
	check_abi(fill_workspace, ws, sizeof(struct scratch_workspace_stats),
	          SCRATCH_WORKSPACE_STATS_VERSION);
	scratch_workspace_destroy(ws);
}
END_TEST

Suite *stats_abi_suite(void)
{
	Suite *s = suite_create("stats_abi");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_pool_stats_prefix);
	tcase_add_test(tc, test_arena_stats_prefix);
	tcase_add_test(tc, test_workers_stats_prefix);
	tcase_add_test(tc, test_workspace_stats_prefix);
	suite_add_tcase(s, tc);
	return s;
}
