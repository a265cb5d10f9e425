/*
 * audit_advice.c - the audit's findings on the mappings outside the pools
 * (audit.h: mapping_shared, mapping_private), and every finding's fix.
 *
 * A fix is printed only if a guest test applies it to the finding it is
 * printed for and audits again (tests/locality/guest_audit.sh, in the
 * two-node guest): numactl --interleave=all for a mapping the compute
 * threads share, after dropping the file from the page cache when its
 * pages were resident before the run; numactl --cpunodebind/--membind for
 * a run that fits one node; taskset for a thread that moved away from its
 * own memory; the pools' per_node for a block handed to another node's
 * thread. Where no fix without rebuilding was verified, the fix says so
 * and names the cause. Engine-specific options (llama.cpp's --numa
 * distribute, --no-mmap) are not printed: no test here runs the engine
 * (docs/audit.md); a recognized engine gets the general fix in its name
 * (tests/locality/audit_maps.test).
 *
 * Each fix also carries its steps for a script: fix_run, a command to run
 * first (as it is: for a running process, or to drop a cache), and
 * fix_prefix, what to put before the program's command line.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_int.h"
#include "text.h"

#define SHARED_MIN  (1u << 20)  /* a shared mapping's remote bytes worth a finding */
#define PRIVATE_MIN (64u << 10) /* a thread's own memory off its node */

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void put(char *buf, size_t len, const char *fmt, ...)
{
	size_t at = strlen(buf);
	va_list ap;

	if (at >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
}

/* "0-3,8": the CPUs of node, from the topology. */
static void node_cpus(const struct audit *a, int node, char *buf, size_t len)
{
	int from = -1;

	buf[0] = '\0';
	for (unsigned c = 0; a->have_topo && c <= a->topo.ncpus; c++) {
		bool in = c < a->topo.ncpus && a->topo.cpu_node[c] == node;

		if (in && from < 0)
			from = (int)c;
		if (!in && from >= 0) {
			if ((int)c - 1 > from)
				put(buf, len, "%s%d-%u", buf[0] ? "," : "", from, c - 1);
			else
				put(buf, len, "%s%d", buf[0] ? "," : "", from);
			from = -1;
		}
	}
}

/* The node the whole run fits on (its resident bytes elsewhere fit in
 * 90% of the node's free memory), the one with most of them already;
 * -1 when none does, or free memory is not known. */
static int fits_node(const struct audit_result *r)
{
	uint64_t total = 0;
	int best = -1;

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		total += r->node_total[n];
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++) {
		if (!(r->node_mask & ((topology_nodeset_t)1 << n)) || r->node_free[n] == 0)
			continue;
		if (total - r->node_total[n] > r->node_free[n] / 10 * 9)
			continue;
		if (best < 0 || r->node_total[n] > r->node_total[best])
			best = n;
	}
	return best;
}

/* The node most of a mapping's bytes sit on, -1 when none. */
static int mapping_node(const struct audit_mapping *o)
{
	int best = -1;

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (o->node_bytes[n] > 0 && (best < 0 || o->node_bytes[n] > o->node_bytes[best]))
			best = n;
	return best;
}

static const char *program(const struct audit_result *r)
{
	return r->engine[0] != '\0' ? r->engine : "the program";
}

/* "64.0 MiB on node 0, 2.0 MiB on node 1". */
static void placement_text(const struct audit_mapping *o, char *buf, size_t len)
{
	char b[32];

	buf[0] = '\0';
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (o->node_bytes[n] > 0)
			put(buf, len, "%s%s on node %d", buf[0] ? ", " : "",
			    text_human(o->node_bytes[n], b, sizeof(b)), n);
	if (buf[0] == '\0')
		put(buf, len, "nothing resident");
}

static void nodes_text(topology_nodeset_t set, char *buf, size_t len)
{
	int count = __builtin_popcountll(set), k = 0;

	buf[0] = '\0';
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (set & ((topology_nodeset_t)1 << n))
			put(buf, len, "%s%d", k++ == 0 ? "" : k == count ? " and " : ", ", n);
}

/* ---------------------------------------------------------------------- */
/* The mappings' findings                                                  */
/* ---------------------------------------------------------------------- */

/* A file any of whose mappings executes is code (a library, the
 * program): listed, but no shared-mapping finding. */
static bool code_file(const struct audit_result *r, const char *path)
{
	for (size_t i = 0; i < r->nmappings; i++)
		if (r->mappings[i].perms[2] == 'x' && strcmp(r->mappings[i].path, path) == 0)
			return true;
	return false;
}

/* What a mapping is, for a sentence. */
static void describe(const struct audit_result *r, const struct audit_mapping *o, char *buf,
                     size_t len)
{
	char b[32];
	size_t n = strlen(o->path);

	buf[0] = '\0';
	switch (o->category) {
	case MAPS_FILE:
		put(buf, len, "%s %.200s",
		    n > 5 && strcmp(o->path + n - 5, ".gguf") == 0 ? "Model file" : "File",
		    o->path);
		break;
	case MAPS_SHM:
		put(buf, len, "Shared memory %.200s", o->path[0] ? o->path : "(anonymous)");
		break;
	case MAPS_HEAP:
		if (strcmp(o->path, "[heap]") == 0)
			put(buf, len, "The main heap ([heap])");
		else
			put(buf, len, "The glibc arena heap at 0x%llx",
			    (unsigned long long)o->start);
		break;
	case MAPS_STACK:
		put(buf, len, "The stack of %d", (int)o->thread);
		break;
	default:
		put(buf, len, "Anonymous mapping of %s at 0x%llx%s",
		    text_human(o->end - o->start, b, sizeof(b)), (unsigned long long)o->start,
		    strstr(o->why, "max_size") != NULL ? ", above the pools' max_size," : "");
		break;
	}
	(void)r;
}

/* Where the first touches of o came from: "first touched by 540 (main) on
 * node 0", or what is known. */
static void touch_text(struct join *j, const struct audit_mapping *o, char *buf, size_t len)
{
	char b[32];

	if (o->ntouchers == 0) {
		put(buf, len, "; its first toucher was not seen%s",
		    j->a->mode == AUDIT_ATTACH ? " (before the attach)" : "");
		return;
	}
	put(buf, len, "; first touched by %d (%.32s) on node %d", (int)o->touchers[0].tid,
	    audit__thread_name(j->a, o->touchers[0].tid), o->touchers[0].node);
	if (o->ntouchers > 1)
		put(buf, len, " (%s of it) and %u more thread%s",
		    text_human(o->touchers[0].bytes, b, sizeof(b)), o->ntouchers - 1,
		    o->ntouchers > 2 ? "s" : "");
}

static void prov_text(const struct audit_mapping *o, char *buf, size_t len)
{
	char b[32];

	if (!o->have_prov)
		return;
	if (o->prov[AUDIT_PROV_BEFORE] > 0)
		put(buf, len, "; %s was resident before this process touched it",
		    text_human(o->prov[AUDIT_PROV_BEFORE], b, sizeof(b)));
	if (o->prov[AUDIT_PROV_FAULTED] + o->prov[AUDIT_PROV_DURING] > 0)
		put(buf, len, "; %s was read in by this run",
		    text_human(o->prov[AUDIT_PROV_FAULTED] + o->prov[AUDIT_PROV_DURING], b,
		               sizeof(b)));
}

/* The compute threads named: "541 (worker), 542 (worker)". */
static void users_text(struct join *j, const struct audit_mapping *o, char *buf, size_t len)
{
	for (unsigned i = 0; i < o->nusers && i < 4; i++)
		put(buf, len, "%s%d (%.32s)", i ? ", " : "", (int)o->users[i],
		    audit__thread_name(j->a, o->users[i]));
	if (o->nusers > 4)
		put(buf, len, " and %u more", o->nusers - 4);
}

static bool shared_candidate(const struct audit_result *r, const struct audit_mapping *o)
{
	if (o->category != MAPS_FILE && o->category != MAPS_SHM && o->category != MAPS_ANON &&
	    !(o->category == MAPS_HEAP && strcmp(o->path, "[heap]") == 0))
		return false;
	if (o->use_evidence != AUDIT_EV_INFERRED || o->nusers < 2)
		return false;
	return !(o->category == MAPS_FILE && code_file(r, o->path));
}

static void shared_finding(struct join *j, size_t i)
{
	struct audit_result *r = j->r;
	const struct audit_mapping *o = &r->mappings[i];
	struct audit_finding *f;
	char what[320], where[160], who[200] = "", nodes[64], b[32];
	uint64_t bytes = o->remote_bytes;
	bool risk = false;

	if (!shared_candidate(r, o))
		return;
	if (r->single_node) {
		/* one thread placed what several share: remote on more nodes */
		risk = true;
		bytes = o->ntouchers > 0 ? o->touchers[0].bytes : o->resident;
		if (o->ntouchers > 1 && o->touchers[0].bytes * 10 < o->sampled_bytes * 9)
			return;
	}
	if (bytes < SHARED_MIN)
		return;
	f = audit__finding_new(j);
	if (f == NULL)
		return;
	f->kind = AUDIT_MAPPING_SHARED;
	f->evidence = AUDIT_EV_INFERRED;
	f->bytes = bytes;
	f->risk = risk;
	f->mapping = (int)i;
	f->category = o->category;
	f->node = mapping_node(o);
	f->owner = o->ntouchers > 0 ? o->touchers[0].tid : 0;
	f->block = o->start;
	for (unsigned k = 0; k < o->nusers; k++)
		audit__add_tid(f->tids, &f->ntids, &f->more_tids, AUDIT_MAX_TIDS, o->users[k]);
	describe(r, o, what, sizeof(what));
	placement_text(o, where, sizeof(where));
	users_text(j, o, who, sizeof(who));
	nodes_text(o->user_nodes, nodes, sizeof(nodes));
	put(f->text, sizeof(f->text),
	    "%s (%s resident): %s, shared by the compute threads %s on node%s %s "
	    "(inferred: a risk, not a measurement)",
	    what, text_human(o->resident, b, sizeof(b)), where, who,
	    __builtin_popcountll(o->user_nodes) > 1 ? "s" : "", nodes);
	touch_text(j, o, f->text, sizeof(f->text));
	prov_text(o, f->text, sizeof(f->text));
	if (risk)
		put(f->text, sizeof(f->text), " (remote on a multi-node machine)");
	text_mask_controls(f->text);
}

/* A thread's own memory (its stack, the arena it made) off its node. */
static void private_finding(struct join *j, size_t i)
{
	struct audit_result *r = j->r;
	const struct audit_mapping *o = &r->mappings[i];
	int tnode = audit__thread_node(j->a, o->thread);
	struct audit_finding *f;
	char what[320], where[160];

	if ((o->category != MAPS_STACK && o->category != MAPS_HEAP) || o->thread <= 0 ||
	    tnode < 0 || r->single_node || o->remote_bytes < PRIVATE_MIN ||
	    (o->category == MAPS_HEAP && strcmp(o->path, "[heap]") == 0))
		return;
	f = audit__finding_new(j);
	if (f == NULL)
		return;
	f->kind = AUDIT_MAPPING_PRIVATE;
	f->evidence = o->use_evidence;
	f->bytes = o->remote_bytes;
	f->mapping = (int)i;
	f->category = o->category;
	f->owner = o->thread;
	f->node = mapping_node(o);
	f->other_node = tnode;
	f->block = o->start;
	describe(r, o, what, sizeof(what));
	placement_text(o, where, sizeof(where));
	put(f->text, sizeof(f->text), "%s (%.32s): %s, while the thread runs on node %d%s", what,
	    audit__thread_name(j->a, o->thread), where, tnode,
	    o->category == MAPS_STACK ? " (its stack pointer is in it)"
	                              : " (inferred: glibc attaches a thread to the arena it "
	                                "creates, and it first touched most of it)");
	text_mask_controls(f->text);
}

void audit__mapping_findings(struct join *j)
{
	for (size_t i = 0; i < j->r->nmappings; i++) {
		const struct audit_mapping *o = &j->r->mappings[i];
		bool dup = false;

		/* a file mapped in several pieces: one finding, its largest */
		for (size_t k = 0; o->category == MAPS_FILE && k < j->r->nmappings && !dup; k++)
			dup = k != i && j->r->mappings[k].category == MAPS_FILE &&
			      strcmp(j->r->mappings[k].path, o->path) == 0 &&
			      (j->r->mappings[k].remote_bytes > o->remote_bytes ||
			       (j->r->mappings[k].remote_bytes == o->remote_bytes && k < i));
		if (dup)
			continue;
		shared_finding(j, i);
		private_finding(j, i);
	}
}

/* ---------------------------------------------------------------------- */
/* Fixes                                                                   */
/* ---------------------------------------------------------------------- */

/* "or, since the run fits node N ..., numactl --cpunodebind=N --membind=N" */
static bool fits_text(const struct audit_result *r, char *buf, size_t len, const char *lead)
{
	int n = fits_node(r);
	uint64_t total = 0;
	char b1[32], b2[32];

	if (n < 0 || r->single_node)
		return false;
	for (int k = 0; k < TOPOLOGY_MAX_NODES; k++)
		total += r->node_total[k];
	put(buf, len,
	    "%sthe run fits node %d (%s resident, %s free there): start %s under numactl "
	    "--cpunodebind=%d --membind=%d, and its pages sit on node %d whoever touches them",
	    lead, n, text_human(total, b1, sizeof(b1)), text_human(r->node_free[n], b2, sizeof(b2)),
	    program(r), n, n, n);
	return true;
}

static void fix_shared(struct join *j, struct audit_finding *f)
{
	struct audit_result *r = j->r;
	const struct audit_mapping *o = &r->mappings[f->mapping];
	bool before = o->have_prov && o->prov[AUDIT_PROV_BEFORE] * 2 >= o->resident;
	int fit = fits_node(r);

	if (f->risk)
		put(f->fix, sizeof(f->fix), "on a multi-node machine: ");
	if (before && (o->category == MAPS_SHM || o->cache_pinned)) {
		/* tmpfs pages stay where they were first written */
		if (!fits_text(r, f->fix, sizeof(f->fix), ""))
			put(f->fix, sizeof(f->fix),
			    "no fix without rebuilding was verified: its pages were placed by "
			    "whoever "
			    "wrote them first, before this process");
		else
			snprintf(f->fix_prefix, sizeof(f->fix_prefix),
			         "numactl --cpunodebind=%d --membind=%d", fit, fit);
		return;
	}
	if (before && o->category == MAPS_FILE) {
		put(f->fix, sizeof(f->fix),
		    "its pages stay where an earlier reader put them until they leave the page "
		    "cache: drop it first (as root: sync; echo 1 > /proc/sys/vm/drop_caches), then "
		    "start %s under numactl --interleave=all",
		    program(r));
		snprintf(f->fix_run, sizeof(f->fix_run), "sync; echo 1 > /proc/sys/vm/drop_caches");
	} else {
		put(f->fix, sizeof(f->fix),
		    "start %s under numactl --interleave=all: its pages then spread evenly over "
		    "the "
		    "nodes, so that no node's threads read all of it from another",
		    program(r));
	}
	snprintf(f->fix_prefix, sizeof(f->fix_prefix), "numactl --interleave=all");
	fits_text(r, f->fix, sizeof(f->fix), "; or, ");
}

/* Pin a thread to the node its pages sit on. */
static void fix_pin(struct join *j, struct audit_finding *f, pid_t tid, int node)
{
	char cpus[128];

	node_cpus(j->a, node, cpus, sizeof(cpus));
	if (node < 0 || cpus[0] == '\0' || f->risk) {
		snprintf(f->fix, sizeof(f->fix),
		         "pin the thread to the CPUs of the node its pages sit on (taskset -p -c "
		         "CPUS TID)");
		return;
	}
	snprintf(f->fix, sizeof(f->fix),
	         "pin %d to node %d, where its pages sit: taskset -p -c %s %d (for a running "
	         "process; the program's own pinning, if any, decides at its start)",
	         (int)tid, node, cpus, (int)tid);
	snprintf(f->fix_run, sizeof(f->fix_run), "taskset -p -c %s %d", cpus, (int)tid);
}

/* The node tid's sampled faults came from other than the one it runs
 * on now, -1 when there is not exactly one. */
static int left_node(struct join *j, pid_t tid)
{
	const struct audit_thread *t = audit__thread_find(j->a, tid, false);
	topology_nodeset_t other;

	if (t == NULL || t->node < 0)
		return -1;
	other = t->fault_nodes & ~((topology_nodeset_t)1 << t->node);
	return other != 0 && (other & (other - 1)) == 0 ? __builtin_ctzll(other) : -1;
}

static uint32_t handovers_of(const struct audit_result *r, uintptr_t block)
{
	for (size_t i = 0; i < r->nblocks; i++)
		if (r->blocks[i].start == block)
			return r->blocks[i].handovers;
	return 0;
}

void audit__fix(struct join *j, struct audit_finding *f)
{
	struct audit_result *r = j->r;
	int n;

	f->fix[0] = f->fix_run[0] = f->fix_prefix[0] = '\0';
	switch (f->kind) {
	case AUDIT_CROSS_TOUCH:
		n = fits_node(r);
		if (fits_text(r, f->fix, sizeof(f->fix), "")) {
			snprintf(f->fix_prefix, sizeof(f->fix_prefix),
			         "numactl --cpunodebind=%d --membind=%d", n, n);
		} else {
			snprintf(f->fix, sizeof(f->fix),
			         "%sno fix without rebuilding was verified: the thread that first "
			         "writes a buffer should allocate it",
			         f->risk ? "on a multi-node machine, if the run fits one node, "
			                   "numactl --cpunodebind=N --membind=N; otherwise "
			                 : "");
		}
		break;
	case AUDIT_REUSED_REMOTE:
		if (handovers_of(r, f->block) > 0)
			snprintf(f->fix, sizeof(f->fix),
			         "per-node pools (SCRATCH_CONF=per_node:true, the default on two "
			         "nodes or more): a block then goes only to a thread on its pages' "
			         "node");
		else
			snprintf(f->fix, sizeof(f->fix),
			         "no fix without rebuilding was verified: a thread on another node "
			         "than the block's pages holds or frees it");
		break;
	case AUDIT_PLACEMENT_DIFFERS:
		snprintf(
		        f->fix, sizeof(f->fix),
		        "no fix was verified: see which memory policy (numactl --show, the "
		        "policy in /proc/PID/numa_maps) or full node (numastat -m) put them there");
		break;
	case AUDIT_THREAD_MOVED:
		fix_pin(j, f, f->owner, left_node(j, f->owner));
		break;
	case AUDIT_MAPPING_PRIVATE:
		fix_pin(j, f, f->owner, f->node);
		break;
	case AUDIT_MAPPING_SHARED:
		fix_shared(j, f);
		break;
	}
	text_mask_controls(f->fix);
}
