/*
 * pool.c - thread-local scratch pools: the public entry points and both
 * fast paths.
 *
 * A pooled request pops the head of its class's bin in the calling
 * thread's cache (acquire_hit); a release of a block the thread owns
 * pushes it back (release_block). Both take no lock, make no system call
 * and read no clock; everything else is a slow path in the files below
 * (pool.h lists them). The fast paths' code is measured in instructions
 * (bench/pair, bench/small): a change here is checked there.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "pool.h"
#include "shim.h"

struct scratch__pool scratch__pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .min = UINT64_C(16) << 10};

/*
 * The hit path for a pooled size: pop the head of this thread's bin, or
 * (empty bin, a head whose earlier leases wrote less than size, a sentinel
 * cache, a trim to honour first, or a decay pass's gate up) return
 * miss(size), a tail call. A lease past its block's extent has new pages,
 * and the slow path brings them in with one call where the thread writes
 * its leases whole (pool_dense.c) instead of a trap a page. The whole pop
 * is inside the counters' sequence bracket, and the gate (trim_epoch) is
 * read after the bracket opens: that is what lets a decay pass tell
 * whether this thread is in its bins (pool_gate.c). The bin's head and
 * count are written by two scalar stores on purpose: the compiler would
 * otherwise pair them into a vector store.
 */
static inline void *acquire_hit(uint64_t size, void *(*miss)(uint64_t))
{
	struct tcache *tc = scratch__tls_tc;
	unsigned bin = size_bin(size);
	struct scratch__counters *c = tc->c;

	scratch__seq_begin(&c->seq);
	__asm__ volatile("" : : : "memory");
	if (likely(__atomic_load_n(&g.trim_epoch, __ATOMIC_ACQUIRE) == tc->trim_seen)) {
		struct bin *b = &tc->bins[bin];
		uint32_t id = b->head;

		/* within what the block's earlier leases wrote: a longer lease
		 * (new pages) takes the slow path, which populates them */
		if (likely(id != 0) && likely(size <= g.blk[id].ext)) {
			struct blk *d = &g.blk[id];
			uint64_t cap = tc->cap[bin];

			b->head = d->next;
			__asm__("" : : : "memory");
			b->count--;
			tc->cached_bytes -= cap;
			SCRATCH_ASSERT(d->state == BLK_CACHED && d->owner == tc->tag);
			d->state = BLK_LEASED;
			count_lease_in(c, cap, &c->hits);
			SCRATCH__ADD(SCRATCH__CLS_AT(scratch__cls(c), hits, bin), 1);
			scratch__seq_end(&c->seq);
			check_thread(c);
			return (void *)blk_addr(d);
		}
	}
	scratch__seq_end(&c->seq);
	return miss(size);
}

static inline uint32_t lent_block(const void *p);

/* Add n to a byte counter (field: its offset in struct scratch__counters)
 * of the calling thread, or of the process's figures for a thread without
 * a cache. */
static void count_bytes(size_t field, uint64_t n)
{
	struct tcache *tc = scratch__tls_tc;

	if (is_tc(tc)) {
		scratch__seq_begin(&tc->c->seq);
		SCRATCH__ADD((uint64_t *)((char *)tc->c + field), n);
		scratch__seq_end(&tc->c->seq);
	} else {
		pthread_mutex_lock(&g.lock);
		proc_begin();
		SCRATCH__ADD((uint64_t *)((char *)&g.proc->exited + field), n);
		proc_end();
		pthread_mutex_unlock(&g.lock);
	}
}

/*
 * Below POPULATE_MIN new bytes, populating would cost about what it saves.
 */
#define POPULATE_MIN (4 * PAGE_SIZE)

/* Bring [p, p + n) in with one call ahead of the write, counted. */
static void populate(void *p, uint64_t n)
{
	if (scratch__os_populate(p, n))
		count_bytes(offsetof(struct scratch__counters, populated_bytes), n);
}

/*
 * Populate bytes [from, size) of the lease at p, which its holder is to
 * write whole. With thp_dense (g.huge_dense), the 2 MiB frames inside the
 * range come in as huge pages: marked for them around the populate only,
 * so a later lease of the block that writes sparsely, once its pages went
 * back, faults small pages again, and the mapping merges back whole. The
 * lease covers those frames and writes them: no byte more is resident.
 * Not with per_node (a recycled zeroed lease is populated there too): its
 * frames stay small, as the documentation says of per_node.
 */
static void populate_lease(char *p, uint64_t from, uint64_t size)
{
	uint64_t lo = (from + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1), hi = size & ~(HUGE_SIZE - 1);

	/* hi > lo: a lease of 2 MiB or more, in a 2 MiB-aligned block */
	if (!g.huge_dense || g.nodes > 1 || hi <= lo) {
		populate(p + from, size - from);
		return;
	}
	/* the pages beside the frames first: a mapping's first fault gives it
	 * its anon_vma, and one that came after the mark split the mapping
	 * would give each part its own, which never merge back */
	if (lo > from)
		populate(p + from, lo - from);
	if (size > hi)
		populate(p + hi, size - hi);
	scratch__os_hugepage(p + lo, hi - lo, true);
	populate(p + lo, hi - lo);
	scratch__os_hugepage(p + lo, hi - lo, false);
}

/* A slow-path lease of p, size bytes, whose bytes from from (page aligned)
 * on no earlier lease wrote: populate them when this thread writes its
 * leases' new pages whole, else watch whether it does (pool_dense.c):
 * where a probe may speculate, populate all but its window, and watch
 * the window alone (when the thread's list has no room for the probe,
 * nothing is populated). Not with per_node, nor with populate:false (the
 * audit's launch mode): the pages are to be placed by their writer. */
static void lease_new_pages(void *p, uint64_t from, uint64_t size, bool zeroed)
{
	struct tcache *tc = scratch__tls_tc;
	uint32_t id;
	uint64_t w;

	if (!is_tc(tc) || from >= size || size - from < POPULATE_MIN || g.nodes > 1 ||
	    !g.conf.populate)
		return;
	if (scratch__dense_populate(tc, zeroed, size)) {
		populate_lease(p, from, size);
		return;
	}
	id = lent_block(p);
	/* the window: the last PROBE_WINDOW bytes of a lease of 4 or more */
	w = size - from >= 4 * PROBE_WINDOW ? (size - PROBE_WINDOW) & ~(uint64_t)(PAGE_SIZE - 1)
	                                    : from;
	if (w > from && scratch__dense_speculate(tc, zeroed, size, w - from)) {
		if (scratch__tail_probe(tc, id, zeroed, w, size, w - from))
			populate_lease(p, from, w);
		return;
	}
	(void)scratch__tail_probe(tc, id, zeroed, from, size, 0);
}

/* A plain lease on the slow path. A growing realloc fills the first
 * scratch__tls_prefix bytes itself (pages moved in). */
static void *acquire_plain(uint64_t size)
{
	bool fresh = false;
	uint64_t ext = 0;
	void *p = scratch__acquire_slow(size, &fresh, &ext);

	if (p != NULL) {
		uint64_t from = fresh ? 0 : page_up(ext);

		if (from < scratch__tls_prefix)
			from = scratch__tls_prefix;
		lease_new_pages(p, from, size, false);
	}
	return p;
}

void *scratch_acquire(size_t size)
{
	uint64_t span = __atomic_load_n(&g.span, __ATOMIC_ACQUIRE);

	if (likely(size - __atomic_load_n(&g.min, __ATOMIC_RELAXED) <= span))
		return acquire_hit(size, acquire_plain);
	return scratch__acquire_slow(size, NULL, NULL); /* out of range: ERANGE */
}

static scratch__fallback_fn shim_fallback;

void scratch__shim_setup(scratch__fallback_fn fallback)
{
	__atomic_store_n(&shim_fallback, fallback, __ATOMIC_RELEASE);
}

SCRATCH_COLD static void *shim_acquire_slow(uint64_t size)
{
	int saved = errno;
	void *p = acquire_plain(size);
	scratch__fallback_fn fallback;

	if (likely(p != NULL))
		return p;
	errno = saved;
	fallback = __atomic_load_n(&shim_fallback, __ATOMIC_ACQUIRE);
	if (fallback != NULL)
		return fallback(size);
	errno = ENOMEM;
	return NULL;
}

void *scratch__shim_acquire(size_t size)
{
	return acquire_hit(size, shim_acquire_slow);
}

/*
 * Fresh pages already read as zero: clearing them would only fault them
 * in, and a sparse user of a large zeroed block (numpy's zeros) expects
 * them untouched; they are populated only for a thread whose zeroed
 * leases of the size were written whole (lease_new_pages). A recycled block
 * holds the previous user's data and is written whole; its pages past
 * what earlier leases wrote (ext) are not there yet, and the write would
 * fault them one at a time. They come in with one call first
 * (scratch__os_populate): the pages the write is about to fault, so the
 * resident set is the same.
 */
void *scratch_acquire_zeroed(size_t size)
{
	bool fresh = false;
	uint64_t ext = 0;
	void *p = scratch__acquire_slow(size, &fresh, &ext);

	if (p == NULL)
		return p;
	if (fresh) {
		lease_new_pages(p, 0, size, true);
		return p;
	}
	ext = page_up(ext);
	if (ext < size && size - ext >= POPULATE_MIN)
		populate_lease(p, ext, size);
	/* all of it: the pages up to ext hold earlier leases' data (a
	 * fast-path lease stays within ext), and a populate keeps the data of
	 * pages that were there */
	memset(p, 0, size);
	return p;
}

void *scratch_acquire_aligned(size_t alignment, size_t size)
{
	size_t cap;

	if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	cap = scratch_class_size(size);
	if (cap == 0) {
		errno = ERANGE;
		return NULL;
	}
	if (alignment > (cap >= HUGE_SIZE ? HUGE_SIZE : PAGE_SIZE)) {
		errno = EINVAL;
		return NULL;
	}
	return scratch_acquire(size);
}

/* Block id of the block starting off bytes into the region (off below the
 * region's size) when it is lent, else 0. */
static inline uint32_t lent_at(uintptr_t off)
{
	uint32_t id;

	if ((off & (PAGE_SIZE - 1)) != 0)
		return 0;
	id = __atomic_load_n(&g.starttab[off >> PAGE_SHIFT], __ATOMIC_RELAXED);
	if (id == 0 || g.blk[id].state != BLK_LEASED)
		return 0;
	return id;
}

/* Block id of p when p starts a lent pool block, else 0. Reads only the
 * region bounds and our own start table and descriptors. */
static inline uint32_t lent_block(const void *p)
{
	uint64_t size = __atomic_load_n(&g.size, __ATOMIC_ACQUIRE);
	uintptr_t off = (uintptr_t)p - __atomic_load_n(&g.base, __ATOMIC_RELAXED);

	if (off >= size)
		return 0;
	return lent_at(off);
}

static inline int release_block(uint32_t id);

/* The release fast path's push of d, of capacity cap, on b, tc's bin,
 * is linked: the rest of it, up to the end of the counters' bracket. */
static inline void release_pushed(struct tcache *tc, struct scratch__counters *c, struct bin *b,
                                  struct blk *d, uint64_t cap)
{
	b->count++;
	tc->cached_bytes += cap;
	SCRATCH__ADD(&c->frees, 1);
	SCRATCH__SUB(&c->leased, cap);
	d->stamp = c->frees;
	scratch__seq_end(&c->seq);
	check_thread(c);
}

/* The release fast path's push of block id, whose bin's head has a larger
 * id: at its place in the bin's descending id order (see bin_link). A
 * tail call of the fast path, with what it can find again left out, so
 * that the fast path needs no register of its own to keep. Returns 0, as
 * release_block. */
__attribute__((noinline)) SCRATCH_COLD static int release_sorted(struct tcache *tc, uint32_t id)
{
	struct blk *d = &g.blk[id];
	struct bin *b = &tc->bins[d->cls];

	bin_link(b, id);
	release_pushed(tc, tc->c, b, d, g.cls_size[d->cls]);
	return 0;
}

/* Did the release fast path fail on an own block only because a decay
 * pass had the gate up (the cache has room)? A racy look at the thread's
 * own bins: at worst it waits for a pass for nothing, or sends a block
 * to the depot that a cache would have taken. */
static bool release_gated(const struct tcache *tc, const struct blk *d)
{
	uint64_t cap = g.cls_size[d->cls];

	return __atomic_load_n(&g.gate, __ATOMIC_ACQUIRE) ||
	       (__atomic_load_n(&tc->bins[d->cls].count, __ATOMIC_RELAXED) < g.conf.cache_count &&
	        __atomic_load_n(&tc->cached_bytes, __ATOMIC_RELAXED) + cap <= g.cache_bytes);
}

/* Returns 0, as release_block. */
SCRATCH_COLD static int release_slow(struct tcache *tc, uint32_t id)
{
	struct blk *d = &g.blk[id];
	unsigned cls = d->cls; /* the block may be another's once it is handed back */
	uint64_t cap = g.cls_size[cls];
	int saved = errno;

	if (tc == TC_NONE)
		tc = tc_get(); /* a thread whose first pool call is a free */
	if (d->owner & OWNER_TAIL)
		scratch__tail_release(tc, id); /* a limited lease ends */
	if (d->owner == 0) {
		/* An orphan lease: straight back to the depot. */
		pthread_mutex_lock(&g.lock);
		proc_begin();
		SCRATCH__SUB(&g.proc->orphan_leased, cap);
		SCRATCH__SUB(&g.proc->orphan_retained, cap);
		if (!is_tc(tc)) {
			SCRATCH__ADD(&g.proc->exited.frees, 1);
			SCRATCH__ADD(&g.pcls->exited.frees[CLS(d->cls)], 1);
		}
		proc_end();
		scratch__depot_put(id);
		pthread_mutex_unlock(&g.lock);
		if (is_tc(tc))
			count_release(tc->c, d->cls, 0);
		errno = saved;
		return 0;
	}
	if (is_tc(tc) && d->owner == tc->tag && release_gated(tc, d)) {
		/* The cache looked full because a decay pass had the gate up:
		 * wait for it and try again. */
		scratch__gate_wait();
		errno = saved;
		return release_block(id);
	}
	if (is_tc(tc) && d->owner == tc->tag) {
		/* Our own block, but the cache is full: to the depot. */
		count_release(tc->c, d->cls, cap);
		count_retained(tc->c, -(int64_t)cap);
		pthread_mutex_lock(&g.lock);
		scratch__depot_put(id);
		pthread_mutex_unlock(&g.lock);
		errno = saved;
		return 0;
	}
	/* before the push: then the owner may lease it again at once */
	scratch__segment_block_freed(id, is_tc(tc) ? tc->tid : scratch__os_gettid());
	scratch__remote_free(tc, id, cap);
	if (is_tc(tc)) {
		scratch__seq_begin(&tc->c->seq);
		SCRATCH__ADD(&tc->c->frees, 1);
		SCRATCH__ADD(&scratch__cls(tc->c)->frees[CLS(cls)], 1);
		SCRATCH__ADD(&tc->c->remote_out, 1);
		scratch__seq_end(&tc->c->seq);
		check_thread(tc->c);
	} else {
		pthread_mutex_lock(&g.lock);
		proc_begin();
		SCRATCH__ADD(&g.proc->exited.frees, 1);
		SCRATCH__ADD(&g.pcls->exited.frees[CLS(cls)], 1);
		SCRATCH__ADD(&g.proc->exited.remote_out, 1);
		proc_end();
		pthread_mutex_unlock(&g.lock);
	}
	errno = saved;
	return 0;
}

/* Release the lent block id: into the calling thread's bin when it owns
 * the block and the bin has room, else by the slow path. As on the hit
 * path, the push is inside the sequence bracket and the gate (a cache_count
 * of 0) is read first; the stamp is the frees count, the cache's clock.
 * Returns 0, and so do its slow paths: scratch_release returns what they
 * return, so that they are tail calls there too and its fast path needs
 * no stack frame (two instructions a pair). */
static inline int release_block(uint32_t id)
{
	struct tcache *tc = scratch__tls_tc;
	struct blk *d = &g.blk[id];

	if (likely(d->owner == tc->tag)) {
		struct scratch__counters *c = tc->c;
		uintptr_t cls = d->cls;
		struct bin *b = &tc->bins[cls];
		uint64_t cap = tc->cap[cls];
		uint32_t limit;

		scratch__seq_begin(&c->seq);
		/* The class's free is counted first, while cls is in a register
		 * (later it costs a spill), and taken back when the slow path
		 * releases the block after all; readers see neither inside the
		 * bracket. */
		SCRATCH__ADD(SCRATCH__CLS_AT(scratch__cls(c), frees, cls), 1);
		__asm__ volatile("" : : : "memory");
		limit = __atomic_load_n(&g.cache_limit, __ATOMIC_ACQUIRE);
		__asm__ volatile("" : : : "memory");
		if (likely(b->count < limit && tc->cached_bytes + cap <= g.cache_bytes)) {
			uint32_t h = b->head;

			d->state = BLK_CACHED;
			if (unlikely(id < h))
				return release_sorted(tc, id);
			d->next = h;
			b->head = id;
			release_pushed(tc, c, b, d, cap);
			return 0;
		}
		SCRATCH__SUB(SCRATCH__CLS_AT(scratch__cls(c), frees, cls), 1);
		scratch__seq_end(&c->seq);
	}
	return release_slow(tc, id);
}

int scratch_release(void *p)
{
	uint32_t id = lent_block(p);

	if (id == 0)
		return -EINVAL;
	return release_block(id);
}

/* The shim calls this only for a pointer in the region it learned from
 * scratch_region(), after the set-up that wrote g.base: a plain load, which
 * the compiler folds into the subtraction (an atomic one it does not). */
void scratch__shim_release(void *p)
{
	uint32_t id = lent_at((uintptr_t)p - g.base);

	if (likely(id != 0))
		release_block(id);
}

/* A block that realloc outgrew: a growing buffer passes through class after
 * class, and caching each block it leaves would hold several times the
 * buffer in idle memory. Its pages go back now (its address stays with
 * the class); another thread's block takes the usual way. */
void scratch__shim_release_cold(void *p)
{
	uint32_t id = lent_at((uintptr_t)p - __atomic_load_n(&g.base, __ATOMIC_RELAXED));
	struct tcache *tc = scratch__tls_tc;
	uint64_t cap;
	int saved = errno;

	if (id == 0)
		return;
	if (g.blk[id].owner & OWNER_TAIL)
		scratch__tail_release(tc, id);
	if (!is_tc(tc) || g.blk[id].owner != tc->tag) {
		release_block(id);
		return;
	}
	cap = g.cls_size[g.blk[id].cls];
	count_release(tc->c, g.blk[id].cls, cap);
	count_retained(tc->c, -(int64_t)cap);
	pthread_mutex_lock(&g.lock);
	scratch__block_empty(id);
	pthread_mutex_unlock(&g.lock);
	errno = saved;
}

size_t scratch__shim_move(void *to, void *from)
{
	uint32_t s = lent_block(from), d = lent_block(to);
	struct blk *src;
	uint64_t moved, room;

	if (s == 0 || d == 0 || g.blk[s].cls >= g.blk[d].cls ||
	    g.cls_size[g.blk[s].cls] < HUGE_SIZE || scratch__pages_locked())
		return 0;
	src = &g.blk[s];
	/* no further than its holder may have written (a limited lease) */
	room = g.cls_size[g.blk[d].cls] < blk_usable(src) ? g.cls_size[g.blk[d].cls]
	                                                  : blk_usable(src);
	moved = scratch__block_move(src, &g.blk[d], 0, room & ~(HUGE_SIZE - 1));
	if (moved == 0)
		return 0;
	if (src->ext <= moved)
		src->ext = 0; /* what it was written with has gone */
	count_bytes(offsetof(struct scratch__counters, moved_bytes), moved);
	return moved;
}

bool scratch__shim_keeps(void *p, size_t n)
{
	uint32_t id = lent_block(p);
	struct tcache *tc = scratch__tls_tc;
	struct blk *d;

	if (id == 0 || n < g.min || n - g.min > g.span || g.blk[id].cls > fit_top(n))
		return false;
	d = &g.blk[id];
	if (n > g.cls_size[d->cls])
		return false;
	if (n > blk_usable(d)) {
		/* a limited lease growing within its block (a buffer grown by
		 * realloc from a small start): its own thread lifts the limit,
		 * as a new lease of n would have had none */
		if (!is_tc(tc) || (d->owner & ~OWNER_TAIL) != tc->tag)
			return false;
		scratch__tail_release(tc, id);
	}
	if (d->ext < n)
		d->ext = n; /* what this lease may write: fits_better() */
	return true;
}

void *scratch__shim_grow(void *p, size_t cap, size_t n, size_t *ret_moved)
{
	void *q;

	scratch__tls_prefix = cap & ~(HUGE_SIZE - 1);
	q = scratch__shim_acquire(n);
	scratch__tls_prefix = 0;
	*ret_moved = q != NULL ? scratch__shim_move(q, p) : 0;
	return q;
}

bool scratch_owns(const void *p)
{
	return lent_block(p) != 0;
}

size_t scratch_usable_size(const void *p)
{
	uint32_t id = lent_block(p);

	return id == 0 ? 0 : blk_usable(&g.blk[id]);
}

size_t scratch_class_size(size_t size)
{
	if (!scratch__init() || size < g.min || size - g.min > g.span)
		return 0;
	return g.cls_size[size_bin(size)];
}

bool scratch_range(size_t *ret_min, size_t *ret_max)
{
	if (!scratch__init())
		return false;
	if (ret_min != NULL)
		*ret_min = g.min;
	if (ret_max != NULL)
		*ret_max = g.min + g.span;
	return true;
}

bool scratch_region(uintptr_t *ret_base, size_t *ret_size)
{
	if (!scratch__init())
		return false;
	if (ret_base != NULL)
		*ret_base = g.base;
	if (ret_size != NULL)
		*ret_size = g.size;
	return true;
}

void scratch_thread_flush(void)
{
	struct tcache *tc = scratch__tls_tc;

	if (!scratch__init())
		return;
	if (is_tc(tc)) {
		scratch__tc_enter(tc);
		scratch__tc_drain_remote(tc);
	}
	pthread_mutex_lock(&g.lock);
	if (is_tc(tc))
		scratch__tc_flush_locked(tc);
	scratch__reap_zombies();
	pthread_mutex_unlock(&g.lock);
	if (is_tc(tc))
		scratch__tc_leave(tc);
}

size_t scratch_trim(void)
{
	struct tcache *tc = scratch__tls_tc;
	uint64_t released;

	if (!scratch__init())
		return 0;
	if (is_tc(tc)) {
		scratch__tc_enter(tc);
		scratch__tc_drain_remote(tc);
	}
	pthread_mutex_lock(&g.lock);
	if (is_tc(tc)) {
		scratch__tc_flush_locked(tc);
		tc->trim_seen = g.trim_epoch + 1;
		scratch__tc_leave(tc);
	}
	/* the caches of threads that ended without their exit hook, too */
	(void)scratch__reclaim_ended_locked(true);
	scratch__reap_zombies();
	released = scratch__depot_trim();
	__atomic_store_n(&g.trim_epoch, g.trim_epoch + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g.lock);
	return released;
}
