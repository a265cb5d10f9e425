/*
 * views.c - scratchstat's views (views.h): the process list, the thread
 * table, interval lines, owners, history, size classes and the growth
 * trace with symbolized call sites.
 *
 * Every view is one JSON value (what scratchd served, plus symbolized call
 * sites for traces); --json prints that value, the table is rendered from
 * the same value, so the two never disagree.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "symbols.h"
#include "sys.h"
#include "text.h"
#include "views.h"

/* The request the running view shows (one view runs per process). */
static struct view_req opt;

/*
 * The tables print names that come from the watched processes (command
 * lines, thread and owner names, symbols of their binaries): untrusted
 * text, valid UTF-8 but free to hold terminal controls. In table mode
 * stdout is this filter, which writes fd 1 itself and prints every C0
 * control but the newline, DEL and every C1 control (U+0080-U+009F, the
 * two bytes 0xc2 0x80-0x9f) as '?'. JSON output is left alone: its
 * strings carry controls escaped.
 */
struct clean_out {
	bool c2; /* the last byte written was 0xc2: the next decides */
};

static bool write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static ssize_t clean_write(void *cookie, const char *buf, size_t n)
{
	struct clean_out *c = cookie;
	char out[4096];
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (o + 2 > sizeof(out)) {
			if (!write_all(out, o))
				return -1;
			o = 0;
		}
		if (c->c2) {
			c->c2 = false;
			if (ch >= 0x80 && ch <= 0x9f) {
				out[o++] = '?';
				continue;
			}
			out[o++] = (char)0xc2;
		}
		if (ch == 0xc2) {
			c->c2 = true;
			continue;
		}
		out[o++] = (ch < 0x20 && ch != '\n') || ch == 0x7f ? '?' : (char)ch;
	}
	return write_all(out, o) ? (ssize_t)n : -1;
}

static int clean_close(void *cookie)
{
	struct clean_out *c = cookie;

	/* a lone 0xc2 at the end is not UTF-8: it shows as '?' */
	return c->c2 && !write_all("?", 1) ? -1 : 0;
}

/* Route stdout through clean_write(), buffered as stdout was (by line on a
 * terminal). Without the filter (fopencookie failed) the tables would pass
 * controls through, so that is an error. */
int view_clean_stdout(void)
{
	static struct clean_out state;
	static const cookie_io_functions_t io = {.write = clean_write, .close = clean_close};
	FILE *f = fopencookie(&state, "w", io);

	if (f == NULL) {
		client_say("cannot set up output: %s", strerror(errno));
		return EX_FAIL;
	}
	fflush(stdout);
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	stdout = f;
	return EX_OK;
}

/* One JSON value and a newline on stdout; false when it could not be
 * written (the caller stops, main says so and exits 4). */
bool view_put_json(const json_t *v, size_t flags)
{
	if (json_dumpf(v, stdout, flags) != 0 || putchar('\n') == EOF)
		return false;
	return !ferror(stdout);
}

uint64_t view_num(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v < 0 ? 0 : (uint64_t)v;
}

const char *view_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static void hit(const json_t *o, char *buf, size_t len)
{
	if (view_num(o, "allocs") == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%%",
		         json_real_value(json_object_get(o, "hit_rate")) * 100.0);
}

/* "name args" of a command line, argv[0] shortened to its base name, cut
 * to at most width characters at a character boundary (the text is UTF-8).
 * Returns how many characters it kept, for the padding. */
static size_t command_of(const json_t *p, char *buf, size_t len, size_t width)
{
	const char *cmd = view_str(p, "command");
	const char *sp = strchr(cmd, ' ');
	const char *end = sp != NULL ? sp : cmd + strlen(cmd);
	const char *base = cmd;
	size_t chars = 0, i;

	for (const char *q = cmd; q < end; q++)
		if (*q == '/')
			base = q + 1;
	snprintf(buf, len, "%s", *base ? base : view_str(p, "exe"));
	/* a truncated snprintf may have split a character: drop its start */
	for (i = strlen(buf); i > 0 && ((unsigned char)buf[i - 1] & 0xc0) == 0x80; i--)
		;
	if (i > 0 && (unsigned char)buf[i - 1] >= 0xc0) {
		unsigned char lead = (unsigned char)buf[i - 1];
		size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

		if (strlen(buf) - (i - 1) < need)
			buf[i - 1] = '\0';
	}
	for (i = 0; buf[i] != '\0'; i++) {
		if (((unsigned char)buf[i] & 0xc0) == 0x80)
			continue; /* a continuation byte */
		if (chars == width) {
			buf[i] = '\0';
			break;
		}
		chars++;
	}
	return chars;
}

/* What the library recorded rather than printed on the host's stderr:
 * ", pools off: address-space limit", ", max_size lowered" or "". */
static const char *pools_note(const json_t *p, char *buf, size_t len)
{
	static const char *const human_off[][2] = {
	        {"address_space_limit", "address-space limit"},
	        {"reserve_failed", "address space not reserved"},
	        {"out_of_memory", "out of memory"},
	        {"page_size", "page size not 4 KiB"},
	};
	const char *off = json_string_value(json_object_get(p, "pools_off"));

	buf[0] = '\0';
	if (off != NULL) {
		const char *says = off; /* a newer daemon's reason: its own name */

		for (size_t i = 0; i < sizeof(human_off) / sizeof(human_off[0]); i++)
			if (strcmp(off, human_off[i][0]) == 0)
				says = human_off[i][1];
		snprintf(buf, len, ", pools off: %s", says);
	} else if (json_is_true(json_object_get(p, "max_size_lowered"))) {
		snprintf(buf, len, ", max_size lowered");
	}
	return buf;
}

static void print_processes(const json_t *v)
{
	const json_t *procs = json_object_get(v, "processes"), *p, *r;
	size_t i;

	printf("%8s %-28s %7s %10s %6s %10s %10s %8s %s\n", "PID", "COMMAND", "THREADS", "ALLOCS",
	       "HIT%", "RETAINED", "LEASED", "GROWTHS", "STATE");
	json_array_foreach(procs, i, p)
	{
		char cmd[28 * 4 + 1], h[16], ret[32], lea[32], state[160], note[96];
		/* padded by characters, not bytes */
		int pad = 28 - (int)command_of(p, cmd, sizeof(cmd), 28);

		hit(p, h, sizeof(h));
		pools_note(p, note, sizeof(note));
		if (json_is_string(json_object_get(p, "exit_reason")))
			snprintf(state, sizeof(state), "%s (%s)%s", view_str(p, "state"),
			         view_str(p, "exit_reason"), note);
		else
			snprintf(state, sizeof(state), "%s%s", view_str(p, "state"), note);
		printf("%8llu %s%*s %7llu %10llu %6s %10s %10s %8llu %s\n",
		       (unsigned long long)view_num(p, "pid"), cmd, pad, "",
		       (unsigned long long)view_num(p, "threads"),
		       (unsigned long long)view_num(p, "allocs"), h,
		       text_human(view_num(p, "retained"), ret, sizeof(ret)),
		       text_human(view_num(p, "leased"), lea, sizeof(lea)),
		       (unsigned long long)view_num(p, "growths"), state);
	}
	json_array_foreach(json_object_get(v, "rejected"), i, r)
	        printf("%8s %s: %s\n", "-", view_str(r, "file"), view_str(r, "error"));
}

static void print_threads(const json_t *p)
{
	const json_t *t;
	size_t i;
	char a[32], b[32], c[32], note[96];

	printf("PID %llu  %s  %s%s%s  threads %llu  retained %s  leased %s  growths %llu\n",
	       (unsigned long long)view_num(p, "pid"), view_str(p, "command"), view_str(p, "state"),
	       json_is_string(json_object_get(p, "exit_reason")) ? " " : "",
	       json_is_string(json_object_get(p, "exit_reason")) ? view_str(p, "exit_reason") : "",
	       (unsigned long long)view_num(p, "threads"),
	       text_human(view_num(p, "retained"), a, sizeof(a)),
	       text_human(view_num(p, "leased"), b, sizeof(b)),
	       (unsigned long long)view_num(p, "growths"));
	pools_note(p, note, sizeof(note));
	if (json_is_string(json_object_get(p, "pools_off")))
		printf("%s\n", note + 2); /* past the ", " */
	else if (note[0] != '\0')
		printf("max_size lowered to %s to fit the address space granted\n",
		       text_human(view_num(p, "max_size"), c, sizeof(c)));
	printf("%8s %-16s %10s %6s %10s %10s %10s %8s %8s %8s %s\n", "TID", "NAME", "ALLOCS",
	       "HIT%", "RETAINED", "LEASED", "PEAK", "GROWTHS", "RFREE-IN", "RFREE-OUT", "STATE");
	json_array_foreach(json_object_get(p, "thread_table"), i, t)
	{
		char h[16], pk[32];

		hit(t, h, sizeof(h));
		printf("%8llu %-16s %10llu %6s %10s %10s %10s %8llu %8llu %8llu %s\n",
		       (unsigned long long)view_num(t, "tid"), view_str(t, "name"),
		       (unsigned long long)view_num(t, "allocs"), h,
		       text_human(view_num(t, "retained"), a, sizeof(a)),
		       text_human(view_num(t, "leased"), b, sizeof(b)),
		       text_human(view_num(t, "peak_leased"), pk, sizeof(pk)),
		       (unsigned long long)view_num(t, "growths"),
		       (unsigned long long)view_num(t, "remote_frees_in"),
		       (unsigned long long)view_num(t, "remote_frees_out"), view_str(t, "state"));
	}
	if (view_num(p, "depot_bytes") != 0 || view_num(p, "threads_exited") != 0)
		printf("depot %s, %llu exited threads folded in\n",
		       text_human(view_num(p, "depot_bytes"), c, sizeof(c)),
		       (unsigned long long)view_num(p, "threads_exited"));
}

static void print_owners(const json_t *v)
{
	const json_t *o;
	size_t i;
	char a[32], b[32], c[32];

	printf("%4s %-10s %-20s %10s %10s %10s %8s %10s %8s %8s %s\n", "ID", "KIND", "NAME",
	       "RETAINED", "LEASED", "PANEL", "GROWTHS", "DISPATCHES", "PARKS", "WAKES", "STATE");
	json_array_foreach(json_object_get(v, "owners"), i, o)
	        printf("%4llu %-10s %-20s %10s %10s %10s %8llu %10llu %8llu %8llu %s\n",
	               (unsigned long long)view_num(o, "id"), view_str(o, "kind"),
	               view_str(o, "name"), text_human(view_num(o, "retained"), a, sizeof(a)),
	               text_human(view_num(o, "leased"), b, sizeof(b)),
	               text_human(view_num(o, "panel_bytes"), c, sizeof(c)),
	               (unsigned long long)view_num(o, "growths"),
	               (unsigned long long)view_num(o, "dispatches"),
	               (unsigned long long)view_num(o, "parks"),
	               (unsigned long long)view_num(o, "wakes"), view_str(o, "state"));
}

/* "64.0 KiB-80.0 KiB": the request sizes a class serves. */
static const char *class_range(const json_t *k, char *buf, size_t len)
{
	char a[32], b[32];

	snprintf(buf, len, "%s-%s", text_human(view_num(k, "size_min"), a, sizeof(a)),
	         text_human(view_num(k, "size"), b, sizeof(b)));
	return buf;
}

/* A bar of requests against the busiest class: '#' served from memory
 * the pools held, 'x' the share that grew the pools (misses). */
static void class_bar(const json_t *k, uint64_t most, char *buf, size_t len)
{
	const size_t width = 24;
	uint64_t req = view_num(k, "requests"), miss = view_num(k, "misses");
	size_t n = most ? (size_t)((req * width + most - 1) / most) : 0;
	size_t x = req ? (size_t)((miss * n + req - 1) / req) : 0;
	size_t i;

	for (i = 0; i < n && i + 1 < len; i++)
		buf[i] = i < n - x ? '#' : 'x';
	buf[i] = '\0';
}

/* The footer: which sizes make the pools grow, and what min_size does. */
static void sizes_footer(const json_t *v)
{
	const json_t *k, *worst = NULL, *first = NULL;
	size_t i;
	char a[64], b[32];

	json_array_foreach(json_object_get(v, "classes"), i, k)
	{
		if (first == NULL && view_num(k, "requests") > 0)
			first = k;
		if (view_num(k, "misses") > 0 &&
		    (worst == NULL || view_num(k, "misses") > view_num(worst, "misses")))
			worst = k;
	}
	if (worst != NULL)
		printf("most misses at %s: %llu of %llu growths\n",
		       class_range(worst, a, sizeof(a)),
		       (unsigned long long)view_num(worst, "misses"),
		       (unsigned long long)view_num(json_object_get(v, "total"), "misses"));
	else
		printf("no misses: every request was served by memory the pools held\n");
	if (first != NULL)
		printf("smallest pooled requests at %s\n", class_range(first, a, sizeof(a)));
	printf("requests below min_size (%s) are not pooled: %llu calls passed through\n",
	       text_human(view_num(v, "min_size"), b, sizeof(b)),
	       (unsigned long long)view_num(v, "passthrough"));
}

static void print_sizes(const json_t *v)
{
	const json_t *k, *t = json_object_get(v, "total");
	uint64_t most = 0;
	size_t i;
	char r[64], h[16], a[32], b[32], bar[32];

	if (!json_is_true(json_object_get(v, "available"))) {
		printf("no per size class counters in this process's segment (an older "
		       "libscratch)\n");
		return;
	}
	json_array_foreach(json_object_get(v, "classes"), i, k) if (view_num(k, "requests") > most)
	        most = view_num(k, "requests");
	printf("%-22s %10s %6s %8s %8s %8s %10s %10s %s\n", "CLASS (size)", "REQUESTS", "HIT%",
	       "LARGER", "DEPOT", "MISSES", "IDLE", "LEASED", "REQUESTS (x: misses)");
	json_array_foreach(json_object_get(v, "classes"), i, k)
	{
		if (view_num(k, "requests") == 0)
			snprintf(h, sizeof(h), "-");
		else
			snprintf(h, sizeof(h), "%.1f%%",
			         json_real_value(json_object_get(k, "hit_rate")) * 100.0);
		class_bar(k, most, bar, sizeof(bar));
		printf("%-22s %10llu %6s %8llu %8llu %8llu %10s %10s %s\n",
		       class_range(k, r, sizeof(r)), (unsigned long long)view_num(k, "requests"), h,
		       (unsigned long long)view_num(k, "larger_hits"),
		       (unsigned long long)view_num(k, "depot_hits"),
		       (unsigned long long)view_num(k, "misses"),
		       text_human(view_num(k, "idle_bytes"), a, sizeof(a)),
		       text_human(view_num(k, "leased_bytes"), b, sizeof(b)), bar);
	}
	printf("%-22s %10llu %6s %8llu %8llu %8llu %10s %10s\n", "total",
	       (unsigned long long)view_num(t, "requests"), "",
	       (unsigned long long)view_num(t, "larger_hits"),
	       (unsigned long long)view_num(t, "depot_hits"),
	       (unsigned long long)view_num(t, "misses"),
	       text_human(view_num(t, "idle_bytes"), a, sizeof(a)),
	       text_human(view_num(t, "leased_bytes"), b, sizeof(b)));
	sizes_footer(v);
}

static void clock_of(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	localtime_r(&s, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
	         (unsigned)(ns % 1000000000u / 1000000u));
}

static void print_history(const json_t *v)
{
	const json_t *s;
	size_t i;
	char t[32], a[32], b[32];

	printf("%-12s %7s %10s %6s %8s %10s %10s\n", "TIME", "THREADS", "ALLOCS", "HIT%", "GROWTHS",
	       "RETAINED", "LEASED");
	json_array_foreach(json_object_get(v, "samples"), i, s)
	{
		char h[16];

		clock_of(view_num(s, "time_ns"), t, sizeof(t));
		hit(s, h, sizeof(h));
		printf("%-12s %7llu %10llu %6s %8llu %10s %10s\n", t,
		       (unsigned long long)view_num(s, "threads"),
		       (unsigned long long)view_num(s, "allocs"), h,
		       (unsigned long long)view_num(s, "growths"),
		       text_human(view_num(s, "retained"), a, sizeof(a)),
		       text_human(view_num(s, "leased"), b, sizeof(b)));
	}
}

/* ---------------------------------------------------------------------- */
/* Trace view                                                              */
/* ---------------------------------------------------------------------- */

struct trace_ctx {
	pid_t pid;
	struct symbols *sym;
	char *maps;
	uint64_t maps_at;  /* CLOCK_MONOTONIC of the last refresh */
	uint64_t maps_seq; /* every record up to it was drained before that */
	uint64_t seen;     /* the highest record seq received so far */
	/* Addresses the current maps do not cover, most recent last: no
	 * fetch again for those (bounded, forgotten when the maps change). */
	uint64_t unresolved[256];
	unsigned n_unresolved, next_unresolved;
	bool header;
	uint64_t records;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* Fetch the maps again. Every attempt counts as a fetch, whatever it
 * brought: an unresolved frame asks at most once per newer record or
 * second, never once per frame. */
static void refresh_symbols(struct trace_ctx *tc)
{
	char path[64];
	char *body = NULL;
	long status = 0;

	snprintf(path, sizeof(path), "/v1/processes/%d/maps", (int)tc->pid);
	/* The daemon rereads the maps when it drains new records, before it
	 * serves them: these cover the libraries of every record seen so far. */
	tc->maps_seq = tc->seen;
	if (client_get_text(path, &body, &status) != EX_OK || status != 200) {
		tc->maps_at = sys_mono_ns();
		free(body);
		return;
	}
	tc->maps_at = sys_mono_ns();
	if (tc->maps != NULL && body != NULL && strcmp(tc->maps, body) == 0) {
		free(body);
		return;
	}
	free(tc->maps);
	tc->maps = body;
	symbols_free(tc->sym);
	tc->sym = symbols_new(tc->maps);
	tc->n_unresolved = tc->next_unresolved = 0;
}

static bool known_unresolved(const struct trace_ctx *tc, uint64_t ip)
{
	for (unsigned i = 0; i < tc->n_unresolved; i++)
		if (tc->unresolved[i] == ip)
			return true;
	return false;
}

static void remember_unresolved(struct trace_ctx *tc, uint64_t ip)
{
	const unsigned cap = sizeof(tc->unresolved) / sizeof(tc->unresolved[0]);

	if (known_unresolved(tc, ip))
		return;
	tc->unresolved[tc->next_unresolved] = ip;
	tc->next_unresolved = (tc->next_unresolved + 1) % cap;
	if (tc->n_unresolved < cap)
		tc->n_unresolved++;
}

/* Replace a record's raw frames by symbolized ones, and name its call
 * site: the first frame outside libscratch, the preload shim and C++'s
 * operator new. A frame no mapping covers (code loaded and unloaded again
 * before the daemon read the maps, or a JIT) may be the call site itself:
 * it is shown by its address, never skipped for its caller. */
static void symbolize(struct trace_ctx *tc, json_t *rec)
{
	json_t *frames = json_object_get(rec, "frames"), *out = json_array(), *f;
	uint64_t seq = view_num(rec, "seq");
	bool have_site = false;
	size_t i;

	if (seq > tc->seen)
		tc->seen = seq;
	json_array_foreach(frames, i, f)
	{
		uint64_t ip = (uint64_t)json_integer_value(f);
		struct symbols_info si;
		json_t *o = json_object();
		bool ok = tc->sym != NULL && symbols_lookup(tc->sym, ip, &si);

		/* A record newer than the maps may come from a library loaded
		 * since: fetch them again, however recent the last fetch. */
		if (!ok && !known_unresolved(tc, ip) &&
		    (seq > tc->maps_seq || sys_mono_ns() - tc->maps_at > 1000000000u)) {
			refresh_symbols(tc);
			ok = tc->sym != NULL && symbols_lookup(tc->sym, ip, &si);
		}
		if (!ok)
			remember_unresolved(tc, ip);
		json_object_set_new(o, "addr", json_integer((json_int_t)ip));
		if (ok) {
			json_object_set_new(o, "function",
			                    si.function[0] ? json_string(si.function)
			                                   : json_null());
			json_object_set_new(o, "offset", json_integer((json_int_t)si.offset));
			json_object_set_new(o, "file",
			                    si.file[0] ? json_string(si.file) : json_null());
			json_object_set_new(o, "line", json_integer(si.line));
			json_object_set_new(o, "module", json_string(si.module));
			if (si.replaced)
				json_object_set_new(o, "replaced", json_true());
		}
		if (!have_site && (!ok || !symbols_internal(&si))) {
			char site[600];

			if (!ok)
				snprintf(site, sizeof(site), "0x%llx", (unsigned long long)ip);
			else if (si.replaced)
				snprintf(site, sizeof(site), "%s+0x%llx (replaced)",
				         base_name(si.module), (unsigned long long)si.offset);
			else if (si.file[0] != '\0')
				snprintf(site, sizeof(site), "%s (%s:%d)",
				         si.function[0] ? si.function : "??", si.file, si.line);
			else
				snprintf(site, sizeof(site), "%s+0x%llx",
				         si.function[0] ? si.function : base_name(si.module),
				         (unsigned long long)si.offset);
			json_object_set_new(rec, "site", json_string(site));
			have_site = true;
		}
		json_array_append_new(out, o);
	}
	if (!have_site)
		json_object_set_new(rec, "site", json_null());
	json_object_set_new(rec, "frames", out);
}

void view_symbolize_trace(pid_t pid, json_t *trace)
{
	struct trace_ctx tc = {.pid = pid};
	json_t *r;
	size_t i;

	/* drained before the answer: one fetch of the maps covers them all */
	json_array_foreach(json_object_get(trace, "records"), i,
	                   r) if (view_num(r, "seq") > tc.seen) tc.seen = view_num(r, "seq");
	refresh_symbols(&tc);
	json_array_foreach(json_object_get(trace, "records"), i, r) symbolize(&tc, r);
	symbols_free(tc.sym);
	free(tc.maps);
}

static void print_record(struct trace_ctx *tc, const json_t *r)
{
	char t[32], sz[32];
	const json_t *f;
	size_t i;

	if (!tc->header) {
		printf("%8s %-12s %8s %10s %5s %4s %4s %-12s %s\n", "SEQ", "TIME", "TID", "SIZE",
		       "CLASS", "CPU", "NODE", "OWNER", "SITE");
		tc->header = true;
	}
	clock_of(view_num(r, "time_ns"), t, sizeof(t));
	printf("%8llu %-12s %8llu %10s %5llu %4lld %4lld %-12s %s\n",
	       (unsigned long long)view_num(r, "seq"), t, (unsigned long long)view_num(r, "tid"),
	       text_human(view_num(r, "bytes"), sz, sizeof(sz)),
	       (unsigned long long)view_num(r, "class"),
	       (long long)json_integer_value(json_object_get(r, "cpu")),
	       (long long)json_integer_value(json_object_get(r, "node")),
	       json_is_string(json_object_get(r, "owner_name"))
	               ? view_str(r, "owner_name")
	               : (view_num(r, "owner") ? "?" : "-"),
	       json_is_string(json_object_get(r, "site")) ? view_str(r, "site") : "??");
	if (!opt.frames)
		return;
	json_array_foreach(json_object_get(r, "frames"), i, f)
	{
		const char *fn = view_str(f, "function");

		printf("%10s #%-2zu 0x%llx %s", "", i, (unsigned long long)view_num(f, "addr"),
		       *fn ? fn : "??");
		if (json_is_string(json_object_get(f, "file")))
			printf(" (%s:%llu)", view_str(f, "file"),
			       (unsigned long long)view_num(f, "line"));
		else if (*view_str(f, "module"))
			printf(" [%s]%s", view_str(f, "module"),
			       json_is_true(json_object_get(f, "replaced")) ? " (replaced)" : "");
		putchar('\n');
	}
}

/* One line of the follow stream: a record, a lost count, a gap or the end. */
static int follow_line(json_t *j, void *ctx)
{
	struct trace_ctx *tc = ctx;

	if (json_object_get(j, "seq") != NULL) {
		symbolize(tc, j);
		if (opt.json)
			view_put_json(j, JSON_COMPACT);
		else
			print_record(tc, j);
		/* --limit given with --follow: that many records, then stop */
		if (++tc->records >= opt.limit && opt.limit_given)
			return 1;
	} else if (opt.json) {
		view_put_json(j, JSON_COMPACT);
	} else if (json_object_get(j, "lost") != NULL) {
		printf("-- %lld growth records lost so far (the ring wrapped before they were "
		       "drained)\n",
		       (long long)json_integer_value(json_object_get(j, "lost")));
	} else if (json_object_get(j, "gone_from") != NULL) {
		printf("-- records %llu..%llu are gone: lost in the ring or dropped by scratchd "
		       "(--trace-keep)\n",
		       (unsigned long long)view_num(j, "gone_from"),
		       (unsigned long long)view_num(j, "gone_to"));
	} else if (json_object_get(j, "end") != NULL) {
		printf("-- end: %s\n", view_str(j, "reason"));
	}
	/* output that goes nowhere ends the stream */
	return fflush(stdout) != 0 || ferror(stdout) ? 1 : 0;
}

/* What a trace answer leaves out: records before the first one scratchd
 * still keeps (its --trace-keep buffer dropped them, or the ring wrapped:
 * the lost count says how many of those), and records after the last one
 * shown (--limit). */
static void trace_notes(const json_t *v)
{
	uint64_t first = view_num(v, "first"), next = view_num(v, "next"),
	         head = view_num(v, "head");
	uint64_t lost = view_num(v, "lost");

	if (json_is_integer(json_object_get(v, "first")) && opt.since < first &&
	    first - opt.since > lost) {
		if (lost == 0)
			printf("-- records %llu..%llu were dropped by scratchd (--trace-keep)\n",
			       (unsigned long long)opt.since, (unsigned long long)first - 1);
		else
			printf("-- records %llu..%llu are gone: lost in the ring or dropped by "
			       "scratchd (--trace-keep)\n",
			       (unsigned long long)opt.since, (unsigned long long)first - 1);
	}
	if (json_is_integer(json_object_get(v, "next")) && next != 0 && next <= head)
		printf("-- more records exist: continue with --since %llu\n",
		       (unsigned long long)next);
}

int view_trace(const struct view_req *req)
{
	pid_t pid = req->pid;
	struct trace_ctx tc = {.pid = pid};
	char path[128];
	json_t *v, *r;
	size_t i;
	int rc;

	opt = *req;
	snprintf(path, sizeof(path), "/v1/processes/%d", (int)pid);
	rc = client_get_json(path, &v); /* also starts the daemon and checks the pid */
	if (rc == EX_NOPROC)
		client_say("no such process: %d", (int)pid);
	if (rc != EX_OK)
		return rc;
	json_decref(v);
	refresh_symbols(&tc);
	if (opt.follow) {
		char *body = NULL;
		long status = 0;

		snprintf(path, sizeof(path), "/v1/processes/%d/trace?follow=1&since=%llu", (int)pid,
		         (unsigned long long)opt.since);
		rc = client_stream(path, follow_line, &tc, &status, &body);
		if (rc == EX_OK && status == 404) {
			client_say("no such process: %d", (int)pid);
			rc = EX_NOPROC;
		} else if (rc == EX_OK && status != 200) {
			json_t *e = json_loads(body != NULL ? body : "", 0, NULL);
			const char *why = json_string_value(json_object_get(e, "error"));

			client_say("%s: HTTP %ld: %s", path, status,
			           why != NULL ? why : "(no reason)");
			json_decref(e);
			rc = EX_FAIL;
		}
		free(body);
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/processes/%d/trace?since=%llu&limit=%llu", (int)pid,
	         (unsigned long long)opt.since, (unsigned long long)opt.limit);
	rc = client_get_json(path, &v);
	if (rc != EX_OK)
		goto out;
	/* The daemon drained all of these before it answered: one fetch of
	 * the maps covers them all. */
	json_array_foreach(json_object_get(v, "records"), i, r) if (view_num(r, "seq") > tc.seen)
	        tc.seen = view_num(r, "seq");
	json_array_foreach(json_object_get(v, "records"), i, r) symbolize(&tc, r);
	if (opt.json) {
		view_put_json(v, JSON_INDENT(2));
	} else {
		json_array_foreach(json_object_get(v, "records"), i, r) print_record(&tc, r);
		if (!tc.header)
			printf("no growth records since %llu\n", (unsigned long long)opt.since);
		if (view_num(v, "lost") != 0)
			printf("-- %llu growth records lost (the ring wrapped before they were "
			       "drained)\n",
			       (unsigned long long)view_num(v, "lost"));
		trace_notes(v);
	}
	json_decref(v);
out:
	symbols_free(tc.sym);
	free(tc.maps);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Interval mode                                                           */
/* ---------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* How much counter key grew from prev to v; 0 if it did not. */
static uint64_t grown(const json_t *v, const json_t *prev, const char *key)
{
	uint64_t a = view_num(v, key), b = prev != NULL ? view_num(prev, key) : 0;

	return a > b ? a - b : 0;
}

/* When the counters of v were read: the daemon's sample time (it samples
 * again for each request), or the exit if the process ended before. */
static uint64_t sample_time(const json_t *v)
{
	uint64_t at = view_num(v, "sampled_ns"), end = view_num(v, "exit_ns");

	if (at == 0)
		at = sys_realtime_ns(); /* a daemon that does not say */
	if (strcmp(view_str(v, "state"), "live") != 0 && end != 0 && end < at)
		at = end;
	return at;
}

/* One interval line as JSON: rates between two process snapshots (prev
 * NULL: since the process started), over the time between their samples.
 * After an exec the pid shows a new image (another segment file) whose
 * counters start again: the line then covers the new image's life so far,
 * and says so. */
static json_t *interval_json(pid_t pid, const json_t *v, const json_t *prev, uint64_t now,
                             uint64_t prev_ns)
{
	bool new_image =
	        prev != NULL && (strcmp(view_str(v, "file"), view_str(prev, "file")) != 0 ||
	                         view_num(v, "created_ns") != view_num(prev, "created_ns"));
	const json_t *base = new_image ? NULL : prev;
	uint64_t from = base != NULL ? prev_ns : view_num(v, "created_ns");
	double dt = now > from ? (double)(now - from) / 1e9 : 1e-9;
	uint64_t da = grown(v, base, "allocs");
	uint64_t dg = grown(v, base, "growths");
	uint64_t df = grown(v, base, "frees");

	return json_pack(
	        "{s:I,s:i,s:f,s:I,s:I,s:f,s:o,s:f,s:f,s:I,s:I,s:s,s:b}", "time_ns", (json_int_t)now,
	        "pid", (int)pid, "interval_s", dt, "threads", (json_int_t)view_num(v, "threads"),
	        "allocs", (json_int_t)da, "allocs_per_s", (double)da / dt, "hit_rate",
	        da ? json_real((double)(da - (dg < da ? dg : da)) / (double)da) : json_null(),
	        "growths_per_s", (double)dg / dt, "frees_per_s", (double)df / dt, "retained",
	        (json_int_t)view_num(v, "retained"), "leased", (json_int_t)view_num(v, "leased"),
	        "state", view_str(v, "state"), "new_image", new_image);
}

static void print_interval(const json_t *o)
{
	char t[32], a[32], b[32], h[16];

	clock_of(view_num(o, "time_ns"), t, sizeof(t));
	if (json_is_real(json_object_get(o, "hit_rate")))
		snprintf(h, sizeof(h), "%.1f%%",
		         100.0 * json_real_value(json_object_get(o, "hit_rate")));
	else
		snprintf(h, sizeof(h), "-");
	printf("%-12s %7llu %10.0f %6s %9.1f %9.0f %10s %10s %s%s\n", t,
	       (unsigned long long)view_num(o, "threads"),
	       json_real_value(json_object_get(o, "allocs_per_s")), h,
	       json_real_value(json_object_get(o, "growths_per_s")),
	       json_real_value(json_object_get(o, "frees_per_s")),
	       text_human(view_num(o, "retained"), a, sizeof(a)),
	       text_human(view_num(o, "leased"), b, sizeof(b)), view_str(o, "state"),
	       json_is_true(json_object_get(o, "new_image")) ? " (new image: exec)" : "");
}

int view_interval(const struct view_req *r)
{
	pid_t pid = r->pid;
	double interval = r->interval;
	long count = r->count;
	char path[64];
	json_t *prev = NULL;
	uint64_t prev_ns = 0;
	int rc = EX_OK;

	opt = *r;
	signal(SIGINT, on_sigint);
	snprintf(path, sizeof(path), "/v1/processes/%d", (int)pid);
	if (!opt.json)
		printf("%-12s %7s %10s %6s %9s %9s %10s %10s %s\n", "TIME", "THREADS", "ALLOCS/s",
		       "HIT%", "GROWTH/s", "FREES/s", "RETAINED", "LEASED", "STATE");
	for (long n = 0; (count <= 0 || n < count) && !interrupted; n++) {
		uint64_t now;
		json_t *v, *o;

		if (n > 0) {
			struct timespec ts = {(time_t)interval,
			                      (long)((interval - (double)(time_t)interval) * 1e9)};

			nanosleep(&ts, NULL);
			if (interrupted)
				break;
		}
		rc = client_get_json(path, &v);
		if (rc == EX_NOPROC)
			client_say("no such process: %d", (int)pid);
		if (rc != EX_OK)
			break;
		now = sample_time(v);
		/* The first line covers the process's whole life, as vmstat's. */
		o = interval_json(pid, v, prev, now, prev_ns);
		if (opt.json)
			view_put_json(o, JSON_COMPACT);
		else
			print_interval(o);
		json_decref(o);
		json_decref(prev);
		prev = v;
		prev_ns = now;
		if (fflush(stdout) != 0 || ferror(stdout))
			break; /* main says so */
		if (strcmp(view_str(v, "state"), "live") != 0)
			break;
	}
	json_decref(prev);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The document views                                                      */
/* ---------------------------------------------------------------------- */

static int emit(int rc, json_t *v, void (*table)(const json_t *))
{
	if (rc != EX_OK)
		return rc;
	if (opt.json)
		view_put_json(v, JSON_INDENT(2));
	else
		table(v);
	json_decref(v);
	return EX_OK;
}

/* GET /v1/processes/PID<what> and show it with table. */
static int view_pid(const struct view_req *r, const char *what, void (*table)(const json_t *))
{
	char path[96];
	json_t *v = NULL;
	int rc;

	opt = *r;
	snprintf(path, sizeof(path), "/v1/processes/%d%s", (int)r->pid, what);
	rc = client_get_json(path, &v);
	if (rc == EX_NOPROC)
		client_say("no such process: %d", (int)r->pid);
	return emit(rc, v, table);
}

int view_processes(const struct view_req *r)
{
	json_t *v = NULL;
	int rc;

	opt = *r;
	rc = client_get_json("/v1/processes", &v);
	return emit(rc, v, print_processes);
}

int view_threads(const struct view_req *r)
{
	return view_pid(r, "", print_threads);
}

int view_owners(const struct view_req *r)
{
	return view_pid(r, "/owners", print_owners);
}

int view_history(const struct view_req *r)
{
	return view_pid(r, "/history", print_history);
}

int view_sizes(const struct view_req *r)
{
	return view_pid(r, "/sizes", print_sizes);
}
