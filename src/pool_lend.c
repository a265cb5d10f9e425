/*
 * pool_lend.c - lending between threads.
 *
 * Lending (the lend key): a request of 2 MiB or more that neither its thread's
 * cache nor the depot can serve would carve a block and fault its pages
 * in. An idle block at the head of a bin of another live thread's cache on
 * the same node, within the fit bound, whose resident pages cover at least
 * half the request, serves it instead: two workers whose sizes vary trade
 * blocks when one draws a size only the other holds, rather than each
 * faulting a block of every size in. The block goes through the depot,
 * where the caller takes it (a depot hit); its owner's retained drops as
 * for a decay pass (decayed_bytes). The other cache is entered as a pass
 * enters it (through the gate, pool_gate.c: only while its thread is
 * outside its bins), so the fast paths pay nothing; a miss that finds a
 * candidate pays one membarrier, far less than faulting the pages (below
 * 2 MiB, about the same). Without membarrier (an old kernel, a seccomp
 * filter, a ThreadSanitizer build) nothing is lent.
 *
 * Owns no state: it works on the depot (pool_region.c) and on other
 * threads' bins.
 */
#include "config.h"

#include <pthread.h>

#include "pool.h"

#define LEND_MIN HUGE_SIZE /* below, faulting costs about what the gate does */

/* Lend an idle block of another thread's cache to self's request of size
 * (class bin), through the depot. Returns whether a block went to the
 * depot. Under g.lock; self is busy. */
bool scratch__lend_to_depot(struct tcache *self, uint64_t size, unsigned bin)
{
	const unsigned top = fit_top(size);
	const uint32_t node1 = scratch__here_node() + 1;
	struct tcache *from = NULL;
	unsigned from_bin = 0;
	uint32_t best = 0, id;
	bool ok;

	if (!g.conf.lend || size < LEND_MIN || !scratch__gate_may_enter())
		return false;
	/* a racy look, only to choose: the choice is checked behind the gate */
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (tc == self || !tc_in_use(tc) ||
		    (g.nodes > 1 && __atomic_load_n(&tc->node1, __ATOMIC_RELAXED) != node1) ||
		    __atomic_load_n(&tc->cached_bytes, __ATOMIC_RELAXED) == 0)
			continue;
		for (unsigned b = bin; b <= top; b++) {
			id = __atomic_load_n(&tc->bins[b].head, __ATOMIC_RELAXED);
			if (id == 0 || id >= g.nblk)
				continue;
			if (__atomic_load_n(&g.blk[id].ext, __ATOMIC_RELAXED) * 2 < size)
				continue;
			if (best == 0 || fits_better(&g.blk[id], &g.blk[best], size)) {
				best = id;
				from = tc;
				from_bin = b;
			}
		}
	}
	if (from == NULL)
		return false;
	scratch__gate_raise();
	ok = scratch__os_membarrier() && scratch__tc_outside(from);
	if (ok) {
		id = from->bins[from_bin].head;
		ok = id != 0 && g.blk[id].ext * 2 >= size &&
		     g.proc->depot_bytes + g.cls_size[from_bin] <= g.conf.depot_bytes;
	}
	if (ok) {
		(void)bin_pop(from, from_bin);
		__atomic_fetch_add(&from->c->decayed_bytes, g.cls_size[from_bin], __ATOMIC_RELEASE);
		scratch__depot_put(id); /* room: no madvise, g.lock kept */
	}
	scratch__gate_lower();
	return ok;
}
