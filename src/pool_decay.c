/*
 * pool_decay.c - decay: idle pages go back to the OS.
 *
 * An idle block's pages go back to the OS once it has been idle for
 * decay_ms (10 s by default, jemalloc's dirty_decay_ms); its address and
 * class stay, in its class's empty list, and it comes back fresh (zero, so
 * calloc writes nothing). The fast paths read no clock: a cached block's
 * stamp is its owner's frees count, and decay passes note those counts
 * with the time (see decay_period_ms); a block another thread freed is
 * stamped with the time of its drain, a slow path's. A host that goes
 * quiet after a burst makes no call at all, so passes run on a helper
 * thread ("scratch-decay"), started at the first slow-path acquire once
 * the pools have lived one decay period (at most 1 s; a shorter process
 * never needs a pass, and the many short programs that run under the shim
 * get no thread): a check on other threads' slow paths or on pass-through
 * calls never comes in a parked process. The thread blocks every signal,
 * uses no pool of its own, parks on a futex when no block is live, and
 * does not survive fork (a child starts its own at its first slow-path
 * acquire). With decay_thread:false, passes ride on slow-path acquires
 * instead (every 16th of a thread's reads the clock). A pass enters other
 * threads' caches through the gate (pool_gate.c).
 *
 * per_node: the passes also look for threads that moved off their cache's
 * node while every request hits (tc_evict_moved): a thread whose affinity
 * no longer holds a CPU of its cache's node loses its idle blocks to the
 * depot, and its next request misses.
 *
 * Owns the decay thread, its stack and its lock (a pass holds it from
 * start to end; fork waits for it), the caches' decay marks, and the CPUs
 * of each node.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

#include "pool.h"

#define CPU_WORDS 16 /* per_node: the decay thread knows the nodes of CPUs below 1024 */

static struct {
	pthread_mutex_t lock; /* held by a pass from start to end (fork waits on it) */
	uint32_t state;       /* DK_NONE, DK_RUNNING, DK_INLINE */
	uint64_t next_ms;     /* inline passes: not before */
	bool cpus_known;      /* per_node: node_cpus read, by the decay thread alone */
	uint64_t node_cpus[DEPOT_NODES][CPU_WORDS];
	char *stack; /* the thread's stack, its top touched in advance */
	uint32_t stack_once;
} dk = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The decay thread's stack: room for the static TLS of big hosts too (glibc
 * puts its descriptor and static TLS at the top of a stack it is given);
 * the top DECAY_STACK_WARM bytes, which a host with a small static TLS is
 * all the thread ever touches, are written in advance. */
#define DECAY_STACK      (UINT64_C(256) << 10)
#define DECAY_STACK_WARM (UINT64_C(16) << 10)

enum { DK_NONE, DK_RUNNING, DK_INLINE };

/*
 * The decay clock. A cached block's stamp is its owner's frees count at
 * the release, so the fast path reads no clock; each pass notes every
 * cache's frees count with the time (a mark). A block stamped at or below
 * a mark taken decay_ms ago has been idle at least that long. A block
 * drained from the remote list (a slow path, or a pass) is stamped with
 * the time instead (STAMP_MS): its owner may have freed nothing since a
 * mark older than decay_ms, which then holds the very count a drain would
 * stamp, and would decay the block in the next pass though it only just
 * went idle. The count cannot tick for it: it is the thread's frees
 * counter, and the fast path stamps with it. Passes come
 * every decay_ms/4, so a block's pages go back between decay_ms and
 * 1.25 decay_ms (plus one period's lateness) after its release.
 */
static uint64_t decay_period_ms(void)
{
	return g.conf.decay_ms >= 4 ? g.conf.decay_ms / 4 : 1;
}

/* The frees count of tc's newest mark that is decay_ms old at now. */
static bool mark_before(const struct tcache *tc, uint64_t now, uint64_t *ret_frees)
{
	bool any = false;

	for (uint32_t i = 0; i < tc->nmarks && i < DECAY_MARKS; i++) {
		const struct decay_mark *m = &tc->marks[i];

		if (now - m->ms >= g.conf.decay_ms && (!any || m->frees > *ret_frees)) {
			*ret_frees = m->frees;
			any = true;
		}
	}
	return any;
}

static void mark_take(struct tcache *tc, uint64_t now)
{
	struct decay_mark *m = &tc->marks[tc->nmarks++ % DECAY_MARKS];

	m->ms = now;
	m->frees = __atomic_load_n(&tc->c->frees, __ATOMIC_RELAXED);
}

/* Push block id on a pass's list of blocks to decommit; it is EMPTY from
 * now on (no list holds it until decay_finish). */
static void list_push(uint32_t *list, uint32_t id)
{
	struct blk *d = &g.blk[id];

	/* a decay pass takes idle blocks only */
	SCRATCH_ASSERT(d->state == BLK_CACHED || d->state == BLK_REMOTE || d->state == BLK_DEPOT);
	d->state = BLK_EMPTY;
	scratch__segment_block_state(id, SCRATCH_SEG_BLK_EMPTY);
	d->owner = 0;
	d->next = *list;
	*list = id;
}

/* Has a cached block stamped stamp been idle less than decay_ms at now, as
 * far as frees, the count of the newest mark decay_ms old, tells? A time
 * stamp: stamp + decay_ms, not now - stamp, as a block drained after the
 * pass read its clock is newer than now. */
static bool stamp_young(uint64_t stamp, uint64_t now, uint64_t frees)
{
	if (stamp & STAMP_MS)
		return (stamp & ~STAMP_MS) + g.conf.decay_ms > now;
	return stamp > frees;
}

/* Move tc's cached blocks idle decay_ms at now onto *list, by their stamps
 * (stamp_young); a bin is in id order, not time order, so each block is
 * looked at. Returns their bytes. tc's thread is outside its bins (gate)
 * or is the caller. */
static uint64_t tc_cut(struct tcache *tc, uint64_t now, uint64_t frees, uint32_t *list)
{
	uint64_t bytes = 0;

	for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++) {
		struct bin *b = &tc->bins[bin];
		uint32_t *link = &b->head, id;

		while ((id = *link) != 0) {
			if (stamp_young(g.blk[id].stamp, now, frees)) {
				link = &g.blk[id].next;
				continue;
			}
			*link = g.blk[id].next;
			b->count--;
			bytes += g.cls_size[bin];
			list_push(list, id);
		}
	}
	tc->cached_bytes -= bytes;
	return bytes;
}

/* Blocks others freed to tc, which it may never come for: into its bins,
 * stamped now as its own drain would, or onto *list beyond its limits.
 * Returns the bytes put on the list. Same conditions as tc_cut(). */
static uint64_t tc_take_remote(struct tcache *tc, uint64_t now, uint32_t *list)
{
	uint32_t id = scratch__remote_take(tc), next;
	uint64_t out = 0;

	for (; id != 0; id = next) {
		struct blk *d = &g.blk[id];
		struct bin *b = &tc->bins[d->cls];
		uint64_t cap = g.cls_size[d->cls];

		next = d->next;
		SCRATCH_ASSERT(d->state == BLK_REMOTE);
		if (b->count < g.conf.cache_count && tc->cached_bytes + cap <= g.cache_bytes) {
			d->state = BLK_CACHED;
			d->stamp = now | STAMP_MS;
			bin_link(b, id);
			b->count++;
			tc->cached_bytes += cap;
			continue;
		}
		out += cap;
		list_push(list, id);
	}
	return out;
}

/* Decay tc's cache at now onto *list; credit the blocks that left it. */
static void tc_decay(struct tcache *tc, uint64_t now, uint32_t *list)
{
	uint64_t frees = 0, out = tc_take_remote(tc, now, list);

	/* without a mark decay_ms old, 0: a release stamps 1 or more, so only
	 * the drained blocks' own times tell */
	(void)mark_before(tc, now, &frees);
	out += tc_cut(tc, now, frees, list);
	if (out != 0)
		__atomic_fetch_add(&tc->c->decayed_bytes, out, __ATOMIC_RELEASE);
}

/* Depot blocks put decay_ms or more before now, onto *list. Under g.lock. */
static void depot_cut(uint64_t now, uint32_t *list)
{
	uint64_t bytes = 0, blocks = 0;

	for (unsigned i = 0; i < g.nodes * g.nbins; i++) {
		unsigned bin = g.cls_base + i % g.nbins;
		uint32_t *link = &g.depot_head[i / g.nbins][bin], id, next;

		/* stamp + decay_ms, not now - stamp: a block put after the
		 * pass read its clock is newer than now */
		while (*link != 0 && g.blk[*link].stamp + g.conf.decay_ms > now)
			link = &g.blk[*link].next;
		id = *link;
		*link = 0;
		for (; id != 0; id = next) {
			next = g.blk[id].next;
			bytes += g.cls_size[bin];
			blocks++;
			list_push(list, id);
		}
	}
	if (blocks == 0)
		return;
	proc_begin();
	SCRATCH__SUB(&g.proc->depot_bytes, bytes);
	SCRATCH__SUB(&g.proc->depot_blocks, blocks);
	proc_end();
}

/* Return the pages of a pass's list (without g.lock), then file its blocks
 * in their classes' empty lists. */
static void decay_finish(uint32_t list)
{
	uint64_t total = 0;
	uint32_t id, next;

	if (list == 0)
		return;
	/* the list is the pass's alone: fresh notes which pages went back */
	for (id = list; id != 0; id = g.blk[id].next)
		g.blk[id].fresh = scratch__os_decommit((void *)blk_addr(&g.blk[id]),
		                                       g.cls_size[g.blk[id].cls]);
	pthread_mutex_lock(&g.lock);
	for (id = list; id != 0; id = next) {
		struct blk *d = &g.blk[id];

		next = d->next;
		total += d->fresh ? g.cls_size[d->cls] : 0;
		scratch__block_emptied(d, !d->fresh);
		d->next = g.empty_head[d->cls];
		g.empty_head[d->cls] = id;
		g.live_blocks--;
		count_live(d->cls, -1);
	}
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, total);
	proc_end();
	pthread_mutex_unlock(&g.lock);
}

/* Does any live cache hold blocks a pass could take? A racy look, only to
 * spare an idle process the gate and the membarrier. Under g.lock. */
static bool caches_worth_a_pass(uint64_t now)
{
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];
		uint64_t frees = 0;

		if (!tc_in_use(tc))
			continue;
		if (__atomic_load_n(&tc->remote_head, __ATOMIC_RELAXED) != 0)
			return true;
		if (__atomic_load_n(&tc->cached_bytes, __ATOMIC_RELAXED) != 0 &&
		    mark_before(tc, now, &frees))
			return true;
	}
	return false;
}

/* per_node: the CPUs of each node, for the passes' look for moved
 * threads; read once, by the decay thread (never in a call of the host's).
 * A node that cannot be read keeps no CPU: its threads are never moved. */
static void node_cpus_load(void)
{
	for (unsigned n = 0; n < g.nodes; n++)
		if (scratch__os_node_cpus(n, dk.node_cpus[n], CPU_WORDS))
			dk.cpus_known = true;
}

/* per_node: may tc's thread no longer run on the node its cache was on at
 * its last slow path (its affinity holds none of that node's CPUs, as
 * after a sched_setaffinity to another node), while the cache holds idle
 * blocks? A racy look unless tc's thread is outside its bins. */
static bool tc_moved(struct tcache *tc)
{
	uint32_t node1 = __atomic_load_n(&tc->node1, __ATOMIC_RELAXED);
	uint64_t mask[CPU_WORDS], any = 0;

	if (!dk.cpus_known || node1 == 0 ||
	    __atomic_load_n(&tc->cached_bytes, __ATOMIC_RELAXED) == 0 ||
	    !scratch__os_affinity(tc->tid, mask, CPU_WORDS))
		return false;
	for (unsigned w = 0; w < CPU_WORDS; w++) {
		if (mask[w] & dk.node_cpus[node1 - 1][w])
			return false;
		any |= dk.node_cpus[node1 - 1][w];
	}
	return any != 0;
}

/* Does a live cache belong to a thread that moved off its node? A racy
 * look, as caches_worth_a_pass(). Under g.lock. */
static bool caches_moved(void)
{
	for (uint32_t i = 0; i < g.tcs_used && dk.cpus_known; i++)
		if (tc_in_use(&g.tcs[i]) && tc_moved(&g.tcs[i]))
			return true;
	return false;
}

/*
 * A pass in the cache of a thread that moved off its node (tc_moved): its
 * idle blocks would serve that node's pages for as long as its requests
 * hit. They go to the depot, each to the list of its pages' node (beyond
 * the depot's room, onto the pass's list to decay), so its next request
 * misses and its slow path refills where it runs. Credited as a pass
 * credits (decayed_bytes). Under g.lock, which stays held.
 */
static void tc_evict_moved(struct tcache *tc, uint32_t *list)
{
	uint64_t out = 0;

	if (!tc_moved(tc))
		return;
	for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++)
		while (tc->bins[bin].head != 0) {
			uint32_t id = bin_pop(tc, bin);

			out += g.cls_size[bin];
			if (g.proc->depot_bytes + g.cls_size[bin] <= g.conf.depot_bytes)
				scratch__depot_put(id); /* room: no madvise, g.lock kept */
			else
				list_push(list, id);
		}
	if (out != 0)
		__atomic_fetch_add(&tc->c->decayed_bytes, out, __ATOMIC_RELEASE);
}

/* The caches' part of a pass, under g.lock: self (an inline pass's caller,
 * outside its bins) is entered without the gate. */
static void decay_caches(uint64_t now, struct tcache *self, uint32_t *list)
{
	bool enter = scratch__gate_may_enter() && (caches_worth_a_pass(now) || caches_moved());

	if (enter) {
		scratch__gate_raise();
		if (!scratch__os_membarrier())
			enter = false;
	}
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (!tc_in_use(tc))
			continue;
		if (tc == self || (enter && scratch__tc_outside(tc))) {
			tc_decay(tc, now, list);
			if (tc != self)
				tc_evict_moved(tc, list);
		}
		mark_take(tc, now);
	}
	if (__atomic_load_n(&g.gate, __ATOMIC_RELAXED))
		scratch__gate_lower();
}

/* One pass at now; the caller holds dk.lock. Returns the number of live
 * blocks left (0: nothing can decay until the next carve). */
static uint64_t decay_pass(uint64_t now, struct tcache *self)
{
	uint32_t list = 0;
	uint64_t live;

	pthread_mutex_lock(&g.lock);
	decay_caches(now, self, &list);
	depot_cut(now, &list);
	live = g.live_blocks;
	pthread_mutex_unlock(&g.lock);
	decay_finish(list);
	return live;
}

/* Sleep until the next pass is due, or (nothing live) until a carve
 * (scratch__carve wakes g.carve_wake while g.carve_waiting). */
static void decay_sleep(uint64_t live)
{
	uint32_t w;

	pthread_mutex_lock(&g.lock);
	w = __atomic_load_n(&g.carve_wake, __ATOMIC_ACQUIRE);
	if (live == 0 && g.live_blocks == 0)
		g.carve_waiting = true;
	else
		live = 1;
	pthread_mutex_unlock(&g.lock);
	scratch__os_futex_wait(&g.carve_wake, w,
	                       live == 0 ? -1 : (long)(decay_period_ms() * 1000000));
}

static void *decay_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "scratch-decay", 0, 0, 0);
	if (g.nodes > 1)
		node_cpus_load();
	for (;;) {
		uint64_t live;

		pthread_mutex_lock(&dk.lock);
		live = decay_pass(scratch__os_monotonic_ms(), NULL);
		pthread_mutex_unlock(&dk.lock);
		decay_sleep(live);
	}
	return NULL;
}

/*
 * Start the decay thread: a quiet host (every thread parked after a burst)
 * makes no call that could return its memory, so something must run on its
 * own. It blocks every signal (the host's signals are the host's), never
 * touches a pool of its own, sleeps decay_ms/4 between passes while blocks
 * are live and parks on a futex once none is; a fork's child starts its own
 * at its first slow-path acquire. Failing that, passes run inline (DK_INLINE).
 */
SCRATCH_COLD static void decay_start(void)
{
	uint32_t none = DK_NONE;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int rc = -1;

	if (!__atomic_compare_exchange_n(&dk.state, &none, DK_RUNNING, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_RELAXED))
		return;
	/* On the prepared stack first; a static TLS too large for it (or a
	 * runtime that needs more, as ThreadSanitizer's) makes that fail, and
	 * then glibc's own stack of the same size, which it enlarges by the
	 * TLS, serves. */
	for (int own = 1; own >= 0 && rc != 0; own--) {
		char *stack = own ? __atomic_load_n(&dk.stack, __ATOMIC_ACQUIRE) : NULL;

		if (!g.conf.decay_thread || (own && stack == NULL) || pthread_attr_init(&attr) != 0)
			continue;
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (stack == NULL || pthread_attr_setstack(&attr, stack, DECAY_STACK) != 0)
			pthread_attr_setstacksize(&attr, DECAY_STACK);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&t, &attr, decay_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0)
		__atomic_store_n(&dk.state, DK_INLINE, __ATOMIC_RELEASE);
}

/*
 * Map the decay thread's stack and write its top, once, at the process's
 * first slow-path acquire (its first growth): the thread starts a decay
 * period later, in what a host measures as its steady state, and would
 * fault its descriptor, TLS and first frames in there, faults that
 * bench/decode counts per token. Costs a process that never gets the thread 4 pages.
 */
SCRATCH_COLD static void decay_stack_prepare(void)
{
	char *stack;

	if (__atomic_exchange_n(&dk.stack_once, 1, __ATOMIC_ACQ_REL) != 0)
		return;
#if defined(SCRATCH__TSAN)
	return; /* its runtime needs a larger stack than this, and says so */
#endif
	stack = scratch__os_map(DECAY_STACK);
	if (stack == NULL)
		return;
	for (uint64_t off = DECAY_STACK - DECAY_STACK_WARM; off < DECAY_STACK; off += PAGE_SIZE)
		((volatile char *)stack)[off] = 0;
	__atomic_store_n(&dk.stack, stack, __ATOMIC_RELEASE);
}

/* A process shorter than this never needs a pass of the thread: one decay
 * period, at most 1 s. So cat, grep or a compiler run under the shim, whose
 * I/O buffers are pooled, get no thread (and no SIGSETXID handler). */
static uint64_t decay_thread_after_ms(void)
{
	return decay_period_ms() < 1000 ? decay_period_ms() : 1000;
}

/* ... unless one of its threads holds this much already: a host that
 * bursts within its first second and then makes no slow-path call again
 * (it only frees, or goes quiet) would otherwise keep the burst's pages
 * for good. Far above what the short programs' I/O buffers take. */
#define DECAY_EARLY_BYTES (UINT64_C(64) << 20)

/*
 * Every slow-path acquire comes here, outside its bins and locks: the
 * first once the pools have lived decay_thread_after_ms(), or once the
 * thread retains DECAY_EARLY_BYTES, starts the decay thread; until then,
 * and without one, every 16th of a thread's reads the clock and runs a
 * pass inline when one is due.
 */
void scratch__decay_slow_event(struct tcache *tc)
{
	uint32_t st;
	uint64_t now;
	int saved = errno;

	if (g.conf.decay_ms == 0)
		return;
	st = __atomic_load_n(&dk.state, __ATOMIC_ACQUIRE);
	if (st == DK_NONE && g.conf.decay_thread &&
	    __atomic_load_n(&dk.stack_once, __ATOMIC_RELAXED) == 0)
		decay_stack_prepare();
	if (st == DK_NONE && (scratch__os_monotonic_ms() - g.born_ms >= decay_thread_after_ms() ||
	                      tc->c->retained >= DECAY_EARLY_BYTES)) {
		decay_start();
		st = __atomic_load_n(&dk.state, __ATOMIC_ACQUIRE);
	}
	if (st == DK_RUNNING || (++tc->slow_calls & 15) != 0)
		goto out;
	now = scratch__os_monotonic_ms();
	if (now < __atomic_load_n(&dk.next_ms, __ATOMIC_RELAXED) ||
	    pthread_mutex_trylock(&dk.lock) != 0)
		goto out;
	__atomic_store_n(&dk.next_ms, now + decay_period_ms(), __ATOMIC_RELAXED);
	(void)decay_pass(now, tc);
	pthread_mutex_unlock(&dk.lock);
out:
	errno = saved;
}

/* Fork takes the decay lock after the init lock, before g.lock: no pass
 * holds blocks off every list while the fork copies. */
void scratch__decay_prefork(void)
{
	pthread_mutex_lock(&dk.lock);
}

/* After fork; in the child (child), the decay thread stayed with the
 * parent: the child's first slow-path acquire starts its own. */
void scratch__decay_postfork(bool child)
{
	if (child) {
		if (dk.state == DK_RUNNING)
			dk.state = DK_NONE;
		g.carve_waiting = false;
	}
	pthread_mutex_unlock(&dk.lock);
}
