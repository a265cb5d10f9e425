/*
 * pool_tail.c - the pages behind a small lease of a large block.
 *
 * Blocks do not split. A request served by an idle block whose earlier
 * leases wrote many more pages than it asks for (a 2 MiB arena chunk that
 * takes the block of a 16 MiB buffer freed earlier, the closest fit there
 * was) would keep those pages resident behind it for as long as it is
 * leased; a page heap (tcmalloc's spans, jemalloc's extents) splits the
 * span and keeps the rest for other requests. ONNX Runtime leases its
 * weights and arena chunks for good from such blocks after its load
 * phase: some 30 MiB of its peak RSS, most of its excess over tcmalloc's
 * (docs/performance.md).
 *
 * Giving those pages back at the lease costs a loop whose sizes vary
 * (table 1v of make bench: temporaries of 8-64 MiB) a refault of them at
 * the block's next large lease, every token: 5 000-9 000 pages a token.
 * So such a lease is *limited* instead (scratch__tail_mark): its usable
 * size (blk_usable: scratch_usable_size, malloc_usable_size, realloc) is
 * the request rounded up to pages, kept in the block's next field, which
 * a leased block does not use, and OWNER_TAIL in its owner. Nothing may be
 * written past the usable size, so once the lease has outlived TAIL_AFTER
 * more slow-path leases of its thread (a temporary is gone by then), the
 * pages past it go back (scratch__tail_check, at the thread's slow paths),
 * from a huge page's boundary with thp.
 *
 * Each thread keeps its limited leases in its cache (struct tcache's
 * tails), and only its own slow paths read them. OWNER_TAIL makes its
 * holder's release miss the fast path (the owner compare fails), and the
 * slow release (scratch__tail_release) takes it off the list; a release by
 * another thread clears the bit, and the owner takes the block off its
 * list when it drains its remote frees (scratch__tail_forget). A decay
 * pass may take those remote frees instead (pool_decay.c), and cannot
 * touch the list: a slot may outlive its lease while the block is lent
 * again. So the check gives pages back only for a slot whose block is
 * still leased by its thread, limited at the slot's limit (tail_current),
 * and drops any other (a probe's slot that outlived its lease measures
 * another lease: a verdict at worst, no page).
 * Threads whose tag needs the bit (slot 32 767 and beyond) and orphans
 * lease unlimited. Not with locked memory, which keeps its pages.
 *
 * The same list holds probes (scratch__tail_probe): leases whose new pages
 * pool_dense.c measures when they end (usable: the whole block). They
 * take a slot only in the list's first half, so that limited leases
 * always find four; a new probe that finds that half full of probes takes
 * the oldest one's slot (probe_evict). A program's first large buffers
 * are often held for good and written sparsely (the Python interpreter's
 * own filled that half and kept every later buffer of its main thread
 * from being measured: PyTorch's weights, written whole, were never
 * populated and never got the huge frames of thp_dense).
 */
#include "config.h"

#include <pthread.h>

#include "pool.h"

/* A lease is limited when its request is at most a quarter of the pages
 * its block's leases wrote (ext) and TAIL_MIN or more would stay behind. */
#define TAIL_MIN (UINT64_C(4) << 20)
/* Slow-path leases of its thread a limited lease must outlive: beyond a
 * temporary's life (table 1v's live a few), and beyond that of the blocks
 * of a live set replaced at random (table 1c's 32 live some 32 slow-path
 * leases on average; with 32 here a third of them gave their pages back
 * and faulted them again at their block's next large lease, 96 faults a
 * step against 38). An engine's weights and arena chunks pass it within
 * the first tens of steps. */
#define TAIL_AFTER 256

/* The usable size a lease of size in block d gets when it is limited, 0
 * when it is not to be. */
static uint64_t tail_limit(const struct blk *d, uint64_t size)
{
	const uint64_t cap = g.cls_size[d->cls];
	const uint64_t unit = g.conf.thp && cap >= HUGE_SIZE ? HUGE_SIZE : PAGE_SIZE;
	uint64_t from = (size + unit - 1) & ~(unit - 1);

	if (d->ext < from + TAIL_MIN || size > d->ext / 4 || from >= cap ||
	    __atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return 0;
	return from;
}

void scratch__tail_mark(struct tcache *tc, uint32_t id, uint64_t size)
{
	struct blk *d = &g.blk[id];
	uint64_t from;

	if (tc->ntails == TAIL_SLOTS || tc->tag >= OWNER_TAIL || (from = tail_limit(d, size)) == 0)
		return;
	d->next = (uint32_t)(from >> PAGE_SHIFT);
	d->owner = (uint16_t)(tc->tag | OWNER_TAIL);
	tc->tails[tc->ntails].id = id;
	tc->tails[tc->ntails].probe = 0;
	tc->tails[tc->ntails].from = from;
	tc->tails[tc->ntails].at = tc->slow_leases;
	tc->tails[tc->ntails].spec = 0;
	tc->ntails++;
}

/* Probe slot i of tc is seen written whole (written 1), or ends without
 * (0), or with no verdict (-1): the bytes populated for it leave tc's
 * spec_live, and count in spec_unwritten unless it was written. */
static void probe_spec_done(struct tcache *tc, unsigned i, int written)
{
	uint64_t spec = tc->tails[i].spec;

	if (spec == 0)
		return;
	tc->spec_live -= spec;
	if (written != 1)
		tc->spec_unwritten += spec;
	tc->tails[i].spec = 0;
}

/* Peek at live probe slot i of tc (scratch__dense_peek); a speculative
 * one seen written leaves tc's spec_live. Returns whether it was. */
static bool probe_peek(struct tcache *tc, unsigned i)
{
	bool written =
	        scratch__dense_peek(tc, tc->tails[i].id, tc->tails[i].probe == 2, tc->tails[i].from,
	                            tc->tails[i].to, tc->tails[i].spec != 0);

	if (written)
		probe_spec_done(tc, i, 1);
	return written;
}

/* Make room for a probe in tc's full first half: its oldest probe leaves
 * the list, with the verdict a live one can give (written whole: dense),
 * none else; its owner bit stays, and its release takes it off as it does
 * a probe measured at TAIL_AFTER. False when no probe is there to leave. */
static bool probe_evict(struct tcache *tc)
{
	unsigned old = TAIL_SLOTS;

	for (unsigned i = 0; i < tc->ntails; i++)
		if (tc->tails[i].probe &&
		    (old == TAIL_SLOTS || tc->tails[i].at < tc->tails[old].at))
			old = i;
	if (old == TAIL_SLOTS)
		return false;
	if (!probe_peek(tc, old))
		probe_spec_done(tc, old, 0); /* leaves unwritten, as far as we know */
	tc->tails[old] = tc->tails[--tc->ntails];
	return true;
}

bool scratch__tail_probe(struct tcache *tc, uint32_t id, bool zeroed, uint64_t from, uint64_t to,
                         uint64_t spec)
{
	struct blk *d = &g.blk[id];

	if (tc->tag >= OWNER_TAIL || __atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return false;
	/* only into the list's first half (the other stays for limited
	 * leases), in the oldest probe's place when that half is full */
	if (tc->ntails > TAIL_SLOTS / 2 || (tc->ntails == TAIL_SLOTS / 2 && !probe_evict(tc)))
		return false;
	/* usable: the whole block, as unwatched */
	d->next = (uint32_t)(g.cls_size[d->cls] >> PAGE_SHIFT);
	d->owner = (uint16_t)(tc->tag | OWNER_TAIL);
	tc->tails[tc->ntails].id = id;
	tc->tails[tc->ntails].probe = (uint8_t)(1 + zeroed);
	tc->tails[tc->ntails].from = from;
	tc->tails[tc->ntails].to = to;
	tc->tails[tc->ntails].at = tc->slow_leases;
	tc->tails[tc->ntails].spec = spec;
	tc->spec_live += spec;
	tc->ntails++;
	return true;
}

/* Measure probe slot i of tc. */
static void probe_measure(struct tcache *tc, unsigned i)
{
	probe_spec_done(tc, i,
	                scratch__dense_measure(tc, tc->tails[i].id, tc->tails[i].probe == 2,
	                                       tc->tails[i].from, tc->tails[i].to));
}

/* Take block id off tc's list, if it is there; a probe is measured: its
 * lease has ended, and its pages are as the lease left them. */
static void tail_drop(struct tcache *tc, uint32_t id)
{
	for (unsigned i = 0; i < tc->ntails; i++)
		if (tc->tails[i].id == id) {
			if (tc->tails[i].probe)
				probe_measure(tc, i);
			tc->tails[i] = tc->tails[--tc->ntails];
			return;
		}
}

void scratch__tail_forget(struct tcache *tc, uint32_t id)
{
	if (tc->ntails != 0)
		tail_drop(tc, id);
}

void scratch__tail_release(struct tcache *tc, uint32_t id)
{
	struct blk *d = &g.blk[id];
	uint16_t owner = (uint16_t)(d->owner & ~OWNER_TAIL);

	if (is_tc(tc) && owner == tc->tag)
		tail_drop(tc, id);
	d->owner = owner;
}

/*
 * Is block d still leased by tc's thread, limited at from? Its release
 * drops its slot when the owner frees it, and the owner's drain when
 * another thread does; but a decay pass that takes the owner's remote
 * list (behind the gate, pool_gate.c) cannot touch the owner's list,
 * which its releases change outside the gate's bracket. So a slot may
 * outlive its lease, and the block be lent again, even to this thread:
 * only a lease of tc's, limited at the same from, may lose the pages past
 * it. Run by the owner inside the bracket (a slow-path lease), when no
 * pass is in its cache: a block another thread is freeing at this moment
 * stays on the owner's remote list until then.
 */
static bool tail_current(const struct tcache *tc, const struct blk *d, uint64_t from)
{
	return d->state == BLK_LEASED && d->owner == (uint16_t)(tc->tag | OWNER_TAIL) &&
	       d->next == (uint32_t)(from >> PAGE_SHIFT);
}

/* Give back the pages of leased block d past from, its usable size. */
static void tail_trim(struct blk *d, uint64_t from)
{
	const uint64_t cap = g.cls_size[d->cls];

	if (!scratch__os_decommit((void *)(blk_addr(d) + from), cap - from))
		return; /* locked after all: the pages stay */
	if (d->ext > from)
		d->ext = from;
	pthread_mutex_lock(&g.lock);
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, cap - from);
	proc_end();
	pthread_mutex_unlock(&g.lock);
}

void scratch__tail_check(struct tcache *tc)
{
	unsigned i = 0;

	tc->slow_leases++;
	while (i < tc->ntails) {
		struct blk *d = &g.blk[tc->tails[i].id];

		uint64_t age = tc->slow_leases - tc->tails[i].at;

		if (age < TAIL_AFTER) {
			/* a live probe, at its 1st, 2nd, 4th, ... lease after */
			if (tc->tails[i].probe && (age & (age - 1)) == 0)
				(void)probe_peek(tc, i);
			i++;
			continue;
		}
		/* a probe that lasted this long is measured as it is; a limited
		 * lease gives its pages past the limit back if it is still the
		 * lease the slot was made for (tail_current) */
		if (tc->tails[i].probe)
			probe_measure(tc, i);
		else if (tail_current(tc, d, tc->tails[i].from))
			tail_trim(d, tc->tails[i].from);
		tc->tails[i] = tc->tails[--tc->ntails];
	}
}
