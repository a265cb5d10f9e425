/*
 * check_arena.c - the bump arena: alignment, reset reuse, growth, marks,
 * and its bytes in the thread's pool counters.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "scratch.h"
#include "suites.h"

static uint64_t thread_leased(void)
{
	struct scratch_stats st = {.size = sizeof(st)};

	ck_assert_int_eq(scratch_stats_thread(&st), 0);
	return st.leased;
}

START_TEST(test_alignment)
{
	static const size_t aligns[] = {0, 1, 2, 8, 16, 64, 256, 4096};
	enum { N = sizeof(aligns) / sizeof(aligns[0]), ROUNDS = 50 };
	scratch_arena_t *a = scratch_arena_new("ck-align", 0);
	unsigned char *ptr[ROUNDS * N];
	size_t len[ROUNDS * N], k = 0, bad = 0;

	ck_assert_ptr_nonnull(a);
	for (int round = 0; round < ROUNDS; round++) {
		for (size_t i = 0; i < N; i++, k++) {
			size_t want = aligns[i] ? aligns[i] : 16;

			len[k] = 1 + (size_t)round * 37;
			ptr[k] = scratch_arena_alloc(a, len[k], aligns[i]);
			ck_assert_ptr_nonnull(ptr[k]);
			ck_assert_uint_eq((uintptr_t)ptr[k] % want, 0);
			memset(ptr[k], (int)(k & 0xff), len[k]);
		}
	}
	/* no allocation overlapped another: every byte kept its own value */
	for (size_t j = 0; j < k; j++)
		for (size_t b = 0; b < len[j]; b++)
			bad += ptr[j][b] != (j & 0xff);
	ck_assert_uint_eq(bad, 0);
	errno = 0;
	ck_assert_ptr_null(scratch_arena_alloc(a, 8, 3));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(scratch_arena_alloc(a, 8, 8192));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(scratch_arena_alloc(NULL, 8, 8));
	scratch_arena_destroy(a);
}
END_TEST

START_TEST(test_reset_reuses_memory)
{
	scratch_arena_t *a = scratch_arena_new("ck-reuse", 256 * 1024);
	struct scratch_stats before = {.size = sizeof(before)}, after = {.size = sizeof(after)};
	struct scratch_arena_stats as = {.size = sizeof(as)};
	void *first[8];

	ck_assert_ptr_nonnull(a);
	for (int i = 0; i < 8; i++)
		first[i] = scratch_arena_alloc(a, 20000, 64);
	ck_assert_int_eq(scratch_stats_thread(&before), 0);
	for (int cycle = 0; cycle < 100; cycle++) {
		scratch_arena_reset(a);
		for (int i = 0; i < 8; i++)
			ck_assert_ptr_eq(scratch_arena_alloc(a, 20000, 64), first[i]);
	}
	ck_assert_int_eq(scratch_stats_thread(&after), 0);
	/* no pool traffic at all: the chunk was kept */
	ck_assert_uint_eq(after.allocs, before.allocs);
	ck_assert_uint_eq(after.misses, before.misses);
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.resets, 100);
	ck_assert_uint_eq(as.chunks, 1);
	ck_assert_uint_eq(as.growths, 1);
	scratch_arena_destroy(a);
}
END_TEST

/* A cycle bigger than the first chunk settles on one chunk after a few
 * resets; the counters match the pool's own at every step. */
START_TEST(test_growth_settles)
{
	uint64_t base = thread_leased();
	scratch_arena_t *a = scratch_arena_new("ck-grow", 64 * 1024);
	struct scratch_arena_stats as = {.size = sizeof(as)};
	uint64_t growths_after_settle = 0;

	ck_assert_ptr_nonnull(a);
	for (int cycle = 0; cycle < 12; cycle++) {
		for (int i = 0; i < 60; i++)
			ck_assert_ptr_nonnull(scratch_arena_alloc(a, 50000, 0));
		ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
		ck_assert_uint_le(as.used, as.retained);
		ck_assert_uint_ge(as.used, 60 * 50000);
		/* the chunks are pool blocks lent to this thread */
		ck_assert_uint_eq(thread_leased() - base, as.retained);
		if (cycle == 8)
			growths_after_settle = as.growths;
		scratch_arena_reset(a);
		ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
		ck_assert_uint_eq(as.chunks, 1);
		ck_assert_uint_eq(as.used, 0);
		ck_assert_uint_eq(thread_leased() - base, as.retained);
	}
	ck_assert_uint_eq(as.growths, growths_after_settle);
	ck_assert_uint_ge(as.peak_used, 60 * 50000);
	scratch_arena_destroy(a);
	ck_assert_uint_eq(thread_leased(), base);
}
END_TEST

START_TEST(test_mark_rewind)
{
	scratch_arena_t *a = scratch_arena_new("ck-mark", 64 * 1024);
	struct scratch_arena_mark empty, m1, m2, stale;
	struct scratch_arena_stats as = {.size = sizeof(as)};
	uint64_t base = thread_leased();
	char *p, *q;

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(scratch_arena_mark(a, &empty), 0);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 1000, 0));
	ck_assert_int_eq(scratch_arena_mark(a, &m1), 0);
	p = scratch_arena_alloc(a, 5000, 0);
	ck_assert_int_eq(scratch_arena_mark(a, &m2), 0);
	/* spill into more chunks */
	for (int i = 0; i < 10; i++)
		ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 0));
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_gt(as.chunks, 1);

	ck_assert_int_eq(scratch_arena_rewind(a, &m2), 0);
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.chunks, 1);
	ck_assert_uint_eq(thread_leased() - base, as.retained);
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	q = scratch_arena_alloc(a, 5000, 0);
	ck_assert_ptr_eq(p, q);
	/* m2 lies ahead of the present only if nothing was allocated after
	 * m1: rewind to m1 again, then m2 is in the future */
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	ck_assert_int_eq(scratch_arena_rewind(a, &m2), -EINVAL);
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.used, 1000);

	ck_assert_int_eq(scratch_arena_mark(a, &stale), 0);
	scratch_arena_reset(a);
	ck_assert_int_eq(scratch_arena_rewind(a, &stale), -EINVAL);
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), -EINVAL);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 100, 0));
	ck_assert_int_eq(scratch_arena_rewind(a, &empty), 0);
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.used, 0);
	ck_assert_int_eq(scratch_arena_rewind(a, NULL), -EINVAL);
	ck_assert_int_eq(scratch_arena_mark(NULL, &m1), -EINVAL);
	scratch_arena_destroy(a);
	ck_assert_uint_eq(thread_leased(), base);
}
END_TEST

/* A rewind to an earlier position frees what later marks point at: they
 * are refused afterwards, also once allocation has passed them again and
 * also from a chunk given back and taken anew. */
START_TEST(test_stale_marks)
{
	scratch_arena_t *a = scratch_arena_new("ck-stale", 64 * 1024);
	struct scratch_arena_mark m1, m2, m3, in2;
	struct scratch_arena_stats as = {.size = sizeof(as)};
	char *p;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 100, 1));
	ck_assert_int_eq(scratch_arena_mark(a, &m1), 0);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 100, 1));
	ck_assert_int_eq(scratch_arena_mark(a, &m2), 0);
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	p = scratch_arena_alloc(a, 300, 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(scratch_arena_rewind(a, &m2), -EINVAL);
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.used, 400);
	/* a mark taken after the rewind is fine, and m1 still is */
	ck_assert_int_eq(scratch_arena_mark(a, &m3), 0);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 10, 1));
	ck_assert_int_eq(scratch_arena_rewind(a, &m3), 0);
	ck_assert_int_eq(scratch_arena_rewind(a, &m3), 0);
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	ck_assert_int_eq(scratch_arena_rewind(a, &m3), -EINVAL);

	/* a mark in a second chunk; the chunk goes back at a rewind and a
	 * new one comes at the same index */
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 1));
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 1));
	ck_assert_int_eq(scratch_arena_mark(a, &in2), 0);
	ck_assert_uint_eq(in2.chunk, 1);
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 1));
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 1));
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 60000, 1));
	ck_assert_int_eq(scratch_arena_rewind(a, &in2), -EINVAL);

	/* the canonical loop keeps every mark of its own iteration valid */
	for (int i = 0; i < 1000; i++) {
		struct scratch_arena_mark outer, inner;

		ck_assert_int_eq(scratch_arena_mark(a, &outer), 0);
		ck_assert_ptr_nonnull(scratch_arena_alloc(a, 64, 0));
		ck_assert_int_eq(scratch_arena_mark(a, &inner), 0);
		ck_assert_ptr_nonnull(scratch_arena_alloc(a, 64, 0));
		ck_assert_int_eq(scratch_arena_rewind(a, &inner), 0);
		ck_assert_int_eq(scratch_arena_rewind(a, &outer), 0);
		ck_assert_int_eq(scratch_arena_rewind(a, &inner), -EINVAL);
	}
	ck_assert_int_eq(scratch_arena_rewind(a, &m1), 0);
	scratch_arena_destroy(a);
}
END_TEST

/* malloc(0)'s rule: a pointer of its own, never one past a full chunk,
 * which would be the start of some other pool block. */
START_TEST(test_zero_size_in_full_chunk)
{
	scratch_arena_t *a = scratch_arena_new("ck-zero", 64 * 1024);
	char *full, *z;
	size_t cap;

	ck_assert_ptr_nonnull(a);
	full = scratch_arena_alloc(a, 64 * 1024, 0);
	ck_assert_ptr_nonnull(full);
	cap = scratch_usable_size(full);
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, cap - 64 * 1024, 1));
	z = scratch_arena_alloc(a, 0, 0);
	ck_assert_ptr_nonnull(z);
	ck_assert(z < full || z >= full + cap);
	ck_assert_ptr_ne(scratch_arena_alloc(a, 0, 0), z);
	scratch_arena_destroy(a);
}
END_TEST

START_TEST(test_limits)
{
	scratch_arena_t *a = scratch_arena_new(NULL, 0);
	size_t min, max;
	struct scratch_arena_stats as = {.size = sizeof(as)};

	ck_assert_ptr_nonnull(a);
	ck_assert(scratch_range(&min, &max));
	errno = 0;
	ck_assert_ptr_null(scratch_arena_alloc(a, max + 1, 0));
	ck_assert_int_eq(errno, ERANGE);
	/* a failed growth leaves no trace */
	ck_assert_int_eq(scratch_arena_stats(a, &as), 0);
	ck_assert_uint_eq(as.chunks, 0);
	ck_assert_uint_eq(as.retained, 0);
	/* zero bytes is a valid allocation */
	ck_assert_ptr_nonnull(scratch_arena_alloc(a, 0, 0));
	ck_assert_int_eq(scratch_arena_stats(NULL, &as), -EINVAL);
	scratch_arena_reset(NULL);
	scratch_arena_destroy(a);
	scratch_arena_destroy(NULL);
}
END_TEST

Suite *arena_suite(void)
{
	Suite *s = suite_create("arena");
	TCase *core = tcase_create("core");
	TCase *misuse = tcase_create("misuse");

	tcase_add_test(core, test_alignment);
	tcase_add_test(core, test_reset_reuses_memory);
	tcase_add_test(core, test_growth_settles);
	tcase_add_test(core, test_mark_rewind);
	suite_add_tcase(s, core);
	tcase_add_test(misuse, test_limits);
	tcase_add_test(misuse, test_stale_marks);
	tcase_add_test(misuse, test_zero_size_in_full_chunk);
	suite_add_tcase(s, misuse);
	return s;
}
