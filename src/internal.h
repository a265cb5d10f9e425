/*
 * internal.h - names shared between libscratch's own files (scratch__*).
 *
 * Nothing here is installed. It holds the parsed configuration, the OS
 * layer (os.c is the only file that calls mmap, madvise, futex and getcpu),
 * the per-thread counter block the pools write, and the hooks through which
 * the pools publish into the stats segment (segment.c, trace.c).
 */
#ifndef SCRATCH_INTERNAL_H
#define SCRATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "scratch.h"

#define SCRATCH_HIDDEN __attribute__((visibility("hidden")))
#define SCRATCH_COLD   __attribute__((cold, noinline))
#define likely(x)      __builtin_expect(!!(x), 1)
#define unlikely(x)    __builtin_expect(!!(x), 0)

#define SCRATCH_CACHELINE 64

/* ---------------------------------------------------------------------- */
/* Configuration (conf.c)                                                 */
/* ---------------------------------------------------------------------- */

struct scratch__conf {
	bool enabled;          /* false: pools refuse everything (shim passes through) */
	uint64_t min_size;     /* smallest pooled request, bytes (>= 16 KiB) */
	uint64_t max_size;     /* largest pooled request, bytes */
	uint64_t cache_count;  /* blocks per size class in one thread's cache */
	uint64_t cache_bytes;  /* idle bytes in one thread's cache */
	uint64_t depot_bytes;  /* idle bytes in the process-wide depot */
	uint64_t max_fit;      /* an idle block serves requests down to 1/max_fit of its size */
	uint64_t decay_ms;     /* idle pages go back to the OS after this long; 0: never */
	bool decay_thread;     /* a helper thread decays while the host makes no calls */
	uint64_t reserve;      /* address space reserved for pool blocks */
	bool thp;              /* madvise(MADV_HUGEPAGE) on blocks >= 2 MiB */
	bool stats;            /* publish counters in the stats segment */
	bool trace;            /* record growths in the segment's trace ring */
	uint64_t trace_frames; /* call-site frames per growth record (0..16) */
	uint64_t trace_ring;   /* growth records the ring holds (power of two) */
	uint64_t max_threads;  /* thread slots (threads beyond share a slow path) */
	bool keep_segment;     /* keep the segment file after exit */
	bool inherit;          /* children keep LD_PRELOAD of the shim */
	bool per_node;         /* depot lists per NUMA node; caches follow their thread's node */
	bool verbose;          /* print conditions of the environment too */
};

/* The defaults, as documented in libscratch(3). */
SCRATCH_HIDDEN void scratch__conf_defaults(struct scratch__conf *conf);

/* Called once per problem found by scratch__conf_parse, with one line of
 * text (no newline). */
typedef void (*scratch__conf_warn_fn)(void *ctx, const char *line);

/*
 * Parse a SCRATCH_CONF string into conf (which holds the defaults or
 * earlier values). Pure: no I/O, no allocation. Unknown keys and bad values
 * call warn once each and leave the field unchanged. Returns the number of
 * problems found.
 */
SCRATCH_HIDDEN int scratch__conf_parse(const char *s, struct scratch__conf *conf,
                                       scratch__conf_warn_fn warn, void *ctx);

/*
 * The value of one of the other SCRATCH_* variables (SCRATCH_THREADS,
 * SCRATCH_SPIN: whole numbers) from value, its text in the environment,
 * parsed by the rules of the SCRATCH_CONF table. -1 when value is NULL or
 * empty, when name is not one of them, or when value is invalid (then warn
 * is called once with the line, which ends "using the default"). Pure.
 */
SCRATCH_HIDDEN int64_t scratch__conf_env(const char *name, const char *value,
                                         scratch__conf_warn_fn warn, void *ctx);

/* Parse a size with an optional K, M, G or T suffix (powers of 1024). */
SCRATCH_HIDDEN bool scratch__parse_size(const char *s, size_t len, uint64_t *ret);

/* Look a key up in a parsed configuration (booleans as 0/1). */
SCRATCH_HIDDEN int scratch__conf_lookup(const struct scratch__conf *conf, const char *key,
                                        uint64_t *ret_value);

/* Render conf as "key:value,..." into buf (always NUL-terminated). */
SCRATCH_HIDDEN size_t scratch__conf_format(const struct scratch__conf *conf, char *buf, size_t len);

/* The configuration in force (valid after scratch__init()). */
SCRATCH_HIDDEN const struct scratch__conf *scratch__conf(void);

/* ---------------------------------------------------------------------- */
/* Diagnostics without malloc or stdio (conf.c)                           */
/* ---------------------------------------------------------------------- */

/* Write "scratch: <msg>\n" to stderr with one write(2); never allocates.
 * For what the user did (a bad SCRATCH_CONF entry, a bad SCRATCH_THREADS):
 * the user can fix it, so it is always said. */
SCRATCH_HIDDEN void scratch__warn(const char *msg);
/* The same for a condition of the environment the host runs in (an
 * address-space limit, a run directory that belongs to someone else, a
 * full tmpfs): printed only under verbose:true, since the host's stderr is
 * not ours to write on for what its user did not cause. What it says is
 * recorded in the stats segment where there is one. */
SCRATCH_HIDDEN void scratch__env_warn(const struct scratch__conf *conf, const char *msg);

/* Tiny formatter: appends to buf at *pos, never past len-1, NUL-terminates. */
SCRATCH_HIDDEN void scratch__fmt_str(char *buf, size_t len, size_t *pos, const char *s);
SCRATCH_HIDDEN void scratch__fmt_u64(char *buf, size_t len, size_t *pos, uint64_t v);
SCRATCH_HIDDEN void scratch__fmt_size(char *buf, size_t len, size_t *pos, uint64_t v);
/* Appends 'the first n bytes of s', at most 64 of them (then "..."), each
 * byte that is not printable ASCII as '?': user input never puts control
 * characters on a terminal. */
SCRATCH_HIDDEN void scratch__fmt_quoted(char *buf, size_t len, size_t *pos, const char *s,
                                        size_t n);

/* ---------------------------------------------------------------------- */
/* OS layer (os.c)                                                        */
/* ---------------------------------------------------------------------- */

/* Reserve size bytes of read-write address space aligned on align (a power
 * of two), without committing swap (MAP_NORESERVE). NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_reserve(size_t size, size_t align);
/* Anonymous read-write memory for metadata; NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_map(size_t size);
SCRATCH_HIDDEN void scratch__os_unmap(void *p, size_t size);
/* Map size bytes of fd shared; read-only when !writable; at addr when addr
 * is not NULL (MAP_FIXED: replaces what is there). NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_map_file(int fd, size_t size, bool writable, void *addr);
/* Move the mapping [from, from + size) to to, replacing what is there
 * (mremap MREMAP_FIXED). 0 or -errno; on failure nothing moved. */
SCRATCH_HIDDEN int scratch__os_move(void *from, void *to, size_t size);
/* An anonymous file (memfd, close-on-exec) of size bytes: the fd, or -errno. */
SCRATCH_HIDDEN int scratch__os_memfd(const char *name, size_t size);
/* Directory entries of fd into buf as struct linux_dirent64 records
 * (getdents64, which allocates nothing, unlike readdir): bytes read, 0 at
 * the end, or -errno. */
SCRATCH_HIDDEN long scratch__os_getdents(int fd, void *buf, size_t len);
/* Give the pages back; the range stays mapped and reads as zero. */
SCRATCH_HIDDEN void scratch__os_decommit(void *p, size_t size);
/* Ask for transparent huge pages on the range, or (on false) for none;
 * best effort. */
SCRATCH_HIDDEN void scratch__os_hugepage(void *p, size_t size, bool on);
/* Address space left under RLIMIT_AS (ulimit -v), or UINT64_MAX without a limit. */
SCRATCH_HIDDEN uint64_t scratch__os_as_room(void);
/* futex on a 32-bit word; wait returns 0 or -errno (EAGAIN, EINTR, ETIMEDOUT). */
SCRATCH_HIDDEN int scratch__os_futex_wait(uint32_t *addr, uint32_t expected, long timeout_ns);
SCRATCH_HIDDEN void scratch__os_futex_wake(uint32_t *addr, int count);
/* CPU and NUMA node the thread runs on now (getcpu); -1 when unknown. */
SCRATCH_HIDDEN void scratch__os_getcpu(int *ret_cpu, int *ret_node);
SCRATCH_HIDDEN pid_t scratch__os_gettid(void);
/* The NUMA nodes this thread may allocate on (get_mempolicy(2),
 * MPOL_F_MEMS_ALLOWED: the cpuset's, no file read): how many, and the
 * highest id plus one. 1 and 1 when the kernel will not say (no NUMA, a
 * seccomp filter). */
SCRATCH_HIDDEN void scratch__os_nodes(unsigned *ret_count, unsigned *ret_span);
/* The node of each of n pages of this process into ret_status (a node,
 * or -ENOENT / -EFAULT: not present), from move_pages(2) with nodes NULL,
 * which reports and never faults a page in. False when the call fails. */
SCRATCH_HIDDEN bool scratch__os_page_nodes(void **pages, unsigned n, int *ret_status);
/* The CPUs thread tid may run on (sched_getaffinity(2)) into ret_mask,
 * words of 64 CPUs; false when the call fails. */
SCRATCH_HIDDEN bool scratch__os_affinity(pid_t tid, uint64_t *ret_mask, size_t words);
/* The CPUs of NUMA node node into ret_mask (sysfs's cpulist: an open, a
 * read and a close); false when it cannot be read or does not fit. */
SCRATCH_HIDDEN bool scratch__os_node_cpus(unsigned node, uint64_t *ret_mask, size_t words);
/* Has thread tid of this process ended (tgkill says ESRCH)? Keeps errno. */
SCRATCH_HIDDEN bool scratch__os_thread_gone(pid_t tid);
SCRATCH_HIDDEN unsigned scratch__os_ncpu(void);
/* CLOCK_REALTIME in nanoseconds. */
SCRATCH_HIDDEN uint64_t scratch__os_realtime_ns(void);
/* CLOCK_MONOTONIC in milliseconds. */
SCRATCH_HIDDEN uint64_t scratch__os_monotonic_ms(void);
/* Register for, and issue, a process-wide memory barrier
 * (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED): on return, every
 * other thread of the process has passed a full barrier. false when the
 * kernel refuses (too old, or a seccomp filter). Keep errno. */
SCRATCH_HIDDEN bool scratch__os_membarrier_register(void);
SCRATCH_HIDDEN bool scratch__os_membarrier(void);

/* ---------------------------------------------------------------------- */
/* Library state (pool.c)                                                 */
/* ---------------------------------------------------------------------- */

/* Initialise once, from any thread, on first use (also from malloc).
 * Returns true when the pools are usable. */
SCRATCH_HIDDEN bool scratch__init(void);

/* ---------------------------------------------------------------------- */
/* Per-thread counters                                                    */
/* ---------------------------------------------------------------------- */

/*
 * One thread's pool counters. When stats are on they live in the thread's
 * slot of the stats segment, so publishing costs the fast path nothing.
 *
 * The owner thread writes the first group with relaxed stores, inside a
 * sequence count (odd while writing). Other threads add to the second group
 * with atomic adds (remote frees), outside the sequence count. Readers use
 * scratch__counters_read().
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
	uint64_t pad0[3];
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

/* Consistent snapshot of c (retries while the writer is inside). */
SCRATCH_HIDDEN void scratch__counters_read(const struct scratch__counters *c,
                                           struct scratch__counters *ret);

/* ---------------------------------------------------------------------- */
/* Stats segment hooks (segment.c)                                        */
/* ---------------------------------------------------------------------- */

/* Open this process's segment per conf (stats:true). Called once by
 * scratch__init() under the init lock, with pools_off the reason the pools
 * are off (enum scratch_seg_pools_off in segment.h, 0 when they run) and
 * lowered when max_size had to come down to fit the region. Failure leaves
 * stats off, and says so only under verbose:true (scratch__env_warn). */
SCRATCH_HIDDEN int scratch__segment_open(const struct scratch__conf *conf, uint32_t pools_off,
                                         bool lowered);
/* The counter block for thread slot index, or NULL when there is no
 * segment or index is beyond the table. Marks the slot live with tid. */
SCRATCH_HIDDEN struct scratch__counters *scratch__segment_thread_attach(uint32_t index, pid_t tid);
/* Mark the slot's thread exited (its counters stay until reattached). */
SCRATCH_HIDDEN void scratch__segment_thread_exit(uint32_t index);
/* The pool folded the slot's counters into proc->exited: the slot stops
 * counting (state FREE). Called inside the proc->seq bracket, so a reader
 * sees either the slot or the folded counters, never both. */
SCRATCH_HIDDEN void scratch__segment_thread_reclaim(uint32_t index);
/* The process-wide counters in the segment, or NULL. */
SCRATCH_HIDDEN struct scratch__proc_counters *scratch__segment_proc(void);
/* The process-wide class counters in the segment, or NULL. */
SCRATCH_HIDDEN struct scratch__proc_classes *scratch__segment_proc_classes(void);
/* After fork, in the child: move to a segment file of its own. */
SCRATCH_HIDDEN void scratch__segment_atfork_child(void);
/* Before fork, under the pool's lock: snapshot the state the child starts from. */
SCRATCH_HIDDEN void scratch__segment_prefork(void);

/* The pool's slow paths, into the block table (segment.c); no-ops without
 * a table. The block is the caller's alone while it writes. */
SCRATCH_HIDDEN void scratch__segment_region(uintptr_t base, uint64_t size);
SCRATCH_HIDDEN void scratch__segment_block_lease(uint32_t id, uintptr_t start, uint64_t cap,
                                                 uint32_t cls, pid_t owner, pid_t lessee);
SCRATCH_HIDDEN void scratch__segment_block_freed(uint32_t id, pid_t freer);
SCRATCH_HIDDEN void scratch__segment_block_state(uint32_t id, uint32_t state);
/* Block id was carved by tid; growth is the trace record's sequence number. */
SCRATCH_HIDDEN void scratch__segment_block_carved(uint32_t id, pid_t tid, uint64_t growth);

/* ---------------------------------------------------------------------- */
/* Growth traces (trace.c)                                                */
/* ---------------------------------------------------------------------- */

/* Record a growth of bytes in size class cls by the calling thread (tid),
 * for owner (0: the plain pool). Captures call-site frames. No lock, no
 * malloc; a recursive call (from inside the unwinder) records nothing.
 * Returns the record's sequence number, 0 when none was written. */
SCRATCH_HIDDEN uint64_t scratch__trace_growth(pid_t tid, uint64_t bytes, uint32_t cls,
                                              uint32_t owner);
/* Around fork (the pools' atfork handlers): no stack walk may be in flight. */
SCRATCH_HIDDEN void scratch__trace_prefork(void);
SCRATCH_HIDDEN void scratch__trace_postfork(bool child);

/* The owner the calling thread is acquiring for (0: none); set by
 * workspaces and arenas around their pool calls so growths name them. */
SCRATCH_HIDDEN extern __thread uint32_t scratch__current_owner
        __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------------- */
/* Owner table (segment.c): workspaces, arenas, worker pools              */
/* ---------------------------------------------------------------------- */

enum scratch__owner_kind {
	SCRATCH__OWNER_ARENA = 1,
	SCRATCH__OWNER_WORKSPACE = 2,
	SCRATCH__OWNER_WORKERS = 3,
};

/* Counters of one owner; written by the owner's code (single writer per
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

/* Register an owner; returns its id (>= 1), or 0 when the table is full or
 * there is no segment (the owner then keeps its counters to itself). */
SCRATCH_HIDDEN uint32_t scratch__owner_register(enum scratch__owner_kind kind, const char *name);
/* The owner's counter block, or NULL for id 0. */
SCRATCH_HIDDEN struct scratch__owner_counters *scratch__owner_counters(uint32_t id);
SCRATCH_HIDDEN void scratch__owner_unregister(uint32_t id);

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

#endif /* SCRATCH_INTERNAL_H */
