/*
 * pool_fork.c - fork: every mechanism's hook, in lock order.
 *
 * fork copies the page tables of every resident page, and a block idle in a
 * cache keeps its pages for the next lease, where glibc would have
 * unmapped them at free. So, for the fork, the idle blocks nobody else can touch meanwhile
 * (the forking thread's bins and the depot, both under g.lock; another
 * thread's bins change under its fast paths) are marked MADV_WIPEONFORK:
 * the child gets them zero-filled, with no page tables copied, and takes
 * them for fresh; the mark comes off on both sides after the fork. Blocks
 * under WIPE_MIN cost more in the two madvise calls than they save.
 *
 * Owns the blocks marked for the fork in progress. The other mechanisms'
 * state is theirs to reset: this file calls their hooks in lock order
 * (jemalloc's jemalloc_fork.c does the same).
 */
#include "config.h"

#include <pthread.h>

#include "pool.h"

#define WIPE_MIN (UINT64_C(1) << 20)
#define WIPE_MAX 64
static uint32_t wiped[WIPE_MAX];
static unsigned nwiped;

static void wipe_mark(uint32_t id)
{
	struct blk *d = &g.blk[id];
	uint64_t cap = g.cls_size[d->cls];

	if (nwiped < WIPE_MAX && !d->fresh && cap >= WIPE_MIN &&
	    scratch__os_wipe_on_fork((void *)blk_addr(d), cap, true))
		wiped[nwiped++] = id;
}

static bool wipe_gated; /* the gate is up for the fork (wipe_others) */

/* Does another live cache than self hold idle bytes? A racy look, only to
 * spare a fork the barrier. Under g.lock. */
static bool others_idle(const struct tcache *self)
{
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		const struct tcache *tc = &g.tcs[i];

		if (tc != self && tc_in_use(tc) &&
		    __atomic_load_n(&tc->cached_bytes, __ATOMIC_RELAXED) != 0)
			return true;
	}
	return false;
}

/*
 * The other threads' idle blocks, for the fork: their caches are entered as
 * a decay pass enters them (through the gate, pool_gate.c: only those whose
 * thread is outside its bins), and the gate stays up until the fork is done
 * (wipe_done's callers lower it), so that no thread takes a marked block
 * and writes it while the fork copies: a thread that tries waits on
 * g.lock, which prefork holds. In the child those caches are never
 * touched again (TC_FORKED); their blocks come zero-filled instead of with
 * copied page tables. Under g.lock.
 */
static void wipe_others(struct tcache *self)
{
	if (nwiped == WIPE_MAX || !others_idle(self) || !scratch__gate_may_enter())
		return;
	scratch__gate_raise();
	wipe_gated = true;
	if (!scratch__os_membarrier())
		return;
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (tc == self || !tc_in_use(tc) || !scratch__tc_outside(tc))
			continue;
		for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++)
			for (uint32_t id = tc->bins[bin].head; id != 0; id = g.blk[id].next)
				wipe_mark(id);
	}
}

/* Before fork, under g.lock. */
static void wipe_idle(struct tcache *self)
{
	nwiped = 0;
	wipe_gated = false;
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) != ST_READY || g.locked)
		return;
	for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++) {
		if (is_tc(self) && self->state == TC_LIVE)
			for (uint32_t id = self->bins[bin].head; id != 0; id = g.blk[id].next)
				wipe_mark(id);
		for (unsigned n = 0; n < g.nodes; n++)
			for (uint32_t id = g.depot_head[n][bin]; id != 0; id = g.blk[id].next)
				wipe_mark(id);
	}
	wipe_others(self);
}

/* After fork, on both sides: the marks come off; in the child (child)
 * those blocks read as zero and hold no pages. */
static void wipe_done(bool child)
{
	for (unsigned i = 0; i < nwiped; i++) {
		struct blk *d = &g.blk[wiped[i]];

		scratch__os_wipe_on_fork((void *)blk_addr(d), g.cls_size[d->cls], false);
		if (child)
			scratch__block_emptied(d, false);
	}
	nwiped = 0;
	if (wipe_gated)
		scratch__gate_lower();
	wipe_gated = false;
}

/*
 * Lock order: the init lock, the decay lock (no decay pass holds blocks off
 * every list while the fork copies), then g.lock; the fast paths take
 * none. Then the remote frees in flight finish (pool_tcache.c), the
 * segment and the trace stop their writers, and the idle blocks are
 * marked.
 */
static void prefork(void)
{
	struct tcache *self = scratch__tls_tc;

	scratch__init_prefork();
	scratch__decay_prefork();
	pthread_mutex_lock(&g.lock);
	scratch__tcache_prefork(self);
	scratch__segment_prefork();
	scratch__trace_prefork();
	wipe_idle(self);
}

static void postfork_parent(void)
{
	wipe_done(false);
	scratch__trace_postfork(false);
	scratch__tcache_postfork(false);
	pthread_mutex_unlock(&g.lock);
	scratch__decay_postfork(false);
	scratch__init_postfork();
}

/* In the child only the forking thread lives on; it took every lock in
 * prefork(), so it may release them here, and no other thread exists to
 * hold them. The decay thread stayed with the parent: the child's first
 * slow-path acquire starts its own, and registers its own membarrier (a
 * new mm). */
static void postfork_child(void)
{
	struct tcache *self = scratch__tls_tc;

	wipe_done(true);
	scratch__trace_postfork(true);
	scratch__tcache_postfork(true);
	scratch__gate_postfork_child();
	pthread_mutex_unlock(&g.lock);
	scratch__decay_postfork(true);
	scratch__init_postfork();
	/* pools off, but a segment saying why: the child needs its own */
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == ST_READY)
		scratch__tcache_postfork_slots(self);
	scratch__segment_atfork_child();
}

__attribute__((constructor)) static void pool_constructor(void)
{
	pthread_atfork(prefork, postfork_parent, postfork_child);
}
