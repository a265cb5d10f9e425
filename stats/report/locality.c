/*
 * locality.c - the HTML report's locality section (report_int.h): the
 * audit's window and tiers, the first-touch node x user node matrix (and
 * placement node x user node), the threads as the audit saw them, and the
 * ranked findings with evidence, call site and fix. Rendered from struct
 * audit_result (audit.h) alone; without one the section says that no audit
 * data was collected, and why.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "audit.h"
#include "placement.h"
#include "report_int.h"

static const struct audit_thread *audit_thread_of(const struct audit_result *a, pid_t tid)
{
	for (size_t i = 0; i < a->nthreads; i++)
		if (a->threads[i].tid == tid)
			return &a->threads[i];
	return NULL;
}

/* "1234 worker-0", with data-tid, for a tid a finding names. */
static void tid_ref(FILE *f, const struct audit_result *a, pid_t tid)
{
	const struct audit_thread *t = audit_thread_of(a, tid);

	if (tid == AUDIT_UNKNOWN_TID) {
		fputs("<span class=\"tid\">unknown</span>", f);
		return;
	}
	fprintf(f, "<span class=\"tid\" data-tid=\"%d\">%d", (int)tid, (int)tid);
	if (t != NULL && t->name[0] != '\0') {
		fputs(" ", f);
		report_text(f, t->name);
	}
	fputs("</span>", f);
}

/* "0,1" for a node set, "-" for none. */
static void nodeset(FILE *f, topology_nodeset_t s)
{
	bool first = true;

	for (unsigned n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (s & ((topology_nodeset_t)1 << n)) {
			fprintf(f, "%s%u", first ? "" : ",", n);
			first = false;
		}
	if (first)
		fputs("-", f);
}

static void node_name(FILE *f, int node)
{
	if (node < 0)
		fputs("unknown", f);
	else
		fprintf(f, "node %d", node);
}

/* ---------------------------------------------------------------------- */
/* Window and tiers                                                        */
/* ---------------------------------------------------------------------- */

static void window(FILE *f, const struct audit_result *a)
{
	double s = a->ended_ns > a->started_ns ? (double)(a->ended_ns - a->started_ns) / 1e9 : 0;

	fprintf(f, "<p>An audit %s pid %d for %.1f s",
	        a->mode == AUDIT_ATTACH ? "attached to" : "launched as", (int)a->pid, s);
	if (a->exited)
		fputs(" (the process ended during it)", f);
	fprintf(f, ", on a machine with %u NUMA node%s.", a->nodes, a->nodes == 1 ? "" : "s");
	if (a->single_node)
		fputs(" With one node, a finding is a <em>risk</em> (remote on a multi-node "
		      "machine), not a measured remote access.",
		      f);
	fputs(" Present bytes in the pools' blocks: ", f);
	report_bytes(f, a->present_bytes);
	fputs(", with a sampled first toucher: ", f);
	report_bytes(f, a->sampled_bytes);
	fputs(", first toucher unknown: ", f);
	report_bytes(f, a->unknown_bytes);
	fprintf(f,
	        ". %llu fault samples, %llu in the pools' region, %llu lost; %llu placement "
	        "passes.</p>\n",
	        (unsigned long long)a->samples, (unsigned long long)a->samples_kept,
	        (unsigned long long)a->samples_lost, (unsigned long long)a->placement_reads);
}

static void tiers(FILE *f, const struct audit_result *a)
{
	fputs("<table id=\"audit-tiers\">\n<tr><th class=\"l\">TIER</th><th class=\"l\">STATE</th>"
	      "<th class=\"l\">WHY</th></tr>\n",
	      f);
	for (int t = 0; t < AUDIT_TIERS; t++) {
		fprintf(f, "<tr class=\"tier\" data-on=\"%d\"><td class=\"l\">", a->tiers[t].on);
		report_text(f, audit_tier_name((enum audit_tier_id)t));
		fprintf(f, "</td><td class=\"l\">%s</td><td class=\"l\">",
		        a->tiers[t].on ? "on" : "off");
		report_text(f, a->tiers[t].reason);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* ---------------------------------------------------------------------- */
/* Matrices                                                                */
/* ---------------------------------------------------------------------- */

static uint64_t matrix_max(const struct audit_matrix *m)
{
	uint64_t most = 0;

	for (unsigned i = 0; i < (m->nodes + 1) * (m->nodes + 1); i++)
		if (m->bytes[i] > most)
			most = m->bytes[i];
	return most;
}

/* One cell: its bytes, shaded by share of the largest cell, red off the
 * diagonal (pages on one node used from another), blue on it. */
static void matrix_cell(FILE *f, const struct audit_matrix *m, int first, int user, uint64_t most)
{
	uint64_t v = *audit_cell(m, first, user);
	double share = most ? (double)v / (double)most : 0;
	bool remote = first >= 0 && user >= 0 && first != user;

	fprintf(f,
	        "<td class=\"cell%s\" data-first=\"%d\" data-user=\"%d\" data-bytes=\"%llu\" "
	        "style=\"background:rgba(%s,%.2f)\">",
	        remote ? " remote" : "", first, user, (unsigned long long)v,
	        remote ? "225,87,89" : "78,121,167", 0.08 + 0.6 * share);
	report_bytes(f, v);
	fputs("</td>", f);
}

static void matrix(FILE *f, const struct audit_matrix *m, const char *id, const char *rows)
{
	uint64_t most;

	if (m->bytes == NULL) {
		fputs("<p class=\"note\">Not measured.</p>\n", f);
		return;
	}
	most = matrix_max(m);
	fprintf(f, "<table class=\"matrix\" id=\"%s\">\n<tr><th class=\"l\">%s \\ user</th>", id,
	        rows);
	for (unsigned u = 0; u <= m->nodes; u++) {
		fputs("<th>", f);
		node_name(f, u < m->nodes ? (int)u : -1);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (unsigned r = 0; r <= m->nodes; r++) {
		fputs("<tr><th class=\"l\">", f);
		node_name(f, r < m->nodes ? (int)r : -1);
		fputs("</th>", f);
		for (unsigned u = 0; u <= m->nodes; u++)
			matrix_cell(f, m, r < m->nodes ? (int)r : -1, u < m->nodes ? (int)u : -1,
			            most);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* ---------------------------------------------------------------------- */
/* Threads and findings                                                    */
/* ---------------------------------------------------------------------- */

static void audit_threads(FILE *f, const struct audit_result *a)
{
	fputs("<h3>Threads</h3>\n<table id=\"audit-threads\">\n<tr><th>TID</th>"
	      "<th class=\"l\">NAME</th><th>CPU</th><th>NODE</th><th>MAY RUN ON</th>"
	      "<th>FAULTED FROM</th><th>USES</th><th>OF WHICH REMOTE</th>"
	      "<th>FIRST-TOUCHED</th><th>FOR OTHERS</th></tr>\n",
	      f);
	for (size_t i = 0; i < a->nthreads; i++) {
		const struct audit_thread *t = &a->threads[i];

		fprintf(f, "<tr class=\"audit-thread\" data-tid=\"%d\"><td>%d</td><td class=\"l\">",
		        (int)t->tid, (int)t->tid);
		report_text(f, t->name);
		fprintf(f, "%s</td><td>%d</td><td>%d</td><td>", t->alive ? "" : " (gone)", t->cpu,
		        t->node);
		nodeset(f, t->affinity);
		fputs("</td><td>", f);
		nodeset(f, t->fault_nodes);
		fputs("</td><td>", f);
		report_bytes(f, t->used_bytes);
		fputs("</td><td>", f);
		report_bytes(f, t->remote_bytes);
		fputs("</td><td>", f);
		report_bytes(f, t->first_touched);
		fputs("</td><td>", f);
		report_bytes(f, t->touched_for_others);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* The site's frames, folded: <details> opens without a script. */
static void site_frames(FILE *f, const struct audit_site *s)
{
	fputs("<details><summary class=\"site\">", f);
	report_text(f, s->where[0] ? s->where : "(no symbol)");
	fputs("</summary><ol class=\"frames\">", f);
	for (unsigned i = 0; i < s->nframes && i < AUDIT_MAX_FRAMES; i++) {
		const struct audit_frame *fr = &s->frames[i];

		fprintf(f, "<li><code>0x%llx ", (unsigned long long)fr->addr);
		report_text(f, fr->function[0] ? fr->function : "??");
		if (fr->file[0] != '\0') {
			fputs(" (", f);
			report_text(f, fr->file);
			fprintf(f, ":%d)", fr->line);
		} else if (fr->module[0] != '\0') {
			fputs(" [", f);
			report_text(f, fr->module);
			fputs("]", f);
		}
		fputs("</code></li>", f);
	}
	fputs("</ol></details>", f);
}

static void finding_who(FILE *f, const struct audit_result *a, const struct audit_finding *x)
{
	if (x->owner != 0) {
		fputs("<dt>owner</dt><dd>", f);
		tid_ref(f, a, x->owner);
		fputs("</dd>", f);
	}
	if (x->ntids == 0)
		return;
	fputs("<dt>threads</dt><dd>", f);
	for (unsigned k = 0; k < x->ntids && k < AUDIT_MAX_TIDS; k++) {
		fputs(k ? ", " : "", f);
		tid_ref(f, a, x->tids[k]);
	}
	if (x->more_tids)
		fprintf(f, " and %u more", x->more_tids);
	fputs("</dd>", f);
}

static void finding(FILE *f, const struct audit_result *a, const struct audit_finding *x,
                    size_t rank)
{
	fprintf(f, "<li class=\"finding\" id=\"finding-%zu\" data-kind=\"", rank + 1);
	report_text(f, audit_kind_name(x->kind));
	fputs("\" data-evidence=\"", f);
	report_text(f, audit_evidence_name(x->evidence));
	fprintf(f, "\" data-bytes=\"%llu\"><p class=\"text\">", (unsigned long long)x->bytes);
	report_text(f, x->text);
	fputs("</p><dl class=\"head\"><dt>remote bytes</dt><dd>", f);
	report_bytes(f, x->bytes);
	fputs(x->risk ? " (a risk: remote on a multi-node machine)" : "", f);
	fputs("</dd><dt>evidence</dt><dd>", f);
	report_text(f, audit_evidence_name(x->evidence));
	fputs("</dd><dt>nodes</dt><dd>pages on ", f);
	node_name(f, x->node);
	fputs(", used from ", f);
	node_name(f, x->other_node);
	fputs("</dd>", f);
	finding_who(f, a, x);
	if (x->nblocks != 0)
		fprintf(f, "<dt>blocks</dt><dd>%u, the first at 0x%llx</dd>", x->nblocks,
		        (unsigned long long)x->block);
	fputs("<dt>call site</dt><dd>", f);
	if (x->site >= 0 && (size_t)x->site < a->nsites)
		site_frames(f, &a->sites[x->site]);
	else
		fputs("unknown", f);
	fputs("</dd><dt>fix</dt><dd class=\"fix\">", f);
	report_text(f, x->fix);
	fputs("</dd></dl></li>\n", f);
}

static void findings(FILE *f, const struct audit_result *a)
{
	fprintf(f, "<h3>Findings (%zu), most remote bytes first</h3>\n", a->nfindings);
	if (a->nfindings == 0) {
		fputs("<p class=\"note\" id=\"no-findings\">The audit found nothing to report with "
		      "the tiers it had (see above).</p>\n",
		      f);
		return;
	}
	fputs("<ol id=\"findings\">\n", f);
	for (size_t i = 0; i < a->nfindings; i++)
		finding(f, a, &a->findings[i], i);
	fputs("</ol>\n", f);
}

/* JSON text as a data block: '<', '>' and '&' (which JSON has only
 * inside strings) as \u escapes, so no "</script>" nor "<!--" can occur. */
static void data_block(FILE *f, const char *json)
{
	fputs("<script type=\"application/json\" id=\"audit-json\">", f);
	for (const char *p = json; *p != '\0'; p++) {
		if (*p == '<')
			fputs("\\u003c", f);
		else if (*p == '>')
			fputs("\\u003e", f);
		else if (*p == '&')
			fputs("\\u0026", f);
		else
			fputc(*p, f);
	}
	fputs("</script>\n", f);
}

void locality_section(FILE *f, const struct audit_result *a, const char *why_none, const char *json)
{
	fputs("<section id=\"audit\">\n<h2>Memory locality audit</h2>\n", f);
	if (a == NULL) {
		fputs("<p class=\"note\" id=\"no-audit\">No audit data was collected for this "
		      "report",
		      f);
		if (why_none != NULL && why_none[0] != '\0') {
			fputs(": ", f);
			report_text(f, why_none);
		}
		fputs(".</p>\n</section>\n", f);
		return;
	}
	window(f, a);
	tiers(f, a);
	fputs("<h3>First-touch node \xc3\x97 user node</h3>\n<p>Bytes of present pages by the node "
	      "of the CPU that first touched them (rows) and the node of the thread that uses "
	      "them (columns). Off the diagonal, in red: pages used from another node.</p>\n",
	      f);
	matrix(f, &a->touch, "matrix-touch", "first touch");
	fputs("<h3>Placement node \xc3\x97 user node</h3>\n<p>The same by the node each page "
	      "really sits on (move_pages).</p>\n",
	      f);
	matrix(f, &a->placed, "matrix-placed", "placed on");
	audit_threads(f, a);
	findings(f, a);
	if (json != NULL)
		data_block(f, json);
	fputs("</section>\n", f);
}
