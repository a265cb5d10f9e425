/*
 * check_touch.c - unit suite of stats/audit/touch.c, the first-toucher
 * store as runs, in the one Check runner: the earliest sample of a page
 * wins within a batch and across batches, adjacent pages of one thread
 * become one run (and a run never spans two generations), the window
 * lookup answers only when one thread faulted in the window, majors are
 * kept apart, a forgotten range is gone (a run cut in two keeps both
 * ends), and a million sequential faults take a handful of runs.
 *
 * Select with CK_RUN_SUITE=touch.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "suites.h"
#include "touch.h"

#define P    4096ull
#define BASE 0x7f0000000000ull

static pid_t tid_of(const struct touch_map *m, uint64_t addr)
{
	const struct touch_run *r = touch_lookup(m, addr);

	return r != NULL ? m->who[r->who].tid : 0;
}

START_TEST(test_earliest)
{
	struct touch_map m = {0};

	/* one batch, out of time order: the earlier sample wins */
	ck_assert_int_eq(touch_add(&m, BASE + 5, 11, 0, 200, false), 0);
	ck_assert_int_eq(touch_add(&m, BASE + 9, 12, 1, 100, false), 0);
	ck_assert_int_eq(touch_flush(&m), 0);
	ck_assert_int_eq(tid_of(&m, BASE), 12);
	ck_assert_int_eq(m.who[touch_lookup(&m, BASE)->who].cpu, 1);
	/* a later batch cannot take it back, even with an older time */
	touch_add(&m, BASE, 13, 0, 1, false);
	touch_add(&m, BASE + P, 13, 0, 1, false);
	ck_assert_int_eq(touch_flush(&m), 0);
	ck_assert_int_eq(tid_of(&m, BASE), 12);
	ck_assert_int_eq(tid_of(&m, BASE + P), 13);
	ck_assert_int_eq(tid_of(&m, BASE + 2 * P), 0);
	ck_assert_ptr_null(touch_lookup(&m, BASE - 1));
	touch_free(&m);
}
END_TEST

START_TEST(test_runs)
{
	struct touch_map m = {0};
	uint32_t g0;

	/* pages 0..9 by 11, 10..19 by 12, in a shuffled order */
	for (int i = 19; i >= 0; i--)
		touch_add(&m, BASE + (uint64_t)i * P, i < 10 ? 11 : 12, 0, (uint64_t)i, false);
	g0 = touch_generation(&m);
	ck_assert_int_eq(touch_flush(&m), 0);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_uint_eq(m.r[0].pages, 10);
	ck_assert_uint_eq(m.r[0].gen, g0);
	ck_assert_uint_eq(touch_generation(&m), g0 + 1);
	/* the same thread continues in the next batch: a new run (new generation) */
	touch_add(&m, BASE + 20 * P, 12, 0, 50, false);
	touch_flush(&m);
	ck_assert_uint_eq(m.n, 3);
	ck_assert_uint_eq(m.r[2].gen, g0 + 1);
	/* pages below the others: merged in order */
	touch_add(&m, BASE - 2 * P, 14, 0, 60, false);
	touch_add(&m, BASE - P, 14, 0, 61, false);
	touch_flush(&m);
	ck_assert_uint_eq(m.n, 4);
	ck_assert_uint_eq(m.r[0].page, BASE - 2 * P);
	ck_assert_uint_eq(m.r[0].pages, 2);
	for (size_t i = 1; i < m.n; i++)
		ck_assert_uint_ge(m.r[i].page, m.r[i - 1].page + m.r[i - 1].pages * P);
	ck_assert_uint_eq(touch_index(&m, BASE), 1);
	ck_assert_uint_eq(touch_index(&m, BASE + 100 * P), m.n);
	touch_free(&m);
}
END_TEST

START_TEST(test_window)
{
	struct touch_map m = {0};
	uint64_t w = 64 * 1024;

	/* window 0: one fault by 11 at its third page; window 1: 11 and 12 */
	touch_add(&m, BASE + 2 * P, 11, 0, 1, false);
	touch_add(&m, BASE + w + P, 11, 0, 2, false);
	touch_add(&m, BASE + w + 5 * P, 12, 1, 3, false);
	touch_flush(&m);
	ck_assert_ptr_null(touch_lookup(&m, BASE + 7 * P));
	ck_assert_int_eq(m.who[touch_lookup_window(&m, BASE + 7 * P, w)->who].tid, 11);
	ck_assert_int_eq(m.who[touch_lookup_window(&m, BASE, w)->who].tid, 11);
	/* two threads in the window: not known */
	ck_assert_ptr_null(touch_lookup_window(&m, BASE + w + 9 * P, w));
	/* but a page's own sample always answers */
	ck_assert_int_eq(m.who[touch_lookup_window(&m, BASE + w + 5 * P, w)->who].tid, 12);
	/* nothing in the window */
	ck_assert_ptr_null(touch_lookup_window(&m, BASE + 2 * w, w));
	/* a page-sized window is the page alone */
	ck_assert_ptr_null(touch_lookup_window(&m, BASE + 7 * P, P));
	touch_free(&m);
}
END_TEST

START_TEST(test_major)
{
	struct touch_map m = {0};

	touch_add(&m, BASE + 3 * P + 8, 11, 0, 1, true);
	touch_add(&m, BASE + 3 * P, 11, 0, 1, true);
	touch_add(&m, BASE + 3 * P, 11, 0, 1, false);
	touch_add(&m, BASE + 9 * P, 11, 0, 2, true);
	touch_flush(&m);
	touch_add(&m, BASE + P, 11, 0, 3, true);
	touch_flush(&m);
	ck_assert_uint_eq(m.nmajor, 3);
	ck_assert(touch_major(&m, BASE + 3 * P + 100));
	ck_assert(!touch_major(&m, BASE + 4 * P));
	/* a major sample names no toucher by itself */
	ck_assert_int_eq(tid_of(&m, BASE + 9 * P), 0);
	ck_assert_int_eq(tid_of(&m, BASE + 3 * P), 11);
	ck_assert_uint_eq(touch_major_next(&m, BASE + 2 * P, BASE + 100 * P), BASE + 3 * P);
	ck_assert_uint_eq(touch_major_next(&m, BASE + 10 * P, BASE + 100 * P), 0);
	ck_assert_uint_eq(touch_major_next(&m, BASE + 4 * P, BASE + 9 * P), 0);
	touch_free(&m);
}
END_TEST

START_TEST(test_forget)
{
	struct touch_map m = {0};

	for (int i = 0; i < 30; i++)
		touch_add(&m, BASE + (uint64_t)i * P,
		          i < 10   ? 11
		          : i < 20 ? 12
		                   : 13,
		          0, (uint64_t)i, false);
	touch_add(&m, BASE + 15 * P, 12, 0, 1, true);
	touch_flush(&m);
	ck_assert_uint_eq(m.n, 3);
	/* cut the middle run in two */
	touch_forget(&m, BASE + 12 * P, BASE + 17 * P);
	ck_assert_uint_eq(m.n, 4);
	ck_assert_int_eq(tid_of(&m, BASE + 11 * P), 12);
	ck_assert_int_eq(tid_of(&m, BASE + 12 * P), 0);
	ck_assert_int_eq(tid_of(&m, BASE + 16 * P), 0);
	ck_assert_int_eq(tid_of(&m, BASE + 17 * P), 12);
	ck_assert_int_eq(tid_of(&m, BASE + 25 * P), 13);
	ck_assert(!touch_major(&m, BASE + 15 * P));
	/* forget across runs */
	touch_forget(&m, BASE + 5 * P, BASE + 25 * P);
	ck_assert_int_eq(tid_of(&m, BASE + 4 * P), 11);
	ck_assert_int_eq(tid_of(&m, BASE + 5 * P), 0);
	ck_assert_int_eq(tid_of(&m, BASE + 24 * P), 0);
	ck_assert_int_eq(tid_of(&m, BASE + 25 * P), 13);
	ck_assert_uint_eq(m.n, 2);
	/* the page faulted again is a new first touch */
	touch_add(&m, BASE + 12 * P, 14, 0, 99, false);
	touch_flush(&m);
	ck_assert_int_eq(tid_of(&m, BASE + 12 * P), 14);
	touch_forget(&m, 0, UINT64_MAX);
	ck_assert_uint_eq(m.n, 0);
	touch_free(&m);
}
END_TEST

START_TEST(test_bounded)
{
	struct touch_map m = {0};
	uint64_t pages = 1u << 20; /* 4 GiB, one sample a page */
	int bad = 0;

	for (int batch = 0; batch < 8; batch++) {
		/* no ck_assert in the loop: Check records each one through a pipe */
		for (uint64_t i = 0; i < pages / 8; i++) {
			uint64_t page = (uint64_t)batch * (pages / 8) + i;

			bad |= touch_add(&m, BASE + page * P, 11, 0, page, false);
		}
		bad |= touch_flush(&m);
	}
	ck_assert_int_eq(bad, 0);
	ck_assert_uint_eq(m.n, 8); /* a run per generation */
	ck_assert_int_eq(tid_of(&m, BASE + (pages - 1) * P), 11);
	/* the queue's capacity is the largest batch, the runs nothing */
	ck_assert_uint_le(touch_memory(&m), (pages / 8) * sizeof(struct touch_pending) * 2);
	ck_assert_uint_eq(m.dropped, 0);
	touch_free(&m);
}
END_TEST

Suite *touch_suite(void)
{
	Suite *s = suite_create("touch");
	TCase *t = tcase_create("core");

	tcase_add_test(t, test_earliest);
	tcase_add_test(t, test_runs);
	tcase_add_test(t, test_window);
	tcase_add_test(t, test_major);
	tcase_add_test(t, test_forget);
	tcase_add_test(t, test_bounded);
	suite_add_tcase(s, t);
	return s;
}
