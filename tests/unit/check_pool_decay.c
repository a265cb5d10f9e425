/*
 * check_pool_decay.c - decay (suite "pool_decay"): idle pages go back after
 * decay_ms, from a thread's cache, the depot and remote lists, through the
 * decay thread or inline passes; when the decay thread starts; and old
 * depot blocks give their pages back, ahead of decay, as leases grow.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scratch.h"
#include "segment.h"
#include "shim.h"
#include "suites.h"

#include "check_pool.h"

/* Set the pools up and let them live ms: the decay thread starts only in
 * a process older than one decay period (a shorter one never needs it). */
static void pools_age(unsigned ms)
{
	(void)total_stats();
	usleep(ms * 1000);
}

/* Threads of this process named name. */
static int threads_named(const char *name)
{
	char path[300], comm[32];
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f != NULL && fgets(comm, sizeof(comm), f) != NULL) {
			comm[strcspn(comm, "\n")] = '\0';
			n += strcmp(comm, name) == 0;
		}
		if (f != NULL)
			fclose(f);
	}
	closedir(d);
	return n;
}

/* A process younger than one decay period starts no thread: cat or grep
 * under the shim, whose buffers are pooled, stay single-threaded. The
 * first slow-path call after that period starts it. */
START_TEST(test_decay_thread_waits_a_period)
{
	conf_add("decay_ms:4000"); /* a period of 1 s */
	scratch_release(scratch_acquire(MIB));
	scratch_release(scratch_acquire(4 * MIB));
	ck_assert_int_eq(threads_named("scratch-decay"), 0);
	usleep(1100 * 1000);
	scratch_release(scratch_acquire(16 * MIB)); /* a miss: the slow path */
	for (int i = 0; i < 200 && threads_named("scratch-decay") == 0; i++)
		usleep(10000); /* it names itself */
	ck_assert_int_eq(threads_named("scratch-decay"), 1);
}
END_TEST

static long page_faults(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_minflt + ru.ru_majflt;
}

static void *idle_thread(void *arg)
{
	return arg;
}

/* The decay thread starts a period into the process, in what a host
 * measures as its steady state: its stack was mapped and its top written
 * at the first miss, so its start faults no page of its own (it faulted 2
 * or 3 before). glibc's own allocation for the new thread (its TLS vector,
 * from the heap) may still take a new heap page: at most 1. */
START_TEST(test_decay_thread_start_faults_nothing)
{
	void *a, *b;
	long before;

	conf_add("decay_ms:4000"); /* a period of 1 s */
	/* Check forks each test: glibc's pages that a thread's start writes
	 * (its heap, its thread lists) are the parent's until written once */
	(void)run_thread(idle_thread, NULL);
	a = scratch_acquire(2 * MIB);
	scratch_release(a);
	usleep(1100 * 1000);
	before = page_faults();
	b = scratch_acquire(3 * MIB / 2); /* a larger-class hit: the slow path */
	ck_assert_ptr_eq(b, a);
	usleep(300 * 1000); /* the thread starts and makes its first pass */
	ck_assert_int_le(page_faults() - before, 1);
	scratch_release(b);
	ck_assert_int_eq(threads_named("scratch-decay"), 1);
}
END_TEST

/* Wait (at most about 20 s) until the process's trimmed bytes reach want. */
static uint64_t wait_trimmed(uint64_t want)
{
	uint64_t got = 0;

	for (int i = 0; i < 2000 && (got = total_stats().trimmed) < want; i++)
		usleep(10000);
	return got;
}

/* A burst within the first period that holds DECAY_EARLY_BYTES (64 MiB)
 * starts the thread at once: a host that then only frees, or goes quiet,
 * gets the burst's pages back with no call of its own. */
START_TEST(test_decay_thread_early_for_a_burst)
{
	void *p[3];

	conf_add("decay_ms:2000"); /* a period of 500 ms */
	for (int i = 0; i < 3; i++)
		memset(p[i] = scratch_acquire(32 * MIB), 1, MIB);
	for (int i = 0; i < 3; i++)
		scratch_release(p[i]);
	expect_pool(96 * MIB, 0);
	for (int i = 0; i < 200 && threads_named("scratch-decay") == 0; i++)
		usleep(10000);
	ck_assert_int_eq(threads_named("scratch-decay"), 1);
	ck_assert_uint_eq(wait_trimmed(96 * MIB), 96 * MIB);
	expect_pool(0, 0);
}
END_TEST

/* An idle cached block decays: its pages go back, its address and class
 * stay (it comes back, fresh and zero), and the equations hold after each
 * step. */
START_TEST(test_decay_cached_block)
{
	char *p, *q;
	size_t cap;

	conf_add("decay_ms:50");
	pools_age(20);
	p = scratch_acquire(3 * MIB);
	cap = scratch_usable_size(p);
	memset(p, 0x77, cap);
	expect_pool(cap, cap);
	scratch_release(p);
	expect_pool(cap, 0);
	ck_assert_uint_eq(wait_trimmed(cap), cap);
	expect_pool(0, 0);
	q = scratch_acquire_zeroed(3 * MIB); /* fresh: not written, reads zero */
	ck_assert_ptr_eq(q, p);
	ck_assert_int_eq(q[0], 0);
	ck_assert_int_eq(q[cap - 1], 0);
	expect_pool(cap, cap);
	ck_assert_uint_eq(thread_stats().misses, 2);
	scratch_release(q);
	expect_pool(cap, 0);
}
END_TEST

/* A bin is in block order, not in time order: the decay takes an idle
 * block out of the middle of one (the older of two, at its head) and
 * leaves the younger one cached, with its pages. */
START_TEST(test_decay_inside_a_bin)
{
	char *p[2], *x, *y;
	size_t cap;

	conf_add("decay_ms:800");
	pools_age(250); /* a period: the first miss starts the decay thread */
	for (int i = 0; i < 2; i++)
		memset(p[i] = scratch_acquire(3 * MIB), 0x5a, 3 * MIB);
	cap = scratch_usable_size(p[0]);
	scratch_release(p[0]);
	scratch_release(p[1]);
	x = scratch_acquire(3 * MIB); /* the bin's head */
	y = scratch_acquire(3 * MIB);
	scratch_release(x);
	usleep(400 * 1000);
	scratch_release(y); /* behind x in the bin, idle 400 ms less */
	expect_pool(2 * cap, 0);
	ck_assert_uint_eq(wait_trimmed(cap), cap);
	ck_assert_uint_eq(total_stats().trimmed, cap); /* x alone */
	expect_pool(cap, 0);
	ck_assert_ptr_eq(scratch_acquire(3 * MIB), y); /* still cached: a hit */
	ck_assert_int_eq(y[3 * MIB - 1], 0x5a);
	expect_pool(cap, cap);
	ck_assert_uint_eq(thread_stats().misses, 2);
	ck_assert_uint_eq(thread_stats().hits, 3);
	scratch_release(y);
}
END_TEST

struct quiet {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int step;
	void *block;
	struct scratch_stats after;
};

static void quiet_wait(struct quiet *q, int step)
{
	pthread_mutex_lock(&q->m);
	while (q->step < step)
		pthread_cond_wait(&q->cv, &q->m);
	pthread_mutex_unlock(&q->m);
}

static void quiet_go(struct quiet *q, int step)
{
	pthread_mutex_lock(&q->m);
	q->step = step;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->m);
}

/* A burst, then the thread parks with its blocks in its cache and makes no
 * call at all; then it comes back. */
static void *quiet_thread(void *arg)
{
	struct quiet *q = arg;
	void *p[3];

	for (int i = 0; i < 3; i++)
		memset(p[i] = scratch_acquire(8 * MIB), 1, 8 * MIB);
	for (int i = 0; i < 3; i++)
		scratch_release(p[i]);
	q->block = p[2];
	quiet_go(q, 1);
	quiet_wait(q, 2);
	p[0] = scratch_acquire(8 * MIB);
	q->after = thread_stats();
	scratch_release(p[0]);
	return p[0];
}

/* The decay thread returns the pages of a thread that went quiet, with no
 * call from anyone; the thread finds its cache consistent when it comes
 * back. */
START_TEST(test_decay_quiet_thread)
{
	struct quiet q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, {0}};
	pthread_t t;
	void *back;
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("decay_ms:100");
	pools_age(30);
	ck_assert_int_eq(pthread_create(&t, NULL, quiet_thread, &q), 0);
	quiet_wait(&q, 1);
	s = total_stats();
	ck_assert_uint_eq(s.retained, 24 * MIB);
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_eq(wait_trimmed(24 * MIB), 24 * MIB);
	s = total_stats();
	ck_assert_uint_eq(s.retained, 0);
	ck_assert_uint_eq(s.leased, 0);
	quiet_go(&q, 2);
	ck_assert_int_eq(pthread_join(t, &back), 0);
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(q.after.retained, 8 * MIB); /* one block again */
	ck_assert_uint_eq(q.after.leased, 8 * MIB);
	ck_assert_uint_eq(q.after.misses, 4);
	s = total_stats(); /* the thread's cache went to the depot at its exit */
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_le(s.retained, 8 * MIB);
}
END_TEST

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *release_it(void *p)
{
	scratch_release(p);
	return NULL;
}

/*
 * A block another thread frees goes idle at that free, not at its owner's
 * last one: it decays decay_ms after it, though its owner has freed
 * nothing since a mark of the passes older than that (a mark that holds
 * the very frees count the block is stamped with, which decayed it in the
 * next pass). The equations hold after each step. by_owner: the owner's
 * slow path drains its remote list (and frees once more); else the pass
 * does. Whether a pass could decay it yet is told by the time since the
 * remote free, read before it: under decay_ms, none may.
 */
static void remote_block_waits(bool by_owner)
{
	const unsigned decay_ms = 400;
	size_t ccap, pcap, zcap = 0;
	uint64_t freed;
	char *c, *p, *z;

	conf_add("decay_ms:400");
	pools_age(decay_ms / 4 + 20); /* the next miss starts the thread */
	p = scratch_acquire(8 * MIB);
	pcap = scratch_usable_size(p);
	memset(p, 1, pcap);
	c = scratch_acquire(4 * MIB);
	ccap = scratch_usable_size(c);
	memset(c, 2, ccap);
	expect_pool(pcap + ccap, pcap + ccap);
	scratch_release(c); /* the owner's last free */
	expect_pool(pcap + ccap, pcap);
	/* c decays by a mark of this frees count; later passes hold one too */
	ck_assert_uint_eq(wait_trimmed(ccap), ccap);
	expect_pool(pcap, pcap);
	freed = now_ms();
	run_thread(release_it, p);
	expect_pool(pcap, 0);
	if (by_owner) {
		z = scratch_acquire_zeroed(64 * KIB); /* a slow path: the drain */
		zcap = scratch_usable_size(z);
		ck_assert_ptr_ne(z, p); /* 8 MiB is beyond what it may take */
		expect_pool(pcap + zcap, zcap);
		scratch_release(z);
		expect_pool(pcap + zcap, 0);
	}
	usleep(decay_ms / 2 * 1000); /* two periods: passes come and go */
	if (now_ms() - freed < decay_ms) {
		ck_assert_uint_eq(total_stats().trimmed, ccap);
		expect_pool(pcap + zcap, 0);
	}
	ck_assert_uint_eq(wait_trimmed(ccap + pcap + zcap), ccap + pcap + zcap);
	expect_pool(0, 0);
}

/*
 * A limited lease (pool_tail.c: a small request in the block of a large
 * written one) that another thread frees, and that a decay pass, not its
 * owner's drain, takes from the owner's remote list: the block decays and
 * is leased again whole, and the old lease's slot, which would have given
 * back the pages past its limit once it outlived 256 slow-path leases,
 * must leave the new lease's pages alone. (A stress host lost a buffer's
 * pages past its first 776 KiB this way: tests/shim/shim_stress.test.)
 */
START_TEST(test_decay_pass_takes_a_limited_lease)
{
	const unsigned decay_ms = 400;
	size_t cap;
	char *big, *p;

	conf_add("decay_ms:400");
	pools_age(decay_ms / 4 + 20); /* the next miss starts the thread */
	big = scratch_acquire(16 * MIB);
	cap = scratch_usable_size(big);
	memset(big, 0x11, cap);
	scratch_release(big);
	p = scratch_acquire(2 * MIB);
	ck_assert_ptr_eq(p, big);
	ck_assert_uint_eq(scratch_usable_size(p), 2 * MIB); /* limited */
	run_thread(release_it, p);
	/* a pass takes our remote list (we are outside our bins, asleep),
	 * a later one decays the block */
	ck_assert_uint_eq(wait_trimmed(cap), cap);
	p = scratch_acquire(16 * MIB);
	ck_assert_ptr_eq(p, big);
	memset(p, 0x33, cap);
	slow_leases(300);
	for (size_t i = 0; i < cap; i += 4 * KIB)
		ck_assert_int_eq(p[i], 0x33);
	scratch_release(p);
}
END_TEST

START_TEST(test_decay_remote_freed_by_pass)
{
	remote_block_waits(false);
}
END_TEST

START_TEST(test_decay_remote_freed_by_owner)
{
	remote_block_waits(true);
}
END_TEST

/* Without the thread (decay_thread:false), passes ride on slow-path calls:
 * the idle block decays once a call comes after decay_ms. */
START_TEST(test_decay_inline)
{
	void *p, *z;
	size_t cap;

	conf_add("decay_ms:20,decay_thread:false");
	p = scratch_acquire(8 * MIB); /* beyond what 64 KiB requests may take */
	cap = scratch_usable_size(p);
	memset(p, 1, cap);
	scratch_release(p);
	usleep(100000);
	expect_pool(cap, 0); /* nothing runs by itself */
	for (int i = 0; i < 64 && total_stats().trimmed < cap; i++) {
		z = scratch_acquire_zeroed(64 * KIB); /* always a slow-path call */
		scratch_release(z);
		usleep(30000);
	}
	ck_assert_uint_eq(total_stats().trimmed, cap);
	expect_pool(scratch_class_size(64 * KIB), 0);
}
END_TEST

/* Depot blocks decay too, and a fork's child decays its own. */
START_TEST(test_decay_depot_and_fork)
{
	size_t size = 4 * MIB;
	int status;
	pid_t pid;

	conf_add("decay_ms:50");
	pools_age(20);
	run_thread(leave_in_depot, &size);
	ck_assert_uint_eq(total_stats().retained, size);
	ck_assert_uint_eq(wait_trimmed(size), size);
	ck_assert_uint_eq(total_stats().retained, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p = scratch_acquire(size);
		uint64_t base = total_stats().trimmed;

		memset(p, 2, size);
		scratch_release(p);
		_exit(wait_trimmed(base + size) == base + size && total_stats().retained == 0 ? 0
		                                                                              : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* A thread's body: leave two blocks of the 2 MiB class, each with its
 * first 1.75 MiB + 4 KiB written, and one of 448 KiB in the depot. */
static void *leave_old_set(void *arg)
{
	void *p[3];

	(void)arg;
	p[0] = scratch_acquire(7 * MIB / 4 + 4 * KIB);
	p[1] = scratch_acquire(7 * MIB / 4 + 4 * KIB);
	p[2] = scratch_acquire(448 * KIB);
	for (int i = 0; i < 3; i++) {
		memset(p[i], 1, i < 2 ? 7 * MIB / 4 + 4 * KIB : 448 * KIB);
		scratch_release(p[i]); /* cached, then flushed to the depot at exit */
	}
	return NULL;
}

/* Four blocks of the 4 MiB class first leased at 3.5 MiB + 4 KiB, then
 * at 4 MiB: each of the second leases writes 508 KiB past its block's
 * pages (a cache hit on the slow path). Returns the bytes trimmed. */
static uint64_t grow_four(bool sleep_first)
{
	void *p[4];
	uint64_t trimmed;

	for (int i = 0; i < 4; i++)
		p[i] = scratch_acquire(7 * MIB / 2 + 4 * KIB);
	for (int i = 0; i < 4; i++)
		scratch_release(p[i]);
	(void)run_thread(leave_old_set, NULL);
	ck_assert_uint_eq(total_stats().retained,
	                  16 * MIB + 4 * MIB + scratch_class_size(448 * KIB));
	if (sleep_first)
		usleep(40 * 1000); /* past decay_ms / 16 */
	trimmed = total_stats().trimmed;
	for (int i = 0; i < 4; i++) {
		p[i] = scratch_acquire(4 * MIB);
		ck_assert_ptr_nonnull(p[i]);
	}
	ck_assert_uint_eq(thread_stats().hits, 4);
	trimmed = total_stats().trimmed - trimmed;
	for (int i = 0; i < 4; i++)
		scratch_release(p[i]);
	return trimmed;
}

/* Leases that grow into their blocks owe their new pages, and depot blocks
 * idle for decay_ms / 16 within 2x of the class give theirs back, each
 * within what is owed: 4 x 508 KiB pays for one block of 1.75 MiB + 4 KiB
 * of pages, not two, and not the 448 KiB one, four classes further below.
 * Nothing goes back for blocks idle less than decay_ms / 16, nor with
 * decay_ms:0 (no decay). Decay itself takes none: its passes ride on
 * every 16th slow path here. */
START_TEST(test_growth_sheds_old_depot_blocks)
{
	conf_add("decay_thread:false,decay_ms:480"); /* old: 30 ms */
	ck_assert_uint_eq(grow_four(true), 2 * MIB);
	ck_assert_uint_eq(total_stats().retained,
	                  16 * MIB + 2 * MIB + scratch_class_size(448 * KIB));
}
END_TEST

START_TEST(test_growth_keeps_young_depot_blocks)
{
	conf_add("decay_thread:false,decay_ms:600000"); /* old: 37.5 s */
	ck_assert_uint_eq(grow_four(true), 0);
	ck_assert_uint_eq(total_stats().retained,
	                  16 * MIB + 4 * MIB + scratch_class_size(448 * KIB));
}
END_TEST

START_TEST(test_growth_keeps_depot_blocks_without_decay)
{
	conf_add("decay_thread:false,decay_ms:0");
	ck_assert_uint_eq(grow_four(true), 0);
}
END_TEST

Suite *pool_decay_suite(void)
{
	Suite *s = suite_create("pool_decay");
	TCase *tc = tcase_create("decay");

	tcase_set_timeout(tc, 60);
#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	/* a sanitizer's runtime faults pages of its own for a new thread */
	tcase_add_test(tc, test_decay_thread_start_faults_nothing);
#endif
	/* ThreadSanitizer cannot see the gate's membarrier: its builds keep
	 * decay passes out of other threads' caches (src/pool_gate.c) */
#ifndef UNDER_TSAN
	tcase_add_test(tc, test_decay_cached_block);
	tcase_add_test(tc, test_decay_inside_a_bin);
	tcase_add_test(tc, test_decay_quiet_thread);
	tcase_add_test(tc, test_decay_depot_and_fork);
	tcase_add_test(tc, test_decay_remote_freed_by_pass);
	tcase_add_test(tc, test_decay_remote_freed_by_owner);
	tcase_add_test(tc, test_decay_pass_takes_a_limited_lease);
#endif
	tcase_add_test(tc, test_decay_inline);
	tcase_add_test(tc, test_growth_sheds_old_depot_blocks);
	tcase_add_test(tc, test_growth_keeps_young_depot_blocks);
	tcase_add_test(tc, test_growth_keeps_depot_blocks_without_decay);
	tcase_add_test(tc, test_decay_thread_waits_a_period);
#ifndef UNDER_TSAN
	tcase_add_test(tc, test_decay_thread_early_for_a_burst); /* its pass enters our cache */
#endif
	suite_add_tcase(s, tc);
	return s;
}
