/*
 * pool_stats.c - the pools' statistics.
 *
 * The public figures (scratch_stats_thread, _total, _class) summed from
 * the per-thread counters in the segment, the process counters and the
 * folded counters of exited threads; and, in debug builds, the checks of
 * the accounting equations pool.h writes down, where their writer's
 * bracket closes.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "pool.h"

#if defined(SCRATCH_DEBUG)
/* leased <= retained as reported, for the calling thread's counters c. A
 * remote free pushes the block, then credits it: until the credit lands
 * the block may count as leased and be gone from retained already (to the
 * depot, or to a decay pass), so only a violation that outlasts the
 * freer's few instructions is one. */
static bool leased_within_retained(const struct scratch__counters *c)
{
	for (int tries = 0; tries < 100000; tries++) {
		uint64_t rib = __atomic_load_n(&c->remote_in_bytes, __ATOMIC_ACQUIRE);
		uint64_t dec = __atomic_load_n(&c->decayed_bytes, __ATOMIC_ACQUIRE);

		if (c->leased - rib <= c->retained - dec)
			return true;
		sched_yield();
	}
	return false;
}

/* The thread equations of pool.h, checked by c's writer as its
 * bracket closes: only for the calling thread's own slot (a slot lost to
 * fork may hold a torn update; the sentinels have many writers). Others
 * only add to remote_in_bytes, which lowers leased as reported. */
void scratch__check_thread(const struct scratch__counters *c)
{
	if (c != scratch__tls_tc->c || c == &scratch__sentinel_counters.c)
		return;
	SCRATCH_ASSERT(c->allocs == c->hits + c->depot_hits + c->misses);
	SCRATCH_ASSERT(c->larger_hits <= c->hits + c->depot_hits);
	SCRATCH_ASSERT(c->leased - __atomic_load_n(&c->remote_in_bytes, __ATOMIC_ACQUIRE) <=
	               c->peak_leased);
	SCRATCH_ASSERT(leased_within_retained(c));
}

/* The process equations, under g.lock as proc->seq closes: live blocks
 * per class add up to live_blocks; the depot's and the orphans' figures
 * agree with each other and the limits. */
void scratch__check_proc(void)
{
	uint64_t live = 0;

	for (unsigned k = 0; k < SCRATCH__CLS_COUNT; k++)
		live += g.pcls->live[k];
	SCRATCH_ASSERT(live == g.live_blocks);
	SCRATCH_ASSERT(g.live_blocks <= g.nblk);
	SCRATCH_ASSERT((g.proc->depot_blocks == 0) == (g.proc->depot_bytes == 0));
	SCRATCH_ASSERT(g.proc->depot_bytes <= g.conf.depot_bytes);
	SCRATCH_ASSERT(g.proc->orphan_leased <= g.proc->orphan_retained);
	SCRATCH_ASSERT(g.proc->region_used <= g.proc->region_bytes);
}

/* The depot lists against their counters (a walk: at scratch_stats_total
 * only). Under g.lock. */
void scratch__check_depot(void)
{
	uint64_t bytes = 0, blocks = 0;

	for (unsigned n = 0; n < g.nodes; n++)
		for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++)
			for (uint32_t id = g.depot_head[n][bin]; id != 0; id = g.blk[id].next) {
				SCRATCH_ASSERT(g.blk[id].state == BLK_DEPOT &&
				               g.blk[id].cls == bin);
				SCRATCH_ASSERT(g.blk[id].owner == 0);
				bytes += g.cls_size[bin];
				blocks++;
			}
	SCRATCH_ASSERT(bytes == g.proc->depot_bytes && blocks == g.proc->depot_blocks);
}
#endif

/* The public figures from scratch_seg_totals()'s sums. */
static void stats_from_totals(struct scratch_stats *st, const struct scratch_seg_totals *t)
{
	st->allocs = t->allocs;
	st->hits = t->hits;
	st->depot_hits = t->depot_hits;
	st->misses = t->misses;
	st->frees = t->frees;
	st->remote_frees_in = t->remote_in;
	st->remote_frees_out = t->remote_out;
	st->passthrough = t->passthrough;
	st->retained = t->retained;
	st->leased = t->leased;
	st->peak_leased = t->peak_leased;
	st->trimmed = t->trimmed;
	st->threads = t->threads_seen;
	st->moved = t->moved_bytes;
	st->populated = t->populated_bytes;
}

/* scratch_seg_totals()'s walk over the thread slots in use (*ctx: the
 * next index), under g.lock. */
static bool next_slot(void *ctx, struct scratch__counters *ret)
{
	uint32_t *i = ctx;

	for (; *i < g.tcs_used; (*i)++)
		if (g.tcs[*i].state != TC_FREE) {
			scratch__counters_read(g.tcs[(*i)++].c, ret);
			return true;
		}
	return false;
}

/* One thread's counters alone: *ctx, then none (*ctx = NULL). */
static bool next_one(void *ctx, struct scratch__counters *ret)
{
	struct scratch__counters **c = ctx;

	if (*c == NULL)
		return false;
	scratch__counters_read(*c, ret);
	*c = NULL;
	return true;
}

int scratch_stats_thread(struct scratch_stats *ret_stats)
{
	struct scratch_stats st = {0};
	struct scratch_seg_totals t;
	struct scratch__counters *c;
	struct tcache *tc;
	size_t n;

	if (ret_stats == NULL || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	tc = tc_get();
	if (is_tc(tc)) {
		c = tc->c;
		scratch_seg_totals(&t, next_one, &c, NULL);
		stats_from_totals(&st, &t);
		st.threads = 1;
	}
	st.size = ret_stats->size;
	st.version = SCRATCH_STATS_VERSION;
	memcpy(ret_stats, &st, n);
	return 0;
}

int scratch_stats_total(struct scratch_stats *ret_stats)
{
	struct scratch_stats st = {0};
	struct scratch_seg_totals t;
	uint32_t i = 0;
	size_t n;

	if (ret_stats == NULL || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	if (scratch__init()) {
		pthread_mutex_lock(&g.lock);
		check_depot();
		scratch_seg_totals(&t, next_slot, &i, g.proc);
		pthread_mutex_unlock(&g.lock);
		stats_from_totals(&st, &t);
	}
	st.size = ret_stats->size;
	st.version = SCRATCH_STATS_VERSION;
	memcpy(ret_stats, &st, n);
	return 0;
}

/* Class slot k's six counters of c's thread (hits, depot_hits, misses,
 * larger_hits, frees, lent_adj), read inside c's sequence count. */
static void class_read(struct scratch__counters *c, unsigned k, uint64_t ret[6])
{
	const struct scratch__class_counters *cc = scratch__cls(c);

	for (int tries = 0;; tries++) {
		uint64_t s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE), s2;

		ret[0] = __atomic_load_n(&cc->hits[k], __ATOMIC_RELAXED);
		ret[1] = __atomic_load_n(&cc->depot_hits[k], __ATOMIC_RELAXED);
		ret[2] = __atomic_load_n(&cc->misses[k], __ATOMIC_RELAXED);
		ret[3] = __atomic_load_n(&cc->larger_hits[k], __ATOMIC_RELAXED);
		ret[4] = __atomic_load_n(&cc->frees[k], __ATOMIC_RELAXED);
		ret[5] = __atomic_load_n(&cc->lent_adj[k], __ATOMIC_RELAXED);
		SCRATCH__FENCE_ACQUIRE();
		s2 = SCRATCH__SEQ_LOAD(&c->seq);
		/* as scratch__counters_read: a writer lost to fork leaves seq odd */
		if ((s1 == s2 && (s1 & 1) == 0) || tries > 1000)
			return;
	}
}

/* Add six class counters (class_read's order) to st; lent to *lent. */
static void class_add(struct scratch_class_stats *st, const uint64_t v[6], uint64_t *lent)
{
	st->hits += v[0];
	st->depot_hits += v[1];
	st->misses += v[2];
	st->larger_hits += v[3];
	st->frees += v[4];
	*lent += v[0] + v[1] + v[2] + v[5];
}

int scratch_stats_class(size_t size, struct scratch_class_stats *ret_stats)
{
	struct scratch_class_stats st = {0};
	const struct scratch__class_counters *e;
	uint64_t v[6], lent = 0, live, out;
	unsigned bin, k;
	size_t n;

	if (ret_stats == NULL || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	st.size = ret_stats->size;
	st.version = SCRATCH_CLASS_STATS_VERSION;
	if (!scratch__init() || size < g.min || size - g.min > g.span) {
		memcpy(ret_stats, &st, n);
		return -ERANGE;
	}
	bin = size_bin(size);
	k = CLS(bin);
	st.capacity = g.cls_size[bin];
	st.min_request = bin > g.cls_base ? g.cls_size[bin - 1] + 1 : g.min;
	pthread_mutex_lock(&g.lock);
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		if (g.tcs[i].state == TC_FREE)
			continue;
		class_read(g.tcs[i].c, k, v);
		class_add(&st, v, &lent);
	}
	e = &g.pcls->exited;
	v[0] = e->hits[k];
	v[1] = e->depot_hits[k];
	v[2] = e->misses[k];
	v[3] = e->larger_hits[k];
	v[4] = e->frees[k];
	v[5] = e->lent_adj[k];
	class_add(&st, v, &lent);
	live = g.pcls->live[k];
	pthread_mutex_unlock(&g.lock);
	st.requests = st.hits + st.depot_hits + st.misses;
	out = lent >= st.frees ? lent - st.frees : 0;
	st.leased = out * st.capacity;
	st.idle = live >= out ? (live - out) * st.capacity : 0;
	memcpy(ret_stats, &st, n);
	return 0;
}

void scratch_count_passthrough(uint64_t n)
{
	struct tcache *tc = tc_get();

	if (is_tc(tc)) {
		scratch__seq_begin(&tc->c->seq);
		SCRATCH__ADD(&tc->c->passthrough, n);
		scratch__seq_end(&tc->c->seq);
	}
}
