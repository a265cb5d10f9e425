/*
 * segread.h - the stats segment reader shared by scratchd, its tests and
 * the fuzz target.
 *
 * A segment is untrusted input: another process (or a hostile file in the
 * run directory) may hold any bytes, change them while they are read, or
 * truncate the file. So the reader never maps it: it copies with pread()
 * (a truncated file gives a short read, not SIGBUS), validates the header
 * once, keeps its own copy of the layout, and bounds every later read by
 * that copy. Every function returns 0 or a negative errno and fills an
 * error text for the caller to log.
 */
#ifndef SCRATCH_STATS_SEGREAD_H
#define SCRATCH_STATS_SEGREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The format's specification, by its path: no stats target has src/ on its
 * include path (stats/local.mk), so this is the one header of the library
 * the stats code sees. */
#include "../../src/segment.h"

/* Where the bytes come from: a descriptor (fd >= 0) or a buffer. */
struct segread_src {
	int fd;
	const uint8_t *mem;
	size_t mem_size;
};

/* The validated layout, copied out of the header. */
struct segread {
	struct segread_src src;
	uint64_t file_size;
	uint32_t version;
	uint32_t flags;
	uint32_t pools_off; /* enum scratch_seg_pools_off, at most SCRATCH_SEG_OFF_MAX */
	int32_t pid;
	int32_t ppid;
	uint32_t uid;
	uint32_t forks;
	uint64_t start_ticks;
	uint64_t created_ns;
	uint64_t min_size, max_size, trace_frames;
	uint64_t proc_off, proc_size;
	uint64_t threads_off;
	uint32_t thread_slots, thread_stride;
	uint64_t owners_off;
	uint32_t owner_slots, owner_stride;
	uint64_t ring_off;
	uint32_t ring_slots, record_stride, record_frames;
	/* per size class counters (segment.h "Size classes"); class_count 0:
	 * the writer has none (an older one) */
	uint32_t class_first, class_count, slot_class_off;
	uint64_t classes_off, classes_size;
	/* the block table (segment.h "Block table"); block_slots 0: none */
	uint64_t blocks_off;
	uint32_t block_slots, block_stride;
	char exe[SCRATCH_SEG_EXE_LEN];
	char cmdline[SCRATCH_SEG_CMDLINE_LEN];
	char conf[SCRATCH_SEG_CONF_LEN];
	/* How often a seqlocked read (a slot, the process counters) is retried
	 * while its writer is inside, before it gives -EAGAIN; segread_open()
	 * sets SEGREAD_RETRIES. A reader facing a segment whose sequence words
	 * stay odd (a hostile writer) lowers it to bound its time. */
	unsigned retries;
};

#define SEGREAD_RETRIES 16

/* What changes in the header while the process runs. */
struct segread_dyn {
	uint32_t exited;
	uint64_t exit_ns;
	uint64_t ring_head;
};

struct segread_thread {
	uint32_t index;
	uint32_t state; /* SCRATCH_SEG_LIVE or SCRATCH_SEG_EXITED */
	uint32_t generation;
	int32_t tid;
	uint64_t attach_ns, exit_ns;
	char name[SCRATCH_SEG_NAME_LEN + 1];
	struct scratch__counters c;
};

struct segread_owner {
	uint32_t index, state, kind, id, generation;
	uint64_t created_ns;
	char name[SCRATCH_SEG_OWNER_LEN + 1];
	struct scratch__owner_counters c;
};

struct segread_record {
	uint64_t seq, time_ns, bytes;
	int32_t tid;
	uint32_t cls;
	int32_t cpu, node;
	uint32_t owner, nframes;
	uint64_t frames[SCRATCH_SEG_MAX_FRAMES];
};

/* Validate the header of a segment of file_size bytes and copy its layout
 * into ret. -ENODATA: not published yet (no magic), -EBADMSG: corrupt or
 * hostile (err says what), -EIO: read error. */
int segread_open(const struct segread_src *src, uint64_t file_size, struct segread *ret, char *err,
                 size_t errlen);

int segread_dyn(const struct segread *s, struct segread_dyn *ret);

/* Slot i. -ENOENT: free slot, -EAGAIN: being written (try later),
 * -EINVAL: i out of range, -EIO. */
int segread_thread(const struct segread *s, uint32_t i, struct segread_thread *ret);
int segread_owner(const struct segread *s, uint32_t i, struct segread_owner *ret);
/* used[i] = whether thread slot i is in use, for every slot, from a few
 * large reads (cheaper than asking slot by slot). */
int segread_threads_used(const struct segread *s, bool *used);
int segread_proc(const struct segread *s, struct scratch__proc_counters *ret);

typedef void (*segread_record_fn)(void *ctx, const struct segread_record *r);

/*
 * Deliver the complete records from *next (a sequence number, >= 1) to the
 * ring's head, at most max of them, to fn, and advance *next. Records that
 * wrapped away or were torn are added to *lost. A record claimed but not
 * written yet stops the drain (returns -EAGAIN with *next on it) unless
 * force is true (then it counts as lost): a caller passes force when the
 * same record stayed unwritten for a while or the process is gone.
 */
int segread_drain(const struct segread *s, uint64_t *next, uint64_t *lost, uint64_t max, bool force,
                  segread_record_fn fn, void *ctx);

/* The stable snake_case name of a pools-off reason ("address_space_limit"),
 * NULL for SCRATCH_SEG_POOLS_ON and for codes this reader does not know. */
const char *segread_pools_off_name(uint32_t pools_off);

/* One size class of a process, by segment.h's "Size classes" equations.
 * requests, hits, depot_hits, larger_hits and misses count requests of
 * this class; frees, lent, live_blocks and the bytes count blocks of it. */
struct segread_class {
	uint32_t cls;      /* global class index */
	uint64_t capacity; /* bytes of one block of the class */
	uint64_t requests, hits, depot_hits, larger_hits, misses;
	uint64_t frees, lent, live_blocks, leased_blocks;
	uint64_t leased_bytes, idle_bytes;
};

/* Capacity in bytes of global class index cls (>= 8): four classes per
 * power of two. */
static inline uint64_t segread_class_capacity(uint32_t cls)
{
	return (uint64_t)(5 + (cls & 3)) << ((cls >> 2) - 2);
}

/*
 * The process's size classes that saw any request or hold any block, in
 * class order, at most max of them (SCRATCH_SEG_MAX_CLASSES always
 * suffices), from the live and exited thread slots and the process's
 * class section, read so that a thread is counted once (retried while
 * proc->seq moves). Returns how many were stored, -ENODATA when the
 * segment has no class counters, -EAGAIN when a writer stayed inside,
 * -ENOMEM, -EIO.
 */
int segread_classes(const struct segread *s, struct segread_class *ret, uint32_t max);

/* One entry of the block table, validated (segment.h "Block table"). */
struct segread_block {
	uint32_t id;    /* the pool's block id (entry index + 1) */
	uint32_t state; /* SCRATCH_SEG_BLK_OWNED .. SCRATCH_SEG_BLK_EMPTY */
	uint64_t start, capacity;
	uint32_t cls;
	int32_t owner, lessee; /* tids, 0: none */
	uint32_t handovers, nfreers;
	int32_t freers[SCRATCH_SEG_BLOCK_FREERS]; /* min(nfreers, FREERS) valid */
	uint64_t growth; /* the carve's growth record (sequence number), 0: none */
	int32_t carver;  /* tid that carved it, 0: unknown */
};

/*
 * The pools' region: -ENODATA when the segment has no block table or the
 * region is not reserved yet, -EBADMSG for bounds that wrap.
 */
int segread_region(const struct segread *s, uint64_t *ret_base, uint64_t *ret_size);

/*
 * The described blocks of the table, in id order, at most max of them
 * into ret (*ret_n of them). Reads in chunks and stops at the first chunk
 * with no entry ever written (blocks are carved in id order). An entry a
 * writer stays inside (seq odd or moving after s->retries tries) or whose
 * fields are not a block inside region (a hostile writer) is left out
 * and counted in *ret_skipped (may be NULL). Returns 0, -ENODATA (no
 * table), -ENOMEM, -EIO.
 */
int segread_blocks(const struct segread *s, struct segread_block *ret, uint32_t max,
                   uint32_t *ret_n, uint32_t *ret_skipped);

/* Process totals as segment.h defines them (scratch_seg_totals()), from a
 * slot snapshot. */
struct segread_totals {
	uint64_t allocs, hits, depot_hits, misses, frees, remote_in, remote_out, passthrough;
	uint64_t retained, leased, peak_leased, growth_bytes, moved_bytes, populated_bytes, trimmed;
	uint64_t threads_live, threads_exited, threads_seen, depot_bytes;
};
void segread_totals(const struct segread_thread *t, size_t n,
                    const struct scratch__proc_counters *proc, struct segread_totals *ret);

/* retained as reported: gross retained minus the idle blocks a decay pass
 * took out of the thread's cache while it was elsewhere. */
static inline uint64_t segread_retained(const struct scratch__counters *c)
{
	return scratch_seg_retained(c);
}

/* leased as reported: gross leased minus what other threads freed back. */
static inline uint64_t segread_leased(const struct scratch__counters *c)
{
	return scratch_seg_leased(c);
}

#endif /* SCRATCH_STATS_SEGREAD_H */
