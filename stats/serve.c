/*
 * serve.c - scratchd's HTTP side: JSON on the Unix socket, Prometheus
 * text on /metrics (also on --listen 127.0.0.1:PORT, which serves nothing
 * else: no addresses leave the socket).
 *
 *   GET /v1                          protocol and daemon facts
 *   GET /v1/processes                every known process (summary)
 *   GET /v1/processes/PID            one process with threads and owners
 *   GET /v1/processes/PID/threads    its thread table
 *   GET /v1/processes/PID/owners     its workspaces, arenas, worker pools
 *   GET /v1/processes/PID/sizes      its size classes: requests, hits, misses,
 *                                    idle and leased bytes per class
 *   GET /v1/processes/PID/trace      growths: ?since=SEQ&limit=N, &follow=1
 *                                    streams NDJSON until the process ends
 *   GET /v1/processes/PID/history    sampled totals and threads, oldest first
 *   GET /v1/processes/PID/maps       file-backed mappings (text/plain)
 *   GET /metrics                     Prometheus text format 0.0.4
 *
 * Every peer is checked with SO_PEERCRED (same uid or root); errors are
 * JSON {"error": "..."} with a 4xx status. One thread per connection
 * (followers block in their content callback), at most 64 connections,
 * 16 KiB of request memory each, 10 s to send a request's headers.
 */
#include "config.h"

#include <errno.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "scratchd.h"

static struct MHD_Daemon *unix_daemon, *tcp_daemon;
static unsigned followers; /* open follow streams, under sd.lock */

const char *sd_owner_kind(uint32_t kind)
{
	switch (kind) {
	case SCRATCH__OWNER_ARENA:
		return "arena";
	case SCRATCH__OWNER_WORKSPACE:
		return "workspace";
	case SCRATCH__OWNER_WORKERS:
		return "workers";
	default:
		return "unknown";
	}
}

struct sd_proc *sd_find(pid_t pid)
{
	struct sd_proc *best = NULL;

	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next) {
		if (p->seg.pid != pid)
			continue;
		if (p->live)
			return p;
		if (best == NULL || p->exit_ns > best->exit_ns)
			best = p;
	}
	return best;
}

static struct sd_proc *find_by_file(const char *file)
{
	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		if (strcmp(p->file, file) == 0)
			return p;
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A JSON string of untrusted text (a segment's names, a file name): kept
 * as is when it is valid UTF-8, else every byte outside printable ASCII
 * becomes '?', so a key is never dropped and the output stays valid.
 */
static json_t *text(const char *s)
{
	json_t *j = json_string(s);
	char buf[SCRATCH_SEG_CMDLINE_LEN + NAME_MAX + 2];
	size_t n = 0;

	if (j != NULL)
		return j;
	for (; *s != '\0' && n < sizeof(buf) - 1; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	buf[n] = '\0';
	return json_string(buf);
}

static json_t *u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Hits over allocations; null before the first allocation, as the
 * tables print "-" then. */
static json_t *hit_rate(uint64_t allocs, uint64_t misses)
{
	return allocs == 0 ? json_null()
	                   : json_real((double)(allocs - (misses < allocs ? misses : allocs)) /
	                               (double)allocs);
}

static void set_counters(json_t *o, const struct scratch__counters *c)
{
	json_object_set_new(o, "allocs", u64(c->allocs));
	json_object_set_new(o, "hits", u64(c->hits));
	json_object_set_new(o, "depot_hits", u64(c->depot_hits));
	json_object_set_new(o, "growths", u64(c->misses));
	json_object_set_new(o, "frees", u64(c->frees));
	json_object_set_new(o, "remote_frees_in", u64(c->remote_in));
	json_object_set_new(o, "remote_frees_out", u64(c->remote_out));
	json_object_set_new(o, "passthrough", u64(c->passthrough));
	json_object_set_new(o, "retained", u64(segread_retained(c)));
	json_object_set_new(o, "leased", u64(segread_leased(c)));
	json_object_set_new(o, "peak_leased", u64(c->peak_leased));
	json_object_set_new(o, "growth_bytes", u64(c->growth_bytes));
	json_object_set_new(o, "hit_rate", hit_rate(c->allocs, c->misses));
}

static json_t *thread_json(const struct segread_thread *t, bool proc_live)
{
	json_t *o = json_object();
	bool live = proc_live && t->state == SCRATCH_SEG_LIVE;

	json_object_set_new(o, "slot", json_integer(t->index));
	json_object_set_new(o, "tid", json_integer(t->tid));
	json_object_set_new(o, "name", text(t->name));
	json_object_set_new(o, "state", json_string(live ? "live" : "exited"));
	json_object_set_new(o, "generation", json_integer(t->generation));
	json_object_set_new(o, "attach_ns", u64(t->attach_ns));
	json_object_set_new(o, "exit_ns", u64(t->exit_ns));
	set_counters(o, &t->c);
	return o;
}

static json_t *owner_json(const struct segread_owner *w)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "kind", json_string(sd_owner_kind(w->kind)));
	json_object_set_new(o, "name", text(w->name));
	json_object_set_new(o, "state",
	                    json_string(w->state == SCRATCH_SEG_LIVE ? "live" : "gone"));
	json_object_set_new(o, "retained", u64(w->c.retained));
	json_object_set_new(o, "leased", u64(w->c.leased));
	json_object_set_new(o, "panel_bytes", u64(w->c.panel_bytes));
	json_object_set_new(o, "growths", u64(w->c.growths));
	json_object_set_new(o, "dispatches", u64(w->c.dispatches));
	json_object_set_new(o, "parks", u64(w->c.parks));
	json_object_set_new(o, "wakes", u64(w->c.wakes));
	json_object_set_new(o, "workers", u64(w->c.workers));
	return o;
}

static void set_totals(json_t *o, const struct segread_totals *t)
{
	json_object_set_new(o, "allocs", u64(t->allocs));
	json_object_set_new(o, "hits", u64(t->hits));
	json_object_set_new(o, "depot_hits", u64(t->depot_hits));
	json_object_set_new(o, "growths", u64(t->misses));
	json_object_set_new(o, "frees", u64(t->frees));
	json_object_set_new(o, "remote_frees_in", u64(t->remote_in));
	json_object_set_new(o, "remote_frees_out", u64(t->remote_out));
	json_object_set_new(o, "passthrough", u64(t->passthrough));
	json_object_set_new(o, "retained", u64(t->retained));
	json_object_set_new(o, "leased", u64(t->leased));
	json_object_set_new(o, "peak_leased", u64(t->peak_leased));
	json_object_set_new(o, "growth_bytes", u64(t->growth_bytes));
	json_object_set_new(o, "trimmed", u64(t->trimmed));
	json_object_set_new(o, "depot_bytes", u64(t->depot_bytes));
	json_object_set_new(o, "hit_rate", hit_rate(t->allocs, t->misses));
}

json_t *sd_proc_json(const struct sd_proc *p, bool detail)
{
	json_t *o = json_object(), *tr = json_object();

	json_object_set_new(o, "pid", json_integer(p->seg.pid));
	json_object_set_new(o, "ppid", json_integer(p->seg.ppid));
	json_object_set_new(o, "start_ticks", u64(p->seg.start_ticks));
	json_object_set_new(o, "file", text(p->file));
	json_object_set_new(o, "exe", text(p->seg.exe));
	json_object_set_new(o, "command", text(p->seg.cmdline));
	json_object_set_new(o, "state", json_string(p->live ? "live" : "exited"));
	json_object_set_new(o, "exit_reason", p->reason ? json_string(p->reason) : json_null());
	json_object_set_new(o, "created_ns", u64(p->seg.created_ns));
	json_object_set_new(o, "exit_ns", u64(p->exit_ns));
	json_object_set_new(o, "sampled_ns", u64(p->sampled_ns));
	json_object_set_new(o, "forked", json_boolean(p->seg.forks > 0));
	/* what the library did not print: why the pools are off (null while
	 * they run), or that max_size had to come down */
	json_object_set_new(o, "pools_off",
	                    segread_pools_off_name(p->seg.pools_off) != NULL
	                            ? json_string(segread_pools_off_name(p->seg.pools_off))
	                            : json_null());
	json_object_set_new(o, "max_size_lowered",
	                    json_boolean((p->seg.flags & SCRATCH_SEG_F_LOWERED) != 0));
	/* Once the process is gone, so are its threads (the main thread
	 * never runs its exit hooks, so its slot still says live). */
	json_object_set_new(o, "threads", u64(p->live ? p->tot.threads_live : 0));
	json_object_set_new(o, "threads_exited",
	                    u64(p->tot.threads_exited + (p->live ? 0 : p->tot.threads_live)));
	json_object_set_new(o, "threads_seen", u64(p->tot.threads_seen));
	set_totals(o, &p->tot);
	json_object_set_new(tr, "enabled", json_boolean(p->seg.ring_slots != 0));
	json_object_set_new(tr, "ring", json_integer(p->seg.ring_slots));
	json_object_set_new(tr, "head", u64(p->head));
	json_object_set_new(tr, "drained", u64(p->drained));
	json_object_set_new(tr, "lost", u64(p->lost));
	json_object_set_new(o, "trace", tr);
	json_object_set_new(o, "samples", json_integer(p->hist_len));
	json_object_set_new(o, "memory", u64(p->mem));
	json_object_set_new(o, "dropped",
	                    json_pack("{s:o,s:o}", "history_samples", u64(p->hist_dropped),
	                              "trace_records", u64(p->trace_dropped)));
	if (!detail)
		return o;
	json_object_set_new(o, "conf", text(p->seg.conf));
	json_object_set_new(o, "min_size", u64(p->seg.min_size));
	json_object_set_new(o, "max_size", u64(p->seg.max_size));
	json_t *th = json_array(), *ow = json_array();

	for (uint32_t i = 0; i < p->nthreads; i++)
		json_array_append_new(th, thread_json(&p->threads[i], p->live));
	for (uint32_t i = 0; i < p->nowners; i++)
		json_array_append_new(ow, owner_json(&p->owners[i]));
	json_object_set_new(o, "thread_table", th);
	json_object_set_new(o, "owners", ow);
	return o;
}

/* Smallest request a class serves: one byte above the class below. */
static uint64_t class_low(uint32_t cls)
{
	return cls > 8 ? segread_class_capacity(cls - 1) + 1 : 1;
}

static json_t *class_json(const struct segread_class *k)
{
	json_t *o = json_object();

	json_object_set_new(o, "class", json_integer(k->cls));
	json_object_set_new(o, "size", u64(k->capacity));
	json_object_set_new(o, "size_min", u64(class_low(k->cls)));
	json_object_set_new(o, "requests", u64(k->requests));
	json_object_set_new(o, "hits", u64(k->hits));
	json_object_set_new(o, "depot_hits", u64(k->depot_hits));
	json_object_set_new(o, "larger_hits", u64(k->larger_hits));
	json_object_set_new(
	        o, "own_class_hits",
	        u64(k->hits + k->depot_hits -
	            (k->larger_hits < k->hits + k->depot_hits ? k->larger_hits
	                                                      : k->hits + k->depot_hits)));
	json_object_set_new(o, "misses", u64(k->misses));
	json_object_set_new(o, "hit_rate", hit_rate(k->requests, k->misses));
	json_object_set_new(o, "frees", u64(k->frees));
	json_object_set_new(o, "live_blocks", u64(k->live_blocks));
	json_object_set_new(o, "leased_blocks", u64(k->leased_blocks));
	json_object_set_new(o, "leased_bytes", u64(k->leased_bytes));
	json_object_set_new(o, "idle_bytes", u64(k->idle_bytes));
	return o;
}

/* The size view: every class in use and their sums, with what the table's
 * footer needs (min_size, the calls that passed through). */
static json_t *sizes_json(const struct sd_proc *p)
{
	json_t *arr = json_array(), *o;
	struct segread_class sum = {0};

	for (uint32_t i = 0; i < p->nclasses; i++) {
		const struct segread_class *k = &p->classes[i];

		json_array_append_new(arr, class_json(k));
		sum.requests += k->requests;
		sum.hits += k->hits;
		sum.depot_hits += k->depot_hits;
		sum.larger_hits += k->larger_hits;
		sum.misses += k->misses;
		sum.frees += k->frees;
		sum.leased_bytes += k->leased_bytes;
		sum.idle_bytes += k->idle_bytes;
	}
	o = json_pack("{s:i,s:o,s:o,s:b,s:o,s:o}", "pid", p->seg.pid, "min_size",
	              u64(p->seg.min_size), "max_size", u64(p->seg.max_size), "available",
	              p->has_classes, "passthrough", u64(p->tot.passthrough), "classes", arr);
	json_object_set_new(o, "total",
	                    json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "requests",
	                              u64(sum.requests), "hits", u64(sum.hits), "depot_hits",
	                              u64(sum.depot_hits), "larger_hits", u64(sum.larger_hits),
	                              "misses", u64(sum.misses), "frees", u64(sum.frees),
	                              "leased_bytes", u64(sum.leased_bytes), "idle_bytes",
	                              u64(sum.idle_bytes)));
	return o;
}

static const char *owner_name(const struct sd_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nowners; i++)
		if (p->owners[i].id == id)
			return p->owners[i].name;
	return NULL;
}

static json_t *record_json(const struct sd_proc *p, const struct segread_record *r)
{
	json_t *o = json_object(), *f = json_array();
	const char *on = r->owner != 0 ? owner_name(p, r->owner) : NULL;

	json_object_set_new(o, "seq", u64(r->seq));
	json_object_set_new(o, "time_ns", u64(r->time_ns));
	json_object_set_new(o, "tid", json_integer(r->tid));
	json_object_set_new(o, "bytes", u64(r->bytes));
	json_object_set_new(o, "class", json_integer(r->cls));
	json_object_set_new(o, "cpu", json_integer(r->cpu));
	json_object_set_new(o, "node", json_integer(r->node));
	json_object_set_new(o, "owner", json_integer(r->owner));
	json_object_set_new(o, "owner_name", on ? text(on) : json_null());
	for (uint32_t i = 0; i < r->nframes; i++)
		json_array_append_new(f, u64(r->frames[i]));
	json_object_set_new(o, "frames", f);
	return o;
}

/* The i-th kept record (0: oldest). */
static const struct segread_record *kept(const struct sd_proc *p, uint32_t i)
{
	return &p->trace[(p->trace_pos + i) % p->trace_cap];
}

/* Index of the first kept record with seq >= since. */
static uint32_t kept_from(const struct sd_proc *p, uint64_t since)
{
	uint32_t lo = 0, hi = p->trace_len;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (kept(p, mid)->seq < since)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static json_t *trace_json(const struct sd_proc *p, uint64_t since, uint64_t limit)
{
	json_t *o = json_object(), *a = json_array();
	uint64_t next = since;
	uint32_t i = kept_from(p, since);

	for (; i < p->trace_len && limit > 0; i++, limit--) {
		json_array_append_new(a, record_json(p, kept(p, i)));
		next = kept(p, i)->seq + 1;
	}
	if (i == p->trace_len && next < p->next_seq)
		next = p->next_seq;
	json_object_set_new(o, "pid", json_integer(p->seg.pid));
	json_object_set_new(o, "state", json_string(p->live ? "live" : "exited"));
	json_object_set_new(o, "first", u64(p->trace_len ? kept(p, 0)->seq : p->next_seq));
	json_object_set_new(o, "next", u64(next));
	json_object_set_new(o, "head", u64(p->head));
	json_object_set_new(o, "lost", u64(p->lost));
	json_object_set_new(o, "records", a);
	return o;
}

static json_t *history_json(const struct sd_proc *p)
{
	json_t *o = json_object(), *a = json_array();

	for (uint32_t i = 0; i < p->hist_len; i++) {
		uint32_t at = (p->hist_pos + p->hist_cap - p->hist_len + i) % p->hist_cap;
		const struct sd_sample *s = &p->hist[at];
		json_t *e = json_object();

		json_object_set_new(e, "time_ns", u64(s->t_ns));
		json_object_set_new(e, "threads", u64(s->tot.threads_live));
		set_totals(e, &s->tot);
		thread_points_json(&s->threads, e);
		json_array_append_new(a, e);
	}
	json_object_set_new(o, "pid", json_integer(p->seg.pid));
	json_object_set_new(o, "interval_ms", u64(sd.interval_ms));
	json_object_set_new(o, "samples", a);
	return o;
}

/* The registry's bounds and what they cost: memory against the budget,
 * exited entries against their cap, and what was let go. */
static json_t *registry_json(void)
{
	return json_pack("{s:o,s:o,s:o,s:i,s:i,s:o,s:o,s:o,s:{s:o,s:o}}", "memory_budget",
	                 u64(sd.budget), "memory_used", u64(sd.mem_used), "memory_peak",
	                 u64(sd.mem_peak), "max_exited", (int)sd.max_exited, "exited",
	                 (int)sd.nexited, "evicted_max_exited", u64(sd.evicted_cap),
	                 "evicted_memory_budget", u64(sd.evicted_budget), "refused",
	                 u64(sd.refused), "dropped", "history_samples", u64(sd.hist_dropped),
	                 "trace_records", u64(sd.trace_dropped));
}

static json_t *processes_json(void)
{
	json_t *o = json_object(), *a = json_array(), *r = json_array();

	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		json_array_append_new(a, sd_proc_json(p, false));
	for (uint32_t i = 0; i < sd.nrejected; i++)
		json_array_append_new(r, json_pack("{s:o,s:o}", "file", text(sd.rejected[i].file),
		                                   "error", text(sd.rejected[i].error)));
	json_object_set_new(o, "protocol", json_integer(STATS_PROTOCOL));
	json_object_set_new(o, "run_dir", json_string(sd.run_dir));
	json_object_set_new(o, "processes", a);
	json_object_set_new(o, "rejected", r);
	json_object_set_new(o, "registry", registry_json());
	return o;
}

/* ---------------------------------------------------------------------- */
/* Prometheus text                                                         */
/* ---------------------------------------------------------------------- */

/* A label value: UTF-8 text escaped as the format says; text that is
 * not valid UTF-8 keeps only its printable ASCII. */
static void label_value(FILE *f, const char *s)
{
	json_t *valid = json_string(s);
	bool utf8 = valid != NULL;

	json_decref(valid);
	for (; *s != '\0'; s++) {
		if (!utf8 && (*s < 0x20 || *s >= 0x7f)) {
			fputc('?', f);
			continue;
		}
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void proc_labels(FILE *f, const struct sd_proc *p)
{
	const char *base = strrchr(p->seg.exe, '/');

	fprintf(f, "{pid=\"%d\",exe=\"", p->seg.pid);
	label_value(f, base != NULL ? base + 1 : p->seg.exe);
	fputs("\"}", f);
}

enum metric_src { M_TOTAL, M_THREAD };

struct metric {
	const char *name, *type, *help;
	enum metric_src src;
	size_t off; /* into struct segread_totals or struct scratch__counters */
};

#define MT(n, t, h, f)                                                                             \
	{                                                                                          \
		n, t, h, M_TOTAL, offsetof(struct segread_totals, f)                               \
	}
#define MC(n, t, h, f)                                                                             \
	{                                                                                          \
		n, t, h, M_THREAD, offsetof(struct scratch__counters, f)                           \
	}

static const struct metric metrics[] = {
        MT("scratch_allocs_total", "counter", "Pooled allocations.", allocs),
        MT("scratch_cache_hits_total", "counter", "Allocations served by the thread's cache.",
           hits),
        MT("scratch_depot_hits_total", "counter", "Allocations served by the depot.", depot_hits),
        MT("scratch_growths_total", "counter", "Allocations served with fresh pages.", misses),
        MT("scratch_frees_total", "counter", "Pool blocks released.", frees),
        MT("scratch_remote_frees_total", "counter", "Blocks freed by another thread.", remote_in),
        MT("scratch_passthrough_calls_total", "counter",
           "Allocation calls the shim sent to its backend.", passthrough),
        MT("scratch_retained_bytes", "gauge", "Bytes of pool blocks held.", retained),
        MT("scratch_leased_bytes", "gauge", "Bytes of pool blocks lent now.", leased),
        MT("scratch_peak_leased_bytes", "gauge", "Sum of per-thread peaks of leased.", peak_leased),
        MT("scratch_growth_bytes_total", "counter", "Bytes of fresh blocks grown.", growth_bytes),
        MT("scratch_trimmed_bytes_total", "counter", "Bytes returned to the OS.", trimmed),
        MT("scratch_depot_bytes", "gauge", "Idle bytes in the depot.", depot_bytes),
        MT("scratch_threads", "gauge", "Threads with a live cache.", threads_live),
        MC("scratch_thread_allocs_total", "counter", "Pooled allocations of one thread.", allocs),
        MC("scratch_thread_cache_hits_total", "counter",
           "Allocations of one thread served by its cache.", hits),
        MC("scratch_thread_depot_hits_total", "counter",
           "Allocations of one thread served by the depot.", depot_hits),
        MC("scratch_thread_growths_total", "counter",
           "Allocations of one thread served with fresh pages.", misses),
        MC("scratch_thread_retained_bytes", "gauge", "Bytes of pool blocks one thread holds.",
           retained),
        MC("scratch_thread_leased_bytes", "gauge",
           "Bytes one thread has lent, less what other threads freed back.", leased),
};

static void metric_samples(FILE *f, const struct metric *m, const struct sd_proc *p)
{
	if (m->src == M_TOTAL) {
		proc_labels(f, p);
		fprintf(f, " %llu\n",
		        (unsigned long long)*(const uint64_t *)((const char *)&p->tot + m->off));
		return;
	}
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct segread_thread *t = &p->threads[i];
		uint64_t v = *(const uint64_t *)((const char *)&t->c + m->off);

		if (m->off == offsetof(struct scratch__counters, leased))
			v = segread_leased(&t->c);
		else if (m->off == offsetof(struct scratch__counters, retained))
			v = segread_retained(&t->c);
		fprintf(f, "%s{pid=\"%d\",tid=\"%d\",name=\"", m->name, p->seg.pid, t->tid);
		label_value(f, t->name);
		fprintf(f, "\"} %llu\n", (unsigned long long)v);
	}
}

/* Per size class series: one metric family each, a class label (the
 * class's block size in bytes) beside the process labels. */
static const struct class_metric {
	const char *name, *type, *help;
	size_t off; /* into struct segread_class */
} class_metrics[] = {
        {"scratch_class_requests_total", "counter", "Pooled requests of one size class.",
         offsetof(struct segread_class, requests)},
        {"scratch_class_cache_hits_total", "counter",
         "Requests of one size class served by the thread's cache.",
         offsetof(struct segread_class, hits)},
        {"scratch_class_depot_hits_total", "counter",
         "Requests of one size class served by the depot.",
         offsetof(struct segread_class, depot_hits)},
        {"scratch_class_larger_hits_total", "counter",
         "Requests of one size class served by an idle block of a larger class.",
         offsetof(struct segread_class, larger_hits)},
        {"scratch_class_growths_total", "counter",
         "Requests of one size class served with fresh pages.",
         offsetof(struct segread_class, misses)},
        {"scratch_class_leased_bytes", "gauge", "Bytes of one size class's blocks lent now.",
         offsetof(struct segread_class, leased_bytes)},
        {"scratch_class_idle_bytes", "gauge", "Bytes of one size class's blocks held idle.",
         offsetof(struct segread_class, idle_bytes)},
};

static void class_series(FILE *f)
{
	for (size_t i = 0; i < sizeof(class_metrics) / sizeof(class_metrics[0]); i++) {
		const struct class_metric *m = &class_metrics[i];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
		for (const struct sd_proc *p = sd.procs; p != NULL; p = p->next) {
			const char *base = strrchr(p->seg.exe, '/');

			for (uint32_t k = 0; k < p->nclasses; k++) {
				const struct segread_class *c = &p->classes[k];

				fprintf(f, "%s{pid=\"%d\",exe=\"", m->name, p->seg.pid);
				label_value(f, base != NULL ? base + 1 : p->seg.exe);
				fprintf(f, "\",class=\"%llu\"} %llu\n",
				        (unsigned long long)c->capacity,
				        (unsigned long long)*(const uint64_t *)((const char *)c +
				                                                m->off));
			}
		}
	}
}

/* The registry's bounds in the Prometheus text (registry_json's facts). */
static void registry_metrics(FILE *f)
{
	fprintf(f,
	        "# HELP scratchd_memory_bytes Bytes scratchd keeps for processes.\n"
	        "# TYPE scratchd_memory_bytes gauge\n"
	        "scratchd_memory_bytes %llu\n"
	        "# HELP scratchd_memory_budget_bytes The most scratchd keeps for processes.\n"
	        "# TYPE scratchd_memory_budget_bytes gauge\n"
	        "scratchd_memory_budget_bytes %llu\n"
	        "# HELP scratchd_evicted_processes_total Exited processes forgotten early.\n"
	        "# TYPE scratchd_evicted_processes_total counter\n"
	        "scratchd_evicted_processes_total{reason=\"max_exited\"} %llu\n"
	        "scratchd_evicted_processes_total{reason=\"memory_budget\"} %llu\n"
	        "# HELP scratchd_refused_processes_total Segments not adopted for lack of budget.\n"
	        "# TYPE scratchd_refused_processes_total counter\n"
	        "scratchd_refused_processes_total %llu\n"
	        "# HELP scratchd_dropped_samples_total History samples dropped for the budget.\n"
	        "# TYPE scratchd_dropped_samples_total counter\n"
	        "scratchd_dropped_samples_total %llu\n"
	        "# HELP scratchd_dropped_records_total Trace records dropped for the budget.\n"
	        "# TYPE scratchd_dropped_records_total counter\n"
	        "scratchd_dropped_records_total %llu\n",
	        (unsigned long long)sd.mem_used, (unsigned long long)sd.budget,
	        (unsigned long long)sd.evicted_cap, (unsigned long long)sd.evicted_budget,
	        (unsigned long long)sd.refused, (unsigned long long)sd.hist_dropped,
	        (unsigned long long)sd.trace_dropped);
}

/* Newest first within a pid. */
static int image_cmp(const void *a, const void *b)
{
	const struct sd_proc *x = *(const struct sd_proc *const *)a;
	const struct sd_proc *y = *(const struct sd_proc *const *)b;

	if (x->seg.pid != y->seg.pid)
		return x->seg.pid < y->seg.pid ? -1 : 1;
	if (x->seg.created_ns != y->seg.created_ns)
		return x->seg.created_ns > y->seg.created_ns ? -1 : 1;
	return (int)y->live - (int)x->live;
}

/*
 * The processes /metrics shows, in pid order: only the newest image of each
 * pid. An exec or a reused pid leaves the old image in the table (exited)
 * with the same pid and often the same exe, and two samples with the same
 * labels in one scrape make Prometheus keep the first and drop the other,
 * the live one. Returns a malloc'd array (the caller frees it) of *ret_n
 * entries, or NULL with *ret_n = 0 when there are no processes or no
 * memory. The caller holds sd.lock.
 */
static const struct sd_proc **metric_procs(size_t *ret_n)
{
	const struct sd_proc **v;
	size_t n = 0, k = 0;

	*ret_n = 0;
	for (const struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		n++;
	if (n == 0 || (v = malloc(n * sizeof(*v))) == NULL)
		return NULL;
	for (const struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		v[k++] = p;
	qsort(v, n, sizeof(*v), image_cmp);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1]->seg.pid != v[i]->seg.pid)
			v[k++] = v[i];
	*ret_n = k;
	return v;
}

/* One sample per process of a family that proc_labels labels. */
static void proc_family(FILE *f, const char *name, const char *type, const char *help,
                        const struct sd_proc **v, size_t n,
                        unsigned long long (*value)(const struct sd_proc *))
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	for (size_t k = 0; k < n; k++) {
		fputs(name, f);
		proc_labels(f, v[k]);
		fprintf(f, " %llu\n", value(v[k]));
	}
}

static unsigned long long proc_up(const struct sd_proc *p)
{
	return p->live ? 1 : 0;
}

static unsigned long long proc_drained(const struct sd_proc *p)
{
	return p->drained;
}

static unsigned long long proc_lost(const struct sd_proc *p)
{
	return p->lost;
}

static char *metrics_text(size_t *ret_len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, ret_len);
	uint32_t live = 0, exited = 0;
	size_t n;
	const struct sd_proc **v;

	if (f == NULL)
		return NULL;
	v = metric_procs(&n);
	if (v == NULL && sd.procs != NULL) {
		fclose(f);
		free(buf);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
		for (size_t k = 0; k < n; k++) {
			if (m->src == M_TOTAL)
				fputs(m->name, f);
			metric_samples(f, m, v[k]);
		}
	}
	proc_family(f, "scratch_up", "gauge", "1 while the process is live, 0 once it exited.", v,
	            n, proc_up);
	proc_family(f, "scratch_trace_records_total", "counter", "Growth records drained.", v, n,
	            proc_drained);
	proc_family(f, "scratch_trace_lost_records_total", "counter",
	            "Growth records lost to ring wrap.", v, n, proc_lost);
	free(v);
	for (const struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		*(p->live ? &live : &exited) += 1;
	fprintf(f,
	        "# HELP scratchd_processes Processes scratchd knows.\n"
	        "# TYPE scratchd_processes gauge\n"
	        "scratchd_processes{state=\"live\"} %u\n"
	        "scratchd_processes{state=\"exited\"} %u\n"
	        "# HELP scratchd_rejected_segments Segment files refused as invalid.\n"
	        "# TYPE scratchd_rejected_segments gauge\n"
	        "scratchd_rejected_segments %u\n",
	        live, exited, sd.nrejected);
	class_series(f);
	registry_metrics(f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---------------------------------------------------------------------- */
/* Responses                                                               */
/* ---------------------------------------------------------------------- */

/*
 * A handler builds its response under sd.lock but queues it only after
 * dropping the lock: MHD holds a response's mutex while it calls a follow
 * stream's reader, which takes sd.lock, so queueing under sd.lock would
 * order the two locks both ways.
 */
static __thread struct {
	struct MHD_Response *r;
	unsigned status;
	const char *type;
} pending;

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                             const char *type)
{
	(void)c;
	if (r == NULL)
		return MHD_NO;
	pending.r = r;
	pending.status = status;
	pending.type = type;
	return MHD_YES;
}

/* Queue the pending response; call without sd.lock. */
static enum MHD_Result flush(struct MHD_Connection *c)
{
	struct MHD_Response *r = pending.r;
	enum MHD_Result ret;

	pending.r = NULL;
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, pending.type);
	MHD_add_response_header(r, "X-Scratch-Protocol", "1");
	ret = MHD_queue_response(c, pending.status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	size_t len;

	json_decref(j);
	if (s == NULL)
		return MHD_NO;
	len = strlen(s);
	s[len] = '\0';
	return queue(c, status, MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE),
	             "application/json");
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply_json(c, status, json_pack("{s:s}", "error", msg));
}

static enum MHD_Result reply_text(struct MHD_Connection *c, char *text, size_t len,
                                  const char *type)
{
	return queue(c, MHD_HTTP_OK,
	             MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE), type);
}

/* A query argument as an unsigned number; false when present but bad. */
static bool arg_u64(struct MHD_Connection *c, const char *key, uint64_t def, uint64_t *ret)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;

	*ret = def;
	if (v == NULL)
		return true;
	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	*ret = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool arg_bool(struct MHD_Connection *c, const char *key)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);

	return v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || *v == '\0');
}

/* ---------------------------------------------------------------------- */
/* Follow mode: NDJSON streamed from a content callback                   */
/* ---------------------------------------------------------------------- */

struct follow {
	char file[NAME_MAX + 1];
	uint64_t next, lost;
	bool ended;
	char *pend; /* formatted, not yet sent */
	size_t pend_len, pend_off;
};

static void pend_line(struct follow *fw, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	size_t n;
	char *nb;

	json_decref(j);
	if (s == NULL)
		return;
	n = strlen(s);
	nb = realloc(fw->pend, fw->pend_len + n + 2);
	if (nb != NULL) {
		fw->pend = nb;
		memcpy(fw->pend + fw->pend_len, s, n);
		fw->pend[fw->pend_len + n] = '\n';
		fw->pend_len += n + 1;
	}
	free(s);
}

/* Format what is new since fw->next; true when something was added. Under
 * sd.lock. */
static bool follow_collect(struct follow *fw)
{
	struct sd_proc *p = find_by_file(fw->file);
	size_t before = fw->pend_len;

	if (p == NULL || sd.stopping) {
		if (!fw->ended)
			pend_line(fw, json_pack("{s:b,s:s}", "end", 1, "reason",
			                        sd.stopping ? "daemon stopping" : "expired"));
		fw->ended = true;
		return fw->pend_len != before;
	}
	/* Records the stream can no longer give: the ring wrapped before they
	 * were drained, or the kept buffer (--trace-keep) dropped them. */
	uint64_t first = p->trace_len ? kept(p, 0)->seq : p->next_seq;

	if (fw->next < first) {
		pend_line(fw, json_pack("{s:I,s:I}", "gone_from", (json_int_t)fw->next, "gone_to",
		                        (json_int_t)(first - 1)));
		fw->next = first;
	}
	for (uint32_t i = kept_from(p, fw->next); i < p->trace_len && fw->pend_len < 65536; i++) {
		pend_line(fw, record_json(p, kept(p, i)));
		fw->next = kept(p, i)->seq + 1;
	}
	if (p->lost != fw->lost) {
		fw->lost = p->lost;
		pend_line(fw, json_pack("{s:I}", "lost", (json_int_t)p->lost));
	}
	if (!p->live && kept_from(p, fw->next) == p->trace_len && !fw->ended) {
		pend_line(fw, json_pack("{s:b,s:s}", "end", 1, "reason", p->reason));
		fw->ended = true;
	}
	return fw->pend_len != before;
}

static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct follow *fw = cls;
	size_t n;

	(void)pos;
	if (fw->pend_off == fw->pend_len) {
		struct timespec until;

		fw->pend_off = fw->pend_len = 0;
		if (fw->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		pthread_mutex_lock(&sd.lock);
		while (!follow_collect(fw)) {
			if (pthread_cond_timedwait(&sd.cond, &sd.lock, &until) == ETIMEDOUT)
				break;
		}
		pthread_mutex_unlock(&sd.lock);
		if (fw->pend_len == 0) {
			/* A blank line keeps the stream alive and notices a
			 * client that went away. */
			buf[0] = '\n';
			return 1;
		}
	}
	n = fw->pend_len - fw->pend_off;
	if (n > max)
		n = max;
	memcpy(buf, fw->pend + fw->pend_off, n);
	fw->pend_off += n;
	return (ssize_t)n;
}

static void follow_free(void *cls)
{
	struct follow *fw = cls;

	free(fw->pend);
	free(fw);
	pthread_mutex_lock(&sd.lock);
	followers--;
	pthread_cond_broadcast(&sd.cond);
	pthread_mutex_unlock(&sd.lock);
}

static enum MHD_Result reply_follow(struct MHD_Connection *c, const struct sd_proc *p,
                                    uint64_t since)
{
	struct follow *fw = calloc(1, sizeof(*fw));

	if (fw == NULL)
		return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	snprintf(fw->file, sizeof(fw->file), "%s", p->file);
	fw->next = since;
	fw->lost = 0;
	followers++; /* under sd.lock: route() holds it */
	return queue(c, MHD_HTTP_OK,
	             MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, follow_read, fw,
	                                               follow_free),
	             "application/x-ndjson");
}

/* ---------------------------------------------------------------------- */
/* Routing                                                                 */
/* ---------------------------------------------------------------------- */

static enum MHD_Result route_proc(struct MHD_Connection *c, pid_t pid, const char *what)
{
	struct sd_proc *p = sd_find(pid);
	uint64_t since, limit;
	json_t *j;

	if (p == NULL)
		return reply_error(c, MHD_HTTP_NOT_FOUND, "no such process");
	if (*what == '\0' || strcmp(what, "/threads") == 0)
		sd_refresh(p);
	if (*what == '\0')
		return reply_json(c, MHD_HTTP_OK, sd_proc_json(p, true));
	if (strcmp(what, "/threads") == 0) {
		j = json_array();
		for (uint32_t i = 0; i < p->nthreads; i++)
			json_array_append_new(j, thread_json(&p->threads[i], p->live));
		return reply_json(c, MHD_HTTP_OK,
		                  json_pack("{s:i,s:o}", "pid", p->seg.pid, "threads", j));
	}
	if (strcmp(what, "/owners") == 0) {
		j = json_array();
		for (uint32_t i = 0; i < p->nowners; i++)
			json_array_append_new(j, owner_json(&p->owners[i]));
		return reply_json(c, MHD_HTTP_OK,
		                  json_pack("{s:i,s:o}", "pid", p->seg.pid, "owners", j));
	}
	if (strcmp(what, "/history") == 0)
		return reply_json(c, MHD_HTTP_OK, history_json(p));
	if (strcmp(what, "/sizes") == 0) {
		sd_refresh(p);
		return reply_json(c, MHD_HTTP_OK, sizes_json(p));
	}
	if (strcmp(what, "/maps") == 0) {
		char *m = strdup(p->maps != NULL ? p->maps : "");

		return m ? reply_text(c, m, strlen(m), "text/plain") : MHD_NO;
	}
	if (strcmp(what, "/trace") == 0) {
		if (!arg_u64(c, "since", 1, &since) || !arg_u64(c, "limit", 10000, &limit) ||
		    limit == 0 || limit > 1000000)
			return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad since or limit");
		if (since == 0)
			since = 1;
		if (arg_bool(c, "follow"))
			return reply_follow(c, p, since);
		return reply_json(c, MHD_HTTP_OK, trace_json(p, since, limit));
	}
	return reply_error(c, MHD_HTTP_NOT_FOUND, "no such resource");
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url)
{
	const char *rest;
	char *end;
	long pid;

	if (strcmp(url, "/metrics") == 0) {
		size_t len;
		char *t = metrics_text(&len);

		if (t == NULL)
			return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
		return reply_text(c, t, len, "text/plain; version=0.0.4; charset=utf-8");
	}
	if (strcmp(url, "/v1") == 0 || strcmp(url, "/v1/") == 0)
		return reply_json(c, MHD_HTTP_OK,
		                  json_pack("{s:i,s:s,s:i,s:s,s:I,s:I,s:o}", "protocol",
		                            STATS_PROTOCOL, "version", PACKAGE_VERSION, "pid",
		                            (int)getpid(), "run_dir", sd.run_dir, "interval_ms",
		                            (json_int_t)sd.interval_ms, "retention_s",
		                            (json_int_t)sd.retention_s, "registry",
		                            registry_json()));
	if (strcmp(url, "/v1/processes") == 0)
		return reply_json(c, MHD_HTTP_OK, processes_json());
	if (strncmp(url, "/v1/processes/", 14) != 0)
		return reply_error(c, MHD_HTTP_NOT_FOUND, "no such resource");
	rest = url + 14;
	if (*rest < '1' || *rest > '9')
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad pid");
	errno = 0;
	pid = strtol(rest, &end, 10);
	if (errno != 0 || pid <= 0 || pid > 0x7fffffffL || (*end != '\0' && *end != '/'))
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad pid");
	return route_proc(c, (pid_t)pid, end);
}

static bool peer_allowed(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	uid_t uid;

	if (ci == NULL || stats_peer_uid(ci->connect_fd, &uid) != 0)
		return false;
	return uid == geteuid() || uid == 0;
}

static void waiting_set(struct MHD_Connection *c, bool in_headers);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
	static int first_call;
	bool tcp = cls != NULL;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	if (*state == NULL) {
		*state = &first_call;
		waiting_set(c, false); /* the request's headers are in */
		return MHD_YES;
	}
	if (*upload_size != 0) {
		*upload_size = 0; /* a GET carries no body: drop it */
		return MHD_YES;
	}
	if (!tcp && !peer_allowed(c))
		ret = reply_error(c, MHD_HTTP_FORBIDDEN, "peer refused: not the same user");
	else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		ret = reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
	else if (tcp && strcmp(url, "/metrics") != 0)
		ret = reply_error(c, MHD_HTTP_NOT_FOUND, "only /metrics is served here");
	else {
		pthread_mutex_lock(&sd.lock);
		ret = route(c, url);
		pthread_mutex_unlock(&sd.lock);
	}
	if (ret != MHD_YES) {
		if (pending.r != NULL)
			MHD_destroy_response(pending.r);
		pending.r = NULL;
		return ret;
	}
	return flush(c);
}

/* ---------------------------------------------------------------------- */
/* Header deadline                                                         */
/* ---------------------------------------------------------------------- */

/*
 * Each connection has a thread, and MHD closes one only after its idle
 * timeout, which every byte restarts: a peer that opens connections and
 * sends headers a byte at a time would hold every thread. So a connection
 * gets SD_HEADER_DEADLINE_S seconds to deliver a request's headers, from
 * its start or from the end of its previous request; the watchdog shuts
 * down the socket of one that misses it, and MHD then closes it. Streams
 * (follow) have their headers in and are never cut. MHD reports a
 * connection closed before it closes its socket, and the entry leaves the
 * list then, under wait_lock: the watchdog never shuts a reused fd.
 */
#define SD_HEADER_DEADLINE_S 10

struct waiting {
	struct waiting *next, **prevp;
	int fd;
	bool in_headers; /* waiting for a request's headers */
	bool cut;        /* shut down by the watchdog */
	uint64_t since;  /* CLOCK_MONOTONIC ns */
};

static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;
static struct waiting *waiting_head;
static pthread_t watchdog;
static bool watchdog_running, watchdog_stop;

/* Connection c waits for a request's headers from now on, or has them. */
static void waiting_set(struct MHD_Connection *c, bool in_headers)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct waiting *w = ci != NULL ? ci->socket_context : NULL;

	if (w == NULL)
		return;
	pthread_mutex_lock(&wait_lock);
	w->in_headers = in_headers;
	w->since = stats_mono_ns();
	pthread_mutex_unlock(&wait_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct waiting *w = *socket_context;

	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* Without memory the connection just has no deadline. */
		if (ci == NULL || (w = calloc(1, sizeof(*w))) == NULL)
			return;
		w->fd = ci->connect_fd;
		w->in_headers = true;
		w->since = stats_mono_ns();
		pthread_mutex_lock(&wait_lock);
		w->next = waiting_head;
		w->prevp = &waiting_head;
		if (waiting_head != NULL)
			waiting_head->prevp = &w->next;
		waiting_head = w;
		pthread_mutex_unlock(&wait_lock);
		*socket_context = w;
		return;
	}
	if (w == NULL)
		return;
	pthread_mutex_lock(&wait_lock);
	*w->prevp = w->next;
	if (w->next != NULL)
		w->next->prevp = w->prevp;
	pthread_mutex_unlock(&wait_lock);
	free(w);
	*socket_context = NULL;
}

/* A request is done: the next one's headers are due in time again. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)state;
	(void)toe;
	waiting_set(c, true);
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wait_lock);
	while (!watchdog_stop) {
		struct timespec until;
		uint64_t now = stats_mono_ns();

		for (struct waiting *w = waiting_head; w != NULL; w = w->next)
			if (w->in_headers && !w->cut &&
			    now - w->since > (uint64_t)SD_HEADER_DEADLINE_S * 1000000000u) {
				shutdown(w->fd, SHUT_RDWR);
				w->cut = true;
			}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&wait_cond, &wait_lock, &until);
	}
	pthread_mutex_unlock(&wait_lock);
	return NULL;
}

/*
 * MHD's own messages (a peer that closed mid-request, a failed accept):
 * masked like the daemon's log and at most 10 a minute, since any peer
 * can cause them; the count of the rest is logged when the next minute
 * starts.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t window;
	static unsigned shown, dropped;
	uint64_t now = stats_mono_ns() / 60000000000u;
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	stats_mask_controls(line);
	pthread_mutex_lock(&lock);
	if (now != window) {
		if (dropped > 0)
			fprintf(stderr, "scratchd: http: %u more messages in the last minute\n",
			        dropped);
		window = now;
		shown = dropped = 0;
	}
	if (shown < 10) {
		shown++;
		fprintf(stderr, "scratchd: http: %s\n", line);
	} else {
		dropped++;
	}
	pthread_mutex_unlock(&lock);
}

int sd_parse_listen(const char *s, struct sockaddr_in *sa, char *err, size_t errlen)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		goto out_bad;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		goto out_bad;
	if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
		snprintf(err, errlen, "--listen %s: only loopback addresses (127.0.0.0/8)", s);
		return -EINVAL;
	}
	sa->sin_port = htons((uint16_t)port);
	return 0;
out_bad:
	snprintf(err, errlen, "--listen %s: expected 127.0.0.1:PORT", s);
	return -EINVAL;
}

int sd_serve_start(int unix_fd, const char *listen_on, char *err, size_t errlen)
{
	static int tcp_marker;
	const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                       MHD_USE_ERROR_LOG | MHD_USE_ITC;
	struct sockaddr_in sa;

	if (!watchdog_running) {
		watchdog_stop = false;
		watchdog_running = pthread_create(&watchdog, NULL, watchdog_main, NULL) == 0;
	}
	unix_daemon = MHD_start_daemon(
	        flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	        MHD_OPTION_LISTEN_SOCKET, unix_fd, MHD_OPTION_CONNECTION_LIMIT, 64u,
	        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_TIMEOUT,
	        60u, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
	        on_completed, NULL, MHD_OPTION_END);
	if (unix_daemon == NULL) {
		snprintf(err, errlen, "cannot serve on %s", sd.socket_path);
		return -EIO;
	}
	if (listen_on == NULL)
		return 0;
	if (sd_parse_listen(listen_on, &sa, err, errlen) != 0)
		return -EINVAL;
	tcp_daemon = MHD_start_daemon(
	        flags, ntohs(sa.sin_port), NULL, NULL, handle, &tcp_marker,
	        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
	        (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 16u,
	        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_TIMEOUT,
	        30u, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
	        on_completed, NULL, MHD_OPTION_END);
	if (tcp_daemon == NULL) {
		snprintf(err, errlen, "cannot listen on %s", listen_on);
		return -EADDRINUSE;
	}
	return 0;
}

/*
 * Stop serving. Followers were told (sd.stopping) and send their end
 * marker; they get up to two seconds to finish before the daemon closes
 * what is left, so a client sees a complete stream.
 */
void sd_serve_stop(void)
{
	struct timespec until;

	if (unix_daemon != NULL)
		MHD_quiesce_daemon(unix_daemon);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&sd.lock);
	while (followers > 0 && pthread_cond_timedwait(&sd.cond, &sd.lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&sd.lock);
	if (tcp_daemon != NULL)
		MHD_stop_daemon(tcp_daemon);
	if (unix_daemon != NULL)
		MHD_stop_daemon(unix_daemon);
	tcp_daemon = unix_daemon = NULL;
	if (watchdog_running) {
		pthread_mutex_lock(&wait_lock);
		watchdog_stop = true;
		pthread_cond_signal(&wait_cond);
		pthread_mutex_unlock(&wait_lock);
		pthread_join(watchdog, NULL);
		watchdog_running = false;
	}
}
