/*
 * cmd_audit.c - `scratchstat audit`, the memory-locality audit of one
 * process (scratchstat(1) AUDIT):
 *
 *   scratchstat audit [--json] [--preload PATH] -- COMMAND [ARGS...]
 *   scratchstat audit [--json] [--for SECONDS] PID
 *
 * Launch mode runs COMMAND under the shim with page-fault sampling armed
 * before its exec, prints the audit when it exits and exits with its
 * status. Attach mode samples a running process for SECONDS. The result
 * (audit.h) becomes one JSON document (cmd_audit_json); --json prints it, the
 * table is rendered from it, so the two never disagree. Everything the
 * session cannot do (sampling refused, no block table) is said in the
 * output's tiers, not as an error.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cmd_audit.h"
#include "placement.h"
#include "segread.h"
#include "sys.h"
#include "text.h"

/* Exit status: scratchstat(1), EXIT STATUS. */
enum {
	AX_OK = 0,
	AX_NOPROC = 1,
	AX_USAGE = 2,
	AX_FAIL = 4,
	AX_PERM = 5,
	AX_NOEXEC = 126,
	AX_NOTFOUND = 127,
};

#define MAX_SECONDS 86400

struct request {
	bool json;
	const char *run_dir;
	const char *preload;
	unsigned seconds;
	pid_t pid;
	char **argv; /* launch mode: COMMAND and its arguments */
};

static volatile sig_atomic_t got_signal;
static pid_t child_pid;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	text_mask_controls(buf);
	fprintf(stderr, "scratchstat: %s\n", buf);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                    */
/* ---------------------------------------------------------------------- */

static json_t *jnode(int node)
{
	return node >= 0 ? json_integer(node) : json_null();
}

static json_t *jtid(pid_t tid)
{
	return tid > 0 ? json_integer(tid) : json_null();
}

static json_t *jnodes(topology_nodeset_t set)
{
	json_t *a = json_array();

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (set & ((topology_nodeset_t)1 << n))
			json_array_append_new(a, json_integer(n));
	return a;
}

/* Rows are the first-touch (or placement) node, columns the user's; the
 * last row and column are "unknown". */
static json_t *jmatrix(const struct audit_matrix *m)
{
	json_t *rows = json_array();

	for (unsigned f = 0; f <= m->nodes; f++) {
		json_t *row = json_array();

		for (unsigned u = 0; u <= m->nodes; u++)
			json_array_append_new(
			        row, json_integer((json_int_t)m->bytes[f * (m->nodes + 1) + u]));
		json_array_append_new(rows, row);
	}
	return rows;
}

static json_t *jtiers(const struct audit_result *r)
{
	json_t *o = json_object();

	for (int t = 0; t < AUDIT_TIERS; t++)
		json_object_set_new(o, audit_tier_name(t),
		                    json_pack("{s:b,s:o}", "on", r->tiers[t].on, "reason",
		                              r->tiers[t].reason[0]
		                                      ? json_string(r->tiers[t].reason)
		                                      : json_null()));
	return o;
}

static json_t *jthread(const struct audit_thread *t)
{
	return json_pack("{s:i,s:s,s:b,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I}", "tid", (int)t->tid,
	                 "name", t->name, "alive", t->alive, "cpu", jnode(t->cpu), "node",
	                 jnode(t->node), "affinity", jnodes(t->affinity), "fault_nodes",
	                 jnodes(t->fault_nodes), "used_bytes", (json_int_t)t->used_bytes,
	                 "remote_bytes", (json_int_t)t->remote_bytes, "first_touched_bytes",
	                 (json_int_t)t->first_touched, "touched_for_others_bytes",
	                 (json_int_t)t->touched_for_others);
}

static json_t *jsite(const struct audit_site *s)
{
	json_t *frames = json_array();

	for (unsigned i = 0; i < s->nframes; i++) {
		const struct audit_frame *f = &s->frames[i];

		json_array_append_new(
		        frames,
		        json_pack("{s:I,s:o,s:o,s:i,s:o}", "addr", (json_int_t)f->addr, "function",
		                  f->function[0] ? json_string(f->function) : json_null(), "file",
		                  f->file[0] ? json_string(f->file) : json_null(), "line", f->line,
		                  "module", f->module[0] ? json_string(f->module) : json_null()));
	}
	return json_pack("{s:s,s:o}", "where", s->where, "frames", frames);
}

static const char *state_name(uint32_t s)
{
	static const char *const n[] = {"none", "owned", "remote", "depot", "empty"};

	return s <= SCRATCH_SEG_BLK_MAX ? n[s] : "unknown";
}

static json_t *jblock(const struct audit_block *b)
{
	json_t *runs = json_array(), *freers = json_array(), *nodes = json_object();
	char key[16];

	for (size_t i = 0; i < b->nruns; i++) {
		const struct audit_run *u = &b->runs[i];

		json_array_append_new(
		        runs, json_pack("{s:I,s:I,s:o,s:b,s:o,s:o}", "start", (json_int_t)u->start,
		                        "bytes", (json_int_t)u->bytes, "node", jnode(u->node),
		                        "present", u->node >= 0, "toucher", jtid(u->toucher),
		                        "touch_node", jnode(u->touch_node)));
	}
	for (unsigned i = 0; i < b->nfreers; i++)
		json_array_append_new(freers, json_integer(b->freers[i]));
	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++) {
		if (b->node_bytes[n] == 0)
			continue;
		snprintf(key, sizeof(key), "%d", n);
		json_object_set_new(nodes, key, json_integer((json_int_t)b->node_bytes[n]));
	}
	return json_pack("{s:I,s:I,s:i,s:s,s:o,s:o,s:o,s:i,s:I,s:o,s:o,s:o}", "start",
	                 (json_int_t)b->start, "capacity", (json_int_t)b->capacity, "class",
	                 (int)b->cls, "state", state_name(b->state), "owner", jtid(b->owner),
	                 "lessee", jtid(b->lessee), "freers", freers, "handovers",
	                 (int)b->handovers, "present_bytes", (json_int_t)b->present, "node_bytes",
	                 nodes, "site", b->site >= 0 ? json_integer(b->site) : json_null(), "runs",
	                 runs);
}

static json_t *jfinding(const struct audit_result *r, const struct audit_finding *f)
{
	json_t *tids = json_array();

	for (unsigned i = 0; i < f->ntids; i++)
		json_array_append_new(tids, json_integer(f->tids[i]));
	return json_pack("{s:s,s:s,s:I,s:b,s:o,s:o,s:i,s:o,s:o,s:o,s:i,s:o,s:o,s:s,s:s}", "kind",
	                 audit_kind_name(f->kind), "evidence", audit_evidence_name(f->evidence),
	                 "bytes", (json_int_t)f->bytes, "risk", f->risk, "owner", jtid(f->owner),
	                 "tids", tids, "more_tids", (int)f->more_tids, "node", jnode(f->node),
	                 "other_node", jnode(f->other_node), "block",
	                 f->block ? json_integer((json_int_t)f->block) : json_null(), "blocks",
	                 (int)f->nblocks, "site_index",
	                 f->site >= 0 ? json_integer(f->site) : json_null(), "site",
	                 f->site >= 0 && r->sites[f->site].where[0]
	                         ? json_string(r->sites[f->site].where)
	                         : json_null(),
	                 "text", f->text, "fix", f->fix);
}

static json_t *jexit(const struct audit_result *r)
{
	if (r->mode != AUDIT_LAUNCH || r->exit_status < 0)
		return json_null();
	if (WIFSIGNALED(r->exit_status))
		return json_pack("{s:n,s:i}", "code", "signal", WTERMSIG(r->exit_status));
	return json_pack("{s:i,s:n}", "code", WEXITSTATUS(r->exit_status), "signal");
}

json_t *cmd_audit_json(const struct audit_result *r)
{
	json_t *o = json_object(), *a;

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "pid", json_integer(r->pid));
	json_object_set_new(o, "mode", json_string(r->mode == AUDIT_LAUNCH ? "launch" : "attach"));
	json_object_set_new(o, "exe", json_string(r->exe));
	json_object_set_new(o, "cmdline", json_string(r->cmdline));
	json_object_set_new(o, "started_ns", json_integer((json_int_t)r->started_ns));
	json_object_set_new(o, "ended_ns", json_integer((json_int_t)r->ended_ns));
	json_object_set_new(o, "exited", json_boolean(r->exited));
	json_object_set_new(o, "exit", jexit(r));
	json_object_set_new(o, "nodes", jnodes(r->node_mask));
	json_object_set_new(o, "single_node", json_boolean(r->single_node));
	json_object_set_new(o, "tiers", jtiers(r));
	json_object_set_new(o, "region",
	                    json_pack("{s:I,s:I}", "lo", (json_int_t)r->region_lo, "hi",
	                              (json_int_t)r->region_hi));
	json_object_set_new(o, "present_bytes", json_integer((json_int_t)r->present_bytes));
	json_object_set_new(o, "sampled_bytes", json_integer((json_int_t)r->sampled_bytes));
	json_object_set_new(o, "unknown_bytes", json_integer((json_int_t)r->unknown_bytes));
	json_object_set_new(o, "samples",
	                    json_pack("{s:I,s:I,s:I}", "read", (json_int_t)r->samples, "kept",
	                              (json_int_t)r->samples_kept, "lost",
	                              (json_int_t)r->samples_lost));
	json_object_set_new(o, "placement_reads", json_integer((json_int_t)r->placement_reads));
	json_object_set_new(o, "matrix",
	                    json_pack("{s:o,s:o}", "first_touch", jmatrix(&r->touch), "placement",
	                              jmatrix(&r->placed)));
	a = json_array();
	for (size_t i = 0; i < r->nthreads; i++)
		json_array_append_new(a, jthread(&r->threads[i]));
	json_object_set_new(o, "threads", a);
	a = json_array();
	for (size_t i = 0; i < r->nsites; i++)
		json_array_append_new(a, jsite(&r->sites[i]));
	json_object_set_new(o, "sites", a);
	a = json_array();
	for (size_t i = 0; i < r->nblocks; i++)
		json_array_append_new(a, jblock(&r->blocks[i]));
	json_object_set_new(o, "blocks", a);
	a = json_array();
	for (size_t i = 0; i < r->nfindings; i++)
		json_array_append_new(a, jfinding(r, &r->findings[i]));
	json_object_set_new(o, "findings", a);
	return o;
}

/* ---------------------------------------------------------------------- */
/* The table, from the JSON                                                */
/* ---------------------------------------------------------------------- */

static uint64_t num(const json_t *o, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static const char *node_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, len, "?");
	return buf;
}

static void print_head(const json_t *v)
{
	const json_t *ex = json_object_get(v, "exit"), *tiers = json_object_get(v, "tiers"), *t;
	double secs = (double)(num(v, "ended_ns") - num(v, "started_ns")) / 1e9;
	const char *name;
	char b1[32], b2[32], b3[32];

	printf("audit of PID %d (%s)  %s mode  %.1f s", (int)num(v, "pid"),
	       str(v, "cmdline")[0] ? str(v, "cmdline") : str(v, "exe"), str(v, "mode"), secs);
	if (json_is_object(ex) && json_is_integer(json_object_get(ex, "code")))
		printf("  exit %d", (int)num(ex, "code"));
	else if (json_is_object(ex))
		printf("  killed by signal %d", (int)num(ex, "signal"));
	printf("\nnodes %zu%s\n", json_array_size(json_object_get(v, "nodes")),
	       json_is_true(json_object_get(v, "single_node"))
	               ? " (one node: cross-thread first touches are risks, remote on a "
	                 "multi-node machine)"
	               : "");
	json_object_foreach((json_t *)tiers, name, t)
	{
		printf("tier %-12s %s", name,
		       json_is_true(json_object_get(t, "on")) ? "on" : "off");
		if (json_is_string(json_object_get(t, "reason")))
			printf(": %s", str(t, "reason"));
		printf("\n");
	}
	printf("present %s in %zu blocks, first toucher sampled for %s, unknown for %s\n",
	       text_human(num(v, "present_bytes"), b1, sizeof(b1)),
	       json_array_size(json_object_get(v, "blocks")),
	       text_human(num(v, "sampled_bytes"), b2, sizeof(b2)),
	       text_human(num(v, "unknown_bytes"), b3, sizeof(b3)));
}

static void print_matrix(const char *title, const char *row, const json_t *m)
{
	size_t n = json_array_size(m), i, k;
	const json_t *r, *c;
	char b[32];

	printf("\n%s (bytes)\n%-12s", title, "");
	for (k = 0; k < n; k++) {
		char h[40];

		snprintf(h, sizeof(h), k + 1 < n ? "user %zu" : "user ?", k);
		printf(" %12s", h);
	}
	printf("\n");
	json_array_foreach(m, i, r)
	{
		char h[40];

		snprintf(h, sizeof(h), i + 1 < n ? "%s %zu" : "%s ?", row, i);
		printf("%-12s", h);
		json_array_foreach(r, k, c)
		        printf(" %12s", text_human((uint64_t)json_integer_value(c), b, sizeof(b)));
		printf("\n");
	}
}

static void print_threads(const json_t *v)
{
	const json_t *t;
	char b[4][32], n[8];
	size_t i;

	printf("\n%8s %-16s %4s %12s %12s %12s %12s\n", "TID", "NAME", "NODE", "USED", "REMOTE",
	       "FIRST-TOUCH", "FOR-OTHERS");
	json_array_foreach(json_object_get(v, "threads"), i, t)
	        printf("%8d %-16.16s %4s %12s %12s %12s %12s%s\n", (int)num(t, "tid"),
	               str(t, "name"), node_text(json_object_get(t, "node"), n, sizeof(n)),
	               text_human(num(t, "used_bytes"), b[0], sizeof(b[0])),
	               text_human(num(t, "remote_bytes"), b[1], sizeof(b[1])),
	               text_human(num(t, "first_touched_bytes"), b[2], sizeof(b[2])),
	               text_human(num(t, "touched_for_others_bytes"), b[3], sizeof(b[3])),
	               json_is_true(json_object_get(t, "alive")) ? "" : "  (gone)");
}

static void print_findings(const json_t *v)
{
	const json_t *fs = json_object_get(v, "findings"), *f;
	char b[32];
	size_t i;

	if (json_array_size(fs) == 0) {
		printf("\nno findings\n");
		return;
	}
	printf("\nFINDINGS, by remote bytes\n");
	json_array_foreach(fs, i, f)
	{
		printf("%2zu. %10s  %-19s  %s\n", i + 1, text_human(num(f, "bytes"), b, sizeof(b)),
		       str(f, "evidence"), str(f, "text"));
		printf("    fix: %s\n", str(f, "fix"));
	}
}

static void print_audit(const json_t *v)
{
	print_head(v);
	print_matrix("FIRST-TOUCH NODE x USER NODE", "touch",
	             json_object_get(json_object_get(v, "matrix"), "first_touch"));
	print_matrix("PLACEMENT NODE x USER NODE", "placed",
	             json_object_get(json_object_get(v, "matrix"), "placement"));
	print_threads(v);
	print_findings(v);
}

/* ---------------------------------------------------------------------- */
/* Arguments                                                               */
/* ---------------------------------------------------------------------- */

void cmd_audit_usage(FILE *f, bool first)
{
	fprintf(f,
	        "%sscratchstat audit [--json] [--preload PATH] -- COMMAND [ARGS...]\n"
	        "       scratchstat audit [--json] [--for SECONDS] PID\n",
	        first ? "usage: " : "       ");
}

static int parse_seconds(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < 1 || v > MAX_SECONDS) {
		say("invalid number for --for: '%s' (expected whole seconds, 1 to %d)", s,
		    MAX_SECONDS);
		return AX_USAGE;
	}
	*ret = (unsigned)v;
	return AX_OK;
}

/* One option of the audit (argv[*i]); AX_USAGE for one it does not know. */
static int parse_opt(int argc, char **argv, int *i, struct request *a)
{
	const char *v;

	if (strcmp(argv[*i], "--json") == 0 || strcmp(argv[*i], "-j") == 0) {
		a->json = true;
	} else if (strncmp(argv[*i], "--preload", 9) == 0 &&
	           (v = args_value(argc, argv, i, "--preload")) != NULL) {
		a->preload = v;
	} else if (strncmp(argv[*i], "--for", 5) == 0 &&
	           (v = args_value(argc, argv, i, "--for")) != NULL) {
		return parse_seconds(v, &a->seconds);
	} else if (strcmp(argv[*i], "--help") == 0 || strcmp(argv[*i], "-h") == 0) {
		cmd_audit_usage(stdout, true);
		exit(AX_OK);
	} else {
		say("unknown option for audit: '%s'", argv[*i]);
		cmd_audit_usage(stderr, true);
		return AX_USAGE;
	}
	return AX_OK;
}

/* argv[0] is "audit". */
static int parse_audit(int argc, char **argv, struct request *a)
{
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			if (i + 1 >= argc) {
				say("no COMMAND after --");
				return AX_USAGE;
			}
			a->argv = argv + i + 1;
			break;
		}
		if (argv[i][0] == '-') {
			rc = parse_opt(argc, argv, &i, a);
			if (rc != AX_OK)
				return rc;
			continue;
		}
		if (!text_parse_pid(argv[i], &a->pid)) {
			say("'%s' is not a PID (put -- before a COMMAND to launch it)", argv[i]);
			return AX_USAGE;
		}
		if (i + 1 < argc) {
			say("unexpected argument after the PID: '%s'", argv[i + 1]);
			return AX_USAGE;
		}
	}
	if (a->argv == NULL && a->pid == 0) {
		say("audit needs a PID or -- COMMAND");
		cmd_audit_usage(stderr, true);
		return AX_USAGE;
	}
	if (a->argv != NULL && a->seconds != 0) {
		say("--for is for attach mode (a PID); a launched COMMAND is audited until it "
		    "exits");
		return AX_USAGE;
	}
	if (a->pid != 0 && a->preload != NULL) {
		say("--preload is for launch mode (-- COMMAND)");
		return AX_USAGE;
	}
	return AX_OK;
}

/* ---------------------------------------------------------------------- */
/* Running                                                                 */
/* ---------------------------------------------------------------------- */

/* The shim for launch mode: --preload, else LD_PRELOAD as set, else the
 * one beside scratchstat (a build tree's preload/.libs, two folders up
 * from stats/scratchstat/, or the library directory it was installed
 * with). NULL: leave the environment alone. */
static int find_preload(struct request *a, char *buf, size_t len)
{
	const char *env = getenv("LD_PRELOAD");
	char self[PATH_MAX - 64], *slash;
	ssize_t n;

	if (a->preload != NULL) {
		if (access(a->preload, R_OK) != 0) {
			say("cannot read the shim %s: %s", a->preload, strerror(errno));
			return AX_USAGE;
		}
		return AX_OK;
	}
	if (env != NULL && *env != '\0')
		return AX_OK; /* the environment's, left as it is */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(buf, len, "%s/../../preload/.libs/libscratch-preload.so", self);
			if (access(buf, R_OK) == 0)
				goto found;
		}
	}
	snprintf(buf, len, "%s/libscratch-preload.so", SCRATCH_LIBDIR);
	if (access(buf, R_OK) == 0)
		goto found;
	say("no shim found beside scratchstat nor in %s: give --preload PATH", SCRATCH_LIBDIR);
	return AX_FAIL;
found:
	a->preload = buf;
	return AX_OK;
}

static void on_signal(int sig)
{
	got_signal = sig;
	/* launch mode: the command decides when it ends; pass it on */
	if (child_pid > 0 && sig != SIGINT)
		kill(child_pid, sig);
}

/* SIGINT (the terminal's, which the command gets too) and SIGTERM, SIGHUP
 * (passed on in launch mode) end the audit with its output. A handler,
 * not SIG_IGN: the command must not inherit an ignored signal. */
static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int print_result(const struct request *a, const struct audit_result *r)
{
	json_t *v = cmd_audit_json(r);
	bool bad;

	if (v == NULL) {
		say("out of memory");
		return AX_FAIL;
	}
	if (a->json) {
		char *s = json_dumps(v, JSON_INDENT(2));

		if (s != NULL)
			printf("%s\n", s);
		free(s);
	} else {
		print_audit(v);
	}
	json_decref(v);
	errno = 0;
	bad = ferror(stdout) != 0;
	bad |= fflush(stdout) != 0;
	if (bad) {
		say("cannot write the output: %s", errno != 0 ? strerror(errno) : "error");
		return AX_FAIL;
	}
	return AX_OK;
}

static int launch(struct request *a)
{
	struct audit_opts o = {.run_dir = a->run_dir};
	struct audit_result r;
	char err[512], shim[PATH_MAX];
	audit_t *s;
	int rc;

	rc = find_preload(a, shim, sizeof(shim));
	if (rc != AX_OK)
		return rc;
	o.preload = a->preload;
	catch_signals();
	rc = audit_launch(a->argv, &o, &s, &child_pid, err, sizeof(err));
	if (rc != 0) {
		say("%s", err);
		if (strncmp(err, "cannot run ", 11) == 0)
			return rc == -ENOENT ? AX_NOTFOUND : AX_NOEXEC;
		return AX_FAIL;
	}
	while (audit_poll(s, 100) == 0)
		;
	rc = audit_result(s, &r, err, sizeof(err));
	audit_close(s);
	if (rc != 0) {
		say("%s", err);
		return AX_FAIL;
	}
	rc = print_result(a, &r);
	if (rc == AX_OK && r.exit_status >= 0)
		rc = WIFSIGNALED(r.exit_status) ? 128 + WTERMSIG(r.exit_status)
		                                : WEXITSTATUS(r.exit_status);
	audit_result_free(&r);
	return rc;
}

static int attach(struct request *a)
{
	struct audit_opts o = {.run_dir = a->run_dir, .seconds = a->seconds};
	struct audit_result r;
	char err[512];
	uint64_t end;
	audit_t *s;
	bool gone = false;
	int rc;

	catch_signals();
	rc = audit_attach(a->pid, &o, &s, err, sizeof(err));
	if (rc != 0) {
		say("%s", err);
		return rc == -ESRCH ? AX_NOPROC : rc == -EPERM ? AX_PERM : AX_FAIL;
	}
	end = sys_mono_ns() + (uint64_t)(a->seconds ? a->seconds : 5) * 1000000000u;
	while (!got_signal && sys_mono_ns() < end)
		if (audit_poll(s, 100) != 0) {
			gone = true;
			break;
		}
	rc = audit_result(s, &r, err, sizeof(err));
	audit_close(s);
	if (rc != 0) {
		say("%s", err);
		return AX_FAIL;
	}
	if (gone)
		say("process %d exited during the audit: placement is as last read before",
		    (int)a->pid);
	rc = print_result(a, &r);
	audit_result_free(&r);
	return rc;
}

int cmd_audit(int argc, char **argv, const struct args_global *g)
{
	struct request a = {.json = g->json, .run_dir = g->run_dir};
	int rc;

	rc = parse_audit(argc, argv, &a);
	if (rc != AX_OK)
		return rc;
	return a.argv != NULL ? launch(&a) : attach(&a);
}
