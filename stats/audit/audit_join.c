/*
 * audit_join.c - the memory-locality audit's join (audit.h): audit_result()
 * joins what the session gathered (audit_int.h) per page run of each
 * block: placement x first toucher x the block's users and their nodes,
 * into the result's blocks, matrices and per-thread figures, with each
 * block's call site symbolized (symbols.h). The findings of each block are
 * audit_findings.c's. audit_collect() is a whole attach-mode audit.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_int.h"
#include "faults.h"
#include "placement.h"
#include "segread.h"
#include "symbols.h"
#include "sys.h"
#include "text.h"
#include "topology.h"

/* The block's users: its owner, its last lessee, its remote freers. */
static void block_users(const struct segread_block *b, struct block_tally *t)
{
	unsigned cap = sizeof(t->users) / sizeof(t->users[0]);

	t->allocator = b->carver != 0 ? b->carver : b->owner;
	t->holder = b->lessee != 0 ? b->lessee : b->owner != 0 ? b->owner : b->carver;
	if (t->holder != 0)
		audit__add_tid(t->users, &t->nusers, NULL, cap, t->holder);
	if (b->owner != 0)
		audit__add_tid(t->users, &t->nusers, NULL, cap, b->owner);
	for (unsigned i = 0; i < b->nfreers && i < SCRATCH_SEG_BLOCK_FREERS; i++)
		if (b->freers[i] > 0)
			audit__add_tid(t->users, &t->nusers, NULL, cap, b->freers[i]);
}

static bool is_user(const struct block_tally *t, pid_t tid)
{
	for (unsigned i = 0; i < t->nusers; i++)
		if (t->users[i] == tid)
			return true;
	return false;
}

/* Append a run to blk, merging with the last one when it continues it. */
static int run_add(struct audit_block *blk, size_t *cap, const struct audit_run *run)
{
	struct audit_run *last = blk->nruns > 0 ? &blk->runs[blk->nruns - 1] : NULL;

	if (last != NULL && last->start + last->bytes == run->start && last->node == run->node &&
	    last->toucher == run->toucher && last->touch_node == run->touch_node) {
		last->bytes += run->bytes;
		return 0;
	}
	if (blk->nruns == *cap) {
		size_t n = *cap ? *cap * 2 : 8;
		struct audit_run *r = realloc(blk->runs, n * sizeof(*r));

		if (r == NULL)
			return -ENOMEM;
		blk->runs = r;
		*cap = n;
	}
	blk->runs[blk->nruns++] = *run;
	return 0;
}

/* The first toucher of page: its own sample, or on a wholly huge-backed
 * block the sample of its 2 MiB page (one fault placed it all), when one
 * thread alone faulted there. */
static const struct touch_who *first_touch(struct audit *a, uint64_t page, bool huge)
{
	const struct touch_run *r = touch_lookup_window(&a->touch, page, huge ? HUGE_PAGE : PAGE);

	return r != NULL ? &a->touch.who[r->who] : NULL;
}

/* One present page of a block into the result, the tally and the threads. */
static void page_join(struct join *j, struct block_tally *t, int node, const struct touch_who *tt,
                      int touch_node)
{
	struct audit *a = j->a;
	struct audit_result *r = j->r;

	r->present_bytes += PAGE;
	if (tt != NULL)
		r->sampled_bytes += PAGE;
	else
		r->unknown_bytes += PAGE;
	*audit_cell(&r->touch, touch_node, t->holder_node) += PAGE;
	*audit_cell(&r->placed, node, t->holder_node) += PAGE;
	for (unsigned i = 0; i < t->nusers; i++) {
		struct audit_thread *u = audit__thread_find(a, t->users[i], true);

		if (u == NULL)
			continue;
		u->used_bytes += PAGE;
		if (u->node >= 0 && node != u->node) {
			u->remote_bytes += PAGE;
			if (tt == NULL || tt->tid != u->tid)
				t->reuse[i] += PAGE;
		}
	}
	if (tt == NULL) {
		if (t->holder_node >= 0 && node != t->holder_node)
			t->unsampled_remote += PAGE;
		return;
	}
	{
		struct audit_thread *w = audit__thread_find(a, tt->tid, true);

		if (w != NULL) {
			w->first_touched += PAGE;
			if (!is_user(t, tt->tid))
				w->touched_for_others += PAGE;
		}
	}
	if (tt->tid != t->allocator) {
		t->cross += PAGE;
		if (t->holder_node >= 0 && node != t->holder_node)
			t->cross_remote += PAGE;
		audit__add_tid(t->touchers, &t->ntouchers, &t->more_touchers, AUDIT_MAX_TIDS,
		               tt->tid);
	}
	if (touch_node >= 0 && node != touch_node) {
		t->differs += PAGE;
		t->differs_from = touch_node;
		t->differs_to = node;
	}
}

/* Walk a block's placement page by page: runs, tallies, matrices. */
static int block_join(struct join *j, const struct ablock *k, struct audit_block *blk,
                      struct block_tally *t)
{
	struct audit *a = j->a;
	bool huge = k->pl.huge_strides > 0;
	size_t cap = 0;

	for (size_t i = 0; i < k->pl.nruns; i++) {
		const struct placement_run *pr = &k->pl.runs[i];

		for (uint64_t p = pr->start; p < pr->start + pr->length; p += PAGE) {
			const struct touch_who *tt = pr->node >= 0 ? first_touch(a, p, huge) : NULL;
			int tn = tt != NULL && a->have_topo ? topology_cpu_node(&a->topo, tt->cpu)
			                                    : -1;
			struct audit_run run = {p, PAGE, pr->node, tt != NULL ? tt->tid : 0, tn};

			if (run_add(blk, &cap, &run) != 0)
				return -ENOMEM;
			if (pr->node < 0)
				continue;
			blk->present += PAGE;
			if (pr->node < TOPOLOGY_MAX_NODES)
				blk->node_bytes[pr->node] += PAGE;
			page_join(j, t, pr->node, tt, tn);
		}
	}
	return 0;
}

/* ---- call sites ---- */

static const struct agrowth *growth_of(const struct audit *a, uint64_t seq)
{
	size_t lo = 0, hi = a->ngrowths;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->growths[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->ngrowths && a->growths[lo].seq == seq ? &a->growths[lo] : NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* Symbolize g's frames into site, the allocator's own frames left out. */
static void site_make(struct join *j, const struct agrowth *g, struct audit_site *site)
{
	memset(site, 0, sizeof(*site));
	for (uint32_t i = 0; i < g->nframes && i < AUDIT_MAX_FRAMES; i++) {
		struct audit_frame *f = &site->frames[site->nframes];
		struct symbols_info si;
		bool ok = j->sym != NULL && symbols_lookup(j->sym, g->frames[i], &si);

		if (ok && symbols_internal(&si))
			continue;
		f->addr = g->frames[i];
		if (ok) {
			snprintf(f->function, sizeof(f->function), "%s", si.function);
			snprintf(f->file, sizeof(f->file), "%s", si.file);
			snprintf(f->module, sizeof(f->module), "%s", si.module);
			f->line = si.line;
			text_mask_controls(f->function);
			text_mask_controls(f->file);
			text_mask_controls(f->module);
		}
		if (site->where[0] == '\0') {
			if (f->file[0] != '\0')
				snprintf(site->where, sizeof(site->where), "%s:%d", f->file,
				         f->line);
			else if (f->function[0] != '\0')
				snprintf(site->where, sizeof(site->where), "%s+0x%llx", f->function,
				         (unsigned long long)si.offset);
			else if (ok)
				snprintf(site->where, sizeof(site->where), "%s+0x%llx",
				         base_name(f->module), (unsigned long long)si.offset);
			else
				snprintf(site->where, sizeof(site->where), "0x%llx",
				         (unsigned long long)f->addr);
		}
		site->nframes++;
	}
}

static bool same_frames(const struct audit_site *x, const struct audit_site *y)
{
	if (x->nframes != y->nframes)
		return false;
	for (unsigned i = 0; i < x->nframes; i++)
		if (x->frames[i].addr != y->frames[i].addr)
			return false;
	return true;
}

/* The site index of a block's growth record, -1 when there is none. */
static int site_index(struct join *j, const struct segread_block *b)
{
	const struct agrowth *g = b->growth != 0 ? growth_of(j->a, b->growth) : NULL;
	struct audit_result *r = j->r;
	struct audit_site site;

	if (g == NULL)
		return -1;
	site_make(j, g, &site);
	for (size_t i = 0; i < r->nsites; i++)
		if (same_frames(&r->sites[i], &site))
			return (int)i;
	if (r->nsites == j->capsites) {
		size_t n = j->capsites ? j->capsites * 2 : 16;
		struct audit_site *s = realloc(r->sites, n * sizeof(*s));

		if (s == NULL)
			return -1;
		r->sites = s;
		j->capsites = n;
	}
	r->sites[r->nsites] = site;
	return (int)r->nsites++;
}

static int by_tid(const void *x, const void *y)
{
	const struct audit_thread *a = x, *b = y;

	return (a->tid > b->tid) - (a->tid < b->tid);
}

static int matrices_new(struct audit_result *r)
{
	size_t cells = (size_t)(r->nodes + 1) * (r->nodes + 1);

	r->touch.nodes = r->placed.nodes = r->nodes;
	r->touch.bytes = calloc(cells, sizeof(uint64_t));
	r->placed.bytes = calloc(cells, sizeof(uint64_t));
	return r->touch.bytes != NULL && r->placed.bytes != NULL ? 0 : -ENOMEM;
}

static void result_head(struct audit *a, struct audit_result *r)
{
	r->mode = a->mode;
	r->pid = a->pid;
	snprintf(r->exe, sizeof(r->exe), "%s", a->exe);
	snprintf(r->cmdline, sizeof(r->cmdline), "%s", a->cmdline);
	r->started_ns = a->started_ns;
	r->ended_ns = a->ended_ns;
	r->exited = a->gone;
	r->exit_status = a->exit_status;
	r->nodes = a->have_topo && a->topo.nodes > 0 ? a->topo.nodes : 1;
	r->node_mask = a->have_topo ? a->topo.node_mask : 1;
	r->single_node = __builtin_popcountll(r->node_mask) <= 1;
	r->region_lo = (uintptr_t)a->region_lo;
	r->region_hi = (uintptr_t)a->region_hi;
	r->placement_reads = a->placement_reads;
	r->samples_kept = a->samples_kept;
	if (a->faults != NULL) {
		struct faults_stats st;

		faults_get_stats(a->faults, &st);
		r->samples = st.samples;
		r->samples_lost = st.lost;
	}
}

/* The tiers as the session left them, with what the data says. */
static void result_tiers(struct audit *a, struct audit_result *r)
{
	if (!a->have_seg)
		audit__tier_off(
		        a, AUDIT_TIER_USE, -ENOENT,
		        "no stats segment for the process: it does not run under libscratch with "
		        "stats on, or its run directory is another");
	else if (a->seg.block_slots == 0)
		audit__tier_off(
		        a, AUDIT_TIER_USE, -ENODATA,
		        "the segment has no block table (a libscratch older than the audit)");
	if (a->have_seg && a->seg.ring_slots == 0)
		audit__tier_off(a, AUDIT_TIER_SITES, -ENODATA,
		                "the growth trace is off (trace:false)");
	else if (!a->have_seg)
		audit__tier_off(a, AUDIT_TIER_SITES, -ENOENT, "no stats segment");
	if (a->faults != NULL && a->mode == AUDIT_ATTACH)
		snprintf(a->tiers[AUDIT_TIER_FIRST_TOUCH].reason, AUDIT_REASON_LEN,
		         "attach mode: first touches before the attach are unknown");
	if (a->faults == NULL)
		audit__tier_off(a, AUDIT_TIER_PAGE_CACHE, -ENODATA,
		                "no fault sampling: a page this process read in cannot be told "
		                "from one resident before");
	else if (a->mode == AUDIT_ATTACH)
		snprintf(a->tiers[AUDIT_TIER_PAGE_CACHE].reason, AUDIT_REASON_LEN,
		         "attach mode: where pages resident at the attach came from is unknown");
	memcpy(r->tiers, a->tiers, sizeof(r->tiers));
}

static int join_blocks(struct join *j)
{
	struct audit *a = j->a;
	struct audit_result *r = j->r;

	r->blocks = calloc(a->nblocks + 1, sizeof(*r->blocks));
	if (r->blocks == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < a->nblocks; i++) {
		const struct ablock *k = &a->blocks[i];
		struct audit_block *blk = &r->blocks[r->nblocks];
		struct block_tally t = {0};

		if (!k->seen || !k->have_pl)
			continue;
		block_users(&k->b, &t);
		t.holder_node = audit__thread_node(a, t.holder);
		blk->start = (uintptr_t)k->b.start;
		blk->capacity = k->b.capacity;
		blk->cls = k->b.cls;
		blk->state = k->b.state;
		blk->owner = k->b.owner;
		blk->lessee = k->b.lessee;
		for (unsigned f = 0; f < k->b.nfreers && f < SCRATCH_SEG_BLOCK_FREERS; f++)
			blk->freers[blk->nfreers++] = k->b.freers[f];
		blk->handovers = k->b.handovers;
		blk->site = site_index(j, &k->b);
		r->nblocks++;
		if (block_join(j, k, blk, &t) != 0)
			return -ENOMEM;
		if (blk->present > 0)
			audit__block_findings(j, blk, &t);
	}
	return 0;
}

/* A thread that ended before a look at /proc saw it: its node is the
 * one its latest sampled fault came from, where it ran last, as a live
 * thread's is its last CPU's. Not the one all its faults came from: a
 * thread that pins itself on another node faults its first stack pages
 * where it was created, and would have had none (a guest test lost that
 * race once). */
static void node_from_faults(struct audit_thread *t)
{
	if (t->node < 0 && t->fault_last_node >= 0)
		t->node = t->fault_last_node;
}

static int threads_out(struct audit *a, struct audit_result *r)
{
	r->threads = calloc(a->nthreads + 1, sizeof(*r->threads));
	if (r->threads == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < a->nthreads; i++)
		r->threads[i] = a->threads[i].t;
	r->nthreads = a->nthreads;
	qsort(r->threads, r->nthreads, sizeof(*r->threads), by_tid);
	return 0;
}

int audit_result(audit_t *a, struct audit_result *ret, char *err, size_t errlen)
{
	struct audit_result r = {0};
	struct join j = {.a = a, .r = &r};
	int rc;

	audit__finish(a);
	result_head(a, &r);
	result_tiers(a, &r);
	/* per-thread figures are the join's: start from zero every time */
	for (size_t i = 0; i < a->nthreads; i++) {
		struct audit_thread *t = &a->threads[i].t;

		t->used_bytes = t->remote_bytes = t->first_touched = t->touched_for_others = 0;
		t->mapped_touched = 0;
	}
	for (size_t i = 0; i < a->nthreads; i++)
		node_from_faults(&a->threads[i].t);
	j.sym = a->maps != NULL ? symbols_new(a->maps) : NULL;
	rc = matrices_new(&r);
	if (rc == 0)
		rc = join_blocks(&j);
	if (rc == 0)
		rc = audit__join_mappings(&j);
	if (rc == 0 && a->faults != NULL)
		audit__moved_findings(&j);
	if (rc == 0)
		audit__mapping_findings(&j);
	symbols_free(j.sym);
	if (rc == 0)
		rc = threads_out(a, &r);
	if (rc != 0) {
		audit_result_free(&r);
		return text_fail(err, errlen, ENOMEM, "out of memory");
	}
	audit__findings_rank(&j);
	*ret = r;
	return 0;
}

void audit_result_free(struct audit_result *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nblocks; i++)
		free(r->blocks[i].runs);
	free(r->blocks);
	for (size_t i = 0; i < r->nmappings; i++) {
		free(r->mappings[i].path);
		free(r->mappings[i].touchers);
	}
	free(r->mappings);
	free(r->threads);
	free(r->sites);
	free(r->findings);
	free(r->touch.bytes);
	free(r->placed.bytes);
	memset(r, 0, sizeof(*r));
}

int audit_collect(pid_t pid, const struct audit_opts *o, struct audit_result *ret, char *err,
                  size_t errlen)
{
	uint64_t end;
	audit_t *a;
	int rc = audit_attach(pid, o, &a, err, errlen);

	if (rc != 0)
		return rc;
	end = sys_mono_ns() + (uint64_t)a->o.seconds * 1000000000u;
	while (sys_mono_ns() < end && audit_poll(a, 100) == 0)
		;
	rc = audit_result(a, ret, err, errlen);
	audit_close(a);
	return rc;
}
