/*
 * segread.c - validating reader of stats segments (see segread.h).
 *
 * Nothing read from a segment is used as a size, an offset or an index
 * before it was checked against the file size and the limits of
 * segment.h; the checked copy in struct segread is the only layout used
 * afterwards, so a writer that rewrites its header later cannot steer a
 * read outside the file.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segread.h"

/* Read len bytes at off; -EIO on a short read (truncated file). */
static int src_read(const struct segread_src *src, uint64_t off, void *buf, size_t len)
{
	if (src->fd < 0) {
		if (off > src->mem_size || len > src->mem_size - off)
			return -EIO;
		memcpy(buf, src->mem + off, len);
		return 0;
	}
	while (len > 0) {
		ssize_t n = pread(src->fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		buf = (uint8_t *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/* A section [off, off + count * stride) inside [lo, file_size), aligned. */
static bool section_ok(uint64_t off, uint64_t count, uint64_t stride, uint64_t lo,
                       uint64_t file_size, uint64_t *ret_end)
{
	uint64_t len, end;

	if (off < lo || off % 8 != 0 || stride % 8 != 0)
		return false;
	if (__builtin_mul_overflow(count, stride, &len) || __builtin_add_overflow(off, len, &end))
		return false;
	if (end > file_size)
		return false;
	*ret_end = end;
	return true;
}

static void copy_str(char *dst, const char *src, size_t len)
{
	memcpy(dst, src, len);
	dst[len - 1] = '\0';
}

/* The part of a thread slot every writer of version 1 has (the class
 * counters came later), and of the header. */
#define THREAD_BASE offsetof(struct scratch_seg_thread, k)
#define HEADER_BASE offsetof(struct scratch_seg_header, class_first)

/* Arrays of class counters: 6 in a thread slot, 1 + 6 in the process's
 * section (live, then the exited counters), class_count entries each. */
#define SLOT_ARRAYS 6
#define PROC_ARRAYS 7

/* The class section, when there is one: right after the process counters
 * (end), before the thread table; its arrays inside their spaces. */
static int check_classes(const struct scratch_seg_header *h, uint64_t file_size, uint64_t *end,
                         char *err, size_t errlen)
{
	if (h->class_count == 0)
		return 0;
	if (h->class_count > SCRATCH_SEG_MAX_CLASSES || h->class_first < 8 ||
	    h->class_first + (uint64_t)h->class_count > SCRATCH_SEG_MAX_CLASSES)
		return bad(err, errlen, "bad size classes (%u from %u)", h->class_count,
		           h->class_first);
	if (h->slot_class_off < THREAD_BASE || h->slot_class_off % 8 != 0 ||
	    h->slot_class_off + (uint64_t)SLOT_ARRAYS * h->class_count * 8 > h->thread_stride)
		return bad(err, errlen, "class counters outside the thread slot");
	if (h->classes_size < (uint64_t)PROC_ARRAYS * h->class_count * 8 ||
	    h->classes_size > 65536 ||
	    !section_ok(h->classes_off, 1, h->classes_size, *end, file_size, end))
		return bad(err, errlen, "class section outside the file");
	return 0;
}

/* The block table, when there is one: last, after the ring's place. */
static int check_blocks(const struct scratch_seg_header *h, uint64_t file_size, uint64_t end,
                        char *err, size_t errlen)
{
	uint64_t ring_end = h->ring_off + (uint64_t)h->ring_slots * h->record_stride;

	if (h->blocks_off == 0 && h->block_slots == 0)
		return 0;
	if (h->block_slots > SCRATCH_SEG_MAX_BLOCKS ||
	    h->block_stride < sizeof(struct scratch_seg_block) || h->block_stride > 65536 ||
	    !section_ok(h->blocks_off, h->block_slots, h->block_stride,
	                end > ring_end ? end : ring_end, file_size, &end))
		return bad(err, errlen, "block table outside the file (%u entries of %u bytes)",
		           h->block_slots, h->block_stride);
	return 0;
}

/* The sections must follow each other in this order, without overlap. */
static int check_layout(const struct scratch_seg_header *h, uint64_t file_size, char *err,
                        size_t errlen)
{
	uint64_t end;
	int rc;

	if (h->proc_size < sizeof(struct scratch__proc_counters) || h->proc_size > 65536 ||
	    !section_ok(h->proc_off, 1, h->proc_size, h->header_size, file_size, &end))
		return bad(err, errlen, "process counters outside the file");
	rc = check_classes(h, file_size, &end, err, errlen);
	if (rc != 0)
		return rc;
	if (h->thread_slots > SCRATCH_SEG_MAX_THREADS || h->thread_stride < THREAD_BASE ||
	    h->thread_stride % 8 != 0 || h->thread_stride > 65536 ||
	    !section_ok(h->threads_off, h->thread_slots, h->thread_stride, end, file_size, &end))
		return bad(err, errlen, "thread table outside the file (%u slots of %u bytes)",
		           h->thread_slots, h->thread_stride);
	if (h->owner_slots > SCRATCH_SEG_MAX_OWNERS ||
	    h->owner_stride < sizeof(struct scratch_seg_owner) || h->owner_stride > 65536 ||
	    !section_ok(h->owners_off, h->owner_slots, h->owner_stride, end, file_size, &end))
		return bad(err, errlen, "owner table outside the file");
	if (h->ring_slots > SCRATCH_SEG_MAX_RING || (h->ring_slots & (h->ring_slots - 1)) != 0)
		return bad(err, errlen, "trace ring size %u is not a power of two", h->ring_slots);
	/* No ring (trace:false): the writer leaves its record layout at zero,
	 * and nothing is ever read there. */
	if (h->ring_slots != 0 &&
	    (h->record_frames > SCRATCH_SEG_MAX_FRAMES ||
	     h->record_stride < scratch_seg_record_stride(h->record_frames) ||
	     h->record_stride > 65536 ||
	     !section_ok(h->ring_off, h->ring_slots, h->record_stride, end, file_size, &end)))
		return bad(err, errlen, "trace ring outside the file");
	return check_blocks(h, file_size, end, err, errlen);
}

int segread_open(const struct segread_src *src, uint64_t file_size, struct segread *ret, char *err,
                 size_t errlen)
{
	struct scratch_seg_header h;
	int rc;

	if (file_size < sizeof(h))
		return bad(err, errlen, "truncated: %llu bytes, the header alone needs %zu",
		           (unsigned long long)file_size, sizeof(h));
	if (file_size > SCRATCH_SEG_MAX_SIZE)
		return bad(err, errlen, "too large: %llu bytes", (unsigned long long)file_size);
	rc = src_read(src, 0, &h, sizeof(h));
	if (rc != 0) {
		bad(err, errlen, "short read of the header");
		return rc;
	}
	if (h.magic == 0) {
		bad(err, errlen, "not published yet");
		return -ENODATA;
	}
	if (h.magic != SCRATCH_SEG_MAGIC)
		return bad(err, errlen, "bad magic");
	if (h.version != SCRATCH_SEG_VERSION)
		return bad(err, errlen, "format version %u, this reader knows %u", h.version,
		           SCRATCH_SEG_VERSION);
	if (h.header_size < HEADER_BASE || h.header_size % 8 != 0 || h.header_size > 65536)
		return bad(err, errlen, "bad header size %u", h.header_size);
	if (h.header_size < sizeof(h)) {
		/* an older writer: what follows its header is not ours */
		memset((uint8_t *)&h + HEADER_BASE, 0, sizeof(h) - HEADER_BASE);
	}
	if (h.file_size != file_size)
		return bad(err, errlen, "header says %llu bytes, the file has %llu",
		           (unsigned long long)h.file_size, (unsigned long long)file_size);
	if (h.pid <= 0)
		return bad(err, errlen, "bad pid %d", h.pid);
	if (h.pools_off > SCRATCH_SEG_OFF_MAX)
		return bad(err, errlen, "unknown reason %u for the pools being off", h.pools_off);
	rc = check_layout(&h, file_size, err, errlen);
	if (rc != 0)
		return rc;
	memset(ret, 0, sizeof(*ret));
	ret->src = *src;
	ret->file_size = file_size;
	ret->version = h.version;
	ret->flags = h.flags;
	ret->pools_off = h.pools_off;
	ret->pid = h.pid;
	ret->ppid = h.ppid;
	ret->uid = h.uid;
	ret->forks = h.forks;
	ret->start_ticks = h.start_ticks;
	ret->created_ns = h.created_ns;
	ret->min_size = h.min_size;
	ret->max_size = h.max_size;
	ret->trace_frames = h.trace_frames;
	ret->proc_off = h.proc_off;
	ret->proc_size = h.proc_size;
	ret->threads_off = h.threads_off;
	ret->thread_slots = h.thread_slots;
	ret->thread_stride = h.thread_stride;
	ret->owners_off = h.owners_off;
	ret->owner_slots = h.owner_slots;
	ret->owner_stride = h.owner_stride;
	ret->ring_off = h.ring_off;
	ret->ring_slots = h.ring_slots;
	ret->record_stride = h.record_stride;
	ret->record_frames = h.record_frames;
	ret->class_first = h.class_first;
	ret->class_count = h.class_count;
	ret->slot_class_off = h.slot_class_off;
	ret->classes_off = h.classes_off;
	ret->classes_size = h.classes_size;
	ret->blocks_off = h.blocks_off;
	ret->block_slots = h.block_slots;
	ret->block_stride = h.block_stride;
	copy_str(ret->exe, h.exe, sizeof(ret->exe));
	copy_str(ret->cmdline, h.cmdline, sizeof(ret->cmdline));
	copy_str(ret->conf, h.conf, sizeof(ret->conf));
	ret->retries = SEGREAD_RETRIES;
	return 0;
}

int segread_dyn(const struct segread *s, struct segread_dyn *ret)
{
	struct scratch_seg_header h;
	int rc = src_read(&s->src, 0, &h, sizeof(h));

	if (rc != 0)
		return rc;
	ret->exited = h.exited != 0;
	ret->exit_ns = h.exit_ns;
	ret->ring_head = h.ring_head;
	return 0;
}

/*
 * A seqlock read through copies: copy the block (seq included), then the
 * seq word again. pread copies in order and a syscall boundary separates
 * the two copies, so an even, unchanged seq means no writer was inside.
 */
static int read_seq(const struct segread *s, uint64_t off, void *buf, size_t len, uint64_t seq_off)
{
	for (unsigned tries = 0;; tries++) {
		uint64_t seq0, seq1;
		int rc = src_read(&s->src, off, buf, len);

		if (rc != 0)
			return rc;
		memcpy(&seq0, (uint8_t *)buf + seq_off, sizeof(seq0));
		rc = src_read(&s->src, off + seq_off, &seq1, sizeof(seq1));
		if (rc != 0)
			return rc;
		if (seq0 % 2 == 0 && seq0 == seq1)
			return 0;
		if (tries >= s->retries)
			return -EAGAIN;
		sched_yield(); /* let a writer that was preempted inside finish */
	}
}

int segread_thread(const struct segread *s, uint32_t i, struct segread_thread *ret)
{
	struct scratch_seg_thread t;
	uint32_t state;
	int rc;

	if (i >= s->thread_slots)
		return -EINVAL;
	rc = read_seq(s, s->threads_off + (uint64_t)i * s->thread_stride, &t, THREAD_BASE,
	              offsetof(struct scratch_seg_thread, c.seq));
	if (rc != 0)
		return rc;
	/* The slot header may have been reset under the counters: check it
	 * did not change across the copy. */
	rc = src_read(&s->src, s->threads_off + (uint64_t)i * s->thread_stride, &state,
	              sizeof(state));
	if (rc != 0)
		return rc;
	if (t.state == SCRATCH_SEG_FREE)
		return -ENOENT;
	if (t.state != state || (t.state != SCRATCH_SEG_LIVE && t.state != SCRATCH_SEG_EXITED))
		return -EAGAIN;
	ret->index = i;
	ret->state = t.state;
	ret->generation = t.generation;
	ret->tid = t.tid;
	ret->attach_ns = t.attach_ns;
	ret->exit_ns = t.exit_ns;
	memcpy(ret->name, t.name, SCRATCH_SEG_NAME_LEN);
	ret->name[SCRATCH_SEG_NAME_LEN] = '\0';
	ret->c = t.c;
	return 0;
}

/* The slots to look at: all of them, or with the class counters (a
 * writer that keeps threads_high) those below threads_high. A hostile
 * value can only hide slots, as marking them free could. */
static uint32_t slots_high(const struct segread *s)
{
	uint32_t high = s->thread_slots;

	if (s->class_count != 0 &&
	    src_read(&s->src, offsetof(struct scratch_seg_header, threads_high), &high,
	             sizeof(high)) == 0 &&
	    high < s->thread_slots)
		return high;
	return s->thread_slots;
}

int segread_threads_used(const struct segread *s, bool *used)
{
	uint8_t buf[64 * 1024];
	uint32_t per = (uint32_t)(sizeof(buf) / s->thread_stride);
	uint32_t high = slots_high(s);

	memset(used, 0, s->thread_slots * sizeof(*used));
	for (uint32_t i = 0; i < high; i += per) {
		uint32_t n = high - i < per ? high - i : per;
		int rc = src_read(&s->src, s->threads_off + (uint64_t)i * s->thread_stride, buf,
		                  (size_t)n * s->thread_stride);

		if (rc != 0)
			return rc;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t state;

			memcpy(&state, buf + (size_t)k * s->thread_stride, sizeof(state));
			used[i + k] = state != SCRATCH_SEG_FREE;
		}
	}
	return 0;
}

int segread_owner(const struct segread *s, uint32_t i, struct segread_owner *ret)
{
	struct scratch_seg_owner o;
	int rc;

	if (i >= s->owner_slots)
		return -EINVAL;
	rc = read_seq(s, s->owners_off + (uint64_t)i * s->owner_stride, &o, sizeof(o),
	              offsetof(struct scratch_seg_owner, c.seq));
	if (rc != 0)
		return rc;
	if (o.state == SCRATCH_SEG_FREE)
		return -ENOENT;
	if (o.state != SCRATCH_SEG_LIVE && o.state != SCRATCH_SEG_EXITED)
		return -EAGAIN;
	ret->index = i;
	ret->state = o.state;
	ret->kind = o.kind;
	ret->id = i + 1;
	ret->generation = o.generation;
	ret->created_ns = o.created_ns;
	memcpy(ret->name, o.name, SCRATCH_SEG_OWNER_LEN);
	ret->name[SCRATCH_SEG_OWNER_LEN] = '\0';
	ret->c = o.c;
	return 0;
}

int segread_proc(const struct segread *s, struct scratch__proc_counters *ret)
{
	return read_seq(s, s->proc_off, ret, sizeof(*ret),
	                offsetof(struct scratch__proc_counters, seq));
}

/* 1: record s delivered, 0: lost, -EAGAIN: not written yet, <0: error. */
static int take_record(const struct segread *s, uint64_t seq, bool force, segread_record_fn fn,
                       void *ctx)
{
	uint8_t buf[sizeof(struct scratch_seg_record) + SCRATCH_SEG_MAX_FRAMES * 8];
	struct scratch_seg_record *r = (struct scratch_seg_record *)buf;
	size_t len = sizeof(*r) + (size_t)s->record_frames * 8;
	uint64_t off = s->ring_off + ((seq - 1) & (s->ring_slots - 1)) * s->record_stride;
	struct segread_record out;
	int rc = src_read(&s->src, off, buf, len);

	if (rc != 0)
		return rc;
	if (r->seq_end < seq && r->seq <= seq && !force)
		return -EAGAIN;
	if (r->seq != seq || r->seq_end != seq || r->nframes > s->record_frames ||
	    r->check != scratch_seg_record_check(r, r->frames, r->nframes))
		return 0;
	memset(&out, 0, sizeof(out));
	out.seq = seq;
	out.time_ns = r->time_ns;
	out.bytes = r->bytes;
	out.tid = r->tid;
	out.cls = r->cls;
	out.cpu = r->cpu;
	out.node = r->node;
	out.owner = r->owner;
	out.nframes = r->nframes;
	memcpy(out.frames, r->frames, r->nframes * sizeof(out.frames[0]));
	fn(ctx, &out);
	return 1;
}

int segread_drain(const struct segread *s, uint64_t *next, uint64_t *lost, uint64_t max, bool force,
                  segread_record_fn fn, void *ctx)
{
	struct segread_dyn d;
	uint64_t seq = *next < 1 ? 1 : *next;
	int rc;

	if (s->ring_slots == 0)
		return 0;
	rc = segread_dyn(s, &d);
	if (rc != 0)
		return rc;
	if (d.ring_head == UINT64_MAX)
		return -EBADMSG; /* no writer gets there: hostile, and head + 1 would wrap */
	if (d.ring_head + 1 < seq)
		return -EBADMSG; /* the head went backwards: only a hostile writer
		                  * does that. *next stays, so what the caller
		                  * keeps stays in order: records below it are
		                  * never taken again. */
	if (d.ring_head - (seq - 1) > s->ring_slots) {
		uint64_t first = d.ring_head - s->ring_slots + 1;

		*lost += first - seq;
		seq = first;
	}
	for (; seq <= d.ring_head && max > 0; seq++, max--) {
		rc = take_record(s, seq, force, fn, ctx);
		if (rc == -EAGAIN)
			break;
		if (rc < 0) {
			*next = seq;
			return rc;
		}
		if (rc == 0)
			(*lost)++;
	}
	*next = seq;
	return rc == -EAGAIN ? -EAGAIN : 0;
}

const char *segread_pools_off_name(uint32_t pools_off)
{
	/* JSON values: they never change once released */
	static const char *const names[SCRATCH_SEG_OFF_MAX + 1] = {
	        [SCRATCH_SEG_OFF_AS_LIMIT] = "address_space_limit",
	        [SCRATCH_SEG_OFF_RESERVE] = "reserve_failed",
	        [SCRATCH_SEG_OFF_NOMEM] = "out_of_memory",
	        [SCRATCH_SEG_OFF_PAGE_SIZE] = "page_size",
	};

	return pools_off <= SCRATCH_SEG_OFF_MAX ? names[pools_off] : NULL;
}

/* scratch_seg_totals()'s walk over a slot snapshot. */
struct totals_walk {
	const struct segread_thread *t;
	size_t n, i;
};

static bool next_thread(void *ctx, struct scratch__counters *ret)
{
	struct totals_walk *w = ctx;

	if (w->i >= w->n)
		return false;
	*ret = w->t[w->i++].c;
	return true;
}

void segread_totals(const struct segread_thread *t, size_t n,
                    const struct scratch__proc_counters *proc, struct segread_totals *ret)
{
	struct totals_walk w = {t, n, 0};
	struct scratch_seg_totals s;

	scratch_seg_totals(&s, next_thread, &w, proc);
	memset(ret, 0, sizeof(*ret));
	ret->allocs = s.allocs;
	ret->hits = s.hits;
	ret->depot_hits = s.depot_hits;
	ret->misses = s.misses;
	ret->frees = s.frees;
	ret->remote_in = s.remote_in;
	ret->remote_out = s.remote_out;
	ret->passthrough = s.passthrough;
	ret->retained = s.retained;
	ret->leased = s.leased;
	ret->peak_leased = s.peak_leased;
	ret->growth_bytes = s.growth_bytes;
	ret->moved_bytes = s.moved_bytes;
	ret->populated_bytes = s.populated_bytes;
	ret->trimmed = s.trimmed;
	ret->threads_seen = s.threads_seen;
	ret->threads_exited = s.exited_threads;
	ret->depot_bytes = s.depot_bytes;
	for (size_t i = 0; i < n; i++) {
		if (t[i].state == SCRATCH_SEG_LIVE)
			ret->threads_live++;
		else
			ret->threads_exited++;
	}
}

/* Sums of the class arrays: PROC_ARRAYS rows (live, then hits,
 * depot_hits, misses, larger_hits, frees, lent_adj) of class_count. */
struct class_sums {
	uint64_t v[PROC_ARRAYS][SCRATCH_SEG_MAX_CLASSES];
};

/* Add the class arrays of the used, live or exited thread slots to sum. */
static int add_slot_classes(const struct segread *s, const bool *used, uint8_t *buf,
                            struct class_sums *sum)
{
	size_t len = s->slot_class_off + (size_t)SLOT_ARRAYS * s->class_count * 8;

	for (uint32_t i = 0; i < s->thread_slots; i++) {
		uint32_t state;
		int rc;

		if (!used[i])
			continue;
		rc = read_seq(s, s->threads_off + (uint64_t)i * s->thread_stride, buf, len,
		              offsetof(struct scratch_seg_thread, c.seq));
		if (rc != 0)
			return rc;
		memcpy(&state, buf, sizeof(state));
		if (state != SCRATCH_SEG_LIVE && state != SCRATCH_SEG_EXITED)
			continue;
		for (uint32_t a = 0; a < SLOT_ARRAYS; a++)
			for (uint32_t k = 0; k < s->class_count; k++) {
				uint64_t v;

				memcpy(&v,
				       buf + s->slot_class_off +
				               ((size_t)a * s->class_count + k) * 8,
				       sizeof(v));
				sum->v[a + 1][k] += v;
			}
	}
	return 0;
}

/* One try: the process's class section inside proc->seq, then the slots;
 * -EAGAIN when proc->seq moved across (a slot was folded meanwhile). */
static int classes_once(const struct segread *s, const bool *used, uint8_t *buf,
                        struct class_sums *sum)
{
	struct scratch__proc_counters p0, p1;
	size_t len = (size_t)PROC_ARRAYS * s->class_count * 8;
	int rc;

	memset(sum, 0, sizeof(*sum));
	rc = segread_proc(s, &p0);
	if (rc == 0)
		rc = src_read(&s->src, s->classes_off, buf, len);
	if (rc != 0)
		return rc;
	for (uint32_t a = 0; a < PROC_ARRAYS; a++)
		for (uint32_t k = 0; k < s->class_count; k++)
			memcpy(&sum->v[a][k], buf + ((size_t)a * s->class_count + k) * 8,
			       sizeof(uint64_t));
	rc = add_slot_classes(s, used, buf, sum);
	if (rc == 0)
		rc = segread_proc(s, &p1);
	if (rc == 0 && p1.seq != p0.seq)
		rc = -EAGAIN;
	return rc;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* The figures of class slot k from the sums, per segment.h. */
static void class_figures(const struct segread *s, const struct class_sums *sum, uint32_t k,
                          struct segread_class *c)
{
	uint64_t out;

	memset(c, 0, sizeof(*c));
	c->cls = s->class_first + k;
	c->capacity = segread_class_capacity(c->cls);
	c->live_blocks = sum->v[0][k];
	c->hits = sum->v[1][k];
	c->depot_hits = sum->v[2][k];
	c->misses = sum->v[3][k];
	c->larger_hits = sum->v[4][k];
	c->frees = sum->v[5][k];
	c->requests = c->hits + c->depot_hits + c->misses;
	c->lent = c->requests + sum->v[6][k]; /* lent_adj: mod 2^64 */
	out = c->lent >= c->frees ? c->lent - c->frees : 0;
	c->leased_blocks = out;
	c->leased_bytes = mul_sat(out, c->capacity);
	c->idle_bytes = c->live_blocks >= out ? mul_sat(c->live_blocks - out, c->capacity) : 0;
}

int segread_classes(const struct segread *s, struct segread_class *ret, uint32_t max)
{
	struct class_sums *sum;
	bool *used;
	uint8_t *buf;
	uint32_t n = 0;
	int rc;

	if (s->class_count == 0)
		return -ENODATA;
	sum = malloc(sizeof(*sum));
	used = calloc(s->thread_slots ? s->thread_slots : 1, sizeof(*used));
	buf = malloc(s->thread_stride > s->classes_size ? s->thread_stride : s->classes_size);
	rc = sum == NULL || used == NULL || buf == NULL ? -ENOMEM : 0;
	if (rc == 0)
		rc = segread_threads_used(s, used);
	for (unsigned tries = 0; rc == 0; tries++) {
		rc = classes_once(s, used, buf, sum);
		if (rc != -EAGAIN || tries >= s->retries)
			break;
		rc = 0;
	}
	for (uint32_t k = 0; rc == 0 && k < s->class_count && n < max; k++) {
		struct segread_class c;

		class_figures(s, sum, k, &c);
		if (c.requests != 0 || c.live_blocks != 0 || c.frees != 0)
			ret[n++] = c;
	}
	free(sum);
	free(used);
	free(buf);
	return rc != 0 ? rc : (int)n;
}

int segread_region(const struct segread *s, uint64_t *ret_base, uint64_t *ret_size)
{
	struct scratch_seg_header h;
	uint64_t end;
	int rc;

	if (s->block_slots == 0)
		return -ENODATA;
	rc = src_read(&s->src, 0, &h, sizeof(h));
	if (rc != 0)
		return rc;
	if (h.region_base == 0 || h.region_size == 0)
		return -ENODATA;
	if (__builtin_add_overflow(h.region_base, h.region_size, &end) || h.region_base % 4096 != 0)
		return -EBADMSG;
	*ret_base = h.region_base;
	*ret_size = h.region_size;
	return 0;
}

/* An entry as the writer could have written it, inside [lo, hi). */
static bool block_ok(const struct scratch_seg_block *b, uint64_t lo, uint64_t hi)
{
	uint64_t end;

	if (b->state < SCRATCH_SEG_BLK_OWNED || b->state > SCRATCH_SEG_BLK_MAX)
		return false;
	if (b->capacity == 0 || b->start % 4096 != 0 || b->cls < 8 ||
	    b->cls >= SCRATCH_SEG_MAX_CLASSES)
		return false;
	if (__builtin_add_overflow(b->start, b->capacity, &end))
		return false;
	return b->start >= lo && end <= hi && b->owner >= 0 && b->lessee >= 0 && b->carver >= 0;
}

static void block_out(const struct scratch_seg_block *b, uint32_t id, struct segread_block *r)
{
	r->id = id;
	r->state = b->state;
	r->start = b->start;
	r->capacity = b->capacity;
	r->cls = b->cls;
	r->owner = b->owner;
	r->lessee = b->lessee;
	r->handovers = b->handovers;
	r->nfreers = b->nfreers;
	memcpy(r->freers, b->freers, sizeof(r->freers));
	r->growth = b->growth;
	r->carver = b->carver;
	for (unsigned i = b->nfreers; i < SCRATCH_SEG_BLOCK_FREERS; i++)
		r->freers[i] = 0;
}

#define BLOCK_CHUNK 1024u

/* One entry of a chunk that looked written: reread it alone until its seq
 * is even and unchanged. 0, -EAGAIN or -EIO. */
static int block_settle(const struct segread *s, uint32_t i, struct scratch_seg_block *b)
{
	return read_seq(s, s->blocks_off + (uint64_t)i * s->block_stride, b, sizeof(*b),
	                offsetof(struct scratch_seg_block, seq));
}

int segread_blocks(const struct segread *s, struct segread_block *ret, uint32_t max,
                   uint32_t *ret_n, uint32_t *ret_skipped)
{
	uint64_t base, size;
	uint32_t n = 0, skipped = 0;
	uint8_t *chunk;
	int rc = segread_region(s, &base, &size);

	if (rc != 0)
		return rc;
	chunk = malloc((size_t)BLOCK_CHUNK * s->block_stride);
	if (chunk == NULL)
		return -ENOMEM;
	for (uint32_t from = 0; from < s->block_slots && n < max; from += BLOCK_CHUNK) {
		uint32_t cnt =
		        s->block_slots - from < BLOCK_CHUNK ? s->block_slots - from : BLOCK_CHUNK;
		bool any = false;

		rc = src_read(&s->src, s->blocks_off + (uint64_t)from * s->block_stride, chunk,
		              (size_t)cnt * s->block_stride);
		if (rc != 0)
			goto out;
		for (uint32_t j = 0; j < cnt && n < max; j++) {
			struct scratch_seg_block b;

			memcpy(&b, chunk + (size_t)j * s->block_stride, sizeof(b));
			if (b.seq == 0)
				continue;
			any = true;
			rc = block_settle(s, from + j, &b);
			if (rc == -EIO)
				goto out;
			if (rc != 0 || !block_ok(&b, base, base + size)) {
				skipped++;
				continue;
			}
			block_out(&b, from + j + 1, &ret[n++]);
		}
		if (!any)
			break;
	}
	rc = 0;
out:
	free(chunk);
	*ret_n = n;
	if (ret_skipped != NULL)
		*ret_skipped = skipped;
	return rc;
}
