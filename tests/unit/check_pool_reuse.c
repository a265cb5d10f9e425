/*
 * check_pool_reuse.c - how a request is served (suite "pool_reuse"): an
 * idle block of a larger class, the order of a class's blocks, growth by
 * doubling, the pages moved into a new block and those shed, the reuse
 * bound (max_fit), the per-class statistics, and the depot per node.
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

/* Lines of /proc/self/maps that overlap [lo, hi): the mappings there
 * (the pools' region, apart from those a sanitizer's allocator adds). */
static int mapping_count_in(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	int n = 0;
	char line[512];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
			n++;
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

static void *release_it(void *p)
{
	scratch_release(p);
	return NULL;
}

/* A 2 MiB lease of the idle block of a written 16 MiB buffer (*ret_big). */
static char *small_lease_of_written_block(char **ret_big)
{
	char *big = scratch_acquire(16 * MIB), *p;

	ck_assert_ptr_nonnull(big);
	memset(big, 0x11, 16 * MIB);
	scratch_release(big);
	p = scratch_acquire(2 * MIB);
	ck_assert_ptr_eq(p, big);
	*ret_big = big;
	return p;
}

/* A 2 MiB request served by the idle block of a 16 MiB buffer is a limited
 * lease (pool_tail.c): its usable size is 2 MiB, and once it has outlived
 * 256 slow-path leases of its thread the pages past it go back, its own
 * kept. Released, the block is whole again. */
START_TEST(test_long_small_lease_gives_tail_back)
{
	char *big, *p = small_lease_of_written_block(&big);
	size_t cap = scratch_class_size(16 * MIB), trimmed = total_stats().trimmed;

	ck_assert_uint_eq(scratch_usable_size(p), 2 * MIB);
	memset(p, 0x22, 2 * MIB);
	slow_leases(255);
	ck_assert_uint_eq(resident_bytes(p, 16 * MIB), 16 * MIB); /* not yet */
	slow_leases(1);
	ck_assert_uint_eq(resident_bytes(p, 16 * MIB), 2 * MIB);
	ck_assert_uint_eq(total_stats().trimmed - trimmed, cap - 2 * MIB);
	for (size_t i = 0; i < 2 * MIB; i += 4 * KIB)
		ck_assert_int_eq(p[i], 0x22);
	ck_assert_int_eq(p[2 * MIB - 1], 0x22);
	scratch_release(p);
	p = scratch_acquire(16 * MIB); /* its own class: the fast path */
	ck_assert_ptr_eq(p, big);
	ck_assert_uint_eq(scratch_usable_size(p), cap);
	ck_assert_int_eq(p[2 * MIB], 0); /* given back: reads zero */
	scratch_release(p);
	expect_pool(cap + 64 * KIB, 0);
}
END_TEST

/* A limited lease let go before it outlived 256 slow-path leases keeps
 * the block's pages (a temporary in a loop whose sizes vary: the block's
 * next large lease reuses them in place), also when another thread lets
 * it go, and its block, leased again in full, loses nothing later. */
START_TEST(test_short_small_lease_keeps_pages)
{
	char *big, *p = small_lease_of_written_block(&big);
	size_t trimmed = total_stats().trimmed;

	slow_leases(200);
	scratch_release(p);
	slow_leases(300);
	ck_assert_uint_eq(resident_bytes(big, 16 * MIB), 16 * MIB);
	/* freed by another thread: the owner drains it, and forgets it */
	p = scratch_acquire(2 * MIB);
	ck_assert_ptr_eq(p, big);
	ck_assert_uint_eq(scratch_usable_size(p), 2 * MIB);
	run_thread(release_it, p);
	p = scratch_acquire(16 * MIB); /* a slow path: drains the remote free */
	ck_assert_ptr_eq(p, big);
	memset(p, 0x33, 16 * MIB);
	slow_leases(300);
	ck_assert_uint_eq(resident_bytes(p, 16 * MIB), 16 * MIB);
	for (size_t i = 0; i < 16 * MIB; i += 4 * KIB)
		ck_assert_int_eq(p[i], 0x33);
	ck_assert_uint_eq(total_stats().trimmed, trimmed);
	scratch_release(p);
}
END_TEST

/* realloc growing a limited lease within its block (a buffer grown from a
 * small start) keeps it in place and lifts the limit: its whole capacity
 * usable again, nothing given back later (table 1r's 4 MiB buffer in the
 * block of the 256 MiB one before it). */
START_TEST(test_small_lease_grows_in_place)
{
	char *big, *p = small_lease_of_written_block(&big);
	size_t trimmed = total_stats().trimmed;

	ck_assert_uint_eq(scratch_usable_size(p), 2 * MIB);
	ck_assert(scratch__shim_keeps(p, 6 * MIB));
	ck_assert_uint_eq(scratch_usable_size(p), scratch_class_size(16 * MIB));
	memset(p, 0x44, 6 * MIB);
	slow_leases(300);
	ck_assert_uint_eq(resident_bytes(p, 16 * MIB), 16 * MIB);
	ck_assert_uint_eq(total_stats().trimmed, trimmed);
	scratch_release(p);
}
END_TEST

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
				/* a growth block: twice the request, four times
				 * below 2 MiB (the class below missed last: the set
				 * rule, of one buffer here) */
				ck_assert_uint_ge(cap, size < 2 * MIB ? 4 * size : 2 * size);
				ck_assert_uint_le(cap, size < 2 * MIB ? 5 * size : 5 * size / 2);
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

/* A set of buffers below 2 MiB that grows together (a K/V cache copied
 * out every token) crosses a class as a set: once its class just below
 * missed, the set's misses carve four times the request, and the next
 * seven classes are served by those blocks, with no new miss. A thread
 * that never missed the class below carves the exact class. */
START_TEST(test_set_moving_up_doubles)
{
	const size_t lo = 512 * KIB, up = 640 * KIB;
	void *set[6], *next[6];

	conf_add("decay_ms:0");
	/* an unrelated miss first: its class is far below */
	scratch_release(scratch_acquire(64 * KIB));
	for (int i = 0; i < 6; i++) {
		set[i] = scratch_acquire(lo);
		ck_assert_uint_eq(scratch_usable_size(set[i]), scratch_class_size(lo));
	}
	/* still live (a collector has not freed them yet): the set moves up */
	for (int i = 0; i < 6; i++) {
		next[i] = scratch_acquire(up);
		ck_assert_uint_ge(scratch_usable_size(next[i]), 4 * up);
		ck_assert_uint_le(scratch_usable_size(next[i]), 5 * up);
	}
	ck_assert_uint_eq(thread_stats().misses, 1 + 6 + 6);
	for (int i = 0; i < 6; i++) {
		scratch_release(set[i]);
		scratch_release(next[i]);
	}
	/* up to four times 640 KiB, those blocks serve the set: no miss */
	for (int i = 0; i < 6; i++) {
		next[i] = scratch_acquire(2500 * KIB);
		ck_assert_uint_ge(scratch_usable_size(next[i]), 4 * up);
	}
	ck_assert_uint_eq(thread_stats().misses, 1 + 6 + 6);
	for (int i = 0; i < 6; i++)
		scratch_release(next[i]);
}
END_TEST

/* A set keeps moving up while it grows in number: a live set that
 * expands after it crossed (a collector freeing later than before) goes
 * on missing in its new class long after the class below last missed,
 * and each of those misses carves four times the request too, so no
 * member of the set is left in an exact-class block that the next
 * crossing would have to move. SET_WINDOW (64) misses of the class below
 * are long past by the last of these. */
START_TEST(test_set_keeps_moving_up)
{
	enum { N = 96 };
	const size_t lo = 512 * KIB, up = 640 * KIB;
	void *first, *set[N];

	conf_add("decay_ms:0");
	first = scratch_acquire(lo);
	for (int i = 0; i < N; i++) {
		set[i] = scratch_acquire(up);
		ck_assert_ptr_nonnull(set[i]);
		ck_assert_uint_ge(scratch_usable_size(set[i]), 4 * up);
	}
	ck_assert_uint_eq(thread_stats().misses, 1 + N);
	for (int i = 0; i < N; i++)
		scratch_release(set[i]);
	scratch_release(first);
}
END_TEST

/* Idle blocks in the depot of the classes below a miss (a set of buffers
 * other threads freed past the owner's cache, then outgrew) give their
 * pages back, up to what the miss faults in: the new pages replace old
 * ones. Blocks below 2 MiB, whose pages cannot move. */
static void *leave_four_in_depot(void *arg)
{
	void *p[4];

	(void)arg;
	for (int i = 0; i < 4; i++)
		p[i] = scratch_acquire(MIB);
	for (int i = 0; i < 4; i++)
		scratch_release(p[i]); /* cached, then flushed to the depot at exit */
	return NULL;
}

START_TEST(test_depot_below_a_miss_sheds)
{
	uint64_t trimmed;
	void *p;

	conf_add("decay_ms:0");
	(void)run_thread(leave_four_in_depot, NULL);
	ck_assert_uint_eq(total_stats().retained, 4 * MIB);
	trimmed = total_stats().trimmed;
	p = scratch_acquire(3 * MIB); /* a miss of 3 MiB of new pages */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(thread_stats().misses, 1);
	ck_assert_uint_eq(total_stats().trimmed - trimmed, 3 * MIB);
	ck_assert_uint_eq(total_stats().retained, MIB + scratch_usable_size(p));
	scratch_release(p);
}
END_TEST

/* Idle blocks of 2 MiB and more in the depot, of the classes below a
 * miss, move their pages into the new block as the thread's own would
 * (test_growth_moves_pages): none is faulted again. */
START_TEST(test_depot_below_a_miss_moves)
{
	size_t four = 4 * MIB;
	char *p;

	conf_add("decay_ms:0");
	p = run_thread(leave_in_depot, &four);
	ck_assert_uint_eq(total_stats().retained, 4 * MIB);
	p = scratch_acquire(12 * MIB);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(thread_stats().misses, 1);
	ck_assert_uint_eq(total_stats().moved, 4 * MIB);
	ck_assert_uint_eq(total_stats().trimmed, 0);
	ck_assert_uint_eq(total_stats().retained, scratch_usable_size(p)); /* the depot is empty */
	scratch_release(p);
}
END_TEST

/*
 * A set of buffers below 2 MiB that moves up a class while the blocks it
 * outgrew are idle (a collector freed them): each new block starts with
 * the pages of one of them, moved (mremap), not faulted again: the data is
 * in the new block, the old one holds no page, nothing went back to the
 * OS. Round after round between the same addresses makes no new mappings.
 */
START_TEST(test_small_set_moves_pages)
{
	const size_t lo = 600 * KIB, up = 700 * KIB;
	const size_t lo_cap = scratch_class_size(lo);
	uintptr_t from = UINTPTR_MAX, to = 0;
	int first = 0;

	conf_add("decay_ms:0");
	for (int round = 0; round < 20; round++) {
		char *old[6], *next[6];
		uint64_t moved = total_stats().moved, trimmed = total_stats().trimmed;
		unsigned seen = 0;

		for (int i = 0; i < 6; i++) {
			old[i] = scratch_acquire(lo);
			ck_assert_ptr_nonnull(old[i]);
			memset(old[i], 'a' + i, lo);
		}
		for (int i = 0; i < 6; i++)
			scratch_release(old[i]);
		for (int i = 0; i < 6; i++) {
			next[i] = scratch_acquire(up);
			ck_assert_ptr_nonnull(next[i]);
			ck_assert_int_ge(next[i][0], 'a');
			ck_assert_int_le(next[i][0], 'f');
			ck_assert_int_eq(next[i][lo - 1], next[i][0]);
			ck_assert_int_eq(next[i][up - 1], 0); /* its own tail: fresh */
			seen |= 1u << (next[i][0] - 'a');
		}
		ck_assert_uint_eq(seen, 0x3f); /* each old block's pages, once */
		ck_assert_uint_eq(total_stats().moved - moved, 6 * lo_cap);
		ck_assert_uint_eq(total_stats().trimmed - trimmed, 0);
		for (int i = 0; i < 6; i++)
			ck_assert_uint_eq(resident_bytes(old[i], lo_cap), 0);
		for (int i = 0; i < 6; i++) {
			uintptr_t a = (uintptr_t)old[i], b = (uintptr_t)next[i];
			uintptr_t b_end = b + scratch_usable_size(next[i]);

			if (round == 0) {
				from = a < from ? a : from;
				from = b < from ? b : from;
				to = a + lo_cap > to ? a + lo_cap : to;
				to = b_end > to ? b_end : to;
			} else { /* the first round's addresses again */
				ck_assert(a >= from && a + lo_cap <= to);
				ck_assert(b >= from && b_end <= to);
			}
			scratch_release(next[i]);
		}
		scratch_trim(); /* all empty: the next round takes the same addresses */
		if (round == 0)
			first = mapping_count_in(from, to);
	}
	/* the blocks' addresses stay the same, and so do the mappings there */
	ck_assert_int_le(mapping_count_in(from, to), first);
	expect_pool(0, 0);
}
END_TEST

/* A block of 2 MiB or more whose request outgrew an idle block below 2
 * MiB starts with that block's pages too; not with thp:true, whose huge
 * first page the move would break into small ones. */
static void small_into_large(bool thp)
{
	char *a, *b;

	conf_add(thp ? "decay_ms:0,thp:true" : "decay_ms:0");
	a = scratch_acquire(1200 * KIB);
	memset(a, 0x7e, 1200 * KIB);
	scratch_release(a);
	b = scratch_acquire(2 * MIB);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(thread_stats().misses, 2);
	if (thp) {
		ck_assert_uint_eq(total_stats().moved, 0);
		ck_assert_int_eq(b[0], 0);
	} else {
		ck_assert_uint_eq(total_stats().moved, scratch_class_size(1200 * KIB));
		ck_assert_int_eq(b[0], 0x7e);
		ck_assert_int_eq(b[1200 * KIB - 1], 0x7e);
		ck_assert_uint_eq(resident_bytes(a, 1200 * KIB), 0);
	}
	scratch_release(b);
}

START_TEST(test_small_pages_move_into_large_block)
{
	small_into_large(false);
}
END_TEST

START_TEST(test_small_pages_stay_under_thp)
{
	small_into_large(true);
}
END_TEST

/* A miss more than 4x above the depot's idle blocks leaves them there:
 * they are another set's (an arena chunk of 16 MiB once took the blocks
 * of a growing K/V set of 1 MiB buffers), and that set takes them next. */
START_TEST(test_depot_far_below_a_miss_stays)
{
	uint64_t trimmed;
	void *p, *q;

	conf_add("decay_ms:0");
	(void)run_thread(leave_four_in_depot, NULL);
	trimmed = total_stats().trimmed;
	p = scratch_acquire(16 * MIB);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(thread_stats().misses, 1);
	ck_assert_uint_eq(total_stats().trimmed - trimmed, 0);
	ck_assert_uint_eq(total_stats().retained, 4 * MIB + scratch_usable_size(p));
	q = scratch_acquire(MIB);
	ck_assert_uint_eq(thread_stats().misses, 1); /* from the depot */
	scratch_release(q);
	scratch_release(p);
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

Suite *pool_reuse_suite(void)
{
	Suite *s = suite_create("pool_reuse");
	TCase *tc = tcase_create("reuse");

	/* a hang guard: its cases fault hundreds of MiB, slow on a loaded
	 * machine */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_larger_class_hit);
	tcase_add_test(tc, test_larger_class_closest_fit);
	tcase_add_test(tc, test_long_small_lease_gives_tail_back);
	tcase_add_test(tc, test_short_small_lease_keeps_pages);
	tcase_add_test(tc, test_small_lease_grows_in_place);
	tcase_add_test(tc, test_class_order_stable);
	tcase_add_test(tc, test_reuse_bound);
	tcase_add_test(tc, test_reuse_bound_conf);
	tcase_add_test(tc, test_depot_larger_class);
	tcase_add_test(tc, test_class_stats);
	suite_add_tcase(s, tc);

	tc = tcase_create("growth");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_shed_keeps_an_eighth);
	tcase_add_test(tc, test_growth_moves_pages);
	tcase_add_test(tc, test_moves_keep_mappings);
	tcase_add_test(tc, test_shim_move);
	tcase_add_test(tc, test_growth_one_block_per_doubling);
	tcase_add_test(tc, test_set_moving_up_doubles);
	tcase_add_test(tc, test_set_keeps_moving_up);
	tcase_add_test(tc, test_depot_below_a_miss_sheds);
	tcase_add_test(tc, test_depot_below_a_miss_moves);
	tcase_add_test(tc, test_small_set_moves_pages);
	tcase_add_test(tc, test_small_pages_move_into_large_block);
	tcase_add_test(tc, test_small_pages_stay_under_thp);
	tcase_add_test(tc, test_depot_far_below_a_miss_stays);
	suite_add_tcase(s, tc);

	tc = tcase_create("nodes");
	tcase_add_test(tc, test_per_node_same_node);
	tcase_add_test(tc, test_per_node_off);
	suite_add_tcase(s, tc);
	return s;
}
