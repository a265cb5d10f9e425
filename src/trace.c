/*
 * trace.c - growth records into the segment's trace ring.
 *
 * A growth (a pool miss: fresh pages) is the slow path, so a record may
 * cost an atomic claim and a stack walk. The ring is multi-writer: each
 * writer claims a sequence number with one fetch_add on ring_head and owns
 * that slot until the ring wraps past it; the seq / seq_end / check
 * protocol of segment.h lets a reader tell complete records from torn or
 * overwritten ones.
 *
 * The walk. Call sites come from libgcc's DWARF unwinder (_Unwind_Backtrace
 * over .eh_frame, found through glibc's lock-free _dl_find_object), linked
 * statically and hidden into this library (libgcc_eh.a), so the host can
 * neither interpose it nor share its state. It opens no file descriptor and
 * never calls malloc. libunwind, used before, keeps a pipe open for good to
 * check that addresses are readable, and a host that closes and reuses
 * those numbers has its own files read, written and closed by it. A
 * frame-pointer walk costs nothing but stops at the first frame of
 * Debian's libraries, built without frame pointers. Figures: docs/performance.md.
 */
#include "config.h"

#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <unwind.h>

#include "internal.h"
#include "segment.h"

/*
 * Set while this thread is inside a growth record. The unwinder may call
 * back into malloc (and so into the pools) from the walk; such a nested
 * growth records nothing instead of recursing. Initial-exec so reading it
 * never allocates.
 */
static __thread int in_trace __attribute__((tls_model("initial-exec")));

/*
 * The unwinder initialises its register table once (pthread_once) and, for
 * frames registered at run time, takes a mutex: a fork in another thread's
 * walk would leave either held in the child for good, and the child's first
 * growth would hang. So a
 * fork closes the gate and waits for the walks in flight (Dekker style, as
 * the pools' remote frees): a walk that finds the gate closed records no
 * frames. A child whose fork could not wait for a walk (the forking thread
 * interrupted its own, from a signal handler) never walks again.
 */
static uint32_t walkers, fork_closed;
static bool walk_off, fork_stuck;

struct walk {
	uint64_t *frames;
	uint32_t n, max;
	bool skipped; /* the first context is capture()'s own frame */
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);

	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!w->skipped) {
		w->skipped = true;
		return _URC_NO_REASON;
	}
	w->frames[w->n++] = (uint64_t)ip;
	return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

/*
 * Return addresses of the callers, innermost first, skipping this file's
 * own frame. Not inlined, so that the frame skipped is always this one.
 */
__attribute__((noinline)) static uint32_t capture(uint64_t *frames, uint32_t max)
{
	struct walk w = {.frames = frames, .max = max};

	if (max == 0 || __atomic_load_n(&walk_off, __ATOMIC_RELAXED))
		return 0;
	__atomic_add_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&fork_closed, __ATOMIC_SEQ_CST) == 0)
		_Unwind_Backtrace(walk_frame, &w);
	__atomic_sub_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
	return w.n;
}

void scratch__trace_prefork(void)
{
	unsigned spins = 0;

	__atomic_store_n(&fork_closed, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&walkers, __ATOMIC_SEQ_CST) != 0 && spins++ < 100000)
		sched_yield();
	fork_stuck = __atomic_load_n(&walkers, __ATOMIC_SEQ_CST) != 0;
}

void scratch__trace_postfork(bool child)
{
	if (child) {
		__atomic_store_n(&walkers, 0, __ATOMIC_RELAXED);
		if (fork_stuck)
			__atomic_store_n(&walk_off, true, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&fork_closed, 0, __ATOMIC_SEQ_CST);
}

uint64_t scratch__trace_growth(pid_t tid, uint64_t bytes, uint32_t cls, uint32_t owner)
{
	struct scratch_seg_header *h = scratch__segment_header();
	struct scratch_seg_record *r;
	uint64_t frames[SCRATCH_SEG_MAX_FRAMES];
	uint32_t nframes;
	uint64_t s;
	int cpu, node;

	if (h == NULL || h->ring_slots == 0 || in_trace)
		return 0;
	in_trace = 1;
	nframes = capture(frames, h->record_frames);
	scratch__os_getcpu(&cpu, &node);
	s = __atomic_add_fetch(&h->ring_head, 1, __ATOMIC_RELAXED);
	r = (struct scratch_seg_record *)((uint8_t *)h + h->ring_off +
	                                  ((s - 1) & (h->ring_slots - 1)) * h->record_stride);
	/* The record is made here and its check computed from our own values,
	 * never read back from the slot: a writer of a later lap may have
	 * rewritten the slot's seq meanwhile, and a check over its seq and our
	 * payload would pass for its record. */
	struct scratch_seg_record mine = {
	        .seq = s,
	        .time_ns = scratch__os_realtime_ns(),
	        .bytes = bytes,
	        .tid = (int32_t)tid,
	        .cls = cls,
	        .cpu = cpu,
	        .node = node,
	        .owner = owner,
	        .nframes = nframes,
	};
	mine.check = scratch_seg_record_check(&mine, frames, nframes);
	/* seq first, then (release) the payload: a reader that sees the new
	 * seq_end below also sees seq == s, or knows the record is torn. */
	__atomic_store_n(&r->seq, s, __ATOMIC_RELAXED);
	SCRATCH__FENCE_RELEASE();
	r->time_ns = mine.time_ns;
	r->bytes = mine.bytes;
	r->tid = mine.tid;
	r->cls = mine.cls;
	r->cpu = mine.cpu;
	r->node = mine.node;
	r->owner = mine.owner;
	r->nframes = mine.nframes;
	memcpy(r->frames, frames, nframes * sizeof(frames[0]));
	r->check = mine.check;
	__atomic_store_n(&r->seq_end, s, __ATOMIC_RELEASE);
	in_trace = 0;
	return s;
}
