/*
 * pool_gate.c - the gate: how a thread enters another thread's cache.
 *
 * A thread's bins are private to it and written with plain stores, yet
 * three mechanisms must sometimes take blocks out of another thread's
 * cache, whose thread may be parked for good: decay passes
 * (pool_decay.c), lending (pool_lend.c) and fork (pool_fork.c). They enter
 * through this gate, which costs the fast paths no fence.
 *
 * The exclusion is asymmetric: a thread marks itself inside its bins (its
 * counters' seq odd on the fast paths, which hold the whole pop or push in
 * that bracket; busy on the slow paths: scratch__tc_enter) and only then
 * reads the gate (trim_epoch's GATE_BIT on acquire, a cache_limit of 0 on
 * release, g.gate on the slow paths). The one entering raises the gate
 * under g.lock, issues membarrier(2), which makes every thread's earlier
 * stores visible, and enters only the caches whose thread it then sees
 * outside (scratch__tc_outside). Either the thread read the gate (it takes
 * its slow path, which waits on g.lock), or the one entering saw it inside
 * (and leaves that cache alone). Without membarrier (an old kernel, a
 * seccomp filter, a ThreadSanitizer build) nobody enters: passes only take
 * the depot's blocks, nothing is lent, and each thread's own slow path
 * takes care of its cache.
 *
 * Owns the gate's state in g (gate, GATE_BIT of trim_epoch, cache_limit)
 * and whether this process could register for membarrier.
 */
#include "config.h"

#include <pthread.h>

#include "pool.h"

static int barrier; /* membarrier registered: 0 unknown, 1 yes, -1 no */

/* Raise the gate, under g.lock; scratch__os_membarrier() next, then
 * enter only the caches scratch__tc_outside() finds so. */
void scratch__gate_raise(void)
{
	__atomic_store_n(&g.gate, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g.trim_epoch, g.trim_epoch | GATE_BIT, __ATOMIC_RELAXED);
	__atomic_store_n(&g.cache_limit, 0, __ATOMIC_RELAXED);
}

/* Lower it again, under g.lock. */
void scratch__gate_lower(void)
{
	__atomic_store_n(&g.cache_limit, (uint32_t)g.conf.cache_count, __ATOMIC_RELEASE);
	__atomic_store_n(&g.trim_epoch, g.trim_epoch & ~GATE_BIT, __ATOMIC_RELEASE);
	__atomic_store_n(&g.gate, 0, __ATOMIC_RELEASE);
}

/* Enter a slow path that touches tc's bins (its own thread, without
 * g.lock): raise busy, then read the gate; while it is up, wait for the
 * one who raised it (scratch__gate_wait). */
void scratch__tc_enter(struct tcache *tc)
{
	for (;;) {
		__atomic_store_n(&tc->busy, 1, __ATOMIC_RELAXED);
		__asm__ volatile("" : : : "memory");
		if (!__atomic_load_n(&g.gate, __ATOMIC_ACQUIRE))
			return;
		__atomic_store_n(&tc->busy, 0, __ATOMIC_RELEASE);
		scratch__gate_wait();
	}
}

/* Leave it: tc's thread is outside its bins again. */
void scratch__tc_leave(struct tcache *tc)
{
	__atomic_store_n(&tc->busy, 0, __ATOMIC_RELEASE);
}

/* Wait until whoever holds g.lock now is done: one with the gate up (a
 * decay pass, lending, a fork) holds it until the gate is down again, and
 * a fork until it is done. */
void scratch__gate_wait(void)
{
	pthread_mutex_lock(&g.lock);
	pthread_mutex_unlock(&g.lock);
}

/* May this process enter the caches of other threads at all: is
 * membarrier(2) registered (once; a fork's child registers anew)? */
bool scratch__gate_may_enter(void)
{
#if defined(SCRATCH__TSAN)
	return false; /* ThreadSanitizer cannot see membarrier's ordering */
#else
	if (barrier == 0)
		barrier = scratch__os_membarrier_register() ? 1 : -1;
	return barrier > 0;
#endif
}

/* Is tc's thread outside its bins? Read after the membarrier. */
bool scratch__tc_outside(struct tcache *tc)
{
	return (__atomic_load_n(&tc->c->seq, __ATOMIC_ACQUIRE) & 1) == 0 &&
	       !__atomic_load_n(&tc->busy, __ATOMIC_ACQUIRE);
}

/* In a fork's child: a new mm, which registers anew. */
void scratch__gate_postfork_child(void)
{
	barrier = 0;
}
