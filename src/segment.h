/*
 * segment.h - layout of the stats segment: the contract between libscratch,
 * which writes it (segment.c, trace.c), and every reader
 * (stats/segread/segread.c, used by scratchd and the fuzz target).
 *
 * Self-contained: it holds the counter blocks the segment lays out, the
 * owner kinds, the sequence counts that bracket every write and the totals
 * equation, and includes only the C library's fixed-width headers, so a
 * reader needs nothing of libscratch's internals (internal.h includes
 * this file, not the reverse).
 *
 * One file per process in the run directory, named
 * "<pid>-<nonce>.seg" (the nonce is the creation time in nanoseconds, so a
 * process that execs, or a reused pid, never collides with an older file).
 * Every field is fixed width and little-endian as the host writes it; a
 * reader checks the magic, the version and every offset and size against
 * the file's size before it trusts anything, and copies the layout out of
 * the header once (a hostile writer may change the file under it).
 *
 *   offset 0               struct scratch_seg_header      (header_size bytes)
 *   proc_off               struct scratch__proc_counters  (proc_size bytes)
 *   classes_off            struct scratch__proc_classes   (classes_size bytes)
 *   threads_off            thread_slots x struct scratch_seg_thread (thread_stride)
 *   owners_off             owner_slots x struct scratch_seg_owner  (owner_stride)
 *   ring_off               ring_slots x struct scratch_seg_record  (record_stride)
 *   file_size              end of file
 *
 * Sections are 64-byte aligned and do not overlap. A writer of a newer
 * minor layout may make strides larger than the structs below (readers use
 * the strides from the header); a change to the meaning of a field bumps
 * SCRATCH_SEG_VERSION.
 *
 * Pools off. A process whose pools could not start for a reason of its
 * environment (enum scratch_seg_pools_off) still has a segment when stats
 * are on, so the reason can be seen: pools_off says which, and the thread
 * table and the ring stay empty (no ring is laid out). enabled:false makes
 * no segment. SCRATCH_SEG_F_LOWERED says the pools run, but with max_size
 * lowered (the header's max_size) to fit the address space granted.
 * Version 1 files written before these fields existed hold zero in both
 * places (pools_off was a padding word, always zero), which means what
 * those writers did: pools on and max_size as configured, so the version
 * did not change. A reader refuses a reason above SCRATCH_SEG_OFF_MAX: a
 * new reason comes with a new version.
 *
 * Counters. A thread slot's counters are struct scratch__counters below
 * (seq bracket, single writer; remote_in, remote_in_bytes and
 * decayed_bytes are atomic adds by other threads). For one slot:
 *
 *   leased (reported)   = leased - remote_in_bytes
 *   retained (reported) = retained - decayed_bytes
 *
 * Process totals (what scratch_stats_total() reports; scratch_seg_totals()
 * below is this equation, for the writer and every reader):
 *
 *   X (process) = sum over slots in state LIVE or EXITED of X
 *               + proc->exited.X                 (threads already reclaimed)
 *   retained    = that sum + proc->depot_bytes + proc->orphan_retained
 *   leased      = that sum (reported leased) + proc->orphan_leased
 *
 * A slot in state EXITED is a thread that ended but whose slot the pool has
 * not reclaimed yet: its blocks may still be out, so its counters count.
 * When the pool reclaims the slot it folds the counters into proc->exited
 * (under its lock, inside proc->seq) before it attaches a new thread, so a
 * reader that reads proc and the slots at different times may count a
 * thread twice or not at all for one sample; it retries when proc->seq
 * moved across its reading.
 *
 * Size classes. A header of header_size >= the whole struct below has
 * class_count > 0 and carries per size class counters: class slot j is the
 * global class index class_first + j (four classes per power of two, of
 * capacity (5 + (i & 3)) << ((i >> 2) - 2) bytes). Each thread slot holds
 * a struct scratch__class_counters at slot_class_off within the slot (the
 * thread's, same seq bracket as its counters); classes_off holds the
 * process's struct scratch__proc_classes (live blocks per class, and the
 * class counters of reclaimed threads and orphans, inside proc->seq). With
 * class_count == 0 (older writers: the fields were not there, header_size
 * is smaller) a reader shows no per-class figures. For class k:
 *
 *   X[k] (process) = sum over LIVE/EXITED slots of k.X[k] + exited.X[k]
 *   requests[k]    = hits[k] + depot_hits[k] + misses[k]   (request class)
 *   lent[k]        = requests[k] + lent_adj[k]              (block class)
 *   leased[k]      = (lent[k] - frees[k]) x capacity(k)
 *   idle[k]        = (live[k] - (lent[k] - frees[k])) x capacity(k)
 *   sum over k of hits, depot_hits, misses, larger_hits, frees = the totals
 *
 * threads_high (in the same tail) bounds the thread slots ever attached,
 * so a reader need not read the whole table: with the class counters a
 * slot is 4.5 KiB, and the table of 1024 slots 4.4 MiB, most of it never
 * written (a sparse file).
 *
 * The version stayed 1 when these were added: no field changed meaning or
 * place. Old readers use the strides and offsets from the header, so a
 * longer header, a longer thread slot and a section between the process
 * counters and the thread table are invisible to them; new readers tell
 * an old file by header_size (and class_count 0) and show no classes.
 *
 * Trace ring. ring_head (in the header) is the number of sequence numbers
 * ever claimed; a writer claims s = ++ring_head (one atomic fetch_add) and
 * writes record s into slot (s - 1) & (ring_slots - 1):
 *
 *   seq = s; fence; fields, frames; check = scratch_seg_record_check(); seq_end = s (release)
 *
 * A reader copies the record and accepts it only when seq == seq_end == s
 * and check matches; seq_end < s means "claimed, not written yet"; any
 * other value means the record was overwritten (lost to wrap). Records
 * [1, ring_head - ring_slots] are gone for good.
 */
#ifndef SCRATCH_SEGMENT_H
#define SCRATCH_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCRATCH_SEG_MAGIC   UINT64_C(0x3130474553524353) /* "SCRSEG01" read as little-endian */
#define SCRATCH_SEG_VERSION 1
#define SCRATCH_SEG_SUFFIX  ".seg"

#define SCRATCH_SEG_EXE_LEN     256
#define SCRATCH_SEG_CMDLINE_LEN 512
#define SCRATCH_SEG_CONF_LEN    512
#define SCRATCH_SEG_NAME_LEN    16
#define SCRATCH_SEG_OWNER_LEN   32

/* Limits a reader enforces (a writer never goes beyond them). */
#define SCRATCH_SEG_MAX_THREADS 65536
#define SCRATCH_SEG_MAX_OWNERS  4096
#define SCRATCH_SEG_MAX_RING    (1u << 20)
#define SCRATCH_SEG_MAX_FRAMES  16
#define SCRATCH_SEG_MAX_SIZE    (UINT64_C(1) << 30)

#define SCRATCH_SEG_OWNER_SLOTS 256
#define SCRATCH_SEG_MAX_CLASSES 144 /* global class indices a reader accepts: [8, 144) */

#define SCRATCH_CACHELINE 64 /* sections, slots and counter groups are aligned on it */

/* ---------------------------------------------------------------------- */
/* Sequence counts                                                        */
/* ---------------------------------------------------------------------- */

/*
 * Relaxed single-writer counter updates, and the sequence bracket.
 *
 * A counter has one writer, so an update is a load and a store, never an
 * atomic read-modify-write. On x86-64 a plain `add` to memory is exactly
 * that, in one instruction, and an aligned 8-byte store is never torn, so
 * readers in other threads or processes see the old or the new value.
 * ThreadSanitizer cannot see inside inline assembly, so its builds use the
 * equivalent relaxed atomic load and store.
 */
#if defined(__SANITIZE_THREAD__)
#define SCRATCH__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SCRATCH__TSAN 1
#endif
#endif

#define SCRATCH__LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define SCRATCH__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#if defined(__x86_64__) && !defined(SCRATCH__TSAN)
#define SCRATCH__ADD(p, v) __asm__ volatile("addq %1, %0" : "+m"(*(p)) : "er"((uint64_t)(v)))
#define SCRATCH__SUB(p, v) __asm__ volatile("subq %1, %0" : "+m"(*(p)) : "er"((uint64_t)(v)))
#else
#define SCRATCH__ADD(p, v) SCRATCH__STORE((p), *(p) + (v))
#define SCRATCH__SUB(p, v) SCRATCH__STORE((p), *(p) - (v))
#endif

/* Fences, except under ThreadSanitizer, which does not model them (and gcc
 * warns about them there): its builds make the accesses themselves
 * sequentially consistent instead, which orders at least as strongly. */
#if defined(SCRATCH__TSAN)
#define SCRATCH__FENCE_RELEASE() ((void)0)
#define SCRATCH__FENCE_ACQUIRE() ((void)0)
#define SCRATCH__SEQ_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define SCRATCH__SEQ_LOAD(p)     __atomic_load_n((p), __ATOMIC_SEQ_CST)
#else
#define SCRATCH__FENCE_RELEASE() __atomic_thread_fence(__ATOMIC_RELEASE)
#define SCRATCH__FENCE_ACQUIRE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define SCRATCH__SEQ_LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#endif

/* Writer side of a sequence count: odd while the fields change. The
 * fences order the field stores between the two increments (on x86-64 they
 * only keep the compiler from moving stores). */
static inline void scratch__seq_begin(uint64_t *seq)
{
#if defined(SCRATCH__TSAN)
	/* an atomic read too: the sentinel caches share one dummy block */
	SCRATCH__SEQ_STORE(seq, __atomic_load_n(seq, __ATOMIC_RELAXED) + 1);
#else
	SCRATCH__ADD(seq, 1);
	SCRATCH__FENCE_RELEASE();
#endif
}

static inline void scratch__seq_end(uint64_t *seq)
{
#if defined(SCRATCH__TSAN)
	SCRATCH__SEQ_STORE(seq, __atomic_load_n(seq, __ATOMIC_RELAXED) + 1);
#else
	SCRATCH__FENCE_RELEASE();
	SCRATCH__ADD(seq, 1);
#endif
}

/* ---------------------------------------------------------------------- */
/* Counter blocks (the thread slots', the process's and the owners')      */
/* ---------------------------------------------------------------------- */

/*
 * One thread's pool counters. When stats are on they live in the thread's
 * slot of the stats segment, so publishing costs the fast path nothing.
 *
 * The owner thread writes the first group with relaxed stores, inside a
 * sequence count (odd while writing). Other threads add to the second group
 * with atomic adds (remote frees), outside the sequence count. The library
 * reads them with scratch__counters_read(), other processes with a copy
 * checked against seq (stats/segread/segread.c).
 *
 *   leased (reported)   = leased - remote_in_bytes
 *   retained (reported) = retained - decayed_bytes
 *   allocs = hits + depot_hits + misses
 *   larger_hits <= hits + depot_hits
 *   leased (reported) <= retained (reported)
 */
struct scratch__counters {
	uint64_t seq;
	uint64_t allocs;
	uint64_t hits;
	uint64_t depot_hits;
	uint64_t misses;
	uint64_t frees;
	uint64_t remote_out;
	uint64_t passthrough;
	uint64_t retained;
	uint64_t leased; /* gross: acquires minus own releases */
	uint64_t peak_leased;
	uint64_t growth_bytes; /* bytes of fresh blocks this thread grew */
	uint64_t larger_hits;  /* hits (cache or depot) on an idle block of a larger class */
	/* bytes of pages moved from this thread's idle blocks into its new
	 * ones, not faulted again (a padding word before: 0 from older writers) */
	uint64_t moved_bytes;
	/* bytes of new pages its leases populated in one call each ahead of
	 * the write (MADV_POPULATE_WRITE) instead of faulting them one at a
	 * time (a padding word before: 0 from older writers) */
	uint64_t populated_bytes;
	uint64_t pad0[1];
	/* written by other threads (atomic add), on their own cache line */
	uint64_t remote_in __attribute__((aligned(SCRATCH_CACHELINE)));
	uint64_t remote_in_bytes;
	/* idle blocks the decay pass took out of this thread's cache while the
	 * thread was elsewhere (their pages returned, or the depot's now) */
	uint64_t decayed_bytes;
	uint64_t pad1[5];
};

/*
 * Per size class counters of one thread, indexed by global class index
 * minus SCRATCH__CLS_FIRST (the class of 16 KiB, the smallest min_size;
 * SCRATCH__CLS_COUNT classes reach 64 GiB). They follow the thread's
 * struct scratch__counters in memory (struct scratch__thread_counters), so
 * the hit and release fast paths reach them from the counter pointer they
 * hold with one add each. Same writers and sequence count as the counters.
 * By the class of the request:
 *   hits, depot_hits, misses, larger_hits    (as in struct scratch__counters)
 * by the class of the block:
 *   frees                                    (releases by this thread)
 *   lent_adj: blocks lent of class k = hits + depot_hits + misses + lent_adj
 *             (mod 2^64: a request served by a block of another class
 *             subtracts one from its class and adds one to the block's)
 * Summed over classes, hits, depot_hits, misses, larger_hits and frees are
 * the thread's totals.
 */
#define SCRATCH__CLS_FIRST 55
#define SCRATCH__CLS_COUNT 89

struct scratch__class_counters {
	uint64_t hits[SCRATCH__CLS_COUNT];
	uint64_t depot_hits[SCRATCH__CLS_COUNT];
	uint64_t misses[SCRATCH__CLS_COUNT];
	uint64_t larger_hits[SCRATCH__CLS_COUNT];
	uint64_t frees[SCRATCH__CLS_COUNT];
	uint64_t lent_adj[SCRATCH__CLS_COUNT];
};

struct scratch__thread_counters {
	struct scratch__counters c;
	struct scratch__class_counters k;
};

/* The class counters that follow c (every counter block the pools write
 * is the first member of a struct scratch__thread_counters). */
static inline struct scratch__class_counters *scratch__cls(struct scratch__counters *c)
{
	return &((struct scratch__thread_counters *)c)->k;
}

/* The counter of global class index cls in one of k's arrays (arr, a
 * member name). The index is computed in 64 bits, so that the compiler
 * folds the class offset into the displacement: one add on the fast paths. */
#define SCRATCH__CLS_AT(k, arr, cls) (&(k)->arr[(uintptr_t)(cls) - (uintptr_t)SCRATCH__CLS_FIRST])

/* Per class, process-wide (pool.c, under its lock, inside proc->seq):
 * live[k], blocks of class k not EMPTY (leased, cached, remote or in the
 * depot); exited, the class counters of reclaimed threads and of the
 * orphan path. */
struct scratch__proc_classes {
	uint64_t live[SCRATCH__CLS_COUNT];
	struct scratch__class_counters exited;
};

/* Process-wide counters (held by pool.c under its lock; in the segment when
 * stats are on). Same sequence-count protocol, one writer at a time. */
struct scratch__proc_counters {
	uint64_t seq;
	struct scratch__counters exited; /* folded counters of reclaimed threads */
	uint64_t exited_threads;         /* threads folded into exited */
	uint64_t threads_seen;           /* threads that ever used the pools */
	uint64_t depot_bytes;            /* idle bytes in the depot */
	uint64_t depot_blocks;
	uint64_t orphan_leased; /* lent to threads without a cache slot */
	uint64_t orphan_retained;
	uint64_t trimmed;      /* bytes returned to the OS */
	uint64_t region_bytes; /* address space reserved */
	uint64_t region_used;  /* address space carved into blocks */
};

/* What an owner slot holds (struct scratch_seg_owner kind). */
enum scratch__owner_kind {
	SCRATCH__OWNER_ARENA = 1,
	SCRATCH__OWNER_WORKSPACE = 2,
	SCRATCH__OWNER_WORKERS = 3,
};

/* Counters of one owner (in its slot of the owner table); written by the owner's code (single writer per
 * field group, relaxed stores inside seq). */
struct scratch__owner_counters {
	uint64_t seq;
	uint64_t retained;
	uint64_t leased;
	uint64_t panel_bytes;
	uint64_t growths;
	uint64_t dispatches;
	uint64_t parks;
	uint64_t wakes;
	uint64_t workers;
};

/* ---------------------------------------------------------------------- */
/* Process totals                                                         */
/* ---------------------------------------------------------------------- */

/* Retained and leased as reported, for one counter block (see "Counters"
 * above). A hostile or torn block can only give 0, never wrap. */
static inline uint64_t scratch_seg_retained(const struct scratch__counters *c)
{
	return c->retained >= c->decayed_bytes ? c->retained - c->decayed_bytes : 0;
}

static inline uint64_t scratch_seg_leased(const struct scratch__counters *c)
{
	return c->leased >= c->remote_in_bytes ? c->leased - c->remote_in_bytes : 0;
}

/* The process's figures, as scratch_seg_totals() sums them. */
struct scratch_seg_totals {
	uint64_t allocs, hits, depot_hits, misses, larger_hits, frees;
	uint64_t remote_in, remote_out, passthrough;
	uint64_t retained, leased, peak_leased, growth_bytes;
	uint64_t trimmed, threads_seen, exited_threads, depot_bytes;
	uint64_t moved_bytes, populated_bytes;
};

/* Stores the next counted thread's counters (a consistent copy of a slot
 * in state LIVE or EXITED) in ret and returns true; false after the last. */
typedef bool (*scratch_seg_next_fn)(void *ctx, struct scratch__counters *ret);

static inline void scratch_seg_totals_add(struct scratch_seg_totals *t,
                                          const struct scratch__counters *c)
{
	t->allocs += c->allocs;
	t->hits += c->hits;
	t->depot_hits += c->depot_hits;
	t->misses += c->misses;
	t->larger_hits += c->larger_hits;
	t->frees += c->frees;
	t->remote_in += c->remote_in;
	t->remote_out += c->remote_out;
	t->passthrough += c->passthrough;
	t->retained += scratch_seg_retained(c);
	t->leased += scratch_seg_leased(c);
	t->peak_leased += c->peak_leased;
	t->growth_bytes += c->growth_bytes;
	t->moved_bytes += c->moved_bytes;
	t->populated_bytes += c->populated_bytes;
}

/*
 * The process totals equation of "Counters" above, in one place: the
 * counted slots that next() hands out, plus proc (its reclaimed threads,
 * the depot and the orphans; NULL when the reader has none). The library's
 * scratch_stats_total() and stats/segread/segread.c's segread_totals() both sum
 * with it, so the figures a reader shows are the library's own.
 */
static inline void scratch_seg_totals(struct scratch_seg_totals *ret, scratch_seg_next_fn next,
                                      void *ctx, const struct scratch__proc_counters *proc)
{
	const struct scratch_seg_totals zero = {0};
	struct scratch__counters c;

	*ret = zero;
	while (next(ctx, &c))
		scratch_seg_totals_add(ret, &c);
	if (proc == NULL)
		return;
	scratch_seg_totals_add(ret, &proc->exited);
	ret->retained += proc->depot_bytes + proc->orphan_retained;
	ret->leased += proc->orphan_leased;
	ret->trimmed = proc->trimmed;
	ret->threads_seen = proc->threads_seen;
	ret->exited_threads = proc->exited_threads;
	ret->depot_bytes = proc->depot_bytes;
}

/* Slot states (threads and owners). */
enum scratch_seg_state {
	SCRATCH_SEG_FREE = 0,   /* never used */
	SCRATCH_SEG_LIVE = 1,   /* thread running / owner registered */
	SCRATCH_SEG_EXITED = 2, /* thread ended, counters still count / owner gone */
	SCRATCH_SEG_BUSY = 3,   /* being (re)initialised: skip */
};

/* Header flags. */
#define SCRATCH_SEG_F_TRACE   1u /* the trace ring is written */
#define SCRATCH_SEG_F_KEEP    2u /* keep_segment: the file outlives the process */
#define SCRATCH_SEG_F_LOWERED 4u /* max_size lowered to fit the address space granted */

/* Why the pools are off (header pools_off): conditions of the environment,
 * which the library records here instead of printing them. */
enum scratch_seg_pools_off {
	SCRATCH_SEG_POOLS_ON = 0,
	SCRATCH_SEG_OFF_AS_LIMIT = 1,  /* ulimit -v leaves less than 4 x 1 GiB */
	SCRATCH_SEG_OFF_RESERVE = 2,   /* the kernel would not reserve even 1 GiB */
	SCRATCH_SEG_OFF_NOMEM = 3,     /* no memory for the pools' own tables */
	SCRATCH_SEG_OFF_PAGE_SIZE = 4, /* the page size is not 4 KiB */
};
#define SCRATCH_SEG_OFF_MAX SCRATCH_SEG_OFF_PAGE_SIZE

struct scratch_seg_header {
	uint64_t magic; /* SCRATCH_SEG_MAGIC, stored last when the file is created */
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;
	int32_t pid;
	int32_t ppid;
	uint32_t uid;
	uint32_t flags;       /* SCRATCH_SEG_F_* */
	uint64_t start_ticks; /* /proc/PID/stat field 22: guards against pid reuse */
	uint64_t created_ns;  /* CLOCK_REALTIME */
	uint32_t exited;      /* 1 once the process ran its destructors */
	uint32_t forks;       /* >0: this segment was copied from the parent's at fork */
	uint64_t exit_ns;     /* CLOCK_REALTIME at exit, 0 while running */

	/* configuration in force */
	uint64_t min_size;
	uint64_t max_size;
	uint64_t trace_frames;

	/* layout: byte offsets from the start of the file */
	uint64_t proc_off;
	uint64_t proc_size;
	uint64_t threads_off;
	uint32_t thread_slots;
	uint32_t thread_stride;
	uint64_t owners_off;
	uint32_t owner_slots;
	uint32_t owner_stride;
	uint64_t ring_off;
	uint32_t ring_slots; /* power of two, or 0 without tracing */
	uint32_t record_stride;
	uint32_t record_frames; /* frames[] capacity of each record */
	uint32_t pools_off;     /* enum scratch_seg_pools_off; 0 while the pools run */

	/* the trace ring's claim counter, on a line of its own */
	uint64_t ring_head __attribute__((aligned(SCRATCH_CACHELINE)));
	uint64_t pad1[7];

	char exe[SCRATCH_SEG_EXE_LEN];         /* NUL-terminated, truncated */
	char cmdline[SCRATCH_SEG_CMDLINE_LEN]; /* arguments joined by spaces */
	char conf[SCRATCH_SEG_CONF_LEN];       /* "key:value,..." as in force */

	/* per size class counters (see "Size classes"); 0 without them */
	uint32_t class_first;    /* global class index of class slot 0 */
	uint32_t class_count;    /* class slots (SCRATCH__CLS_COUNT) */
	uint32_t slot_class_off; /* struct scratch__class_counters within a thread slot */
	uint32_t threads_high;   /* slots [threads_high, thread_slots) were never used */
	uint64_t classes_off;    /* struct scratch__proc_classes */
	uint64_t classes_size;

	/* the pools' region and block table (see "Block table"); 0 without */
	uint64_t region_base; /* written once the region is reserved */
	uint64_t region_size;
	uint64_t blocks_off; /* block_slots x struct scratch_seg_block (block_stride) */
	uint32_t block_slots;
	uint32_t block_stride;
};

struct scratch_seg_thread {
	uint32_t state; /* enum scratch_seg_state */
	int32_t tid;
	uint32_t generation; /* bumped at each attach: a reused slot is a new thread */
	uint32_t pad0;
	uint64_t attach_ns; /* CLOCK_REALTIME */
	uint64_t exit_ns;
	char name[SCRATCH_SEG_NAME_LEN]; /* comm at attach (readers may refresh it) */
	uint64_t pad1[2];
	struct scratch__counters c;       /* 64-byte aligned */
	struct scratch__class_counters k; /* right after c: the fast paths reach it from &c */
	uint64_t pad2[2];
};

struct scratch_seg_owner {
	uint32_t state; /* enum scratch_seg_state */
	uint32_t kind;  /* enum scratch__owner_kind */
	uint32_t id;    /* slot index + 1 (what growth records name) */
	uint32_t generation;
	uint64_t created_ns;
	char name[SCRATCH_SEG_OWNER_LEN];
	uint64_t pad[1];
	struct scratch__owner_counters c;
};

struct scratch_seg_record {
	uint64_t seq;     /* claimed sequence number, written first */
	uint64_t time_ns; /* CLOCK_REALTIME */
	uint64_t bytes;
	int32_t tid;
	uint32_t cls;
	int32_t cpu;       /* -1: unknown */
	int32_t node;      /* -1: unknown */
	uint32_t owner;    /* 0: the plain pool, else an owner id */
	uint32_t nframes;  /* valid entries of frames[] */
	uint64_t check;    /* scratch_seg_record_check() */
	uint64_t seq_end;  /* == seq once the record is complete */
	uint64_t frames[]; /* return addresses, innermost first */
};

_Static_assert(sizeof(struct scratch_seg_header) % SCRATCH_CACHELINE == 0, "header alignment");
_Static_assert(sizeof(struct scratch_seg_thread) % SCRATCH_CACHELINE == 0, "slot alignment");
_Static_assert(__builtin_offsetof(struct scratch_seg_thread, k) ==
                       __builtin_offsetof(struct scratch_seg_thread, c) +
                               __builtin_offsetof(struct scratch__thread_counters, k),
               "class counters follow the counters as in struct scratch__thread_counters");
_Static_assert(sizeof(struct scratch_seg_record) == 64, "record header size");

/* Hash of a record's payload (everything but check and seq_end, plus
 * nframes frames): a record torn by two writers fails it. */
static inline uint64_t scratch_seg_record_check(const struct scratch_seg_record *r,
                                                const uint64_t *frames, uint32_t nframes)
{
	const uint64_t w[6] = {r->seq,
	                       r->time_ns,
	                       r->bytes,
	                       (uint64_t)(uint32_t)r->tid | (uint64_t)r->cls << 32,
	                       (uint64_t)(uint32_t)r->cpu | (uint64_t)(uint32_t)r->node << 32,
	                       (uint64_t)r->owner | (uint64_t)r->nframes << 32};
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (unsigned i = 0; i < 6 + nframes; i++) {
		uint64_t v = i < 6 ? w[i] : frames[i - 6];

		h ^= v;
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	return h;
}

/*
 * Block table (for the locality audit). The header's blocks_off, when not
 * 0, holds block_slots entries of block_stride bytes, after every other
 * section; entry id - 1 describes pool block id (ids count up from 1 as
 * blocks are carved; blocks beyond block_slots are not described). The
 * region is [region_base, region_base + region_size); both are 0 until the
 * pools reserved it (stored once, release order, after the file was
 * published), so a reader reads them with the table, not at open.
 *
 * The pool writes an entry on its slow paths only, never on the hit path
 * or the release fast path: when a thread leases a block from the slow
 * path (carved, from the depot, from a larger class, after a drain), when
 * a thread frees a block it does not own (before it pushes it to the
 * owner), when a block goes to the depot and when its pages go back to the
 * OS. Each of these happens while the writing thread alone holds the block
 * (a lease, a free, or g.lock), so an entry has one writer at a time;
 * seq brackets the write (odd while inside) and a reader retries as for a
 * thread slot. A state change made by a fast path (CACHED <-> LEASED in
 * the owner's cache) is not written: OWNED covers both.
 *
 * Threads are named by tid, not by thread slot: a slot is reused once its
 * thread has gone, a tid is what /proc, the fault samples and the growth
 * trace name. A reader maps tids to slots through the thread table when it
 * wants one.
 *
 *   state     SCRATCH_SEG_BLK_* below, as of the last slow-path event
 *   owner     tid whose cache owns the block, or owned it last (DEPOT,
 *             EMPTY); 0 when no cache ever did (orphan leases only)
 *   lessee    tid of the last lessee when it is not the owner, else 0
 *   freers    the first SCRATCH_SEG_BLOCK_FREERS distinct tids that freed
 *             the block remotely since its pages were last returned;
 *             nfreers counts them all (distinct as far as the list can tell)
 *   handovers times the owner changed (depot reuse, cross-thread reuse)
 *   growth    the trace ring's sequence number of the growth record the
 *             block's last carve wrote (0: no trace, or the ring was off),
 *             which names the call site; carver the tid that carved it
 *
 * An older writer has zeros where these fields are (they were padding):
 * no table. A forked child's table starts empty (its new file from the
 * prefork snapshot) or as a copy of its parent's.
 */
#define SCRATCH_SEG_BLOCK_SLOTS  16384 /* entries a writer lays out (2 MiB, sparse) */
#define SCRATCH_SEG_MAX_BLOCKS   (1u << 20)
#define SCRATCH_SEG_BLOCK_FREERS 4

enum scratch_seg_block_state {
	SCRATCH_SEG_BLK_NONE = 0,   /* never carved */
	SCRATCH_SEG_BLK_OWNED = 1,  /* leased, or idle in its owner's cache */
	SCRATCH_SEG_BLK_REMOTE = 2, /* freed by another thread (maybe back in the cache since) */
	SCRATCH_SEG_BLK_DEPOT = 3,  /* idle in the depot, no owner */
	SCRATCH_SEG_BLK_EMPTY = 4,  /* pages returned to the OS, address kept */
};
#define SCRATCH_SEG_BLK_MAX SCRATCH_SEG_BLK_EMPTY

struct scratch_seg_block {
	uint64_t seq; /* odd while written */
	uint64_t start;
	uint64_t capacity;
	uint32_t cls;
	uint32_t state; /* enum scratch_seg_block_state */
	int32_t owner;
	int32_t lessee;
	uint32_t handovers;
	uint32_t nfreers;
	int32_t freers[SCRATCH_SEG_BLOCK_FREERS];
	uint64_t growth; /* ring sequence number of the growth record of its carve */
	int32_t carver;  /* tid that carved it last */
	uint32_t pad0;
	uint64_t pad[6];
};
_Static_assert(sizeof(struct scratch_seg_block) == 128, "block entry size");

/* Record stride for a number of frames (64-byte multiple). */
static inline uint32_t scratch_seg_record_stride(uint32_t frames)
{
	uint32_t n = (uint32_t)sizeof(struct scratch_seg_record) + frames * 8u;

	return (n + SCRATCH_CACHELINE - 1) & ~(uint32_t)(SCRATCH_CACHELINE - 1);
}

#endif /* SCRATCH_SEGMENT_H */
