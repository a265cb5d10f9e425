/*
 * pool.h - the pools' private types, their shared table and invariants.
 *
 * The pools are a set of files, one mechanism each; docs/design.md tells
 * the policies and why they were chosen. From the top of the calls down:
 *
 *   pool.c         the public entry points and both fast paths (a hit in
 *                  the thread's own bin, a release into it), in one place
 *   pool_stats.c   the public statistics; the debug checks of the
 *                  accounting equations below
 *   pool_fork.c    fork: every mechanism's hook in lock order, wipe-on-fork
 *   pool_slow.c    acquire's slow path: the thread's larger bins, the
 *                  depot, then a new block; the orphan path
 *   pool_lend.c    lending: a miss takes an idle block of another thread
 *   pool_grow.c    growth by doubling, page moves (mremap), shedding
 *   pool_decay.c   decay: its clock, its passes and its thread
 *   pool_tcache.c  thread caches (attach, exit, zombies) and remote frees
 *   pool_gate.c    the gate through which others enter a thread's cache
 *   pool_tail.c    small leases of large blocks: a limited usable size,
 *                  and the pages past it given back once the lease lasts;
 *                  the list of such leases, which also holds the probes
 *   pool_dense.c   whether a thread writes its leases' new pages whole:
 *                  populated at the lease, or a probe measured at its end
 *   pool_region.c  the region: carving, empty lists, the depot per node
 *   pool_init.c    configuration and set-up, which the others call first
 *
 * A file calls only those below it (pool_init.c aside, which sets the
 * others up), through the scratch__ names declared at the end of this
 * header; the inlines here are the ones the fast paths, or several
 * files' slow paths, need without a call.
 *
 * All pool blocks are carved from one reserved region of address space, so
 * "is this pointer ours" is a range check plus one read of our own start
 * table: O(1), and foreign memory is never read. Blocks carry no header;
 * their metadata lives in a descriptor array indexed by block id.
 *
 *   region = [small part: blocks < 2 MiB, page aligned]
 *            [large part: blocks >= 2 MiB, 2 MiB aligned; MADV_HUGEPAGE
 *             with thp:true]
 *
 * Size classes: four per power of two, so a class is at most 25% above the
 * smallest request it serves; untouched tail pages are never faulted.
 */
#ifndef SCRATCH_POOL_H
#define SCRATCH_POOL_H

#include <pthread.h>

#include "debug.h"
#include "internal.h"

#define PAGE_SHIFT  12
#define PAGE_SIZE   (UINT64_C(1) << PAGE_SHIFT)
#define HUGE_SIZE   (UINT64_C(2) << 20)
#define NBINS       144                 /* global class indices up to 64 GiB (4 per power of two) */
#define GATE_BIT    (UINT32_C(1) << 31) /* in trim_epoch while a decay pass is in the caches */
#define DECAY_MARKS 8
#define STAMP_MS    (UINT64_C(1) << 63) /* a cached block's stamp is a time (see tc_cut) */
/* In a leased block's owner: a limited lease (pool_tail.c); tags below it */
#define OWNER_TAIL 0x8000u
#define TAIL_SLOTS 8 /* limited leases a thread keeps track of */

/* n bytes rounded up to whole pages */
static inline uint64_t page_up(uint64_t n)
{
	return (n + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
}

#define DEPOT_NODES 64 /* per_node: node ids below this get depot lists of their own */

/*
 * A block is in exactly one place at a time:
 *   LEASED  - lent to the program;
 *   CACHED  - in its owner thread's bin (private, no lock);
 *   REMOTE  - on its owner's lock-free remote-free list (freed elsewhere);
 *   DEPOT   - in the process-wide depot (under the pool lock), no owner;
 *             with per_node, on the list of the node its pages sit on;
 *   EMPTY   - pages returned to the OS, address kept for reuse by its class
 *             (in its class's empty list, or on a decay pass's private list
 *             while the pass returns its pages).
 * A block keeps its class for life (reclass aside): it goes back to its own
 * bin.
 */
enum blk_state { BLK_NONE, BLK_LEASED, BLK_CACHED, BLK_REMOTE, BLK_DEPOT, BLK_EMPTY };
enum tc_state { TC_FREE, TC_LIVE, TC_ZOMBIE, TC_FORKED };
enum g_state { ST_NONE, ST_READY, ST_OFF };

/* Block descriptor: 32 bytes, never inside the user's pages. */
struct blk {
	uint32_t next;  /* link in a bin, the depot, an empty or a remote list */
	uint32_t pgoff; /* page offset of the block in the region */
	uint16_t owner; /* thread slot + 1 of the owning cache; 0: none */
	uint8_t cls;
	uint8_t state;
	uint8_t fresh; /* pages read as zero (never written since carve/decommit) */
	/* A block below 2 MiB that pages were ever moved into (its start is a
	 * mapping of its own): counted once against SMALL_MOVE_BLOCKS
	 * (pool_grow.c). An address's property, as mv. */
	uint8_t moved_in;
	/* 2 MiB units at the block's start that are one mapping of their own:
	 * pages moved in (scratch__block_move); 0 when none ever were. An address's
	 * property, kept while the block empties and refills. */
	uint16_t mv;
	/* When it went idle: CACHED, its owner's frees count at the release
	 * (the cache's clock, see decay marks), or STAMP_MS | the monotonic
	 * ms of a remote drain into the bins; DEPOT, the monotonic ms of the
	 * put. A depot list is newest first, a bin in descending id order
	 * (bin_link). */
	uint64_t stamp;
	/* Bytes from the start that a lease may have written since the pages
	 * were last fresh: the largest request a slow path lent it (a
	 * fast-path hit stays within it: a longer request of its own class
	 * takes the slow path, which populates the pages past it). 0 when
	 * fresh. */
	uint64_t ext;
};
_Static_assert(sizeof(struct blk) == 32, "a power of two: one shift indexes the table");

/* A decay pass's note of a cache's clock: its frees count at time ms. */
struct decay_mark {
	uint64_t ms, frees;
};

struct bin {
	uint32_t head;
	uint32_t count;
};

/* One thread's cache. Bins and cached_bytes are private to the thread;
 * remote_head is pushed by others (CAS) and taken whole by the owner. */
struct tcache {
	struct bin bins[NBINS];
	/* g.cls_size, where the fast paths reach it from the tcache pointer
	 * they hold: one instruction, not two (rip-relative addressing takes
	 * no index) */
	uint64_t cap[NBINS];
	uint64_t cached_bytes;
	struct scratch__counters *c; /* in the segment, or &own */
	uint32_t index;
	uint32_t tag; /* index + 1: the owner value of its blocks */
	uint32_t trim_seen;
	pid_t tid;
	uint8_t state;
	bool reclaiming;    /* scratch__reclaim_ended_locked is flushing it (g.lock may drop) */
	uint32_t in_remote; /* its thread is inside remote_free (see fork_gate) */
	uint32_t busy;      /* its thread is in a slow path that touches the bins (pool_gate.c) */
	uint32_t last_miss, prev_miss; /* classes of its last two growths, 0: none */
	uint32_t nmiss;                /* its misses so far */
	/* Bytes of pages its cache hits have written past their blocks' pages
	 * and old idle blocks have not yet given back (scratch__lease_shed) */
	uint64_t owed;
	uint32_t miss_seq[NBINS]; /* per request class: nmiss at its last miss, 0: none */
	/* per request class, a bit: its last miss carved for a set (pool_grow.c) */
	uint64_t set_miss[(NBINS + 63) / 64];
	/* per_node: its thread's node + 1 at its last slow path; 0: none yet */
	uint32_t node1;
	uint32_t slow_calls;
	/* pool_tail.c: its limited leases, each with its usable size (from)
	 * and its count of slow-path leases at the lease; and its probes
	 * (pool_dense.c: probe 1 + zeroed, the new pages [from, to), and
	 * spec, the bytes populated before from while not yet seen written) */
	struct {
		uint32_t id;
		uint8_t probe;
		uint64_t from, to, at, spec;
	} tails[TAIL_SLOTS];
	uint32_t ntails;
	uint64_t slow_leases; /* slow-path leases so far */
	/* pool_dense.c, per kind (plain, zeroed) and band: its leases' new
	 * pages were written whole; that was measured. Leases that the
	 * verdicts populated or probed so far. */
	uint32_t dense[2], dense_known[2];
	uint32_t dense_leases;
	/* pool_dense.c: bytes its probes populated but for their windows
	 * (scratch__dense_speculate), of live probes not seen written yet,
	 * and of probes that ended without their windows written */
	uint64_t spec_live, spec_unwritten;
	uint32_t nmarks;                      /* marks taken; the decay pass's alone */
	struct decay_mark marks[DECAY_MARKS]; /* the newest DECAY_MARKS of them */
	uint32_t remote_head __attribute__((aligned(SCRATCH_CACHELINE)));
	struct scratch__thread_counters own;
};

/*
 * Accounting (struct scratch__counters, per thread, in the segment; g.proc
 * for the rest), exact whenever no call is in flight (a decay pass counts
 * as one):
 *   thread.retained = retained - decayed_bytes
 *                   = capacities of blocks it owns (CACHED + REMOTE + LEASED)
 *   thread.leased   = leased - remote_in_bytes  (remote frees are credited
 *                     by the freeing thread with one atomic add; a decay
 *                     pass credits the blocks it takes out of a cache the
 *                     same way, in decayed_bytes)
 *   total.retained  = sum(thread.retained) + depot_bytes + orphan_retained
 *   total.leased    = sum(thread.leased) + orphan_leased
 *   live_blocks     = blocks not EMPTY
 * Byte figures are block capacities, whatever the request: a 40 MiB request
 * served by a 64 MiB block leases 64 MiB. Orphans are blocks lent to
 * threads without a cache (exited, or beyond max_threads); exited threads'
 * counters are folded into proc->exited. pool_stats.c checks these in
 * debug builds (SCRATCH_ASSERT).
 *
 * Locking: the fast paths (a cache hit, a release into the owner's cache)
 * take no lock and make no system call. g.lock guards the depot, the empty
 * lists, carving, thread slots, proc counters and the gate; a decay pass
 * holds its own lock from start to end (fork waits for it). Order:
 * the init lock (pool_init.c), the decay lock (pool_decay.c), g.lock;
 * pool_fork.c takes them in that order.
 */
struct scratch__pool {
	int state; /* enum g_state: pool_init.c's, read by fork */
	struct scratch__conf conf;
	/* read on the fast paths */
	uintptr_t base;
	uint64_t size; /* 0 until setup() publishes it last: gates the release paths */
	/* Requests in [min, min + span] are pooled. Before the setup, span is
	 * 0 and min 16 KiB, a size with a valid class: it misses in the sentinel
	 * cache and initialises on the slow path. */
	uint64_t min, span;
	uint64_t cache_bytes;
	uint32_t cache_limit; /* cache_count, or 0 while the gate is up: the release path's */
	uint64_t max_fit;
	unsigned cls_base;
	uint32_t trim_epoch; /* GATE_BIT set while the gate is up */
	uint32_t gate;
	struct blk *blk;
	uint32_t *starttab;
	uint64_t cls_size[NBINS];
	/* under lock */
	pthread_mutex_t lock;
	unsigned nbins;
	uint32_t nblk;        /* ids handed out: 1 + the blocks carved */
	uint64_t live_blocks; /* blocks not EMPTY: the decay thread parks at 0 */
	unsigned nodes;       /* depot lists per class: the node span with per_node, else 1 */
	uint32_t depot_head[DEPOT_NODES][NBINS];
	uint32_t empty_head[NBINS];
	struct tcache *tcs;
	uint32_t ntcs, tcs_used; /* capacity, high-water mark */
	struct scratch__proc_counters *proc;
	struct scratch__proc_classes *pcls; /* per class: live blocks, folded counters */
	uint64_t born_ms; /* monotonic at setup: the decay thread waits a period */
	/* The process locks its memory (scratch__pages_locked): set for good */
	bool locked;
	/* thp_dense in force: the system gives huge pages where asked, thp is
	 * off, and the large part is marked for none but while a lease written
	 * whole is populated (pool.c, populate_lease). Set at layout. */
	bool huge_dense;
	/* A carve made a block live while carve_waiting: the decay thread
	 * parks on this futex word while no block is live. */
	uint32_t carve_wake;
	bool carve_waiting; /* under lock */
};

/* The pools' one table, defined in pool.c. Its symbol carries the
 * library's internal prefix, as every name shared between files does
 * (libscratch is also linked statically, into hosts with names of their
 * own); the pool files call it g. */
extern struct scratch__pool scratch__pool SCRATCH_HIDDEN;
#define g scratch__pool

/* The calling thread's cache (pool_tcache.c): a sentinel until its first
 * slow path. */
extern __thread struct tcache *scratch__tls_tc SCRATCH_HIDDEN
        __attribute__((tls_model("initial-exec")));

/*
 * Sentinel caches, never attached to a thread: scratch__tls_tc points at TC_NONE until
 * the thread first reaches a slow path, at TC_DEAD once it exited or found
 * no slot left (the orphan path serves it then). Their bins are empty and
 * their tag matches no block's owner (a 16-bit value), so the fast paths
 * need no test of their own: the sentinels fall through to the slow paths,
 * which tell them apart from real caches.
 */
extern struct tcache scratch__tc_none SCRATCH_HIDDEN, scratch__tc_dead SCRATCH_HIDDEN;
extern struct scratch__thread_counters scratch__sentinel_counters SCRATCH_HIDDEN;
#define TC_NONE   (&scratch__tc_none)
#define TC_DEAD   (&scratch__tc_dead)
#define is_tc(tc) ((tc) != TC_NONE && (tc) != TC_DEAD)

/* Is this slot a live thread's cache that no reclaim is flushing: one whose
 * blocks another thread's scan may look at (decay passes, lending, fork)?
 * A racy read outside g.lock, only good for choosing. */
static inline bool tc_in_use(const struct tcache *tc)
{
	return tc->state == TC_LIVE && !tc->reclaiming;
}

/* ---------------------------------------------------------------------- */
/* Size classes                                                            */
/* ---------------------------------------------------------------------- */

/* Global class index of a request: 4 classes per power of two. size must
 * be >= 16 KiB (conf guarantees min_size >= 16 KiB). */
static inline unsigned class_index(uint64_t size)
{
	uint64_t x = size - 1;
	/* 63 ^ clz is the bit index of the top bit: one bsr on x86-64 */
	unsigned msb = 63u ^ (unsigned)__builtin_clzll(x);

	return (msb << 2) + (unsigned)((x >> (msb - 2)) & 3);
}

static inline uint64_t class_capacity(unsigned gidx)
{
	unsigned msb = gidx >> 2, sub = gidx & 3;

	return (uint64_t)(5 + sub) << (msb - 2);
}

static inline uintptr_t blk_addr(const struct blk *d)
{
	return g.base + ((uintptr_t)d->pgoff << PAGE_SHIFT);
}

/* The bytes of leased block d its holder may use: its capacity, or the
 * usable size of a limited lease (pool_tail.c), kept in next. */
static inline uint64_t blk_usable(const struct blk *d)
{
	return (d->owner & OWNER_TAIL) ? (uint64_t)d->next << PAGE_SHIFT : g.cls_size[d->cls];
}

/* Bins, the depot and the class table are indexed by the global class
 * index, so the fast path needs no offset. */
static inline unsigned size_bin(uint64_t size)
{
	return class_index(size);
}

/* The first class of 2 MiB or more. */
#define HUGE_BIN class_index(HUGE_SIZE)

/* Slot of global class index cls in the per-class arrays. */
#define CLS(cls) ((cls)-SCRATCH__CLS_FIRST)

/* The highest class whose blocks a request of size may take: capacity at
 * most max_fit times the request (jemalloc bounds its extent reuse the same
 * way, opt_lg_extent_max_active_fit), so a small request never pins a
 * large block. Below size's own class when max_fit leaves it none above. */
static inline unsigned fit_top(uint64_t size)
{
	const unsigned top = g.cls_base + g.nbins - 1;
	uint64_t lim;
	unsigned b;

	if (__builtin_mul_overflow(size, g.max_fit, &lim) || lim >= g.cls_size[top])
		return top;
	b = class_index(lim); /* the smallest class that holds lim */
	return g.cls_size[b] > lim ? b - 1 : b;
}

/* Is idle block a a better one than b (not 0) for a request of size? One
 * whose extent covers the request (no new pages) beats one that does not;
 * of two that do, the closer fit, which keeps the blocks with more pages
 * for the requests that need them (hot-first alone lets every block of a
 * random-size live set end up with the pages of its largest request); of
 * two that do not, the one with more pages (fewer new faults); of equal
 * extents, the smaller class, which keeps the larger capacity for the
 * larger requests (taken newest first otherwise, a large block went to a
 * small request and the next large one missed, every token). */
static inline bool fits_better(const struct blk *a, const struct blk *b, uint64_t size)
{
	bool ca = a->ext >= size, cb = b->ext >= size;

	if (ca != cb)
		return ca;
	if (a->ext != b->ext)
		return ca ? a->ext < b->ext : a->ext > b->ext;
	return a->cls < b->cls;
}

/* ---------------------------------------------------------------------- */
/* Bins                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * Link idle block id into bin b at its place in descending id order. A
 * class's blocks go out in that order too (bin_pop), so the n-th of n
 * blocks a thread holds at once is the same block every time they are
 * taken again, whatever order they came back in: a thread that allocates
 * a buffer for each worker, every layer, hands each worker the block it
 * wrote last, whose lines may still sit in that worker's cache (lent most
 * recent first, they swapped workers every layer, a cost bench/decode's
 * steady state shows). The release fast path links a block with an id above the
 * head itself.
 */
static inline void bin_link(struct bin *b, uint32_t id)
{
	uint32_t *link = &b->head;

	while (*link > id)
		link = &g.blk[*link].next;
	g.blk[id].next = *link;
	*link = id;
}

/* Pop the head of tc's bin b (not empty). */
static inline uint32_t bin_pop(struct tcache *tc, unsigned b)
{
	struct bin *bn = &tc->bins[b];
	uint32_t id = bn->head;

	SCRATCH_ASSERT(g.blk[id].state == BLK_CACHED && g.blk[id].cls == b);
	SCRATCH_ASSERT(bn->count > 0 && tc->cached_bytes >= g.cls_size[b]);
	bn->head = g.blk[id].next;
	bn->count--;
	tc->cached_bytes -= g.cls_size[b];
	return id;
}

/* ---------------------------------------------------------------------- */
/* Counter updates (single writer)                                         */
/* ---------------------------------------------------------------------- */

/* The equations above, checked where their writer's bracket closes, in
 * debug builds (pool_stats.c); nothing otherwise. */
SCRATCH_HIDDEN void scratch__check_thread(const struct scratch__counters *c);
SCRATCH_HIDDEN void scratch__check_proc(void);
SCRATCH_HIDDEN void scratch__check_depot(void);

static inline void check_thread(const struct scratch__counters *c)
{
#if defined(SCRATCH_DEBUG)
	scratch__check_thread(c);
#else
	(void)c;
#endif
}

static inline void check_proc(void)
{
#if defined(SCRATCH_DEBUG)
	scratch__check_proc();
#endif
}

static inline void check_depot(void)
{
#if defined(SCRATCH_DEBUG)
	scratch__check_depot();
#endif
}

/* A lease of a block of capacity cap, counted under which (hits,
 * depot_hits or misses), inside a sequence bracket the caller holds. */
static inline void count_lease_in(struct scratch__counters *c, uint64_t cap, uint64_t *which)
{
	uint64_t l;

	SCRATCH__ADD(&c->allocs, 1);
	SCRATCH__ADD(which, 1);
	l = c->leased + cap;
	SCRATCH__STORE(&c->leased, l);
	/* leased (reported) <= l, so only a gross value above the peak can
	 * set a new one: the common case costs one compare. */
	if (unlikely(l > c->peak_leased)) {
		l -= __atomic_load_n(&c->remote_in_bytes, __ATOMIC_RELAXED);
		if (l > c->peak_leased)
			SCRATCH__STORE(&c->peak_leased, l);
	}
}

/* A release by c's thread of a block of class cls and capacity cap (0: not
 * its lease, an orphan's). */
static inline void count_release(struct scratch__counters *c, unsigned cls, uint64_t cap)
{
	scratch__seq_begin(&c->seq);
	SCRATCH__ADD(&c->frees, 1);
	SCRATCH__ADD(&scratch__cls(c)->frees[cls - SCRATCH__CLS_FIRST], 1);
	SCRATCH__SUB(&c->leased, cap);
	scratch__seq_end(&c->seq);
	check_thread(c);
}

static inline void count_retained(struct scratch__counters *c, int64_t delta)
{
	scratch__seq_begin(&c->seq);
	SCRATCH__STORE(&c->retained, c->retained + (uint64_t)delta);
	scratch__seq_end(&c->seq);
	check_thread(c);
}

static inline void proc_begin(void)
{
	scratch__seq_begin(&g.proc->seq);
}

static inline void proc_end(void)
{
	scratch__seq_end(&g.proc->seq);
	check_proc();
}

/* Under g.lock: blocks of class cls not EMPTY went up (or down) by n. */
static inline void count_live(unsigned cls, int64_t n)
{
	proc_begin();
	SCRATCH__ADD(&g.pcls->live[CLS(cls)], (uint64_t)n);
	proc_end();
}

/* ---------------------------------------------------------------------- */
/* Names shared between the pool files, by the file that defines them.     */
/* Functions with a symbol carry the scratch__ prefix (and are hidden);     */
/* the inlines above have no symbol and keep short names.                   */
/* ---------------------------------------------------------------------- */

/* pool_slow.c: a block for a pooled request that missed the fast path;
 * *ret_fresh (when not NULL) says whether its pages read as zero, and
 * *ret_ext (when not NULL) how many bytes from its start an earlier lease
 * is known to have written (struct blk's ext before this lease: past it,
 * the pages were never written since they were last fresh; a fast-path
 * hit stays within it). NULL with errno
 * ERANGE (not a pooled size) or ENOMEM. */
SCRATCH_HIDDEN SCRATCH_COLD void *scratch__acquire_slow(uint64_t size, bool *ret_fresh,
                                                        uint64_t *ret_ext);

/* pool_tail.c: limit tc's lease of block id, of size, when it uses at
 * most a quarter of the pages the block's leases wrote (after the block's
 * owner is set, before its ext takes the request); count a slow-path
 * lease and give back the pages past the limited leases that outlived
 * enough of them (tc busy, remote frees drained); the holder's slow
 * release of a limited lease, or another thread's (tc may be a sentinel),
 * before anything else reads the block's owner; a block drained from tc's
 * remote frees. */
SCRATCH_HIDDEN void scratch__tail_mark(struct tcache *tc, uint32_t id, uint64_t size);
SCRATCH_HIDDEN void scratch__tail_check(struct tcache *tc);
SCRATCH_HIDDEN void scratch__tail_release(struct tcache *tc, uint32_t id);
SCRATCH_HIDDEN void scratch__tail_forget(struct tcache *tc, uint32_t id);
/* pool_tail.c: watch tc's lease of block id, whose pages [from, to) are
 * new (zeroed: a zeroed lease), until it ends, then measure them
 * (scratch__dense_measure); spec: the bytes before from that the caller
 * is to populate (a probe of its window alone, pool_dense.c), counted in
 * tc's spec_live until the window is seen written. False, and nothing
 * watched, when tc's list is full. Right after the lease, before the
 * caller has the block. */
SCRATCH_HIDDEN bool scratch__tail_probe(struct tcache *tc, uint32_t id, bool zeroed, uint64_t from,
                                        uint64_t to, uint64_t spec);

/* pool_dense.c: should tc populate the new pages of a lease of size (of
 * its zeroed kind or not) rather than probe them? */
SCRATCH_HIDDEN bool scratch__dense_populate(struct tcache *tc, bool zeroed, uint64_t size);
/* pool_dense.c: may a probe of a lease of size (of its zeroed kind or
 * not) have bytes of its new pages populated, all but its last
 * PROBE_WINDOW bytes, which alone it then measures? */
#define PROBE_WINDOW (UINT64_C(128) << PAGE_SHIFT)
SCRATCH_HIDDEN bool scratch__dense_speculate(const struct tcache *tc, bool zeroed, uint64_t size,
                                             uint64_t bytes);
/* pool_dense.c: the probe of block id, whose pages [from, size) were new
 * (page aligned from), has ended or lasted: count the pages it touched,
 * and set the verdict of its kind and band. Returns 1 written whole, 0
 * not, -1 unknown (no verdict). */
SCRATCH_HIDDEN int scratch__dense_measure(struct tcache *tc, uint32_t id, bool zeroed,
                                          uint64_t from, uint64_t size);
/* pool_dense.c: the probe of block id (as above) is still leased: if its
 * new pages are written whole already, its band is dense, and true. A
 * probe without spec (populated bytes to account for) is not read when
 * its band is known dense already: false. */
SCRATCH_HIDDEN bool scratch__dense_peek(struct tcache *tc, uint32_t id, bool zeroed, uint64_t from,
                                        uint64_t size, bool spec);

/* pool_fork.c has no names of its own; the hooks it calls, in lock order: */
SCRATCH_HIDDEN void scratch__init_prefork(void);
SCRATCH_HIDDEN void scratch__init_postfork(void);
SCRATCH_HIDDEN void scratch__decay_prefork(void);
SCRATCH_HIDDEN void scratch__decay_postfork(bool child);
SCRATCH_HIDDEN void scratch__tcache_prefork(struct tcache *self);
SCRATCH_HIDDEN void scratch__tcache_postfork(bool child);
SCRATCH_HIDDEN void scratch__tcache_postfork_slots(struct tcache *self);
SCRATCH_HIDDEN void scratch__gate_postfork_child(void);

/* pool_lend.c */
SCRATCH_HIDDEN bool scratch__lend_to_depot(struct tcache *self, uint64_t size, unsigned bin);

/* pool_grow.c */
extern __thread uint64_t scratch__tls_prefix SCRATCH_HIDDEN
        __attribute__((tls_model("initial-exec")));
SCRATCH_HIDDEN bool scratch__grow_setup(void);
SCRATCH_HIDDEN bool scratch__pages_locked(void);
SCRATCH_HIDDEN uint64_t scratch__block_move(struct blk *src, struct blk *dst, uint64_t off,
                                            uint64_t room);
SCRATCH_HIDDEN unsigned scratch__growth_class(struct tcache *tc, uint64_t size, unsigned bin);
SCRATCH_HIDDEN void scratch__lease_shed(struct tcache *tc, unsigned cls, uint64_t size,
                                        uint64_t ext);
SCRATCH_HIDDEN void scratch__carve_shed(struct tcache *tc, unsigned bin, uint64_t lease,
                                        uint64_t bytes);
SCRATCH_HIDDEN uint64_t scratch__carve_move(struct tcache *tc, unsigned bin, uint64_t size,
                                            uint32_t dst, uint64_t *ret_moved);

/* pool_decay.c */
SCRATCH_HIDDEN void scratch__decay_slow_event(struct tcache *tc);

/* pool_tcache.c */
SCRATCH_HIDDEN SCRATCH_COLD struct tcache *scratch__tc_attach(void);
SCRATCH_HIDDEN void scratch__tcache_boot(void);
SCRATCH_HIDDEN void scratch__tc_flush_locked(struct tcache *tc);
SCRATCH_HIDDEN uint32_t scratch__remote_take(struct tcache *tc);
SCRATCH_HIDDEN void scratch__tc_drain_remote(struct tcache *tc);
SCRATCH_HIDDEN void scratch__remote_free(struct tcache *me, uint32_t id, uint64_t cap);
SCRATCH_HIDDEN void scratch__reap_zombies(void);
SCRATCH_HIDDEN void scratch__reap_if_dirty(void);
SCRATCH_HIDDEN bool scratch__reclaim_ended_locked(bool now);

/* The calling thread's cache, attached at its first slow path: TC_DEAD
 * when no slot is left, TC_NONE when the pools are off. */
static inline struct tcache *tc_get(void)
{
	struct tcache *tc = scratch__tls_tc;

	if (likely(tc != TC_NONE))
		return tc;
	if (!scratch__init())
		return TC_NONE;
	tc = scratch__tc_attach();
	scratch__tls_tc = tc;
	return tc;
}

/* pool_gate.c */
SCRATCH_HIDDEN void scratch__gate_raise(void);
SCRATCH_HIDDEN void scratch__gate_lower(void);
SCRATCH_HIDDEN void scratch__gate_wait(void);
SCRATCH_HIDDEN bool scratch__gate_may_enter(void);
SCRATCH_HIDDEN void scratch__tc_enter(struct tcache *tc);
SCRATCH_HIDDEN void scratch__tc_leave(struct tcache *tc);
SCRATCH_HIDDEN bool scratch__tc_outside(struct tcache *tc);

/* pool_region.c (all under g.lock) */
SCRATCH_HIDDEN bool scratch__region_layout(uint64_t size);
SCRATCH_HIDDEN uint32_t scratch__carve(unsigned bin);
SCRATCH_HIDDEN unsigned scratch__here_node(void);
SCRATCH_HIDDEN void scratch__depot_put(uint32_t id);
SCRATCH_HIDDEN uint32_t scratch__depot_take_fit(uint64_t size, unsigned bin, unsigned node,
                                                unsigned *ret_bin);
/* Node's depot block of class bin, out of the depot (still BLK_DEPOT), or
 * 0 when its list is empty. */
SCRATCH_HIDDEN uint32_t scratch__depot_take(unsigned node, unsigned bin);
SCRATCH_HIDDEN uint64_t scratch__depot_trim(void);
SCRATCH_HIDDEN uint64_t scratch__depot_shed(unsigned node, unsigned start, unsigned end,
                                            uint64_t bytes);
SCRATCH_HIDDEN uint64_t scratch__depot_shed_old(unsigned node, unsigned start, unsigned end,
                                                uint64_t before_ms, uint64_t *owed);
SCRATCH_HIDDEN void scratch__block_emptied(struct blk *d, bool kept);
SCRATCH_HIDDEN void scratch__block_empty_from(uint32_t id, uint64_t from);
SCRATCH_HIDDEN void scratch__block_empty(uint32_t id);

#endif /* SCRATCH_POOL_H */
