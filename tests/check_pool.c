/*
 * check_pool.c - the thread-local scratch pools, through the public API.
 *
 * Check forks every test, so each test may set SCRATCH_CONF before its
 * first pool call: the library reads it once, on first use.
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

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* Add keys to SCRATCH_CONF for this test (before its first pool call),
 * keeping what the environment already sets (valgrind.test sets some). */
static void conf_add(const char *keys)
{
	const char *old = getenv("SCRATCH_CONF");
	char buf[512];

	snprintf(buf, sizeof(buf), "%s%s%s", old ? old : "", old && *old ? "," : "", keys);
	setenv("SCRATCH_CONF", buf, 1);
}

static struct scratch_stats thread_stats(void)
{
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_int_eq(scratch_stats_thread(&s), 0);
	return s;
}

static struct scratch_stats total_stats(void)
{
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_int_eq(scratch_stats_total(&s), 0);
	return s;
}

static void *run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* core                                                                    */
/* ---------------------------------------------------------------------- */

START_TEST(test_miss_then_hit)
{
	void *p, *q;
	struct scratch_stats s = {.size = sizeof(s)};

	p = scratch_acquire(100 * KIB);
	ck_assert_ptr_nonnull(p);
	s = thread_stats();
	ck_assert_uint_eq(s.allocs, 1);
	ck_assert_uint_eq(s.misses, 1);
	ck_assert_uint_eq(s.hits, 0);
	ck_assert_int_eq(scratch_release(p), 0);
	q = scratch_acquire(100 * KIB);
	ck_assert_ptr_eq(p, q); /* the same, warm block */
	s = thread_stats();
	ck_assert_uint_eq(s.allocs, 2);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.misses, 1);
	ck_assert_uint_eq(s.frees, 1);
	ck_assert_int_eq(scratch_release(q), 0);
}
END_TEST

static void *first_acquire(void *arg)
{
	struct scratch_stats *out = arg;
	void *p = scratch_acquire(100 * KIB);

	*out = thread_stats();
	scratch_release(p);
	return NULL;
}

START_TEST(test_threads_isolated)
{
	struct scratch_stats s = {.size = sizeof(s)};
	void *p = scratch_acquire(100 * KIB);

	scratch_release(p); /* now cached in this thread */
	run_thread(first_acquire, &s);
	ck_assert_uint_eq(s.allocs, 1);
	ck_assert_uint_eq(s.misses, 1);
	ck_assert_uint_eq(s.hits, 0);
}
END_TEST

/* A thread beyond max_threads gets no cache: the orphan path lends it
 * blocks from the depot, under the lock, and the totals still add up. */
struct orphan_run {
	void *held;               /* lent to the orphan, released by the main thread */
	void *own;                /* the main thread's block, released by the orphan */
	struct scratch_stats mid; /* totals while the orphan holds both */
	struct scratch_stats self;
};

static void *orphan_thread(void *arg)
{
	struct orphan_run *r = arg;
	void *p;

	p = scratch_acquire(100 * KIB);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 100 * KIB);
	ck_assert_int_eq(scratch_release(p), 0);
	/* The depot gave it back: the same block. */
	ck_assert_ptr_eq(scratch_acquire(100 * KIB), p);
	r->held = p;
	r->mid = total_stats();
	r->self = thread_stats();
	ck_assert_int_eq(scratch_release(r->own), 0); /* a cached thread's block */
	return NULL;
}

START_TEST(test_orphan_threads)
{
	struct orphan_run r = {0};
	struct scratch_stats t = {.size = sizeof(t)};
	size_t cap;

	conf_add("max_threads:1");
	r.own = scratch_acquire(300 * KIB); /* takes the only slot */
	ck_assert_ptr_nonnull(r.own);
	cap = scratch_usable_size(r.own);
	run_thread(orphan_thread, &r);
	ck_assert_uint_eq(r.self.threads, 0); /* no cache of its own */
	ck_assert_uint_eq(r.mid.leased, cap + scratch_usable_size(r.held));
	ck_assert_uint_ge(r.mid.retained, r.mid.leased);
	t = total_stats();
	ck_assert_uint_eq(t.leased, scratch_usable_size(r.held));
	ck_assert_int_eq(scratch_release(r.held), 0);
	t = total_stats();
	ck_assert_uint_eq(t.leased, 0);
	ck_assert_uint_eq(t.allocs, 3);
	ck_assert_uint_eq(t.frees, 3);
	ck_assert_uint_ge(t.retained, cap);
}
END_TEST

/* ThreadSanitizer finishes a thread in glibc's last destructor round, where
 * the next case still runs code: not something it supports (UNDER_TSAN:
 * suites.h). */
#ifndef UNDER_TSAN
/* A thread whose first pool call comes late in its exit: from a key
 * destructor that glibc calls in its second round (the first round only
 * re-arms it), after the round passed the library's key. The slot's own
 * destructor then gets two calls of the three it waits for; the slot must
 * still come back once the thread is gone, or after max_threads such
 * threads no thread would get a cache. */
static pthread_key_t late_key;

static void late_dtor(void *v)
{
	if (v == (void *)1) {
		pthread_setspecific(late_key, (void *)2); /* again, next round */
		return;
	}
	void *p = scratch_acquire(64 * KIB); /* this thread's first pool call */
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(scratch_release(p), 0);
}

static void *late_thread(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

/* Run a late thread and wait until the kernel has let go of it. pthread_join
 * returns once the kernel clears the thread's tid word, which is before the
 * task is released: for a moment after the join tgkill still finds it, and
 * the library (rightly) takes a thread it can still signal for alive. */
static void run_late_thread(void)
{
	pid_t tid = 0;

	run_thread(late_thread, &tid);
	ck_assert_int_gt(tid, 0);
	for (int i = 0; i < 10000; i++) {
		if (syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH)
			return;
		usleep(1000);
	}
	ck_abort_msg("thread %d still there 10 s after its join", (int)tid);
}

static void *cached_thread(void *arg)
{
	struct scratch_stats *s = arg;
	void *p = scratch_acquire(64 * KIB);

	ck_assert_ptr_nonnull(p);
	*s = thread_stats();
	ck_assert_int_eq(scratch_release(p), 0);
	return NULL;
}

START_TEST(test_late_exit_slots)
{
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("max_threads:2");
	/* The library's own key first (so it is created before late_key, and
	 * a round visits it before late_key): the main thread takes a slot. */
	ck_assert_int_eq(scratch_release(scratch_acquire(64 * KIB)), 0);
	ck_assert_int_eq(pthread_key_create(&late_key, late_dtor), 0);
	for (int i = 0; i < 8; i++)
		run_late_thread();
	run_thread(cached_thread, &s);
	ck_assert_uint_eq(s.threads, 1); /* it got a cache slot */
	ck_assert_uint_eq(s.allocs, 1);
	s = total_stats();
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_eq(s.allocs, 10);
	ck_assert_uint_eq(s.frees, 10);
	pthread_key_delete(late_key);
}
END_TEST

/* With slots to spare nothing forces a reclaim: scratch_trim must still
 * take the caches of such threads back. */
START_TEST(test_trim_takes_late_exit_caches)
{
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_int_eq(scratch_release(scratch_acquire(64 * KIB)), 0);
	ck_assert_int_eq(pthread_key_create(&late_key, late_dtor), 0);
	for (int i = 0; i < 4; i++)
		run_late_thread();
	ck_assert_int_eq(scratch_release(scratch_acquire(64 * KIB)), 0); /* main's own */
	scratch_trim();
	s = total_stats();
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_eq(s.retained, 0);
	ck_assert_uint_eq(s.frees, 6);
	pthread_key_delete(late_key);
}
END_TEST
#endif

START_TEST(test_classes_apart)
{
	void *a = scratch_acquire(64 * KIB), *b = scratch_acquire(200 * KIB);
	struct scratch_stats s = {.size = sizeof(s)};

	ck_assert_ptr_ne(a, b);
	s = thread_stats();
	ck_assert_uint_eq(s.misses, 2);
	ck_assert_uint_eq(s.hits, 0);
	ck_assert_uint_ge(scratch_usable_size(b), 200 * KIB);
	scratch_release(b);
	scratch_release(a);
	/* a 200 KiB request cannot take the 64 KiB block, newer as it is */
	ck_assert_ptr_eq(scratch_acquire(200 * KIB), b);
	/* and the 64 KiB block is still there for its own class */
	ck_assert_ptr_eq(scratch_acquire(64 * KIB), a);
}
END_TEST

START_TEST(test_usable_size_and_alignment)
{
	unsigned seed = 7;
	size_t lo, hi;

	/* the class structure alone: no block serves a smaller class's request */
	conf_add("max_fit:1");
	ck_assert(scratch_range(&lo, &hi));
	ck_assert_uint_eq(lo, 64 * KIB);
	ck_assert_uint_eq(hi, 1024 * MIB);
	for (int i = 0; i < 400; i++) {
		size_t size = lo + (size_t)rand_r(&seed) % (i < 300 ? 8 * MIB : 300 * MIB);
		void *p = scratch_acquire(size);
		size_t cap = scratch_usable_size(p);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_ge(cap, size);
		ck_assert_uint_eq(cap, scratch_class_size(size));
		/* at most 25% above the request */
		ck_assert_msg(cap * 4 <= size * 5, "size %zu got %zu", size, cap);
		ck_assert_uint_eq((uintptr_t)p % 4096, 0);
		if (cap >= 2 * MIB)
			ck_assert_uint_eq((uintptr_t)p % (2 * MIB), 0);
		/* the first and the last byte are writable */
		((char *)p)[0] = 1;
		((char *)p)[cap - 1] = 1;
		ck_assert_int_eq(scratch_release(p), 0);
	}
	ck_assert_uint_eq(scratch_class_size(lo), lo);
	ck_assert_uint_eq(scratch_class_size(lo - 1), 0);
	ck_assert_uint_eq(scratch_class_size(hi + 1), 0);
}
END_TEST

START_TEST(test_out_of_range)
{
	/* The process's first calls, before the pools are set up. */
	errno = 0;
	ck_assert_ptr_null(scratch_acquire(0));
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(scratch_release(NULL), -EINVAL);
	errno = 0;
	ck_assert_ptr_null(scratch_acquire(1000));
	ck_assert_int_eq(errno, ERANGE);
	errno = 0;
	ck_assert_ptr_null(scratch_acquire((size_t)2 << 30));
	ck_assert_int_eq(errno, ERANGE);
	errno = 0;
	ck_assert_ptr_null(scratch_acquire_aligned(3, 64 * KIB));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(scratch_acquire_aligned(8192, 64 * KIB)); /* above page alignment */
	ck_assert_int_eq(errno, EINVAL);
	void *p = scratch_acquire_aligned(2 * MIB, 4 * MIB);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % (2 * MIB), 0);
	scratch_release(p);
	p = scratch_acquire_aligned(4096, 64 * KIB);
	ck_assert_ptr_nonnull(p);
	scratch_release(p);
}
END_TEST

START_TEST(test_foreign_pointers)
{
	char local[64];
	void *heap = malloc(100);
	char *p = scratch_acquire(64 * KIB);
	int saved;

	ck_assert(!scratch_owns(NULL));
	ck_assert(!scratch_owns(local));
	ck_assert(!scratch_owns(heap));
	ck_assert(scratch_owns(p));
	ck_assert(!scratch_owns(p + 4096)); /* inside, but not a block start */
	ck_assert(!scratch_owns(p + 1));
	ck_assert_uint_eq(scratch_usable_size(heap), 0);
	errno = 1234;
	ck_assert_int_eq(scratch_release(heap), -EINVAL);
	ck_assert_int_eq(scratch_release(NULL), -EINVAL);
	ck_assert_int_eq(scratch_release(p + 4096), -EINVAL);
	saved = errno;
	ck_assert_int_eq(saved, 1234); /* never changes errno */
	ck_assert_int_eq(scratch_release(p), 0);
	ck_assert(!scratch_owns(p));                   /* idle blocks are not lent */
	ck_assert_int_eq(scratch_release(p), -EINVAL); /* a double free is refused */
	ck_assert_int_eq(errno, 1234);
	free(heap);
}
END_TEST

START_TEST(test_zeroed)
{
	char *p = scratch_acquire_zeroed(300 * KIB), *q;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < 300 * KIB; i += 512)
		ck_assert_int_eq(p[i], 0);
	memset(p, 0xab, 300 * KIB);
	scratch_release(p);
	q = scratch_acquire_zeroed(300 * KIB);
	ck_assert_ptr_eq(p, q); /* recycled, so it had to be cleared */
	for (size_t i = 0; i < 300 * KIB; i++)
		ck_assert_int_eq(q[i], 0);
	scratch_release(q);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* limits                                                                  */
/* ---------------------------------------------------------------------- */

START_TEST(test_cache_count_bound)
{
	void *p[10];
	struct scratch_stats s0 = {.size = sizeof(s0)}, s = {.size = sizeof(s)};

	conf_add("cache_count:4");
	for (int i = 0; i < 10; i++)
		p[i] = scratch_acquire(64 * KIB);
	for (int i = 0; i < 10; i++)
		scratch_release(p[i]);
	s0 = thread_stats();
	for (int i = 0; i < 10; i++)
		p[i] = scratch_acquire(64 * KIB);
	s = thread_stats();
	ck_assert_uint_eq(s.hits - s0.hits, 4);
	ck_assert_uint_eq(s.depot_hits - s0.depot_hits, 6);
	ck_assert_uint_eq(s.misses, 10);
	for (int i = 0; i < 10; i++)
		scratch_release(p[i]);
}
END_TEST

START_TEST(test_cache_bytes_bound)
{
	void *p[8];
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("cache_bytes:256K,depot_bytes:0");
	for (int i = 0; i < 8; i++)
		p[i] = scratch_acquire(64 * KIB);
	for (int i = 0; i < 8; i++)
		scratch_release(p[i]);
	/* four stay cached; the depot takes nothing, so four went to the OS */
	s = total_stats();
	ck_assert_uint_eq(s.retained, 256 * KIB);
	ck_assert_uint_eq(s.trimmed, 256 * KIB);
	ck_assert_uint_eq(s.leased, 0);
}
END_TEST

START_TEST(test_trim)
{
	char *p = scratch_acquire(1 * MIB), *q = scratch_acquire(3 * MIB);
	struct scratch_stats s = {.size = sizeof(s)};
	size_t released;

	memset(p, 0x5a, 1 * MIB);
	scratch_release(p);
	released = scratch_trim();
	ck_assert_uint_eq(released, 1 * MIB);
	s = total_stats();
	ck_assert_uint_eq(s.retained, scratch_usable_size(q)); /* the lent block stays */
	ck_assert_uint_eq(s.leased, scratch_usable_size(q));
	ck_assert_uint_eq(s.trimmed, 1 * MIB);
	/* the trimmed block comes back with fresh (zero) pages */
	p = scratch_acquire(1 * MIB);
	ck_assert_int_eq(p[0], 0);
	ck_assert_int_eq(p[1 * MIB - 1], 0);
	s = thread_stats();
	ck_assert_uint_eq(s.misses, 3);
	scratch_release(p);
	scratch_release(q);
	scratch_thread_flush();
	s = thread_stats();
	ck_assert_uint_eq(s.retained, 0);
	ck_assert_uint_eq(total_stats().retained, 1 * MIB + scratch_class_size(3 * MIB));
}
END_TEST

static void *cache_one(void *arg)
{
	void *p = scratch_acquire(2 * MIB);

	(void)arg;
	scratch_release(p);
	return p;
}

START_TEST(test_trim_reaches_other_threads)
{
	/* another thread's idle block is flushed at that thread's next call */
	void *p = scratch_acquire(64 * KIB);

	scratch_release(p);
	(void)run_thread(cache_one, NULL); /* exits: its cache went to the depot */
	ck_assert_uint_eq(scratch_trim(), 64 * KIB + 2 * MIB);
	ck_assert_uint_eq(total_stats().retained, 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* threads                                                                 */
/* ---------------------------------------------------------------------- */

static pthread_barrier_t four;

static void *hundred(void *arg)
{
	struct scratch_stats *out = arg;

	/* All four run at once, so none inherits another's exited cache. */
	pthread_barrier_wait(&four);
	for (int i = 0; i < 100; i++) {
		char *p = scratch_acquire(256 * KIB);

		p[i] = (char)i;
		scratch_release(p);
	}
	*out = thread_stats();
	pthread_barrier_wait(&four);
	return NULL;
}

START_TEST(test_four_threads_hit_rate)
{
	pthread_t t[4];
	struct scratch_stats s[4], tot = {.size = sizeof(tot)};

	pthread_barrier_init(&four, NULL, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hundred, &s[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(s[i].allocs, 100);
		ck_assert_uint_eq(s[i].misses, 1);
		ck_assert((double)s[i].hits / (double)s[i].allocs >= 0.99);
	}
	tot = total_stats();
	ck_assert_uint_eq(tot.allocs, 400);
	ck_assert_uint_eq(tot.misses, 4);
	ck_assert_uint_eq(tot.hits, 396);
	ck_assert_uint_eq(tot.threads, 4);
}
END_TEST

struct handoff {
	void *p;
	struct scratch_stats st;
};

static void *free_elsewhere(void *arg)
{
	struct handoff *h = arg;

	ck_assert_int_eq(scratch_release(h->p), 0);
	h->st = thread_stats();
	return NULL;
}

START_TEST(test_remote_free_returns_to_owner)
{
	struct handoff h = {.p = scratch_acquire(512 * KIB)};
	struct scratch_stats s = {.size = sizeof(s)};
	void *again;

	memset(h.p, 1, 512 * KIB);
	run_thread(free_elsewhere, &h);
	ck_assert_uint_eq(h.st.remote_frees_out, 1);
	ck_assert_uint_eq(h.st.frees, 1);
	ck_assert_uint_eq(h.st.retained, 0);
	s = thread_stats();
	ck_assert_uint_eq(s.remote_frees_in, 1);
	ck_assert_uint_eq(s.leased, 0); /* credited at once */
	ck_assert_uint_eq(s.retained, 512 * KIB);
	again = scratch_acquire(512 * KIB);
	ck_assert_ptr_eq(again, h.p); /* the owner gets its warm pages back */
	s = thread_stats();
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.misses, 1);
	scratch_release(again);
}
END_TEST

START_TEST(test_exited_thread_cache_reused)
{
	void *theirs = run_thread(cache_one, NULL), *mine;
	struct scratch_stats s = {.size = sizeof(s)};

	mine = scratch_acquire(2 * MIB);
	ck_assert_ptr_eq(mine, theirs);
	s = thread_stats();
	ck_assert_uint_eq(s.depot_hits, 1);
	ck_assert_uint_eq(s.misses, 0);
	ck_assert_uint_eq(s.retained, 2 * MIB);
	scratch_release(mine);
}
END_TEST

static void *lease_and_exit(void *arg)
{
	(void)arg;
	return scratch_acquire(128 * KIB);
}

START_TEST(test_block_outlives_its_thread)
{
	void *p = run_thread(lease_and_exit, NULL);
	struct scratch_stats s = total_stats();

	ck_assert_uint_eq(s.leased, 128 * KIB);
	ck_assert_uint_eq(s.retained, 128 * KIB);
	ck_assert_int_eq(scratch_release(p), 0);
	s = total_stats();
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_eq(s.retained, 128 * KIB);
	/* the exited owner's slot is reclaimed and its block reused */
	p = scratch_acquire(128 * KIB);
	s = thread_stats();
	ck_assert_uint_eq(s.misses, 0);
	scratch_release(p);
	s = total_stats();
	ck_assert_uint_eq(s.allocs, 2);
	ck_assert_uint_eq(s.frees, 2);
	ck_assert_uint_eq(s.leased, 0);
}
END_TEST

#define NT 4

struct sum_arg {
	int seed;
	struct scratch_stats st;
};

static void *random_work(void *arg)
{
	struct sum_arg *a = arg;
	unsigned seed = (unsigned)a->seed;
	void *held[16] = {0};

	for (int i = 0; i < 2000; i++) {
		int k = rand_r(&seed) % 16;

		if (held[k] != NULL) {
			scratch_release(held[k]);
			held[k] = NULL;
		} else {
			held[k] = scratch_acquire(64 * KIB + (size_t)(rand_r(&seed) % (4 * MIB)));
		}
	}
	for (int k = 0; k < 16; k++)
		if (held[k] != NULL)
			scratch_release(held[k]);
	a->st = thread_stats();
	return NULL;
}

START_TEST(test_total_is_sum_of_threads)
{
	pthread_t t[NT];
	struct sum_arg a[NT];
	struct scratch_stats mine = {.size = sizeof(mine)}, tot = {.size = sizeof(tot)}, sum = {0};

	for (int i = 0; i < NT; i++) {
		a[i].seed = i + 1;
		ck_assert_int_eq(pthread_create(&t[i], NULL, random_work, &a[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	struct sum_arg me = {.seed = 99};
	random_work(&me);
	mine = me.st;
	for (int i = 0; i < NT; i++) {
		sum.allocs += a[i].st.allocs;
		sum.hits += a[i].st.hits;
		sum.depot_hits += a[i].st.depot_hits;
		sum.misses += a[i].st.misses;
		sum.frees += a[i].st.frees;
	}
	tot = total_stats();
	ck_assert_uint_eq(tot.allocs, sum.allocs + mine.allocs);
	ck_assert_uint_eq(tot.hits, sum.hits + mine.hits);
	ck_assert_uint_eq(tot.depot_hits, sum.depot_hits + mine.depot_hits);
	ck_assert_uint_eq(tot.misses, sum.misses + mine.misses);
	ck_assert_uint_eq(tot.frees, sum.frees + mine.frees);
	ck_assert_uint_eq(tot.allocs, tot.hits + tot.depot_hits + tot.misses);
	ck_assert_uint_eq(tot.leased, 0);
	ck_assert_uint_eq(tot.threads, NT + 1);
}
END_TEST

START_TEST(test_scripted_accounting)
{
	/* After every step, retained and leased equal a model kept here: with
	 * cache_count:1 and no depot, a class keeps at most one idle block and
	 * every other release returns its pages to the OS. */
	static const size_t sizes[] = {64 * KIB, 100 * KIB, 3 * MIB, 64 * KIB, 17 * MIB, 100 * KIB};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	size_t caps[N];
	bool cached[N] = {false}; /* indexed by the first slot of each class */
	int first[N];
	void *held[N];
	uint64_t leased = 0, retained = 0, misses = 0;
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("cache_count:1,depot_bytes:0");
	for (int i = 0; i < N; i++) {
		caps[i] = scratch_class_size(sizes[i]);
		first[i] = i;
		for (int j = 0; j < i; j++)
			if (caps[j] == caps[i]) {
				first[i] = j;
				break;
			}
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			held[i] = scratch_acquire(sizes[i]);
			ck_assert_ptr_nonnull(held[i]);
			leased += caps[i];
			if (cached[first[i]]) {
				cached[first[i]] = false;
			} else {
				retained += caps[i];
				misses++;
			}
			s = thread_stats();
			ck_assert_uint_eq(s.leased, leased);
			ck_assert_uint_eq(s.retained, retained);
			ck_assert_uint_eq(s.misses, misses);
			ck_assert_uint_eq(total_stats().retained, retained);
		}
		for (int i = N - 1; i >= 0; i--) {
			ck_assert_int_eq(scratch_release(held[i]), 0);
			leased -= caps[i];
			if (!cached[first[i]])
				cached[first[i]] = true;
			else
				retained -= caps[i];
			s = thread_stats();
			ck_assert_uint_eq(s.leased, leased);
			ck_assert_uint_eq(s.retained, retained);
			s = total_stats();
			ck_assert_uint_eq(s.leased, leased);
			ck_assert_uint_eq(s.retained, retained);
		}
	}
	ck_assert_uint_eq(retained, 64 * KIB + caps[1] + caps[2] + caps[4]);
}
END_TEST

struct stress_arg {
	int seed;
	void *volatile *mailbox; /* blocks passed between threads */
	int nbox;
	int violations;
};

static void *stress(void *arg)
{
	struct stress_arg *a = arg;
	unsigned seed = (unsigned)a->seed;
	void *held[8] = {0};

	for (int i = 0; i < 3000; i++) {
		int k = rand_r(&seed) % 8;

		if (held[k] == NULL) {
			size_t size = 64 * KIB + (size_t)(rand_r(&seed) % (2 * MIB));

			held[k] = scratch_acquire(size);
			((char *)held[k])[0] = 1;
		} else if (rand_r(&seed) % 3 == 0) {
			/* trade with another thread through a mailbox slot */
			int m = rand_r(&seed) % a->nbox;
			void *got = __atomic_exchange_n(&a->mailbox[m], held[k], __ATOMIC_ACQ_REL);

			held[k] = got;
		} else {
			scratch_release(held[k]);
			held[k] = NULL;
		}
		if (i % 100 == 0) {
			struct scratch_stats s = thread_stats();

			if (s.leased > s.retained)
				a->violations++;
		}
	}
	for (int k = 0; k < 8; k++)
		if (held[k] != NULL)
			scratch_release(held[k]);
	return NULL;
}

START_TEST(test_limits_under_stress)
{
	enum { N = 8, BOX = 4 };
	void *volatile box[BOX] = {0};
	pthread_t t[N];
	struct stress_arg a[N];
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("cache_count:2,cache_bytes:4M,depot_bytes:8M");
	for (int i = 0; i < N; i++) {
		a[i] = (struct stress_arg){.seed = i + 11, .mailbox = box, .nbox = BOX};
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress, &a[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	for (int m = 0; m < BOX; m++)
		if (box[m] != NULL)
			ck_assert_int_eq(scratch_release(box[m]), 0);
	scratch_thread_flush(); /* also reclaims the exited threads' slots */
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(a[i].violations, 0);
	s = total_stats();
	ck_assert_uint_eq(s.leased, 0);
	ck_assert_uint_eq(s.allocs, s.hits + s.depot_hits + s.misses);
	ck_assert_uint_eq(s.frees, s.allocs);
	/* every thread exited: what is idle sits in the depot, within its bound */
	ck_assert_uint_le(s.retained, 8 * MIB);
	ck_assert_uint_ge(s.threads, N); /* and this thread if it freed a traded block */
	ck_assert_uint_le(s.threads, N + 1);
}
END_TEST

START_TEST(test_fork_child_uses_pool)
{
	void *p = scratch_acquire(64 * KIB), *other = run_thread(lease_and_exit, NULL);
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* blocks of the parent, its other thread's included, free fine */
		int bad = scratch_release(p) != 0 || scratch_release(other) != 0;
		void *q = scratch_acquire(64 * KIB);

		bad |= q == NULL || scratch_release(q) != 0;
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(scratch_owns(p)); /* the parent's state is its own */
	scratch_release(p);
	scratch_release(other);
}
END_TEST

START_TEST(test_disabled)
{
	size_t lo, hi;

	conf_add("enabled:false");
	/* 16 KiB first: the one size the fast path admits before the setup. */
	errno = 0;
	ck_assert_ptr_null(scratch_acquire(16 * KIB));
	ck_assert_int_eq(errno, ERANGE);
	ck_assert(!scratch_range(&lo, &hi));
	errno = 0;
	ck_assert_ptr_null(scratch_acquire(64 * KIB));
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_uint_eq(scratch_class_size(64 * KIB), 0);
	ck_assert_uint_eq(scratch_trim(), 0);
}
END_TEST

START_TEST(test_conf_get)
{
	uint64_t v = 0;

	conf_add("min_size:128K,keep_segment:true");
	ck_assert_int_eq(scratch_conf_get("min_size", &v), 0);
	ck_assert_uint_eq(v, 128 * KIB);
	ck_assert_int_eq(scratch_conf_get("keep_segment", &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(scratch_conf_get("nope", &v), -ENOENT);
	ck_assert_ptr_null(scratch_acquire(100 * KIB - 1 - 28 * KIB));
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
/* Under an address-space limit the region takes a quarter of the room
 * left, and the range comes down to what that region holds, so every size
 * the pools say they take can still be had. Not under a sanitizer, whose
 * shadow mappings an address-space limit would starve. */
START_TEST(test_reserve_granted_smaller)
{
	struct rlimit rl;
	size_t min = 0, max = 0;
	unsigned long pages;
	FILE *f = fopen("/proc/self/statm", "r");
	void *p;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	rl.rlim_cur = rl.rlim_max = (rlim_t)pages * 4096 + ((rlim_t)20 << 30);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
	conf_add("max_size:16G,reserve:64G,stats:false");
	ck_assert(scratch_range(&min, &max));
	/* a quarter of the 20G left: 5G reserved, a quarter of that pooled */
	ck_assert_uint_eq(max, (size_t)5 << 28);
	p = scratch_acquire(max);
	ck_assert_ptr_nonnull(p);
	scratch_release(p);
}
END_TEST
#endif

static int churn_stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		void *p[4];

		for (int i = 0; i < 4; i++)
			p[i] = scratch_acquire(MIB);
		for (int i = 0; i < 4; i++)
			scratch_release(p[i]);
	}
	return NULL;
}

/* Run busy (two threads) while forking forks times; each child runs
 * child() and exits with its result. Returns how many children failed. */
static int fork_under_load(void *(*busy)(void *), int forks, int (*child)(void))
{
	pthread_t t[2];
	int bad = 0;

	__atomic_store_n(&churn_stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, busy, NULL), 0);
	for (int k = 0; k < forks; k++) {
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(child());
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return bad;
}

/* A child's counters are its parent's at the fork, not what the parent's
 * other threads wrote into the shared segment after it. Once the child
 * trims, nothing is idle (no caches, an empty depot), so it retains what
 * is lent, plus at most one block per other thread that was between its
 * two counter updates when the fork came (never less). */
static int child_trims_to_leased(void)
{
	struct scratch_stats st = {.size = sizeof(st)};

	scratch_trim();
	return scratch_stats_total(&st) != 0 || st.retained < st.leased ||
	       st.retained - st.leased > 2 * MIB;
}

START_TEST(test_fork_counters_are_fork_time)
{
	conf_add("cache_count:0");
	scratch_release(scratch_acquire(MIB));
	ck_assert_int_eq(fork_under_load(churn, 60, child_trims_to_leased), 0);
}
END_TEST

/* Every acquire a growth (nothing is kept idle), so every one walks the
 * stack for its trace record. */
static void *walk_churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		void *p = scratch_acquire(64 * KIB + 4096);

		scratch_release(p);
	}
	return NULL;
}

static int child_grows(void)
{
	for (int i = 0; i < 20; i++) {
		void *p = scratch_acquire(64 * KIB + 4096 * (size_t)i);

		if (p == NULL || scratch_release(p) != 0)
			return 1;
	}
	return 0;
}

/* Forks while other threads are inside the unwinder: a child must never
 * inherit its lock held (it would hang in its first growth, with every
 * signal blocked; Check's timeout would end the test). */
START_TEST(test_fork_during_stack_walks)
{
	conf_add("cache_count:0,depot_bytes:0,trace:true");
#ifdef UNDER_TSAN
	/* it refuses threads started in the child of a threaded process,
	 * which a child's first growth does (the decay thread) */
	conf_add("decay_thread:false");
#endif
	ck_assert_int_eq(fork_under_load(walk_churn, 200, child_grows), 0);
}
END_TEST

/* "fd -> target" of every open descriptor but the listing's own, sorted
 * by number as the kernel lists them, into buf. */
static void list_fds(char *buf, size_t len)
{
	char path[64], target[256];
	size_t pos = 0;

	buf[0] = '\0';
	for (int fd = 0; fd < 1024; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		pos += (size_t)snprintf(buf + pos, len - pos, "%d->%s\n", fd, target);
		ck_assert_uint_lt(pos, len);
	}
}

/* Growths that walk the stack, five frames below the test. */
__attribute__((noinline)) static void grow_traced(int depth)
{
	if (depth > 0) {
		grow_traced(depth - 1);
		__asm__ volatile("");
		return;
	}
	for (int i = 0; i < 8; i++) {
		void *p = scratch_acquire(64 * KIB + 4096 * (size_t)i);

		ck_assert_ptr_nonnull(p);
		memset(p, 0x5a, 4096);
		ck_assert_int_eq(scratch_release(p), 0);
	}
}

/* This process's segment header and its first trace record, read from the
 * one file in dir. */
static void read_segment(const char *dir, struct scratch_seg_header *h,
                         struct scratch_seg_record *r)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);
	int fd = -1;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, SCRATCH_SEG_SUFFIX) != NULL) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
		}
	closedir(d);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, h, sizeof(*h), 0), (ssize_t)sizeof(*h));
	ck_assert_int_eq(pread(fd, r, sizeof(*r), (off_t)h->ring_off), (ssize_t)sizeof(*r));
	close(fd);
}

/* A growth trace walks the stack with no descriptor of its own, and never
 * uses one of the host's: the walk's unwinder used to open a pipe on the
 * first growth and keep its numbers for good, so a host that closed and
 * reopened them had its files written to and read from. Here the host's
 * two files sit at the lowest free numbers before, between and after the
 * traced growths; their descriptors, contents and offsets must not move,
 * and the growths must have been recorded with their frames. */
START_TEST(test_trace_walk_uses_no_descriptors)
{
	char dir[] = "/tmp/check_pool.XXXXXX", before[4096], after[4096], buf[8];
	struct scratch_seg_header h;
	struct scratch_seg_record r;
	int a, b;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("SCRATCH_RUNTIME_DIR", dir, 1);
	conf_add("cache_count:0,depot_bytes:0,stats:true,trace:true,trace_frames:8");
	for (int round = 0; round < 2; round++) {
		a = open("/dev/null", O_RDONLY | O_CLOEXEC);
		b = memfd_create("host", MFD_CLOEXEC);
		ck_assert_int_ge(b, 0);
		ck_assert_int_eq(write(b, "host", 4), 4);
		list_fds(before, sizeof(before));
		grow_traced(5);
		list_fds(after, sizeof(after));
		ck_assert_str_eq(after, before);
		ck_assert_int_eq(lseek(b, 0, SEEK_CUR), 4);
		ck_assert_int_eq(pread(b, buf, sizeof(buf), 0), 4);
		ck_assert_int_eq(memcmp(buf, "host", 4), 0);
		/* the numbers are free again for the next round to reuse */
		close(a);
		close(b);
	}
	read_segment(dir, &h, &r);
	ck_assert_uint_ge(h.ring_head, 16);
	ck_assert_uint_eq(r.seq, 1);
	ck_assert_uint_ge(r.nframes, 6);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
/* A child that cannot get a descriptor for a segment of its own must not
 * write into its parent's: the parent's figures stay as they were. (Not
 * under a sanitizer, which needs descriptors for itself.) */
START_TEST(test_fork_without_fds_leaves_parent_alone)
{
	struct rlimit rl = {64, 64};
	struct scratch_stats before = {.size = sizeof(before)}, after = {.size = sizeof(after)};
	void *a[4], *keep;
	pid_t pid;
	int status;

	for (int i = 0; i < 4; i++)
		a[i] = scratch_acquire(MIB);
	for (int i = 0; i < 4; i++)
		scratch_release(a[i]);
	scratch_thread_flush(); /* 4 MiB idle in the depot */
	keep = scratch_acquire(8 * MIB);
	ck_assert_ptr_nonnull(keep);
	before = total_stats();
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (open("/dev/null", O_RDONLY) >= 0)
		;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *x;

		scratch_trim();
		x = scratch_acquire(2 * MIB);
		_exit(x == NULL || scratch_release(x) != 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	after = total_stats();
	ck_assert_uint_eq(after.retained, before.retained);
	ck_assert_uint_eq(after.leased, before.leased);
	ck_assert_uint_eq(after.trimmed, before.trimmed);
	ck_assert_int_eq(scratch_release(keep), 0);
}
END_TEST
#endif

#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
static long resident_kib(void)
{
	unsigned long size, res;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &res), 2);
	fclose(f);
	return (long)res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A block whose capacity ends inside a huge page (2 MiB + 4 KiB asks for
 * a 2.5 MiB class in a 4 MiB span) costs its capacity in memory, not the
 * whole second huge page. (Not under a sanitizer: shadow memory counts.) */
START_TEST(test_huge_tail_small_pages)
{
	size_t ask = (2 * MIB) + 4 * KIB, cap;
	long before, grew;
	char *p;

	conf_add("thp:true");
	p = scratch_acquire(ask);
	ck_assert_ptr_nonnull(p);
	cap = scratch_usable_size(p);
	ck_assert_uint_lt(cap, 4 * MIB);
	before = resident_kib();
	memset(p, 1, cap);
	grew = resident_kib() - before;
	ck_assert_int_le(grew, (long)(cap / KIB) + 256);
	scratch_release(p);
}
END_TEST
#endif

/* Addresses a class gave back serve other classes once the region is used
 * up: a process whose sizes change does not end in ENOMEM with nothing
 * held. A 1G reserve holds three 256M blocks; after they are freed and
 * trimmed, 200M and 129M requests (other classes) still succeed. */
START_TEST(test_exhausted_region_reclasses)
{
	void *big[3], *a, *b;
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("reserve:1G,max_size:256M");
	for (int i = 0; i < 3; i++)
		ck_assert_ptr_nonnull(big[i] = scratch_acquire(256 * MIB));
	errno = 0;
	ck_assert_ptr_null(scratch_acquire(200 * MIB)); /* used up */
	ck_assert_int_eq(errno, ENOMEM);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(scratch_release(big[i]), 0);
	scratch_trim();
	a = scratch_acquire(200 * MIB);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_ge(scratch_usable_size(a), 200 * MIB);
	b = scratch_acquire(129 * MIB);
	ck_assert_ptr_nonnull(b);
	memset(b, 1, 4096);
	ck_assert_int_eq(scratch_release(b), 0);
	ck_assert_int_eq(scratch_release(a), 0);
	s = total_stats();
	ck_assert_uint_eq(s.leased, 0);
}
END_TEST

/* The same without a trim: the freed blocks sit idle in the thread's cache
 * and the depot, and still serve. */
START_TEST(test_exhausted_region_uses_idle_blocks)
{
	void *big[3], *a;

	conf_add("reserve:1G,max_size:256M");
	for (int i = 0; i < 3; i++)
		ck_assert_ptr_nonnull(big[i] = scratch_acquire(256 * MIB));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(scratch_release(big[i]), 0);
	a = scratch_acquire(150 * MIB);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(scratch_release(a), 0);
	ck_assert_uint_eq(total_stats().leased, 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* reuse across classes, growth, decay                                    */
/* ---------------------------------------------------------------------- */

/* The equations of scratch.h, exact for this thread and for the process:
 * the thread holds retained bytes of which leased are lent, and no other
 * thread, the depot or an orphan holds any. */
static void expect_pool(uint64_t retained, uint64_t leased)
{
	struct scratch_stats t = thread_stats(), p = total_stats();

	ck_assert_uint_eq(t.retained, retained);
	ck_assert_uint_eq(t.leased, leased);
	ck_assert_uint_eq(p.retained, retained);
	ck_assert_uint_eq(p.leased, leased);
	ck_assert_uint_eq(t.allocs, t.hits + t.depot_hits + t.misses);
}

/* A cached 64 MiB block serves a 40 MiB request: a hit, the same block
 * (its warm pages), its real capacity, no growth. */
START_TEST(test_larger_class_hit)
{
	char *a, *b;
	size_t cap;
	struct scratch_stats s = {.size = sizeof(s)};

	conf_add("decay_ms:0");
	a = scratch_acquire(64 * MIB);
	cap = scratch_usable_size(a);
	ck_assert_uint_eq(cap, 64 * MIB);
	memset(a, 0x3c, 40 * MIB);
	expect_pool(cap, cap);
	ck_assert_int_eq(scratch_release(a), 0);
	expect_pool(cap, 0);
	b = scratch_acquire(40 * MIB);
	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(scratch_usable_size(b), cap); /* malloc_usable_size: the real capacity */
	ck_assert_int_eq(b[40 * MIB - 1], 0x3c);        /* the pages it had: no new ones */
	expect_pool(cap, cap);
	s = thread_stats();
	ck_assert_uint_eq(s.misses, 1);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.trimmed, 0);
	ck_assert_int_eq(scratch_release(b), 0);
	expect_pool(cap, 0);
}
END_TEST

/* Of several idle blocks large enough, the one whose pages fit the request
 * closest wins, though another was released last; the request's own class
 * still comes first. */
START_TEST(test_larger_class_closest_fit)
{
	void *b2, *b4, *p, *q;
	uint64_t held = 6 * MIB;

	conf_add("decay_ms:0");
	b2 = scratch_acquire(2 * MIB);
	b4 = scratch_acquire(4 * MIB);
	expect_pool(held, held);
	scratch_release(b2);
	scratch_release(b4); /* released last, but 4 MiB of pages */
	expect_pool(held, 0);
	p = scratch_acquire(MIB + 1);
	ck_assert_ptr_eq(p, b2); /* 2 MiB of pages: the closest fit */
	expect_pool(held, 2 * MIB);
	q = scratch_acquire(MIB + 1);
	ck_assert_ptr_eq(q, b4); /* the one left */
	expect_pool(held, held);
	scratch_release(q);
	scratch_release(p);
	ck_assert_ptr_eq(scratch_acquire(4 * MIB), b4); /* its own class comes first */
	expect_pool(held, 4 * MIB);
	scratch_release(b4);
	expect_pool(held, 0);
	ck_assert_uint_eq(thread_stats().misses, 2);
	ck_assert_uint_eq(thread_stats().hits, 3);
	ck_assert_uint_eq(thread_stats().depot_hits, 0);
	ck_assert_uint_eq(total_stats().trimmed, 0);
}
END_TEST

struct releaser {
	void *p[4];
	int n;
};

static void *release_all(void *arg)
{
	struct releaser *r = arg;

	for (int i = 0; i < r->n; i++)
		ck_assert_int_eq(scratch_release(r->p[i]), 0);
	return NULL;
}

/* Release the n blocks of b in the order of idx. */
static void release_in(void **b, const int *idx, int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(scratch_release(b[idx[i]]), 0);
}

/* A thread's blocks of one class come back in one order, whatever order
 * they were released in, by the thread itself or by another: the i-th
 * buffer of a set allocated again is the block the i-th had (a host that
 * allocates one buffer per worker gives each worker the block it wrote
 * last). */
START_TEST(test_class_order_stable)
{
	static const int ahead[] = {0, 1, 2, 3}, back[] = {3, 2, 1, 0}, mixed[] = {2, 0, 3, 1};
	const int *orders[] = {ahead, back, mixed};
	void *b[4], *again[4];
	uint64_t cap;

	conf_add("decay_ms:0");
	for (int i = 0; i < 4; i++)
		b[i] = scratch_acquire(3 * MIB);
	cap = scratch_usable_size(b[0]);
	expect_pool(4 * cap, 4 * cap);
	release_in(b, ahead, 4);
	expect_pool(4 * cap, 0);
	for (int i = 0; i < 4; i++)
		b[i] = scratch_acquire(3 * MIB); /* the order from now on */
	for (int round = 0; round < 6; round++) {
		const int *order = orders[round % 3];

		if (round < 3) {
			release_in(b, order, 4);
		} else {
			/* freed by another thread: back through the remote list */
			struct releaser r = {
			        .p = {b[order[0]], b[order[1]], b[order[2]], b[order[3]]}, .n = 4};

			run_thread(release_all, &r);
		}
		expect_pool(4 * cap, 0);
		for (int i = 0; i < 4; i++) {
			again[i] = scratch_acquire(3 * MIB);
			ck_assert_ptr_eq(again[i], b[i]);
		}
		expect_pool(4 * cap, 4 * cap);
	}
	release_in(b, mixed, 4);
	expect_pool(4 * cap, 0);
	ck_assert_uint_eq(thread_stats().misses, 4);
	ck_assert_uint_eq(thread_stats().hits, 28);
	ck_assert_uint_eq(total_stats().trimmed, 0);
}
END_TEST

/* A miss returns the pages of the thread's smaller idle blocks only beyond
 * 1/8 of what the thread will have leased: a live set of many blocks keeps
 * a few idle ones (they serve its next requests without new pages), a
 * thread whose idle blocks are large beside what it leases returns them.
 * Blocks below 2 MiB, whose pages never move (test_growth_moves_pages). */
START_TEST(test_shed_keeps_an_eighth)
{
	void *live, *ia, *ib, *n, *small[8];
	uint64_t held;

	conf_add("decay_ms:0");
	live = scratch_acquire(64 * MIB);
	ia = scratch_acquire(MIB);
	ib = scratch_acquire(512 * KIB);
	held = 64 * MIB + MIB + 512 * KIB;
	expect_pool(held, held);
	scratch_release(ia);
	scratch_release(ib);
	expect_pool(held, 64 * MIB);
	/* leased 64 MiB + 8 MiB: 9 MiB may stay idle, 1.5 MiB is */
	n = scratch_acquire(8 * MIB);
	held += 8 * MIB;
	expect_pool(held, 72 * MIB);
	ck_assert_uint_eq(total_stats().trimmed, 0);
	ck_assert_uint_eq(total_stats().moved, 0);
	ck_assert_ptr_eq(scratch_acquire(512 * KIB), ib); /* kept, with its pages */
	scratch_release(ib);
	scratch_release(live);
	scratch_release(n);
	scratch_release(scratch_acquire(16 * MIB)); /* takes the 64 MiB block */
	scratch_trim();
	held = 0;
	expect_pool(held, 0);
	/* eight idle 1 MiB blocks and nothing lent: a 16 MiB miss may keep
	 * 16 / 8 = 2 MiB idle, so six go, whole blocks */
	for (int i = 0; i < 8; i++)
		small[i] = scratch_acquire(MIB);
	for (int i = 0; i < 8; i++)
		scratch_release(small[i]);
	held = 8 * MIB;
	expect_pool(held, 0);
	n = scratch_acquire(16 * MIB);
	ck_assert_ptr_nonnull(n);
	held = 2 * MIB + scratch_usable_size(n);
	expect_pool(held, scratch_usable_size(n));
	ck_assert_uint_eq(total_stats().trimmed - 64 * MIB - 8 * MIB - 1536 * KIB, 6 * MIB);
	scratch_release(n);
	expect_pool(held, 0);
}
END_TEST

/* Lines of /proc/self/maps: the process's mappings. */
static int mapping_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, ch;

	ck_assert_ptr_nonnull(f);
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Pages moved again and again between the same two addresses make no new
 * mappings: each move replaces the range the last one made. */
START_TEST(test_moves_keep_mappings)
{
	int first = 0;

	conf_add("decay_ms:0");
	for (int i = 0; i < 50; i++) {
		char *p = scratch_acquire(20 * MIB), *q;

		memset(p, i, 20 * MIB);
		scratch_release(p);
		q = scratch_acquire(40 * MIB); /* a miss: p's pages move in */
		ck_assert_int_eq(q[20 * MIB - 1], (char)i);
		scratch_release(q);
		scratch_trim();
		ck_assert_uint_eq(total_stats().moved, (uint64_t)(i + 1) * 20 * MIB);
		if (i == 0)
			first = mapping_count();
	}
	ck_assert_int_le(mapping_count(), first + 2);
	expect_pool(0, 0);
}
END_TEST

/* Resident pages in [p, p + len), by mincore(2). */
static size_t resident_bytes(const void *p, size_t len)
{
	unsigned char vec[8192];
	size_t n = len / (4 * KIB), res = 0;

	ck_assert_uint_le(n, sizeof(vec));
	ck_assert_int_eq(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		res += vec[i] & 1;
	return res * 4 * KIB;
}

/* realloc's growth under the shim: the pages of the block it outgrows move
 * into the new one (scratch__shim_move), which then holds its data; the
 * old block's range reads zero. Nothing moves into a smaller block, out of
 * a block below 2 MiB or between pointers the pools did not lend. */
START_TEST(test_shim_move)
{
	char *p = scratch_acquire(20 * MIB), *q = scratch_acquire(40 * MIB);
	char *small = scratch_acquire(MIB), local[64];

	ck_assert_ptr_nonnull(q);
	memset(p, 0x5a, 20 * MIB);
	memset(small, 0x6b, MIB);
	ck_assert_uint_eq(scratch__shim_move(p, q), 0);     /* into a smaller one */
	ck_assert_uint_eq(scratch__shim_move(q, small), 0); /* below 2 MiB */
	ck_assert_uint_eq(scratch__shim_move(q, local), 0); /* not the pools' */
	ck_assert_uint_eq(scratch__shim_move(local, p), 0);
	ck_assert_uint_eq(total_stats().moved, 0);
	ck_assert_uint_eq(scratch__shim_move(q, p), 20 * MIB);
	ck_assert_uint_eq(total_stats().moved, 20 * MIB);
	ck_assert_int_eq(q[0], 0x5a);
	ck_assert_int_eq(q[20 * MIB - 1], 0x5a);
	ck_assert_uint_eq(resident_bytes(p, 20 * MIB), 0);
	ck_assert_int_eq(p[MIB], 0);
	scratch__shim_release_cold(p);
	scratch_release(small);
	expect_pool(MIB + scratch_usable_size(q), scratch_usable_size(q));
	scratch_release(q);
}
END_TEST

/*
 * A miss that outgrows the thread's idle blocks starts its new block with
 * their pages, moved (mremap), not returned and faulted again: the data
 * written into them is in the new block, the old blocks hold no page and
 * come back fresh, nothing is returned to the OS, and the equations hold.
 * An idle block whose pages would not fit in the request is not moved;
 * the shed bound (test_shed_keeps_an_eighth) decides whether it stays.
 */
START_TEST(test_growth_moves_pages)
{
	char *a, *b, *c, *big, *again;
	uint64_t held;

	conf_add("decay_ms:0");
	a = scratch_acquire(20 * MIB);
	b = scratch_acquire(10 * MIB);
	c = scratch_acquire(60 * MIB);
	ck_assert_ptr_nonnull(c);
	memset(a, 0xa1, 20 * MIB);
	memset(b, 0xb2, 10 * MIB);
	memset(c, 0xc3, 4 * MIB); /* 60 MiB of capacity, 4 MiB of pages */
	held = scratch_usable_size(a) + scratch_usable_size(b) + scratch_usable_size(c);
	scratch_release(a);
	scratch_release(b);
	expect_pool(held, scratch_usable_size(c));
	/* 32 MiB: the 20 and the 10 MiB blocks' pages fit, in that order */
	big = scratch_acquire(32 * MIB);
	ck_assert_ptr_nonnull(big);
	ck_assert_uint_eq(thread_stats().misses, 4);
	ck_assert_uint_eq(total_stats().moved, 30 * MIB);
	ck_assert_uint_eq(total_stats().trimmed, 0);
	ck_assert_int_eq(big[0], (char)0xa1);
	ck_assert_int_eq(big[20 * MIB - 1], (char)0xa1);
	ck_assert_int_eq(big[20 * MIB], (char)0xb2);
	ck_assert_int_eq(big[30 * MIB - 1], (char)0xb2);
	ck_assert_uint_eq(resident_bytes(a, 20 * MIB), 0);
	ck_assert_uint_eq(resident_bytes(b, 10 * MIB), 0);
	expect_pool(scratch_usable_size(c) + scratch_usable_size(big),
	            scratch_usable_size(c) + scratch_usable_size(big));
	/* an emptied block comes back fresh, at its address */
	again = scratch_acquire_zeroed(20 * MIB);
	ck_assert_ptr_eq(again, a);
	ck_assert_int_eq(again[0], 0);
	ck_assert_int_eq(again[20 * MIB - 1], 0);
	scratch_release(again);
	scratch_release(big);
	scratch_release(c);
	/* 100 MiB: c's 64 MiB (of which it wrote 4), then the 32 MiB block
	 * after the 60 MiB c's requests may have written; a's 20 MiB would
	 * not fit in the 8 MiB left and stays idle, with its address (its
	 * pages could move into the next growth: only blocks below 2 MiB go
	 * back at a miss, test_shed_keeps_an_eighth). Pages move again and
	 * again: a's data is now at 60 MiB, b's at 80. */
	big = scratch_acquire(100 * MIB);
	ck_assert_ptr_nonnull(big);
	held = 20 * MIB + scratch_usable_size(big); /* a is idle */
	ck_assert_uint_eq(total_stats().moved, 30 * MIB + 64 * MIB + 32 * MIB);
	ck_assert_uint_eq(total_stats().trimmed, 0);
	ck_assert_int_eq(big[0], (char)0xc3);
	ck_assert_int_eq(big[4 * MIB - 1], (char)0xc3);
	ck_assert_int_eq(big[60 * MIB], (char)0xa1);
	ck_assert_int_eq(big[80 * MIB], (char)0xb2);
	expect_pool(held, scratch_usable_size(big));
	ck_assert_uint_eq(thread_stats().hits, 0);
	ck_assert_ptr_eq(scratch_acquire(20 * MIB), a); /* a hit */
	ck_assert_uint_eq(thread_stats().hits, 1);
	expect_pool(held, held);
}
END_TEST

/* The bound: a request takes an idle block at most max_fit times its size
 * (64 by default), so a 64 KiB request never pins a large block. */
START_TEST(test_reuse_bound)
{
	void *big, *fit, *p, *q;
	uint64_t held = 12 * MIB;

	conf_add("decay_ms:0");
	big = scratch_acquire(8 * MIB);
	fit = scratch_acquire(4 * MIB);
	scratch_release(fit);
	scratch_release(big); /* the newest, but 128x a 64 KiB request */
	expect_pool(held, 0);
	p = scratch_acquire(64 * KIB);
	ck_assert_ptr_eq(p, fit); /* 4 MiB: exactly 64x */
	expect_pool(held, 4 * MIB);
	q = scratch_acquire(128 * KIB);
	ck_assert_ptr_eq(q, big); /* 8 MiB is 64x 128 KiB */
	expect_pool(held, held);
	scratch_release(p);
	scratch_release(q);
	/* a request just below 128 KiB may not take 8 MiB: a new block */
	p = scratch_acquire(128 * KIB - 4096);
	ck_assert_ptr_eq(p, fit);
	q = scratch_acquire(128 * KIB - 4096);
	ck_assert_ptr_ne(q, big);
	held += scratch_usable_size(q);
	expect_pool(held, 4 * MIB + scratch_usable_size(q));
	ck_assert_uint_eq(thread_stats().misses, 3);
	scratch_release(p);
	scratch_release(q);
	expect_pool(held, 0);
}
END_TEST

/* max_fit:2: a request takes blocks up to twice its size, no more. */
START_TEST(test_reuse_bound_conf)
{
	void *b4, *p;
	uint64_t v;

	conf_add("max_fit:2,decay_ms:0");
	ck_assert_int_eq(scratch_conf_get("max_fit", &v), 0);
	ck_assert_uint_eq(v, 2);
	b4 = scratch_acquire(4 * MIB);
	scratch_release(b4);
	p = scratch_acquire(MIB + 1); /* 4 MiB is 3.99x: a miss */
	ck_assert_ptr_ne(p, b4);
	ck_assert_uint_eq(scratch_usable_size(p), scratch_class_size(MIB + 1));
	expect_pool(4 * MIB + scratch_usable_size(p), scratch_usable_size(p));
	scratch_release(p);
	p = scratch_acquire(2 * MIB); /* exactly 2x: a hit */
	ck_assert_ptr_eq(p, b4);
	expect_pool(4 * MIB + scratch_class_size(MIB + 1), 4 * MIB);
	scratch_release(p);
}
END_TEST

static void *leave_in_depot(void *arg)
{
	void *p = scratch_acquire(*(size_t *)arg);

	scratch_release(p); /* cached, then flushed to the depot at exit */
	return p;
}

/* The depot serves across classes too, within the bound. */
START_TEST(test_depot_larger_class)
{
	size_t size = 16 * MIB;
	void *p, *q;
	struct scratch_stats t = {.size = sizeof(t)};

	conf_add("decay_ms:0");
	p = run_thread(leave_in_depot, &size);
	ck_assert_uint_eq(total_stats().retained, 16 * MIB);
	q = scratch_acquire(128 * KIB); /* 16 MiB is 128x: not for it */
	ck_assert_ptr_ne(q, p);
	scratch_release(q);
	q = scratch_acquire(9 * MIB);
	ck_assert_ptr_eq(q, p);
	t = thread_stats();
	ck_assert_uint_eq(t.depot_hits, 1);
	ck_assert_uint_eq(t.retained, 16 * MIB + scratch_class_size(128 * KIB));
	ck_assert_uint_eq(t.leased, 16 * MIB);
	ck_assert_uint_eq(total_stats().retained, t.retained); /* the depot is empty */
	scratch_release(q);
}
END_TEST

static void *free_it(void *arg)
{
	scratch_release(arg);
	return NULL;
}

static struct scratch_class_stats class_stats(size_t size)
{
	struct scratch_class_stats k = {.size = sizeof(k)};

	ck_assert_int_eq(scratch_stats_class(size, &k), 0);
	ck_assert_uint_eq(k.version, SCRATCH_CLASS_STATS_VERSION);
	ck_assert_uint_eq(k.capacity, scratch_class_size(size));
	ck_assert_uint_eq(k.requests, k.hits + k.depot_hits + k.misses);
	return k;
}

static void expect_class(size_t size, uint64_t requests, uint64_t hits, uint64_t depot,
                         uint64_t larger, uint64_t misses, uint64_t frees, uint64_t leased,
                         uint64_t idle)
{
	struct scratch_class_stats k = class_stats(size);

	ck_assert_uint_eq(k.requests, requests);
	ck_assert_uint_eq(k.hits, hits);
	ck_assert_uint_eq(k.depot_hits, depot);
	ck_assert_uint_eq(k.larger_hits, larger);
	ck_assert_uint_eq(k.misses, misses);
	ck_assert_uint_eq(k.frees, frees);
	ck_assert_uint_eq(k.leased, leased);
	ck_assert_uint_eq(k.idle, idle);
}

/* Every class, smallest first: each count sums to scratch_stats_total's,
 * and the classes' idle and leased bytes to its retained and leased. */
static void expect_classes_sum_to_total(void)
{
	struct scratch_stats t = total_stats();
	struct scratch_class_stats sum = {0};
	size_t lo, hi;

	ck_assert(scratch_range(&lo, &hi));
	for (size_t size = lo; size <= hi;) {
		struct scratch_class_stats k = class_stats(size);

		ck_assert_uint_eq(k.min_request, size);
		sum.requests += k.requests;
		sum.hits += k.hits;
		sum.depot_hits += k.depot_hits;
		sum.misses += k.misses;
		sum.frees += k.frees;
		sum.leased += k.leased;
		sum.idle += k.idle;
		size = k.capacity + 1;
	}
	ck_assert_uint_eq(sum.requests, t.allocs);
	ck_assert_uint_eq(sum.hits, t.hits);
	ck_assert_uint_eq(sum.depot_hits, t.depot_hits);
	ck_assert_uint_eq(sum.misses, t.misses);
	ck_assert_uint_eq(sum.frees, t.frees);
	ck_assert_uint_eq(sum.leased, t.leased);
	ck_assert_uint_eq(sum.idle, t.retained - t.leased);
}

/*
 * Per size class counters (scratch_stats_class) through a script of known
 * requests: a depot hit and a cache hit from larger classes, own-class
 * hits, growths, a remote free and an exited thread's counters, with the
 * equations checked after every step.
 */
START_TEST(test_class_stats)
{
	size_t size = 16 * MIB;
	struct scratch_class_stats k = {.size = 8};
	char *a, *b, *c, *q;

	conf_add("decay_ms:0");
	ck_assert_int_eq(scratch_stats_class(MIB, NULL), -EINVAL);
	ck_assert_int_eq(scratch_stats_class(MIB, &k), -EINVAL); /* holds no counter */
	k.size = sizeof(k);
	ck_assert_int_eq(scratch_stats_class(4 * KIB, &k), -ERANGE); /* below min_size */
	ck_assert_uint_eq(k.version, SCRATCH_CLASS_STATS_VERSION);
	ck_assert_uint_eq(k.requests, 0);
	/* a thread grows 16 MiB and leaves it in the depot; 9 MiB takes it */
	run_thread(leave_in_depot, &size);
	q = scratch_acquire(9 * MIB);
	expect_class(16 * MIB, 1, 0, 0, 0, 1, 1, 16 * MIB, 0);
	expect_class(9 * MIB, 1, 0, 1, 1, 0, 0, 0, 0);
	expect_classes_sum_to_total();
	/* 1 MiB: a growth, then a hit of its own class */
	a = scratch_acquire(MIB);
	scratch_release(a);
	a = scratch_acquire(MIB);
	expect_class(MIB, 2, 1, 0, 0, 1, 1, MIB, 0);
	expect_classes_sum_to_total();
	/* 64 MiB grows; once idle, it serves 40 MiB from the cache */
	b = scratch_acquire(64 * MIB);
	scratch_release(b);
	expect_class(64 * MIB, 1, 0, 0, 0, 1, 1, 0, 64 * MIB);
	c = scratch_acquire(40 * MIB);
	ck_assert_ptr_eq(c, b);
	expect_class(40 * MIB, 1, 1, 0, 1, 0, 0, 0, 0);
	expect_class(64 * MIB, 1, 0, 0, 0, 1, 1, 64 * MIB, 0); /* lent as a 64 MiB block */
	expect_classes_sum_to_total();
	scratch_release(c);
	expect_class(64 * MIB, 1, 0, 0, 0, 1, 2, 0, 64 * MIB);
	/* another thread frees a: counted there, the block idle in a's class */
	run_thread(free_it, a);
	expect_class(MIB, 2, 1, 0, 0, 1, 2, 0, MIB);
	expect_classes_sum_to_total();
	scratch_release(q);
	expect_class(16 * MIB, 1, 0, 0, 0, 1, 2, 0, 16 * MIB);
	expect_classes_sum_to_total();
}
END_TEST

/*
 * A buffer that grows by an eighth per step, released and acquired again
 * each time (a new tensor per token): after two steps of evidence each new
 * block is twice the request, so the growth from 1 MiB to 96 MiB costs one
 * block per doubling, and each new block returns the pages of the blocks
 * it outgrew, so no trail of idle blocks stays resident.
 */
START_TEST(test_growth_one_block_per_doubling)
{
	size_t size = MIB, cap = 0, idle = 0;
	void *cur = NULL;
	uint64_t misses = 0, doublings = 0;

	conf_add("decay_ms:0");
	for (; size <= 96 * MIB; size += size / 8) {
		struct scratch_stats before = thread_stats(), s;
		uint64_t trimmed = total_stats().trimmed, moved = total_stats().moved;

		if (cur != NULL) {
			scratch_release(cur);
			idle += cap;
		}
		cur = scratch_acquire(size);
		ck_assert_ptr_nonnull(cur);
		s = thread_stats();
		if (s.misses > before.misses) {
			misses++;
			cap = scratch_usable_size(cur);
			if (cap > scratch_class_size(size)) {
				/* a growth block: twice the request */
				ck_assert_uint_ge(cap, 2 * size);
				ck_assert_uint_le(cap, 5 * size / 2);
				doublings++;
			}
			/* the blocks it outgrew are gone: their pages moved into
			 * the new block, or (those that would not fit) returned */
			ck_assert_uint_eq(total_stats().trimmed - trimmed + total_stats().moved -
			                          moved,
			                  idle);
			idle = 0;
		} else {
			ck_assert_uint_eq(scratch_usable_size(cur), cap); /* the same block */
			idle -= cap;
		}
		expect_pool(cap + idle, cap);
	}
	/* 1 MiB to 96 MiB is under 7 doublings: two exact steps, then one
	 * block for each doubling */
	ck_assert_uint_le(misses, 2 + 7);
	ck_assert_uint_ge(doublings, misses - 2);
	scratch_release(cur);
	expect_pool(cap + idle, 0);
}
END_TEST

/* NUMA nodes online in sysfs ("0", "0-1", "0,2-3"), a source apart from
 * the pools' own get_mempolicy(2); 0 when it cannot be read. */
static int nodes_online(void)
{
	char buf[256];
	int n = 0, lo = -1, cur = -1;
	FILE *f = fopen("/sys/devices/system/node/online", "r");

	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	for (char *c = buf;; c++) {
		if (*c >= '0' && *c <= '9') {
			cur = (cur < 0 ? 0 : cur * 10) + (*c - '0');
		} else if (*c == '-') {
			lo = cur;
			cur = -1;
		} else {
			if (cur >= 0)
				n += lo >= 0 ? cur - lo + 1 : 1;
			lo = cur = -1;
			if (*c == '\0' || *c == '\n')
				return n;
		}
	}
}

/* Pin the calling thread to the CPU it runs on: every thread of the test
 * on one node, whatever the machine. */
static void pin_here(void)
{
	static int cpu = -1;
	cpu_set_t set;

	if (cpu < 0)
		cpu = sched_getcpu();
	ck_assert_int_ge(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void *release_to_depot(void *arg)
{
	void *p;

	pin_here();
	p = scratch_acquire(*(size_t *)arg);
	memset(p, 0x3c, *(size_t *)arg);
	expect_pool(8 * MIB, 8 * MIB);
	scratch_release(p);
	scratch_thread_flush(); /* into the depot, as its exit would */
	return p;
}

/*
 * The depot between two threads on one node, with conf: per_node is in
 * force only where there are two nodes (it reads so), and a block
 * released on a node serves the next thread there, a depot hit, either
 * way; retained and leased exact after every step.
 */
static void depot_same_node(const char *conf, bool per_node)
{
	size_t size = 8 * MIB;
	int nodes = nodes_online();
	struct scratch_stats s;
	uint64_t v;
	void *p, *q;

	conf_add(conf);
	ck_assert_int_eq(scratch_conf_get("per_node", &v), 0);
	if (nodes > 0)
		ck_assert_uint_eq(v, per_node && nodes > 1);
	pin_here();
	p = run_thread(release_to_depot, &size);
	s = total_stats();
	ck_assert_uint_eq(s.retained, 8 * MIB); /* all of it in the depot */
	ck_assert_uint_eq(s.leased, 0);
	q = scratch_acquire(size);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(thread_stats().depot_hits, 1);
	ck_assert_int_eq(((char *)q)[size - 1], 0x3c); /* its pages, not new ones */
	expect_pool(8 * MIB, 8 * MIB);
	scratch_release(q);
	expect_pool(8 * MIB, 0);
	scratch_thread_flush();
	ck_assert_uint_eq(thread_stats().retained, 0);
	ck_assert_uint_eq(total_stats().retained, 8 * MIB);
	ck_assert_uint_eq(scratch_trim(), 8 * MIB);
	expect_pool(0, 0);
}

START_TEST(test_per_node_same_node)
{
	depot_same_node("per_node:true,decay_ms:0", true);
}
END_TEST

START_TEST(test_per_node_off)
{
	depot_same_node("per_node:false,decay_ms:0", false);
}
END_TEST

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

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += 512)
		if (p[i] != v || p[i + 511] != v)
			return false;
	return true;
}

/* What a fork child of a host with idle blocks finds. The forking thread's
 * idle 4 MiB block and the depot's 8 MiB one are not copied: the child
 * gets them zero-filled (MADV_WIPEONFORK), takes them for fresh, and the
 * exact equations hold there. The parent keeps what they held, and the
 * mark is gone after the fork: a block leased at the next fork reaches
 * that child intact. */
static int wiped_child(void *mine, void *depot)
{
	unsigned char *a = scratch_acquire_zeroed(4 * MIB), *b = scratch_acquire(8 * MIB);
	struct scratch_stats t = total_stats();

	if (a != mine || b != depot || !all_bytes(a, 4 * MIB, 0) || !all_bytes(b, 8 * MIB, 0))
		return 1;
	if (t.leased != scratch_usable_size(a) + scratch_usable_size(b) || t.retained < t.leased)
		return 2;
	memset(a, 5, 4 * MIB);
	scratch_release(a);
	scratch_release(b);
	t = total_stats();
	return t.leased == 0 && t.frees == t.allocs ? 0 : 3;
}

static int child_status(pid_t pid)
{
	int status = -1;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_fork_wipes_idle_blocks)
{
	size_t size = 8 * MIB;
	unsigned char *a, *b;
	void *depot;
	pid_t pid;

	conf_add("decay_ms:0,lend:false"); /* the thread would take a's pages */
	a = scratch_acquire(4 * MIB);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x11, 4 * MIB);
	ck_assert_int_eq(scratch_release(a), 0);
	depot = run_thread(leave_in_depot, &size);
	memset(depot, 0x22, size); /* idle in the depot: no lease writes it, this test may */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(wiped_child(a, depot));
	ck_assert_int_eq(child_status(pid), 0);
	b = scratch_acquire(4 * MIB);
	ck_assert_ptr_eq(b, a);
	ck_assert(all_bytes(b, 4 * MIB, 0x11)); /* the parent's stay as they were */
	ck_assert(all_bytes(depot, size, 0x22));
	pid = fork(); /* b is leased now: no longer marked */
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(all_bytes(b, 4 * MIB, 0x11) ? 0 : 1);
	ck_assert_int_eq(child_status(pid), 0);
	ck_assert_int_eq(scratch_release(b), 0);
}
END_TEST

/* Can the pools enter another thread's cache here (membarrier(2)'s private
 * expedited command, as a decay pass needs)? Without it nothing is lent
 * and other threads' blocks are copied at a fork, which the tests below
 * then have nothing to check of. */
static bool gate_available(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
}

/* Another thread's idle block at a fork: it keeps its 8 MiB block idle in
 * its cache and waits (outside its bins) while the main thread forks. The
 * child finds the block zero-filled (not copied), the parent's stays, and
 * the owner gets it back intact after the fork. */
struct idle_owner {
	pthread_barrier_t idle, done;
	unsigned char *block;
	bool intact;
};

static void *idle_owner(void *arg)
{
	struct idle_owner *r = arg;
	unsigned char *p = scratch_acquire(8 * MIB);

	ck_assert_ptr_nonnull(p);
	memset(p, 0x33, 8 * MIB);
	r->block = p;
	ck_assert_int_eq(scratch_release(p), 0);
	pthread_barrier_wait(&r->idle);
	pthread_barrier_wait(&r->done);
	p = scratch_acquire(8 * MIB);
	r->intact = p == r->block && all_bytes(p, 8 * MIB, 0x33);
	ck_assert_int_eq(scratch_release(p), 0);
	return NULL;
}

START_TEST(test_fork_wipes_other_threads_idle)
{
	struct idle_owner r = {.intact = false};
	pthread_t th;
	pid_t pid;

	if (!gate_available())
		return;
	conf_add("decay_ms:0,lend:false");
	pthread_barrier_init(&r.idle, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, idle_owner, &r), 0);
	pthread_barrier_wait(&r.idle);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) /* the block is idle in a cache no thread of ours owns */
		_exit(all_bytes(r.block, 8 * MIB, 0) ? 0 : 1);
	ck_assert_int_eq(child_status(pid), 0);
	ck_assert(all_bytes(r.block, 8 * MIB, 0x33)); /* idle in the parent: as it was */
	pthread_barrier_wait(&r.done);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(r.intact);
}
END_TEST

/* Lending: a thread that keeps an idle 8 MiB block and waits, and another
 * thread's 6 MiB request that its own cache and the depot cannot serve. */
struct lend_run {
	pthread_barrier_t idle, done;
	void *block;
	struct scratch_stats after;
};

static void *lend_owner(void *arg)
{
	struct lend_run *r = arg;
	char *p = scratch_acquire(8 * MIB);

	ck_assert_ptr_nonnull(p);
	memset(p, 1, 8 * MIB);
	r->block = p;
	ck_assert_int_eq(scratch_release(p), 0);
	pthread_barrier_wait(&r->idle); /* outside its bins while the other asks */
	pthread_barrier_wait(&r->done);
	r->after = thread_stats();
	return NULL;
}

static void lend_check(bool lend)
{
	struct lend_run r;
	struct scratch_stats me, t;
	pthread_t th;
	void *p;

	conf_add(lend ? "decay_ms:0" : "decay_ms:0,lend:false");
	pthread_barrier_init(&r.idle, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, lend_owner, &r), 0);
	pthread_barrier_wait(&r.idle);
	p = scratch_acquire(6 * MIB);
	ck_assert_ptr_nonnull(p);
	me = thread_stats();
	t = total_stats();
	pthread_barrier_wait(&r.done);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	if (lend) {
		/* the owner's block, through the depot; the owner keeps nothing */
		ck_assert_ptr_eq(p, r.block);
		ck_assert_uint_eq(scratch_usable_size(p), 8 * MIB);
		ck_assert_uint_eq(me.depot_hits, 1);
		ck_assert_uint_eq(me.misses, 0);
		ck_assert_uint_eq(me.retained, 8 * MIB);
		ck_assert_uint_eq(r.after.retained, 0);
		ck_assert_uint_eq(t.retained, 8 * MIB);
	} else {
		ck_assert_ptr_ne(p, r.block);
		ck_assert_uint_eq(me.misses, 1);
		ck_assert_uint_eq(r.after.retained, 8 * MIB);
		ck_assert_uint_eq(t.retained, 8 * MIB + scratch_usable_size(p));
	}
	ck_assert_uint_eq(me.leased, scratch_usable_size(p));
	ck_assert_uint_eq(t.leased, scratch_usable_size(p));
	ck_assert_int_eq(scratch_release(p), 0);
	t = total_stats();
	ck_assert_uint_eq(t.leased, 0);
	ck_assert_uint_eq(t.allocs, t.frees);
}

START_TEST(test_lend_idle_block)
{
	if (!gate_available())
		return;
	lend_check(true);
}
END_TEST

START_TEST(test_lend_off)
{
	lend_check(false);
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

Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_miss_then_hit);
	tcase_add_test(tc, test_classes_apart);
	tcase_add_test(tc, test_usable_size_and_alignment);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_test(tc, test_foreign_pointers);
	tcase_add_test(tc, test_zeroed);
	tcase_add_test(tc, test_disabled);
	tcase_add_test(tc, test_conf_get);
#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	tcase_add_test(tc, test_reserve_granted_smaller);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_cache_count_bound);
	tcase_add_test(tc, test_cache_bytes_bound);
	tcase_add_test(tc, test_trim);
	tcase_add_test(tc, test_trim_reaches_other_threads);
	tcase_add_test(tc, test_scripted_accounting);

#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	tcase_add_test(tc, test_huge_tail_small_pages);
#endif
	tcase_add_test(tc, test_exhausted_region_reclasses);
	tcase_add_test(tc, test_exhausted_region_uses_idle_blocks);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_threads_isolated);
	tcase_add_test(tc, test_orphan_threads);
#ifndef UNDER_TSAN
	tcase_add_test(tc, test_late_exit_slots);
	tcase_add_test(tc, test_trim_takes_late_exit_caches);
#endif
	tcase_add_test(tc, test_four_threads_hit_rate);
	tcase_add_test(tc, test_remote_free_returns_to_owner);
	tcase_add_test(tc, test_exited_thread_cache_reused);
	tcase_add_test(tc, test_block_outlives_its_thread);
	tcase_add_test(tc, test_total_is_sum_of_threads);
	tcase_add_test(tc, test_limits_under_stress);
	tcase_add_test(tc, test_fork_child_uses_pool);
	tcase_add_test(tc, test_fork_counters_are_fork_time);
	tcase_add_test(tc, test_fork_during_stack_walks);
	tcase_add_test(tc, test_fork_wipes_idle_blocks);
#ifndef UNDER_TSAN
	/* lending and the fork enter another cache as a decay pass does: not
	 * under TSan */
	tcase_add_test(tc, test_lend_idle_block);
	tcase_add_test(tc, test_fork_wipes_other_threads_idle);
#endif
	tcase_add_test(tc, test_lend_off);
	tcase_add_test(tc, test_trace_walk_uses_no_descriptors);
#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	tcase_add_test(tc, test_fork_without_fds_leaves_parent_alone);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("reuse");
	tcase_add_test(tc, test_larger_class_hit);
	tcase_add_test(tc, test_larger_class_closest_fit);
	tcase_add_test(tc, test_class_order_stable);
	tcase_add_test(tc, test_shed_keeps_an_eighth);
	tcase_add_test(tc, test_growth_moves_pages);
	tcase_add_test(tc, test_moves_keep_mappings);
	tcase_add_test(tc, test_shim_move);
	tcase_add_test(tc, test_reuse_bound);
	tcase_add_test(tc, test_reuse_bound_conf);
	tcase_add_test(tc, test_depot_larger_class);
	tcase_add_test(tc, test_class_stats);
	tcase_add_test(tc, test_growth_one_block_per_doubling);
	tcase_add_test(tc, test_per_node_same_node);
	tcase_add_test(tc, test_per_node_off);
	suite_add_tcase(s, tc);

	tc = tcase_create("decay");
	tcase_set_timeout(tc, 60);
#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	/* a sanitizer's runtime faults pages of its own for a new thread */
	tcase_add_test(tc, test_decay_thread_start_faults_nothing);
#endif
	/* ThreadSanitizer cannot see the gate's membarrier: its builds keep
	 * decay passes out of other threads' caches (see pool.c) */
#ifndef UNDER_TSAN
	tcase_add_test(tc, test_decay_cached_block);
	tcase_add_test(tc, test_decay_inside_a_bin);
	tcase_add_test(tc, test_decay_quiet_thread);
	tcase_add_test(tc, test_decay_depot_and_fork);
	tcase_add_test(tc, test_decay_remote_freed_by_pass);
	tcase_add_test(tc, test_decay_remote_freed_by_owner);
#endif
	tcase_add_test(tc, test_decay_inline);
	tcase_add_test(tc, test_decay_thread_waits_a_period);
#ifndef UNDER_TSAN
	tcase_add_test(tc, test_decay_thread_early_for_a_burst); /* its pass enters our cache */
#endif
	suite_add_tcase(s, tc);
	return s;
}
