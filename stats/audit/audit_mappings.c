/*
 * audit_mappings.c - the whole process in the audit's result (audit.h):
 * each mapping of the last whole-process pass (audit_inventory.c) joined
 * with the first touches (touch.h) and the page-cache looks, into
 * r->mappings, the per-category and per-node totals, and each mapping's
 * users, their evidence and the bytes off their nodes. The findings made
 * of them are audit_findings.c's.
 *
 * A mapping's per-node bytes are numa_maps' own. Everything per page
 * (first toucher, its node against where the page sits, provenance, the
 * placement bar) is read from its probes, each standing for probe_bytes
 * of present memory: exact when every present page was probed.
 *
 * A first toucher is a page's own sample. In launch mode, where every
 * fault since the exec is sampled, a present page without a sample of its
 * own was mapped by a fault on another page of its 2 MiB frame: one read
 * fault on a file maps its neighbours (fault-around, 64 KiB by default;
 * a whole large folio on newer kernels, which measured about 0.8 MiB a
 * fault here), a transparent huge page is 2 MiB, and none of these
 * crosses a page table (2 MiB). It takes that fault's thread when one
 * thread alone faulted in the frame, and stays unknown otherwise. In
 * attach mode a page without its own sample is unknown: it may have been
 * mapped before the attach.
 *
 * Users (who reads or writes a mapping) cannot be measured outside the
 * pools without a PMU, so each category says how it knows: a stack is its
 * thread's (its stack pointer is in it, measured); an arena heap is the
 * thread's that made it (inferred: glibc attaches a thread to the arena it
 * creates; the first toucher of most of it); a file, shared memory, the
 * main heap or anonymous memory is "shared by the compute threads"
 * (inferred: a risk, not a measurement). A mapping's remote bytes are
 * those its worst-placed user node reads from other nodes: the largest,
 * over the nodes its users run on, of the bytes not on that node.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_int.h"
#include "maps.h"
#include "text.h"
#include "touch.h"

#define FRAME_BYTES (2u << 20) /* what one fault may map: a page table's span */

/* ---------------------------------------------------------------------- */
/* Page-cache provenance                                                   */
/* ---------------------------------------------------------------------- */

const char *audit_prov_name(enum audit_prov p)
{
	static const char *const n[] = {"faulted", "during", "readahead", "before", "unknown"};

	return (unsigned)p < AUDIT_PROVS ? n[p] : "unknown";
}

/* The look that covers the file page of address page of mapping e. */
static const struct alook *look_of(const struct audit *a, const struct maps_entry *e, uint64_t page,
                                   uint64_t *ret_bit)
{
	uint64_t off = e->offset + (page - e->start);

	for (size_t i = 0; i < a->nlooks; i++) {
		const struct alook *l = &a->looks[i];

		if (l->inode == e->inode && l->dev_major == e->dev_major &&
		    l->dev_minor == e->dev_minor && off >= l->offset && off < l->offset + l->len) {
			*ret_bit = (off - l->offset) / TOUCH_PAGE;
			return l;
		}
	}
	return NULL;
}

/* Did this process fault a page within ra pages below page, before the
 * look (generation gen), in a chain that began with a major fault? */
static bool read_ahead(const struct audit *a, const struct maps_entry *e, uint64_t page,
                       const struct alook *l)
{
	const struct touch_map *m = &a->touch;
	uint64_t lo = page - l->ra_pages * TOUCH_PAGE, major;
	size_t i = touch_index(m, page);

	if (l->ra_pages == 0 || lo < e->start)
		lo = e->start;
	/* a major fault of this process in the mapping before the look */
	major = touch_major_next(m, e->start, e->end);
	for (; major != 0; major = touch_major_next(m, major + TOUCH_PAGE, e->end)) {
		const struct touch_run *r = touch_lookup(m, major);

		if (r != NULL && r->gen < l->gen)
			break;
	}
	if (major == 0 || major > page)
		return false;
	/* a run before the look ending within the window below page */
	while (i-- > 0) {
		const struct touch_run *r = &m->r[i];

		if (r->page + (uint64_t)r->pages * TOUCH_PAGE <= lo)
			return false;
		if (r->gen < l->gen)
			return true;
	}
	return false;
}

/* The provenance class of a present file page, with the run of its first
 * touch (NULL when none). */
static enum audit_prov provenance(const struct audit *a, const struct maps_entry *e, uint64_t page,
                                  const struct touch_run *own)
{
	const struct alook *l;
	uint64_t bit = 0;
	bool resident;

	if (touch_major(&a->touch, page))
		return AUDIT_PROV_FAULTED;
	l = look_of(a, e, page, &bit);
	if (l == NULL || l->resident == NULL)
		return AUDIT_PROV_UNKNOWN;
	resident = l->resident[bit / 8] & (1u << (bit % 8));
	if (!resident)
		return AUDIT_PROV_DURING;
	if (own != NULL && own->gen < l->gen)
		return read_ahead(a, e, page, l) ? AUDIT_PROV_READAHEAD : AUDIT_PROV_UNKNOWN;
	if (read_ahead(a, e, page, l))
		return AUDIT_PROV_READAHEAD;
	return l->at_attach ? AUDIT_PROV_UNKNOWN : AUDIT_PROV_BEFORE;
}

/* Whether the file of e sits on tmpfs or ramfs, as its look found. */
static bool pinned(const struct audit *a, const struct maps_entry *e)
{
	for (size_t i = 0; i < a->nlooks; i++)
		if (a->looks[i].inode == e->inode && a->looks[i].dev_major == e->dev_major &&
		    a->looks[i].dev_minor == e->dev_minor)
			return a->looks[i].pinned;
	return e->category == MAPS_SHM;
}

/* Why part of a mapping's provenance is unknown. */
static void prov_note(const struct audit *a, const struct maps_entry *e, struct audit_mapping *o)
{
	for (size_t i = 0; i < a->nlooks; i++) {
		const struct alook *l = &a->looks[i];

		if (l->inode != e->inode || l->dev_major != e->dev_major ||
		    l->dev_minor != e->dev_minor)
			continue;
		if (l->error != 0)
			snprintf(o->prov_note, sizeof(o->prov_note), "%s", l->note);
		else if (l->at_attach)
			snprintf(o->prov_note, sizeof(o->prov_note),
			         "attach mode: pages resident at the attach may have been touched "
			         "by this process before it");
		return;
	}
	snprintf(o->prov_note, sizeof(o->prov_note),
	         a->faults == NULL ? "no fault sampling: a look cannot be told from a touch"
	                           : "the file was not looked at");
}

/* ---------------------------------------------------------------------- */
/* Probes x first touches                                                  */
/* ---------------------------------------------------------------------- */

/* The run standing for page: its own, or in launch mode its frame's. */
static const struct touch_run *toucher_of(const struct audit *a, uint64_t page)
{
	return touch_lookup_window(&a->touch, page,
	                           a->mode == AUDIT_LAUNCH ? FRAME_BYTES : TOUCH_PAGE);
}

static int toucher_add(struct audit_mapping *o, unsigned *cap, pid_t tid, int cpu, int node,
                       uint64_t bytes)
{
	for (unsigned i = 0; i < o->ntouchers; i++)
		if (o->touchers[i].tid == tid) {
			o->touchers[i].bytes += bytes;
			return 0;
		}
	if (o->ntouchers == *cap) {
		unsigned n = *cap ? *cap * 2 : 4;
		struct audit_toucher *t = realloc(o->touchers, n * sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		o->touchers = t;
		*cap = n;
	}
	o->touchers[o->ntouchers++] = (struct audit_toucher){tid, cpu, node, bytes};
	return 0;
}

static int by_toucher_bytes(const void *x, const void *y)
{
	const struct audit_toucher *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

/* The bar cell of one probe: its node, or mixed when it differs. */
static void bar_add(struct audit_mapping *o, uint64_t page, int node)
{
	uint64_t cell = (page - o->start) * AUDIT_BAR / (o->end - o->start);
	int8_t *c = &o->bar[cell < AUDIT_BAR ? cell : AUDIT_BAR - 1];

	if (node < 0)
		return;
	if (*c == AUDIT_BAR_ABSENT)
		*c = (int8_t)node;
	else if (*c != node)
		*c = AUDIT_BAR_MIXED;
}

/* Mapping i's probes into o: touchers, sampled and unknown bytes, the
 * pages off their toucher's node, provenance, the bar. */
static int probes_join(struct join *j, size_t i, struct audit_mapping *o)
{
	struct audit *a = j->a;
	const struct maps_entry *e = &a->inv.e[i];
	const struct aprobes *p = &a->probes[i];
	bool files = e->category == MAPS_FILE || e->category == MAPS_SHM;
	unsigned cap = 0;

	memset(o->bar, AUDIT_BAR_ABSENT, sizeof(o->bar));
	if (p->n == 0)
		return 0;
	o->probes = p->n;
	o->exact = p->present <= p->n;
	o->probe_bytes = o->exact ? TOUCH_PAGE : p->present * TOUCH_PAGE / p->n;
	o->have_prov = files && e->inode != 0;
	o->cache_pinned = o->have_prov && pinned(a, e);
	for (size_t k = 0; k < p->n; k++) {
		const struct aprobe *q = &p->p[k];
		const struct touch_run *r = toucher_of(a, q->page);
		uint64_t w = o->probe_bytes;

		bar_add(o, q->page, q->node);
		if (o->have_prov)
			o->prov[provenance(a, e, q->page, touch_lookup(&a->touch, q->page))] += w;
		if (r == NULL) {
			o->unknown_bytes += w;
			continue;
		}
		{
			const struct touch_who *who = &a->touch.who[r->who];
			int tn = a->have_topo ? topology_cpu_node(&a->topo, who->cpu) : -1;
			struct audit_thread *t = audit__thread_find(a, who->tid, true);

			o->sampled_bytes += w;
			if (q->node >= 0 && tn >= 0 && q->node != tn)
				o->differs_bytes += w;
			if (t != NULL && e->category != MAPS_POOL)
				t->mapped_touched += w;
			if (toucher_add(o, &cap, who->tid, who->cpu, tn, w) != 0)
				return -ENOMEM;
		}
	}
	if (o->ntouchers > 1)
		qsort(o->touchers, o->ntouchers, sizeof(*o->touchers), by_toucher_bytes);
	if (o->have_prov && o->prov[AUDIT_PROV_UNKNOWN] > 0)
		prov_note(a, e, o);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Users                                                                   */
/* ---------------------------------------------------------------------- */

/* Mark the compute threads: those that used at least 5% of the busiest
 * thread's CPU time, and a tick. A run too short for the clock's ticks to
 * tell (the busiest under 20 ticks) counts every thread that ran or
 * faulted. */
static void compute_threads(struct audit *a)
{
	uint64_t most = 0;

	for (size_t i = 0; i < a->nthreads; i++)
		if (a->threads[i].t.cpu_ticks > most)
			most = a->threads[i].t.cpu_ticks;
	for (size_t i = 0; i < a->nthreads; i++) {
		struct audit_thread *t = &a->threads[i].t;

		if (most >= 20)
			t->compute = t->cpu_ticks >= 1 && t->cpu_ticks * 20 >= most;
		else
			t->compute = t->cpu_ticks > 0 || t->fault_nodes != 0;
	}
}

static void user_add(struct audit_mapping *o, pid_t tid, int node)
{
	audit__add_tid(o->users, &o->nusers, NULL, AUDIT_MAX_TIDS, tid);
	if (node >= 0 && node < TOPOLOGY_MAX_NODES)
		o->user_nodes |= (topology_nodeset_t)1 << node;
}

/* The bytes the worst-placed of the user nodes reads from other nodes. */
static uint64_t worst_remote(const struct audit_mapping *o)
{
	uint64_t worst = 0;

	for (int u = 0; u < TOPOLOGY_MAX_NODES; u++)
		if (o->user_nodes & ((topology_nodeset_t)1 << u)) {
			uint64_t off = o->resident - o->node_bytes[u];

			if (off > worst)
				worst = off;
		}
	return worst;
}

static void users(struct audit *a, struct audit_mapping *o)
{
	switch (o->category) {
	case MAPS_POOL:
	case MAPS_OTHER:
		/* the pools' users are the block table's (the blocks' join) */
		o->use_evidence = AUDIT_EV_LEASE;
		return;
	case MAPS_STACK:
		o->use_evidence = AUDIT_EV_STACK;
		if (o->thread > 0)
			user_add(o, o->thread, audit__thread_node(a, o->thread));
		break;
	case MAPS_HEAP:
		if (strcmp(o->path, "[heap]") != 0) {
			/* an arena heap: the thread that made it */
			o->use_evidence = AUDIT_EV_INFERRED;
			if (o->ntouchers > 0) {
				o->thread = o->touchers[0].tid;
				user_add(o, o->thread, audit__thread_node(a, o->thread));
			}
			break;
		}
		/* the main heap is everyone's */
		__attribute__((fallthrough));
	case MAPS_FILE:
	case MAPS_ANON:
	case MAPS_SHM:
		o->use_evidence = AUDIT_EV_INFERRED;
		for (size_t i = 0; i < a->nthreads; i++) {
			const struct audit_thread *t = &a->threads[i].t;

			if (t->compute)
				user_add(o, t->tid, t->node);
		}
		break;
	}
	o->remote_bytes = worst_remote(o);
}

/* ---------------------------------------------------------------------- */
/* The mappings                                                            */
/* ---------------------------------------------------------------------- */

static int mapping_make(struct join *j, size_t i, struct audit_mapping *o)
{
	struct audit *a = j->a;
	const struct maps_entry *e = &a->inv.e[i];

	memset(o, 0, sizeof(*o));
	o->start = e->start;
	o->end = e->end;
	o->category = e->category;
	memcpy(o->perms, e->perms, sizeof(o->perms));
	o->path = strdup(e->path);
	if (o->path == NULL)
		return -ENOMEM;
	text_mask_controls(o->path);
	snprintf(o->why, sizeof(o->why), "%s", e->why);
	snprintf(o->policy, sizeof(o->policy), "%s", e->policy);
	text_mask_controls(o->policy);
	o->thread = e->tid;
	o->resident = e->resident;
	for (unsigned n = 0; n < a->inv.nodes && n < TOPOLOGY_MAX_NODES; n++)
		o->node_bytes[n] = maps_node_bytes(&a->inv, i, n);
	return probes_join(j, i, o);
}

static void totals_add(struct audit_result *r, const struct audit_mapping *o)
{
	struct audit_category *c = &r->categories[o->category];

	c->mappings++;
	c->resident += o->resident;
	c->sampled_bytes += o->sampled_bytes;
	c->unknown_bytes += o->unknown_bytes;
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++) {
		c->node_bytes[n] += o->node_bytes[n];
		r->node_total[n] += o->node_bytes[n];
	}
}

/* A recognized engine, for the wording of its findings' fixes. */
static void engine(struct audit *a, struct audit_result *r)
{
	const char *base = strrchr(a->exe, '/');

	base = base != NULL ? base + 1 : a->exe;
	if (strncmp(base, "llama", 5) == 0)
		snprintf(r->engine, sizeof(r->engine), "llama.cpp");
	for (size_t i = 0; r->engine[0] == '\0' && i < r->nmappings; i++) {
		size_t n = strlen(r->mappings[i].path);

		if (n > 5 && strcmp(r->mappings[i].path + n - 5, ".gguf") == 0)
			snprintf(r->engine, sizeof(r->engine), "llama.cpp");
	}
}

int audit__join_mappings(struct join *j)
{
	struct audit *a = j->a;
	struct audit_result *r = j->r;

	snprintf(r->stacks_note, sizeof(r->stacks_note), "%s", a->stacks_note);
	r->inventory_reads = a->inv_reads;
	r->inventory_ns = a->inv_ns;
	memcpy(r->node_free, a->node_free, sizeof(r->node_free));
	r->audit_memory = touch_memory(&a->touch) + a->probe_memory;
	if (!a->have_inv)
		return 0;
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++) {
		r->moved_bytes += a->inv.moved_bytes[n];
		r->node_total[n] += a->inv.moved_bytes[n];
	}
	compute_threads(a);
	r->mappings = calloc(a->inv.n + 1, sizeof(*r->mappings));
	if (r->mappings == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < a->inv.n; i++) {
		struct audit_mapping *o = &r->mappings[r->nmappings];
		int rc = mapping_make(j, i, o);

		r->nmappings++;
		if (rc != 0)
			return rc;
		users(a, o);
		totals_add(r, o);
	}
	engine(a, r);
	return 0;
}
