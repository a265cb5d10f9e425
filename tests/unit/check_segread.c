/*
 * check_segread.c - the stats segment reader (stats/segread/segread.c) on segments
 * built in memory: validation, the seqlock and totals contract of
 * segment.h, trace ring wrap, torn and unwritten records, the per size
 * class section and segments of writers older than it, the block table.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segread.h"
#include "suites.h"

#define SLOTS 4
#define RING  16

static uint8_t *seg;
static size_t seg_size;

static struct scratch_seg_header *hdr(void)
{
	return (struct scratch_seg_header *)seg;
}

static struct scratch_seg_thread *slot(uint32_t i)
{
	return (struct scratch_seg_thread *)(seg + hdr()->threads_off +
	                                     (size_t)i * hdr()->thread_stride);
}

static struct scratch_seg_record *rec(uint64_t seq)
{
	return (struct scratch_seg_record *)(seg + hdr()->ring_off +
	                                     ((seq - 1) % RING) * hdr()->record_stride);
}

static void put(uint64_t seq)
{
	struct scratch_seg_record *r = rec(seq);

	memset(r, 0, hdr()->record_stride);
	r->seq = seq;
	r->bytes = seq * 4096;
	r->tid = 7;
	r->nframes = 1;
	r->frames[0] = 0x1234;
	r->check = scratch_seg_record_check(r, r->frames, r->nframes);
	r->seq_end = seq;
	if (hdr()->ring_head < seq)
		hdr()->ring_head = seq;
}

/* A valid segment: SLOTS thread slots, two owners, a RING-record ring. */
static void build(void)
{
	struct scratch_seg_header *h;
	uint64_t off = sizeof(*h);

	seg_size = 64 * 1024;
	seg = calloc(1, seg_size);
	ck_assert_ptr_nonnull(seg);
	h = hdr();
	h->magic = SCRATCH_SEG_MAGIC;
	h->version = SCRATCH_SEG_VERSION;
	h->header_size = sizeof(*h);
	h->file_size = seg_size;
	h->pid = 4242;
	h->proc_off = off;
	h->proc_size = (sizeof(struct scratch__proc_counters) + 63) & ~(uint64_t)63;
	off += h->proc_size;
	h->classes_off = off;
	h->classes_size = (sizeof(struct scratch__proc_classes) + 63) & ~(uint64_t)63;
	h->class_first = SCRATCH__CLS_FIRST;
	h->class_count = SCRATCH__CLS_COUNT;
	h->slot_class_off = offsetof(struct scratch_seg_thread, k);
	h->threads_high = SLOTS;
	off += h->classes_size;
	h->threads_off = off;
	h->thread_slots = SLOTS;
	h->thread_stride = sizeof(struct scratch_seg_thread);
	off += SLOTS * h->thread_stride;
	h->owners_off = off;
	h->owner_slots = 2;
	h->owner_stride = 192;
	off += 2 * 192;
	h->ring_off = off;
	h->ring_slots = RING;
	h->record_frames = 2;
	h->record_stride = scratch_seg_record_stride(2);
	ck_assert_uint_le(off + RING * h->record_stride, seg_size);
}

static void teardown(void)
{
	free(seg);
	seg = NULL;
}

static struct scratch__proc_classes *pcls(void)
{
	return (struct scratch__proc_classes *)(seg + hdr()->classes_off);
}

static int open_seg(struct segread *s)
{
	struct segread_src src = {.fd = -1, .mem = seg, .mem_size = seg_size};
	char err[160];

	return segread_open(&src, seg_size, s, err, sizeof(err));
}

START_TEST(test_valid)
{
	struct segread s;

	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(s.pid, 4242);
	ck_assert_uint_eq(s.thread_slots, SLOTS);
	ck_assert_uint_eq(s.ring_slots, RING);
}
END_TEST

/* Totals per segment.h: live and exited slots, plus the folded counters,
 * the depot and orphans; reported leased subtracts remote frees. */
START_TEST(test_totals)
{
	struct segread s;
	struct segread_thread t[SLOTS];
	struct scratch__proc_counters *pc =
	        (struct scratch__proc_counters *)(seg + hdr()->proc_off);
	struct scratch__proc_counters proc;
	struct segread_totals tot;
	uint32_t n = 0;

	slot(0)->state = SCRATCH_SEG_LIVE;
	slot(0)->c.allocs = 10;
	slot(0)->c.misses = 2;
	slot(0)->c.retained = 8192;
	slot(0)->c.leased = 8192;
	slot(0)->c.remote_in_bytes = 4096;
	slot(2)->state = SCRATCH_SEG_EXITED;
	slot(2)->c.allocs = 5;
	slot(2)->c.retained = 4096;
	pc->exited.allocs = 100;
	pc->depot_bytes = 65536;
	pc->orphan_leased = 1;
	pc->orphan_retained = 1;
	ck_assert_int_eq(open_seg(&s), 0);
	for (uint32_t i = 0; i < SLOTS; i++)
		if (segread_thread(&s, i, &t[n]) == 0)
			n++;
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(segread_proc(&s, &proc), 0);
	segread_totals(t, n, &proc, &tot);
	ck_assert_uint_eq(tot.allocs, 115);
	ck_assert_uint_eq(tot.misses, 2);
	ck_assert_uint_eq(tot.retained, 8192 + 4096 + 65536 + 1);
	ck_assert_uint_eq(tot.leased, 4096 + 1);
	ck_assert_uint_eq(tot.threads_live, 1);
	ck_assert_uint_eq(tot.threads_exited, 1);
}
END_TEST

START_TEST(test_seqlock)
{
	struct segread s;
	struct segread_thread t;

	slot(1)->state = SCRATCH_SEG_LIVE;
	slot(1)->c.seq = 3; /* a writer inside its bracket */
	slot(3)->state = SCRATCH_SEG_BUSY;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(segread_thread(&s, 0, &t), -ENOENT);
	ck_assert_int_eq(segread_thread(&s, 1, &t), -EAGAIN);
	ck_assert_int_eq(segread_thread(&s, 3, &t), -EAGAIN);
	ck_assert_int_eq(segread_thread(&s, SLOTS, &t), -EINVAL);
	slot(1)->c.seq = 4;
	ck_assert_int_eq(segread_thread(&s, 1, &t), 0);
}
END_TEST

static uint64_t got[64], ngot;

static void collect(void *ctx, const struct segread_record *r)
{
	(void)ctx;
	ck_assert_uint_eq(r->bytes, r->seq * 4096);
	got[ngot++ % 64] = r->seq;
}

/* trace:false: the writer leaves the ring and its record layout at zero.
 * Such a segment is valid and drains nothing. */
START_TEST(test_no_ring)
{
	struct segread s;
	uint64_t next = 1, lost = 0;

	hdr()->ring_slots = 0;
	hdr()->record_frames = 0;
	hdr()->record_stride = 0;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_uint_eq(s.ring_slots, 0);
	ngot = 0;
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(ngot, 0);
	ck_assert_uint_eq(lost, 0);
	ck_assert_uint_eq(next, 1);
	/* a ring of slots still needs a record layout */
	hdr()->ring_slots = RING;
	ck_assert_int_ne(open_seg(&s), 0);
}
END_TEST

/* A process whose pools are off has a segment that says why, with a name
 * for every reason the reader accepts; 0 (pools on) has none. */
START_TEST(test_pools_off)
{
	struct segread s;

	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_uint_eq(s.pools_off, SCRATCH_SEG_POOLS_ON);
	ck_assert_ptr_null(segread_pools_off_name(s.pools_off));
	hdr()->pools_off = SCRATCH_SEG_OFF_AS_LIMIT;
	hdr()->flags |= SCRATCH_SEG_F_LOWERED;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_uint_eq(s.pools_off, SCRATCH_SEG_OFF_AS_LIMIT);
	ck_assert_uint_ne(s.flags & SCRATCH_SEG_F_LOWERED, 0);
	ck_assert_str_eq(segread_pools_off_name(s.pools_off), "address_space_limit");
	for (uint32_t r = 1; r <= SCRATCH_SEG_OFF_MAX; r++) {
		const char *n = segread_pools_off_name(r);

		ck_assert_ptr_nonnull(n);
		for (const char *c = n; *c != '\0'; c++)
			ck_assert_msg((*c >= 'a' && *c <= 'z') || *c == '_',
			              "'%s' is not snake_case", n);
	}
	ck_assert_ptr_null(segread_pools_off_name(SCRATCH_SEG_OFF_MAX + 1));
	ck_assert_ptr_null(segread_pools_off_name(UINT32_MAX));
}
END_TEST

START_TEST(test_wrap)
{
	struct segread s;
	uint64_t next = 1, lost = 0;

	for (uint64_t q = 1; q <= 40; q++)
		put(q);
	ck_assert_int_eq(open_seg(&s), 0);
	ngot = 0;
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(lost, 40 - RING);
	ck_assert_uint_eq(ngot, RING);
	ck_assert_uint_eq(got[0], 25);
	ck_assert_uint_eq(got[RING - 1], 40);
	ck_assert_uint_eq(next, 41);
	/* nothing new: nothing delivered, nothing lost */
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(ngot, RING);
	ck_assert_uint_eq(lost, 40 - RING);
}
END_TEST

START_TEST(test_torn_and_unwritten)
{
	struct segread s;
	uint64_t next = 1, lost = 0;

	for (uint64_t q = 1; q <= 5; q++)
		put(q);
	rec(2)->bytes ^= 1;  /* torn: the check fails */
	rec(4)->seq_end = 0; /* claimed, not written yet */
	ck_assert_int_eq(open_seg(&s), 0);
	ngot = 0;
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), -EAGAIN);
	ck_assert_uint_eq(ngot, 2); /* 1 and 3 */
	ck_assert_uint_eq(lost, 1);
	ck_assert_uint_eq(next, 4);
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, true, collect, NULL), 0);
	ck_assert_uint_eq(ngot, 3); /* 5 */
	ck_assert_uint_eq(lost, 2);
	ck_assert_uint_eq(next, 6);
}
END_TEST

/* A head that goes backwards is refused, and the drain does not follow it:
 * records below the next sequence number are never delivered again, so a
 * reader's copy stays in order. */
START_TEST(test_head_backwards)
{
	struct segread s;
	uint64_t next = 1, lost = 0;

	for (uint64_t q = 1; q <= 10; q++)
		put(q);
	ck_assert_int_eq(open_seg(&s), 0);
	ngot = 0;
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(ngot, 10);
	ck_assert_uint_eq(next, 11);
	hdr()->ring_head = 3;
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), -EBADMSG);
	ck_assert_uint_eq(next, 11);
	ck_assert_uint_eq(ngot, 10);
	/* the writer starts over: nothing is taken until it passes next */
	hdr()->ring_head = 0;
	for (uint64_t q = 1; q <= 10; q++)
		put(q);
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(ngot, 10);
	put(11);
	ck_assert_int_eq(segread_drain(&s, &next, &lost, 1000, false, collect, NULL), 0);
	ck_assert_uint_eq(ngot, 11);
	ck_assert_uint_eq(got[10], 11);
	ck_assert_uint_eq(next, 12);
	ck_assert_uint_eq(lost, 0);
}
END_TEST

#define K(cls) ((cls)-SCRATCH__CLS_FIRST)

/* The class of 1 MiB (index 79) and of 2 MiB (83). */
#define C1M 79
#define C2M 83

static const struct segread_class *find_class(const struct segread_class *c, int n, uint32_t cls)
{
	for (int i = 0; i < n; i++)
		if (c[i].cls == cls)
			return &c[i];
	return NULL;
}

/* segment.h's class equations: live and exited slots and the folded
 * counters add up; a free slot does not count; a request served by a
 * larger block moves the lease to the block's class (lent_adj wraps). */
START_TEST(test_classes)
{
	struct segread s;
	struct segread_class c[SCRATCH_SEG_MAX_CLASSES];
	const struct segread_class *a, *b;
	int n;

	ck_assert_uint_eq(segread_class_capacity(C1M), 1 << 20);
	ck_assert_uint_eq(segread_class_capacity(C2M), 2 << 20);
	/* slot 0: 10 hits and 2 misses of 1 MiB, 9 freed; one 1 MiB request
	 * served by a 2 MiB block (a larger hit) */
	slot(0)->state = SCRATCH_SEG_LIVE;
	slot(0)->k.hits[K(C1M)] = 11;
	slot(0)->k.misses[K(C1M)] = 2;
	slot(0)->k.larger_hits[K(C1M)] = 1;
	slot(0)->k.frees[K(C1M)] = 9;
	slot(0)->k.lent_adj[K(C1M)] = UINT64_MAX; /* -1 */
	slot(0)->k.lent_adj[K(C2M)] = 1;
	/* slot 1 is free: whatever it holds does not count */
	slot(1)->k.hits[K(C1M)] = 1000;
	/* slot 2 exited: one 2 MiB miss, still out */
	slot(2)->state = SCRATCH_SEG_EXITED;
	slot(2)->k.misses[K(C2M)] = 1;
	/* folded threads: 5 depot hits of 2 MiB, all freed */
	pcls()->exited.depot_hits[K(C2M)] = 5;
	pcls()->exited.frees[K(C2M)] = 5;
	pcls()->live[K(C1M)] = 4;
	pcls()->live[K(C2M)] = 3;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_uint_eq(s.class_count, SCRATCH__CLS_COUNT);
	n = segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES);
	ck_assert_int_eq(n, 2);
	a = find_class(c, n, C1M);
	b = find_class(c, n, C2M);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_lt(a - c, b - c); /* in class order */
	ck_assert_uint_eq(a->capacity, 1 << 20);
	ck_assert_uint_eq(a->requests, 13);
	ck_assert_uint_eq(a->hits, 11);
	ck_assert_uint_eq(a->larger_hits, 1);
	ck_assert_uint_eq(a->misses, 2);
	ck_assert_uint_eq(a->lent, 12);
	ck_assert_uint_eq(a->leased_blocks, 3);
	ck_assert_uint_eq(a->leased_bytes, 3 << 20);
	ck_assert_uint_eq(a->idle_bytes, 1 << 20); /* 4 live, 3 out */
	ck_assert_uint_eq(b->requests, 6);
	ck_assert_uint_eq(b->depot_hits, 5);
	ck_assert_uint_eq(b->lent, 7);
	ck_assert_uint_eq(b->leased_blocks, 2); /* the larger hit's and the miss's */
	ck_assert_uint_eq(b->leased_bytes, 4 << 20);
	ck_assert_uint_eq(b->idle_bytes, 2 << 20);
	/* room for one: the first class only */
	ck_assert_int_eq(segread_classes(&s, c, 1), 1);
	ck_assert_uint_eq(c[0].cls, C1M);
	/* slots at or above threads_high were never attached: not read */
	hdr()->threads_high = 1;
	ck_assert_int_eq(segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES), 2);
	a = find_class(c, 2, C2M);
	ck_assert_uint_eq(a->requests, 5); /* slot 2's miss is not seen */
	hdr()->threads_high = UINT32_MAX;  /* beyond the table: all of it */
	ck_assert_int_eq(segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES), 2);
	a = find_class(c, 2, C2M);
	ck_assert_uint_eq(a->requests, 6);
}
END_TEST

/* Hostile figures stay figures: more frees than leases, fewer live blocks
 * than leased ones and huge counts saturate instead of wrapping. */
START_TEST(test_classes_hostile)
{
	struct segread s;
	struct segread_class c[SCRATCH_SEG_MAX_CLASSES];

	slot(0)->state = SCRATCH_SEG_LIVE;
	slot(0)->k.misses[K(C1M)] = 1;
	slot(0)->k.frees[K(C1M)] = 5;
	slot(0)->k.misses[K(C2M)] = UINT64_MAX / 2;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES), 2);
	ck_assert_uint_eq(c[0].leased_bytes, 0);
	ck_assert_uint_eq(c[0].idle_bytes, 0);
	ck_assert_uint_eq(c[1].leased_bytes, UINT64_MAX);
	ck_assert_uint_eq(c[1].idle_bytes, 0);
	/* a writer that stays inside its bracket: -EAGAIN, not a torn sum */
	slot(0)->c.seq = 7;
	s.retries = 1;
	ck_assert_int_eq(segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES), -EAGAIN);
	slot(0)->c.seq = 8;
	((struct scratch__proc_counters *)(seg + hdr()->proc_off))->seq = 3;
	ck_assert_int_eq(segread_classes(&s, c, SCRATCH_SEG_MAX_CLASSES), -EAGAIN);
}
END_TEST

/* A writer from before the class counters: a shorter header and thread
 * slots, no class section. Its segment reads as before, without classes. */
START_TEST(test_classes_old_writer)
{
	struct scratch_seg_header *h = hdr();
	struct segread s;
	struct segread_thread t;
	struct segread_class c[4];
	uint64_t off;

	h->header_size = offsetof(struct scratch_seg_header, class_first);
	off = h->header_size;
	h->proc_off = off;
	off += h->proc_size;
	h->threads_off = off;
	h->thread_stride = offsetof(struct scratch_seg_thread, k);
	off += SLOTS * h->thread_stride;
	h->owners_off = off;
	off += 2 * 192;
	h->ring_off = off;
	/* what the old writer has beyond its header: the process counters */
	memset(seg + h->header_size, 0xa5, sizeof(*h) - h->header_size);
	memset(seg + h->proc_off, 0, h->proc_size);
	memset(seg + h->threads_off, 0, SLOTS * h->thread_stride);
	((struct scratch_seg_thread *)(seg + h->threads_off))->state = SCRATCH_SEG_LIVE;
	((struct scratch_seg_thread *)(seg + h->threads_off))->c.allocs = 3;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_uint_eq(s.class_count, 0);
	ck_assert_int_eq(segread_classes(&s, c, 4), -ENODATA);
	ck_assert_int_eq(segread_thread(&s, 0, &t), 0);
	ck_assert_uint_eq(t.c.allocs, 3);
	/* shorter still than any version 1 header: refused */
	h->header_size -= 64;
	ck_assert_int_eq(open_seg(&s), -EBADMSG);
}
END_TEST

/* Each corruption of the class layout is refused with -EBADMSG. */
START_TEST(test_classes_corrupt)
{
	struct scratch_seg_header *h = hdr();
	struct segread s;

	switch (_i) {
	case 0:
		h->class_count = SCRATCH_SEG_MAX_CLASSES + 1;
		break;
	case 1:
		h->class_first = 7;
		break;
	case 2:
		h->class_first = SCRATCH_SEG_MAX_CLASSES - h->class_count + 1;
		break;
	case 3:
		h->slot_class_off = h->thread_stride; /* the arrays past the slot */
		break;
	case 4:
		h->slot_class_off = 8; /* over the slot's own fields */
		break;
	case 5:
		h->slot_class_off += 4; /* misaligned */
		break;
	case 6:
		h->classes_size = 8; /* too small for its arrays */
		break;
	case 7:
		h->classes_off = h->proc_off; /* over the process counters */
		break;
	case 8:
		h->classes_off = h->threads_off; /* over the thread table */
		break;
	default:
		h->classes_off = UINT64_MAX - 8;
		break;
	}
	ck_assert_int_eq(open_seg(&s), -EBADMSG);
}
END_TEST

/* Each corruption is refused with -EBADMSG. */
static void corrupt(int which)
{
	struct scratch_seg_header *h = hdr();

	switch (which) {
	case 0:
		h->magic ^= 1;
		break;
	case 1:
		h->version = 2;
		break;
	case 2:
		h->file_size += 4096;
		break;
	case 3:
		h->thread_slots = 60000;
		break;
	case 4:
		h->owners_off = h->threads_off;
		break;
	case 5:
		h->ring_slots = 12;
		break;
	case 6:
		h->record_frames = 17;
		break;
	case 7:
		h->thread_stride = 8;
		break;
	case 8:
		h->proc_off = UINT64_MAX - 8;
		break;
	case 9:
		h->pid = -1;
		break;
	case 10:
		h->pools_off = SCRATCH_SEG_OFF_MAX + 1;
		break;
	case 11:
		h->pools_off = UINT32_MAX;
		break;
	default:
		h->header_size = 12;
		break;
	}
}

START_TEST(test_corrupt)
{
	struct segread s;

	corrupt(_i);
	ck_assert_int_eq(open_seg(&s), -EBADMSG);
}
END_TEST

START_TEST(test_short_source)
{
	struct segread_src src = {.fd = -1, .mem = seg, .mem_size = 100};
	struct segread s;
	char err[160];

	/* the source is shorter than the size claimed for it */
	ck_assert_int_eq(segread_open(&src, seg_size, &s, err, sizeof(err)), -EIO);
	ck_assert_int_eq(segread_open(&src, 100, &s, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
}
END_TEST

/* ---- block table ---- */

#define REGION  UINT64_C(0x7f0000000000)
#define NBLOCKS 3000 /* three chunks of the reader's 1024 */

/* Grow the segment by a table of n block entries after the ring. */
static void add_blocks(uint32_t n)
{
	struct scratch_seg_header *h = hdr();
	uint64_t off = (h->ring_off + (uint64_t)h->ring_slots * h->record_stride + 63) & ~63ull;
	size_t size = (off + (size_t)n * sizeof(struct scratch_seg_block) + 4095) & ~(size_t)4095;

	if (size < seg_size)
		size = seg_size;

	seg = realloc(seg, size);
	ck_assert_ptr_nonnull(seg);
	memset(seg + seg_size, 0, size - seg_size);
	seg_size = size;
	h = hdr();
	h->file_size = size;
	h->blocks_off = off;
	h->block_slots = n;
	h->block_stride = sizeof(struct scratch_seg_block);
	h->region_base = REGION;
	h->region_size = UINT64_C(4) << 30;
}

static struct scratch_seg_block *blk(uint32_t id)
{
	return (struct scratch_seg_block *)(seg + hdr()->blocks_off +
	                                    (size_t)(id - 1) * hdr()->block_stride);
}

/* Entry id as a writer leaves it: a block of 1 MiB at id MiB. */
static void put_blk(uint32_t id, uint32_t state, int32_t owner)
{
	struct scratch_seg_block *b = blk(id);

	memset(b, 0, sizeof(*b));
	b->seq = 2;
	b->start = REGION + ((uint64_t)id << 20);
	b->capacity = 1 << 20;
	b->cls = 80;
	b->state = state;
	b->owner = owner;
	b->carver = owner;
	b->growth = id;
}

START_TEST(test_blocks)
{
	struct segread_block b[8];
	uint32_t n = 0, skipped = 9;
	uint64_t base, size;
	struct segread s;

	add_blocks(NBLOCKS);
	put_blk(1, SCRATCH_SEG_BLK_OWNED, 11);
	put_blk(2, SCRATCH_SEG_BLK_REMOTE, 11);
	blk(2)->freers[0] = 12;
	blk(2)->nfreers = 1;
	put_blk(1500, SCRATCH_SEG_BLK_DEPOT, 13); /* the second chunk */
	blk(1500)->handovers = 2;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(segread_region(&s, &base, &size), 0);
	ck_assert_uint_eq(base, REGION);
	ck_assert_uint_eq(size, UINT64_C(4) << 30);
	ck_assert_int_eq(segread_blocks(&s, b, 8, &n, &skipped), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(skipped, 0);
	ck_assert_uint_eq(b[0].id, 1);
	ck_assert_uint_eq(b[0].state, SCRATCH_SEG_BLK_OWNED);
	ck_assert_uint_eq(b[0].start, REGION + (1 << 20));
	ck_assert_int_eq(b[1].freers[0], 12);
	ck_assert_uint_eq(b[1].nfreers, 1);
	ck_assert_int_eq(b[1].freers[1], 0);
	ck_assert_uint_eq(b[2].id, 1500);
	ck_assert_uint_eq(b[2].handovers, 2);
	ck_assert_uint_eq(b[2].growth, 1500);
	ck_assert_int_eq(b[2].carver, 13);
	/* max bounds what is stored */
	ck_assert_int_eq(segread_blocks(&s, b, 2, &n, NULL), 0);
	ck_assert_uint_eq(n, 2);
}
END_TEST

/* Entries no writer leaves are skipped and counted, the rest delivered;
 * the read stops at a chunk with nothing written. */
START_TEST(test_blocks_hostile)
{
	struct segread_block b[16];
	uint32_t n = 0, skipped = 0;
	struct segread s;

	add_blocks(NBLOCKS);
	for (uint32_t id = 1; id <= 8; id++)
		put_blk(id, SCRATCH_SEG_BLK_OWNED, 5);
	blk(1)->start = REGION - 4096; /* below the region */
	blk(2)->capacity = 0;          /* empty */
	blk(3)->state = SCRATCH_SEG_BLK_MAX + 1;
	blk(4)->cls = 200;                 /* no such class */
	blk(5)->seq = 3;                   /* a writer stays inside */
	blk(6)->start = UINT64_MAX - 4095; /* wraps */
	blk(7)->owner = -3;
	put_blk(2500, SCRATCH_SEG_BLK_OWNED, 5); /* after an empty chunk */
	ck_assert_int_eq(open_seg(&s), 0);
	s.retries = 1;
	ck_assert_int_eq(segread_blocks(&s, b, 16, &n, &skipped), 0);
	ck_assert_uint_eq(skipped, 7);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(b[0].id, 8);
}
END_TEST

START_TEST(test_blocks_none)
{
	struct segread_block b[1];
	uint64_t base, size;
	uint32_t n;
	struct segread s;

	/* an older writer: no table */
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(segread_region(&s, &base, &size), -ENODATA);
	ck_assert_int_eq(segread_blocks(&s, b, 1, &n, NULL), -ENODATA);
	/* a table, but the region not reserved yet */
	add_blocks(16);
	hdr()->region_base = 0;
	ck_assert_int_eq(open_seg(&s), 0);
	ck_assert_int_eq(segread_blocks(&s, b, 1, &n, NULL), -ENODATA);
	/* a region that wraps */
	hdr()->region_base = UINT64_MAX - 4095;
	ck_assert_int_eq(segread_region(&s, &base, &size), -EBADMSG);
}
END_TEST

START_TEST(test_blocks_corrupt)
{
	struct scratch_seg_header *h;
	struct segread s;

	add_blocks(16);
	h = hdr();
	switch (_i) {
	case 0:
		h->block_slots = SCRATCH_SEG_MAX_BLOCKS + 1;
		break;
	case 1:
		h->blocks_off = h->ring_off; /* over the ring */
		break;
	case 2:
		h->block_stride = 64;
		break;
	case 3:
		h->block_slots = 100000; /* beyond the file */
		break;
	default:
		h->blocks_off = UINT64_MAX - 8;
		break;
	}
	ck_assert_int_eq(open_seg(&s), -EBADMSG);
}
END_TEST

Suite *segread_suite(void)
{
	Suite *s = suite_create("segread");
	TCase *core = tcase_create("core"), *limits = tcase_create("limits"),
	      *misuse = tcase_create("misuse");

	tcase_add_checked_fixture(core, build, teardown);
	tcase_add_test(core, test_valid);
	tcase_add_test(core, test_totals);
	tcase_add_test(core, test_seqlock);
	tcase_add_test(core, test_no_ring);
	tcase_add_test(core, test_pools_off);
	tcase_add_test(core, test_classes);
	tcase_add_test(core, test_classes_hostile);
	tcase_add_test(core, test_classes_old_writer);
	tcase_add_test(core, test_blocks);
	tcase_add_test(core, test_blocks_none);
	tcase_add_checked_fixture(limits, build, teardown);
	tcase_add_test(limits, test_wrap);
	tcase_add_test(limits, test_torn_and_unwritten);
	tcase_add_test(limits, test_head_backwards);
	tcase_add_test(limits, test_blocks_hostile);
	tcase_add_checked_fixture(misuse, build, teardown);
	tcase_add_loop_test(misuse, test_corrupt, 0, 13);
	tcase_add_test(misuse, test_short_source);
	tcase_add_loop_test(misuse, test_classes_corrupt, 0, 10);
	tcase_add_loop_test(misuse, test_blocks_corrupt, 0, 5);
	suite_add_tcase(s, core);
	suite_add_tcase(s, limits);
	suite_add_tcase(s, misuse);
	return s;
}
