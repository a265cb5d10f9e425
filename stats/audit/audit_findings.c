/*
 * audit_findings.c - the memory-locality audit's findings (audit.h): what
 * the join found in each block (struct block_tally, audit_int.h) becomes
 * findings, merged per (kind, call site, thread, node); threads that moved
 * node get theirs once every block is joined; then each finding gets its
 * sentence and its fix, and the findings are ranked by bytes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_int.h"
#include "text.h"

const char *audit_evidence_name(enum audit_evidence e)
{
	static const char *const n[] = {"placement measured", "first touch sampled",
	                                "use by lease"};

	return (unsigned)e < 3 ? n[e] : "unknown";
}

const char *audit_kind_name(enum audit_kind k)
{
	static const char *const n[] = {"cross_touch", "reused_remote", "placement_differs",
	                                "thread_moved"};

	return (unsigned)k < AUDIT_KINDS ? n[k] : "unknown";
}

void audit__add_tid(pid_t *set, unsigned *n, unsigned *more, unsigned cap, pid_t tid)
{
	for (unsigned i = 0; i < *n; i++)
		if (set[i] == tid)
			return;
	if (*n < cap)
		set[(*n)++] = tid;
	else if (more != NULL)
		(*more)++;
}

/* The finding of (kind, site, owner, node), new or to merge into. */
static struct audit_finding *finding_get(struct join *j, enum audit_kind kind, int site,
                                         pid_t owner, int node)
{
	struct audit_result *r = j->r;
	struct audit_finding *f;

	for (size_t i = 0; i < r->nfindings; i++) {
		f = &r->findings[i];
		if (f->kind == kind && f->site == site && f->owner == owner && f->node == node)
			return f;
	}
	if (r->nfindings == j->capfindings) {
		size_t n = j->capfindings ? j->capfindings * 2 : 16;

		f = realloc(r->findings, n * sizeof(*f));
		if (f == NULL)
			return NULL;
		r->findings = f;
		j->capfindings = n;
	}
	f = &r->findings[r->nfindings++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->site = site;
	f->owner = owner;
	f->node = node;
	f->other_node = -1;
	return f;
}

static void finding_add(struct audit_finding *f, uint64_t bytes, uintptr_t block,
                        enum audit_evidence ev, bool risk)
{
	if (f->nblocks++ == 0)
		f->block = block;
	f->bytes += bytes;
	f->evidence = ev;
	f->risk = risk;
}

/* The node most of a block's present bytes sit on, -1 when none. */
static int main_node(const struct audit_block *blk)
{
	int best = -1;

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (blk->node_bytes[n] > 0 &&
		    (best < 0 || blk->node_bytes[n] > blk->node_bytes[best]))
			best = n;
	return best;
}

void audit__block_findings(struct join *j, const struct audit_block *blk,
                           const struct block_tally *t)
{
	bool single = j->r->single_node;
	uint64_t cross = single ? t->cross : t->cross_remote;
	struct audit_finding *f;

	if (cross > 0 && (f = finding_get(j, AUDIT_CROSS_TOUCH, blk->site, t->allocator, -1))) {
		finding_add(f, cross, blk->start, AUDIT_EV_SAMPLED, single);
		f->other_node = t->holder_node;
		for (unsigned i = 0; i < t->ntouchers; i++)
			audit__add_tid(f->tids, &f->ntids, &f->more_tids, AUDIT_MAX_TIDS,
			               t->touchers[i]);
		f->more_tids += t->more_touchers;
	}
	for (unsigned i = 0; i < t->nusers; i++) {
		pid_t u = t->users[i];
		bool reused = blk->handovers > 0 || (u != blk->owner && u != t->allocator);
		uint64_t bytes = single ? (reused ? blk->present : 0) : t->reuse[i];

		if (!reused || bytes == 0)
			continue;
		f = finding_get(j, AUDIT_REUSED_REMOTE, blk->site, u, main_node(blk));
		if (f == NULL)
			continue;
		finding_add(f, bytes, blk->start, AUDIT_EV_LEASE, single);
		f->other_node = audit__thread_node(j->a, u);
		audit__add_tid(f->tids, &f->ntids, &f->more_tids, AUDIT_MAX_TIDS, u);
	}
	/* No sample: placement and lease alone say the holder's pages sit
	 * elsewhere (who touched them is not known). */
	if (!single && t->unsampled_remote > 0 &&
	    (f = finding_get(j, AUDIT_CROSS_TOUCH, blk->site, t->allocator, main_node(blk)))) {
		finding_add(f, t->unsampled_remote, blk->start, AUDIT_EV_PLACEMENT, false);
		f->other_node = t->holder_node;
	}
	if (t->differs > 0 &&
	    (f = finding_get(j, AUDIT_PLACEMENT_DIFFERS, blk->site, t->allocator, t->differs_to))) {
		finding_add(f, t->differs, blk->start, AUDIT_EV_PLACEMENT, false);
		f->other_node = t->differs_from;
	}
}

/* Bytes t first touched that sit on another node than t's now. */
static uint64_t bytes_off_node(const struct audit_result *r, const struct audit_thread *t)
{
	uint64_t bytes = 0;

	for (size_t b = 0; b < r->nblocks; b++)
		for (size_t k = 0; k < r->blocks[b].nruns; k++) {
			const struct audit_run *u = &r->blocks[b].runs[k];

			if (u->toucher == t->tid && u->node >= 0 && u->node != t->node)
				bytes += u->bytes;
		}
	return bytes;
}

/* Threads whose faults came from another node than the one they run on:
 * the bytes they first touched that sit off their node now. */
void audit__moved_findings(struct join *j)
{
	struct audit *a = j->a;

	for (size_t i = 0; i < a->nthreads; i++) {
		struct audit_thread *t = &a->threads[i].t;
		topology_nodeset_t here = t->node >= 0 ? (topology_nodeset_t)1 << t->node : 0;
		struct audit_finding *f;
		uint64_t bytes;

		if (t->node < 0 || t->fault_nodes == 0 || (t->fault_nodes & ~here) == 0)
			continue;
		bytes = bytes_off_node(j->r, t);
		if (bytes == 0)
			continue;
		f = finding_get(j, AUDIT_THREAD_MOVED, -1, t->tid, t->node);
		if (f != NULL)
			finding_add(f, bytes, 0, AUDIT_EV_SAMPLED, j->r->single_node);
	}
}

static void tids_text(struct audit *a, const struct audit_finding *f, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < f->ntids && at < len; i++) {
		const char *sep = i == 0                                     ? ""
		                  : (i + 1 == f->ntids && f->more_tids == 0) ? " and "
		                                                             : ", ";

		at += (size_t)snprintf(buf + at, len - at, "%s%d (%s)", sep, (int)f->tids[i],
		                       audit__thread_name(a, f->tids[i]));
	}
	if (f->more_tids > 0 && at < len)
		snprintf(buf + at, len - at, " and %u more", f->more_tids);
}

static void finding_text(struct join *j, struct audit_finding *f)
{
	const char *where = f->site >= 0 && j->r->sites[f->site].where[0] != '\0'
	                            ? j->r->sites[f->site].where
	                            : "an unknown site";
	char tids[160];
	size_t n;

	tids_text(j->a, f, tids, sizeof(tids));
	switch (f->kind) {
	case AUDIT_CROSS_TOUCH:
		if (f->evidence == AUDIT_EV_PLACEMENT)
			snprintf(f->text, sizeof(f->text),
			         "Buffer allocated by %d (%.64s) at %.160s, used on node %d, has "
			         "pages on "
			         "node %d (first toucher not sampled)",
			         (int)f->owner, audit__thread_name(j->a, f->owner), where,
			         f->other_node, f->node);
		else
			snprintf(f->text, sizeof(f->text),
			         "Buffer allocated by %d (%.64s) at %.160s, pages first touched by "
			         "%.160s",
			         (int)f->owner, audit__thread_name(j->a, f->owner), where, tids);
		snprintf(f->fix, sizeof(f->fix),
		         "allocate in the worker that first writes it; if every thread reads it, "
		         "bind or interleave only the shared weights");
		break;
	case AUDIT_REUSED_REMOTE:
		if (f->risk)
			snprintf(f->text, sizeof(f->text),
			         "Block reused by another thread: %.160s (allocated at %.160s)",
			         tids, where);
		else
			snprintf(f->text, sizeof(f->text),
			         "Block reused by a thread on another node: %.160s on node %d, its "
			         "pages "
			         "on node %d (allocated at %.160s)",
			         tids, f->other_node, f->node, where);
		snprintf(
		        f->fix, sizeof(f->fix),
		        "per-node pools, so that a block goes only to a thread on its pages' node; "
		        "or free blocks in the thread that allocated them");
		break;
	case AUDIT_PLACEMENT_DIFFERS:
		snprintf(f->text, sizeof(f->text),
		         "Placement differs from the first toucher's node: pages first touched on "
		         "node %d sit on node %d (allocated by %d at %.160s)",
		         f->other_node, f->node, (int)f->owner, where);
		snprintf(f->fix, sizeof(f->fix),
		         "check the memory policy (numactl, set_mempolicy), free memory on the "
		         "node, "
		         "THP and NUMA balancing; bind or interleave only the shared weights");
		break;
	case AUDIT_THREAD_MOVED:
		snprintf(f->text, sizeof(f->text),
		         "Thread moved node: %d (%.64s) first touched pages on other nodes, now on "
		         "node %d",
		         (int)f->owner, audit__thread_name(j->a, f->owner), f->node);
		snprintf(f->fix, sizeof(f->fix),
		         "pin the thread to its node's CPUs; per-node pools notice a moved thread");
		break;
	}
	n = strlen(f->text);
	if (f->risk && n < sizeof(f->text))
		snprintf(f->text + n, sizeof(f->text) - n, " (remote on a multi-node machine)");
	text_mask_controls(f->text);
}

static int by_bytes(const void *x, const void *y)
{
	const struct audit_finding *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return (int)a->kind - (int)b->kind;
}

void audit__findings_rank(struct join *j)
{
	struct audit_result *r = j->r;

	for (size_t i = 0; i < r->nfindings; i++)
		finding_text(j, &r->findings[i]);
	if (r->nfindings > 1)
		qsort(r->findings, r->nfindings, sizeof(*r->findings), by_bytes);
}
