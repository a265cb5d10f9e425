/*
 * check_pool_threads.c - the pools across threads (suite "pool_threads"):
 * a cache per thread, caches of threads that exit (orphans, zombies, late
 * exits), remote frees back to the owner, totals under stress; fork, and
 * what it copies (case "fork"); lending between threads (case "lend").
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
	size_t two = 2 * MIB;
	void *theirs = run_thread(leave_in_depot, &two), *mine;
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

struct stress_arg {
	int seed;
	void *volatile *mailbox; /* blocks passed between threads */
	int nbox;
	int violations;
};

/* This thread's leased <= retained, as a snapshot reports them: a remote
 * free pushes its block, then credits it, so for a few instructions the
 * block may count as leased and be gone from retained already (evicted to
 * the depot by a drain); only a violation that outlasts them is one (as
 * the debug build's own check, pool_stats.c). */
static bool leased_within_retained(void)
{
	for (int tries = 0; tries < 1000; tries++) {
		struct scratch_stats s = thread_stats();

		if (s.leased <= s.retained)
			return true;
		sched_yield();
	}
	return false;
}

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
		if (i % 100 == 0 && !leased_within_retained())
			a->violations++;
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

Suite *pool_threads_suite(void)
{
	Suite *s = suite_create("pool_threads");
	TCase *tc = tcase_create("threads");

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
	tcase_add_test(tc, test_trace_walk_uses_no_descriptors);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fork_child_uses_pool);
	tcase_add_test(tc, test_fork_counters_are_fork_time);
	tcase_add_test(tc, test_fork_during_stack_walks);
	tcase_add_test(tc, test_fork_wipes_idle_blocks);
#ifndef UNDER_TSAN
	/* the fork enters another cache as a decay pass does: not under TSan */
	tcase_add_test(tc, test_fork_wipes_other_threads_idle);
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(UNDER_TSAN)
	tcase_add_test(tc, test_fork_without_fds_leaves_parent_alone);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("lend");
	tcase_set_timeout(tc, 60);
#ifndef UNDER_TSAN
	/* lending enters another cache as a decay pass does: not under TSan */
	tcase_add_test(tc, test_lend_idle_block);
#endif
	tcase_add_test(tc, test_lend_off);
	suite_add_tcase(s, tc);
	return s;
}
