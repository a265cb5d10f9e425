/*
 * check_pool.c - the pools through the public API: the entry points, the
 * size classes, the configuration, the cache limits and trim, and a region
 * used up (suite "pool", cases "core" and "limits").
 *
 * The pools' other mechanisms have suites of their own, as src/ has files:
 * check_pool_threads.c (threads, remote frees, fork, lending),
 * check_pool_reuse.c (reuse across classes, growth, page moves, nodes) and
 * check_pool_decay.c.
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
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scratch.h"
#include "segment.h"
#include "shim.h"
#include "suites.h"

#include "check_pool.h"

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

/* The offset of the first nonzero byte of the n at p, or n: one check
 * for a whole buffer (a ck_assert a byte takes seconds under TSan). */
static size_t first_nonzero(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] == 0)
		i++;
	return i;
}

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
	ck_assert_uint_eq(first_nonzero(q, 300 * KIB), 300 * KIB);
	scratch_release(q);
}
END_TEST

/* Page faults this thread takes by a trap from now on (the kernel's
 * software event: a page faulted in by madvise(MADV_POPULATE_WRITE)
 * counts in getrusage's minor faults but not here); -1 when perf events
 * are refused (perf_event_paranoid, a seccomp filter). */
static int trap_faults_open(void)
{
	struct perf_event_attr a = {
	        .type = PERF_TYPE_SOFTWARE,
	        .size = sizeof(a),
	        .config = PERF_COUNT_SW_PAGE_FAULTS,
	        .exclude_kernel = 1,
	        .exclude_hv = 1,
	};

	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static long trap_faults(int fd)
{
	long long n = 0;

	ck_assert_int_eq(read(fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	return (long)n;
}

/* A zeroed lease of a recycled block past what earlier leases wrote: the
 * pages beyond come in with one madvise, not a trap each (where the kernel
 * has MADV_POPULATE_WRITE and perf events are allowed), and every byte
 * reads zero, also those a later, longer lease of the block's class
 * wrote past the extent the zeroed lease recorded. */
START_TEST(test_zeroed_growth_populates)
{
	char *p, *q, *probe;
	int fd;
	long before, traps;
	bool populate;

	p = scratch_acquire(260 * KIB); /* a 320 KiB block, 260 KiB written */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(scratch_usable_size(p), 320 * KIB);
	memset(p, 0xab, 260 * KIB);
	scratch_release(p);
	fd = trap_faults_open();
	probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(probe, MAP_FAILED);
	populate = madvise(probe, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
	munmap(probe, 4096);
	before = fd >= 0 ? trap_faults(fd) : 0;
	q = scratch_acquire_zeroed(316 * KIB); /* 56 KiB, 14 pages, never written */
	traps = fd >= 0 ? trap_faults(fd) - before : -1;
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(first_nonzero(q, 316 * KIB), 316 * KIB);
	/* 14 without the populate, and a sanitizer's shadow pages land in
	 * the window on top of those (3 under ASan, 7 under TSan): fewer than
	 * the 14 pages' traps means one call brought them in */
	if (fd >= 0 && populate)
		ck_assert_int_lt(traps, 14);
	else
		fprintf(stderr, "test_zeroed_growth_populates: %s: trap count not checked\n",
		        fd < 0 ? "perf events refused" : "no MADV_POPULATE_WRITE");
	if (fd >= 0)
		close(fd);

	/* a longer lease of the class writes past the recorded 316 KiB */
	memset(q, 0xcd, 316 * KIB);
	scratch_release(q);
	q = scratch_acquire(320 * KIB);
	ck_assert_ptr_eq(q, p);
	memset(q, 0xef, 320 * KIB);
	scratch_release(q);
	q = scratch_acquire_zeroed(320 * KIB);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(first_nonzero(q, 320 * KIB), 320 * KIB);
	scratch_release(q);
}
END_TEST

/* Resident pages of the n bytes at p (mincore). */
static size_t resident_pages(const void *p, size_t n)
{
	static unsigned char vec[1024];
	size_t in = 0;

	for (size_t at = 0; at < n; at += sizeof(vec) * 4096) {
		size_t len = n - at < sizeof(vec) * 4096 ? n - at : sizeof(vec) * 4096;

		ck_assert_int_eq(mincore((char *)p + at, len, vec), 0);
		for (size_t i = 0; i < len / 4096; i++)
			in += vec[i] & 1;
	}
	return in;
}

static bool kernel_populates(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ok = madvise(p, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
	munmap(p, 4096);
	return ok;
}

/* One thread's fresh leases of 1 MiB (zeroed, or plain): the first is
 * watched; how much of it its holder wrote (touch bytes at its start, or
 * all of it when touch is 0) decides whether the next fresh one comes
 * populated. With remote set, another thread frees the first, and the
 * owner measures it when it drains that free. With other set, the first
 * is of the other kind. */
struct zero_case {
	size_t touch;
	bool zeroed, remote, other;
	size_t first_resident, next_resident;
	bool next_zero, same_usable;
	uint64_t populated; /* the stats' populated bytes over the case */
};

static void *free_it(void *p)
{
	scratch_release(p);
	return NULL;
}

static void *zero_case_run(void *arg)
{
	struct zero_case *z = arg;
	char *a, *b;

	a = z->zeroed != z->other ? scratch_acquire_zeroed(MIB) : scratch_acquire(MIB);
	ck_assert_ptr_nonnull(a);
	z->first_resident = resident_pages(a, MIB);
	z->same_usable = scratch_usable_size(a) == MIB; /* a watched lease keeps its size */
	memset(a, 0x5a, z->touch != 0 ? z->touch : MIB);
	if (z->remote) {
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, free_it, a), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
	} else {
		scratch_release(a);
	}
	scratch_trim(); /* a's pages go back: the next lease is fresh again */
	b = z->zeroed ? scratch_acquire_zeroed(MIB) : scratch_acquire(MIB);
	ck_assert_ptr_nonnull(b);
	z->next_resident = resident_pages(b, MIB);
	z->next_zero = true;
	for (size_t i = 0; i < MIB; i++)
		if (b[i] != 0)
			z->next_zero = false;
	scratch_release(b);
	return NULL;
}

/* Run fn(arg) on a thread of its own (whose verdicts start from nothing),
 * with no idle block anywhere first (CK_FORK=no runs the other tests in
 * this process): trim, and this thread's next slow path flushes its own
 * cache. */
static void in_fresh_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	scratch_trim();
	scratch_release(scratch_acquire_zeroed(64 * KIB));
	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

static struct zero_case zero_case(bool zeroed, size_t touch, bool remote, bool other)
{
	struct zero_case z = {.touch = touch, .zeroed = zeroed, .remote = remote, .other = other};
	uint64_t before = total_stats().populated;

	in_fresh_thread(zero_case_run, &z);
	z.populated = total_stats().populated - before;
	ck_assert_uint_eq(z.first_resident, 0); /* fresh, not written by the pools */
	ck_assert(z.same_usable);
	ck_assert(z.next_zero);
	return z;
}

/* A thread whose fresh lease was written whole gets its next one of the
 * size and kind populated (256 pages resident before it writes any); one
 * whose lease was written sparsely (one page of 256) gets the next one
 * untouched; a lease freed by another thread counts when its owner drains
 * the free; and zeroed and plain leases are told apart (numpy's zeros
 * against its results). */
START_TEST(test_fresh_populated_when_written_whole)
{
	if (!kernel_populates()) {
		fprintf(stderr, "%s: no MADV_POPULATE_WRITE: not checked\n", __func__);
		return;
	}
	for (int zeroed = 0; zeroed <= 1; zeroed++) {
		struct zero_case z = zero_case(zeroed, 0, false, false);

		ck_assert_uint_eq(z.next_resident, MIB / 4096);
		ck_assert_uint_eq(z.populated, MIB); /* and counted: the next lease's */
		z = zero_case(zeroed, 4096, false, false);
		ck_assert_uint_eq(z.next_resident, 0);
		ck_assert_uint_eq(z.populated, 0);
		ck_assert_uint_eq(zero_case(zeroed, 0, true, false).next_resident, MIB / 4096);
		ck_assert_uint_eq(zero_case(zeroed, 0, false, true).next_resident, 0);
	}
}
END_TEST

/* A plain lease of 2 MiB or more whose pages are new, in a band its
 * thread has no verdict for, comes populated but for its last 128 pages,
 * its window, which alone its measurement reads: written whole, the next
 * fresh lease of the band comes populated whole; written only at its start
 * (a buffer sized for the worst case), the next one comes untouched. A
 * zeroed lease (calloc's untouched pages are what a sparse user counts
 * on) and one past 64 MiB come untouched, as every probe did before. */
struct spec_case {
	size_t size, touch;
	bool zeroed;
	size_t first_resident, next_resident;
};

static void *spec_case_run(void *arg)
{
	struct spec_case *c = arg;
	char *a, *b;

	a = c->zeroed ? scratch_acquire_zeroed(c->size) : scratch_acquire(c->size);
	ck_assert_ptr_nonnull(a);
	c->first_resident = resident_pages(a, c->size);
	memset(a, 0x3c, c->touch);
	scratch_release(a); /* the probe ends: its window decides */
	scratch_trim();     /* the next lease is fresh */
	b = c->zeroed ? scratch_acquire_zeroed(c->size) : scratch_acquire(c->size);
	ck_assert_ptr_nonnull(b);
	c->next_resident = resident_pages(b, c->size);
	scratch_release(b);
	scratch_trim();
	return NULL;
}

START_TEST(test_first_lease_populated_but_its_window)
{
	const size_t window = 128;
	struct spec_case whole = {.size = 8 * MIB, .touch = 8 * MIB},
	                 start = {.size = 8 * MIB, .touch = 2 * MIB},
	                 zeroed = {.size = 8 * MIB, .touch = 8 * MIB, .zeroed = true},
	                 large = {.size = 96 * MIB, .touch = 96 * MIB};

	if (!kernel_populates()) {
		fprintf(stderr, "%s: no MADV_POPULATE_WRITE: not checked\n", __func__);
		return;
	}
	in_fresh_thread(spec_case_run, &whole);
	ck_assert_uint_eq(whole.first_resident, 8 * MIB / 4096 - window);
	ck_assert_uint_eq(whole.next_resident, 8 * MIB / 4096);
	in_fresh_thread(spec_case_run, &start);
	ck_assert_uint_eq(start.first_resident, 8 * MIB / 4096 - window);
	ck_assert_uint_eq(start.next_resident, 0);
	in_fresh_thread(spec_case_run, &zeroed);
	ck_assert_uint_eq(zeroed.first_resident, 0);
	ck_assert_uint_eq(zeroed.next_resident, 8 * MIB / 4096);
	in_fresh_thread(spec_case_run, &large);
	ck_assert_uint_eq(large.first_resident, 0);
	ck_assert_uint_eq(large.next_resident, 96 * MIB / 4096);
}
END_TEST

/* A thread that holds its large buffers unwritten (a pool of its own,
 * sized for the worst case) gets at most 256 MiB of them populated: 24
 * fresh leases of 16 MiB, none written, each taken while the others are
 * live; the first comes populated but for its window, and those past the
 * budget come untouched. Freed unwritten, they keep counting: the next
 * fresh lease comes untouched too. */
struct budget_case {
	size_t resident, first_resident, after_resident;
};

static void *budget_case_run(void *arg)
{
	struct budget_case *c = arg;
	char *held[24];

	for (int i = 0; i < 24; i++) {
		held[i] = scratch_acquire(16 * MIB);
		ck_assert_ptr_nonnull(held[i]);
	}
	c->first_resident = resident_pages(held[0], 16 * MIB);
	for (int i = 0; i < 24; i++)
		c->resident += resident_pages(held[i], 16 * MIB);
	for (int i = 0; i < 24; i++)
		scratch_release(held[i]);
	scratch_trim();
	held[0] = scratch_acquire(16 * MIB);
	ck_assert_ptr_nonnull(held[0]);
	c->after_resident = resident_pages(held[0], 16 * MIB);
	scratch_release(held[0]);
	scratch_trim();
	return NULL;
}

START_TEST(test_unwritten_probes_budget)
{
	struct budget_case c = {0, 0, 0};

	if (!kernel_populates()) {
		fprintf(stderr, "%s: no MADV_POPULATE_WRITE: not checked\n", __func__);
		return;
	}
	in_fresh_thread(budget_case_run, &c);
	ck_assert_uint_eq(c.first_resident, 16 * MIB / 4096 - 128);
	ck_assert_uint_gt(c.resident, 16 * MIB / 4096);
	ck_assert_uint_le(c.resident, 256 * MIB / 4096);
	ck_assert_uint_eq(c.after_resident, 0);
}
END_TEST

/* A thread that writes its leases whole takes its block back, from its
 * own class's bin, for a longer request than the block's earlier leases
 * wrote: the pages past them come populated (all 320 resident before the
 * holder writes any), not a trap a page at its writes. The bin's head
 * alone would be a fast-path hit, which does not bring pages in. */
struct extent_case {
	char *first, *next;
	size_t next_resident;
};

static void *extent_case_run(void *arg)
{
	struct extent_case *e = arg;
	char *a, *b;

	a = scratch_acquire(MIB + 64 * KIB); /* fresh: a probe, written whole */
	ck_assert_ptr_nonnull(a);
	memset(a, 0x6b, MIB + 64 * KIB);
	scratch_release(a);                   /* its band is dense from here on */
	b = scratch_acquire(MIB + 256 * KIB); /* the same class (1.25 MiB) */
	ck_assert_ptr_nonnull(b);
	e->first = a;
	e->next = b;
	e->next_resident = resident_pages(b, MIB + 256 * KIB);
	scratch_release(b);
	return NULL;
}

START_TEST(test_longer_lease_of_own_block_populated)
{
	struct extent_case e = {NULL, NULL, 0};

	if (!kernel_populates()) {
		fprintf(stderr, "%s: no MADV_POPULATE_WRITE: not checked\n", __func__);
		return;
	}
	in_fresh_thread(extent_case_run, &e);
	ck_assert_ptr_eq(e.next, e.first); /* the same block, taken back */
	ck_assert_uint_eq(e.next_resident, (MIB + 256 * KIB) / 4096);
}
END_TEST

/* A probe written whole while still leased decides its band at the
 * thread's next slow-path lease: a buffer taken, written, and the next one
 * (of the same power of two, a new block) taken while it is held comes
 * populated; after one written sparsely it does not. With held buffers
 * first: probes held long and written sparsely (a Python program's first
 * large buffers) fill the half of the thread's list that probes may take,
 * and a newer probe takes the oldest one's place, so that the thread's
 * later buffers are still measured. */
struct peek_case {
	size_t touch;
	int held; /* sparse 256 KiB probes held meanwhile, each a new block */
	size_t next_resident;
};

static void *peek_case_run(void *arg)
{
	struct peek_case *k = arg;
	char *a, *b, *held[8];

	ck_assert_int_le(k->held, 8);
	for (int i = 0; i < k->held; i++) {
		held[i] = scratch_acquire(256 * KIB);
		ck_assert_ptr_nonnull(held[i]);
		held[i][0] = 1; /* one page of 64 */
	}
	a = scratch_acquire(MIB);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x3c, k->touch);
	b = scratch_acquire(MIB + 256 * KIB); /* a larger class: a new block */
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	k->next_resident = resident_pages(b, MIB + 256 * KIB);
	scratch_release(b);
	scratch_release(a);
	for (int i = 0; i < k->held; i++)
		scratch_release(held[i]);
	return NULL;
}

static void peek_cases(const char *test, int held)
{
	struct peek_case dense = {.touch = MIB, .held = held},
	                 sparse = {.touch = 4096, .held = held};

	if (!kernel_populates()) {
		fprintf(stderr, "%s: no MADV_POPULATE_WRITE: not checked\n", test);
		return;
	}
	in_fresh_thread(peek_case_run, &dense);
	ck_assert_uint_eq(dense.next_resident, (MIB + 256 * KIB) / 4096);
	in_fresh_thread(peek_case_run, &sparse);
	ck_assert_uint_eq(sparse.next_resident, 0);
}

START_TEST(test_live_probe_written_whole_decides)
{
	peek_cases(__func__, 0);
}
END_TEST

START_TEST(test_held_sparse_probes_make_room)
{
	peek_cases(__func__, 6);
}
END_TEST

/* The mappings of /proc/self/smaps over [p, p + n): their AnonHugePages
 * (kB) summed, and whether every one's VmFlags has nh and whether any has
 * hg. A block may span several mappings of the same flags (a mapping's
 * pages that first faulted under different marks keep apart). */
struct vma_info {
	long huge_kb;
	int vmas;
	bool all_nh, any_hg;
};

static struct vma_info vma_of(const void *p, size_t n)
{
	struct vma_info v = {.huge_kb = 0, .vmas = 0, .all_nh = true, .any_hg = false};
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p < hi && (uintptr_t)p + n > lo;
			v.vmas += in;
			continue;
		}
		if (in && strncmp(line, "AnonHugePages:", 14) == 0)
			v.huge_kb += atol(line + 14);
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			v.all_nh = v.all_nh && strstr(line + 8, " nh") != NULL;
			v.any_hg = v.any_hg || strstr(line + 8, " hg") != NULL;
		}
	}
	fclose(f);
	ck_assert_int_gt(v.vmas, 0);
	return v;
}

static bool thp_on_request(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) == NULL)
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "[madvise]") != NULL;
}

/* A /proc/vmstat counter. */
static unsigned long vmstat(const char *name)
{
	char line[128];
	size_t n = strlen(name);
	unsigned long v = 0;
	FILE *f = fopen("/proc/vmstat", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ' ')
			v = strtoul(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

struct huge_case {
	size_t touch;
	struct vma_info during, after;
	size_t resident;
};

static void *huge_case_run(void *arg)
{
	struct huge_case *h = arg;
	char *a, *b;

	a = scratch_acquire(4 * MIB);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x77, h->touch);
	scratch_release(a); /* the probe ends: dense or sparse */
	scratch_trim();     /* the next lease is fresh */
	b = scratch_acquire(4 * MIB);
	ck_assert_ptr_nonnull(b);
	h->resident = resident_pages(b, 4 * MIB);
	h->during = vma_of(b, 4 * MIB);
	scratch_release(b);
	scratch_trim(); /* its pages go back */
	h->after = vma_of(b, 4 * MIB);
	return NULL;
}

/* thp_dense (on by default): a lease populated because its thread writes
 * such leases whole gets its whole 2 MiB frames as huge pages, and its
 * mapping is left marked for none again (no huge page for a later sparse
 * lease of the block); a lease written sparsely gets none. */
START_TEST(test_dense_lease_huge_frames)
{
	struct huge_case dense = {.touch = 4 * MIB}, sparse = {.touch = 4096};
	unsigned long fallback;

	if (!kernel_populates() || !thp_on_request()) {
		fprintf(stderr,
		        "%s: no MADV_POPULATE_WRITE or THP not in madvise mode: not checked\n",
		        __func__);
		return;
	}
	fallback = vmstat("thp_fault_fallback");
	in_fresh_thread(huge_case_run, &dense);
	ck_assert_uint_eq(dense.resident, 4 * MIB / 4096);
	/* both frames huge, unless the kernel had none to give (counted) */
	if (dense.during.huge_kb < 4096)
		ck_assert_uint_gt(vmstat("thp_fault_fallback"), fallback);
	else
		ck_assert_int_ge(dense.during.huge_kb, 4096);
	ck_assert(dense.during.all_nh);
	ck_assert(!dense.during.any_hg);
	ck_assert(dense.after.all_nh);
	in_fresh_thread(huge_case_run, &sparse);
	ck_assert_uint_eq(sparse.resident, 0);
	ck_assert(!sparse.during.any_hg);
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

START_TEST(test_trim_reaches_other_threads)
{
	/* another thread's idle block is flushed at that thread's next call */
	void *p = scratch_acquire(64 * KIB);
	size_t two = 2 * MIB;

	scratch_release(p);
	(void)run_thread(leave_in_depot, &two); /* exits: its cache went to the depot */
	ck_assert_uint_eq(scratch_trim(), 64 * KIB + 2 * MIB);
	ck_assert_uint_eq(total_stats().retained, 0);
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
	tcase_add_test(tc, test_zeroed_growth_populates);
	tcase_add_test(tc, test_fresh_populated_when_written_whole);
	tcase_add_test(tc, test_first_lease_populated_but_its_window);
	tcase_add_test(tc, test_unwritten_probes_budget);
	tcase_add_test(tc, test_longer_lease_of_own_block_populated);
	tcase_add_test(tc, test_live_probe_written_whole_decides);
	tcase_add_test(tc, test_held_sparse_probes_make_room);
	tcase_add_test(tc, test_dense_lease_huge_frames);
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
	return s;
}
