/*
 * pool_tcache.c - thread caches and remote frees.
 *
 * Each thread that reaches a slow path gets a cache slot (g.tcs): its bins
 * of idle blocks, private to it, and its counters in the segment. At exit
 * (the last round of pthread key destructors) its idle blocks go to the
 * depot and the slot becomes a zombie until every block it owns has come
 * back; a slot whose thread ended without its destructor is found by a
 * scan (scratch__reclaim_ended_locked). A block freed by another thread
 * goes back to its owner through the owner's lock-free remote-free list,
 * so its pages stay with the thread that first touched them; the owner
 * drains the list on its slow paths, a decay pass for an owner that never
 * comes (pool_decay.c).
 *
 * Owns the sentinels, the calling thread's cache pointer, the pthread key
 * of the exit hook, the zombies, and the fork gate that remote frees and
 * fork exclude each other with.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "pool.h"

struct scratch__thread_counters scratch__sentinel_counters; /* written, never read */
struct tcache scratch__tc_none = {.tag = UINT32_MAX, .c = &scratch__sentinel_counters.c};
struct tcache scratch__tc_dead = {.tag = UINT32_MAX, .c = &scratch__sentinel_counters.c};
__thread struct tcache *scratch__tls_tc __attribute__((tls_model("initial-exec"))) = TC_NONE;

static __thread int tls_exit_rounds __attribute__((tls_model("initial-exec")));
static pthread_key_t key; /* its destructor is the exit hook: tc_destructor */
static bool key_ok;
static int zombies;      /* slots in TC_ZOMBIE or TC_FORKED state; under g.lock */
static int zombie_dirty; /* a remote free went to a zombie */

/* Move a cache's blocks (all bins) to the depot; the caller holds g.lock
 * and is the only writer of tc (its thread, or tc is a zombie). */
void scratch__tc_flush_locked(struct tcache *tc)
{
	uint64_t moved = 0;

	for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++) {
		struct bin *b = &tc->bins[bin];

		while (b->head != 0) {
			uint32_t id = b->head;

			b->head = g.blk[id].next;
			b->count--;
			moved += g.cls_size[bin];
			scratch__depot_put(id);
		}
	}
	SCRATCH_ASSERT(tc->cached_bytes == moved); /* the bins held what it said */
	tc->cached_bytes = 0;
	if (moved != 0)
		count_retained(tc->c, -(int64_t)moved);
}

/* Take the whole remote-free list: blocks other threads freed to us. */
uint32_t scratch__remote_take(struct tcache *tc)
{
	if (__atomic_load_n(&tc->remote_head, __ATOMIC_RELAXED) == 0)
		return 0;
	return __atomic_exchange_n(&tc->remote_head, 0, __ATOMIC_ACQUIRE);
}

/* Drain remote frees into the owner's bins while the limits allow, stamped
 * with the time (see tc_cut); the rest goes to the depot. Called by the
 * owner thread, without g.lock. */
void scratch__tc_drain_remote(struct tcache *tc)
{
	uint32_t id = scratch__remote_take(tc), next;
	uint64_t evicted = 0, now = 0;
	bool locked = false;

	for (; id != 0; id = next) {
		struct blk *d = &g.blk[id];
		struct bin *b = &tc->bins[d->cls];
		uint64_t cap = g.cls_size[d->cls];

		next = d->next;
		SCRATCH_ASSERT(d->state == BLK_REMOTE && d->owner == tc->tag);
		scratch__tail_forget(tc, id);
		/* the limit from conf: g.cache_limit is 0 while a gate is up */
		if (b->count < g.conf.cache_count && tc->cached_bytes + cap <= g.cache_bytes) {
			if (now == 0) /* idle from now on, for the decay */
				now = scratch__os_monotonic_ms() | STAMP_MS;
			d->state = BLK_CACHED;
			d->stamp = now;
			bin_link(b, id);
			b->count++;
			tc->cached_bytes += cap;
			continue;
		}
		if (!locked) {
			pthread_mutex_lock(&g.lock);
			locked = true;
		}
		evicted += cap;
		scratch__depot_put(id);
	}
	if (locked)
		pthread_mutex_unlock(&g.lock);
	if (evicted != 0)
		count_retained(tc->c, -(int64_t)evicted);
}

/* Add the class counters of a finished slot (its thread gone: no writer)
 * to e, inside the caller's proc bracket. */
static void class_fold(struct scratch__class_counters *e, const struct scratch__class_counters *k)
{
	uint64_t *dst = (uint64_t *)e;
	const uint64_t *src = (const uint64_t *)k;

	for (size_t i = 0; i < sizeof(*k) / sizeof(uint64_t); i++)
		SCRATCH__ADD(&dst[i], __atomic_load_n(&src[i], __ATOMIC_RELAXED));
}

/* Fold a finished slot's counters into proc->exited. Under g.lock. */
static void tc_fold(struct tcache *tc)
{
	struct scratch__counters s;
	struct scratch__counters *e = &g.proc->exited;

	scratch__counters_read(tc->c, &s);
	proc_begin();
	SCRATCH__ADD(&e->allocs, s.allocs);
	SCRATCH__ADD(&e->hits, s.hits);
	SCRATCH__ADD(&e->depot_hits, s.depot_hits);
	SCRATCH__ADD(&e->misses, s.misses);
	SCRATCH__ADD(&e->frees, s.frees);
	SCRATCH__ADD(&e->remote_out, s.remote_out);
	SCRATCH__ADD(&e->passthrough, s.passthrough);
	SCRATCH__ADD(&e->peak_leased, s.peak_leased);
	SCRATCH__ADD(&e->growth_bytes, s.growth_bytes);
	SCRATCH__ADD(&e->moved_bytes, s.moved_bytes);
	SCRATCH__ADD(&e->populated_bytes, s.populated_bytes);
	SCRATCH__ADD(&e->larger_hits, s.larger_hits);
	SCRATCH__ADD(&e->remote_in, s.remote_in);
	class_fold(&g.pcls->exited, scratch__cls(tc->c));
	SCRATCH__ADD(&g.proc->exited_threads, 1);
	scratch__segment_thread_reclaim(tc->index); /* inside the bracket: no double count */
	proc_end();
	__atomic_store_n(&tc->state, TC_FREE, __ATOMIC_RELAXED);
}

/* Reclaim zombie slots: drain their remote lists into the depot and free
 * the slots whose blocks have all come back. Under g.lock. */
void scratch__reap_zombies(void)
{
	__atomic_store_n(&zombie_dirty, 0, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < g.tcs_used && zombies > 0; i++) {
		struct tcache *z = &g.tcs[i];
		uint64_t rib, back = 0;
		uint32_t id, next;

		if (z->state != TC_ZOMBIE && z->state != TC_FORKED)
			continue;
		/* Read the credited bytes before taking the list: a freer
		 * pushes first and credits after, so every credited block is
		 * already on the list we take. */
		rib = __atomic_load_n(&z->c->remote_in_bytes, __ATOMIC_ACQUIRE);
		id = __atomic_exchange_n(&z->remote_head, 0, __ATOMIC_SEQ_CST);
		for (; id != 0; id = next) {
			next = g.blk[id].next;
			back += g.cls_size[g.blk[id].cls];
			scratch__depot_put(id);
		}
		if (back != 0)
			count_retained(z->c, -(int64_t)back);
		if (z->state == TC_ZOMBIE && z->c->leased == rib &&
		    z->c->retained == __atomic_load_n(&z->c->decayed_bytes, __ATOMIC_RELAXED)) {
			tc_fold(z);
			zombies--;
		}
	}
}

/* Reclaim zombie slots if a remote free went to one since the last reap.
 * Under g.lock. */
void scratch__reap_if_dirty(void)
{
	if (__atomic_load_n(&zombie_dirty, __ATOMIC_RELAXED))
		scratch__reap_zombies();
}

/*
 * The table is full, or scratch_trim asks (now): turn the live slots of
 * threads that have ended into zombies, as their destructor would have. A
 * thread whose first pool call comes late in its exit (from another key's
 * destructor, in glibc's second round or later) gets a slot whose
 * destructor is called fewer than the three times it waits for, so nothing
 * else tears it down. The thread is
 * gone, so nothing touches its cache but us, under g.lock; blocks freed
 * to it later come back through the zombie's remote list. A scan costs a
 * syscall per slot: one that finds nothing makes the next 1, 2, 4, ...
 * 1024 full-table attaches skip it, so a process with more live threads
 * than slots does not pay it for every new thread. Returns true if any
 * slot was reclaimed. Under g.lock.
 */
bool scratch__reclaim_ended_locked(bool now)
{
	static uint32_t skip, backoff;
	bool any = false;

	if (now)
		skip = 0;
	if (skip > 0) {
		skip--;
		return false;
	}
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (!tc_in_use(tc) || !scratch__os_thread_gone(tc->tid))
			continue;
		/* the flush may drop g.lock: keep a second scan off this slot */
		tc->reclaiming = true;
		scratch__tc_flush_locked(tc);
		__atomic_store_n(&tc->state, TC_ZOMBIE, __ATOMIC_RELAXED);
		zombies++;
		scratch__segment_thread_exit(tc->index);
		any = true;
	}
	if (any) {
		backoff = 0;
		scratch__reap_zombies();
	} else {
		backoff = backoff == 0 ? 1 : backoff < 1024 ? backoff * 2 : 1024;
		skip = backoff;
	}
	return any;
}

/* Give the calling thread a cache slot; TC_DEAD when none is left. */
struct tcache *scratch__tc_attach(void)
{
	struct tcache *tc = NULL;
	struct scratch__counters *c;
	pid_t tid = scratch__os_gettid();

	pthread_mutex_lock(&g.lock);
	for (int pass = 0; pass < 3 && tc == NULL; pass++) {
		if (pass == 1 && zombies > 0)
			scratch__reap_zombies();
		if (pass == 2 && !scratch__reclaim_ended_locked(false))
			break;
		for (uint32_t i = 0; i < g.tcs_used; i++)
			if (g.tcs[i].state == TC_FREE) {
				tc = &g.tcs[i];
				break;
			}
		if (tc == NULL && g.tcs_used < g.ntcs)
			tc = &g.tcs[g.tcs_used++];
	}
	if (tc == NULL) {
		pthread_mutex_unlock(&g.lock);
		return TC_DEAD;
	}
	memset(tc, 0, sizeof(*tc));
	memcpy(tc->cap, g.cls_size, sizeof(tc->cap));
	tc->index = (uint32_t)(tc - g.tcs);
	tc->tag = tc->index + 1;
	tc->state = TC_LIVE;
	tc->tid = tid;
	tc->trim_seen = __atomic_load_n(&g.trim_epoch, __ATOMIC_RELAXED);
	/* Attaching reads the thread's name from procfs: an open that fails
	 * (no fd left) must not leak its errno into the host's call. */
	int saved = errno;
	c = scratch__segment_thread_attach(tc->index, tid);
	errno = saved;
	tc->c = c != NULL ? c : &tc->own.c;
	proc_begin();
	SCRATCH__ADD(&g.proc->threads_seen, 1);
	proc_end();
	pthread_mutex_unlock(&g.lock);
	/* Low pthread keys live in the thread descriptor: no allocation. */
	if (key_ok)
		pthread_setspecific(key, tc);
	return tc;
}

/* Thread exit: flush the cache to the depot; the slot stays a zombie until
 * every block it owns has come back. Runs as late as the destructor rounds
 * allow, so other destructors that free pool blocks still find a cache. */
static void tc_destructor(void *arg)
{
	struct tcache *tc = arg;

	if (++tls_exit_rounds < 3) {
		pthread_setspecific(key, tc);
		return;
	}
	scratch__tc_enter(tc);
	scratch__tc_drain_remote(tc);
	pthread_mutex_lock(&g.lock);
	scratch__tls_tc = TC_DEAD;
	scratch__tc_flush_locked(tc);
	scratch__tc_leave(tc); /* under g.lock, and a zombie below: no pass comes in */
	/* Seq_cst, as remote_free's push and state load: either the reap
	 * below sees a block pushed now, or its freer sees the zombie and
	 * asks for a reap (zombie_dirty). */
	__atomic_store_n(&tc->state, TC_ZOMBIE, __ATOMIC_SEQ_CST);
	zombies++;
	scratch__segment_thread_exit(tc->index);
	scratch__reap_zombies();
	pthread_mutex_unlock(&g.lock);
}

/* Register the exit hook; at set-up. */
void scratch__tcache_boot(void)
{
	key_ok = pthread_key_create(&key, tc_destructor) == 0;
}

/*
 * A remote free pushes the block, then credits it: a fork between the two
 * would leave the child a block on the list that was never credited, and
 * its leased figure one block high for good. So remote frees and fork
 * exclude each other, Dekker style, with no shared line on the free path:
 * the freer raises its own in_remote flag (orphans, which have no slot,
 * count in orphans_in_remote) and then reads fork_gate; prefork() raises
 * fork_gate and then waits for every flag to drop. Sequentially
 * consistent, so at least one side sees the other. A freer that finds the
 * gate up waits on g.lock, which prefork() holds until the fork is done.
 */
static uint32_t fork_gate;
static uint32_t orphans_in_remote;

static void remote_leave(struct tcache *me)
{
	if (is_tc(me))
		__atomic_store_n(&me->in_remote, 0, __ATOMIC_RELEASE);
	else
		__atomic_fetch_sub(&orphans_in_remote, 1, __ATOMIC_RELEASE);
}

static void remote_enter(struct tcache *me)
{
	for (;;) {
		if (is_tc(me))
			__atomic_store_n(&me->in_remote, 1, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_add(&orphans_in_remote, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&fork_gate, __ATOMIC_SEQ_CST))
			return;
		remote_leave(me);
		scratch__gate_wait(); /* until the fork is done */
	}
}

/* Push a block onto its owner's remote-free list, then credit the owner.
 * Push-then-credit is what lets scratch__reap_zombies() trust remote_in_bytes. */
static void remote_free(struct tcache *owner, uint32_t id, uint64_t cap)
{
	struct blk *d = &g.blk[id];
	uint32_t head = __atomic_load_n(&owner->remote_head, __ATOMIC_RELAXED);

	SCRATCH_ASSERT(d->state == BLK_LEASED && d->owner == owner->tag);
	d->state = BLK_REMOTE;
	do {
		d->next = head;
	} while (!__atomic_compare_exchange_n(&owner->remote_head, &head, id, true,
	                                      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	__atomic_fetch_add(&owner->c->remote_in, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&owner->c->remote_in_bytes, cap, __ATOMIC_RELEASE);
	/* against tc_destructor's store: see there */
	if (__atomic_load_n(&owner->state, __ATOMIC_SEQ_CST) != TC_LIVE)
		__atomic_store_n(&zombie_dirty, 1, __ATOMIC_RELAXED);
}

/* A free by me (a cache, or a sentinel: an orphan) of block id, of
 * capacity cap, which another thread's cache owns. */
void scratch__remote_free(struct tcache *me, uint32_t id, uint64_t cap)
{
	remote_enter(me);
	remote_free(&g.tcs[g.blk[id].owner - 1], id, cap);
	remote_leave(me);
}

/* Before fork, under every lock: remote frees in flight finish (see
 * fork_gate), a few stores each. The wait is bounded all the same, and
 * the forking thread's own flag (self) is not waited for: a signal handler
 * that forks could find it raised, and would wait forever. A miscount in
 * the child is the lesser harm. */
void scratch__tcache_prefork(struct tcache *self)
{
	unsigned spins = 0;

	__atomic_store_n(&fork_gate, 1, __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < g.tcs_used; i++)
		while (&g.tcs[i] != self &&
		       __atomic_load_n(&g.tcs[i].in_remote, __ATOMIC_SEQ_CST) && spins++ < 100000)
			sched_yield();
	while (__atomic_load_n(&orphans_in_remote, __ATOMIC_SEQ_CST) != 0 && spins++ < 100000)
		sched_yield();
}

/* After fork, on both sides (child: in the child), still under g.lock. */
void scratch__tcache_postfork(bool child)
{
	__atomic_store_n(&fork_gate, 0, __ATOMIC_SEQ_CST);
	if (child)
		__atomic_store_n(&orphans_in_remote, 0, __ATOMIC_RELAXED);
}

/* In the child, with the pools ready: only the forking thread (self)
 * lives on. The other threads' slots become TC_FORKED: their bins may have
 * been mid-update at fork time, so they are never touched again; their
 * remote lists (updated atomically) are still drained, so blocks the child
 * frees to them come back. */
void scratch__tcache_postfork_slots(struct tcache *self)
{
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		/* a flag left up by a freer prefork gave up on stays with the
		 * parent: no later fork of ours should wait for it */
		tc->in_remote = 0;
		if (tc == self || tc->state != TC_LIVE)
			continue;
		__atomic_store_n(&tc->state, TC_FORKED, __ATOMIC_RELAXED);
		zombies++;
	}
	if (is_tc(self))
		self->tid = scratch__os_gettid();
}
