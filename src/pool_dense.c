/*
 * pool_dense.c - whether a thread writes the new pages of its leases whole.
 *
 * A lease's pages that no earlier lease wrote (all of a fresh block's; a
 * recycled block's past its extent) are not there yet: each is faulted in
 * by its first write, one trap a page. On the development VM a trap costs
 * about 10 us a page, and one madvise(MADV_POPULATE_WRITE) for all of them
 * about 3-6 us a page (docs/performance.md). A program that writes its
 * buffers whole (a decode loop's temporaries, numpy's results, the K/V an
 * engine copies out every step: ONNX Runtime under node callocs each
 * ArrayBuffer and fills it at once) would be better served with them
 * populated; one that uses a large buffer sparsely (numpy's zeros, filled
 * here and there; a buffer sized for the worst case) would pay them in
 * memory for nothing.
 *
 * So the pools measure it, per thread, per kind (plain or zeroed leases:
 * calloc and malloc of one size may be used differently) and per power of
 * two of the request (a band: 64 KiB-128 KiB, ..., 512 MiB-1 GiB). A
 * slow-path lease with new pages in a band not known to be written whole
 * is a *probe*: a lease on the thread's list of pool_tail.c (whose owner
 * bit makes its release take the slow path), left as it is. When it ends -
 * its holder's release, the drain of another thread's free of it, or
 * TAIL_AFTER slow-path leases later - the new pages it touched are
 * counted with mincore(2) (up to eight windows of 128 pages for a large
 * one): at least seven eighths resident marks the band dense, fewer clear
 * it. A probe already written whole while it is still leased is as good
 * an answer (its pages do not go away under it): the thread's slow paths
 * look at its live probes at its 1st, 2nd, 4th, ... slow-path lease after
 * theirs (scratch__dense_peek), so that a thread that takes a buffer,
 * writes it and takes the next (a layer's temporaries) gets the next one
 * populated; a probe not written whole yet proves nothing until it ends.
 * A lease in a dense band gets its new pages populated before it is
 * returned, except every REPROBE-th, which probes again, so that a thread
 * that stops writing whole is noticed. A band not measured yet takes the
 * verdict of the band below when that one is dense, probing every
 * REPROBE_NEW-th: a set of buffers that grows past a power of two (ONNX
 * Runtime's K/V past 1 MiB) arrives in a band of its own, 12 fresh leases
 * at once, before any of them could be measured.
 *
 * A probe need not leave every page to a trap. A plain lease whose new
 * pages are 2 MiB or more, in a band not measured yet (up to
 * SPECULATE_MAX) or known dense (a reprobe), comes populated but for its
 * last PROBE_WINDOW bytes, its window, and the window alone is measured
 * (scratch__dense_speculate): a thread that writes its buffers whole
 * writes their ends too, and one that fills a buffer sized for the worst
 * case from its start, or here and there, leaves the end's pages alone.
 * So a thread's first buffers of a size fault their windows, not all
 * their pages (a decode loop's first token: 35 ms against 131 on the
 * development VM), and a sparse writer pays at most one lease a band in
 * memory before the band is known sparse; its next leases are left as
 * they are. A thread that holds such buffers unwritten, many at once (a
 * pool of its own, sized for the worst case), would pay every one: its
 * probes stop populating once SPECULATE_BUDGET of what they populated is
 * live and not seen written, or ended unwritten (an evicted probe counts
 * so). Zeroed leases (calloc's untouched pages are what a sparse user
 * counts on: numpy's zeros, a table's buckets), bands known sparse, and a
 * first lease past SPECULATE_MAX (held sparse, it would keep that much
 * memory for nothing) probe every page, as before. With populate:false
 * (the audit's launch mode) nothing is populated at all.
 *
 * Populating faults the pages on the allocating thread, so that with
 * per_node (two NUMA nodes or more) the pages would sit on its node, not
 * on the writer's: there the pools populate nothing (pool.c) and the
 * first write places each page, as before. mincore also counts a page
 * that was only read (the shared zero page): a buffer read whole counts as
 * written whole.
 */
#include "config.h"

#include "pool.h"

/* Every REPROBE-th lease of a dense band is a probe again; every
 * REPROBE_NEW-th of a band not measured yet, whose band below is dense. */
#define REPROBE     16
#define REPROBE_NEW 4
/* Pages mincore reads at once, and windows for a larger range. */
#define WINDOW  128
#define WINDOWS 8
_Static_assert(PROBE_WINDOW == (uint64_t)WINDOW << PAGE_SHIFT, "a window is what one call reads");
/* The largest lease a probe in a band not measured yet populates but for
 * its window (the bands known dense have no bound); and what a thread's
 * probes may have populated, of those live and not seen written yet and
 * of those that ended with their windows not written, before it stops:
 * what a thread that holds its buffers unwritten (a pool of its own,
 * sized for the worst case) may cost in memory. A decode loop whose main
 * thread takes a layer's buffers for its workers before any is written
 * (table 1v of make bench) has 150-220 MiB of them live at once. */
#define SPECULATE_MAX    (UINT64_C(64) << 20)
#define SPECULATE_BUDGET (UINT64_C(256) << 20)

/* The band of a request: bit floor(log2(size)) - 16, from 64 KiB. */
static unsigned band(uint64_t size)
{
	unsigned b = 63u - (unsigned)__builtin_clzll(size | 1);

	return b < 16 ? 0 : (b - 16 > 31 ? 31 : b - 16);
}

bool scratch__dense_populate(struct tcache *tc, bool zeroed, uint64_t size)
{
	const unsigned b = band(size);
	const uint32_t bit = UINT32_C(1) << b;

	if (tc->dense_known[zeroed] & bit)
		return (tc->dense[zeroed] & bit) && ++tc->dense_leases % REPROBE != 0;
	/* not measured yet: as the band below, if that one was written whole
	 * (a set of buffers that grows past a power of two), probing more
	 * often */
	if (b == 0 || !(tc->dense[zeroed] & (bit >> 1)))
		return false;
	return ++tc->dense_leases % REPROBE_NEW != 0;
}

/* Plain leases only, within the thread's SPECULATE_BUDGET; a band known
 * dense (a reprobe) always, one known sparse never, one not measured yet
 * up to SPECULATE_MAX. */
bool scratch__dense_speculate(const struct tcache *tc, bool zeroed, uint64_t size, uint64_t bytes)
{
	const uint32_t bit = UINT32_C(1) << band(size);

	if (zeroed || tc->spec_live + tc->spec_unwritten + bytes > SPECULATE_BUDGET)
		return false;
	if (tc->dense_known[zeroed] & bit)
		return (tc->dense[zeroed] & bit) != 0;
	return size <= SPECULATE_MAX;
}

/* Pages of the n at p that are resident, added to *in; false on an error. */
static bool count(uintptr_t p, uint64_t n, uint64_t *in)
{
	unsigned char vec[WINDOW];
	long r = scratch__os_resident((void *)p, (size_t)(n << PAGE_SHIFT), vec, (size_t)n);

	if (r < 0)
		return false;
	*in += (uint64_t)r;
	return true;
}

/* Were at least seven eighths of the pages [from, size) of block id
 * resident? 1 yes, 0 no, -1 unknown (mincore refused). */
static int written_whole(uint32_t id, uint64_t from, uint64_t size)
{
	const uintptr_t a = blk_addr(&g.blk[id]) + from;
	const uint64_t pages = (size - from + PAGE_SIZE - 1) >> PAGE_SHIFT;
	uint64_t seen = 0, in = 0;

	if (pages <= (uint64_t)WINDOW * WINDOWS) {
		for (uint64_t at = 0, n; at < pages; at += n) {
			n = pages - at < WINDOW ? pages - at : WINDOW;
			if (!count(a + (at << PAGE_SHIFT), n, &in))
				return -1;
			seen += n;
		}
	} else {
		/* windows spread evenly, the first at the start, the last at the end */
		for (unsigned w = 0; w < WINDOWS; w++) {
			uint64_t at = (pages - WINDOW) * w / (WINDOWS - 1);

			if (!count(a + (at << PAGE_SHIFT), WINDOW, &in))
				return -1;
			seen += WINDOW;
		}
	}
	return in * 8 >= seen * 7;
}

int scratch__dense_measure(struct tcache *tc, uint32_t id, bool zeroed, uint64_t from,
                           uint64_t size)
{
	const uint32_t bit = UINT32_C(1) << band(size);
	int whole = written_whole(id, from, size);

	if (whole < 0)
		return -1; /* no verdict */
	tc->dense_known[zeroed] |= bit;
	if (whole)
		tc->dense[zeroed] |= bit;
	else
		tc->dense[zeroed] &= ~bit;
	return whole;
}

bool scratch__dense_peek(struct tcache *tc, uint32_t id, bool zeroed, uint64_t from, uint64_t size,
                         bool spec)
{
	const uint32_t bit = UINT32_C(1) << band(size);

	if (!spec && (tc->dense_known[zeroed] & tc->dense[zeroed] & bit))
		return false; /* nothing to learn */
	if (written_whole(id, from, size) != 1)
		return false;
	tc->dense_known[zeroed] |= bit;
	tc->dense[zeroed] |= bit;
	return true;
}
