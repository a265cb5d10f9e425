/*
 * check_pool.h - what the pool suites share (check_pool*.c): sizes, the
 * configuration of a case, and the statistics read through the public API.
 *
 * Check forks every test, so each test may set SCRATCH_CONF before its
 * first pool call: the library reads it once, on first use.
 */
#ifndef SCRATCH_TESTS_CHECK_POOL_H
#define SCRATCH_TESTS_CHECK_POOL_H

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "scratch.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* Add keys to SCRATCH_CONF for this test (before its first pool call),
 * keeping what the environment already sets (valgrind.test sets some). */
static inline void conf_add(const char *keys)
{
	const char *old = getenv("SCRATCH_CONF");
	char buf[512];

	snprintf(buf, sizeof(buf), "%s%s%s", old ? old : "", old && *old ? "," : "", keys);
	setenv("SCRATCH_CONF", buf, 1);
}

static inline struct scratch_stats thread_stats(void)
{
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_int_eq(scratch_stats_thread(&s), 0);
	return s;
}

static inline struct scratch_stats total_stats(void)
{
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_int_eq(scratch_stats_total(&s), 0);
	return s;
}

/* Slow-path leases (a zeroed one always is) of this thread, each let go:
 * they age its limited leases (pool_tail.c). */
static inline void slow_leases(int n)
{
	for (int i = 0; i < n; i++)
		scratch_release(scratch_acquire_zeroed(64 * KIB));
}

/* Run fn(arg) on a thread of its own and wait for it: its return value. */
static inline void *run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	return ret;
}

/* The equations of scratch.h, exact for this thread and for the process:
 * the thread holds retained bytes of which leased are lent, and no other
 * thread, the depot or an orphan holds any. */
static inline void expect_pool(uint64_t retained, uint64_t leased)
{
	struct scratch_stats t = thread_stats(), p = total_stats();

	ck_assert_uint_eq(t.retained, retained);
	ck_assert_uint_eq(t.leased, leased);
	ck_assert_uint_eq(p.retained, retained);
	ck_assert_uint_eq(p.leased, leased);
	ck_assert_uint_eq(t.allocs, t.hits + t.depot_hits + t.misses);
}

/* A thread's body: acquire a block of *(size_t *)arg bytes and release
 * it, then exit, so that its cache goes to the depot. Returns the block. */
static inline void *leave_in_depot(void *arg)
{
	void *p = scratch_acquire(*(size_t *)arg);

	scratch_release(p); /* cached, then flushed to the depot at exit */
	return p;
}

#endif
