/*
 * workspace.c - the owning workspace (scratch_workspace_*, scratch_team_*).
 *
 * A workspace owns team sets. A team set holds what one parallel call of a
 * GEMM-like consumer needs: per-member slots (A block, tile, scatter
 * scratch), a shared panel, the scatter vector (every member's scatter
 * slot, so members can read each other's after a barrier) and a barrier.
 * A lease hands one team set to one call exclusively; concurrent calls get
 * different sets, and a set goes back to the workspace on release, keeping
 * its buffers for the next call.
 *
 * Each member's slots are acquired by the thread that calls
 * scratch_team_slot() for that member, from that thread's pool, so the
 * pages are first touched where they are used. Growth is the only slow
 * path: the lookup of a big enough slot takes no lock.
 *
 * A lease made by a thread that is already inside a call on the same
 * workspace (it holds a lease, or runs a member of an execute) would
 * otherwise have to share or wait; it gets a fresh call-local team instead,
 * whose buffers are not counted, not traced and freed on release.
 *
 * Accounting (under ws->lock, published to the owner block in one seq
 * bracket), exact whenever no workspace call is in flight:
 *
 *   retained    == sum of block capacities of all kept team sets
 *   leased      == the part of retained in sets leased right now
 *   panel_bytes == the part of retained that is panels
 *   leased <= retained, panel_bytes <= retained
 *
 * Every step that can fail (acquire, mapping) happens before any counter
 * or pointer changes, so a failure halfway leaves the numbers exact.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "debug.h"
#include "internal.h"
#include "workers.h"

#define MAX_MEMBERS   SCRATCH_WORKERS_MAX
#define TRACE_RECORDS 4096 /* growth records a traced workspace buffers */
#define BARRIER_SPIN  4000

struct slot {
	void *p;
	size_t cap;
};

/* One thread's membership in a workspace call: a list through the
 * thread's stack frames and leased teams, newest first. */
struct held {
	const struct scratch_workspace *ws;
	struct held *next;
};

static __thread struct held *tls_held __attribute__((tls_model("initial-exec")));
/* Its address tells threads apart (valid while the thread lives). */
static __thread char tls_token __attribute__((tls_model("initial-exec")));

/* Sense-reversing barrier: the last arrival resets the count and bumps the
 * phase; the others spin on the phase, then sleep on it. */
struct barrier {
	uint32_t count;
	uint32_t phase;
	uint32_t sleepers;
	uint32_t n;
};

struct scratch_team {
	struct scratch_workspace *ws;
	struct scratch_team *next; /* in ws->teams */
	bool leased;
	bool local; /* call-local: not in ws->teams, not counted */
	const char *holder;
	struct held held;
	unsigned members;
	uint64_t bytes; /* slots and panel */
	struct slot panel;
	struct barrier bar __attribute__((aligned(SCRATCH_CACHELINE)));
	void *scatter[MAX_MEMBERS];
	struct slot slots[MAX_MEMBERS][SCRATCH_SLOT_KINDS];
};

struct scratch_workspace {
	pthread_mutex_t lock;
	bool traced;
	uint32_t owner;
	struct scratch__owner_counters *oc; /* segment block, or &priv */
	struct scratch__owner_counters priv;
	struct scratch_team *teams;
	uint64_t nteams, leases, local_leases, rebuilds, lost;
	uint64_t locals_out; /* call-local teams leased now (destroy waits for 0) */
	uint64_t retained, leased, panel_bytes, growths;
	size_t map_bytes;
	/* growth records, a ring of TRACE_RECORDS when traced */
	struct scratch_growth *rec;
	uint64_t rec_head, rec_tail;
};

static size_t pool_min(void)
{
	size_t min, max;

	return scratch_range(&min, &max) ? min : 0;
}

/* Caller holds ws->lock. */
#if defined(SCRATCH_DEBUG)
/* The file header's equations, from the kept teams (ws->lock held). */
static void check_accounts(const struct scratch_workspace *ws)
{
	uint64_t retained = 0, leased = 0, panels = 0;

	for (const struct scratch_team *t = ws->teams; t; t = t->next) {
		uint64_t bytes = t->panel.cap;

		for (unsigned m = 0; m < MAX_MEMBERS; m++)
			for (unsigned k = 0; k < SCRATCH_SLOT_KINDS; k++)
				bytes += t->slots[m][k].cap;
		SCRATCH_ASSERT(!t->local && bytes == t->bytes);
		retained += t->bytes;
		leased += t->leased ? t->bytes : 0;
		panels += t->panel.cap;
	}
	SCRATCH_ASSERT(retained == ws->retained);
	SCRATCH_ASSERT(leased == ws->leased);
	SCRATCH_ASSERT(panels == ws->panel_bytes);
	SCRATCH_ASSERT(ws->leased <= ws->retained && ws->panel_bytes <= ws->retained);
}
#else
static inline void check_accounts(const struct scratch_workspace *ws)
{
	(void)ws;
}
#endif

static void publish(struct scratch_workspace *ws)
{
	struct scratch__owner_counters *oc = ws->oc;

	scratch__seq_begin(&oc->seq);
	SCRATCH__STORE(&oc->retained, ws->retained);
	SCRATCH__STORE(&oc->leased, ws->leased);
	SCRATCH__STORE(&oc->panel_bytes, ws->panel_bytes);
	SCRATCH__STORE(&oc->growths, ws->growths);
	scratch__seq_end(&oc->seq);
	check_accounts(ws);
}

static bool held_by_me(const struct scratch_workspace *ws)
{
	for (const struct held *h = tls_held; h; h = h->next)
		if (h->ws == ws)
			return true;
	return false;
}

static void held_push(struct held *h, const struct scratch_workspace *ws)
{
	h->ws = ws;
	h->next = tls_held;
	tls_held = h;
}

static void held_pop(struct held *h)
{
	for (struct held **pp = &tls_held; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			return;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Creation and destruction                                               */
/* ---------------------------------------------------------------------- */

scratch_workspace_t *scratch_workspace_new(const char *name, unsigned flags)
{
	size_t bytes = sizeof(struct scratch_workspace);
	struct scratch_workspace *ws;

	if (flags & ~SCRATCH_WORKSPACE_TRACED) {
		errno = EINVAL;
		return NULL;
	}
	if (flags & SCRATCH_WORKSPACE_TRACED)
		bytes += TRACE_RECORDS * sizeof(struct scratch_growth);
	ws = scratch__os_map(bytes);
	if (!ws) {
		errno = ENOMEM;
		return NULL;
	}
	ws->map_bytes = bytes;
	pthread_mutex_init(&ws->lock, NULL);
	if (flags & SCRATCH_WORKSPACE_TRACED) {
		ws->traced = true;
		ws->rec = (struct scratch_growth *)(void *)(ws + 1);
	}
	(void)scratch__init();
	ws->owner = scratch__owner_register(SCRATCH__OWNER_WORKSPACE, name ? name : "workspace");
	ws->oc = ws->owner ? scratch__owner_counters(ws->owner) : NULL;
	if (!ws->oc)
		ws->oc = &ws->priv;
	publish(ws);
	return ws;
}

/* Give every block of t back; returns the bytes. Counters are the caller's. */
static uint64_t team_empty(struct scratch_team *t)
{
	uint64_t bytes = t->bytes;

	for (unsigned m = 0; m < MAX_MEMBERS; m++) {
		for (unsigned k = 0; k < SCRATCH_SLOT_KINDS; k++) {
			if (t->slots[m][k].p)
				scratch_release(t->slots[m][k].p);
			t->slots[m][k] = (struct slot){NULL, 0};
		}
		t->scatter[m] = NULL;
	}
	if (t->panel.p)
		scratch_release(t->panel.p);
	t->panel = (struct slot){NULL, 0};
	t->bytes = 0;
	return bytes;
}

/* Drop an idle kept team: blocks, counters and metadata. ws->lock held. */
static uint64_t team_drop(struct scratch_workspace *ws, struct scratch_team **link)
{
	struct scratch_team *t = *link;
	uint64_t panel = t->panel.cap, bytes;

	bytes = team_empty(t);
	ws->retained -= bytes;
	ws->panel_bytes -= panel;
	ws->nteams--;
	*link = t->next;
	scratch__os_unmap(t, sizeof(*t));
	return bytes;
}

int scratch_workspace_destroy(scratch_workspace_t *ws)
{
	if (!ws)
		return 0;
	pthread_mutex_lock(&ws->lock);
	bool busy = ws->locals_out > 0; /* call-local teams are in no list */
	for (struct scratch_team *t = ws->teams; t && !busy; t = t->next)
		busy = t->leased;
	if (busy) {
		pthread_mutex_unlock(&ws->lock);
		return -EBUSY;
	}
	while (ws->teams)
		team_drop(ws, &ws->teams);
	publish(ws);
	pthread_mutex_unlock(&ws->lock);
	if (ws->owner)
		scratch__owner_unregister(ws->owner);
	pthread_mutex_destroy(&ws->lock);
	scratch__os_unmap(ws, ws->map_bytes);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Leases                                                                 */
/* ---------------------------------------------------------------------- */

/* (Re)build the barrier and the scatter vector for n members. Only while
 * no member runs: at lease time, by the leasing thread. */
static void team_shape(struct scratch_team *t, unsigned n)
{
	t->members = n;
	t->bar = (struct barrier){.n = n};
	for (unsigned m = 0; m < MAX_MEMBERS; m++)
		t->scatter[m] = m < n ? t->slots[m][SCRATCH_SLOT_SCATTER].p : NULL;
}

static struct scratch_team *team_new(struct scratch_workspace *ws, unsigned members)
{
	struct scratch_team *t = scratch__os_map(sizeof(*t));

	if (!t)
		return NULL;
	t->ws = ws;
	team_shape(t, members);
	return t;
}

/* An idle kept team, preferring one of the same shape. ws->lock held. */
static struct scratch_team *team_find_idle(struct scratch_workspace *ws, unsigned members)
{
	struct scratch_team *any = NULL;

	for (struct scratch_team *t = ws->teams; t; t = t->next) {
		if (t->leased)
			continue;
		if (t->members == members)
			return t;
		any = any ? any : t;
	}
	return any;
}

static SCRATCH_COLD scratch_team_t *lease_local(struct scratch_workspace *ws, unsigned members)
{
	struct scratch_team *t = team_new(ws, members);

	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->local = true;
	t->leased = true;
	t->holder = &tls_token;
	held_push(&t->held, ws);
	pthread_mutex_lock(&ws->lock);
	ws->local_leases++;
	ws->locals_out++;
	pthread_mutex_unlock(&ws->lock);
	return t;
}

scratch_team_t *scratch_workspace_lease(scratch_workspace_t *ws, unsigned members)
{
	struct scratch_team *t;

	if (!ws || members == 0 || members > MAX_MEMBERS) {
		errno = EINVAL;
		return NULL;
	}
	if (held_by_me(ws))
		return lease_local(ws, members);
	pthread_mutex_lock(&ws->lock);
	t = team_find_idle(ws, members);
	if (!t) {
		t = team_new(ws, members);
		if (!t) {
			pthread_mutex_unlock(&ws->lock);
			errno = ENOMEM;
			return NULL;
		}
		t->next = ws->teams;
		ws->teams = t;
		ws->nteams++;
	} else if (t->members != members) {
		team_shape(t, members);
		ws->rebuilds++;
	}
	t->leased = true;
	t->holder = &tls_token;
	ws->leases++;
	ws->leased += t->bytes;
	publish(ws);
	pthread_mutex_unlock(&ws->lock);
	held_push(&t->held, ws);
	return t;
}

int scratch_team_release(scratch_team_t *t)
{
	struct scratch_workspace *ws;

	if (!t || !t->leased)
		return -EINVAL;
	if (t->holder != &tls_token)
		return -EPERM;
	ws = t->ws;
	held_pop(&t->held);
	if (t->local) {
		team_empty(t);
		scratch__os_unmap(t, sizeof(*t));
		pthread_mutex_lock(&ws->lock);
		ws->locals_out--;
		pthread_mutex_unlock(&ws->lock);
		return 0;
	}
	pthread_mutex_lock(&ws->lock);
	t->leased = false;
	t->holder = NULL;
	ws->leased -= t->bytes;
	publish(ws);
	pthread_mutex_unlock(&ws->lock);
	return 0;
}

unsigned scratch_team_members(const scratch_team_t *t)
{
	return t ? t->members : 0;
}

/* ---------------------------------------------------------------------- */
/* Growing slots and the panel                                            */
/* ---------------------------------------------------------------------- */

/* ws->lock held. */
static void record(struct scratch_workspace *ws, uint64_t bytes)
{
	if (!ws->traced)
		return;
	if (ws->rec_head - ws->rec_tail == TRACE_RECORDS) {
		ws->lost++;
		return;
	}
	ws->rec[ws->rec_head % TRACE_RECORDS] =
	        (struct scratch_growth){.tid = (uint64_t)scratch__os_gettid(), .bytes = bytes};
	ws->rec_head++;
}

/*
 * Replace the block in s by one of at least bytes from the calling
 * thread's pool. The new block is acquired first: if that fails, nothing
 * has changed. The old block's contents are not kept.
 */
static SCRATCH_COLD void *grow(struct scratch_team *t, struct slot *s, size_t bytes, bool panel,
                               void **scatter)
{
	struct scratch_workspace *ws = t->ws;
	size_t min = pool_min(), cap;
	uint32_t saved = scratch__current_owner;
	struct slot old = *s;
	void *p;

	/* Call-local buffers are not the workspace's: no owner, no trace. */
	if (!t->local)
		scratch__current_owner = ws->owner;
	p = scratch_acquire(bytes < min ? min : bytes);
	scratch__current_owner = saved;
	if (!p)
		return NULL;
	cap = scratch_usable_size(p);
	pthread_mutex_lock(&ws->lock);
	*s = (struct slot){p, cap};
	if (scatter)
		*scatter = p;
	t->bytes += cap - old.cap;
	if (!t->local) {
		ws->retained += cap - old.cap;
		ws->leased += cap - old.cap;
		if (panel)
			ws->panel_bytes += cap - old.cap;
		ws->growths++;
		record(ws, cap);
		publish(ws);
	}
	pthread_mutex_unlock(&ws->lock);
	if (old.p)
		scratch_release(old.p);
	return p;
}

void *scratch_team_slot(scratch_team_t *t, unsigned member, enum scratch_slot kind, size_t bytes)
{
	struct slot *s;

	if (!t || !t->leased || member >= t->members || (unsigned)kind >= SCRATCH_SLOT_KINDS) {
		errno = EINVAL;
		return NULL;
	}
	s = &t->slots[member][kind];
	if (likely(s->p && s->cap >= bytes))
		return s->p;
	return grow(t, s, bytes, false, kind == SCRATCH_SLOT_SCATTER ? &t->scatter[member] : NULL);
}

void *scratch_team_panel(scratch_team_t *t, size_t bytes)
{
	if (!t || !t->leased) {
		errno = EINVAL;
		return NULL;
	}
	if (likely(t->panel.p && t->panel.cap >= bytes))
		return t->panel.p;
	return grow(t, &t->panel, bytes, true, NULL);
}

void *const *scratch_team_scatter(const scratch_team_t *t)
{
	return t ? t->scatter : NULL;
}

/* ---------------------------------------------------------------------- */
/* Barrier                                                                */
/* ---------------------------------------------------------------------- */

/*
 * Wait until all members arrived. Returns true on exactly one of them.
 * Wake-ups cannot be lost, by the argument of workers.c: a sleeper raises
 * sleepers and then re-reads the phase; the last arrival bumps the phase
 * and then reads sleepers (all sequentially consistent), and futex_wait
 * re-checks the phase in the kernel.
 */
bool scratch_team_barrier(scratch_team_t *t)
{
	struct barrier *b;
	uint32_t phase;

	if (!t || t->members <= 1)
		return true;
	b = &t->bar;
	phase = __atomic_load_n(&b->phase, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->phase, phase + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST))
			scratch__os_futex_wake(&b->phase, INT_MAX);
		return true;
	}
	for (int i = 0; i < BARRIER_SPIN; i++) {
		if (__atomic_load_n(&b->phase, __ATOMIC_ACQUIRE) != phase)
			return false;
		scratch__spin_poll(i);
	}
	__atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&b->phase, __ATOMIC_SEQ_CST) == phase)
		scratch__os_futex_wait(&b->phase, phase, -1);
	__atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_RELAXED);
	return false;
}

/* ---------------------------------------------------------------------- */
/* Execute on a worker pool                                               */
/* ---------------------------------------------------------------------- */

struct execution {
	struct scratch_workspace *ws;
	scratch_team_fn fn;
	void *ctx;
	struct scratch_team *team;
};

/* On the dispatching thread, once the pool knows how many participants
 * the call gets: lease a team of exactly that shape. */
static int execute_prepare(void *ctx, unsigned n)
{
	struct execution *e = ctx;

	e->team = scratch_workspace_lease(e->ws, n);
	return e->team ? 0 : -errno;
}

static void execute_member(void *ctx, unsigned participant, unsigned n)
{
	struct execution *e = ctx;
	struct held h;

	/* A lease on this workspace from inside fn is re-entrant. */
	held_push(&h, e->ws);
	e->fn(e->ctx, e->team, participant, n);
	held_pop(&h);
}

int scratch_workspace_execute(scratch_workspace_t *ws, scratch_workers_t *w, scratch_team_fn fn,
                              void *ctx)
{
	struct execution e = {.ws = ws, .fn = fn, .ctx = ctx};
	int rc;

	if (!ws || !fn)
		return -EINVAL;
	rc = scratch__workers_run_prepared(w, execute_prepare, execute_member, &e);
	if (rc == 0)
		scratch_team_release(e.team);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Trim, stats, growth records                                            */
/* ---------------------------------------------------------------------- */

size_t scratch_workspace_trim(scratch_workspace_t *ws)
{
	uint64_t bytes = 0;

	if (!ws)
		return 0;
	pthread_mutex_lock(&ws->lock);
	for (struct scratch_team **link = &ws->teams; *link;) {
		if ((*link)->leased)
			link = &(*link)->next;
		else
			bytes += team_drop(ws, link);
	}
	publish(ws);
	pthread_mutex_unlock(&ws->lock);
	return (size_t)bytes;
}

int scratch_workspace_stats(scratch_workspace_t *ws, struct scratch_workspace_stats *ret_stats)
{
	struct scratch_workspace_stats st;
	size_t n;

	if (!ws || !ret_stats || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	pthread_mutex_lock(&ws->lock);
	st = (struct scratch_workspace_stats){
	        .size = ret_stats->size,
	        .version = SCRATCH_WORKSPACE_STATS_VERSION,
	        .retained = ws->retained,
	        .leased = ws->leased,
	        .panel_bytes = ws->panel_bytes,
	        .teams = ws->nteams,
	        .leases = ws->leases,
	        .local_leases = ws->local_leases,
	        .rebuilds = ws->rebuilds,
	        .growths = ws->growths,
	        .lost = ws->lost,
	};
	pthread_mutex_unlock(&ws->lock);
	memcpy(ret_stats, &st, n);
	return 0;
}

size_t scratch_workspace_growths(scratch_workspace_t *ws, struct scratch_growth *ret, size_t max)
{
	size_t n = 0;

	if (!ws || !ret)
		return 0;
	pthread_mutex_lock(&ws->lock);
	for (; n < max && ws->rec_tail != ws->rec_head; n++, ws->rec_tail++)
		ret[n] = ws->rec[ws->rec_tail % TRACE_RECORDS];
	pthread_mutex_unlock(&ws->lock);
	return n;
}
