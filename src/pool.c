/*
 * pool.c - thread-local scratch pools.
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
 *
 * Reuse is hot-first. A request takes the head of its own class's bin (the
 * fast path): a bin is kept in block order (bin_link), so the n-th of the
 * blocks of one class a thread holds at once is the same block each time,
 * whatever order they came back in (a thread allocating for its workers
 * gives each the block it wrote last). Failing that, on the slow path, an idle block of its
 * thread's cache among the larger classes it may take (at most max_fit
 * times the request, 64 by default): of those whose pages already cover
 * the request (a block's extent, the largest request a slow path lent it
 * since its pages were last returned), the closest fit, else the one with
 * the most pages; equal ones, the smaller class. Then the depot's own
 * class or its larger ones, the one put last; only then a new block. So the
 * memory a thread touched a moment ago serves its next request of any
 * size, and the blocks with many pages stay for the requests that need
 * them. A miss that continues a climb (the thread's last two growths rose
 * to just below it, within 4x) carves twice the request: a buffer that
 * grows every token costs one new block per doubling. A new block starts
 * with the pages of the thread's idle blocks below its class, moved
 * (carve_move: mremap, not faulted again), and returns the pages of those
 * left beyond 1/8 of what the thread has leased (carve_shed), so growth
 * leaves no trail of resident idle blocks. A block keeps its class for
 * life (reclass aside): it goes back to its own bin.
 *
 * A block is in exactly one place at a time:
 *   LEASED  - lent to the program;
 *   CACHED  - in its owner thread's bin (private, no lock);
 *   REMOTE  - on its owner's lock-free remote-free list (freed elsewhere);
 *   DEPOT   - in the process-wide depot (under the pool lock), no owner;
 *             with per_node, on the list of the node its pages sit on;
 *   EMPTY   - pages returned to the OS, address kept for reuse by its class
 *             (in its class's empty list, or on a decay pass's private list
 *             while the pass returns its pages).
 *
 * Accounting (struct scratch__counters, per thread; proc counters for the
 * rest), exact whenever no call is in flight (a decay pass counts as one):
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
 * counters are folded into proc->exited.
 *
 * Nodes (per_node, in force where the cpuset spans two NUMA nodes or
 * more): the depot keeps a list per node and class, and files a block
 * under the node most of its pages sit on (a vote of a few pages, read
 * with move_pages(2), which never faults one in); a thread takes only
 * its own node's blocks (getcpu through the vDSO) or new ones, whose
 * pages it faults where it runs. A thread's cache checks its node on
 * each slow-path acquire; once its thread has moved, its idle blocks go
 * to the depot (to the node they sit on) and it refills where it is now.
 * The fast paths read no node, so a thread whose every request hits its
 * own bin would not notice; the decay thread's passes look for those
 * (tc_evict_moved): a thread whose affinity no longer holds a CPU of its
 * cache's node loses its idle blocks to the depot, and its next request
 * misses. With one node there is one list and none of this runs.
 *
 * Decay: an idle block's pages go back to the OS once it has been idle for
 * decay_ms (10 s by default, jemalloc's dirty_decay_ms); its address and
 * class stay, in its class's empty list, and it comes back fresh (zero, so
 * calloc writes nothing). The fast paths read no clock: a cached block's
 * stamp is its owner's frees count, and decay passes note those counts
 * with the time (see decay_period_ms); a block another thread freed is
 * stamped with the time of its drain, a slow path's. A host that goes quiet after a burst
 * makes no call at all, so passes run on a helper thread ("scratch-decay"),
 * started at the first slow-path acquire once the pools have lived one
 * decay period (at most 1 s; a shorter process never needs a pass, and
 * the many short programs that run under the shim get no thread): a check
 * on other threads' slow paths or on pass-through calls never comes in a
 * parked process. The
 * thread blocks every signal, uses no pool of its own, parks on a futex
 * when no block is live, and does not survive fork (a child starts its own
 * at its first slow-path acquire). With decay_thread:false, passes ride
 * on slow-path acquires instead (every 16th of a thread's reads the
 * clock). A pass enters other threads' caches through the gate
 * (gate_raise), which costs the fast paths no fence.
 *
 * Locking: the fast paths (a cache hit, a release into the owner's cache)
 * take no lock and make no system call. The pool lock guards the depot,
 * the empty lists, carving, thread slots, proc counters and the gate; a
 * decay pass holds dk.lock from start to end (fork waits for it). Order:
 * init_lock, dk.lock, g.lock.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"
#include "segment.h" /* the reasons the pools may be off */
#include "shim.h"

#define PAGE_SHIFT    12
#define PAGE_SIZE     (UINT64_C(1) << PAGE_SHIFT)
#define HUGE_SIZE     (UINT64_C(2) << 20)
#define NBINS         144 /* global class indices up to 64 GiB (4 per power of two) */
#define GATE_BIT      (UINT32_C(1) << 31) /* in trim_epoch while a decay pass is in the caches */
#define DECAY_MARKS   8
#define GROWTH_WINDOW 8 /* classes: a miss this close above the last is a growth (4x) */
#define STAMP_MS      (UINT64_C(1) << 63) /* a cached block's stamp is a time (see tc_cut) */

#define DEPOT_NODES 64 /* per_node: node ids below this get depot lists of their own */
#define NODE_VOTES  8  /* pages of a block read for its node */
#define CPU_WORDS   16 /* per_node: the decay thread knows the nodes of CPUs below 1024 */

enum blk_state { BLK_NONE, BLK_LEASED, BLK_CACHED, BLK_REMOTE, BLK_DEPOT, BLK_EMPTY };
enum tc_state { TC_FREE, TC_LIVE, TC_ZOMBIE, TC_FORKED };
enum g_state { ST_NONE, ST_READY, ST_OFF };

/* Block descriptor: 16 bytes, never inside the user's pages. */
struct blk {
	uint32_t next;  /* link in a bin, the depot, an empty or a remote list */
	uint32_t pgoff; /* page offset of the block in the region */
	uint16_t owner; /* thread slot + 1 of the owning cache; 0: none */
	uint8_t cls;
	uint8_t state;
	uint8_t fresh; /* pages read as zero (never written since carve/decommit) */
	uint8_t pad;
	/* 2 MiB units at the block's start that are one mapping of their own:
	 * pages moved in (block_move); 0 when none ever were. An address's
	 * property, kept while the block empties and refills. */
	uint16_t mv;
	/* When it went idle: CACHED, its owner's frees count at the release
	 * (the cache's clock, see decay marks), or STAMP_MS | the monotonic
	 * ms of a remote drain into the bins; DEPOT, the monotonic ms of the
	 * put. A depot list is newest first, a bin in descending id order
	 * (bin_link). */
	uint64_t stamp;
	/* Bytes from the start that a lease may have written since the pages
	 * were last fresh: the largest request a slow path lent it (a fast-path
	 * hit, a request of its own class, is not recorded). 0 when fresh. */
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
	bool reclaiming;    /* reclaim_ended_locked is flushing it (g.lock may drop) */
	uint32_t in_remote; /* its thread is inside remote_free (see fork_gate) */
	uint32_t busy;      /* its thread is in a slow path that touches the bins (see gate) */
	uint32_t last_miss, prev_miss; /* classes of its last two growths, 0: none */
	/* per_node: its thread's node + 1 at its last slow path; 0: none yet */
	uint32_t node1;
	uint32_t slow_calls;
	uint32_t nmarks;                      /* marks taken; the decay pass's alone */
	struct decay_mark marks[DECAY_MARKS]; /* the newest DECAY_MARKS of them */
	uint32_t remote_head __attribute__((aligned(SCRATCH_CACHELINE)));
	struct scratch__thread_counters own;
};

/*
 * Sentinel caches, never attached to a thread: tls_tc points at tc_none until
 * the thread first reaches a slow path, at tc_dead once it exited or found
 * no slot left (the orphan path serves it then). Their bins are empty and
 * their tag matches no block's owner (a 16-bit value), so the fast paths
 * need no test of their own: the sentinels fall through to the slow paths,
 * which tell them apart from real caches.
 */
static struct scratch__thread_counters sentinel_counters; /* written, never read */
static struct tcache tc_none = {.tag = UINT32_MAX, .c = &sentinel_counters.c};
static struct tcache tc_dead = {.tag = UINT32_MAX, .c = &sentinel_counters.c};
#define TC_NONE   (&tc_none)
#define TC_DEAD   (&tc_dead)
#define is_tc(tc) ((tc) != TC_NONE && (tc) != TC_DEAD)

/* Is this slot a live thread's cache that no reclaim is flushing: one whose
 * blocks another thread's scan may look at (decay passes, lending, fork)?
 * A racy read outside g.lock, only good for choosing. */
static inline bool tc_in_use(const struct tcache *tc)
{
	return tc->state == TC_LIVE && !tc->reclaiming;
}

static struct {
	int state;
	struct scratch__conf conf;
	/* read on the fast paths */
	uintptr_t base;
	uint64_t size; /* 0 until setup() publishes it last: gates the release paths */
	/* Requests in [min, min + span] are pooled. Before the setup, span is
	 * 0 and min 16 KiB, a size with a valid class: it misses in the sentinel
	 * cache and initialises on the slow path. */
	uint64_t min, span;
	uint64_t cache_count, cache_bytes;
	uint32_t cache_limit; /* cache_count, or 0 while the gate is up: the release path's */
	uint64_t max_fit;
	unsigned cls_base;
	unsigned huge_bin;   /* the first class of 2 MiB or more */
	uint32_t trim_epoch; /* GATE_BIT set while the gate is up */
	uint32_t gate;
	struct blk *blk;
	uint32_t *starttab;
	uint64_t cls_size[NBINS];
	/* under lock */
	pthread_mutex_t lock;
	unsigned nbins;
	uintptr_t small_cur, small_end, large_cur, large_end;
	uint32_t nblk, maxblk;
	uint64_t live_blocks; /* blocks not EMPTY: the decay thread parks at 0 */
	unsigned nodes;       /* depot lists per class: the node span with per_node, else 1 */
	uint32_t depot_head[DEPOT_NODES][NBINS];
	uint32_t empty_head[NBINS];
	struct tcache *tcs;
	uint32_t ntcs, tcs_used; /* capacity, high-water mark */
	int zombies;             /* slots in TC_ZOMBIE state */
	int zombie_dirty;        /* a remote free went to a zombie */
	struct scratch__proc_counters *proc;
	struct scratch__proc_counters proc_own;
	struct scratch__proc_classes *pcls; /* per class: live blocks, folded counters */
	struct scratch__proc_classes pcls_own;
	pthread_key_t key;
	bool key_ok;
	uint64_t born_ms; /* monotonic at setup: the decay thread waits a period */
	/* block_move: the kernel moves no pages (before Linux 5.7, or refused),
	 * or moves them only within one mapping (before 6.17) */
	bool move_off, move_one_map;
	/* The process locks its memory (see pages_locked()): set for good */
	bool locked;
	void *lock_probe; /* a page of its own, mapped with the region */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .min = UINT64_C(16) << 10};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread struct tcache *tls_tc __attribute__((tls_model("initial-exec"))) = TC_NONE;
static __thread int tls_in_init __attribute__((tls_model("initial-exec")));
static __thread int tls_exit_rounds __attribute__((tls_model("initial-exec")));
/* scratch__shim_grow: the bytes at the start of the block being acquired
 * that the caller fills (carve_move moves idle pages in after them) */
static __thread uint64_t tls_prefix __attribute__((tls_model("initial-exec")));

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

/* ---------------------------------------------------------------------- */
/* Counter updates (single writer)                                         */
/* ---------------------------------------------------------------------- */

static inline void check_thread(const struct scratch__counters *c);

/* count_lease() inside a sequence bracket the caller holds. */
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

static inline void count_lease(struct scratch__counters *c, uint64_t cap, uint64_t *which)
{
	scratch__seq_begin(&c->seq);
	count_lease_in(c, cap, which);
	scratch__seq_end(&c->seq);
	check_thread(c);
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

static void count_retained(struct scratch__counters *c, int64_t delta)
{
	scratch__seq_begin(&c->seq);
	SCRATCH__STORE(&c->retained, c->retained + (uint64_t)delta);
	scratch__seq_end(&c->seq);
	check_thread(c);
}

void scratch__counters_read(const struct scratch__counters *c, struct scratch__counters *ret)
{
	uint64_t s1, s2;
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)ret;
	size_t n = sizeof(*c) / sizeof(uint64_t);

	for (int tries = 0;; tries++) {
		s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		for (size_t i = 0; i < n; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		SCRATCH__FENCE_ACQUIRE();
		s2 = SCRATCH__SEQ_LOAD(&c->seq);
		/* A writer that died mid-update (a thread lost to fork) leaves
		 * seq odd forever: after enough tries, take what is there. */
		if ((s1 == s2 && (s1 & 1) == 0) || tries > 1000)
			return;
	}
}

static void proc_begin(void)
{
	scratch__seq_begin(&g.proc->seq);
}

static void check_proc(void);

static void proc_end(void)
{
	scratch__seq_end(&g.proc->seq);
	check_proc();
}

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

/* The thread equations of the file header, checked by c's writer as its
 * bracket closes: only for the calling thread's own slot (a slot lost to
 * fork may hold a torn update; the sentinels have many writers). Others
 * only add to remote_in_bytes, which lowers leased as reported. */
static void check_thread(const struct scratch__counters *c)
{
	if (c != tls_tc->c || c == &sentinel_counters.c)
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
static void check_proc(void)
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
static void check_depot(void)
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
#else
static inline void check_thread(const struct scratch__counters *c)
{
	(void)c;
}

static inline void check_proc(void)
{
}

static inline void check_depot(void)
{
}
#endif

/* Slot of global class index cls in the per-class arrays. */
#define CLS(cls) ((cls)-SCRATCH__CLS_FIRST)

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

/* Under g.lock: blocks of class cls not EMPTY went up (or down) by n. */
static void count_live(unsigned cls, int64_t n)
{
	proc_begin();
	SCRATCH__ADD(&g.pcls->live[CLS(cls)], (uint64_t)n);
	proc_end();
}

/* ---------------------------------------------------------------------- */
/* Initialisation                                                          */
/* ---------------------------------------------------------------------- */

static void conf_warn(void *ctx, const char *line)
{
	(void)ctx;
	scratch__warn(line);
}

static void tc_destructor(void *arg);

/* Reserve the region, halving the request until the kernel agrees: its
 * size, or 0. Only base is stored: the release fast paths read it, gated by
 * size, which setup() publishes last. */
static uint64_t reserve_region(uint64_t want)
{
	for (uint64_t sz = want; sz >= (UINT64_C(1) << 30); sz /= 2) {
		void *p = scratch__os_reserve(sz, HUGE_SIZE);

		if (p != NULL) {
			__atomic_store_n(&g.base, (uintptr_t)p, __ATOMIC_RELAXED);
			return sz;
		}
	}
	return 0;
}

/* The kernel granted less than reserve: the largest block must still fit
 * the region as the range rules require (max_size <= reserve/4). The
 * segment records it (SCRATCH_SEG_F_LOWERED); verbose:true says it. */
SCRATCH_COLD static void shrink_range(uint64_t size)
{
	char line[160];
	size_t pos = 0;

	g.conf.max_size = size / 4;
	if (g.conf.min_size > g.conf.max_size)
		g.conf.min_size = g.conf.max_size;
	scratch__fmt_str(line, sizeof(line), &pos, "only ");
	scratch__fmt_size(line, sizeof(line), &pos, size);
	scratch__fmt_str(line, sizeof(line), &pos,
	                 " of address space could be reserved, using max_size ");
	scratch__fmt_size(line, sizeof(line), &pos, g.conf.max_size);
	scratch__env_warn(&g.conf, line);
}

/* Pools off for reason (an environmental one): said only under
 * verbose:true, recorded in the segment by the caller. Returns reason. */
SCRATCH_COLD static uint32_t pools_off(uint32_t reason, const char *why)
{
	scratch__env_warn(&g.conf, why);
	return reason;
}

/*
 * Reserve the region within what the environment allows. Returns 0 with
 * its size in *ret_size (max_size lowered to fit it when *ret_lowered), or
 * why the pools cannot run here (enum scratch_seg_pools_off).
 */
static uint32_t region_setup(uint64_t *ret_size, bool *ret_lowered)
{
	uint64_t size = g.conf.reserve, room;

	if (sysconf(_SC_PAGESIZE) != (long)PAGE_SIZE)
		return pools_off(SCRATCH_SEG_OFF_PAGE_SIZE,
		                 "the page size is not 4K: the pools are off");
	room = scratch__os_as_room();
	if (room != UINT64_MAX) {
		/* Under ulimit -v the region takes at most a quarter of what is
		 * left: the rest is the backend's, which serves every size the
		 * pools do not. */
		if (room / 4 < (UINT64_C(1) << 30))
			return pools_off(SCRATCH_SEG_OFF_AS_LIMIT,
			                 "the address space limit (ulimit -v) leaves no room for "
			                 "the pools (1G at least): they are off");
		if (size > room / 4)
			size = room / 4;
	}
	size = reserve_region(size);
	if (size == 0)
		return pools_off(SCRATCH_SEG_OFF_RESERVE,
		                 "not even 1G of address space could be reserved: the pools are "
		                 "off");
	*ret_lowered = g.conf.max_size > size / 4;
	if (*ret_lowered)
		shrink_range(size);
	*ret_size = size;
	return SCRATCH_SEG_POOLS_ON;
}

/* The class table, the region's two parts and the metadata maps for a
 * region of size bytes. False when there is no memory for the maps. */
static bool tables_setup(uint64_t size)
{
	uint64_t small_part, pages;
	unsigned top;

	g.cls_base = class_index(g.conf.min_size);
	top = class_index(g.conf.max_size);
	if (top >= NBINS)
		top = NBINS - 1;
	g.nbins = top - g.cls_base + 1;
	for (unsigned i = g.cls_base; i <= top; i++)
		g.cls_size[i] = class_capacity(i);
	g.huge_bin = class_index(HUGE_SIZE);
	/* Blocks below 2 MiB get a quarter of the space, large ones the rest. */
	small_part = (size / 4) & ~(HUGE_SIZE - 1);
	g.small_cur = g.base;
	g.small_end = g.base + small_part;
	g.large_cur = g.small_end;
	g.large_end = g.base + size;
	if (g.conf.thp)
		scratch__os_hugepage((void *)g.large_cur, g.large_end - g.large_cur, true);
	pages = size >> PAGE_SHIFT;
	g.maxblk = (uint32_t)(size / g.cls_size[g.cls_base] < UINT32_MAX - 1
	                              ? size / g.cls_size[g.cls_base]
	                              : UINT32_MAX - 1);
	g.starttab = scratch__os_map(pages * sizeof(uint32_t));
	g.blk = scratch__os_map(((uint64_t)g.maxblk + 1) * sizeof(struct blk));
	g.ntcs = (uint32_t)g.conf.max_threads;
	g.tcs = scratch__os_map((uint64_t)g.ntcs * sizeof(struct tcache));
	g.lock_probe = scratch__os_map(PAGE_SIZE);
	return g.starttab != NULL && g.blk != NULL && g.tcs != NULL && g.lock_probe != NULL;
}

/* per_node: a depot list per node where the cpuset spans two nodes or
 * more with ids below DEPOT_NODES; else one list, and the key reads false
 * (the configuration in force). */
static void nodes_setup(void)
{
	unsigned count, span;

	g.nodes = 1;
	if (!g.conf.per_node)
		return;
	scratch__os_nodes(&count, &span);
	if (count > 1 && span <= DEPOT_NODES)
		g.nodes = span;
	else if (count > 1)
		scratch__env_warn(&g.conf, "NUMA node ids reach 64: one depot for every node");
	g.conf.per_node = g.nodes > 1;
}

/*
 * Parse the configuration and set the pools up; false leaves them off.
 * A bad SCRATCH_CONF entry is the user's doing and always printed; what
 * the environment imposes is printed only under verbose:true, and when
 * stats are on it is recorded in the segment, which a process whose pools
 * are off for such a reason still gets (enabled:false gets none).
 */
static bool setup(void)
{
	uint64_t size = 0;
	bool lowered = false;
	uint32_t off;

	scratch__conf_defaults(&g.conf);
	scratch__conf_parse(getenv("SCRATCH_CONF"), &g.conf, conf_warn, NULL);
	if (!g.conf.enabled)
		return false;
	off = region_setup(&size, &lowered);
	if (off == SCRATCH_SEG_POOLS_ON && !tables_setup(size))
		off = pools_off(SCRATCH_SEG_OFF_NOMEM,
		                "no memory for the pools' tables: the pools are off");
	if (off != SCRATCH_SEG_POOLS_ON) {
		if (g.conf.stats)
			scratch__segment_open(&g.conf, off, false);
		return false;
	}
	g.nblk = 1; /* id 0 means "none" */
	g.born_ms = scratch__os_monotonic_ms();
	g.key_ok = pthread_key_create(&g.key, tc_destructor) == 0;
	g.cache_count = g.conf.cache_count;
	g.cache_limit = (uint32_t)g.conf.cache_count;
	g.cache_bytes = g.conf.cache_bytes;
	g.max_fit = g.conf.max_fit;
	nodes_setup();
	g.proc = &g.proc_own;
	g.pcls = &g.pcls_own;
	if (g.conf.stats && scratch__segment_open(&g.conf, SCRATCH_SEG_POOLS_ON, lowered) == 0 &&
	    scratch__segment_proc() != NULL) {
		g.proc = scratch__segment_proc();
		if (scratch__segment_proc_classes() != NULL)
			g.pcls = scratch__segment_proc_classes();
	}
	g.proc->region_bytes = size;
	scratch__segment_region(g.base, size);
	/* The gates of the fast paths go last, with release order: threads
	 * that have not synchronised with this setup test them at any time,
	 * and must find the tables behind them. */
	__atomic_store_n(&g.min, g.conf.min_size, __ATOMIC_RELAXED);
	__atomic_store_n(&g.span, g.conf.max_size - g.conf.min_size, __ATOMIC_RELEASE);
	__atomic_store_n(&g.size, size, __ATOMIC_RELEASE);
	return true;
}

SCRATCH_COLD static bool init_slow(void)
{
	int st;

	if (tls_in_init)
		return false; /* re-entered from inside our own initialisation */
	tls_in_init = 1;
	pthread_mutex_lock(&init_lock);
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == ST_NONE)
		__atomic_store_n(&g.state, setup() ? ST_READY : ST_OFF, __ATOMIC_RELEASE);
	st = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&init_lock);
	tls_in_init = 0;
	return st == ST_READY;
}

bool scratch__init(void)
{
	int st = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);

	if (likely(st == ST_READY))
		return true;
	if (st == ST_OFF)
		return false;
	return init_slow();
}

const struct scratch__conf *scratch__conf(void)
{
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == ST_NONE)
		init_slow();
	return &g.conf;
}

/* ---------------------------------------------------------------------- */
/* Region: carving, the depot and empty lists (all under g.lock)           */
/* ---------------------------------------------------------------------- */

static uint64_t depot_trim(void);
static void tc_enter(struct tcache *tc);
static void tc_leave(struct tcache *tc);

/*
 * The region is used up for bin: take an idle block of a larger class in
 * the same part (empty ones first; then the depot is emptied, which makes
 * its blocks empty) and give it to bin, so sizes that change over a
 * process's life do not end in ENOMEM while addresses sit idle. The rest
 * of the block's span is unused while it serves bin. Under g.lock.
 */
SCRATCH_COLD static uint32_t reclass(unsigned bin)
{
	const bool large = g.cls_size[bin] >= HUGE_SIZE;
	const unsigned top = g.cls_base + g.nbins - 1;
	uint64_t cap = g.cls_size[bin];

	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && depot_trim() == 0)
			break;
		for (unsigned b = bin + 1; b <= top; b++) {
			uint32_t id = g.empty_head[b];
			struct blk *d;

			if (id == 0 || (g.cls_size[b] >= HUGE_SIZE) != large)
				continue;
			d = &g.blk[id];
			g.empty_head[b] = d->next;
			d->cls = (uint8_t)bin;
			if (large && g.conf.thp && (cap & (HUGE_SIZE - 1)) != 0)
				scratch__os_hugepage(
				        (void *)(blk_addr(d) + (cap & ~(HUGE_SIZE - 1))), HUGE_SIZE,
				        false);
			return id;
		}
	}
	return 0;
}

/* A new block of bin from the class's empty list, fresh address space or
 * (the region used up) a larger class's idle block; 0 when none is left.
 * Pages are fresh (zero) in every case. */
static uint32_t carve_any(unsigned bin)
{
	uint64_t cap = g.cls_size[bin];
	uintptr_t at;
	uint32_t id = g.empty_head[bin];
	struct blk *d;

	if (id != 0) {
		g.empty_head[bin] = g.blk[id].next;
		return id;
	}
	if (g.nblk > g.maxblk)
		return reclass(bin);
	if (cap >= HUGE_SIZE) {
		uint64_t span = (cap + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);

		if (g.large_end - g.large_cur < span ||
		    !scratch__os_commit((void *)g.large_cur, span))
			return reclass(bin);
		at = g.large_cur;
		g.large_cur += span;
		g.proc->region_used += span;
		/* A capacity that ends inside a huge page (2.5M in a 4M span)
		 * would fault that page whole, nearly twice the bytes used:
		 * the partial one gets small pages. */
		if (g.conf.thp && (cap & (HUGE_SIZE - 1)) != 0)
			scratch__os_hugepage((void *)(at + (cap & ~(HUGE_SIZE - 1))),
			                     span - (cap & ~(HUGE_SIZE - 1)), false);
	} else {
		if (g.small_end - g.small_cur < cap ||
		    !scratch__os_commit((void *)g.small_cur, cap))
			return reclass(bin);
		at = g.small_cur;
		g.small_cur += cap;
		g.proc->region_used += cap;
	}
	id = g.nblk++;
	d = &g.blk[id];
	d->pgoff = (uint32_t)((at - g.base) >> PAGE_SHIFT);
	d->cls = (uint8_t)bin;
	d->fresh = 1;
	d->ext = 0;
	__atomic_store_n(&g.starttab[d->pgoff], id, __ATOMIC_RELEASE);
	return id;
}

static void decay_wake_locked(void);

/* carve_any(), counting the block live (and waking a parked decay thread). */
static uint32_t carve(unsigned bin)
{
	uint32_t id = carve_any(bin);

	if (id != 0) {
		g.live_blocks++;
		count_live(g.blk[id].cls, 1);
		decay_wake_locked();
	}
	return id;
}

static void block_empty(uint32_t id);

/* The depot list of the calling thread's node: its node with per_node,
 * else 0. getcpu goes through the vDSO: no system call. */
static unsigned here_node(void)
{
	int cpu, node;

	if (g.nodes <= 1)
		return 0;
	scratch__os_getcpu(&cpu, &node);
	return node >= 0 && (unsigned)node < g.nodes ? (unsigned)node : 0;
}

/*
 * The depot list for idle block id: with per_node, the node most of its
 * pages sit on, by a vote of NODE_VOTES pages spread over the block (one
 * move_pages(2), which reports and faults nothing in; ties go to the
 * earliest page). Pages not present do not vote; a block with none, or a
 * kernel that will not say, goes to the caller's node.
 */
static unsigned block_node(uint32_t id)
{
	uint64_t pages = g.cls_size[g.blk[id].cls] >> PAGE_SHIFT;
	unsigned char votes[DEPOT_NODES] = {0};
	void *at[NODE_VOTES];
	int st[NODE_VOTES], best = -1;

	if (g.nodes <= 1)
		return 0;
	for (unsigned i = 0; i < NODE_VOTES; i++)
		at[i] = (void *)(blk_addr(&g.blk[id]) + ((pages * i / NODE_VOTES) << PAGE_SHIFT));
	if (!scratch__os_page_nodes(at, NODE_VOTES, st))
		return here_node();
	for (unsigned i = 0; i < NODE_VOTES; i++)
		if (st[i] >= 0 && (unsigned)st[i] < g.nodes)
			votes[st[i]]++;
	for (unsigned i = 0; i < NODE_VOTES; i++)
		if (st[i] >= 0 && (unsigned)st[i] < g.nodes &&
		    (best < 0 || votes[st[i]] > votes[best]))
			best = st[i];
	return best >= 0 ? (unsigned)best : here_node();
}

/* Put an idle block into the depot (its node's list), or when the depot
 * is full return its pages to the OS and keep only the address. Drops
 * g.lock around madvise. */
static void depot_put(uint32_t id)
{
	struct blk *d = &g.blk[id];
	unsigned bin = d->cls;
	uint64_t cap = g.cls_size[bin];

	SCRATCH_ASSERT(d->state == BLK_LEASED || d->state == BLK_CACHED || d->state == BLK_REMOTE);
	d->owner = 0;
	if (g.proc->depot_bytes + cap <= g.conf.depot_bytes) {
		uint32_t *head = &g.depot_head[block_node(id)][bin];

		d->state = BLK_DEPOT;
		scratch__segment_block_state(id, SCRATCH_SEG_BLK_DEPOT);
		d->stamp = scratch__os_monotonic_ms(); /* the decay clock of the depot */
		d->next = *head;
		*head = id;
		proc_begin();
		SCRATCH__ADD(&g.proc->depot_bytes, cap);
		SCRATCH__ADD(&g.proc->depot_blocks, 1);
		proc_end();
		return;
	}
	block_empty(id);
}

/* Give an idle block's pages from byte from on back to the OS (those
 * before it were moved away: block_move) and keep its address for its
 * class. Drops g.lock around madvise. */
/* An idle block's pages went back (!kept): it reads as zero, and no lease
 * has written it; or the kernel kept them (locked memory): it holds what
 * its last lease wrote, anywhere in its capacity. */
static void block_emptied(struct blk *d, bool kept)
{
	d->fresh = !kept;
	d->ext = kept ? g.cls_size[d->cls] : 0;
	if (kept)
		__atomic_store_n(&g.locked, true, __ATOMIC_RELAXED);
}

/*
 * Does the process lock its memory? Then pages do not move: a move
 * (MREMAP_DONTUNMAP) leaves its source range unlocked, so what a later
 * lease faults there would escape the host's mlockall. Nor do idle blocks
 * go back early (carve_shed): the kernel keeps locked pages. Known from a
 * page the kernel refused to take back (block_emptied) or, before each
 * move, from a probe page mapped with the region: mlockall(MCL_CURRENT)
 * locks both, and so does MCL_FUTURE from before the pools started (one
 * madvise beside the move's mremap). MCL_FUTURE alone, later, leaves the
 * region unlocked, and moves harmless. Kept once known.
 */
static bool pages_locked(void)
{
	if (__atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return true;
	if (!scratch__os_locked(g.lock_probe))
		return false;
	__atomic_store_n(&g.locked, true, __ATOMIC_RELAXED);
	return true;
}

static void block_empty_from(uint32_t id, uint64_t from)
{
	struct blk *d = &g.blk[id];
	unsigned bin = d->cls;
	uint64_t cap = g.cls_size[bin];
	bool kept = false;

	SCRATCH_ASSERT(d->state == BLK_LEASED || d->state == BLK_CACHED || d->state == BLK_REMOTE);
	SCRATCH_ASSERT(from <= cap);
	d->owner = 0;
	d->state = BLK_EMPTY;
	scratch__segment_block_state(id, SCRATCH_SEG_BLK_EMPTY);
	if (from < cap) {
		pthread_mutex_unlock(&g.lock);
		kept = !scratch__os_decommit((void *)(blk_addr(d) + from), cap - from);
		pthread_mutex_lock(&g.lock);
	}
	block_emptied(d, kept);
	d->next = g.empty_head[bin];
	g.empty_head[bin] = id;
	g.live_blocks--;
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, kept ? 0 : cap - from);
	SCRATCH__SUB(&g.pcls->live[CLS(bin)], 1);
	proc_end();
}

static void block_empty(uint32_t id)
{
	block_empty_from(id, 0);
}

/*
 * Move the pages of idle block src into block dst, which has a larger
 * class, at byte off of it, at most room bytes (both multiples of 2 MiB):
 * a 2 MiB page moves as one page-table entry, in microseconds, where
 * faulting it again costs milliseconds on some machines. src's range
 * stays mapped and empty. Only src's 2 MiB-aligned part moves (its pages
 * beyond, if any, are the caller's to return). Returns the bytes moved, 0
 * when the kernel would not (nothing moved). Both blocks are the caller's
 * alone (src out of its cache, dst just carved); g.lock is not held.
 *
 * Every moved range becomes a mapping of its own, which the kernel never
 * merges with its neighbours (they are not contiguous in its offsets), and
 * kernels before 6.17 move only within one mapping. So a block remembers
 * the mapping at its start that pages were moved into (mv); a block with
 * none lies within one mapping up to its last whole huge page (a 2.5 MiB
 * block's partial one has its own: carve_any). Where the kernel refuses a
 * range across mappings, only src's first mapping moves, from then on.
 */
static uint64_t block_move(struct blk *src, struct blk *dst, uint64_t off, uint64_t room)
{
	uint64_t len = g.cls_size[src->cls] & ~(HUGE_SIZE - 1);
	uint64_t mv = (uint64_t)src->mv * HUGE_SIZE;
	void *from = (void *)blk_addr(src), *to = (void *)(blk_addr(dst) + off);
	int err;

	if (len > room)
		len = room;
	if (__atomic_load_n(&g.move_one_map, __ATOMIC_RELAXED) && mv != 0 && mv < len)
		len = mv;
	if (len == 0)
		return 0;
	err = scratch__os_move_pages(from, to, len);
	if (err == -EFAULT && mv != 0 && mv < len) {
		__atomic_store_n(&g.move_one_map, true, __ATOMIC_RELAXED);
		len = mv;
		err = scratch__os_move_pages(from, to, len);
	}
	if (err == -EINVAL || err == -EPERM || err == -ENOSYS)
		__atomic_store_n(&g.move_off, true, __ATOMIC_RELAXED);
	if (err != 0)
		return 0;
	/* dst's first mapping: this range, or the one before it, which ends here */
	if (off == 0 || (uint64_t)dst->mv * HUGE_SIZE > off)
		dst->mv = (uint16_t)((off == 0 ? len : off) / HUGE_SIZE);
	dst->fresh = 0;
	return len;
}

/* The highest class whose blocks a request of size may take: capacity at
 * most max_fit times the request (jemalloc bounds its extent reuse the same
 * way, opt_lg_extent_max_active_fit), so a small request never pins a
 * large block. Below size's own class when max_fit leaves it none above. */
static unsigned fit_top(uint64_t size)
{
	const unsigned top = g.cls_base + g.nbins - 1;
	uint64_t lim;
	unsigned b;

	if (__builtin_mul_overflow(size, g.max_fit, &lim) || lim >= g.cls_size[top])
		return top;
	b = class_index(lim); /* the smallest class that holds lim */
	return g.cls_size[b] > lim ? b - 1 : b;
}

static uint32_t depot_take(unsigned node, unsigned bin);

/* A depot block of node's list for a request of size (class bin): its own
 * class, else the most recently put one of a larger class within the fit
 * bound. Sets *ret_bin to the block's class. Under g.lock. */
static uint32_t depot_take_fit(uint64_t size, unsigned bin, unsigned node, unsigned *ret_bin)
{
	unsigned top, best = 0;
	uint64_t stamp = 0;

	*ret_bin = bin;
	if (g.depot_head[node][bin] != 0)
		return depot_take(node, bin);
	top = fit_top(size);
	for (unsigned b = bin + 1; b <= top; b++) {
		uint32_t id = g.depot_head[node][b];

		if (id != 0 && (best == 0 || g.blk[id].stamp > stamp)) {
			best = b;
			stamp = g.blk[id].stamp;
		}
	}
	if (best == 0)
		return 0;
	*ret_bin = best;
	return depot_take(node, best);
}

static uint32_t depot_take(unsigned node, unsigned bin)
{
	uint32_t id = g.depot_head[node][bin];

	if (id == 0)
		return 0;
	SCRATCH_ASSERT(g.blk[id].state == BLK_DEPOT && g.blk[id].cls == bin);
	g.depot_head[node][bin] = g.blk[id].next;
	proc_begin();
	SCRATCH__SUB(&g.proc->depot_bytes, g.cls_size[bin]);
	SCRATCH__SUB(&g.proc->depot_blocks, 1);
	proc_end();
	return id;
}

/* Return every depot block's pages to the OS. Returns bytes released. */
static uint64_t depot_trim(void)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < g.nodes * g.nbins; i++) {
		unsigned bin = g.cls_base + i % g.nbins;
		uint32_t id;

		while ((id = depot_take(i / g.nbins, bin)) != 0) {
			struct blk *d = &g.blk[id];

			bool kept = !scratch__os_decommit((void *)blk_addr(d), g.cls_size[bin]);

			d->state = BLK_EMPTY;
			scratch__segment_block_state(id, SCRATCH_SEG_BLK_EMPTY);
			block_emptied(d, kept);
			d->next = g.empty_head[bin];
			g.empty_head[bin] = id;
			g.live_blocks--;
			count_live(bin, -1);
			total += kept ? 0 : g.cls_size[bin];
		}
	}
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, total);
	proc_end();
	return total;
}

/* ---------------------------------------------------------------------- */
/* Thread caches                                                           */
/* ---------------------------------------------------------------------- */

/*
 * Link idle block id into bin b at its place in descending id order. A
 * class's blocks go out in that order too (bin_pop), so the n-th of n
 * blocks a thread holds at once is the same block every time they are
 * taken again, whatever order they came back in: a thread that allocates
 * a buffer for each worker, every layer, hands each worker the block it
 * wrote last, whose lines may still sit in that worker's cache (lent most
 * recent first, they swapped workers every layer: 6-8% of a decode loop's
 * steady state). The release fast path links a block with an id above the
 * head itself.
 */
static void bin_link(struct bin *b, uint32_t id)
{
	uint32_t *link = &b->head;

	while (*link > id)
		link = &g.blk[*link].next;
	g.blk[id].next = *link;
	*link = id;
}

/* Move a cache's blocks (all bins) to the depot; the caller holds g.lock
 * and is the only writer of tc (its thread, or tc is a zombie). */
static void tc_flush_locked(struct tcache *tc)
{
	uint64_t moved = 0;

	for (unsigned bin = g.cls_base; bin < g.cls_base + g.nbins; bin++) {
		struct bin *b = &tc->bins[bin];

		while (b->head != 0) {
			uint32_t id = b->head;

			b->head = g.blk[id].next;
			b->count--;
			moved += g.cls_size[bin];
			depot_put(id);
		}
	}
	SCRATCH_ASSERT(tc->cached_bytes == moved); /* the bins held what it said */
	tc->cached_bytes = 0;
	if (moved != 0)
		count_retained(tc->c, -(int64_t)moved);
}

/* Take the whole remote-free list: blocks other threads freed to us. */
static uint32_t remote_take(struct tcache *tc)
{
	if (__atomic_load_n(&tc->remote_head, __ATOMIC_RELAXED) == 0)
		return 0;
	return __atomic_exchange_n(&tc->remote_head, 0, __ATOMIC_ACQUIRE);
}

/* Drain remote frees into the owner's bins while the limits allow, stamped
 * with the time (see tc_cut); the rest goes to the depot. Called by the
 * owner thread, without g.lock. */
static void tc_drain_remote(struct tcache *tc)
{
	uint32_t id = remote_take(tc), next;
	uint64_t evicted = 0, now = 0;
	bool locked = false;

	for (; id != 0; id = next) {
		struct blk *d = &g.blk[id];
		struct bin *b = &tc->bins[d->cls];
		uint64_t cap = g.cls_size[d->cls];

		next = d->next;
		SCRATCH_ASSERT(d->state == BLK_REMOTE && d->owner == tc->tag);
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
		depot_put(id);
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
static void reap_zombies(void)
{
	__atomic_store_n(&g.zombie_dirty, 0, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < g.tcs_used && g.zombies > 0; i++) {
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
			depot_put(id);
		}
		if (back != 0)
			count_retained(z->c, -(int64_t)back);
		if (z->state == TC_ZOMBIE && z->c->leased == rib &&
		    z->c->retained == __atomic_load_n(&z->c->decayed_bytes, __ATOMIC_RELAXED)) {
			tc_fold(z);
			g.zombies--;
		}
	}
}

/*
 * The table is full, or scratch_trim asks (now): turn the live slots of
 * threads that have ended into zombies, as their destructor would have. A thread whose first pool call
 * comes late in its exit (from another key's destructor, in glibc's second
 * round or later) gets a slot whose destructor is called fewer than the
 * three times it waits for, so nothing else tears it down. The thread is
 * gone, so nothing touches its cache but us, under g.lock; blocks freed
 * to it later come back through the zombie's remote list. A scan costs a
 * syscall per slot: one that finds nothing makes the next 1, 2, 4, ...
 * 1024 full-table attaches skip it, so a process with more live threads
 * than slots does not pay it for every new thread. Returns true if any
 * slot was reclaimed. Under g.lock.
 */
static bool reclaim_ended_locked(bool now)
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
		tc_flush_locked(tc);
		__atomic_store_n(&tc->state, TC_ZOMBIE, __ATOMIC_RELAXED);
		g.zombies++;
		scratch__segment_thread_exit(tc->index);
		any = true;
	}
	if (any) {
		backoff = 0;
		reap_zombies();
	} else {
		backoff = backoff == 0 ? 1 : backoff < 1024 ? backoff * 2 : 1024;
		skip = backoff;
	}
	return any;
}

/* Give the calling thread a cache slot; TC_DEAD when none is left. */
SCRATCH_COLD static struct tcache *tc_attach(void)
{
	struct tcache *tc = NULL;
	struct scratch__counters *c;
	pid_t tid = scratch__os_gettid();

	pthread_mutex_lock(&g.lock);
	for (int pass = 0; pass < 3 && tc == NULL; pass++) {
		if (pass == 1 && g.zombies > 0)
			reap_zombies();
		if (pass == 2 && !reclaim_ended_locked(false))
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
	if (g.key_ok)
		pthread_setspecific(g.key, tc);
	return tc;
}

/* Thread exit: flush the cache to the depot; the slot stays a zombie until
 * every block it owns has come back. Runs as late as the destructor rounds
 * allow, so other destructors that free pool blocks still find a cache. */
static void tc_destructor(void *arg)
{
	struct tcache *tc = arg;

	if (++tls_exit_rounds < 3) {
		pthread_setspecific(g.key, tc);
		return;
	}
	tc_enter(tc);
	tc_drain_remote(tc);
	pthread_mutex_lock(&g.lock);
	tls_tc = TC_DEAD;
	tc_flush_locked(tc);
	tc_leave(tc); /* under g.lock, and a zombie below: no pass comes in */
	/* Seq_cst, as remote_free's push and state load: either the reap
	 * below sees a block pushed now, or its freer sees the zombie and
	 * asks for a reap (zombie_dirty). */
	__atomic_store_n(&tc->state, TC_ZOMBIE, __ATOMIC_SEQ_CST);
	g.zombies++;
	scratch__segment_thread_exit(tc->index);
	reap_zombies();
	pthread_mutex_unlock(&g.lock);
}

static inline struct tcache *tc_get(void)
{
	struct tcache *tc = tls_tc;

	if (likely(tc != TC_NONE))
		return tc;
	if (!scratch__init())
		return TC_NONE;
	tc = tc_attach();
	tls_tc = tc;
	return tc;
}

/* ---------------------------------------------------------------------- */
/* The gate and decay                                                      */
/* ---------------------------------------------------------------------- */

/*
 * A decay pass takes idle blocks out of thread caches, which are private to
 * their threads and written with plain stores, while those threads may be
 * parked for good. The exclusion is asymmetric, so the fast paths pay no
 * fence: a thread marks itself inside its bins (its counters' seq odd on
 * the fast paths, which hold the whole pop or push in that bracket; busy on
 * the slow paths) and only then reads the gate (trim_epoch's GATE_BIT on
 * acquire, a cache_count of 0 on release, g.gate on the slow paths). The
 * pass raises the gate under g.lock, issues membarrier(2), which makes
 * every thread's earlier stores visible, and enters only the caches whose
 * thread it then sees outside. Either the thread read the gate (it takes
 * its slow path, which waits on g.lock), or the pass saw it inside (and
 * leaves that cache to the next pass). Without membarrier (an old kernel,
 * a seccomp filter) passes only take the depot's blocks, and each thread's
 * own slow path takes care of its cache.
 */
static void gate_raise(void)
{
	__atomic_store_n(&g.gate, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g.trim_epoch, g.trim_epoch | GATE_BIT, __ATOMIC_RELAXED);
	__atomic_store_n(&g.cache_limit, 0, __ATOMIC_RELAXED);
}

static void gate_lower(void)
{
	__atomic_store_n(&g.cache_limit, (uint32_t)g.conf.cache_count, __ATOMIC_RELEASE);
	__atomic_store_n(&g.trim_epoch, g.trim_epoch & ~GATE_BIT, __ATOMIC_RELEASE);
	__atomic_store_n(&g.gate, 0, __ATOMIC_RELEASE);
}

/* Enter a slow path that touches tc's bins (its own thread, without
 * g.lock): raise busy, then read the gate; while it is up, wait for the
 * pass on g.lock. */
static void tc_enter(struct tcache *tc)
{
	for (;;) {
		__atomic_store_n(&tc->busy, 1, __ATOMIC_RELAXED);
		__asm__ volatile("" : : : "memory");
		if (!__atomic_load_n(&g.gate, __ATOMIC_ACQUIRE))
			return;
		__atomic_store_n(&tc->busy, 0, __ATOMIC_RELEASE);
		pthread_mutex_lock(&g.lock);
		pthread_mutex_unlock(&g.lock);
	}
}

static void tc_leave(struct tcache *tc)
{
	__atomic_store_n(&tc->busy, 0, __ATOMIC_RELEASE);
}

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
	uint32_t id = remote_take(tc), next;
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
		block_emptied(d, !d->fresh);
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

static struct {
	pthread_mutex_t lock; /* held by a pass from start to end (fork waits on it) */
	uint32_t state;       /* DK_NONE, DK_RUNNING, DK_INLINE */
	uint32_t wake;        /* futex word: a carve wakes a parked thread */
	bool parked;          /* under g.lock */
	int barrier;          /* membarrier registered: 0 unknown, 1 yes, -1 no */
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

/* Under g.lock: a new live block wakes a parked decay thread. */
static void decay_wake_locked(void)
{
	if (!dk.parked)
		return;
	dk.parked = false;
	__atomic_fetch_add(&dk.wake, 1, __ATOMIC_RELEASE);
	scratch__os_futex_wake(&dk.wake, 1);
}

/* May this pass enter the caches of other threads (see gate_raise)? */
static bool decay_may_enter(void)
{
#if defined(SCRATCH__TSAN)
	return false; /* ThreadSanitizer cannot see membarrier's ordering */
#else
	if (dk.barrier == 0)
		dk.barrier = scratch__os_membarrier_register() ? 1 : -1;
	return dk.barrier > 0;
#endif
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

static uint32_t bin_pop(struct tcache *tc, unsigned b);

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
				depot_put(id); /* room: no madvise, g.lock kept */
			else
				list_push(list, id);
		}
	if (out != 0)
		__atomic_fetch_add(&tc->c->decayed_bytes, out, __ATOMIC_RELEASE);
}

/* Is tc's thread outside its bins? Read after the membarrier. */
static bool tc_outside(struct tcache *tc)
{
	return (__atomic_load_n(&tc->c->seq, __ATOMIC_ACQUIRE) & 1) == 0 &&
	       !__atomic_load_n(&tc->busy, __ATOMIC_ACQUIRE);
}

/* The caches' part of a pass, under g.lock: self (an inline pass's caller,
 * outside its bins) is entered without the gate. */
static void decay_caches(uint64_t now, struct tcache *self, uint32_t *list)
{
	bool enter = decay_may_enter() && (caches_worth_a_pass(now) || caches_moved());

	if (enter) {
		gate_raise();
		if (!scratch__os_membarrier())
			enter = false;
	}
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (!tc_in_use(tc))
			continue;
		if (tc == self || (enter && tc_outside(tc))) {
			tc_decay(tc, now, list);
			if (tc != self)
				tc_evict_moved(tc, list);
		}
		mark_take(tc, now);
	}
	if (__atomic_load_n(&g.gate, __ATOMIC_RELAXED))
		gate_lower();
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

/* Sleep until the next pass is due, or (nothing live) until a carve. */
static void decay_sleep(uint64_t live)
{
	uint32_t w;

	pthread_mutex_lock(&g.lock);
	w = __atomic_load_n(&dk.wake, __ATOMIC_ACQUIRE);
	if (live == 0 && g.live_blocks == 0)
		dk.parked = true;
	else
		live = 1;
	pthread_mutex_unlock(&g.lock);
	scratch__os_futex_wait(&dk.wake, w, live == 0 ? -1 : (long)(decay_period_ms() * 1000000));
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
 * fault its descriptor, TLS and first frames in there (two faults on
 * bench/decode). Costs a process that never gets the thread 4 pages.
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
static void decay_slow_event(struct tcache *tc)
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

/* ---------------------------------------------------------------------- */
/* Acquire and release                                                     */
/* ---------------------------------------------------------------------- */

/* Bins, the depot and the class table are indexed by the global class
 * index, so the fast path needs no offset. */
static inline unsigned size_bin(uint64_t size)
{
	return class_index(size);
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
	id = depot_take_fit(size, bin, here_node(), &got);
	hit = id != 0;
	if (id == 0)
		id = carve(bin);
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

/* Pop the head of tc's bin b (not empty). */
static uint32_t bin_pop(struct tcache *tc, unsigned b)
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

/* Is idle block a a better one than b (not 0) for a request of size? One
 * whose extent covers the request (no new pages) beats one that does not;
 * of two that do, the closer fit, which keeps the blocks with more pages
 * for the requests that need them (hot-first alone lets every block of a
 * random-size live set end up with the pages of its largest request); of
 * two that do not, the one with more pages (fewer new faults); of equal
 * extents, the smaller class, which keeps the larger capacity for the
 * larger requests (taken newest first otherwise, a large block went to a
 * small request and the next large one missed, every token). */
static bool fits_better(const struct blk *a, const struct blk *b, uint64_t size)
{
	bool ca = a->ext >= size, cb = b->ext >= size;

	if (ca != cb)
		return ca;
	if (a->ext != b->ext)
		return ca ? a->ext < b->ext : a->ext > b->ext;
	return a->cls < b->cls;
}

/*
 * Across classes: of the heads of tc's bins above bin that a request of
 * size may take (fit_top), the best fit (fits_better). A bin's head is the
 * block its own class would take next, so this reads one head per class: at most
 * 4 log2(max_fit) + 4 of them (28 at the default), on the slow path only.
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

/*
 * The class a miss of size (class bin) carves. A thread whose last two
 * growths climbed to just below this one (within 4x) is growing a buffer
 * (attention scores gain a row every token): it gets twice the request,
 * so the buffer grows into one new block per doubling rather than one per
 * class (four). Two steps of evidence, so that a program warming up its
 * two or three sizes keeps exact classes. The tail a block does not use
 * costs address space only: untouched pages are never faulted. Within
 * max_size and the fit bound.
 */
static unsigned growth_class(const struct tcache *tc, uint64_t size, unsigned bin)
{
	unsigned want = bin + 4, top = fit_top(size);

	if (tc->prev_miss == 0 || tc->prev_miss >= tc->last_miss || tc->last_miss >= bin ||
	    bin - tc->prev_miss > GROWTH_WINDOW)
		return bin;
	if (want > g.cls_base + g.nbins - 1)
		want = g.cls_base + g.nbins - 1;
	return want > top ? (top > bin ? top : bin) : want;
}

/*
 * The idle bytes tc gives back when it carves a block of lease bytes with
 * bytes of new pages: what its cache holds beyond 1/8 of what it will
 * have leased, at most bytes. A live set of many blocks whose sizes vary
 * keeps a few idle ones, which serve its next requests without new pages:
 * returning them at every miss only to fault them again cost that host
 * (bench/churn) three quarters of its faults.
 */
static uint64_t shed_bytes(const struct tcache *tc, uint64_t lease, uint64_t bytes)
{
	uint64_t leased =
	        tc->c->leased - __atomic_load_n(&tc->c->remote_in_bytes, __ATOMIC_RELAXED);
	uint64_t keep = (leased + lease) / 8;

	if (tc->cached_bytes <= keep)
		return 0;
	return tc->cached_bytes - keep < bytes ? tc->cached_bytes - keep : bytes;
}

/*
 * A new block of lease bytes for a request of class bin, bytes of it new
 * pages (the rest moved in: carve_move): tc's idle blocks of the classes
 * below could not serve it, and a growing buffer (or a working set that
 * moved up) leaves them behind. The pages of those whose pages cannot move
 * (below 2 MiB, or all where the kernel moves none) go back now, the
 * smallest classes first and up to shed_bytes() of them, so the new pages
 * replace old ones instead of adding to them and no trail of resident idle
 * blocks stays; their addresses stay with their classes. The others stay:
 * the next miss moves their pages, a hit takes them, or they decay. (Shed
 * too, the varying-size decode loop faulted them again: a quarter more
 * faults in all.) Under g.lock (dropped around each madvise); tc is the
 * caller's, busy.
 */
static void carve_shed(struct tcache *tc, unsigned bin, uint64_t lease, uint64_t bytes)
{
	const unsigned end = __atomic_load_n(&g.move_off, __ATOMIC_RELAXED) ? bin : g.huge_bin;
	uint64_t shed = 0;

	if (__atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return; /* nothing would go back */
	bytes = shed_bytes(tc, lease, bytes);
	for (unsigned b = g.cls_base; b < bin && b < end && shed < bytes; b++)
		while (tc->bins[b].head != 0 && shed < bytes) {
			shed += g.cls_size[b];
			block_empty(bin_pop(tc, b));
		}
	if (shed != 0)
		count_retained(tc->c, -(int64_t)shed);
}

/* The class of tc's idle block below bin with the most pages to move
 * that fit in room bytes: the largest extent, the head of each class; 0
 * when none has any. */
static unsigned move_source(const struct tcache *tc, unsigned bin, uint64_t room)
{
	unsigned best = 0;

	for (unsigned b = g.cls_base; b < bin; b++) {
		uint32_t h = tc->bins[b].head;
		uint64_t ext = h != 0 ? g.blk[h].ext : 0;

		if (ext != 0 && g.cls_size[b] >= HUGE_SIZE && ext <= room &&
		    (best == 0 || ext >= g.blk[tc->bins[best].head].ext))
			best = b;
	}
	return best;
}

/*
 * A new block dst for a request of size (class bin) starts with the pages
 * of tc's idle blocks below bin, which could not serve it, the ones with
 * the most pages first, while their pages fit in the request (after the
 * tls_prefix bytes a growing realloc fills): those move (block_move)
 * rather than go back to the OS to be faulted again in dst, and the
 * blocks empty; what did not move goes back. Returns the capacity that left tc's
 * cache, with the bytes moved in *ret_moved. Under g.lock (dropped around
 * each move); tc is the caller's, busy.
 */
static uint64_t carve_move(struct tcache *tc, unsigned bin, uint64_t size, uint32_t dst,
                           uint64_t *ret_moved)
{
	const uint64_t want = (size + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);
	uint64_t off = tls_prefix, out = 0;
	unsigned b;

	*ret_moved = 0;
	if (__atomic_load_n(&g.move_off, __ATOMIC_RELAXED) ||
	    move_source(tc, bin, want - off) == 0 || pages_locked())
		return 0;
	while (off < want && !__atomic_load_n(&g.move_off, __ATOMIC_RELAXED) &&
	       (b = move_source(tc, bin, want - off)) != 0) {
		uint32_t id = bin_pop(tc, b);
		struct blk *src = &g.blk[id];
		uint64_t ext = (src->ext + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1), moved;

		pthread_mutex_unlock(&g.lock);
		moved = block_move(src, &g.blk[dst], off, want - off);
		pthread_mutex_lock(&g.lock);
		block_empty_from(id, moved);
		count_retained(tc->c, -(int64_t)g.cls_size[b]);
		out += g.cls_size[b];
		*ret_moved += moved;
		if (moved == 0)
			break;
		/* the next block's pages go after the ones this block is known
		 * to have had */
		off += moved < ext ? moved : ext;
	}
	if (off > tls_prefix)
		g.blk[dst].ext = off < size ? off : size;
	return out;
}

/* A cache hit on the slow path: of class got, for a request of class bin. */
static uint32_t count_cache_hit(struct tcache *tc, uint32_t id, unsigned got, unsigned bin)
{
	struct scratch__counters *c = tc->c;

	scratch__seq_begin(&c->seq);
	count_lease_in(c, g.cls_size[got], &c->hits);
	if (got != bin)
		SCRATCH__ADD(&c->larger_hits, 1);
	count_class_lease(scratch__cls(c), scratch__cls(c)->hits, bin, got, got != bin);
	scratch__seq_end(&c->seq);
	check_thread(c);
	return id;
}

/*
 * Lending (lend): a request of 2 MiB or more that neither its thread's
 * cache nor the depot can serve would carve a block and fault its pages
 * in. An idle block at the head of a bin of another live thread's cache on
 * the same node, within the fit bound, whose resident pages cover at least
 * half the request, serves it instead: two workers whose sizes vary trade
 * blocks when one draws a size only the other holds, rather than each
 * faulting a block of every size in. The block goes through the depot,
 * where the caller takes it (a depot hit); its owner's retained drops as
 * for a decay pass (decayed_bytes). The other cache is entered as a pass
 * enters it (gate_raise, membarrier, and only while its thread is outside
 * its bins), so the fast paths pay nothing; a miss that finds a candidate
 * pays one membarrier, far less than faulting the pages (below 2 MiB,
 * about the same). Without membarrier (an old kernel, a seccomp filter, a
 * ThreadSanitizer build) nothing is lent. Returns whether a block went to
 * the depot. Under g.lock; self is busy.
 */
#define LEND_MIN HUGE_SIZE /* below, faulting costs about what the gate does */

static bool lend_to_depot(struct tcache *self, uint64_t size, unsigned bin)
{
	const unsigned top = fit_top(size);
	const uint32_t node1 = here_node() + 1;
	struct tcache *from = NULL;
	unsigned from_bin = 0;
	uint32_t best = 0, id;
	bool ok;

	if (!g.conf.lend || size < LEND_MIN || !decay_may_enter())
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
	gate_raise();
	ok = scratch__os_membarrier() && tc_outside(from);
	if (ok) {
		id = from->bins[from_bin].head;
		ok = id != 0 && g.blk[id].ext * 2 >= size &&
		     g.proc->depot_bytes + g.cls_size[from_bin] <= g.conf.depot_bytes;
	}
	if (ok) {
		(void)bin_pop(from, from_bin);
		__atomic_fetch_add(&from->c->decayed_bytes, g.cls_size[from_bin], __ATOMIC_RELEASE);
		depot_put(id); /* room: no madvise, g.lock kept */
	}
	gate_lower();
	return ok;
}

/* The depot or a new block for tc's request of size (class bin): its
 * counters, the growth rule and the trace. Takes g.lock. */
static uint32_t depot_or_carve(struct tcache *tc, uint64_t size, unsigned bin, bool *ret_fresh)
{
	unsigned got, want;
	uint64_t moved = 0;
	uint32_t id;

	pthread_mutex_lock(&g.lock);
	if (__atomic_load_n(&g.zombie_dirty, __ATOMIC_RELAXED))
		reap_zombies();
	id = depot_take_fit(size, bin, here_node(), &got);
	if (id == 0 && lend_to_depot(tc, size, bin))
		id = depot_take_fit(size, bin, here_node(), &got);
	if (id != 0) {
		pthread_mutex_unlock(&g.lock);
		count_retained(tc->c, (int64_t)g.cls_size[got]);
		scratch__seq_begin(&tc->c->seq);
		count_lease_in(tc->c, g.cls_size[got], &tc->c->depot_hits);
		if (got != bin)
			SCRATCH__ADD(&tc->c->larger_hits, 1);
		count_class_lease(scratch__cls(tc->c), scratch__cls(tc->c)->depot_hits, bin, got,
		                  got != bin);
		scratch__seq_end(&tc->c->seq);
		check_thread(tc->c);
		return id;
	}
	want = growth_class(tc, size, bin);
	id = carve(want);
	if (id == 0 && want != bin)
		id = carve(want = bin);
	if (id == 0 && tc->cached_bytes != 0) {
		/* used up: our own idle blocks can serve too, through the depot */
		tc_flush_locked(tc);
		id = carve(want = bin);
	}
	if (id != 0) {
		uint64_t out = carve_move(tc, bin, size, id, &moved);

		if (out < g.cls_size[want])
			carve_shed(tc, bin, g.cls_size[want], g.cls_size[want] - out);
	}
	pthread_mutex_unlock(&g.lock);
	if (id == 0)
		return 0;
	tc->prev_miss = tc->last_miss;
	tc->last_miss = want;
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
 * it refills where it runs now. tc is busy (tc_enter). */
static void tc_follow_node(struct tcache *tc)
{
	uint32_t now = here_node() + 1;

	if (tc->node1 == now)
		return;
	if (tc->node1 != 0 && tc->cached_bytes != 0) {
		pthread_mutex_lock(&g.lock);
		tc_flush_locked(tc);
		pthread_mutex_unlock(&g.lock);
	}
	__atomic_store_n(&tc->node1, now, __ATOMIC_RELAXED); /* a pass reads it (tc_moved) */
}

/* tc's block for a request of size (class bin), in order: its own bin, its
 * larger bins (hot-first), the depot, a new block. tc is busy (tc_enter). */
static uint32_t cache_acquire(struct tcache *tc, uint64_t size, unsigned bin, bool *ret_fresh)
{
	uint32_t epoch = __atomic_load_n(&g.trim_epoch, __ATOMIC_RELAXED) & ~GATE_BIT;
	uint32_t id;

	if (tc->trim_seen != epoch) {
		/* Someone called scratch_trim(): give our idle memory back. */
		tc->trim_seen = epoch;
		tc_drain_remote(tc);
		pthread_mutex_lock(&g.lock);
		tc_flush_locked(tc);
		depot_trim();
		pthread_mutex_unlock(&g.lock);
	}
	tc_drain_remote(tc);
	if (g.nodes > 1)
		tc_follow_node(tc);
	if (tc->bins[bin].head != 0)
		return count_cache_hit(tc, bin_pop(tc, bin), bin, bin);
	id = cache_take_larger(tc, size, bin);
	if (id != 0)
		return count_cache_hit(tc, id, g.blk[id].cls, bin);
	return depot_or_carve(tc, size, bin, ret_fresh);
}

static void decay_slow_event(struct tcache *tc);

SCRATCH_COLD static void *acquire_slow(uint64_t size, bool *ret_fresh)
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
		tc_enter(tc);
		id = cache_acquire(tc, size, bin, &fresh);
		if (id != 0)
			g.blk[id].owner = (uint16_t)tc->tag;
		tc_leave(tc);
		decay_slow_event(tc);
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
	if (d->ext < size)
		d->ext = size; /* what this lease may write: fits_better() */
	if (ret_fresh != NULL)
		*ret_fresh = fresh && d->fresh;
	d->fresh = 0;
	errno = saved;
	return (void *)blk_addr(d);
}

/*
 * The hit path for a pooled size: pop the head of this thread's bin, or
 * (empty bin, a sentinel cache, a trim to honour first, or a decay pass's
 * gate up) return miss(size), a tail call. The whole pop is inside the
 * counters' sequence bracket, and the gate (trim_epoch) is read after the
 * bracket opens: that is what lets a decay pass tell whether this thread
 * is in its bins (see gate_raise). The bin's head and count are written by
 * two scalar stores on purpose: the compiler would otherwise pair them
 * into a vector store, three instructions more.
 */
static inline void *acquire_hit(uint64_t size, void *(*miss)(uint64_t))
{
	struct tcache *tc = tls_tc;
	unsigned bin = size_bin(size);
	struct scratch__counters *c = tc->c;

	scratch__seq_begin(&c->seq);
	__asm__ volatile("" : : : "memory");
	if (likely(__atomic_load_n(&g.trim_epoch, __ATOMIC_ACQUIRE) == tc->trim_seen)) {
		struct bin *b = &tc->bins[bin];
		uint32_t id = b->head;

		if (likely(id != 0)) {
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

static void *acquire_miss(uint64_t size)
{
	return acquire_slow(size, NULL);
}

void *scratch_acquire(size_t size)
{
	uint64_t span = __atomic_load_n(&g.span, __ATOMIC_ACQUIRE);

	if (likely(size - __atomic_load_n(&g.min, __ATOMIC_RELAXED) <= span))
		return acquire_hit(size, acquire_miss);
	return acquire_slow(size, NULL);
}

static scratch__fallback_fn shim_fallback;

void scratch__shim_setup(scratch__fallback_fn fallback)
{
	__atomic_store_n(&shim_fallback, fallback, __ATOMIC_RELEASE);
}

SCRATCH_COLD static void *shim_acquire_slow(uint64_t size)
{
	int saved = errno;
	void *p = acquire_slow(size, NULL);
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

void *scratch_acquire_zeroed(size_t size)
{
	bool fresh = false;
	void *p = acquire_slow(size, &fresh);

	/* Fresh pages already read as zero: writing them would only fault
	 * them in. Recycled blocks hold the previous user's data. */
	if (p != NULL && !fresh)
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
		pthread_mutex_lock(&g.lock); /* until the fork is done */
		pthread_mutex_unlock(&g.lock);
	}
}

/* Push a block onto its owner's remote-free list, then credit the owner.
 * Push-then-credit is what lets reap_zombies() trust remote_in_bytes. */
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
		__atomic_store_n(&g.zombie_dirty, 1, __ATOMIC_RELAXED);
}

static inline void release_block(uint32_t id);

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
 * that the fast path needs no register of its own to keep. */
__attribute__((noinline)) SCRATCH_COLD static void release_sorted(struct tcache *tc, uint32_t id)
{
	struct blk *d = &g.blk[id];
	struct bin *b = &tc->bins[d->cls];

	bin_link(b, id);
	release_pushed(tc, tc->c, b, d, g.cls_size[d->cls]);
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

SCRATCH_COLD static void release_slow(struct tcache *tc, uint32_t id)
{
	struct blk *d = &g.blk[id];
	unsigned cls = d->cls; /* the block may be another's once it is handed back */
	uint64_t cap = g.cls_size[cls];
	int saved = errno;

	if (tc == TC_NONE)
		tc = tc_get(); /* a thread whose first pool call is a free */
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
		depot_put(id);
		pthread_mutex_unlock(&g.lock);
		if (is_tc(tc))
			count_release(tc->c, d->cls, 0);
		errno = saved;
		return;
	}
	if (is_tc(tc) && d->owner == tc->tag && release_gated(tc, d)) {
		/* The cache looked full because a decay pass had the gate up:
		 * wait for it (it holds g.lock) and try again. */
		pthread_mutex_lock(&g.lock);
		pthread_mutex_unlock(&g.lock);
		errno = saved;
		release_block(id);
		return;
	}
	if (is_tc(tc) && d->owner == tc->tag) {
		/* Our own block, but the cache is full: to the depot. */
		count_release(tc->c, d->cls, cap);
		count_retained(tc->c, -(int64_t)cap);
		pthread_mutex_lock(&g.lock);
		depot_put(id);
		pthread_mutex_unlock(&g.lock);
		errno = saved;
		return;
	}
	/* before the push: then the owner may lease it again at once */
	scratch__segment_block_freed(id, is_tc(tc) ? tc->tid : scratch__os_gettid());
	remote_enter(tc);
	remote_free(&g.tcs[d->owner - 1], id, cap);
	remote_leave(tc);
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
}

/* Release the lent block id: into the calling thread's bin when it owns
 * the block and the bin has room, else by the slow path. As on the hit
 * path, the push is inside the sequence bracket and the gate (a cache_count
 * of 0) is read first; the stamp is the frees count, the cache's clock. */
static inline void release_block(uint32_t id)
{
	struct tcache *tc = tls_tc;
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
			if (unlikely(id < h)) {
				release_sorted(tc, id);
				return;
			}
			d->next = h;
			b->head = id;
			release_pushed(tc, c, b, d, cap);
			return;
		}
		SCRATCH__SUB(SCRATCH__CLS_AT(scratch__cls(c), frees, cls), 1);
		scratch__seq_end(&c->seq);
	}
	release_slow(tc, id);
}

int scratch_release(void *p)
{
	uint32_t id = lent_block(p);

	if (id == 0)
		return -EINVAL;
	release_block(id);
	return 0;
}

void scratch__shim_release(void *p)
{
	uint32_t id = lent_at((uintptr_t)p - __atomic_load_n(&g.base, __ATOMIC_RELAXED));

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
	struct tcache *tc = tls_tc;
	uint64_t cap;
	int saved = errno;

	if (id == 0)
		return;
	if (!is_tc(tc) || g.blk[id].owner != tc->tag) {
		release_block(id);
		return;
	}
	cap = g.cls_size[g.blk[id].cls];
	count_release(tc->c, g.blk[id].cls, cap);
	count_retained(tc->c, -(int64_t)cap);
	pthread_mutex_lock(&g.lock);
	block_empty(id);
	pthread_mutex_unlock(&g.lock);
	errno = saved;
}

size_t scratch__shim_move(void *to, void *from)
{
	uint32_t s = lent_block(from), d = lent_block(to);
	struct tcache *tc = tls_tc;
	struct blk *src;
	uint64_t moved;

	if (s == 0 || d == 0 || g.blk[s].cls >= g.blk[d].cls ||
	    g.cls_size[g.blk[s].cls] < HUGE_SIZE || pages_locked())
		return 0;
	src = &g.blk[s];
	moved = block_move(src, &g.blk[d], 0, g.cls_size[g.blk[d].cls] & ~(HUGE_SIZE - 1));
	if (moved == 0)
		return 0;
	if (src->ext <= moved)
		src->ext = 0; /* what it was written with has gone */
	if (is_tc(tc)) {
		scratch__seq_begin(&tc->c->seq);
		SCRATCH__ADD(&tc->c->moved_bytes, moved);
		scratch__seq_end(&tc->c->seq);
	} else {
		pthread_mutex_lock(&g.lock);
		proc_begin();
		SCRATCH__ADD(&g.proc->exited.moved_bytes, moved);
		proc_end();
		pthread_mutex_unlock(&g.lock);
	}
	return moved;
}

bool scratch__shim_keeps(void *p, size_t n)
{
	uint32_t id = lent_block(p);

	if (id == 0 || n < g.min || n - g.min > g.span || g.blk[id].cls > fit_top(n))
		return false;
	if (g.blk[id].ext < n)
		g.blk[id].ext = n; /* what this lease may write: fits_better() */
	return true;
}

void *scratch__shim_grow(void *p, size_t cap, size_t n, size_t *ret_moved)
{
	void *q;

	tls_prefix = cap & ~(HUGE_SIZE - 1);
	q = scratch__shim_acquire(n);
	tls_prefix = 0;
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

	return id == 0 ? 0 : g.cls_size[g.blk[id].cls];
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
	struct tcache *tc = tls_tc;

	if (!scratch__init())
		return;
	if (is_tc(tc)) {
		tc_enter(tc);
		tc_drain_remote(tc);
	}
	pthread_mutex_lock(&g.lock);
	if (is_tc(tc))
		tc_flush_locked(tc);
	if (g.zombies > 0)
		reap_zombies();
	pthread_mutex_unlock(&g.lock);
	if (is_tc(tc))
		tc_leave(tc);
}

size_t scratch_trim(void)
{
	struct tcache *tc = tls_tc;
	uint64_t released;

	if (!scratch__init())
		return 0;
	if (is_tc(tc)) {
		tc_enter(tc);
		tc_drain_remote(tc);
	}
	pthread_mutex_lock(&g.lock);
	if (is_tc(tc)) {
		tc_flush_locked(tc);
		tc->trim_seen = g.trim_epoch + 1;
		tc_leave(tc);
	}
	/* the caches of threads that ended without their exit hook, too */
	(void)reclaim_ended_locked(true);
	reap_zombies();
	released = depot_trim();
	__atomic_store_n(&g.trim_epoch, g.trim_epoch + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g.lock);
	return released;
}

/* ---------------------------------------------------------------------- */
/* Statistics                                                              */
/* ---------------------------------------------------------------------- */

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

int scratch_conf_get(const char *key, uint64_t *ret_value)
{
	return scratch__conf_lookup(scratch__conf(), key, ret_value);
}

/* ---------------------------------------------------------------------- */
/* fork                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * fork copies the page tables of every resident page, and a block idle in a
 * cache keeps its pages for the next lease: a host that forks while the
 * pools hold 32 MiB idle took twice glibc's time per fork (glibc unmaps at
 * free). So, for the fork, the idle blocks nobody else can touch meanwhile
 * (the forking thread's bins and the depot, both under g.lock; another
 * thread's bins change under its fast paths) are marked MADV_WIPEONFORK:
 * the child gets them zero-filled, with no page tables copied, and takes
 * them for fresh; the mark comes off on both sides after the fork. Blocks
 * under WIPE_MIN cost more in the two madvise calls than they save.
 */
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
 * a decay pass enters them (gate_raise, membarrier, only those whose thread
 * is outside its bins), and the gate stays up until the fork is done
 * (wipe_done's callers lower it), so that no thread takes a marked block
 * and writes it while the fork copies: a thread that tries waits on
 * g.lock, which prefork holds. In the child those caches are never
 * touched again (TC_FORKED); their blocks come zero-filled instead of with
 * copied page tables. Under g.lock.
 */
static void wipe_others(struct tcache *self)
{
	if (nwiped == WIPE_MAX || !others_idle(self) || !decay_may_enter())
		return;
	gate_raise();
	wipe_gated = true;
	if (!scratch__os_membarrier())
		return;
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		if (tc == self || !tc_in_use(tc) || !tc_outside(tc))
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
			block_emptied(d, false);
	}
	nwiped = 0;
	if (wipe_gated)
		gate_lower();
	wipe_gated = false;
}

/* Lock order: init_lock, dk.lock, then g.lock. Fast paths take neither. Then the
 * remote frees in flight finish (see fork_gate), a few stores each. The
 * wait is bounded all the same, and the forking thread's own flag is not
 * waited for: a signal handler that forks could find it raised, and would
 * wait forever. A miscount in the child is the lesser harm. */
static void prefork(void)
{
	struct tcache *self = tls_tc;
	unsigned spins = 0;

	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&dk.lock); /* no decay pass holds blocks off every list */
	pthread_mutex_lock(&g.lock);
	__atomic_store_n(&fork_gate, 1, __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < g.tcs_used; i++)
		while (&g.tcs[i] != self &&
		       __atomic_load_n(&g.tcs[i].in_remote, __ATOMIC_SEQ_CST) && spins++ < 100000)
			sched_yield();
	while (__atomic_load_n(&orphans_in_remote, __ATOMIC_SEQ_CST) != 0 && spins++ < 100000)
		sched_yield();
	scratch__segment_prefork();
	scratch__trace_prefork();
	wipe_idle(self);
}

static void postfork_parent(void)
{
	wipe_done(false);
	scratch__trace_postfork(false);
	__atomic_store_n(&fork_gate, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&g.lock);
	pthread_mutex_unlock(&dk.lock);
	pthread_mutex_unlock(&init_lock);
}

/* In the child only the forking thread lives on. The other threads' slots
 * become TC_FORKED: their bins may have been mid-update at fork time, so
 * they are never touched again; their remote lists (updated atomically)
 * are still drained, so blocks the child frees to them come back. */
static void postfork_child(void)
{
	struct tcache *self = tls_tc;

	/* The forking thread took both locks in prefork(), so it may release
	 * them here; no other thread exists to hold them. */
	wipe_done(true);
	scratch__trace_postfork(true);
	__atomic_store_n(&fork_gate, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&orphans_in_remote, 0, __ATOMIC_RELAXED);
	/* The decay thread stayed with the parent: the child's first
	 * slow-path acquire starts its own, and registers its own
	 * membarrier (a new mm). */
	if (dk.state == DK_RUNNING)
		dk.state = DK_NONE;
	dk.parked = false;
	dk.barrier = 0;
	pthread_mutex_unlock(&g.lock);
	pthread_mutex_unlock(&dk.lock);
	pthread_mutex_unlock(&init_lock);
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) != ST_READY) {
		/* pools off, but a segment saying why: the child needs its own */
		scratch__segment_atfork_child();
		return;
	}
	for (uint32_t i = 0; i < g.tcs_used; i++) {
		struct tcache *tc = &g.tcs[i];

		/* a flag left up by a freer prefork gave up on stays with the
		 * parent: no later fork of ours should wait for it */
		tc->in_remote = 0;
		if (tc == self || tc->state != TC_LIVE)
			continue;
		__atomic_store_n(&tc->state, TC_FORKED, __ATOMIC_RELAXED);
		g.zombies++;
	}
	if (is_tc(self))
		self->tid = scratch__os_gettid();
	scratch__segment_atfork_child();
}

__attribute__((constructor)) static void pool_constructor(void)
{
	pthread_atfork(prefork, postfork_parent, postfork_child);
}
