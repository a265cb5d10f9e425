/*
 * check_fields.c - the names scratchd serves, pinned: every key of every
 * JSON document and every metric family of /metrics, as the field tables
 * of stats/scratchd/documents.c render them for a process built in memory,
 * compared with the lists below. A key or a metric name that changes,
 * appears or goes fails here first; change the list in the same commit as
 * the table, the man pages and contrib/grafana/scratch.json. Beside the
 * names: the Prometheus conventions the tables promise, and the two
 * renderings of one field agreeing.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "documents.h"
#include "suites.h"

/* ---------------------------------------------------------------------- */
/* The expected names                                                      */
/* ---------------------------------------------------------------------- */

/* The counters of a process, a thread and a history sample (prefix P). */
#define COUNTERS(P)                                                                                \
	P "allocs", P "depot_hits", P "frees", P "growth_bytes", P "growths", P "hit_rate",        \
	        P "hits", P "leased", P "moved_bytes", P "passthrough", P "peak_leased",           \
	        P "populated_bytes", P "remote_frees_in", P "remote_frees_out", P "retained"

#define REGISTRY(P)                                                                                \
	P "registry.dropped.history_samples", P "registry.dropped.trace_records",                  \
	        P "registry.evicted_max_exited", P "registry.evicted_memory_budget",               \
	        P "registry.exited", P "registry.max_exited", P "registry.memory_budget",          \
	        P "registry.memory_peak", P "registry.memory_used", P "registry.refused"

/* A process of /v1/processes; the detail view adds conf, min_size,
 * max_size, owners[] and thread_table[]. */
#define PROCESS(P)                                                                                 \
	COUNTERS(P), P "command", P "created_ns", P "depot_bytes", P "dropped.history_samples",    \
	        P "dropped.trace_records", P "exe", P "exit_ns", P "exit_reason", P "file",        \
	        P "forked", P "max_size_lowered", P "memory", P "pid", P "pools_off", P "ppid",    \
	        P "sampled_ns", P "samples", P "start_ticks", P "state", P "threads",              \
	        P "threads_exited", P "threads_seen", P "trace.drained", P "trace.enabled",        \
	        P "trace.head", P "trace.lost", P "trace.ring", P "trimmed"

#define THREAD(P)                                                                                  \
	COUNTERS(P), P "attach_ns", P "exit_ns", P "generation", P "name", P "slot", P "state",    \
	        P "tid"

#define OWNER(P)                                                                                   \
	P "dispatches", P "growths", P "id", P "kind", P "leased", P "name", P "panel_bytes",      \
	        P "parks", P "retained", P "state", P "wakes", P "workers"

#define RECORD(P)                                                                                  \
	P "bytes", P "class", P "cpu", P "frames[]", P "node", P "owner", P "owner_name", P "seq", \
	        P "tid", P "time_ns"

static const char *const info_keys[] = {
        "interval_ms", "pid", "protocol", REGISTRY(""), "retention_s", "run_dir", "version",
};

static const char *const processes_keys[] = {
        PROCESS("processes[]."), "protocol",        REGISTRY(""),
        "rejected[].error",      "rejected[].file", "run_dir",
};

static const char *const process_keys[] = {
        PROCESS(""), "conf", "max_size", "min_size", OWNER("owners[]."), THREAD("thread_table[]."),
};

static const char *const threads_keys[] = {"pid", THREAD("threads[].")};
static const char *const owners_keys[] = {"pid", OWNER("owners[].")};

static const char *const sizes_keys[] = {
        "available",
        "classes[].class",
        "classes[].depot_hits",
        "classes[].frees",
        "classes[].hit_rate",
        "classes[].hits",
        "classes[].idle_bytes",
        "classes[].larger_hits",
        "classes[].leased_blocks",
        "classes[].leased_bytes",
        "classes[].live_blocks",
        "classes[].misses",
        "classes[].own_class_hits",
        "classes[].requests",
        "classes[].size",
        "classes[].size_min",
        "max_size",
        "min_size",
        "passthrough",
        "pid",
        "total.depot_hits",
        "total.frees",
        "total.hits",
        "total.idle_bytes",
        "total.larger_hits",
        "total.leased_bytes",
        "total.misses",
        "total.requests",
};

static const char *const history_keys[] = {
        "interval_ms",
        "pid",
        COUNTERS("samples[]."),
        "samples[].depot_bytes",
        "samples[].threads",
        "samples[].time_ns",
        "samples[].trimmed",
        "samples[].thread_points[].tid",
        "samples[].thread_points[].retained",
        "samples[].thread_points[].leased",
        "samples[].other_threads.threads",
        "samples[].other_threads.retained",
        "samples[].other_threads.leased",
};

static const char *const trace_keys[] = {
        "first", "head", "lost", "next", "pid", RECORD("records[]."), "state",
};

static const char *const record_keys[] = {RECORD("")};
static const char *const gone_keys[] = {"gone_from", "gone_to"};
static const char *const lost_keys[] = {"lost"};
static const char *const end_keys[] = {"end", "reason"};
static const char *const error_keys[] = {"error"};

/* Every metric family: "name type". */
static const char *const families[] = {
        "scratch_allocs_total counter",
        "scratch_cache_hits_total counter",
        "scratch_class_cache_hits_total counter",
        "scratch_class_depot_hits_total counter",
        "scratch_class_growths_total counter",
        "scratch_class_idle_bytes gauge",
        "scratch_class_larger_hits_total counter",
        "scratch_class_leased_bytes gauge",
        "scratch_class_requests_total counter",
        "scratch_depot_bytes gauge",
        "scratch_depot_hits_total counter",
        "scratch_frees_total counter",
        "scratch_growth_bytes_total counter",
        "scratch_growths_total counter",
        "scratch_leased_bytes gauge",
        "scratch_moved_bytes_total counter",
        "scratch_passthrough_calls_total counter",
        "scratch_peak_leased_bytes gauge",
        "scratch_populated_bytes_total counter",
        "scratch_remote_frees_total counter",
        "scratch_retained_bytes gauge",
        "scratch_thread_allocs_total counter",
        "scratch_thread_cache_hits_total counter",
        "scratch_thread_depot_hits_total counter",
        "scratch_thread_growths_total counter",
        "scratch_thread_leased_bytes gauge",
        "scratch_thread_retained_bytes gauge",
        "scratch_threads gauge",
        "scratch_trace_lost_records_total counter",
        "scratch_trace_records_total counter",
        "scratch_trimmed_bytes_total counter",
        "scratch_up gauge",
        "scratchd_dropped_records_total counter",
        "scratchd_dropped_samples_total counter",
        "scratchd_evicted_processes_total counter",
        "scratchd_memory_budget_bytes gauge",
        "scratchd_memory_bytes gauge",
        "scratchd_processes gauge",
        "scratchd_refused_processes_total counter",
        "scratchd_rejected_segments gauge",
};

/* ---------------------------------------------------------------------- */
/* A process in memory                                                     */
/* ---------------------------------------------------------------------- */

static struct registry_proc proc;
static struct segread_thread thread;
static struct segread_owner owner;
static struct segread_class cls;
static struct registry_sample sample;
static struct segread_record record;
static struct registry_counts counts;
static struct registry_conf conf = REGISTRY_CONF_DEFAULT;
static struct registry_rejected rejected = {.file = "9-x.seg", .error = "bad magic"};

/* One live process "host" (pid 4242) with a thread, a workspace, a size
 * class, a history sample and a growth record: every array has an element,
 * so every key of its elements shows. */
static void setup(void)
{
	memset(&proc, 0, sizeof(proc));
	proc.seg.pid = 4242;
	proc.seg.ring_slots = 64;
	snprintf(proc.seg.exe, sizeof(proc.seg.exe), "/usr/bin/host");
	snprintf(proc.seg.cmdline, sizeof(proc.seg.cmdline), "host --run");
	snprintf(proc.file, sizeof(proc.file), "4242-1.seg");
	proc.live = true;
	thread = (struct segread_thread){.index = 0, .state = SCRATCH_SEG_LIVE, .tid = 4243};
	snprintf(thread.name, sizeof(thread.name), "worker \"0\"");
	thread.c.allocs = 10;
	thread.c.hits = 7;
	thread.c.misses = 3;
	thread.c.retained = 3 << 20;
	proc.threads = &thread;
	proc.nthreads = 1;
	owner = (struct segread_owner){
	        .state = SCRATCH_SEG_LIVE, .kind = SCRATCH__OWNER_WORKSPACE, .id = 1};
	snprintf(owner.name, sizeof(owner.name), "ws");
	proc.owners = &owner;
	proc.nowners = 1;
	cls = (struct segread_class){.cls = 16, .capacity = segread_class_capacity(16)};
	cls.requests = 10;
	cls.hits = 7;
	cls.misses = 3;
	proc.classes = &cls;
	proc.nclasses = 1;
	proc.has_classes = true;
	proc.tot = (struct segread_totals){.allocs = 10, .hits = 7, .misses = 3, .threads_live = 1};
	proc.tot.retained = 3 << 20;
	sample = (struct registry_sample){.t_ns = 1, .tot = proc.tot};
	thread_points_fill(&sample.threads, &thread, 1);
	proc.hist = &sample;
	proc.hist_cap = proc.hist_len = 1;
	record = (struct segread_record){.seq = 1, .bytes = 1 << 20, .tid = 4243, .owner = 1};
	record.nframes = 2;
	record.frames[0] = 0x1000;
	record.frames[1] = 0x2000;
	proc.trace = &record;
	proc.trace_cap = proc.trace_len = 1;
	proc.next_seq = 2;
	counts = (struct registry_counts){.budget = 64u << 20, .live = 1, .rejected = 1};
}

/* ---------------------------------------------------------------------- */
/* Key paths of a JSON value                                               */
/* ---------------------------------------------------------------------- */

struct names {
	char *v[512];
	size_t n;
};

static void add(struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return;
	ck_assert_uint_lt(s->n, sizeof(s->v) / sizeof(s->v[0]));
	s->v[s->n++] = strdup(name);
}

/* Every leaf's path: "a.b" for key b of object a, "a[]" for an array's
 * elements; an empty object or array is a leaf too. */
static void paths(struct names *s, const json_t *j, const char *prefix)
{
	char p[256];
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_object(j) && json_object_size(j) > 0) {
		json_object_foreach((json_t *)j, key, v)
		{
			snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "", key);
			paths(s, v, p);
		}
	} else if (json_is_array(j) && json_array_size(j) > 0) {
		snprintf(p, sizeof(p), "%s[]", prefix);
		json_array_foreach(j, i, v)
		{
			if (json_is_object(v) || json_is_array(v)) {
				paths(s, v, p);
			} else {
				add(s, p);
			}
		}
	} else {
		add(s, prefix);
	}
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* got must be exactly want (both as sets); say the differences. */
static void same(const char *what, struct names *got, const char *const *want, size_t n)
{
	bool ok = got->n == n;

	qsort(got->v, got->n, sizeof(got->v[0]), cmp);
	for (size_t i = 0; i < got->n; i++)
		if (bsearch(&got->v[i], want, n, sizeof(want[0]), cmp) == NULL) {
			fprintf(stderr, "%s: new name %s\n", what, got->v[i]);
			ok = false;
		}
	for (size_t i = 0; i < n; i++)
		if (bsearch(&want[i], got->v, got->n, sizeof(got->v[0]), cmp) == NULL) {
			fprintf(stderr, "%s: missing name %s\n", what, want[i]);
			ok = false;
		}
	for (size_t i = 0; i < got->n; i++)
		free(got->v[i]);
	got->n = 0;
	ck_assert_msg(ok, "%s: the names changed (see above)", what);
}

/* The expected lists are sorted here once: bsearch needs them so. */
static void keys_are(const char *what, json_t *doc, const char **want, size_t n)
{
	struct names got = {.n = 0};

	ck_assert_ptr_nonnull(doc);
	qsort(want, n, sizeof(want[0]), cmp);
	paths(&got, doc, "");
	json_decref(doc);
	same(what, &got, want, n);
}

#define KEYS_ARE(doc, list)                                                                        \
	do {                                                                                       \
		const char *w[sizeof(list) / sizeof(list[0])];                                     \
		memcpy(w, list, sizeof(w));                                                        \
		keys_are(#list, doc, w, sizeof(w) / sizeof(w[0]));                                 \
	} while (0)

static struct documents_daemon daemon_facts(void)
{
	static const struct registry_proc *procs[1];
	static const struct registry_rejected *rej[1];

	procs[0] = &proc;
	rej[0] = &rejected;
	return (struct documents_daemon){.pid = 1,
	                                 .version = "0",
	                                 .run_dir = "/run/x",
	                                 .conf = &conf,
	                                 .counts = &counts,
	                                 .procs = procs,
	                                 .nprocs = 1,
	                                 .rejected = rej,
	                                 .nrejected = 1};
}

/* ---------------------------------------------------------------------- */
/* core: the JSON keys and the metric names                                */
/* ---------------------------------------------------------------------- */

START_TEST(json_keys)
{
	struct documents_daemon d = daemon_facts();

	KEYS_ARE(documents_info(&d), info_keys);
	KEYS_ARE(documents_processes(&d), processes_keys);
	KEYS_ARE(documents_process(&proc), process_keys);
	KEYS_ARE(documents_threads(&proc), threads_keys);
	KEYS_ARE(documents_owners(&proc), owners_keys);
	KEYS_ARE(documents_sizes(&proc), sizes_keys);
	KEYS_ARE(documents_history(&proc, &conf), history_keys);
	KEYS_ARE(documents_trace(&proc, 1, 10), trace_keys);
	KEYS_ARE(documents_record(&proc, &record), record_keys);
	KEYS_ARE(documents_gone(1, 2), gone_keys);
	KEYS_ARE(documents_lost(3), lost_keys);
	KEYS_ARE(documents_end("exit"), end_keys);
	KEYS_ARE(documents_error("no"), error_keys);
}
END_TEST

/* The text of /metrics for the process in memory (malloc'd). */
static char *metrics(void)
{
	const struct registry_proc *v[] = {&proc};
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	documents_metrics(f, v, 1, &counts);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

START_TEST(metric_names)
{
	char *text = metrics(), *save = NULL;
	struct names got = {.n = 0};
	const char *w[sizeof(families) / sizeof(families[0])];

	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "# TYPE ", 7) == 0)
			add(&got, line + 7);
	free(text);
	memcpy(w, families, sizeof(w));
	qsort(w, sizeof(w) / sizeof(w[0]), sizeof(w[0]), cmp);
	same("families", &got, w, sizeof(w) / sizeof(w[0]));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* conventions: what fields.h promises of the exposition                   */
/* ---------------------------------------------------------------------- */

static bool ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);

	return n >= t && strncmp(s + n - t, tail, t) == 0;
}

/* Every family has HELP then TYPE before its samples; counters and only
 * counters end in _total; every sample belongs to the family above it. */
START_TEST(families_well_formed)
{
	char *text = metrics(), *save = NULL, family[128] = "", type[16] = "";
	unsigned nfamilies = 0, nsamples = 0;
	bool help = false;

	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t n = strcspn(line, "{ ");

		if (strncmp(line, "# HELP ", 7) == 0) {
			ck_assert_msg(sscanf(line + 7, "%127s", family) == 1, "%s", line);
			ck_assert_msg(line[strlen(line) - 1] == '.', "HELP without a period: %s",
			              line);
			help = true;
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char name[128];

			ck_assert_msg(help && sscanf(line + 7, "%127s %15s", name, type) == 2, "%s",
			              line);
			ck_assert_str_eq(name, family);
			n = strlen(family);
			ck_assert_msg(ends_with(family, n, "_total") ==
			                      (strcmp(type, "counter") == 0),
			              "counter names end in _total, others do not: %s", line);
			help = false;
			nfamilies++;
			continue;
		}
		ck_assert_msg(n == strlen(family) && strncmp(line, family, n) == 0,
		              "a sample outside its family %s: %s", family, line);
		nsamples++;
	}
	free(text);
	ck_assert_uint_eq(nfamilies, sizeof(families) / sizeof(families[0]));
	ck_assert_uint_gt(nsamples, nfamilies);
}
END_TEST

/* What varies is a label: a thread's tid and name (escaped), a class's
 * block size, the registry's reasons and states. */
START_TEST(labels)
{
	char *text = metrics(), want[256];

	snprintf(want, sizeof(want),
	         "\nscratch_thread_allocs_total{pid=\"4242\",tid=\"4243\",name=\"worker "
	         "\\\"0\\\"\"} "
	         "10\n");
	ck_assert_msg(strstr(text, want) != NULL, "no thread series %s in\n%s", want, text);
	snprintf(want, sizeof(want),
	         "\nscratch_class_requests_total{pid=\"4242\",exe=\"host\",class=\"%llu\"} 10\n",
	         (unsigned long long)segread_class_capacity(16));
	ck_assert_msg(strstr(text, want) != NULL, "no class series %s", want);
	ck_assert_ptr_nonnull(strstr(text, "\nscratchd_processes{state=\"live\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nscratchd_processes{state=\"exited\"} 0\n"));
	ck_assert_ptr_nonnull(
	        strstr(text, "\nscratchd_evicted_processes_total{reason=\"max_exited\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nscratch_up{pid=\"4242\",exe=\"host\"} 1\n"));
	/* one HELP per family, even when its series come from several fields */
	ck_assert_ptr_eq(strstr(strstr(text, "# HELP scratchd_processes ") + 1,
	                        "# HELP scratchd_processes "),
	                 NULL);
	free(text);
}
END_TEST

/* One field, two renderings: the JSON figure is the series' value, and an
 * exited process has no live threads in either. */
START_TEST(renderings_agree)
{
	json_t *j = documents_process(&proc);
	char *text, want[128];

	snprintf(want, sizeof(want), "\nscratch_retained_bytes{pid=\"4242\",exe=\"host\"} %lld\n",
	         (long long)json_integer_value(json_object_get(j, "retained")));
	json_decref(j);
	text = metrics();
	ck_assert_msg(strstr(text, want) != NULL, "%s", want);
	free(text);
	proc.live = false;
	j = documents_process(&proc);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "threads")), 0);
	json_decref(j);
	text = metrics();
	ck_assert_ptr_nonnull(strstr(text, "\nscratch_threads{pid=\"4242\",exe=\"host\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nscratch_up{pid=\"4242\",exe=\"host\"} 0\n"));
	free(text);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* misuse: hostile text in names                                           */
/* ---------------------------------------------------------------------- */

/* A name that is not UTF-8 keeps its key in JSON and its series valid. */
START_TEST(hostile_names)
{
	json_t *j;
	char *text;

	snprintf(thread.name, sizeof(thread.name), "a\xff\nb");
	snprintf(proc.seg.exe, sizeof(proc.seg.exe), "/x/\xc3(\"q\"");
	j = documents_threads(&proc);
	ck_assert_str_eq(json_string_value(json_object_get(
	                         json_array_get(json_object_get(j, "threads"), 0), "name")),
	                 "a??b");
	json_decref(j);
	text = metrics();
	ck_assert_msg(strstr(text, "name=\"a??b\"} 10\n") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "exe=\"?(\\\"q\\\"\"") != NULL, "%s", text);
	free(text);
}
END_TEST

Suite *fields_suite(void)
{
	Suite *s = suite_create("fields");
	TCase *core = tcase_create("core"), *conv = tcase_create("conventions"),
	      *misuse = tcase_create("misuse");

	tcase_add_checked_fixture(core, setup, NULL);
	tcase_add_checked_fixture(conv, setup, NULL);
	tcase_add_checked_fixture(misuse, setup, NULL);
	tcase_add_test(core, json_keys);
	tcase_add_test(core, metric_names);
	tcase_add_test(conv, families_well_formed);
	tcase_add_test(conv, labels);
	tcase_add_test(conv, renderings_agree);
	tcase_add_test(misuse, hostile_names);
	suite_add_tcase(s, core);
	suite_add_tcase(s, conv);
	suite_add_tcase(s, misuse);
	return s;
}
