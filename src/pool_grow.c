/*
 * pool_grow.c - growth and page moves.
 *
 * A miss that continues a climb (the thread's last two growths rose to
 * just below it, within 4x) carves twice the request: a buffer that grows
 * every token costs one new block per doubling. A new block starts with
 * the pages of the thread's idle blocks below its class, moved
 * (scratch__carve_move: mremap, not faulted again; below 2 MiB, one
 * block's, into at most SMALL_MOVE_BLOCKS blocks), and returns the pages
 * of those left beyond 1/8 of what the thread has leased
 * (scratch__carve_shed), so growth leaves no trail of resident idle
 * blocks. realloc's growth of a pool block moves its pages the same way
 * (scratch__shim_move, pool.c). A cache hit that writes past its block's
 * pages owes them, and old idle blocks of the depot near its class pay
 * them back (scratch__lease_shed): a set freed late by a collector keeps
 * no more resident idle blocks than it turns over.
 *
 * Owns what the kernel allows of moves (none before Linux 5.7 or where
 * refused; within one mapping only before 6.17), the probe page that tells
 * whether the process locks its memory, and the bytes at the start of a
 * block a growing realloc fills itself (scratch__tls_prefix).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>

#include "pool.h"

#define GROWTH_WINDOW 8 /* classes: a miss this close above the last is a growth (4x) */

/* scratch__block_move: the kernel moves no pages (before Linux 5.7, or
 * refused), or moves them only within one mapping (before 6.17) */
static bool move_off, move_one_map;
static void *lock_probe; /* a page of its own, mapped with the region */

__thread uint64_t scratch__tls_prefix __attribute__((tls_model("initial-exec")));

/* Map the probe page (scratch__pages_locked); false when there is no
 * memory for it. At set-up. */
bool scratch__grow_setup(void)
{
	lock_probe = scratch__os_map(PAGE_SIZE);
	return lock_probe != NULL;
}

/*
 * Does the process lock its memory? Then pages do not move: a move
 * (MREMAP_DONTUNMAP) leaves its source range unlocked, so what a later
 * lease faults there would escape the host's mlockall. Nor do idle blocks
 * go back early (scratch__carve_shed): the kernel keeps locked pages. Known from a
 * page the kernel refused to take back (scratch__block_emptied) or, before each
 * move, from a probe page mapped with the region: mlockall(MCL_CURRENT)
 * locks both, and so does MCL_FUTURE from before the pools started (one
 * madvise beside the move's mremap). MCL_FUTURE alone, later, leaves the
 * region unlocked, and moves harmless. Kept once known.
 */
bool scratch__pages_locked(void)
{
	if (__atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return true;
	if (!scratch__os_locked(lock_probe))
		return false;
	__atomic_store_n(&g.locked, true, __ATOMIC_RELAXED);
	return true;
}

/*
 * Blocks below 2 MiB move their pages too, a page table's worth of 4 KiB
 * entries: a set of buffers that grows past a class (K/V caches copied
 * out every token, freed late by a garbage collector) otherwise faults
 * the new blocks' pages while the pages of the blocks it outgrew go back
 * to the OS. On the development VM, moving 640 KiB costs about 90 us and
 * faulting it again 1.7 ms (a fault is some 11 us there).
 *
 * The kernel makes each moved range a mapping of its own and does not
 * merge it back, so the blocks that may take pages are limited: at most
 * SMALL_MOVE_BLOCKS distinct ones, each with moved_in set (a block's
 * address comes back to its class when it empties, so a set that grows
 * reuses the same ones), and only at the block's start, from one source
 * of a smaller class, whose whole capacity moves: the mappings inside a
 * block end at class sizes. At most about three mappings a block, some
 * 12 000 of the default 65 530 (vm.max_map_count) when all are used.
 */
#define SMALL_MOVE_BLOCKS 4096
static uint32_t small_move_blocks; /* blocks with moved_in set; under g.lock */

/* May dst, a block below 2 MiB, take pages? Counts it in when it can.
 * Under g.lock. */
static bool small_move_room(struct blk *dst)
{
	if (dst->moved_in)
		return true;
	if (small_move_blocks >= SMALL_MOVE_BLOCKS)
		return false;
	small_move_blocks++;
	dst->moved_in = 1;
	return true;
}

/* scratch__block_move for a dst below 2 MiB: all of src's capacity (a
 * smaller class) to dst's start, at most room bytes (a multiple of
 * pages). Kernels that move within one mapping only (before 6.17) refuse
 * a src that took pages itself: then no more such moves. */
static uint64_t block_move_small(struct blk *src, struct blk *dst, uint64_t room)
{
	uint64_t len = g.cls_size[src->cls];
	int err;

	if (len > room || __atomic_load_n(&move_one_map, __ATOMIC_RELAXED))
		return 0;
	err = scratch__os_move_pages((void *)blk_addr(src), (void *)blk_addr(dst), len);
	if (err == -EFAULT)
		__atomic_store_n(&move_one_map, true, __ATOMIC_RELAXED);
	if (err == -EINVAL || err == -EPERM || err == -ENOSYS)
		__atomic_store_n(&move_off, true, __ATOMIC_RELAXED);
	if (err != 0)
		return 0;
	dst->fresh = 0;
	return len;
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
uint64_t scratch__block_move(struct blk *src, struct blk *dst, uint64_t off, uint64_t room)
{
	uint64_t len = g.cls_size[src->cls] & ~(HUGE_SIZE - 1);
	uint64_t mv = (uint64_t)src->mv * HUGE_SIZE;
	void *from = (void *)blk_addr(src), *to = (void *)(blk_addr(dst) + off);
	int err;

	if (g.cls_size[src->cls] < HUGE_SIZE)
		return block_move_small(src, dst, room);
	if (len > room)
		len = room;
	if (__atomic_load_n(&move_one_map, __ATOMIC_RELAXED) && mv != 0 && mv < len)
		len = mv;
	if (len == 0)
		return 0;
	err = scratch__os_move_pages(from, to, len);
	if (err == -EFAULT && mv != 0 && mv < len) {
		__atomic_store_n(&move_one_map, true, __ATOMIC_RELAXED);
		len = mv;
		err = scratch__os_move_pages(from, to, len);
	}
	if (err == -EINVAL || err == -EPERM || err == -ENOSYS)
		__atomic_store_n(&move_off, true, __ATOMIC_RELAXED);
	if (err != 0)
		return 0;
	/* dst's first mapping: this range, or the one before it, which ends here */
	if (off == 0 || (uint64_t)dst->mv * HUGE_SIZE > off)
		dst->mv = (uint16_t)((off == 0 ? len : off) / HUGE_SIZE);
	dst->fresh = 0;
	return len;
}

/*
 * Has a set of buffers below 2 MiB moved up a class: did the class just
 * below bin miss within tc's last SET_WINDOW misses, or did bin's own
 * last miss, within them, carve for such a set? Many buffers whose
 * sizes grow together (a K/V cache of every layer, copied out every
 * token) cross each class boundary as a set, and their old blocks come
 * back only later (freed by a garbage collector, say): each set then
 * carves a new block per buffer and per class, whose pages are faulted
 * while the old ones sit idle. The set's misses carve four times the
 * request instead (SET_GROWTH classes up), so the next seven classes are
 * served by those blocks, where they are (reuse across classes), and the
 * set carves once per quadrupling. Each carve still moves the pages of an
 * outgrown block (scratch__carve_move), but a page moved costs a third of
 * a fault again on some machines and one reused in place nothing: with
 * twice the request, bench/kvset (table 1k) took 10.1-11.0 ms a step
 * against 6.5-6.8 with four times and tcmalloc's 5.3-6.6, at fewer faults
 * and less peak RSS (docs/performance.md). The tail a block does not use
 * costs address space only.
 *
 * A set also grows in number after it crossed: a collector that frees
 * later than before leaves more of its buffers live, and their misses
 * repeat the new class long after the class below last missed. A miss
 * whose class's own last miss, within the window, carved for a set
 * (set_miss) goes on carving four times the request: otherwise those
 * members got exact-class blocks, faulted whole and moved again at the
 * next crossing (ONNX Runtime's K/V set at its warm-up's end: 36 such
 * blocks, 20 MiB of moves in 64 steps).
 */
#define SET_WINDOW 64
#define SET_GROWTH 8 /* classes: four times the request */

static bool set_moved_up(const struct tcache *tc, unsigned bin)
{
	uint32_t seq;

	if (bin >= HUGE_BIN || bin <= g.cls_base)
		return false;
	seq = tc->miss_seq[bin - 1];
	if (seq != 0 && tc->nmiss - seq < SET_WINDOW)
		return true;
	seq = tc->miss_seq[bin];
	return seq != 0 && tc->nmiss - seq < SET_WINDOW &&
	       (tc->set_miss[bin / 64] >> (bin % 64) & 1);
}

/*
 * The class a miss of size (class bin) carves: four times the request for
 * a set that moved up (set_moved_up, noted for bin in set_miss). A
 * thread whose last two growths climbed to just below this one (within
 * 4x) is growing a buffer (attention scores gain a row every token): it
 * gets twice the request, so the buffer grows into one new block per
 * doubling rather than one per class (four). Two steps of evidence, so
 * that a program warming up its two or three sizes keeps exact classes.
 * The tail a block does not use costs address space only: untouched
 * pages are never faulted. Within max_size and the fit bound.
 */
unsigned scratch__growth_class(struct tcache *tc, uint64_t size, unsigned bin)
{
	unsigned want = bin + 4, top = fit_top(size);
	bool set = set_moved_up(tc, bin);
	uint64_t bit = UINT64_C(1) << (bin % 64);

	tc->set_miss[bin / 64] = set ? tc->set_miss[bin / 64] | bit : tc->set_miss[bin / 64] & ~bit;
	if (set)
		want = bin + SET_GROWTH;
	else if (tc->prev_miss == 0 || tc->prev_miss >= tc->last_miss || tc->last_miss >= bin ||
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
 * returning them at every miss only to fault them again made most of such
 * a host's faults (bench/churn measures it; docs/design.md).
 */
/* What tc's cache may keep idle when it carves a block of lease bytes: an
 * eighth of what it will have leased. */
static uint64_t shed_keep(const struct tcache *tc, uint64_t lease)
{
	uint64_t leased =
	        tc->c->leased - __atomic_load_n(&tc->c->remote_in_bytes, __ATOMIC_RELAXED);

	return (leased + lease) / 8;
}

static uint64_t shed_bytes(const struct tcache *tc, uint64_t lease, uint64_t bytes)
{
	uint64_t keep = shed_keep(tc, lease);

	if (tc->cached_bytes <= keep)
		return 0;
	return tc->cached_bytes - keep < bytes ? tc->cached_bytes - keep : bytes;
}

/*
 * A new block of lease bytes for a request of class bin, bytes of it new
 * pages (the rest moved in: scratch__carve_move): tc's idle blocks of the
 * classes below could not serve it, and a growing buffer (or a working set that
 * moved up) leaves them behind. The pages of those whose pages cannot move
 * (below 2 MiB, or all where the kernel moves none) go back now, the
 * smallest classes first and up to shed_bytes() of them, so the new pages
 * replace old ones instead of adding to them and no trail of resident idle
 * blocks stays; their addresses stay with their classes. The others stay:
 * the next miss moves their pages, a hit takes them, or they decay (shed
 * too, a loop whose sizes vary faults them again: bench/decode's varying
 * table measures it). Under g.lock (dropped around each madvise); tc is the
 * caller's, busy.
 */
void scratch__carve_shed(struct tcache *tc, unsigned bin, uint64_t lease, uint64_t bytes)
{
	const unsigned end = __atomic_load_n(&move_off, __ATOMIC_RELAXED) ? bin : HUGE_BIN;
	uint64_t shed = 0, budget = bytes;

	if (__atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return; /* nothing would go back */
	bytes = shed_bytes(tc, lease, bytes);
	for (unsigned b = g.cls_base; b < bin && b < end && shed < bytes; b++)
		while (tc->bins[b].head != 0 && shed < bytes) {
			shed += g.cls_size[b];
			scratch__block_empty(bin_pop(tc, b));
		}
	if (shed != 0)
		count_retained(tc->c, -(int64_t)shed);
	/* The cache within its eighth, the depot's blocks of the classes just
	 * below (within GROWTH_WINDOW, 4x) give back what is left of the new
	 * pages' worth: a set of buffers that moved up left them there (freed
	 * by other threads, past the cache's room), and no request of theirs
	 * is coming back. Not those of sets far below: a 16 MiB arena chunk
	 * once gave back the idle blocks a growing K/V set of 1 MiB buffers
	 * was about to take (ONNX Runtime, docs/performance.md). */
	if (tc->cached_bytes <= shed_keep(tc, lease) && shed < budget)
		(void)scratch__depot_shed(scratch__here_node(),
		                          bin > GROWTH_WINDOW ? bin - GROWTH_WINDOW : 0, bin,
		                          budget - shed);
}

/* A thread owes at most this much: what old blocks give back answers the
 * growth of the last moments, not of the whole run */
#define OWED_MAX (UINT64_C(16) << 20)
/* It settles once it owes this much: one lock for several growths */
#define OWED_MIN (UINT64_C(256) << 10)
/* Old: idle for decay_ms / SHED_AGE_DIV (625 ms at the default) */
#define SHED_AGE_DIV 16
/* Near: within this many classes either side (2x: 4 classes a doubling) */
#define SHED_WINDOW 4

/*
 * A cache hit whose lease of size writes past its block's pages (ext): the
 * new pages are owed, and once tc owes OWED_MIN or more, old idle blocks of
 * the depot near the block's class give theirs back, the oldest first,
 * each within what is owed: this node's, of the classes within 2x either
 * side, idle for decay_ms / SHED_AGE_DIV. A set of buffers freed late by a
 * collector (ONNX Runtime's K/V outputs) keeps more blocks than it needs
 * between collections, and their pages stay those of the sizes it had when
 * each went idle; as the set grows into its blocks, the pages of the ones
 * it keeps leaving idle go back instead of adding to its peak. A block idle
 * that long is past the set's turnover; a host that comes back to it faults
 * it again, as it would after decay, only sooner. Blocks in the threads'
 * own caches are not touched: what a thread keeps, a loop whose sizes vary
 * takes again (table 1v). Not with decay_ms:0 (nothing decays), nor when
 * the process locks its memory (nothing would go back). tc is the
 * caller's; takes g.lock.
 */
void scratch__lease_shed(struct tcache *tc, unsigned cls, uint64_t size, uint64_t ext)
{
	const uint64_t age = g.conf.decay_ms / SHED_AGE_DIV;
	uint64_t now;

	tc->owed += page_up(size) - page_up(ext);
	if (tc->owed > OWED_MAX)
		tc->owed = OWED_MAX;
	if (tc->owed < OWED_MIN || g.conf.decay_ms == 0 ||
	    __atomic_load_n(&g.proc->depot_blocks, __ATOMIC_RELAXED) == 0 ||
	    __atomic_load_n(&g.locked, __ATOMIC_RELAXED))
		return;
	now = scratch__os_monotonic_ms();
	if (now < age)
		return;
	pthread_mutex_lock(&g.lock);
	(void)scratch__depot_shed_old(
	        scratch__here_node(), cls > SHED_WINDOW ? cls - SHED_WINDOW : 0,
	        cls + SHED_WINDOW < NBINS ? cls + SHED_WINDOW + 1 : NBINS, now - age, &tc->owed);
	pthread_mutex_unlock(&g.lock);
}

/* The class of tc's idle block below bin with the most pages to move
 * that fit in room bytes: the largest extent, the head of each class; 0
 * when none has any. With depot, the heads of node's depot lists
 * instead. */
static unsigned move_source(const struct tcache *tc, unsigned bin, uint64_t room, bool depot,
                            unsigned node)
{
	unsigned best = 0;
	uint64_t best_ext = 0;

	for (unsigned b = HUGE_BIN > g.cls_base ? HUGE_BIN : g.cls_base; b < bin; b++) {
		uint32_t h = depot ? g.depot_head[node][b] : tc->bins[b].head;
		uint64_t ext = h != 0 ? g.blk[h].ext : 0;

		if (ext != 0 && ext <= room && (best == 0 || ext >= best_ext)) {
			best = b;
			best_ext = ext;
		}
	}
	return best;
}

/* The idle block below bin, smaller than 2 MiB, with the most pages
 * written (ext), its capacity within room and its pages at least half of
 * it (a move that brings a few pages is not worth a mapping): the head of
 * one of tc's bins or of node's depot lists (*ret_depot), tc's on a tie.
 * Its class, 0 when there is none. */
static unsigned move_source_small(const struct tcache *tc, unsigned bin, uint64_t room,
                                  unsigned node, bool *ret_depot)
{
	unsigned best = 0;
	uint64_t best_ext = 0;

	for (unsigned b = g.cls_base; b < bin && b < HUGE_BIN && g.cls_size[b] <= room; b++)
		for (int depot = 0; depot < 2; depot++) {
			uint32_t h = depot ? g.depot_head[node][b] : tc->bins[b].head;
			uint64_t ext = h != 0 ? g.blk[h].ext : 0;

			if (ext > best_ext && 2 * ext >= room) {
				best = b;
				best_ext = ext;
				*ret_depot = depot;
			}
		}
	return best;
}

/*
 * scratch__carve_move for a dst below 2 MiB: one idle block below bin,
 * the one with the most pages written (tc's own or this node's in the
 * depot), moves all its pages to dst's start (block_move_small), within
 * the request's pages, and empties. Under g.lock (dropped around the
 * move).
 */
static uint64_t carve_move_small(struct tcache *tc, unsigned bin, uint64_t size, uint32_t dst,
                                 uint64_t *ret_moved)
{
	const uint64_t room = page_up(size);
	const unsigned node = scratch__here_node();
	bool depot = false;
	uint64_t moved;
	unsigned b;
	uint32_t id;

	if (__atomic_load_n(&move_off, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&move_one_map, __ATOMIC_RELAXED) || scratch__tls_prefix != 0)
		return 0;
	b = move_source_small(tc, bin, room, node, &depot);
	if (b == 0 || scratch__pages_locked() || !small_move_room(&g.blk[dst]))
		return 0;
	id = depot ? scratch__depot_take(node, b) : bin_pop(tc, b);
	pthread_mutex_unlock(&g.lock);
	moved = scratch__block_move(&g.blk[id], &g.blk[dst], 0, room);
	pthread_mutex_lock(&g.lock);
	scratch__block_empty_from(id, moved);
	if (moved != 0)
		g.blk[dst].ext = moved < size ? moved : size;
	*ret_moved = moved;
	if (depot)
		return 0;
	count_retained(tc->c, -(int64_t)g.cls_size[b]);
	return g.cls_size[b];
}

/*
 * A new block dst for a request of size (class bin) starts with the pages
 * of idle blocks below bin, which could not serve it, the ones with the
 * most pages first, while their pages fit in the request (after the
 * scratch__tls_prefix bytes a growing realloc fills): tc's own, then those
 * in the depot on this node (a set of buffers freed by other threads,
 * past the cache's room, leaves its old blocks there). Those move
 * (scratch__block_move) rather than go back to the OS to be faulted again
 * in dst, and the blocks empty; what did not move goes back. Returns the
 * capacity that left tc's cache, with the bytes moved in *ret_moved.
 * Under g.lock (dropped around each move); tc is the caller's, busy.
 */
static uint64_t carve_move_huge(struct tcache *tc, unsigned bin, uint64_t size, uint32_t dst,
                                uint64_t *ret_moved)
{
	const uint64_t want = (size + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);
	const unsigned node = scratch__here_node();
	uint64_t off = scratch__tls_prefix, out = 0;
	bool depot = false;
	unsigned b;

	if (__atomic_load_n(&move_off, __ATOMIC_RELAXED) || off >= want ||
	    (move_source(tc, bin, want - off, false, node) == 0 &&
	     move_source(tc, bin, want - off, true, node) == 0) ||
	    scratch__pages_locked())
		return 0;
	while (off < want && !__atomic_load_n(&move_off, __ATOMIC_RELAXED)) {
		uint32_t id;
		struct blk *src;
		uint64_t ext, moved;

		if (!depot && (b = move_source(tc, bin, want - off, false, node)) == 0)
			depot = true;
		if (depot && (b = move_source(tc, bin, want - off, true, node)) == 0)
			break;
		id = depot ? scratch__depot_take(node, b) : bin_pop(tc, b);
		src = &g.blk[id];
		ext = (src->ext + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);
		pthread_mutex_unlock(&g.lock);
		moved = scratch__block_move(src, &g.blk[dst], off, want - off);
		pthread_mutex_lock(&g.lock);
		scratch__block_empty_from(id, moved);
		if (!depot) {
			count_retained(tc->c, -(int64_t)g.cls_size[b]);
			out += g.cls_size[b];
		}
		*ret_moved += moved;
		if (moved == 0)
			break;
		/* the next block's pages go after the ones this block is known
		 * to have had */
		off += moved < ext ? moved : ext;
	}
	if (off > scratch__tls_prefix)
		g.blk[dst].ext = off < size ? off : size;
	return out;
}

uint64_t scratch__carve_move(struct tcache *tc, unsigned bin, uint64_t size, uint32_t dst,
                             uint64_t *ret_moved)
{
	uint64_t out;

	*ret_moved = 0;
	if (g.cls_size[g.blk[dst].cls] < HUGE_SIZE)
		return carve_move_small(tc, bin, size, dst, ret_moved);
	out = carve_move_huge(tc, bin, size, dst, ret_moved);
	/* none of 2 MiB or more: one below, unless dst is to get huge pages
	 * (its first one would become small ones) */
	if (*ret_moved == 0 && !g.conf.thp)
		out += carve_move_small(tc, bin, size, dst, ret_moved);
	return out;
}
