/*
 * check_report.c - the HTML report's unit suite (stats/report/): the
 * escaping of untrusted text byte by byte (markup, invalid UTF-8, controls,
 * bidirectional overrides), whole pages rendered from scratchd-shaped JSON
 * with hostile names, and the locality section from a hand-made audit
 * result (hostile names and texts, the data block), in memory.
 *
 * Select with CK_RUN_SUITE=report.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "report.h"
#include "suites.h"
#include "text.h"
#include "thread_points.h"

#define FFFD "\xef\xbf\xbd"

/* html_text(s, len) into a malloc'd string. */
static char *escaped(const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(f);
	html_text(f, s, len);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static void expect_escaped(const char *in, size_t len, const char *want)
{
	char *got = escaped(in, len);

	ck_assert_msg(strcmp(got, want) == 0, "escaped '%s' as '%s', expected '%s'", in, got, want);
	free(got);
}

START_TEST(escape_markup)
{
	expect_escaped("</script><b a='1' b=\"2\">&amp;", (size_t)-1,
	               "&lt;/script&gt;&lt;b a=&#39;1&#39; b=&quot;2&quot;&gt;&amp;amp;");
	expect_escaped("worker-0", (size_t)-1, "worker-0");
	expect_escaped("", (size_t)-1, "");
	/* len bounds the text, whatever follows */
	expect_escaped("ab<cd", 3, "ab&lt;");
}
END_TEST

START_TEST(escape_utf8)
{
	/* well-formed text of 2, 3 and 4 bytes stays as it is */
	expect_escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e", (size_t)-1,
	               "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
	/* each bad byte alone: a stray continuation, a lead without its
	 * continuation (the next byte starts afresh), a byte never in UTF-8 */
	expect_escaped("a\x80z", (size_t)-1, "a" FFFD "z");
	expect_escaped("\xe2\x82<", (size_t)-1, FFFD FFFD "&lt;");
	expect_escaped("\xff\xfe", (size_t)-1, FFFD FFFD);
	/* overlong forms, a surrogate, above U+10FFFF */
	expect_escaped("\xc0\xbc", (size_t)-1, FFFD FFFD);
	expect_escaped("\xe0\x80\xbc", (size_t)-1, FFFD FFFD FFFD);
	expect_escaped("\xed\xa0\x80", (size_t)-1, FFFD FFFD FFFD);
	expect_escaped("\xf4\x90\x80\x80", (size_t)-1, FFFD FFFD FFFD FFFD);
	/* cut short by len in the middle of a character */
	expect_escaped("\xc3\xa9", 1, FFFD);
}
END_TEST

START_TEST(escape_controls)
{
	/* C0 (newline and tab too: names hold none), DEL, C1, NUL inside len */
	expect_escaped("a\nb\tc\x1b[31m\x7f", (size_t)-1, "a" FFFD "b" FFFD "c" FFFD "[31m" FFFD);
	expect_escaped("\xc2\x85\xc2\x9b", (size_t)-1, FFFD FFFD);
	expect_escaped("a\0b", 3, "a" FFFD "b");
	/* the bidirectional overrides and isolates, not the marks */
	expect_escaped("x\xe2\x80\xaey\xe2\x81\xa6z\xe2\x80\x8e", (size_t)-1,
	               "x" FFFD "y" FFFD "z\xe2\x80\x8e");
}
END_TEST

START_TEST(human_sizes)
{
	char b[32];

	ck_assert_str_eq(text_human(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(text_human(1023, b, sizeof(b)), "1023 B");
	ck_assert_str_eq(text_human(1536, b, sizeof(b)), "1.5 KiB");
	ck_assert_str_eq(text_human(3u << 20, b, sizeof(b)), "3.0 MiB");
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Pages                                                                   */
/* ---------------------------------------------------------------------- */

/* A process answer of two threads, one named hostile. */
static json_t *proc_json(void)
{
	return json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:[{s:i,s:s,s:s,s:I,s:I},"
	                 "{s:i,s:s,s:s,s:I,s:I}]}",
	                 "pid", 4242, "exe", "/bin/x\"<y>", "command", "x --flag </style>", "conf",
	                 "trace:true", "state", "live", "created_ns", (json_int_t)1000000000,
	                 "retained", (json_int_t)(3 << 20), "leased", (json_int_t)(1 << 20),
	                 "thread_table", "tid", 4242, "name", "main", "state", "live", "retained",
	                 (json_int_t)(1 << 20), "leased", (json_int_t)0, "tid", 4243, "name",
	                 "worker \xc3\xa9", "state", "live", "retained", (json_int_t)(2 << 20),
	                 "leased", (json_int_t)(1 << 20));
}

/* Three samples with thread points, the last with one thread summed. */
static json_t *history_json(void)
{
	json_t *h = json_pack("{s:i,s:I,s:[]}", "pid", 4242, "interval_ms", (json_int_t)100,
	                      "samples"),
	       *a = json_object_get(h, "samples");

	for (int i = 0; i < 3; i++)
		json_array_append_new(
		        a,
		        json_pack("{s:I,s:I,s:I,s:[{s:i,s:I,s:I},{s:i,s:I,s:I}],s:{s:i,s:I,s:I}}",
		                  "time_ns", (json_int_t)(1000000000 + i * 100000000), "retained",
		                  (json_int_t)((i + 1) << 20), "leased", (json_int_t)(i << 20),
		                  "thread_points", "tid", 4243, "retained", (json_int_t)(i << 20),
		                  "leased", (json_int_t)0, "tid", 4242, "retained",
		                  (json_int_t)(1 << 20), "leased", (json_int_t)0, "other_threads",
		                  "threads", i == 2, "retained", (json_int_t)(i == 2 ? 65536 : 0),
		                  "leased", (json_int_t)0));
	return h;
}

/* Two growths, one from a thread the table no longer has, a hostile site. */
static json_t *trace_json(void)
{
	return json_pack("{s:i,s:I,s:I,s:[{s:I,s:I,s:i,s:I,s:i,s:i,s:i,s:s},"
	                 "{s:I,s:I,s:i,s:I,s:i,s:i,s:i,s:n}]}",
	                 "pid", 4242, "first", (json_int_t)1, "lost", (json_int_t)0, "records",
	                 "seq", (json_int_t)1, "time_ns", (json_int_t)1050000000, "tid", 4243,
	                 "bytes", (json_int_t)(2 << 20), "class", 83, "cpu", 1, "node", 0, "site",
	                 "f<img src=x onerror=alert(1)> (a.c:1)", "seq", (json_int_t)2, "time_ns",
	                 (json_int_t)1150000000, "tid", 4299, "bytes", (json_int_t)65536, "class",
	                 64, "cpu", 0, "node", -1, "site");
}

static char *render(const struct report_input *in)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(report_write(f, in), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

START_TEST(page_whole)
{
	json_t *p = proc_json(), *h = history_json(), *t = trace_json();
	struct report_input in = {.proc = p, .history = h, .trace = t, .made_ns = 2000000000};
	char *page;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(t);
	/* scratchd's JSON is UTF-8: a hostile name arrives degraded but with
	 * its markup; a raw name (the audit's) may hold any byte */
	json_object_set_new(json_array_get(json_object_get(p, "thread_table"), 0), "name",
	                    json_string("</td><script>alert(1)</script>?"));
	page = render(&in);
	ck_assert_ptr_nonnull(strstr(page, "<!DOCTYPE html>"));
	ck_assert_ptr_nonnull(strstr(page, "</html>\n"));
	/* nothing from the names became markup */
	ck_assert_uint_eq(count(page, "<script"), 0);
	ck_assert_uint_eq(count(page, "<img"), 0);
	ck_assert_ptr_nonnull(strstr(page, "&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;?"));
	ck_assert_ptr_nonnull(strstr(page, "f&lt;img src=x onerror=alert(1)&gt; (a.c:1)"));
	ck_assert_ptr_nonnull(strstr(page, "/bin/x&quot;&lt;y&gt;"));
	ck_assert_ptr_nonnull(strstr(page, "x --flag &lt;/style&gt;"));
	/* the threads: two rows; the thread only the trace knows is charted */
	ck_assert_uint_eq(count(page, "<tr class=\"thread\""), 2);
	ck_assert_ptr_nonnull(strstr(page, "worker \xc3\xa9"));
	ck_assert_uint_eq(count(page, "<circle class=\"mark\""), 2);
	ck_assert_ptr_nonnull(strstr(page, "data-tid=\"4299\""));
	ck_assert_uint_eq(count(page, "<tr class=\"growth\""), 2);
	/* per-thread charts, the summed threads as a series of their own */
	ck_assert_ptr_nonnull(strstr(page, "Retained bytes per thread"));
	ck_assert_ptr_nonnull(strstr(page, "the other threads, summed"));
	/* no size classes given: said, not left blank */
	ck_assert_ptr_nonnull(strstr(page, "No per size class counters"));
	free(page);
	json_decref(p);
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(page_missing_parts)
{
	json_t *p = proc_json();
	struct report_input in = {.proc = p};
	char *page = render(&in);

	ck_assert_ptr_nonnull(strstr(page, "scratchd has no history samples"));
	ck_assert_ptr_nonnull(strstr(page, "No growth trace was read"));
	ck_assert_uint_eq(count(page, "<svg"), 0);
	free(page);
	json_decref(p);
}
END_TEST

/* A page the stream cannot take: the write error is reported. */
START_TEST(page_write_error)
{
	json_t *p = proc_json();
	struct report_input in = {.proc = p};
	FILE *f = fopen("/dev/full", "w");

	if (f == NULL) {
		json_decref(p);
		return; /* no /dev/full here: nothing to check */
	}
	ck_assert_int_eq(report_write(f, &in), -EIO);
	fclose(f);
	json_decref(p);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The locality section                                                    */
/* ---------------------------------------------------------------------- */

#define HOSTILE "</td><script>x</script>\xff\xe2\x80\xae"

/* One node, two threads (one named HOSTILE), one cross-touch finding whose
 * text and site carry markup, the matrices with a remote cell. */
static void audit_fill(struct audit_result *r)
{
	memset(r, 0, sizeof(*r));
	r->mode = AUDIT_ATTACH;
	r->pid = 4242;
	r->nodes = 2;
	r->started_ns = 1000000000;
	r->ended_ns = 3000000000;
	r->tiers[AUDIT_TIER_PLACEMENT].on = true;
	r->tiers[AUDIT_TIER_USE].on = true;
	r->tiers[AUDIT_TIER_SITES].on = true;
	snprintf(r->tiers[AUDIT_TIER_FIRST_TOUCH].reason, AUDIT_REASON_LEN,
	         "perf_event_paranoid is 3 <refused>");
	r->touch.nodes = r->placed.nodes = 2;
	r->touch.bytes = calloc(9, sizeof(uint64_t));
	r->placed.bytes = calloc(9, sizeof(uint64_t));
	*audit_cell(&r->touch, 0, 1) = 8u << 20;
	*audit_cell(&r->placed, 1, 1) = 4u << 20;
	r->nthreads = 2;
	r->threads = calloc(2, sizeof(*r->threads));
	r->threads[0] = (struct audit_thread){.tid = 4242, .name = "main", .node = 0};
	r->threads[1] = (struct audit_thread){.tid = 4243, .name = HOSTILE, .node = 1};
	r->nsites = 1;
	r->sites = calloc(1, sizeof(*r->sites));
	r->sites[0].nframes = 1;
	snprintf(r->sites[0].where, AUDIT_TEXT_LEN, "decode.c:157 <b>");
	snprintf(r->sites[0].frames[0].function, 256, "run<int>");
	snprintf(r->sites[0].frames[0].file, 256, "decode.c");
	r->sites[0].frames[0].line = 157;
	r->nfindings = 1;
	r->findings = calloc(1, sizeof(*r->findings));
	r->findings[0] = (struct audit_finding){.kind = AUDIT_CROSS_TOUCH,
	                                        .evidence = AUDIT_EV_PLACEMENT,
	                                        .bytes = 8u << 20,
	                                        .owner = 4242,
	                                        .tids = {4243},
	                                        .ntids = 1,
	                                        .node = 0,
	                                        .other_node = 1,
	                                        .site = 0};
	snprintf(r->findings[0].text, AUDIT_TEXT_LEN, "Buffer allocated by 4242 at %s", HOSTILE);
	snprintf(r->findings[0].fix, AUDIT_TEXT_LEN, "allocate in the worker & <em>");
}

static char *render_audit(const struct audit_result *a, const char *none, const char *json)
{
	json_t *p = proc_json();
	struct report_input in = {.proc = p, .audit = a, .audit_none = none, .audit_json = json};
	char *page = render(&in);

	json_decref(p);
	return page;
}

START_TEST(audit_section)
{
	struct audit_result r;
	char *page;

	audit_fill(&r);
	page = render_audit(&r, NULL, "{\"text\":\"<\\/script><!--<script>&\"}");
	ck_assert_ptr_null(strstr(page, "id=\"no-audit\""));
	ck_assert_uint_eq(count(page, "<li class=\"finding\""), 1);
	ck_assert_ptr_nonnull(strstr(page, "data-kind=\"cross_touch\""));
	ck_assert_ptr_nonnull(strstr(page, "data-evidence=\"placement measured\""));
	/* nothing of a name or a text became markup; the override is gone */
	ck_assert_ptr_nonnull(strstr(page, "decode.c:157 &lt;b&gt;"));
	ck_assert_uint_eq(count(page, "<em>allocate"), 0);
	ck_assert_ptr_nonnull(strstr(page, "&lt;/td&gt;&lt;script&gt;x&lt;/script&gt;" FFFD FFFD));
	ck_assert_ptr_nonnull(strstr(page, "run&lt;int&gt; (decode.c:157)"));
	ck_assert_ptr_nonnull(strstr(page, "allocate in the worker &amp; &lt;em&gt;"));
	ck_assert_ptr_nonnull(strstr(page, "perf_event_paranoid is 3 &lt;refused&gt;"));
	/* the remote cell is marked, its bytes exact */
	ck_assert_ptr_nonnull(strstr(page,
	                             "<td class=\"cell remote\" data-first=\"0\" data-user=\"1\" "
	                             "data-bytes=\"8388608\""));
	ck_assert_uint_eq(count(page, "class=\"audit-thread\""), 2);
	/* the one script element: the data block, with no '<' left inside */
	ck_assert_uint_eq(count(page, "<script"), 1);
	ck_assert_ptr_nonnull(strstr(page,
	                             "<script type=\"application/json\" id=\"audit-json\">"
	                             "{\"text\":\"\\u003c\\/script\\u003e\\u003c!--\\u003cscript"
	                             "\\u003e\\u0026\"}</script>"));
	free(page);
	audit_result_free(&r);
}
END_TEST

START_TEST(audit_none)
{
	char *page = render_audit(NULL, "the process is not running <now>", NULL);

	ck_assert_ptr_nonnull(strstr(page, "<p class=\"note\" id=\"no-audit\">No audit data was "
	                                   "collected for this report: the process is not running "
	                                   "&lt;now&gt;.</p>"));
	ck_assert_uint_eq(count(page, "class=\"finding\""), 0);
	ck_assert_uint_eq(count(page, "<script"), 0);
	free(page);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* scratchd's thread points (stats/scratchd/thread_points.c)              */
/* ---------------------------------------------------------------------- */

/* 20 live threads retaining 1..20 MiB in a shuffled order, two of them
 * tied, and one exited slot: the 16 retaining most, most first, ties by
 * tid; the other 4 summed; the exited slot nowhere. */
START_TEST(thread_points_bounded)
{
	struct segread_thread t[21];
	struct thread_points tp;
	uint64_t sum = 0;

	memset(t, 0, sizeof(t));
	for (int i = 0; i < 20; i++) {
		t[i].state = SCRATCH_SEG_LIVE;
		t[i].tid = 1000 + (i * 7) % 20;
		t[i].c.retained = (uint64_t)((i * 7) % 20 + 1) << 20;
		t[i].c.leased = 4096;
	}
	t[3].c.retained = t[5].c.retained; /* a tie */
	t[20].state = SCRATCH_SEG_EXITED;
	t[20].tid = 999;
	t[20].c.retained = 1ull << 40;
	thread_points_fill(&tp, t, 21);
	ck_assert_uint_eq(tp.n, THREAD_POINTS);
	ck_assert_uint_eq(tp.others, 4);
	for (uint32_t k = 0; k < tp.n; k++) {
		ck_assert_int_ne(tp.p[k].tid, 999);
		if (k > 0)
			ck_assert(tp.p[k - 1].retained > tp.p[k].retained ||
			          (tp.p[k - 1].retained == tp.p[k].retained &&
			           tp.p[k - 1].tid < tp.p[k].tid));
		sum += tp.p[k].retained;
	}
	for (int i = 0; i < 20; i++)
		sum -= t[i].c.retained;
	ck_assert_uint_eq(tp.other_retained, (uint64_t)0 - sum);
	ck_assert_uint_eq(tp.other_leased, 4 * 4096);
	thread_points_fill(&tp, t, 0);
	ck_assert_uint_eq(tp.n + tp.others, 0);
}
END_TEST

Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *esc = tcase_create("escape"), *pg = tcase_create("page"),
	      *au = tcase_create("audit");

	tcase_add_test(esc, escape_markup);
	tcase_add_test(esc, escape_utf8);
	tcase_add_test(esc, escape_controls);
	tcase_add_test(esc, human_sizes);
	tcase_add_test(pg, page_whole);
	tcase_add_test(pg, page_missing_parts);
	tcase_add_test(pg, page_write_error);
	tcase_add_test(au, audit_section);
	tcase_add_test(au, audit_none);
	tcase_add_test(pg, thread_points_bounded);
	suite_add_tcase(s, esc);
	suite_add_tcase(s, pg);
	suite_add_tcase(s, au);
	return s;
}
