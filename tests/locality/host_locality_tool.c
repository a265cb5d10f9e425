/*
 * host_locality_tool.c - drives the audit's data collection modules
 * (topology, placement, faults of stats/audit/) from the command line, for
 * the locality tests (tests/locality/guest_locality.test,
 * tests/locality/locality_host.test).
 *
 *   host_locality_tool [--json] topology PID
 *   host_locality_tool [--json] placement [--huge] PID ADDR LEN
 *   host_locality_tool [--json] record [--range ADDR:LEN] [--ring PAGES] -- CMD [ARGS...]
 *   host_locality_tool [--json] attach [--range ADDR:LEN] [--ring PAGES] PID SECONDS
 *   host_locality_tool probe
 *
 * ADDR and LEN take C prefixes (0x...). One emitter renders each command's
 * document two ways: JSON (--json), or lines of key=value where a top-level
 * scalar is one "key=value" line, an object one "key k=v ..." line, and an
 * array of objects one line per element named by the key without its
 * plural 's' (thread, run, toucher). Addresses are hex in text, integers in
 * JSON. record prints the sampling totals, per thread the samples kept
 * (those in the range, or all without one), and, per page of the range,
 * the FIRST fault sample (the earliest by time) as "toucher" totals per
 * (tid, cpu) and "run"s of pages with the same first toucher; it
 * exits with CMD's status; attach streams "attached tid=N" lines (text
 * mode) as it attaches, and stops after SECONDS or when the process exits.
 *
 * Exit status: 0 done; 1 another failure; 2 usage; 3 no such process;
 * 4 not permitted (another user's process); 5 sampling refused (the
 * reason on stderr); 6 CMD cannot be run; record: CMD's status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"
#include "placement.h"
#include "sys.h"
#include "text.h"
#include "topology.h"

enum {
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_NOPROC = 3,
	EXIT_PERM = 4,
	EXIT_REFUSED = 5,
	EXIT_NORUN = 6
};

#define MAX_RANGE (16ULL << 30)
#define MAX_RUNS  100000

static bool json_out;
static char errbuf[512];

static int usage(void)
{
	fprintf(stderr,
	        "usage: host_locality_tool [--json] topology PID\n"
	        "       host_locality_tool [--json] placement [--huge] PID ADDR LEN\n"
	        "       host_locality_tool [--json] record [--range ADDR:LEN] [--ring PAGES] "
	        "-- CMD [ARGS...]\n"
	        "       host_locality_tool [--json] attach [--range ADDR:LEN] [--ring PAGES] "
	        "PID SECONDS\n"
	        "       host_locality_tool probe\n");
	return EXIT_USAGE;
}

/* One message for a failed call; the exit status its errno means. */
static int failed(int r, int refused_status)
{
	fprintf(stderr, "host_locality_tool: %s\n", errbuf[0] ? errbuf : strerror(-r));
	if (refused_status != 0)
		return refused_status;
	if (r == -ESRCH)
		return EXIT_NOPROC;
	if (r == -EPERM || r == -EACCES)
		return EXIT_PERM;
	return EXIT_FAIL;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(s, &end, 0);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-';
}

static bool parse_pid(const char *s, pid_t *ret)
{
	uint64_t v;

	if (!parse_u64(s, &v) || v == 0 || v > INT32_MAX)
		return false;
	*ret = (pid_t)v;
	return true;
}

/* ---- the emitter: one document, JSON or key=value lines ---- */

static bool is_addr_key(const char *k)
{
	return strcmp(k, "start") == 0 || strcmp(k, "addr") == 0;
}

static void text_value(const char *key, json_t *v)
{
	if (json_is_integer(v) && is_addr_key(key)) {
		printf("0x%" PRIx64, (uint64_t)json_integer_value(v));
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;

		json_array_foreach(v, i, e)
		{
			printf("%s", i ? "," : "");
			text_value(key, e);
		}
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		bool plain = s[0] != '\0' && strpbrk(s, " =\"\\") == NULL;

		for (const char *p = s; plain && *p; p++)
			plain = (unsigned char)*p > 0x20 && *p != 0x7f;
		if (plain) {
			printf("%s", s);
		} else {
			char *q = json_dumps(v, JSON_ENCODE_ANY);

			printf("%s", q != NULL ? q : "\"\"");
			free(q);
		}
	} else {
		char *q = json_dumps(v, JSON_ENCODE_ANY);

		printf("%s", q != NULL ? q : "");
		free(q);
	}
}

static void text_object(const char *name, json_t *o)
{
	const char *k;
	json_t *v;

	printf("%s", name);
	json_object_foreach(o, k, v)
	{
		printf(" %s=", k);
		text_value(k, v);
	}
	printf("\n");
}

static void emit(json_t *doc)
{
	const char *k;
	json_t *v;

	if (json_out) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		printf("\n");
		json_decref(doc);
		return;
	}
	json_object_foreach(doc, k, v)
	{
		if (json_is_object(v)) {
			text_object(k, v);
		} else if (json_is_array(v) && json_is_object(json_array_get(v, 0))) {
			char name[64];
			size_t i, n = strlen(k);
			json_t *e;

			snprintf(name, sizeof(name), "%.*s",
			         (int)(n > 1 && k[n - 1] == 's' ? n - 1 : n), k);
			json_array_foreach(v, i, e) text_object(name, e);
		} else if (!json_is_array(v) || json_array_size(v) > 0) {
			printf("%s=", k);
			text_value(k, v);
			printf("\n");
		}
	}
	fflush(stdout);
	json_decref(doc);
}

static json_t *nodeset_json(topology_nodeset_t set)
{
	json_t *a = json_array();

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (set & (1ULL << n))
			json_array_append_new(a, json_integer(n));
	return a;
}

/* An untrusted name: control characters masked, "?" when not UTF-8. */
static json_t *name_json(const char *name)
{
	char buf[TOPOLOGY_NAME_LEN];
	json_t *s;

	snprintf(buf, sizeof(buf), "%s", name);
	text_mask_controls(buf);
	s = json_string(buf);
	return s != NULL ? s : json_string("?");
}

/* ---- topology PID ---- */

static int cmd_topology(int argc, char **argv)
{
	struct topology_thread *th;
	struct topology t;
	json_t *doc, *cpus, *threads;
	size_t n;
	pid_t pid;
	int r;

	if (argc != 1 || !parse_pid(argv[0], &pid))
		return usage();
	r = topology_load(NULL, &t, errbuf, sizeof(errbuf));
	if (r != 0)
		return failed(r, 0);
	r = topology_threads(&t, pid, &th, &n, errbuf, sizeof(errbuf));
	if (r != 0) {
		topology_free(&t);
		return failed(r, 0);
	}
	doc = json_object();
	json_object_set_new(doc, "pid", json_integer(pid));
	json_object_set_new(doc, "nodes", json_integer(t.nodes));
	json_object_set_new(doc, "fallback", json_boolean(t.fallback));
	cpus = json_array();
	for (unsigned c = 0; c < t.ncpus; c++)
		json_array_append_new(cpus,
		                      json_pack("{s:i,s:i}", "cpu", c, "node", t.cpu_node[c]));
	json_object_set_new(doc, "cpus", cpus);
	threads = json_array();
	for (size_t i = 0; i < n; i++) {
		char state[2] = {th[i].state, '\0'};

		json_array_append_new(threads,
		                      json_pack("{s:i,s:o,s:s,s:i,s:i,s:o}", "tid", th[i].tid,
		                                "name", name_json(th[i].name), "state", state,
		                                "cpu", th[i].cpu, "node", th[i].node, "affinity",
		                                nodeset_json(th[i].affinity)));
	}
	json_object_set_new(doc, "threads", threads);
	free(th);
	topology_free(&t);
	emit(doc);
	return 0;
}

/* ---- placement [--huge] PID ADDR LEN ---- */

static json_t *node_json(int node)
{
	if (node == PLACEMENT_ABSENT)
		return json_string("absent");
	if (node == PLACEMENT_UNKNOWN)
		return json_string("unknown");
	return json_integer(node);
}

static int cmd_placement(int argc, char **argv)
{
	unsigned flags = 0;
	uint64_t addr, len;
	struct placement p;
	struct topology topo;
	json_t *doc, *runs, *pages;
	int maxnode, r;
	pid_t pid;

	if (argc > 0 && strcmp(argv[0], "--huge") == 0) {
		flags |= PLACEMENT_HUGE;
		argc--, argv++;
	}
	if (argc != 3 || !parse_pid(argv[0], &pid) || !parse_u64(argv[1], &addr) ||
	    !parse_u64(argv[2], &len) || len > MAX_RANGE)
		return usage();
	r = topology_load(NULL, &topo, errbuf, sizeof(errbuf));
	if (r != 0)
		return failed(r, 0);
	maxnode = (int)topo.nodes - 1;
	topology_free(&topo);
	r = placement_read(pid, (uintptr_t)addr, (size_t)len, flags, &p, errbuf, sizeof(errbuf));
	if (r != 0)
		return failed(r, 0);
	doc = json_object();
	json_object_set_new(doc, "pid", json_integer(pid));
	json_object_set_new(doc, "queries", json_integer((json_int_t)p.queries));
	json_object_set_new(doc, "huge_strides", json_integer((json_int_t)p.huge_strides));
	runs = json_array();
	for (size_t i = 0; i < p.nruns && i < MAX_RUNS; i++) {
		json_array_append_new(runs, json_pack("{s:I,s:I,s:o}", "start",
		                                      (json_int_t)p.runs[i].start, "pages",
		                                      (json_int_t)(p.runs[i].length / p.page_size),
		                                      "node", node_json(p.runs[i].node)));
		if (p.runs[i].node > maxnode)
			maxnode = p.runs[i].node;
	}
	json_object_set_new(doc, "runs", runs);
	pages = json_object();
	for (int n = 0; n <= maxnode; n++) {
		char key[32];

		snprintf(key, sizeof(key), "node%d", n);
		json_object_set_new(
		        pages, key,
		        json_integer((json_int_t)(placement_bytes(&p, n, 0, UINTPTR_MAX) /
		                                  p.page_size)));
	}
	json_object_set_new(
	        pages, "absent",
	        json_integer((json_int_t)(placement_bytes(&p, PLACEMENT_ABSENT, 0, UINTPTR_MAX) /
	                                  p.page_size)));
	json_object_set_new(
	        pages, "unknown",
	        json_integer((json_int_t)(placement_bytes(&p, PLACEMENT_UNKNOWN, 0, UINTPTR_MAX) /
	                                  p.page_size)));
	json_object_set_new(doc, "pages", pages);
	placement_free(&p);
	emit(doc);
	return 0;
}

/* ---- record / attach: first toucher per page ---- */

struct first {
	uint64_t time;
	pid_t tid;
	uint32_t cpu;
	uint32_t samples;
};

struct per_tid {
	pid_t tid;
	uint64_t samples;
};

struct collect {
	uintptr_t lo, hi;
	size_t page;
	struct first *pages; /* one per page of [lo, hi), or NULL: no range */
	struct per_tid *tids;
	size_t ntids, cap;
};

static void count_tid(struct collect *c, pid_t tid)
{
	for (size_t i = 0; i < c->ntids; i++)
		if (c->tids[i].tid == tid) {
			c->tids[i].samples++;
			return;
		}
	if (c->ntids == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 16;
		struct per_tid *n = realloc(c->tids, nc * sizeof(*n));

		if (n == NULL)
			return; /* counted nowhere: the totals still say */
		c->tids = n;
		c->cap = nc;
	}
	c->tids[c->ntids++] = (struct per_tid){tid, 1};
}

/* A sample: counted for its thread, and the page's first toucher if earliest. */
static void on_sample(const struct faults_sample *s, void *arg)
{
	struct collect *c = arg;

	count_tid(c, s->tid);
	if (c->pages != NULL && s->addr >= c->lo && s->addr < c->hi) {
		struct first *f = &c->pages[(s->addr - c->lo) / c->page];

		if (f->samples++ == 0 || s->time_ns < f->time) {
			f->time = s->time_ns;
			f->tid = s->tid;
			f->cpu = s->cpu;
		}
	}
}

struct toucher {
	pid_t tid;
	uint32_t cpu;
	uint64_t pages;
};

/* Count f's page for its (tid, cpu); at most 256 pairs are told apart. */
static void add_toucher(struct toucher *t, size_t *n, const struct first *f)
{
	for (size_t i = 0; i < *n; i++)
		if (t[i].tid == f->tid && t[i].cpu == f->cpu) {
			t[i].pages++;
			return;
		}
	if (*n < 256)
		t[(*n)++] = (struct toucher){f->tid, f->cpu, 1};
}

/* The range's first touchers: per (tid, cpu) totals and runs of pages. */
static void emit_range(json_t *doc, const struct collect *c, const struct topology *topo)
{
	size_t npages = (c->hi - c->lo) / c->page, touched = 0, samples = 0, multi = 0, nt = 0;
	struct toucher t[256];
	json_t *runs = json_array(), *touchers = json_array();

	for (size_t i = 0; i < npages; i++) {
		const struct first *f = &c->pages[i];
		size_t j = i;

		samples += f->samples;
		if (f->samples == 0)
			continue;
		touched++;
		multi += f->samples > 1;
		add_toucher(t, &nt, f);
		if (i > 0 && c->pages[i - 1].samples && c->pages[i - 1].tid == f->tid &&
		    c->pages[i - 1].cpu == f->cpu)
			continue; /* extends the run printed below */
		while (j + 1 < npages && c->pages[j + 1].samples && c->pages[j + 1].tid == f->tid &&
		       c->pages[j + 1].cpu == f->cpu)
			j++;
		if (json_array_size(runs) < MAX_RUNS)
			json_array_append_new(runs,
			                      json_pack("{s:I,s:I,s:i,s:i,s:i}", "start",
			                                (json_int_t)(c->lo + i * c->page), "pages",
			                                (json_int_t)(j - i + 1), "tid", f->tid,
			                                "cpu", f->cpu, "node",
			                                topology_cpu_node(topo, (int)f->cpu)));
	}
	json_object_set_new(doc, "range",
	                    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "start", (json_int_t)c->lo,
	                              "length", (json_int_t)(c->hi - c->lo), "pages",
	                              (json_int_t)npages, "touched", (json_int_t)touched, "samples",
	                              (json_int_t)samples, "multi", (json_int_t)multi));
	for (size_t i = 0; i < nt; i++)
		json_array_append_new(touchers, json_pack("{s:i,s:i,s:i,s:I}", "tid", t[i].tid,
		                                          "cpu", t[i].cpu, "node",
		                                          topology_cpu_node(topo, (int)t[i].cpu),
		                                          "pages", (json_int_t)t[i].pages));
	json_object_set_new(doc, "touchers", touchers);
	json_object_set_new(doc, "runs", runs);
}

static void emit_sampling(json_t *doc, faults_t *f, const struct collect *c,
                          const struct topology *topo)
{
	struct faults_stats st;
	json_t *threads = json_array();

	faults_get_stats(f, &st);
	json_object_set_new(doc, "sampling",
	                    json_pack("{s:I,s:I,s:I,s:I,s:i,s:i,s:b}", "samples",
	                              (json_int_t)st.samples, "kept", (json_int_t)st.kept, "lost",
	                              (json_int_t)st.lost, "lost_records",
	                              (json_int_t)st.lost_records, "events", st.events, "attached",
	                              st.attached, "kernel_faults", st.kernel_faults));
	for (size_t i = 0; i < c->ntids; i++)
		json_array_append_new(threads,
		                      json_pack("{s:i,s:I}", "tid", c->tids[i].tid, "samples",
		                                (json_int_t)c->tids[i].samples));
	json_object_set_new(doc, "threads", threads);
	if (c->pages != NULL)
		emit_range(doc, c, topo);
}

/* Options shared by record and attach; returns the arguments consumed or -1. */
static int sampling_opts(int argc, char **argv, struct faults_opts *o, struct collect *c)
{
	int i = 0;

	for (; i < argc; i++) {
		uint64_t v, addr, len;
		char *colon;

		if (strcmp(argv[i], "--range") == 0 && i + 1 < argc) {
			colon = strchr(argv[++i], ':');
			if (colon == NULL)
				return -1;
			*colon = '\0';
			if (!parse_u64(argv[i], &addr) || !parse_u64(colon + 1, &len) || len == 0 ||
			    len > MAX_RANGE || addr + len < addr)
				return -1;
			c->lo = (uintptr_t)addr & ~(uintptr_t)(c->page - 1);
			c->hi = ((uintptr_t)(addr + len) + c->page - 1) & ~(uintptr_t)(c->page - 1);
			o->lo = c->lo;
			o->hi = c->hi;
		} else if (strcmp(argv[i], "--ring") == 0 && i + 1 < argc) {
			if (!parse_u64(argv[++i], &v) || v > UINT32_MAX)
				return -1;
			o->ring_pages = (unsigned)v;
		} else {
			break;
		}
	}
	if (c->hi != 0) {
		c->pages = calloc((c->hi - c->lo) / c->page, sizeof(*c->pages));
		if (c->pages == NULL)
			return -1;
	}
	return i;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : EXIT_FAIL;
}

/* Drain until the child exits; its status into *ret_status. */
static int record_loop(faults_t *f, pid_t child, struct collect *c, int *ret_status)
{
	for (;;) {
		pid_t w = waitpid(child, ret_status, WNOHANG);

		faults_drain(f, on_sample, c);
		if (w == child)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		faults_wait(f, 100);
	}
}

static int cmd_record(int argc, char **argv)
{
	struct faults_opts o = {0};
	struct collect c = {.page = (size_t)sysconf(_SC_PAGESIZE)};
	struct topology topo = {0};
	int k = sampling_opts(argc, argv, &o, &c), r, status = 0;
	faults_t *f;
	pid_t child;
	json_t *doc;

	if (k < 0 || k >= argc || strcmp(argv[k], "--") != 0 || k + 1 >= argc) {
		free(c.pages);
		return usage();
	}
	r = topology_load(NULL, &topo, errbuf, sizeof(errbuf));
	if (r == 0)
		r = faults_launch(argv + k + 1, &o, &f, &child, errbuf, sizeof(errbuf));
	if (r != 0) {
		bool norun = strncmp(errbuf, "cannot run", 10) == 0;

		free(c.pages);
		topology_free(&topo);
		return failed(r, norun ? EXIT_NORUN : r == -ENOMEM ? EXIT_FAIL : EXIT_REFUSED);
	}
	r = record_loop(f, child, &c, &status);
	faults_drain(f, on_sample, &c);
	doc = json_object();
	json_object_set_new(doc, "command", json_string(argv[k + 1]));
	json_object_set_new(doc, "pid", json_integer(child));
	json_object_set_new(doc, "status", json_integer(exit_code(status)));
	emit_sampling(doc, f, &c, &topo);
	faults_close(f);
	emit(doc);
	free(c.pages);
	free(c.tids);
	topology_free(&topo);
	return r != 0 ? EXIT_FAIL : exit_code(status);
}

/* Text mode: one "attached tid=N" line per newly attached thread, at once. */
static void announce(faults_t *f, unsigned from)
{
	struct faults_stats st;

	faults_get_stats(f, &st);
	for (unsigned i = from; !json_out && i < st.events; i++)
		printf("attached tid=%d\n", (int)faults_event_tid(f, i));
	fflush(stdout);
}

/* Sample for seconds or until the process is gone, rescanning its threads. */
static int attach_loop(faults_t *f, uint64_t seconds, struct collect *c)
{
	uint64_t until = sys_mono_ns() + seconds * 1000000000ULL;
	struct faults_stats st;
	char err[256];

	while (sys_mono_ns() < until) {
		int r;

		faults_wait(f, 50);
		faults_drain(f, on_sample, c);
		r = faults_rescan(f, on_sample, c, err, sizeof(err));
		if (r == -ESRCH)
			return 0; /* the process exited: what was sampled stands */
		if (r < 0) {
			fprintf(stderr, "host_locality_tool: %s\n", err);
			return r;
		}
		/* New threads' events are the last ones (faults_rescan appends). */
		faults_get_stats(f, &st);
		if (r > 0)
			announce(f, st.events - (unsigned)r);
	}
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	struct faults_opts o = {0};
	struct collect c = {.page = (size_t)sysconf(_SC_PAGESIZE)};
	struct topology topo = {0};
	int k = sampling_opts(argc, argv, &o, &c), r;
	uint64_t seconds;
	faults_t *f;
	pid_t pid;
	json_t *doc;

	if (k < 0 || argc - k != 2 || !parse_pid(argv[k], &pid) ||
	    !parse_u64(argv[k + 1], &seconds) || seconds > 86400) {
		free(c.pages);
		return usage();
	}
	r = topology_load(NULL, &topo, errbuf, sizeof(errbuf));
	if (r == 0)
		r = faults_attach(pid, &o, &f, errbuf, sizeof(errbuf));
	if (r != 0) {
		free(c.pages);
		topology_free(&topo);
		return failed(r, r == -ESRCH    ? EXIT_NOPROC
		                 : r == -ENOMEM ? EXIT_FAIL
		                                : EXIT_REFUSED);
	}
	announce(f, 0);
	r = attach_loop(f, seconds, &c);
	faults_drain(f, on_sample, &c);
	doc = json_object();
	json_object_set_new(doc, "pid", json_integer(pid));
	emit_sampling(doc, f, &c, &topo);
	faults_close(f);
	emit(doc);
	free(c.pages);
	free(c.tids);
	topology_free(&topo);
	return r != 0 ? EXIT_FAIL : 0;
}

static int cmd_probe(void)
{
	int r = faults_probe(errbuf, sizeof(errbuf));

	if (r != 0)
		return failed(r, EXIT_REFUSED);
	printf("sampling=allowed\n");
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	if (i < argc && strcmp(argv[i], "--json") == 0) {
		json_out = true;
		i++;
	}
	if (i >= argc)
		return usage();
	if (strcmp(argv[i], "topology") == 0)
		return cmd_topology(argc - i - 1, argv + i + 1);
	if (strcmp(argv[i], "placement") == 0)
		return cmd_placement(argc - i - 1, argv + i + 1);
	if (strcmp(argv[i], "record") == 0)
		return cmd_record(argc - i - 1, argv + i + 1);
	if (strcmp(argv[i], "attach") == 0)
		return cmd_attach(argc - i - 1, argv + i + 1);
	if (strcmp(argv[i], "probe") == 0 && argc - i == 1)
		return cmd_probe();
	return usage();
}
