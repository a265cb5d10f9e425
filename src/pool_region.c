/*
 * pool_region.c - the region: carving, the empty lists and the depot.
 *
 * Owns the region's two parts (where the next block of each is carved),
 * the block descriptors' and start table's maps, the empty lists (blocks
 * whose pages went back, addresses kept for their class) and the depot
 * (idle blocks no thread owns, a list per node and class). Everything here
 * runs under g.lock.
 *
 * Nodes (per_node, in force where the cpuset spans two NUMA nodes or
 * more): the depot keeps a list per node and class, and files a block
 * under the node most of its pages sit on (a vote of a few pages, read
 * with move_pages(2), which never faults one in); a thread takes only
 * its own node's blocks (getcpu through the vDSO) or new ones, whose
 * pages it faults where it runs. A thread's cache checks its node on
 * each slow-path acquire (pool_slow.c); once its thread has moved, its
 * idle blocks go to the depot (to the node they sit on) and it refills
 * where it is now. The fast paths read no node, so a thread whose every
 * request hits its own bin would not notice; the decay thread's passes
 * look for those (pool_decay.c). With one node there is one list and none
 * of this runs.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>

#include "pool.h"

#define NODE_VOTES 8 /* pages of a block read for its node */

/* Where the next block of each part is carved, and the most blocks the
 * descriptor map holds: set once by scratch__region_layout(). */
static uintptr_t small_cur, small_end, large_cur, large_end;
static uint32_t maxblk;

/* The region's two parts and the maps indexed by block id and page, for
 * a region of size bytes at g.base (the class table is set). False when
 * there is no memory for the maps. */
bool scratch__region_layout(uint64_t size)
{
	uint64_t small_part, pages;

	/* Blocks below 2 MiB get a quarter of the space, large ones the rest. */
	small_part = (size / 4) & ~(HUGE_SIZE - 1);
	small_cur = g.base;
	small_end = g.base + small_part;
	large_cur = small_end;
	large_end = g.base + size;
	if (g.conf.thp)
		scratch__os_hugepage((void *)large_cur, large_end - large_cur, true);
	/* Marked for none (in madvise mode what the system does anyway), so
	 * that a populate's frames, marked for huge pages and back, merge into
	 * the mapping again: no mapping is left split. */
	g.huge_dense = !g.conf.thp && g.conf.thp_dense && scratch__os_thp_on_request();
	if (g.huge_dense)
		scratch__os_hugepage((void *)large_cur, large_end - large_cur, false);
	pages = size >> PAGE_SHIFT;
	maxblk = (uint32_t)(size / g.cls_size[g.cls_base] < UINT32_MAX - 1
	                            ? size / g.cls_size[g.cls_base]
	                            : UINT32_MAX - 1);
	g.starttab = scratch__os_map(pages * sizeof(uint32_t));
	g.blk = scratch__os_map(((uint64_t)maxblk + 1) * sizeof(struct blk));
	g.nblk = 1; /* id 0 means "none" */
	return g.starttab != NULL && g.blk != NULL;
}

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
		if (pass == 1 && scratch__depot_trim() == 0)
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
	if (g.nblk > maxblk)
		return reclass(bin);
	if (cap >= HUGE_SIZE) {
		uint64_t span = (cap + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);

		if (large_end - large_cur < span || !scratch__os_commit((void *)large_cur, span))
			return reclass(bin);
		at = large_cur;
		large_cur += span;
		g.proc->region_used += span;
		/* A capacity that ends inside a huge page (2.5M in a 4M span)
		 * would fault that page whole, nearly twice the bytes used:
		 * the partial one gets small pages. */
		if (g.conf.thp && (cap & (HUGE_SIZE - 1)) != 0)
			scratch__os_hugepage((void *)(at + (cap & ~(HUGE_SIZE - 1))),
			                     span - (cap & ~(HUGE_SIZE - 1)), false);
	} else {
		if (small_end - small_cur < cap || !scratch__os_commit((void *)small_cur, cap))
			return reclass(bin);
		at = small_cur;
		small_cur += cap;
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

/* carve_any(), counting the block live (and waking a decay thread parked
 * until one is: pool_decay.c). */
uint32_t scratch__carve(unsigned bin)
{
	uint32_t id = carve_any(bin);

	if (id != 0) {
		g.live_blocks++;
		count_live(g.blk[id].cls, 1);
		if (g.carve_waiting) {
			g.carve_waiting = false;
			__atomic_fetch_add(&g.carve_wake, 1, __ATOMIC_RELEASE);
			scratch__os_futex_wake(&g.carve_wake, 1);
		}
	}
	return id;
}

/* The depot list of the calling thread's node: its node with per_node,
 * else 0. getcpu goes through the vDSO: no system call. */
unsigned scratch__here_node(void)
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
		return scratch__here_node();
	for (unsigned i = 0; i < NODE_VOTES; i++)
		if (st[i] >= 0 && (unsigned)st[i] < g.nodes)
			votes[st[i]]++;
	for (unsigned i = 0; i < NODE_VOTES; i++)
		if (st[i] >= 0 && (unsigned)st[i] < g.nodes &&
		    (best < 0 || votes[st[i]] > votes[best]))
			best = st[i];
	return best >= 0 ? (unsigned)best : scratch__here_node();
}

/* Put an idle block into the depot (its node's list), or when the depot
 * is full return its pages to the OS and keep only the address. Drops
 * g.lock around madvise. */
void scratch__depot_put(uint32_t id)
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
	scratch__block_empty(id);
}

/* An idle block's pages went back (!kept): it reads as zero, and no lease
 * has written it; or the kernel kept them (locked memory): it holds what
 * its last lease wrote, anywhere in its capacity. */
void scratch__block_emptied(struct blk *d, bool kept)
{
	d->fresh = !kept;
	d->ext = kept ? g.cls_size[d->cls] : 0;
	if (kept)
		__atomic_store_n(&g.locked, true, __ATOMIC_RELAXED);
}

/* Give an idle block's pages from byte from on back to the OS (those
 * before it were moved away: scratch__block_move) and keep its address
 * for its class. Drops g.lock around madvise. */
void scratch__block_empty_from(uint32_t id, uint64_t from)
{
	struct blk *d = &g.blk[id];
	unsigned bin = d->cls;
	uint64_t cap = g.cls_size[bin];
	bool kept = false;

	/* idle, or lent: off every list (a depot block, taken by the caller) */
	SCRATCH_ASSERT(d->state != BLK_EMPTY && d->state != BLK_NONE);
	SCRATCH_ASSERT(from <= cap);
	d->owner = 0;
	d->state = BLK_EMPTY;
	scratch__segment_block_state(id, SCRATCH_SEG_BLK_EMPTY);
	if (from < cap) {
		pthread_mutex_unlock(&g.lock);
		kept = !scratch__os_decommit((void *)(blk_addr(d) + from), cap - from);
		pthread_mutex_lock(&g.lock);
	}
	scratch__block_emptied(d, kept);
	d->next = g.empty_head[bin];
	g.empty_head[bin] = id;
	g.live_blocks--;
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, kept ? 0 : cap - from);
	SCRATCH__SUB(&g.pcls->live[CLS(bin)], 1);
	proc_end();
}

void scratch__block_empty(uint32_t id)
{
	scratch__block_empty_from(id, 0);
}

/* Unlink block id of class bin, after prev (0: id is the head), from
 * node's depot list (it stays BLK_DEPOT). Returns id, 0 when id is 0. */
static uint32_t depot_unlink(unsigned node, unsigned bin, uint32_t id, uint32_t prev)
{
	if (id == 0)
		return 0;
	SCRATCH_ASSERT(g.blk[id].state == BLK_DEPOT && g.blk[id].cls == bin);
	if (prev == 0)
		g.depot_head[node][bin] = g.blk[id].next;
	else
		g.blk[prev].next = g.blk[id].next;
	proc_begin();
	SCRATCH__SUB(&g.proc->depot_bytes, g.cls_size[bin]);
	SCRATCH__SUB(&g.proc->depot_blocks, 1);
	proc_end();
	return id;
}

/* A depot block of node's list for a request of size (class bin): its own
 * class, else the most recently put one of a larger class within the fit
 * bound. Sets *ret_bin to the block's class. Under g.lock. */
uint32_t scratch__depot_take_fit(uint64_t size, unsigned bin, unsigned node, unsigned *ret_bin)
{
	unsigned top, best = 0;
	uint64_t stamp = 0;

	*ret_bin = bin;
	if (g.depot_head[node][bin] != 0)
		return scratch__depot_take(node, bin);
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
	return scratch__depot_take(node, best);
}

uint32_t scratch__depot_take(unsigned node, unsigned bin)
{
	return depot_unlink(node, bin, g.depot_head[node][bin], 0);
}

/* Block id, of class bin, out of node's depot list (after prev, 0: the
 * head) into its class's empty list, its pages back to the OS (g.lock held
 * throughout). Returns the bytes that went back. */
static uint64_t depot_empty_at(unsigned node, unsigned bin, uint32_t id, uint32_t prev)
{
	struct blk *d = &g.blk[depot_unlink(node, bin, id, prev)];
	bool kept = !scratch__os_decommit((void *)blk_addr(d), g.cls_size[bin]);

	d->state = BLK_EMPTY;
	scratch__segment_block_state(id, SCRATCH_SEG_BLK_EMPTY);
	scratch__block_emptied(d, kept);
	d->next = g.empty_head[bin];
	g.empty_head[bin] = id;
	g.live_blocks--;
	count_live(bin, -1);
	return kept ? 0 : g.cls_size[bin];
}

/* The head of node's depot list of class bin, emptied as above. */
static uint64_t depot_empty(unsigned node, unsigned bin)
{
	return depot_empty_at(node, bin, g.depot_head[node][bin], 0);
}

static void count_trimmed(uint64_t bytes)
{
	if (bytes == 0)
		return;
	proc_begin();
	SCRATCH__ADD(&g.proc->trimmed, bytes);
	proc_end();
}

/* Return every depot block's pages to the OS. Returns bytes released. */
uint64_t scratch__depot_trim(void)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < g.nodes * g.nbins; i++) {
		unsigned bin = g.cls_base + i % g.nbins;

		while (g.depot_head[i / g.nbins][bin] != 0)
			total += depot_empty(i / g.nbins, bin);
	}
	count_trimmed(total);
	return total;
}

/* Return the pages of node's depot blocks of the classes from start up to
 * end (not included), smallest first, until bytes have gone back. Returns
 * the bytes. */
uint64_t scratch__depot_shed(unsigned node, unsigned start, unsigned end, uint64_t bytes)
{
	uint64_t total = 0;

	for (unsigned bin = start > g.cls_base ? start : g.cls_base; bin < end && total < bytes;
	     bin++)
		while (g.depot_head[node][bin] != 0 && total < bytes)
			total += depot_empty(node, bin);
	count_trimmed(total);
	return total;
}

/* A depot list is newest first: a shed for growth reads at most this many
 * links of one to reach its oldest block (or an old one, past it), */
#define SHED_OLD_WALK 64
/* and gives back at most this many blocks a call (what is still owed
 * waits for the thread's next growth): g.lock is held throughout */
#define SHED_OLD_MAX 32

/*
 * Return the pages of node's oldest depot blocks of the classes from start
 * up to end (not included) that went idle at or before before_ms, each
 * while its pages (its extent, in whole pages) are within *owed, which
 * drops by them; the oldest first. Returns the bytes that went back.
 */
uint64_t scratch__depot_shed_old(unsigned node, unsigned start, unsigned end, uint64_t before_ms,
                                 uint64_t *owed)
{
	uint64_t total = 0;

	for (unsigned shed = 0; shed < SHED_OLD_MAX; shed++) {
		uint32_t best = 0, best_prev = 0;
		unsigned best_bin = 0;

		for (unsigned bin = start > g.cls_base ? start : g.cls_base; bin < end; bin++) {
			uint32_t prev = 0, id = g.depot_head[node][bin];
			const struct blk *d;

			for (unsigned n = 1; id != 0 && g.blk[id].next != 0 && n < SHED_OLD_WALK;
			     n++) {
				prev = id;
				id = g.blk[id].next;
			}
			if (id == 0)
				continue;
			d = &g.blk[id];
			if (d->stamp > before_ms || d->ext == 0 || page_up(d->ext) > *owed)
				continue;
			if (best == 0 || d->stamp < g.blk[best].stamp) {
				best = id;
				best_prev = prev;
				best_bin = bin;
			}
		}
		if (best == 0)
			break;
		*owed -= page_up(g.blk[best].ext);
		total += depot_empty_at(node, best_bin, best, best_prev);
	}
	count_trimmed(total);
	return total;
}
