/*
 * arena.c - bump allocation over pool blocks (scratch_arena_*).
 *
 * An arena is a short stack of chunks, each a block from the scratch pool
 * of the thread that needed it, and a bump offset into the newest one.
 * Allocation bumps; a full chunk makes the arena take a new one at least
 * twice the largest so far, so a workload that repeats (one token, one
 * frame) settles on a single chunk after a few resets, and from then on
 * reset is O(1): it keeps the largest chunk and gives the others back.
 *
 * The chunks are pool blocks, so the pool's retained and leased counters
 * already count them (for the thread that acquired each). The arena's own
 * owner counters say how they are used:
 *
 *   retained == sum of chunk capacities
 *   leased   == bytes handed out since the last reset or rewind (padding
 *               and the unused tails of full chunks included)
 *   leased   <= retained
 *
 * Its descriptor lives in a page of its own (scratch__os_map), not in a
 * chunk: chunks hold user data only, and the arena never calls malloc.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "debug.h"
#include "internal.h"

#define MAX_CHUNKS    48
#define DEFAULT_CHUNK (1u << 20)
#define DEFAULT_ALIGN 16
#define MAX_ALIGN     4096 /* chunks are page aligned */
#define REWIND_DEPTH  16   /* rewinds remembered to tell stale marks */

struct chunk {
	char *base;
	size_t cap;
	size_t used;
	uint64_t id; /* the arena's clock when the chunk came: a mark older
	              * than it was taken in a chunk since given back */
};

/* A rewind: when, and the position it went back to. */
struct rewind {
	uint64_t at;
	uint32_t chunk;
	size_t used;
};

struct scratch_arena {
	unsigned n; /* chunks in use; chunk[n-1] is the one we bump in */
	size_t first;
	uint64_t clock;  /* ticks at every new chunk, reset and rewind */
	uint64_t leased; /* used bytes of all chunks */
	uint64_t retained;
	uint64_t peak;
	uint64_t resets;
	uint32_t owner;
	struct scratch__owner_counters *oc; /* segment block, or &priv */
	struct scratch__owner_counters priv;
	struct chunk chunk[MAX_CHUNKS];
	/* The rewinds that can still make a mark stale, oldest first: each
	 * went to a later position than the one before it (a rewind to an
	 * earlier position makes the later ones redundant), so the first
	 * entry newer than a mark holds the lowest position it may exceed. */
	unsigned nrw;
	struct rewind rw[REWIND_DEPTH];
};

#if defined(SCRATCH_DEBUG)
/* The file header's equations, from the chunks. */
static void check_accounts(const struct scratch_arena *a)
{
	uint64_t retained = 0, leased = 0;

	for (unsigned i = 0; i < a->n; i++) {
		SCRATCH_ASSERT(a->chunk[i].base != NULL && a->chunk[i].used <= a->chunk[i].cap);
		retained += a->chunk[i].cap;
		leased += a->chunk[i].used;
	}
	SCRATCH_ASSERT(retained == a->retained);
	SCRATCH_ASSERT(leased == a->leased);
	SCRATCH_ASSERT(a->leased <= a->retained && a->leased <= a->peak);
}
#else
static inline void check_accounts(const struct scratch_arena *a)
{
	(void)a;
}
#endif

static void publish(struct scratch_arena *a)
{
	struct scratch__owner_counters *oc = a->oc;

	scratch__seq_begin(&oc->seq);
	SCRATCH__STORE(&oc->retained, a->retained);
	SCRATCH__STORE(&oc->leased, a->leased);
	scratch__seq_end(&oc->seq);
	check_accounts(a);
}

scratch_arena_t *scratch_arena_new(const char *name, size_t chunk_size)
{
	struct scratch_arena *a = scratch__os_map(sizeof(*a));

	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->first = chunk_size ? chunk_size : DEFAULT_CHUNK;
	(void)scratch__init();
	a->owner = scratch__owner_register(SCRATCH__OWNER_ARENA, name ? name : "arena");
	a->oc = a->owner ? scratch__owner_counters(a->owner) : NULL;
	if (!a->oc)
		a->oc = &a->priv;
	publish(a);
	return a;
}

/* Give chunk c back to its pool and drop it from the counters. */
static void chunk_drop(struct scratch_arena *a, struct chunk *c)
{
	scratch_release(c->base);
	a->retained -= c->cap;
	a->leased -= c->used;
	memset(c, 0, sizeof(*c));
}

/*
 * Take a chunk that can hold size bytes at offset 0 (chunks are page
 * aligned, so any alignment the arena accepts is met there). The tail of
 * the chunk being left stays counted as leased until reset or rewind.
 */
static SCRATCH_COLD int chunk_grow(struct scratch_arena *a, size_t size)
{
	size_t want = a->first, min, max, largest = 0;
	struct chunk *c;
	uint32_t saved;
	void *p;

	if (a->n == MAX_CHUNKS)
		return -ENOMEM;
	if (!scratch_range(&min, &max))
		return -ERANGE;
	for (unsigned i = 0; i < a->n; i++)
		largest = a->chunk[i].cap > largest ? a->chunk[i].cap : largest;
	if (largest > want / 2)
		want = largest > max / 2 ? max : 2 * largest;
	if (want > max)
		want = max;
	if (size > want)
		want = size; /* above max_size the pool refuses: ERANGE */
	if (want < min)
		want = min;
	saved = scratch__current_owner;
	scratch__current_owner = a->owner;
	p = scratch_acquire(want);
	scratch__current_owner = saved;
	if (!p)
		return errno == ERANGE ? -ERANGE : -ENOMEM;
	if (a->n > 0) {
		/* the old head's tail is lost until reset: count it as used */
		struct chunk *h = &a->chunk[a->n - 1];

		a->leased += h->cap - h->used;
		h->used = h->cap;
	}
	c = &a->chunk[a->n++];
	c->base = p;
	c->cap = scratch_usable_size(p);
	c->used = 0;
	c->id = ++a->clock;
	a->retained += c->cap;
	SCRATCH__ADD(&a->oc->growths, 1);
	return 0;
}

void *scratch_arena_alloc(scratch_arena_t *a, size_t size, size_t align)
{
	struct chunk *c;
	size_t off, end;
	int rc;

	if (!a || (align & (align - 1)) != 0 || align > MAX_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	align = align ? align : DEFAULT_ALIGN;
	if (size == 0)
		size = 1; /* as malloc(0): a pointer of its own, inside the chunk */
	c = a->n ? &a->chunk[a->n - 1] : NULL;
	if (c) {
		off = (c->used + align - 1) & ~(align - 1);
		if (!__builtin_add_overflow(off, size, &end) && end <= c->cap)
			goto bump;
	}
	rc = chunk_grow(a, size);
	if (rc != 0) {
		errno = -rc;
		return NULL;
	}
	c = &a->chunk[a->n - 1];
	off = 0;
	end = size;
bump:
	a->leased += end - c->used;
	c->used = end;
	if (a->leased > a->peak)
		a->peak = a->leased;
	publish(a);
	return c->base + off;
}

/* Keep the largest chunk, empty, at the bottom; give the rest back. Marks
 * taken before stop being valid: the kept chunk gets a new id. */
void scratch_arena_reset(scratch_arena_t *a)
{
	unsigned keep = 0;

	if (!a || a->n == 0)
		return;
	for (unsigned i = 1; i < a->n; i++)
		keep = a->chunk[i].cap > a->chunk[keep].cap ? i : keep;
	for (unsigned i = 0; i < a->n; i++)
		if (i != keep)
			chunk_drop(a, &a->chunk[i]);
	a->chunk[0] = a->chunk[keep];
	if (keep != 0)
		memset(&a->chunk[keep], 0, sizeof(a->chunk[keep]));
	a->leased -= a->chunk[0].used;
	a->chunk[0].used = 0;
	a->chunk[0].id = ++a->clock;
	a->nrw = 0; /* every older mark is stale by the chunk's new id */
	a->n = 1;
	a->resets++;
	publish(a);
}

int scratch_arena_mark(const scratch_arena_t *a, struct scratch_arena_mark *ret_mark)
{
	if (!a || !ret_mark)
		return -EINVAL;
	if (a->n == 0) {
		*ret_mark = (struct scratch_arena_mark){.chunk = 0, .id = 0, .used = 0};
		return 0;
	}
	ret_mark->chunk = a->n - 1;
	ret_mark->id = a->clock; /* >= 1: the arena has a chunk */
	ret_mark->used = a->chunk[a->n - 1].used;
	return 0;
}

static bool pos_after(uint32_t c1, size_t u1, uint32_t c2, size_t u2)
{
	return c1 > c2 || (c1 == c2 && u1 > u2);
}

/*
 * A mark is stale when its chunk came after it (the one it was taken in was
 * given back, or the arena was reset since), when it lies ahead of the
 * present, or when a rewind since it went to an earlier position. The last
 * is known for the REWIND_DEPTH latest rewinds to ever later positions:
 * past that depth, an old stale mark can pass.
 */
static bool mark_valid(const struct scratch_arena *a, const struct scratch_arena_mark *m)
{
	const struct chunk *c;

	if (m->chunk >= a->n || m->id > a->clock)
		return false;
	c = &a->chunk[m->chunk];
	if (c->id > m->id || m->used > c->cap)
		return false;
	if (m->chunk == a->n - 1 && m->used > c->used)
		return false;
	for (unsigned i = 0; i < a->nrw; i++)
		if (a->rw[i].at > m->id)
			return !pos_after(m->chunk, m->used, a->rw[i].chunk, a->rw[i].used);
	return true;
}

static void remember_rewind(struct scratch_arena *a, uint32_t chunk, size_t used)
{
	while (a->nrw > 0 &&
	       !pos_after(chunk, used, a->rw[a->nrw - 1].chunk, a->rw[a->nrw - 1].used))
		a->nrw--;
	if (a->nrw == REWIND_DEPTH) {
		memmove(&a->rw[0], &a->rw[1], (REWIND_DEPTH - 1) * sizeof(a->rw[0]));
		a->nrw--;
	}
	a->rw[a->nrw++] = (struct rewind){.at = ++a->clock, .chunk = chunk, .used = used};
}

/*
 * Free everything allocated after mark: chunks taken since go back to the
 * pool, and the mark's chunk bumps from the mark's offset again. A stale
 * mark (see mark_valid) gives -EINVAL and changes nothing. A mark of the
 * empty arena is always valid: it empties the arena.
 */
int scratch_arena_rewind(scratch_arena_t *a, const struct scratch_arena_mark *mark)
{
	struct chunk *c;

	if (!a || !mark)
		return -EINVAL;
	if (mark->id == 0) {
		/* a mark of the empty arena: everything goes, whenever taken */
		while (a->n > 1)
			chunk_drop(a, &a->chunk[--a->n]);
		if (a->n == 1) {
			a->leased -= a->chunk[0].used;
			a->chunk[0].used = 0;
			remember_rewind(a, 0, 0);
		}
		publish(a);
		return 0;
	}
	if (!mark_valid(a, mark))
		return -EINVAL;
	c = &a->chunk[mark->chunk];
	while (a->n - 1 > mark->chunk)
		chunk_drop(a, &a->chunk[--a->n]);
	a->leased -= c->used - mark->used;
	c->used = mark->used;
	remember_rewind(a, mark->chunk, mark->used);
	publish(a);
	return 0;
}

void scratch_arena_destroy(scratch_arena_t *a)
{
	if (!a)
		return;
	while (a->n > 0)
		chunk_drop(a, &a->chunk[--a->n]);
	publish(a);
	if (a->owner)
		scratch__owner_unregister(a->owner);
	scratch__os_unmap(a, sizeof(*a));
}

int scratch_arena_stats(const scratch_arena_t *a, struct scratch_arena_stats *ret_stats)
{
	struct scratch_arena_stats st = {0};
	size_t n;

	if (!a || !ret_stats || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	st.size = ret_stats->size;
	st.version = SCRATCH_ARENA_STATS_VERSION;
	st.chunks = a->n;
	st.retained = a->retained;
	st.used = a->leased;
	st.peak_used = a->peak;
	st.resets = a->resets;
	st.growths = SCRATCH__LOAD(&a->oc->growths);
	memcpy(ret_stats, &st, n);
	return 0;
}
