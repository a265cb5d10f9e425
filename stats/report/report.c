/*
 * report.c - scratchstat's HTML report (report.h): the sections of the
 * page, each rendered from scratchd's JSON answers with the charts of
 * svg.c, and the locality section of locality.c (report_int.h); the text
 * and size helpers every section prints with.
 *
 * Names from the host (exe, command line, configuration, thread names,
 * symbols) are untrusted: they only ever reach the page through
 * html_text(). Everything else printed is a number or a constant.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "html.h"
#include "report.h"
#include "report_int.h"
#include "svg.h"
#include "text.h"

#define CHART_W 960

/* The threads the page names: the thread table's, then any tid only the
 * history or the trace knows (a thread that exited and whose slot was
 * reused), each with its colour. */
struct thread_ref {
	long long tid;
	const char *name; /* "" when unknown */
	const char *color;
};

struct page {
	FILE *f;
	const struct report_input *in;
	struct thread_ref *threads;
	size_t nthreads;
	uint64_t t0;  /* the origin of every time axis, CLOCK_REALTIME ns */
	double x_end; /* and their end, in seconds from t0: the latest data */
};

static uint64_t num(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v < 0 ? 0 : (uint64_t)v;
}

static long long snum(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

void report_text(FILE *f, const char *s)
{
	html_text(f, s, (size_t)-1);
}

void report_bytes(FILE *f, uint64_t v)
{
	char b[32];

	fputs(text_human(v, b, sizeof(b)), f);
}

/* "2026-12-01 23:45:12.123 UTC": unambiguous wherever the page is read. */
static void when(struct page *pg, uint64_t ns)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (ns == 0 || gmtime_r(&s, &tm) == NULL) {
		fputs("-", pg->f);
		return;
	}
	fprintf(pg->f, "%04d-%02d-%02d %02d:%02d:%02d.%03u UTC", tm.tm_year + 1900, tm.tm_mon + 1,
	        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	        (unsigned)(ns % 1000000000u / 1000000u));
}

static double secs(const struct page *pg, uint64_t ns)
{
	return ns > pg->t0 ? (double)(ns - pg->t0) / 1e9 : 0.0;
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */
/* ---------------------------------------------------------------------- */

static struct thread_ref *find_thread(const struct page *pg, long long tid)
{
	for (size_t i = 0; i < pg->nthreads; i++)
		if (pg->threads[i].tid == tid)
			return &pg->threads[i];
	return NULL;
}

static int add_thread(struct page *pg, long long tid, const char *name)
{
	struct thread_ref *t;

	if (find_thread(pg, tid) != NULL)
		return 0;
	t = realloc(pg->threads, (pg->nthreads + 1) * sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	pg->threads = t;
	t[pg->nthreads] = (struct thread_ref){tid, name, NULL};
	pg->nthreads++;
	return 0;
}

static int tid_cmp(const void *a, const void *b)
{
	const struct thread_ref *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Every tid the page will name, in tid order (the main thread, usually
 * the lowest, first), each with its colour. */
static int collect_threads(struct page *pg)
{
	const json_t *t, *s, *r;
	size_t i, j;
	int rc = 0;

	json_array_foreach(json_object_get(pg->in->proc, "thread_table"), i, t) rc |=
	        add_thread(pg, snum(t, "tid"), str(t, "name"));
	json_array_foreach(json_object_get(pg->in->history, "samples"), i, s)
	        json_array_foreach(json_object_get(s, "thread_points"), j, t) rc |=
	        add_thread(pg, snum(t, "tid"), "");
	json_array_foreach(json_object_get(pg->in->trace, "records"), i, r) rc |=
	        add_thread(pg, snum(r, "tid"), "");
	if (pg->nthreads > 0)
		qsort(pg->threads, pg->nthreads, sizeof(*pg->threads), tid_cmp);
	for (i = 0; i < pg->nthreads; i++)
		pg->threads[i].color = svg_palette(i);
	return rc;
}

/* "1234 worker-0" (or "1234" for a thread whose name is gone). */
static void thread_label(const struct thread_ref *t, char *buf, size_t len)
{
	snprintf(buf, len, "%lld%s%s", t->tid, t->name[0] ? " " : "", t->name);
}

/* ---------------------------------------------------------------------- */
/* Page frame                                                              */
/* ---------------------------------------------------------------------- */

static const char css[] =
        "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1000px;"
        "color:#222;background:#fff;padding:0 1em}"
        "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:2em;"
        "border-bottom:1px solid #ccc}h3{font-size:1em}"
        "table{border-collapse:collapse;margin:.5em 0}"
        "td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right;"
        "vertical-align:top}th{background:#f4f4f4}"
        "td.l,th.l{text-align:left}td.site{text-align:left;font-family:monospace;"
        "word-break:break-all}"
        "dl.head{display:grid;grid-template-columns:max-content 1fr;gap:2px 1em}"
        "dl.head dt{font-weight:bold}dl.head dd{margin:0;font-family:monospace;"
        "word-break:break-all}"
        ".cards{display:flex;flex-wrap:wrap;gap:8px}.card{border:1px solid #ddd;"
        "border-radius:4px;padding:4px 10px;min-width:110px}.card b{display:block;"
        "font-size:1.2em}.card span{color:#666;font-size:.85em}"
        "svg.chart{display:block;max-width:100%;height:auto;margin:.5em 0}"
        ".grid{stroke:#e4e4e4}.lane{stroke:#eee}.plot{fill:none;stroke:#999}"
        ".tick,.lanelabel{font-size:11px;fill:#555}"
        ".series{fill:none;stroke-width:1.8}.series.wide{stroke-width:6;stroke-opacity:.45}"
        ".mark{stroke:#333;stroke-width:.5;fill-opacity:.8}"
        "ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 14px;"
        "font-size:.9em}"
        ".swatch{display:inline-block;width:12px;height:12px;margin-right:4px;"
        "vertical-align:-1px;border-radius:2px}"
        ".note{color:#555;font-style:italic}"
        ".bar{display:inline-block;height:10px;background:#4e79a7;vertical-align:middle}"
        ".bar.miss{background:#e15759}"
        "table.matrix td.cell{min-width:80px;text-align:center}"
        "ol#findings>li{margin-bottom:1em;border-left:3px solid #e15759;padding-left:.6em}"
        "li.finding p.text{font-weight:bold;margin:.2em 0}"
        "ol.frames{margin:.2em 0;font-size:.9em}summary.site{cursor:pointer;"
        "font-family:monospace}"
        "nav{margin:1em 0;font-size:.95em}nav a{color:#1f4e79}"
        "footer{margin-top:3em;color:#777;font-size:.85em}";

static void page_open(struct page *pg)
{
	const json_t *p = pg->in->proc;

	/* The policy is the promise in the page itself: nothing is fetched,
	 * nothing runs, whatever a name in it holds. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<title>scratch report: pid ",
	      pg->f);
	fprintf(pg->f, "%lld ", snum(p, "pid"));
	report_text(pg->f, str(p, "exe"));
	fprintf(pg->f, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
}

static void page_close(struct page *pg)
{
	fputs("<footer>Made by scratchstat " PACKAGE_VERSION " at ", pg->f);
	when(pg, pg->in->made_ns);
	fputs(" from scratchd's data. This page is self-contained: it loads nothing and runs "
	      "no script.</footer>\n</body>\n</html>\n",
	      pg->f);
}

/* ---------------------------------------------------------------------- */
/* Header and totals                                                       */
/* ---------------------------------------------------------------------- */

static void head_row(struct page *pg, const char *term, const char *value)
{
	fprintf(pg->f, "<dt>%s</dt><dd>", term);
	report_text(pg->f, value);
	fputs("</dd>\n", pg->f);
}

static void section_header(struct page *pg)
{
	const json_t *p = pg->in->proc;
	char size[64], a[32], b[32];

	fprintf(pg->f, "<header id=\"process\" data-pid=\"%lld\">\n<h1>scratch report: pid %lld",
	        snum(p, "pid"), snum(p, "pid"));
	fputs("</h1>\n<dl class=\"head\">\n", pg->f);
	head_row(pg, "exe", str(p, "exe"));
	head_row(pg, "command", str(p, "command"));
	head_row(pg, "SCRATCH_CONF", str(p, "conf")[0] ? str(p, "conf") : "(defaults)");
	snprintf(size, sizeof(size), "%s to %s", text_human(num(p, "min_size"), a, sizeof(a)),
	         text_human(num(p, "max_size"), b, sizeof(b)));
	head_row(pg, "pooled sizes", size);
	fputs("<dt>state</dt><dd>", pg->f);
	report_text(pg->f, str(p, "state"));
	if (json_is_string(json_object_get(p, "exit_reason"))) {
		fputs(" (", pg->f);
		report_text(pg->f, str(p, "exit_reason"));
		fputs(")", pg->f);
	}
	if (json_is_string(json_object_get(p, "pools_off"))) {
		fputs(", pools off: ", pg->f);
		report_text(pg->f, str(p, "pools_off"));
	}
	fputs("</dd>\n<dt>started</dt><dd>", pg->f);
	when(pg, num(p, "created_ns"));
	fputs("</dd>\n<dt>sampled</dt><dd>", pg->f);
	when(pg, num(p, "exit_ns") && strcmp(str(p, "state"), "live") != 0 ? num(p, "exit_ns")
	                                                                   : num(p, "sampled_ns"));
	fputs("</dd>\n</dl>\n</header>\n", pg->f);
	fputs("<nav><a href=\"#totals\">Totals</a> \xc2\xb7 <a href=\"#threads\">Threads</a> "
	      "\xc2\xb7 "
	      "<a href=\"#history\">Over time</a> \xc2\xb7 <a href=\"#growth\">Growths</a> "
	      "\xc2\xb7 "
	      "<a href=\"#audit\">Locality audit</a> \xc2\xb7 <a href=\"#sizes\">Size "
	      "classes</a></nav>\n",
	      pg->f);
}

static void card_count(struct page *pg, const char *what, uint64_t v)
{
	fprintf(pg->f, "<div class=\"card\"><b>%llu</b><span>%s</span></div>\n",
	        (unsigned long long)v, what);
}

static void card_bytes(struct page *pg, const char *what, uint64_t v)
{
	char b[32];

	fprintf(pg->f, "<div class=\"card\"><b>%s</b><span>%s</span></div>\n",
	        text_human(v, b, sizeof(b)), what);
}

static void section_totals(struct page *pg)
{
	const json_t *p = pg->in->proc, *h = json_object_get(p, "hit_rate");

	fputs("<section id=\"totals\">\n<h2>Totals</h2>\n<div class=\"cards\">\n", pg->f);
	card_count(pg, "threads live", num(p, "threads"));
	card_count(pg, "threads seen", num(p, "threads_seen"));
	card_count(pg, "pooled allocations", num(p, "allocs"));
	if (json_is_real(h))
		fprintf(pg->f, "<div class=\"card\"><b>%.1f%%</b><span>hit rate</span></div>\n",
		        json_real_value(h) * 100.0);
	card_bytes(pg, "retained", num(p, "retained"));
	card_bytes(pg, "leased", num(p, "leased"));
	card_bytes(pg, "peak leased", num(p, "peak_leased"));
	card_count(pg, "growths", num(p, "growths"));
	card_bytes(pg, "grown", num(p, "growth_bytes"));
	card_count(pg, "frees", num(p, "frees"));
	card_count(pg, "remote frees", num(p, "remote_frees_in"));
	card_count(pg, "passed through", num(p, "passthrough"));
	card_bytes(pg, "in the depot", num(p, "depot_bytes"));
	card_bytes(pg, "trimmed", num(p, "trimmed"));
	if (pg->in->audit != NULL) {
		card_count(pg, "locality findings", pg->in->audit->nfindings);
		if (pg->in->audit->nfindings > 0)
			card_bytes(pg,
			           pg->in->audit->single_node ? "at risk (top finding)"
			                                      : "remote (top finding)",
			           pg->in->audit->findings[0].bytes);
	}
	fputs("</div>\n</section>\n", pg->f);
}

static void thread_row(struct page *pg, const json_t *t)
{
	const json_t *h = json_object_get(t, "hit_rate");
	long long tid = snum(t, "tid");
	const struct thread_ref *ref = find_thread(pg, tid);

	fprintf(pg->f,
	        "<tr class=\"thread\" data-tid=\"%lld\"><td><span class=\"swatch\" "
	        "style=\"background:%s\"></span>%lld</td><td class=\"l name\">",
	        tid, ref != NULL ? ref->color : "#999", tid);
	report_text(pg->f, str(t, "name"));
	fprintf(pg->f, "</td><td class=\"l\">%s</td><td>%llu</td><td>",
	        strcmp(str(t, "state"), "live") == 0 ? "live" : "exited",
	        (unsigned long long)num(t, "allocs"));
	if (json_is_real(h))
		fprintf(pg->f, "%.1f%%", json_real_value(h) * 100.0);
	else
		fputs("-", pg->f);
	fputs("</td><td>", pg->f);
	report_bytes(pg->f, num(t, "retained"));
	fputs("</td><td>", pg->f);
	report_bytes(pg->f, num(t, "leased"));
	fputs("</td><td>", pg->f);
	report_bytes(pg->f, num(t, "peak_leased"));
	fprintf(pg->f, "</td><td>%llu</td><td>%llu</td><td>%llu</td></tr>\n",
	        (unsigned long long)num(t, "growths"),
	        (unsigned long long)num(t, "remote_frees_in"),
	        (unsigned long long)num(t, "remote_frees_out"));
}

static void section_threads(struct page *pg)
{
	const json_t *tt = json_object_get(pg->in->proc, "thread_table"), *t;
	size_t i;

	fputs("<section id=\"threads\">\n<h2>Threads</h2>\n", pg->f);
	if (json_array_size(tt) == 0) {
		fputs("<p class=\"note\">The thread table is empty.</p>\n</section>\n", pg->f);
		return;
	}
	fputs("<table>\n<tr><th>TID</th><th class=\"l\">NAME</th><th class=\"l\">STATE</th>"
	      "<th>ALLOCS</th><th>HIT%</th><th>RETAINED</th><th>LEASED</th><th>PEAK</th>"
	      "<th>GROWTHS</th><th>RFREE-IN</th><th>RFREE-OUT</th></tr>\n",
	      pg->f);
	for (size_t k = 0; k < pg->nthreads; k++)
		json_array_foreach(tt, i, t) if (snum(t, "tid") == pg->threads[k].tid)
		        thread_row(pg, t);
	fputs("</table>\n</section>\n", pg->f);
}

/* ---------------------------------------------------------------------- */
/* Over time: the history                                                  */
/* ---------------------------------------------------------------------- */

/* The tid that stands for the process totals, and the one for the threads
 * a sample summed (scratchd names the SD_SAMPLE_THREADS retaining most). */
#define TID_TOTALS 0
#define TID_OTHERS (-1)

/* x (seconds) and y (bytes, -1 where the thread has no value) of one
 * history column for one tid, or TID_TOTALS, or TID_OTHERS. */
static void history_series(struct page *pg, long long tid, const char *key, double *x, double *y)
{
	const json_t *s, *t;
	size_t i, j;

	json_array_foreach(json_object_get(pg->in->history, "samples"), i, s)
	{
		const json_t *o = json_object_get(s, "other_threads");

		x[i] = secs(pg, num(s, "time_ns"));
		y[i] = -1;
		if (tid == TID_TOTALS) {
			y[i] = (double)num(s, key);
			continue;
		}
		if (tid == TID_OTHERS) {
			y[i] = num(o, "threads") > 0 ? (double)num(o, key) : -1;
			continue;
		}
		json_array_foreach(json_object_get(s, "thread_points"), j,
		                   t) if (snum(t, "tid") == tid) y[i] = (double)num(t, key);
	}
}

static double series_max(const double *y, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		if (y[i] > m)
			m = y[i];
	return m;
}

static bool has_thread_history(const struct page *pg)
{
	const json_t *s;
	size_t i;

	json_array_foreach(json_object_get(pg->in->history, "samples"), i,
	                   s) if (json_is_array(json_object_get(s, "thread_points"))) return true;
	return false;
}

/* Whether a series has a value in some sample. */
static bool has_values(const double *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (y[i] >= 0)
			return true;
	return false;
}

/* A chart of key (retained or leased) per thread, with its legend. */
static int thread_chart(struct page *pg, const char *key, const char *title)
{
	size_t n = json_array_size(json_object_get(pg->in->history, "samples"));
	size_t nt = pg->nthreads, shown = 0;
	double *x = calloc(n + 1, sizeof(double)), *y = calloc((n + 1) * (nt + 1), sizeof(double));
	const char **labels = calloc(nt + 1, sizeof(char *)),
	           **colors = calloc(nt + 1, sizeof(char *));
	char(*names)[64] = calloc(nt + 1, sizeof(*names));
	bool ok = x != NULL && y != NULL && labels != NULL && colors != NULL && names != NULL;
	double ymax = 0;
	struct svg_frame fr;

	if (!ok)
		goto out_free;
	/* column `shown` of y: the next thread that has a value in some sample */
	for (size_t t = 0; t <= nt; t++) {
		double *col = y + shown * n;

		history_series(pg, t < nt ? pg->threads[t].tid : TID_OTHERS, key, x, col);
		if (!has_values(col, n))
			continue;
		if (t < nt)
			thread_label(&pg->threads[t], names[shown], sizeof(names[shown]));
		else
			snprintf(names[shown], sizeof(names[shown]), "the other threads, summed");
		labels[shown] = names[shown];
		colors[shown] = t < nt ? pg->threads[t].color : "#777777";
		if (series_max(col, n) > ymax)
			ymax = series_max(col, n);
		shown++;
	}
	fprintf(pg->f, "<h3>%s</h3>\n", title);
	svg_open(pg->f, &fr, CHART_W, 240, title, pg->x_end, ymax, 0);
	svg_axes(pg->f, &fr);
	for (size_t t = 0; t < shown; t++)
		svg_steps(pg->f, &fr, x, y + t * n, n, colors[t], labels[t], false);
	svg_close(pg->f);
	svg_legend(pg->f, labels, colors, shown);
out_free:
	free(x);
	free(y);
	free(labels);
	free(colors);
	free(names);
	return ok ? 0 : -ENOMEM;
}

/* Retained and leased of the whole process. */
static int totals_chart(struct page *pg)
{
	size_t n = json_array_size(json_object_get(pg->in->history, "samples"));
	double *x = calloc(n + 1, sizeof(double)), *r = calloc(n + 1, sizeof(double)),
	       *l = calloc(n + 1, sizeof(double));
	const char *labels[] = {"retained", "leased"}, *colors[] = {svg_palette(0), svg_palette(1)};
	struct svg_frame fr;
	int rc = -ENOMEM;

	if (x != NULL && r != NULL && l != NULL) {
		history_series(pg, TID_TOTALS, "retained", x, r);
		history_series(pg, TID_TOTALS, "leased", x, l);
		fputs("<h3>The process: retained and leased</h3>\n", pg->f);
		svg_open(pg->f, &fr, CHART_W, 220, "retained and leased bytes of the process",
		         pg->x_end, series_max(r, n), 0);
		svg_axes(pg->f, &fr);
		svg_steps(pg->f, &fr, x, r, n, colors[0], "retained", true);
		svg_steps(pg->f, &fr, x, l, n, colors[1], "leased", false);
		svg_close(pg->f);
		svg_legend(pg->f, labels, colors, 2);
		rc = 0;
	}
	free(x);
	free(r);
	free(l);
	return rc;
}

static int section_history(struct page *pg)
{
	const json_t *h = pg->in->history;
	size_t n = json_array_size(json_object_get(h, "samples"));
	int rc = 0;

	fputs("<section id=\"history\">\n<h2>Over time</h2>\n", pg->f);
	if (h == NULL || n == 0) {
		fputs("<p class=\"note\">scratchd has no history samples of this process.</p>\n"
		      "</section>\n",
		      pg->f);
		return 0;
	}
	fprintf(pg->f, "<p>%zu samples, one every %llu ms. 0 s on every time axis of this page is ",
	        n, (unsigned long long)num(h, "interval_ms"));
	when(pg, pg->t0);
	fputs(", the process's start.</p>\n", pg->f);
	rc |= totals_chart(pg);
	if (!has_thread_history(pg)) {
		fputs("<p class=\"note\">This scratchd keeps process totals only: no per-thread "
		      "history.</p>\n</section>\n",
		      pg->f);
		return rc;
	}
	rc |= thread_chart(pg, "retained", "Retained bytes per thread");
	rc |= thread_chart(pg, "leased", "Leased bytes per thread");
	fputs("</section>\n", pg->f);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Growths: the trace                                                      */
/* ---------------------------------------------------------------------- */

static const char *node_color(long long node)
{
	return node < 0 ? "#999999" : svg_palette((size_t)node);
}

static void record_tip(struct page *pg, const json_t *r, const struct thread_ref *t)
{
	char b[32];

	fprintf(pg->f, "<title>%.3f s: tid %lld ", secs(pg, num(r, "time_ns")), t->tid);
	report_text(pg->f, t->name);
	fprintf(pg->f, " grew %s (class %lld) on cpu %lld, node %lld at ",
	        text_human(num(r, "bytes"), b, sizeof(b)), snum(r, "class"), snum(r, "cpu"),
	        snum(r, "node"));
	report_text(pg->f, json_is_string(json_object_get(r, "site")) ? str(r, "site")
	                                                              : "an unknown site");
	fputs("</title>", pg->f);
}

/* Lane index of each thread that grew: threads in page order. */
static unsigned lane_of(const struct page *pg, const bool *grew, long long tid)
{
	unsigned lane = 0;

	for (size_t i = 0; i < pg->nthreads; i++) {
		if (pg->threads[i].tid == tid)
			return lane;
		lane += grew[i];
	}
	return lane;
}

/* One lane per thread that grew; a mark per growth, its area by size,
 * its colour by the node the thread ran on. */
static int growth_lanes(struct page *pg, const json_t *recs)
{
	bool *grew = calloc(pg->nthreads + 1, sizeof(bool));
	unsigned lanes = 0;
	double bmax = 1;
	struct svg_frame fr;
	const json_t *r;
	size_t i;
	char label[64];

	if (grew == NULL)
		return -ENOMEM;
	json_array_foreach(recs, i, r)
	{
		struct thread_ref *t = find_thread(pg, snum(r, "tid"));

		if (t != NULL)
			grew[t - pg->threads] = true;
		if ((double)num(r, "bytes") > bmax)
			bmax = (double)num(r, "bytes");
	}
	for (i = 0; i < pg->nthreads; i++)
		lanes += grew[i];
	fputs("<h3>Growth timeline per thread</h3>\n", pg->f);
	svg_open(pg->f, &fr, CHART_W, 40 + 28 * (int)lanes, "growths per thread over time",
	         pg->x_end, 0, lanes);
	svg_axes(pg->f, &fr);
	for (i = 0; i < pg->nthreads; i++)
		if (grew[i]) {
			thread_label(&pg->threads[i], label, sizeof(label));
			svg_lane_label(pg->f, &fr, lane_of(pg, grew, pg->threads[i].tid), label);
		}
	json_array_foreach(recs, i, r)
	{
		struct thread_ref *t = find_thread(pg, snum(r, "tid"));
		double rad = 2.5 + 8.0 * (double)num(r, "bytes") / bmax;

		if (t == NULL)
			continue; /* not collected: out of memory, said by the caller */
		fprintf(pg->f,
		        "<circle class=\"mark\" data-tid=\"%lld\" cx=\"%.1f\" cy=\"%.1f\" "
		        "r=\"%.1f\" fill=\"%s\">",
		        t->tid, svg_frame_x(&fr, secs(pg, num(r, "time_ns"))),
		        svg_lane_y(&fr, lane_of(pg, grew, t->tid)), rad > 12 ? 12 : rad,
		        node_color(snum(r, "node")));
		record_tip(pg, r, t);
		fputs("</circle>\n", pg->f);
	}
	svg_close(pg->f);
	free(grew);
	return 0;
}

/* The step series of bytes thread t grew so far: 0 from the start, a step
 * per growth of t, held to the end. Returns its points (x, y room: n + 2). */
static size_t grown_series(const struct page *pg, const json_t *recs, long long tid, double *x,
                           double *y)
{
	const json_t *r;
	size_t i, m = 1;

	x[0] = y[0] = 0;
	json_array_foreach(recs, i, r) if (snum(r, "tid") == tid)
	{
		x[m] = secs(pg, num(r, "time_ns"));
		y[m] = y[m - 1] + (double)num(r, "bytes");
		m++;
	}
	x[m] = pg->x_end;
	y[m] = y[m - 1];
	return m + 1;
}

/* Bytes grown by each thread so far, as step lines over the same axis. */
static int growth_cumulative(struct page *pg, const json_t *recs)
{
	size_t n = json_array_size(recs);
	double *x = calloc(n + 2, sizeof(double)), *y = calloc(n + 2, sizeof(double));
	double ymax = 0;
	struct svg_frame fr;
	char label[64];

	if (x == NULL || y == NULL) {
		free(x);
		free(y);
		return -ENOMEM;
	}
	/* the scale first: the most any thread grew */
	for (size_t k = 0; k < pg->nthreads; k++) {
		size_t m = grown_series(pg, recs, pg->threads[k].tid, x, y);

		if (y[m - 1] > ymax)
			ymax = y[m - 1];
	}
	fputs("<h3>Bytes grown per thread, cumulative</h3>\n", pg->f);
	svg_open(pg->f, &fr, CHART_W, 220, "bytes grown per thread over time", pg->x_end, ymax, 0);
	svg_axes(pg->f, &fr);
	for (size_t k = 0; k < pg->nthreads; k++) {
		size_t m = grown_series(pg, recs, pg->threads[k].tid, x, y);

		if (m <= 2)
			continue; /* it never grew */
		thread_label(&pg->threads[k], label, sizeof(label));
		svg_steps(pg->f, &fr, x, y, m, pg->threads[k].color, label, false);
	}
	svg_close(pg->f);
	free(x);
	free(y);
	return 0;
}

/* The node colours of the timeline, for the nodes that appear. */
static void node_legend(struct page *pg, const json_t *recs)
{
	char names[9][24];
	const char *labels[9], *colors[9];
	bool seen[9] = {false};
	size_t i, n = 0;
	const json_t *r;

	json_array_foreach(recs, i, r)
	{
		long long node = snum(r, "node");

		seen[node < 0 || node > 7 ? 8 : node] = true;
	}
	for (i = 0; i < 9; i++) {
		if (!seen[i])
			continue;
		if (i == 8)
			snprintf(names[n], sizeof(names[n]), "node unknown or above 7");
		else
			snprintf(names[n], sizeof(names[n]), "node %zu", i);
		labels[n] = names[n];
		colors[n++] = i == 8 ? node_color(-1) : node_color((long long)i);
	}
	fputs("<p>Marks: one per growth, area by size, colour by the NUMA node its thread ran on; "
	      "hover for the call site.</p>\n",
	      pg->f);
	svg_legend(pg->f, labels, colors, n);
}

struct site_sum {
	const char *site;
	uint64_t count, bytes;
	long long tids[8];
	unsigned ntids, more_tids;
};

static int site_cmp(const void *a, const void *b)
{
	const struct site_sum *x = a, *y = b;

	return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : strcmp(x->site, y->site);
}

static void site_add(struct site_sum *s, const json_t *r)
{
	long long tid = snum(r, "tid");

	s->count++;
	s->bytes += num(r, "bytes");
	for (unsigned k = 0; k < s->ntids; k++)
		if (s->tids[k] == tid)
			return;
	if (s->ntids < 8)
		s->tids[s->ntids++] = tid;
	else
		s->more_tids++;
}

static void site_row(struct page *pg, const struct site_sum *s)
{
	fputs("<tr class=\"site\"><td class=\"site\">", pg->f);
	report_text(pg->f, s->site);
	fprintf(pg->f, "</td><td>%llu</td><td>", (unsigned long long)s->count);
	report_bytes(pg->f, s->bytes);
	fputs("</td><td class=\"l\">", pg->f);
	for (unsigned k = 0; k < s->ntids; k++) {
		const struct thread_ref *t = find_thread(pg, s->tids[k]);

		fprintf(pg->f, "%s<span data-tid=\"%lld\">%lld ", k ? ", " : "", s->tids[k],
		        s->tids[k]);
		report_text(pg->f, t != NULL ? t->name : "");
		fputs("</span>", pg->f);
	}
	if (s->more_tids)
		fprintf(pg->f, " and %u more", s->more_tids);
	fputs("</td></tr>\n", pg->f);
}

/* A record and its site's name, to group records by site. */
struct site_of {
	const char *site;
	const json_t *r;
};

static int site_of_cmp(const void *a, const void *b)
{
	return strcmp(((const struct site_of *)a)->site, ((const struct site_of *)b)->site);
}

/* Growths summed per call site, most bytes first: the records sorted by
 * site, then summed run by run (many distinct bare addresses stay cheap). */
static int growth_sites(struct page *pg, const json_t *recs)
{
	size_t n = json_array_size(recs), k = 0, i;
	struct site_of *by = calloc(n + 1, sizeof(*by));
	struct site_sum *sums = calloc(n + 1, sizeof(*sums));
	const json_t *r;

	if (by == NULL || sums == NULL) {
		free(by);
		free(sums);
		return -ENOMEM;
	}
	json_array_foreach(recs, i, r) by[i] = (struct site_of){
	        json_is_string(json_object_get(r, "site")) ? str(r, "site") : "(unknown site)", r};
	qsort(by, n, sizeof(*by), site_of_cmp);
	for (i = 0; i < n; i++) {
		if (i == 0 || strcmp(by[i].site, by[i - 1].site) != 0)
			sums[k++].site = by[i].site;
		site_add(&sums[k - 1], by[i].r);
	}
	qsort(sums, k, sizeof(*sums), site_cmp);
	fputs("<h3>Call sites</h3>\n<table>\n<tr><th class=\"l\">SITE</th><th>GROWTHS</th>"
	      "<th>BYTES</th><th class=\"l\">THREADS</th></tr>\n",
	      pg->f);
	for (i = 0; i < k; i++)
		site_row(pg, &sums[i]);
	fputs("</table>\n", pg->f);
	free(by);
	free(sums);
	return 0;
}

static void record_row(struct page *pg, const json_t *r)
{
	const struct thread_ref *t = find_thread(pg, snum(r, "tid"));

	fprintf(pg->f,
	        "<tr class=\"growth\" data-tid=\"%lld\"><td>%llu</td><td>%.3f s</td><td>%lld</td>"
	        "<td class=\"l\">",
	        snum(r, "tid"), (unsigned long long)num(r, "seq"), secs(pg, num(r, "time_ns")),
	        snum(r, "tid"));
	report_text(pg->f, t != NULL ? t->name : "");
	fputs("</td><td>", pg->f);
	report_bytes(pg->f, num(r, "bytes"));
	fprintf(pg->f, "</td><td>%lld</td><td>%lld</td><td>%lld</td><td class=\"l\">",
	        snum(r, "class"), snum(r, "cpu"), snum(r, "node"));
	report_text(pg->f,
	            json_is_string(json_object_get(r, "owner_name")) ? str(r, "owner_name") : "-");
	fputs("</td><td class=\"site\">", pg->f);
	report_text(pg->f, json_is_string(json_object_get(r, "site")) ? str(r, "site") : "??");
	fputs("</td></tr>\n", pg->f);
}

/* The newest REPORT_MAX_ROWS records, oldest first. */
static void growth_table(struct page *pg, const json_t *recs)
{
	size_t n = json_array_size(recs), from = n > REPORT_MAX_ROWS ? n - REPORT_MAX_ROWS : 0;

	fputs("<h3>Growth records</h3>\n", pg->f);
	if (from > 0)
		fprintf(pg->f,
		        "<p class=\"note\">The newest %d of %zu records (the timeline "
		        "above draws them all).</p>\n",
		        REPORT_MAX_ROWS, n);
	fputs("<table>\n<tr><th>SEQ</th><th>TIME</th><th>TID</th><th class=\"l\">NAME</th>"
	      "<th>SIZE</th><th>CLASS</th><th>CPU</th><th>NODE</th><th class=\"l\">OWNER</th>"
	      "<th class=\"l\">SITE</th></tr>\n",
	      pg->f);
	for (size_t i = from; i < n; i++)
		record_row(pg, json_array_get(recs, i));
	fputs("</table>\n", pg->f);
}

/* What the records leave out: the ring's losses and what scratchd let go. */
static void trace_gaps(struct page *pg)
{
	const json_t *tr = pg->in->trace;
	uint64_t lost = num(tr, "lost"), first = num(tr, "first");

	if (lost != 0)
		fprintf(pg->f,
		        "<p class=\"note\">%llu growth records were lost: the ring wrapped "
		        "before scratchd drained them.</p>\n",
		        (unsigned long long)lost);
	if (first > 1 && first - 1 > lost)
		fprintf(pg->f,
		        "<p class=\"note\">Records 1 to %llu are no longer kept by scratchd "
		        "(--trace-keep or its memory budget).</p>\n",
		        (unsigned long long)first - 1);
}

static int section_growth(struct page *pg)
{
	const json_t *tr = pg->in->trace, *recs = json_object_get(tr, "records");
	int rc = 0;

	fputs("<section id=\"growth\">\n<h2>Growths</h2>\n", pg->f);
	if (tr == NULL) {
		fputs("<p class=\"note\">No growth trace was read.</p>\n</section>\n", pg->f);
		return 0;
	}
	trace_gaps(pg);
	if (json_array_size(recs) == 0) {
		fputs("<p class=\"note\">No growth records: the pools did not grow while traced, "
		      "or "
		      "the trace is off (SCRATCH_CONF trace:false).</p>\n</section>\n",
		      pg->f);
		return 0;
	}
	rc |= growth_lanes(pg, recs);
	node_legend(pg, recs);
	rc |= growth_cumulative(pg, recs);
	rc |= growth_sites(pg, recs);
	growth_table(pg, recs);
	fputs("</section>\n", pg->f);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Size classes                                                            */
/* ---------------------------------------------------------------------- */

static void class_row(struct page *pg, const json_t *k, uint64_t most)
{
	const json_t *h = json_object_get(k, "hit_rate");
	uint64_t req = num(k, "requests"), miss = num(k, "misses");
	unsigned w = most ? (unsigned)(req * 200 / most) : 0;
	unsigned wm = req ? (unsigned)(miss * w / req) : 0;

	fputs("<tr class=\"class\"><td>", pg->f);
	report_bytes(pg->f, num(k, "size_min"));
	fputs(" - ", pg->f);
	report_bytes(pg->f, num(k, "size"));
	fprintf(pg->f, "</td><td>%llu</td><td>", (unsigned long long)req);
	if (json_is_real(h))
		fprintf(pg->f, "%.1f%%", json_real_value(h) * 100.0);
	else
		fputs("-", pg->f);
	fprintf(pg->f, "</td><td>%llu</td><td>%llu</td><td>%llu</td><td>",
	        (unsigned long long)num(k, "larger_hits"), (unsigned long long)num(k, "depot_hits"),
	        (unsigned long long)miss);
	report_bytes(pg->f, num(k, "idle_bytes"));
	fputs("</td><td>", pg->f);
	report_bytes(pg->f, num(k, "leased_bytes"));
	fprintf(pg->f,
	        "</td><td class=\"l\"><span class=\"bar\" style=\"width:%upx\"></span>"
	        "<span class=\"bar miss\" style=\"width:%upx\"></span></td></tr>\n",
	        w - wm, wm);
}

static void section_sizes(struct page *pg)
{
	const json_t *v = pg->in->sizes, *k, *cls = json_object_get(v, "classes");
	uint64_t most = 0;
	size_t i;

	fputs("<section id=\"sizes\">\n<h2>Size classes</h2>\n", pg->f);
	if (v == NULL || !json_is_true(json_object_get(v, "available"))) {
		fputs("<p class=\"note\">No per size class counters in this process's segment (an "
		      "older libscratch).</p>\n</section>\n",
		      pg->f);
		return;
	}
	json_array_foreach(cls, i, k) if (num(k, "requests") > most) most = num(k, "requests");
	fputs("<table>\n<tr><th>CLASS (size)</th><th>REQUESTS</th><th>HIT%</th><th>LARGER</th>"
	      "<th>DEPOT</th><th>MISSES</th><th>IDLE</th><th>LEASED</th>"
	      "<th class=\"l\">REQUESTS (red: misses)</th></tr>\n",
	      pg->f);
	json_array_foreach(cls, i, k) class_row(pg, k, most);
	fputs("</table>\n<p>Requests below min_size (", pg->f);
	report_bytes(pg->f, num(v, "min_size"));
	fprintf(pg->f, ") are not pooled: %llu calls passed through.</p>\n</section>\n",
	        (unsigned long long)num(v, "passthrough"));
}

/* ---------------------------------------------------------------------- */
/* The page                                                                */
/* ---------------------------------------------------------------------- */

/* The origin of the time axes: the process's start (its segment's
 * creation, before any sample or growth of it). */
static uint64_t time_origin(const struct report_input *in)
{
	const json_t *s = json_array_get(json_object_get(in->history, "samples"), 0);
	uint64_t t = num(in->proc, "created_ns");

	return t != 0 ? t : num(s, "time_ns");
}

/* The latest time any chart shows: last sample, last growth, or the
 * process's last reading. */
static double time_end(const struct page *pg)
{
	const json_t *s =
	        json_array_get(json_object_get(pg->in->history, "samples"),
	                       json_array_size(json_object_get(pg->in->history, "samples")) - 1);
	const json_t *recs = json_object_get(pg->in->trace, "records");
	const json_t *r = json_array_get(recs, json_array_size(recs) - 1);
	double end = secs(pg, num(pg->in->proc, "sampled_ns"));

	if (secs(pg, num(s, "time_ns")) > end)
		end = secs(pg, num(s, "time_ns"));
	if (secs(pg, num(r, "time_ns")) > end)
		end = secs(pg, num(r, "time_ns"));
	return end;
}

int report_write(FILE *f, const struct report_input *in)
{
	struct page pg = {.f = f, .in = in, .t0 = time_origin(in)};
	int rc = collect_threads(&pg);

	pg.x_end = time_end(&pg);

	page_open(&pg);
	section_header(&pg);
	section_totals(&pg);
	section_threads(&pg);
	rc |= section_history(&pg);
	rc |= section_growth(&pg);
	locality_section(f, in->audit, in->audit_none, in->audit_json);
	section_sizes(&pg);
	page_close(&pg);
	free(pg.threads);
	if (rc != 0)
		return -ENOMEM;
	return fflush(f) != 0 || ferror(f) ? -EIO : 0;
}
