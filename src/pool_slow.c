/*
 * pool_slow.c - acquire's slow path.
 *
 * Reuse is hot-first. A request takes the head of its own class's bin (the
 * fast path, pool.c): a bin is kept in block order (bin_link), so the n-th
 * of the blocks of one class a thread holds at once is the same block each
 * time, whatever order they came back in (a thread allocating for its
 * workers gives each the block it wrote last). Failing that, here: an idle
 * block of its thread's cache among the larger classes it may take (at
 * most max_fit times the request, 64 by default): of those whose pages
 * already cover the request (a block's extent, the largest request a slow
 * path lent it since its pages were last returned), the closest fit, else
 * the one with the most pages; equal ones, the smaller class
 * (fits_better). Then the depot's own class or its larger ones, the one
 * put last; then a block lent from another thread (pool_lend.c); only then
 * a new block (pool_region.c), sized by the growth rule and filled with
 * moved pages (pool_grow.c). So the memory a thread touched a moment ago
 * serves its next request of any size, and the blocks with many pages stay
 * for the requests that need them.
 *
 * A thread without a cache (exited, or beyond max_threads) takes the
 * orphan path: the depot or a new block, counted in the process's figures.
 *
 * Owns no state: it works on the calling thread's cache, busy behind the
 * gate (scratch__tc_enter), and on what the files below it own.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>

#include "pool.h"

/* A request of class bin was served by a block of class got (a lease
 * counted under which[] of bin): the per-class side of the counters, in
 * the caller's sequence bracket (k is a thread's, or g.pcls->exited under
 * proc_begin). */
static void count_class_lease(struct scratch__class_counters *k, uint64_t *which, unsigned bin,
                              unsigned got, bool larger)
{
	SCRATCH__ADD(&which[CLS(bin)], 1);
	if (larger)
		SCRATCH__ADD(&k->larger_hits[CLS(bin)], 1);
	if (got != bin) {
		SCRATCH__SUB(&k->lent_adj[CLS(bin)], 1);
		SCRATCH__ADD(&k->lent_adj[CLS(got)], 1);
	}
}

/* Lease a block for a request of size (class bin) to the orphan path (a
 * thread without a cache): the depot's best fit, else a new block. */
static uint32_t orphan_acquire(uint64_t size, unsigned bin, bool *fresh)
{
	uint64_t cap;
	unsigned got;
	uint32_t id;
	bool hit;

	pthread_mutex_lock(&g.lock);
	id = scratch__depot_take_fit(size, bin, scratch__here_node(), &got);
	hit = id != 0;
	if (id == 0)
		id = scratch__carve(bin);
	cap = g.cls_size[got];
	if (id != 0) {
		struct scratch__counters *e = &g.proc->exited;

		g.blk[id].owner = 0;
		proc_begin();
		SCRATCH__ADD(&e->allocs, 1);
		SCRATCH__ADD(hit ? &e->depot_hits : &e->misses, 1);
		if (got != bin)
			SCRATCH__ADD(&e->larger_hits, 1);
		count_class_lease(&g.pcls->exited,
		                  hit ? g.pcls->exited.depot_hits : g.pcls->exited.misses, bin, got,
		                  got != bin);
		SCRATCH__ADD(&g.proc->orphan_leased, cap);
		SCRATCH__ADD(&g.proc->orphan_retained, cap);
		proc_end();
	}
	pthread_mutex_unlock(&g.lock);
	if (id != 0 && !hit) {
		pid_t tid = scratch__os_gettid();

		*fresh = true;
		scratch__segment_block_carved(
		        id, tid, scratch__trace_growth(tid, cap, bin, scratch__current_owner));
	}
	return id;
}

/*
 * Across classes: of the heads of tc's bins above bin that a request of
 * size may take (fit_top), the best fit (fits_better). A bin's head is the
 * block its own class would take next, so this reads one head per class:
 * at most 4 log2(max_fit) + 4 of them (28 at the default), on the slow path
 * only.
 * 0 when none.
 */
static uint32_t cache_take_larger(struct tcache *tc, uint64_t size, unsigned bin)
{
	unsigned top = fit_top(size), best = 0;

	for (unsigned b = bin + 1; b <= top; b++) {
		uint32_t id = tc->bins[b].head;

		if (id != 0 &&
		    (best == 0 || fits_better(&g.blk[id], &g.blk[tc->bins[best].head], size)))
			best = b;
	}
	return best == 0 ? 0 : bin_pop(tc, best);
}

/* A hit on the slow path, in tc's cache or the depot (hit: c->hits or
 * c->depot_hits, and cls_hit the per-class array of the same name): block
 * id of class got, for a request of class bin. Returns id. */
static uint32_t count_hit(struct tcache *tc, uint32_t id, unsigned got, unsigned bin, uint64_t *hit,
                          uint64_t *cls_hit)
{
	struct scratch__counters *c = tc->c;

	scratch__seq_begin(&c->seq);
	count_lease_in(c, g.cls_size[got], hit);
	if (got != bin)
		SCRATCH__ADD(&c->larger_hits, 1);
	count_class_lease(scratch__cls(c), cls_hit, bin, got, got != bin);
	scratch__seq_end(&c->seq);
	check_thread(c);
	return id;
}

/* A hit in tc's own cache: block id of class got for a request of class
 * bin. */
static uint32_t count_cache_hit(struct tcache *tc, uint32_t id, unsigned got, unsigned bin)
{
	return count_hit(tc, id, got, bin, &tc->c->hits, scratch__cls(tc->c)->hits);
}

/* The depot or a new block for tc's request of size (class bin): its
 * counters, the growth rule and the trace. Takes g.lock. */
static uint32_t depot_or_carve(struct tcache *tc, uint64_t size, unsigned bin, bool *ret_fresh)
{
	unsigned got, want;
	uint64_t moved = 0;
	uint32_t id;

	pthread_mutex_lock(&g.lock);
	scratch__reap_if_dirty();
	id = scratch__depot_take_fit(size, bin, scratch__here_node(), &got);
	if (id == 0 && scratch__lend_to_depot(tc, size, bin))
		id = scratch__depot_take_fit(size, bin, scratch__here_node(), &got);
	if (id != 0) {
		pthread_mutex_unlock(&g.lock);
		count_retained(tc->c, (int64_t)g.cls_size[got]);
		return count_hit(tc, id, got, bin, &tc->c->depot_hits,
		                 scratch__cls(tc->c)->depot_hits);
	}
	want = scratch__growth_class(tc, size, bin);
	id = scratch__carve(want);
	if (id == 0 && want != bin)
		id = scratch__carve(want = bin);
	if (id == 0 && tc->cached_bytes != 0) {
		/* used up: our own idle blocks can serve too, through the depot */
		scratch__tc_flush_locked(tc);
		id = scratch__carve(want = bin);
	}
	if (id != 0) {
		uint64_t out = scratch__carve_move(tc, bin, size, id, &moved);

		/* a block that took a small block's pages (all moves of
		 * less than 2 MiB are) adds only its tail: no idle pages to
		 * give back for it */
		if (out < g.cls_size[want] && (moved == 0 || moved >= HUGE_SIZE))
			scratch__carve_shed(tc, bin, g.cls_size[want], g.cls_size[want] - out);
	}
	pthread_mutex_unlock(&g.lock);
	if (id == 0)
		return 0;
	tc->prev_miss = tc->last_miss;
	tc->last_miss = want;
	tc->miss_seq[bin] = ++tc->nmiss;
	*ret_fresh = true;
	count_retained(tc->c, (int64_t)g.cls_size[want]);
	scratch__seq_begin(&tc->c->seq);
	count_lease_in(tc->c, g.cls_size[want], &tc->c->misses);
	count_class_lease(scratch__cls(tc->c), scratch__cls(tc->c)->misses, bin, want, false);
	SCRATCH__ADD(&tc->c->growth_bytes, g.cls_size[want]);
	SCRATCH__ADD(&tc->c->moved_bytes, moved);
	scratch__seq_end(&tc->c->seq);
	check_thread(tc->c);
	scratch__segment_block_carved(
	        id, tc->tid,
	        scratch__trace_growth(tc->tid, g.cls_size[want], want, scratch__current_owner));
	return id;
}

/* per_node: tc's thread has moved to another node since its last slow
 * path? Then its idle blocks, whose pages sit where it was, go to the
 * depot (each to the list of its pages' node, for the threads there) and
 * it refills where it runs now. tc is busy (scratch__tc_enter). */
static void tc_follow_node(struct tcache *tc)
{
	uint32_t now = scratch__here_node() + 1;

	if (tc->node1 == now)
		return;
	if (tc->node1 != 0 && tc->cached_bytes != 0) {
		pthread_mutex_lock(&g.lock);
		scratch__tc_flush_locked(tc);
		pthread_mutex_unlock(&g.lock);
	}
	__atomic_store_n(&tc->node1, now, __ATOMIC_RELAXED); /* a pass reads it (tc_moved) */
}

/* tc's block for a request of size (class bin), in order: its own bin, its
 * larger bins (hot-first), the depot, a new block. tc is busy
 * (scratch__tc_enter). */
static uint32_t cache_acquire(struct tcache *tc, uint64_t size, unsigned bin, bool *ret_fresh)
{
	uint32_t epoch = __atomic_load_n(&g.trim_epoch, __ATOMIC_RELAXED) & ~GATE_BIT;
	uint32_t id;

	if (tc->trim_seen != epoch) {
		/* Someone called scratch_trim(): give our idle memory back. */
		tc->trim_seen = epoch;
		scratch__tc_drain_remote(tc);
		pthread_mutex_lock(&g.lock);
		scratch__tc_flush_locked(tc);
		scratch__depot_trim();
		pthread_mutex_unlock(&g.lock);
	}
	scratch__tc_drain_remote(tc);
	scratch__tail_check(tc);
	if (g.nodes > 1)
		tc_follow_node(tc);
	if (tc->bins[bin].head != 0)
		return count_cache_hit(tc, bin_pop(tc, bin), bin, bin);
	id = cache_take_larger(tc, size, bin);
	if (id != 0)
		return count_cache_hit(tc, id, g.blk[id].cls, bin);
	return depot_or_carve(tc, size, bin, ret_fresh);
}

SCRATCH_COLD void *scratch__acquire_slow(uint64_t size, bool *ret_fresh, uint64_t *ret_ext)
{
	struct tcache *tc;
	unsigned bin;
	uint32_t id = 0;
	bool fresh = false;
	struct blk *d;
	int saved = errno;

	tc = tc_get();
	if (tc == TC_NONE || size < g.min || size - g.min > g.span) {
		errno = ERANGE;
		return NULL;
	}
	bin = size_bin(size);
	if (!is_tc(tc)) {
		id = orphan_acquire(size, bin, &fresh);
	} else {
		scratch__tc_enter(tc);
		id = cache_acquire(tc, size, bin, &fresh);
		if (id != 0) {
			g.blk[id].owner = (uint16_t)tc->tag;
			scratch__tail_mark(tc, id, size);
		}
		scratch__tc_leave(tc);
		scratch__decay_slow_event(tc);
	}
	if (id == 0) {
		errno = ENOMEM;
		return NULL;
	}
	d = &g.blk[id];
	/* never lent twice: it came from a cache, the depot or an empty list */
	SCRATCH_ASSERT(d->state != BLK_LEASED && d->state != BLK_REMOTE);
	d->state = BLK_LEASED;
	scratch__segment_block_lease(id, blk_addr(d), g.cls_size[d->cls], d->cls,
	                             is_tc(tc) ? tc->tid : 0,
	                             is_tc(tc) ? tc->tid : scratch__os_gettid());
	if (ret_ext != NULL)
		*ret_ext = d->ext;
	if (d->ext < size) {
		if (is_tc(tc) && !fresh)
			scratch__lease_shed(tc, d->cls, size, d->ext);
		d->ext = size; /* what this lease may write: fits_better() */
	}
	if (ret_fresh != NULL)
		*ret_fresh = fresh && d->fresh;
	d->fresh = 0;
	errno = saved;
	return (void *)blk_addr(d);
}
