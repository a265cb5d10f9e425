/*
 * documents.c - the field tables of every document scratchd serves, and the
 * documents built from them (documents.h).
 *
 * Tables, one per kind of object:
 *   counters   a process's totals, a thread's counters, a history sample
 *   proc       a process entry (and the heads of its per-process documents)
 *   thread     a thread slot's identity
 *   owner      a workspace, arena or worker pool
 *   class      a size class, and the sums over classes
 *   record     a growth record
 *   registry   the registry's bounds
 *   daemon     the daemon's facts, the heads of /v1 and /v1/processes
 * Metric families come from the same tables: the counters of a process
 * (scratch_*), of a thread (scratch_thread_*, with tid and name labels) and
 * of a size class (scratch_class_*, with a class label, its block size in
 * bytes), and the registry's (scratchd_*). Every process series has the
 * labels pid and exe (the executable's base name).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "documents.h"
#include "fields.h"
#include "protocol.h"

#define AT(type, member) offsetof(type, member)

/* ---------------------------------------------------------------------- */
/* Values that are computed                                                */
/* ---------------------------------------------------------------------- */

/* Hits over requests; null before the first one, as the tables print "-". */
static json_t *rate(uint64_t requests, uint64_t misses)
{
	return requests == 0
	               ? json_null()
	               : json_real((double)(requests - (misses < requests ? misses : requests)) /
	                           (double)requests);
}

/* The owner kind's name: "arena", "workspace", "workers", "unknown". */
static const char *documents_owner_kind(uint32_t kind)
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

/* ---------------------------------------------------------------------- */
/* Counters: struct segread_totals                                         */
/* ---------------------------------------------------------------------- */

enum {
	C_PROC = 1u << 0,   /* a process's totals (and the scratch_* families) */
	C_THREAD = 1u << 1, /* a thread's counters (and the scratch_thread_* families) */
	C_SAMPLE = 1u << 2, /* a history sample */
	C_SIZES = 1u << 3,  /* the size view's footer figures */
};

#define C_ALL (C_PROC | C_THREAD | C_SAMPLE)

static json_t *tot_hit_rate(const void *o)
{
	const struct segread_totals *t = o;

	return rate(t->allocs, t->misses);
}

#define TOT(k, m, t, h, in, prom, member)                                                          \
	{                                                                                          \
		.key = k, .metric = m, .type = t, .help = h, .json_in = in, .prom_in = prom,       \
		.kind = FIELD_U64, .off = AT(struct segread_totals, member)                        \
	}

static const struct field counter_fields[] = {
        TOT("allocs", "allocs_total", FIELD_COUNTER, "Pooled allocations", C_ALL, C_PROC | C_THREAD,
            allocs),
        TOT("hits", "cache_hits_total", FIELD_COUNTER, "Allocations served by the thread's cache",
            C_ALL, C_PROC | C_THREAD, hits),
        TOT("depot_hits", "depot_hits_total", FIELD_COUNTER, "Allocations served by the depot",
            C_ALL, C_PROC | C_THREAD, depot_hits),
        TOT("growths", "growths_total", FIELD_COUNTER, "Allocations served with fresh pages", C_ALL,
            C_PROC | C_THREAD, misses),
        TOT("frees", "frees_total", FIELD_COUNTER, "Pool blocks released", C_ALL, C_PROC, frees),
        TOT("remote_frees_in", "remote_frees_total", FIELD_COUNTER,
            "Blocks freed by another thread than their owner", C_ALL, C_PROC, remote_in),
        TOT("remote_frees_out", NULL, FIELD_JSON_ONLY, NULL, C_ALL, 0, remote_out),
        TOT("passthrough", "passthrough_calls_total", FIELD_COUNTER,
            "Allocation calls the shim sent to its backend", C_ALL | C_SIZES, C_PROC, passthrough),
        TOT("retained", "retained_bytes", FIELD_GAUGE, "Bytes of pool blocks held", C_ALL,
            C_PROC | C_THREAD, retained),
        TOT("leased", "leased_bytes", FIELD_GAUGE,
            "Bytes of pool blocks lent now, less what other threads freed back", C_ALL,
            C_PROC | C_THREAD, leased),
        TOT("peak_leased", "peak_leased_bytes", FIELD_GAUGE, "Sum of per-thread peaks of leased",
            C_ALL, C_PROC, peak_leased),
        TOT("growth_bytes", "growth_bytes_total", FIELD_COUNTER, "Bytes of fresh blocks grown",
            C_ALL, C_PROC, growth_bytes),
        TOT("moved_bytes", "moved_bytes_total", FIELD_COUNTER,
            "Bytes of pages moved from idle blocks into growing ones, not faulted again", C_ALL,
            C_PROC, moved_bytes),
        TOT("populated_bytes", "populated_bytes_total", FIELD_COUNTER,
            "Bytes of new pages populated in one call ahead of the write, not faulted one by one",
            C_ALL, C_PROC, populated_bytes),
        TOT("trimmed", "trimmed_bytes_total", FIELD_COUNTER, "Bytes returned to the OS",
            C_PROC | C_SAMPLE, C_PROC, trimmed),
        TOT("depot_bytes", "depot_bytes", FIELD_GAUGE, "Idle bytes in the depot", C_PROC | C_SAMPLE,
            C_PROC, depot_bytes),
        FIELD_FN_JSON("hit_rate", C_ALL, tot_hit_rate),
};

/* A thread's counters as the totals of one thread. */
static void thread_totals(const struct scratch__counters *c, struct segread_totals *t)
{
	*t = (struct segread_totals){
	        .allocs = c->allocs,
	        .hits = c->hits,
	        .depot_hits = c->depot_hits,
	        .misses = c->misses,
	        .frees = c->frees,
	        .remote_in = c->remote_in,
	        .remote_out = c->remote_out,
	        .passthrough = c->passthrough,
	        .retained = segread_retained(c),
	        .leased = segread_leased(c),
	        .peak_leased = c->peak_leased,
	        .growth_bytes = c->growth_bytes,
	        .moved_bytes = c->moved_bytes,
	        .populated_bytes = c->populated_bytes,
	};
}

/* ---------------------------------------------------------------------- */
/* Threads: struct thread_view                                             */
/* ---------------------------------------------------------------------- */

struct thread_view {
	struct segread_thread t;
	bool proc_live;
	struct segread_totals c;
};

static void thread_view(const struct registry_proc *p, uint32_t i, struct thread_view *ret)
{
	ret->t = p->threads[i];
	ret->proc_live = p->live;
	thread_totals(&p->threads[i].c, &ret->c);
}

static json_t *thread_state(const void *o)
{
	const struct thread_view *v = o;

	return json_string(v->proc_live && v->t.state == SCRATCH_SEG_LIVE ? "live" : "exited");
}

#define THR(key, kind, member) FIELD_AT(key, 1, kind, struct thread_view, member)

static const struct field thread_fields[] = {
        THR("slot", FIELD_U32, t.index),
        THR("tid", FIELD_I32, t.tid),
        THR("name", FIELD_TEXT, t.name),
        FIELD_FN_JSON("state", 1, thread_state),
        THR("generation", FIELD_U32, t.generation),
        THR("attach_ns", FIELD_U64, t.attach_ns),
        THR("exit_ns", FIELD_U64, t.exit_ns),
        FIELD_INLINE(1, struct thread_view, c, counter_fields, C_THREAD),
};

static json_t *thread_json(const struct registry_proc *p, uint32_t i)
{
	struct thread_view v;
	json_t *o = json_object();

	thread_view(p, i, &v);
	fields_json(o, FIELDS(thread_fields), 1, &v);
	return o;
}

/* ---------------------------------------------------------------------- */
/* Owners: struct segread_owner                                            */
/* ---------------------------------------------------------------------- */

static json_t *owner_kind(const void *o)
{
	return json_string(documents_owner_kind(((const struct segread_owner *)o)->kind));
}

static json_t *owner_state(const void *o)
{
	return json_string(((const struct segread_owner *)o)->state == SCRATCH_SEG_LIVE ? "live"
	                                                                                : "gone");
}

#define OWN(key, kind, member) FIELD_AT(key, 1, kind, struct segread_owner, member)

static const struct field owner_fields[] = {
        OWN("id", FIELD_U32, id),
        FIELD_FN_JSON("kind", 1, owner_kind),
        OWN("name", FIELD_TEXT, name),
        FIELD_FN_JSON("state", 1, owner_state),
        OWN("retained", FIELD_U64, c.retained),
        OWN("leased", FIELD_U64, c.leased),
        OWN("panel_bytes", FIELD_U64, c.panel_bytes),
        OWN("growths", FIELD_U64, c.growths),
        OWN("dispatches", FIELD_U64, c.dispatches),
        OWN("parks", FIELD_U64, c.parks),
        OWN("wakes", FIELD_U64, c.wakes),
        OWN("workers", FIELD_U64, c.workers),
};

/* ---------------------------------------------------------------------- */
/* Size classes: struct segread_class                                      */
/* ---------------------------------------------------------------------- */

enum {
	K_CLASS = 1u << 0, /* one class (and the scratch_class_* families) */
	K_SUM = 1u << 1,   /* the sums over classes */
};

/* Smallest request a class serves: one byte above the class below. */
static json_t *class_low(const void *o)
{
	uint32_t cls = ((const struct segread_class *)o)->cls;

	return fields_u64(cls > 8 ? segread_class_capacity(cls - 1) + 1 : 1);
}

/* Hits on an idle block of the class itself, not of a larger one. */
static json_t *class_own_hits(const void *o)
{
	const struct segread_class *k = o;
	uint64_t any = k->hits + k->depot_hits;

	return fields_u64(any - (k->larger_hits < any ? k->larger_hits : any));
}

static json_t *class_hit_rate(const void *o)
{
	const struct segread_class *k = o;

	return rate(k->requests, k->misses);
}

#define CLS(k, m, t, h, in, member)                                                                \
	{                                                                                          \
		.key = k, .metric = m, .type = t, .help = h, .json_in = in,                        \
		.prom_in = m != NULL ? K_CLASS : 0, .kind = FIELD_U64,                             \
		.off = AT(struct segread_class, member)                                            \
	}
#define CLS_JSON(key, in, member) FIELD_AT(key, in, FIELD_U64, struct segread_class, member)
#define CLS_FN(key, fn)           FIELD_FN_JSON(key, K_CLASS, fn)

static const struct field class_fields[] = {
        FIELD_AT("class", K_CLASS, FIELD_U32, struct segread_class, cls),
        CLS_JSON("size", K_CLASS, capacity),
        CLS_FN("size_min", class_low),
        CLS("requests", "requests_total", FIELD_COUNTER, "Pooled requests", K_CLASS | K_SUM,
            requests),
        CLS("hits", "cache_hits_total", FIELD_COUNTER, "Requests served by the thread's cache",
            K_CLASS | K_SUM, hits),
        CLS("depot_hits", "depot_hits_total", FIELD_COUNTER, "Requests served by the depot",
            K_CLASS | K_SUM, depot_hits),
        CLS("larger_hits", "larger_hits_total", FIELD_COUNTER,
            "Requests served by an idle block of a larger class", K_CLASS | K_SUM, larger_hits),
        CLS_FN("own_class_hits", class_own_hits),
        CLS("misses", "growths_total", FIELD_COUNTER, "Requests served with fresh pages",
            K_CLASS | K_SUM, misses),
        CLS_FN("hit_rate", class_hit_rate),
        CLS_JSON("frees", K_CLASS | K_SUM, frees),
        CLS_JSON("live_blocks", K_CLASS, live_blocks),
        CLS_JSON("leased_blocks", K_CLASS, leased_blocks),
        CLS("leased_bytes", "leased_bytes", FIELD_GAUGE, "Bytes of the class's blocks lent now",
            K_CLASS | K_SUM, leased_bytes),
        CLS("idle_bytes", "idle_bytes", FIELD_GAUGE, "Bytes of the class's blocks held idle",
            K_CLASS | K_SUM, idle_bytes),
};

/* The sums over a process's classes (the figures K_SUM shows). */
static void class_sum(const struct registry_proc *p, struct segread_class *sum)
{
	*sum = (struct segread_class){0};
	for (uint32_t i = 0; i < p->nclasses; i++) {
		const struct segread_class *k = &p->classes[i];

		sum->requests += k->requests;
		sum->hits += k->hits;
		sum->depot_hits += k->depot_hits;
		sum->larger_hits += k->larger_hits;
		sum->misses += k->misses;
		sum->frees += k->frees;
		sum->leased_bytes += k->leased_bytes;
		sum->idle_bytes += k->idle_bytes;
	}
}

/* ---------------------------------------------------------------------- */
/* Growth records: struct record_view                                      */
/* ---------------------------------------------------------------------- */

struct record_view {
	const char *owner_name; /* NULL: none or unknown */
	struct segread_record r;
};

static json_t *record_owner_name(const void *o)
{
	const struct record_view *v = o;

	return v->owner_name != NULL ? fields_text(v->owner_name) : json_null();
}

static json_t *record_frames(const void *o)
{
	const struct record_view *v = o;
	json_t *f = json_array();

	for (uint32_t i = 0; i < v->r.nframes && i < SCRATCH_SEG_MAX_FRAMES; i++)
		json_array_append_new(f, fields_u64(v->r.frames[i]));
	return f;
}

#define REC(key, kind, member) FIELD_AT(key, 1, kind, struct record_view, member)

static const struct field record_fields[] = {
        REC("seq", FIELD_U64, r.seq),
        REC("time_ns", FIELD_U64, r.time_ns),
        REC("tid", FIELD_I32, r.tid),
        REC("bytes", FIELD_U64, r.bytes),
        REC("class", FIELD_U32, r.cls),
        REC("cpu", FIELD_I32, r.cpu),
        REC("node", FIELD_I32, r.node),
        REC("owner", FIELD_U32, r.owner),
        FIELD_FN_JSON("owner_name", 1, record_owner_name),
        FIELD_FN_JSON("frames", 1, record_frames),
};

json_t *documents_record(const struct registry_proc *p, const struct segread_record *r)
{
	struct record_view v = {.r = *r};
	json_t *o = json_object();

	v.owner_name = r->owner != 0 ? registry_owner_name(p, r->owner) : NULL;
	fields_json(o, FIELDS(record_fields), 1, &v);
	return o;
}

/* ---------------------------------------------------------------------- */
/* History samples: struct registry_sample                                 */
/* ---------------------------------------------------------------------- */

static const struct field sample_fields[] = {
        FIELD_AT("time_ns", 1, FIELD_U64, struct registry_sample, t_ns),
        FIELD_AT("threads", 1, FIELD_U64, struct registry_sample, tot.threads_live),
        FIELD_INLINE(1, struct registry_sample, tot, counter_fields, C_SAMPLE),
};

/* ---------------------------------------------------------------------- */
/* Processes: struct registry_proc                                         */
/* ---------------------------------------------------------------------- */

enum {
	P_SUMMARY = 1u << 0, /* an entry of /v1/processes (and the scratch_* families) */
	P_DETAIL = 1u << 1,  /* /v1/processes/PID */
	P_THREADS = 1u << 2, /* .../threads */
	P_OWNERS = 1u << 3,  /* .../owners */
	P_SIZES = 1u << 4,   /* .../sizes */
	P_HISTORY = 1u << 5, /* .../history */
	P_TRACE = 1u << 6,   /* .../trace */
};

#define P_PROC  (P_SUMMARY | P_DETAIL)
#define P_PIDOF (P_PROC | P_THREADS | P_OWNERS | P_SIZES | P_HISTORY | P_TRACE)

#define PROC_P(o) ((const struct registry_proc *)(o))

static json_t *proc_state(const void *o)
{
	return json_string(PROC_P(o)->live ? "live" : "exited");
}

static json_t *proc_reason(const void *o)
{
	return PROC_P(o)->reason != NULL ? json_string(PROC_P(o)->reason) : json_null();
}

static json_t *proc_forked(const void *o)
{
	return json_boolean(PROC_P(o)->seg.forks > 0);
}

/* What the library did not print: why the pools are off (null while they
 * run), or that max_size had to come down. */
static json_t *proc_pools_off(const void *o)
{
	const char *name = segread_pools_off_name(PROC_P(o)->seg.pools_off);

	return name != NULL ? json_string(name) : json_null();
}

static json_t *proc_lowered(const void *o)
{
	return json_boolean((PROC_P(o)->seg.flags & SCRATCH_SEG_F_LOWERED) != 0);
}

/* Once the process is gone, so are its threads (the main thread never runs
 * its exit hooks, so its slot still says live). */
static uint64_t proc_threads(const void *o)
{
	return PROC_P(o)->live ? PROC_P(o)->tot.threads_live : 0;
}

static json_t *proc_threads_exited(const void *o)
{
	const struct registry_proc *p = o;

	return fields_u64(p->tot.threads_exited + (p->live ? 0 : p->tot.threads_live));
}

static uint64_t proc_up(const void *o)
{
	return PROC_P(o)->live ? 1 : 0;
}

static json_t *proc_trace_enabled(const void *o)
{
	return json_boolean(PROC_P(o)->seg.ring_slots != 0);
}

static json_t *proc_mem(const void *o)
{
	return fields_u64(PROC_P(o)->mem);
}

static json_t *proc_thread_table(const void *o)
{
	const struct registry_proc *p = o;
	json_t *a = json_array();

	for (uint32_t i = 0; i < p->nthreads; i++)
		json_array_append_new(a, thread_json(p, i));
	return a;
}

static json_t *proc_owners(const void *o)
{
	const struct registry_proc *p = o;
	json_t *a = json_array();

	for (uint32_t i = 0; i < p->nowners; i++) {
		json_t *w = json_object();

		fields_json(w, FIELDS(owner_fields), 1, &p->owners[i]);
		json_array_append_new(a, w);
	}
	return a;
}

static json_t *proc_classes(const void *o)
{
	const struct registry_proc *p = o;
	json_t *a = json_array();

	for (uint32_t i = 0; i < p->nclasses; i++) {
		json_t *k = json_object();

		fields_json(k, FIELDS(class_fields), K_CLASS, &p->classes[i]);
		json_array_append_new(a, k);
	}
	return a;
}

static json_t *proc_class_total(const void *o)
{
	struct segread_class sum;
	json_t *t = json_object();

	class_sum(o, &sum);
	fields_json(t, FIELDS(class_fields), K_SUM, &sum);
	return t;
}

static json_t *proc_samples(const void *o)
{
	const struct registry_proc *p = o;
	json_t *a = json_array();

	for (uint32_t i = 0; i < p->hist_len; i++) {
		json_t *e = json_object();

		fields_json(e, FIELDS(sample_fields), 1, registry_history(p, i));
		thread_points_json(&registry_history(p, i)->threads, e);
		json_array_append_new(a, e);
	}
	return a;
}

#define PRO(key, in, kind, member) FIELD_AT(key, in, kind, struct registry_proc, member)
#define PRO_FN(key, in, fn)        FIELD_FN_JSON(key, in, fn)

static const struct field proc_fields[] = {
        PRO("pid", P_PIDOF, FIELD_I32, seg.pid),
        PRO("ppid", P_PROC, FIELD_I32, seg.ppid),
        PRO("start_ticks", P_PROC, FIELD_U64, seg.start_ticks),
        PRO("file", P_PROC, FIELD_TEXT, file),
        PRO("exe", P_PROC, FIELD_TEXT, seg.exe),
        PRO("command", P_PROC, FIELD_TEXT, seg.cmdline),
        PRO_FN("state", P_PROC | P_TRACE, proc_state),
        PRO_FN("exit_reason", P_PROC, proc_reason),
        PRO("created_ns", P_PROC, FIELD_U64, seg.created_ns),
        PRO("exit_ns", P_PROC, FIELD_U64, exit_ns),
        PRO("sampled_ns", P_PROC, FIELD_U64, sampled_ns),
        PRO_FN("forked", P_PROC, proc_forked),
        PRO_FN("pools_off", P_PROC, proc_pools_off),
        PRO_FN("max_size_lowered", P_PROC, proc_lowered),
        {.key = "threads",
         .metric = "threads",
         .type = FIELD_GAUGE,
         .help = "Threads with a live cache",
         .json_in = P_PROC,
         .prom_in = P_SUMMARY,
         .kind = FIELD_FN,
         .value = proc_threads},
        PRO_FN("threads_exited", P_PROC, proc_threads_exited),
        PRO("threads_seen", P_PROC, FIELD_U64, tot.threads_seen),
        FIELD_INLINE(P_PROC, struct registry_proc, tot, counter_fields, C_PROC),
        {.metric = "up",
         .type = FIELD_GAUGE,
         .help = "1 while the process is live, 0 once it exited",
         .prom_in = P_SUMMARY,
         .kind = FIELD_FN,
         .value = proc_up},
        PRO_FN("trace.enabled", P_PROC, proc_trace_enabled),
        PRO("trace.ring", P_PROC, FIELD_U32, seg.ring_slots),
        PRO("trace.head", P_PROC, FIELD_U64, head),
        {.key = "trace.drained",
         .metric = "trace_records_total",
         .type = FIELD_COUNTER,
         .help = "Growth records drained",
         .json_in = P_PROC,
         .prom_in = P_SUMMARY,
         .kind = FIELD_U64,
         .off = AT(struct registry_proc, drained)},
        {.key = "trace.lost",
         .metric = "trace_lost_records_total",
         .type = FIELD_COUNTER,
         .help = "Growth records lost to ring wrap",
         .json_in = P_PROC,
         .prom_in = P_SUMMARY,
         .kind = FIELD_U64,
         .off = AT(struct registry_proc, lost)},
        PRO("samples", P_PROC, FIELD_U32, hist_len),
        PRO_FN("memory", P_PROC, proc_mem),
        PRO("dropped.history_samples", P_PROC, FIELD_U64, hist_dropped),
        PRO("dropped.trace_records", P_PROC, FIELD_U64, trace_dropped),
        PRO("conf", P_DETAIL, FIELD_TEXT, seg.conf),
        PRO("min_size", P_DETAIL | P_SIZES, FIELD_U64, seg.min_size),
        PRO("max_size", P_DETAIL | P_SIZES, FIELD_U64, seg.max_size),
        PRO("available", P_SIZES, FIELD_BOOL, has_classes),
        FIELD_INLINE(P_SIZES, struct registry_proc, tot, counter_fields, C_SIZES),
        PRO_FN("classes", P_SIZES, proc_classes),
        PRO_FN("total", P_SIZES, proc_class_total),
        PRO_FN("thread_table", P_DETAIL, proc_thread_table),
        PRO_FN("threads", P_THREADS, proc_thread_table),
        PRO_FN("owners", P_DETAIL | P_OWNERS, proc_owners),
        PRO_FN("samples", P_HISTORY, proc_samples),
};

static json_t *proc_doc(const struct registry_proc *p, unsigned scope)
{
	json_t *o = json_object();

	fields_json(o, FIELDS(proc_fields), scope, p);
	return o;
}

json_t *documents_process(const struct registry_proc *p)
{
	return proc_doc(p, P_DETAIL);
}

json_t *documents_threads(const struct registry_proc *p)
{
	return proc_doc(p, P_THREADS);
}

json_t *documents_owners(const struct registry_proc *p)
{
	return proc_doc(p, P_OWNERS);
}

/* The size view: every class in use and their sums, with what the table's
 * footer needs (min_size, the calls that passed through). */
json_t *documents_sizes(const struct registry_proc *p)
{
	return proc_doc(p, P_SIZES);
}

/* ---------------------------------------------------------------------- */
/* The trace document: struct trace_doc                                    */
/* ---------------------------------------------------------------------- */

struct trace_doc {
	uint64_t first, next, head, lost;
	json_t *records;
};

static json_t *trace_records(const void *o)
{
	return json_incref(((const struct trace_doc *)o)->records);
}

#define TRD(key, member) FIELD_AT(key, 1, FIELD_U64, struct trace_doc, member)

static const struct field trace_fields[] = {
        TRD("first", first),
        TRD("next", next),
        TRD("head", head),
        TRD("lost", lost),
        FIELD_FN_JSON("records", 1, trace_records),
};

json_t *documents_trace(const struct registry_proc *p, uint64_t since, uint64_t limit)
{
	struct trace_doc d = {.next = since, .head = p->head, .lost = p->lost};
	json_t *o = proc_doc(p, P_TRACE);
	uint32_t i = registry_record_from(p, since);

	d.records = json_array();
	for (; i < p->trace_len && limit > 0; i++, limit--) {
		json_array_append_new(d.records, documents_record(p, registry_record(p, i)));
		d.next = registry_record(p, i)->seq + 1;
	}
	if (i == p->trace_len && d.next < p->next_seq)
		d.next = p->next_seq;
	d.first = registry_first_seq(p);
	fields_json(o, FIELDS(trace_fields), 1, &d);
	json_decref(d.records);
	return o;
}

/* The lines of a follow stream that are not records. */
struct stream_line {
	uint64_t from, to, lost;
	const char *reason;
};

enum {
	S_GONE = 1u << 0,
	S_LOST = 1u << 1,
	S_END = 1u << 2,
};

static json_t *line_true(const void *o)
{
	(void)o;
	return json_true();
}

static json_t *line_reason(const void *o)
{
	const char *r = ((const struct stream_line *)o)->reason;

	return r != NULL ? json_string(r) : json_null();
}

static const struct field line_fields[] = {
        FIELD_AT("gone_from", S_GONE, FIELD_U64, struct stream_line, from),
        FIELD_AT("gone_to", S_GONE, FIELD_U64, struct stream_line, to),
        FIELD_AT("lost", S_LOST, FIELD_U64, struct stream_line, lost),
        FIELD_FN_JSON("end", S_END, line_true),
        FIELD_FN_JSON("reason", S_END, line_reason),
};

static json_t *line_doc(const struct stream_line *l, unsigned scope)
{
	json_t *o = json_object();

	fields_json(o, FIELDS(line_fields), scope, l);
	return o;
}

json_t *documents_gone(uint64_t from, uint64_t to)
{
	return line_doc(&(struct stream_line){.from = from, .to = to}, S_GONE);
}

json_t *documents_lost(uint64_t lost)
{
	return line_doc(&(struct stream_line){.lost = lost}, S_LOST);
}

json_t *documents_end(const char *reason)
{
	return line_doc(&(struct stream_line){.reason = reason}, S_END);
}

json_t *documents_error(const char *msg)
{
	json_t *o = json_object();

	json_object_set_new(o, "error", json_string(msg));
	return o;
}

/* ---------------------------------------------------------------------- */
/* The registry: struct registry_counts                                    */
/* ---------------------------------------------------------------------- */

#define REG(k, m, l, t, h, kd, member)                                                             \
	{                                                                                          \
		.key = k, .metric = m, .label = l, .type = t, .help = h, .json_in = k != NULL,     \
		.prom_in = m != NULL, .kind = kd, .off = AT(struct registry_counts, member)        \
	}

static const struct field registry_fields[] = {
        REG("memory_budget", "memory_budget_bytes", NULL, FIELD_GAUGE,
            "The most scratchd keeps for processes (--memory-budget)", FIELD_U64, budget),
        REG("memory_used", "memory_bytes", NULL, FIELD_GAUGE, "Bytes scratchd keeps for processes",
            FIELD_U64, mem_used),
        REG("memory_peak", NULL, NULL, FIELD_JSON_ONLY, NULL, FIELD_U64, mem_peak),
        REG("max_exited", NULL, NULL, FIELD_JSON_ONLY, NULL, FIELD_U32, max_exited),
        REG(NULL, "processes", "state=\"live\"", FIELD_GAUGE, "Processes scratchd knows", FIELD_U32,
            live),
        REG("exited", "processes", "state=\"exited\"", FIELD_GAUGE, "Processes scratchd knows",
            FIELD_U32, exited),
        REG("evicted_max_exited", "evicted_processes_total", "reason=\"max_exited\"", FIELD_COUNTER,
            "Exited processes forgotten before their retention ended", FIELD_U64, evicted_cap),
        REG("evicted_memory_budget", "evicted_processes_total", "reason=\"memory_budget\"",
            FIELD_COUNTER, "Exited processes forgotten before their retention ended", FIELD_U64,
            evicted_budget),
        REG("refused", "refused_processes_total", NULL, FIELD_COUNTER,
            "Segments not adopted for lack of budget", FIELD_U64, refused),
        REG("dropped.history_samples", "dropped_samples_total", NULL, FIELD_COUNTER,
            "History samples dropped for the budget", FIELD_U64, hist_dropped),
        REG("dropped.trace_records", "dropped_records_total", NULL, FIELD_COUNTER,
            "Trace records dropped for the budget", FIELD_U64, trace_dropped),
        REG(NULL, "rejected_segments", NULL, FIELD_GAUGE, "Segment files refused as invalid",
            FIELD_U32, rejected),
};

/* ---------------------------------------------------------------------- */
/* The daemon: struct documents_daemon                                          */
/* ---------------------------------------------------------------------- */

enum {
	D_INFO = 1u << 0,    /* /v1 */
	D_LIST = 1u << 1,    /* /v1/processes */
	D_HISTORY = 1u << 2, /* the tail of /v1/processes/PID/history */
};

#define DAEMON_P(o) ((const struct documents_daemon *)(o))

static json_t *daemon_protocol(const void *o)
{
	(void)o;
	return json_integer(PROTOCOL_VERSION);
}

static json_t *daemon_version(const void *o)
{
	return json_string(DAEMON_P(o)->version);
}

static json_t *daemon_run_dir(const void *o)
{
	return json_string(DAEMON_P(o)->run_dir);
}

static json_t *daemon_interval(const void *o)
{
	return fields_u64(DAEMON_P(o)->conf->interval_ms);
}

static json_t *daemon_retention(const void *o)
{
	return fields_u64(DAEMON_P(o)->conf->retention_s);
}

static json_t *daemon_registry(const void *o)
{
	json_t *r = json_object();

	fields_json(r, FIELDS(registry_fields), 1, DAEMON_P(o)->counts);
	return r;
}

static json_t *daemon_processes(const void *o)
{
	const struct documents_daemon *d = o;
	json_t *a = json_array();

	for (size_t i = 0; i < d->nprocs; i++)
		json_array_append_new(a, proc_doc(d->procs[i], P_SUMMARY));
	return a;
}

static const struct field rejected_fields[] = {
        FIELD_AT("file", 1, FIELD_TEXT, struct registry_rejected, file),
        FIELD_AT("error", 1, FIELD_TEXT, struct registry_rejected, error),
};

static json_t *daemon_rejected(const void *o)
{
	const struct documents_daemon *d = o;
	json_t *a = json_array();

	for (size_t i = 0; i < d->nrejected; i++) {
		json_t *r = json_object();

		fields_json(r, FIELDS(rejected_fields), 1, d->rejected[i]);
		json_array_append_new(a, r);
	}
	return a;
}

#define DMN(key, in, fn) FIELD_FN_JSON(key, in, fn)

static const struct field daemon_fields[] = {
        DMN("protocol", D_INFO | D_LIST, daemon_protocol),
        DMN("version", D_INFO, daemon_version),
        FIELD_AT("pid", D_INFO, FIELD_I32, struct documents_daemon, pid),
        DMN("run_dir", D_INFO | D_LIST, daemon_run_dir),
        DMN("interval_ms", D_INFO | D_HISTORY, daemon_interval),
        DMN("retention_s", D_INFO, daemon_retention),
        DMN("processes", D_LIST, daemon_processes),
        DMN("rejected", D_LIST, daemon_rejected),
        DMN("registry", D_INFO | D_LIST, daemon_registry),
};

static json_t *daemon_doc(const struct documents_daemon *d, unsigned scope)
{
	json_t *o = json_object();

	fields_json(o, FIELDS(daemon_fields), scope, d);
	return o;
}

json_t *documents_info(const struct documents_daemon *d)
{
	return daemon_doc(d, D_INFO);
}

json_t *documents_processes(const struct documents_daemon *d)
{
	return daemon_doc(d, D_LIST);
}

/* /history: the process's samples and the interval they were taken at. */
json_t *documents_history(const struct registry_proc *p, const struct registry_conf *conf)
{
	struct documents_daemon d = {.conf = conf};
	json_t *o = proc_doc(p, P_HISTORY);

	fields_json(o, FIELDS(daemon_fields), D_HISTORY, &d);
	return o;
}

/* ---------------------------------------------------------------------- */
/* Prometheus                                                              */
/* ---------------------------------------------------------------------- */

/* The objects of the families, with a cursor for the nested ones. */
struct prom_ctx {
	const struct registry_proc *const *v;
	size_t n;
	size_t k, j; /* the image, and the thread or class in it */
	struct thread_view tv;
	const struct registry_counts *counts;
};

static size_t proc_labels(char *buf, size_t len, const struct registry_proc *p)
{
	const char *base = strrchr(p->seg.exe, '/');
	char exe[2 * SCRATCH_SEG_EXE_LEN + 1];

	fields_escape(exe, sizeof(exe), base != NULL ? base + 1 : p->seg.exe);
	return (size_t)snprintf(buf, len, "pid=\"%d\",exe=\"%s\"", p->seg.pid, exe);
}

static bool each_proc(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len)
{
	struct prom_ctx *c = ctx;

	if (i >= c->n)
		return false;
	*ret_obj = c->v[i];
	proc_labels(labels, len, c->v[i]);
	return true;
}

static bool each_proc_totals(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len)
{
	struct prom_ctx *c = ctx;

	if (!each_proc(ctx, i, ret_obj, labels, len))
		return false;
	*ret_obj = &c->v[i]->tot;
	return true;
}

/* Step the cursor to the next (image, item) pair with item < count(image);
 * restarts at i == 0. False past the last. */
static bool each_next(struct prom_ctx *c, size_t i, uint32_t (*count)(const struct registry_proc *))
{
	if (i == 0)
		c->k = c->j = 0;
	else
		c->j++;
	while (c->k < c->n && c->j >= count(c->v[c->k])) {
		c->k++;
		c->j = 0;
	}
	return c->k < c->n;
}

static uint32_t nthreads(const struct registry_proc *p)
{
	return p->nthreads;
}

static uint32_t nclasses(const struct registry_proc *p)
{
	return p->nclasses;
}

static bool each_thread(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len)
{
	struct prom_ctx *c = ctx;
	char name[2 * SCRATCH_SEG_NAME_LEN + 3];

	if (!each_next(c, i, nthreads))
		return false;
	thread_view(c->v[c->k], (uint32_t)c->j, &c->tv);
	fields_escape(name, sizeof(name), c->tv.t.name);
	snprintf(labels, len, "pid=\"%d\",tid=\"%d\",name=\"%s\"", c->v[c->k]->seg.pid, c->tv.t.tid,
	         name);
	*ret_obj = &c->tv.c;
	return true;
}

static bool each_class(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len)
{
	struct prom_ctx *c = ctx;
	const struct segread_class *k;
	size_t o;

	if (!each_next(c, i, nclasses))
		return false;
	k = &c->v[c->k]->classes[c->j];
	o = proc_labels(labels, len, c->v[c->k]);
	if (o < len)
		snprintf(labels + o, len - o, ",class=\"%llu\"", (unsigned long long)k->capacity);
	*ret_obj = k;
	return true;
}

static bool each_registry(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len)
{
	struct prom_ctx *c = ctx;

	(void)len;
	if (i > 0)
		return false;
	labels[0] = '\0';
	*ret_obj = c->counts;
	return true;
}

void documents_metrics(FILE *f, const struct registry_proc *const *images, size_t n,
                       const struct registry_counts *counts)
{
	struct prom_ctx c = {.v = images, .n = n, .counts = counts};

	fields_prom(f, "scratch_", ".", FIELDS(counter_fields), C_PROC, each_proc_totals, &c);
	fields_prom(f, "scratch_", ".", FIELDS(proc_fields), P_SUMMARY, each_proc, &c);
	fields_prom(f, "scratch_thread_", ", per thread.", FIELDS(counter_fields), C_THREAD,
	            each_thread, &c);
	fields_prom(f, "scratch_class_", ", per size class.", FIELDS(class_fields), K_CLASS,
	            each_class, &c);
	fields_prom(f, "scratchd_", ".", FIELDS(registry_fields), 1, each_registry, &c);
}
