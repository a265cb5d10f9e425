/*
 * internal.h - names shared between libscratch's own files (scratch__*).
 *
 * Nothing here is installed. It holds the parsed configuration, the OS
 * layer (os.c is the only file that calls mmap, madvise, futex and getcpu),
 * and the hooks through which the pools publish into the stats segment
 * (segment.c, trace.c). The counter blocks the pools write, the owner
 * kinds and the sequence counts are the segment's format: segment.h,
 * which this header includes.
 */
#ifndef SCRATCH_INTERNAL_H
#define SCRATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "scratch.h"
#include "segment.h" /* the counter blocks, owner kinds and sequence counts */

#define SCRATCH_HIDDEN __attribute__((visibility("hidden")))
#define SCRATCH_COLD   __attribute__((cold, noinline))
#define likely(x)      __builtin_expect(!!(x), 1)
#define unlikely(x)    __builtin_expect(!!(x), 0)

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
	bool lend;             /* a miss may take another thread's idle block (same node) */
	uint64_t reserve;      /* address space reserved for pool blocks */
	bool thp;              /* madvise(MADV_HUGEPAGE) on blocks >= 2 MiB */
	bool thp_dense;        /* huge pages for the whole 2 MiB frames of leases
	                        * populated because they are written whole */
	bool populate;         /* populate a lease's new pages where its thread
	                        * writes them whole (pool_dense.c) */
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

/* A failed SCRATCH_ASSERT (debug.h): "scratch: file:line: assertion
 * failed: expr" with one write(2) to fd 2, then abort(). Debug builds only
 * call it. */
SCRATCH_HIDDEN __attribute__((noreturn, cold)) void
scratch__assert_fail(const char *file, unsigned line, const char *expr);

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
/* Public stats structs (scratch.h conventions)                           */
/* ---------------------------------------------------------------------- */

/* The bytes of a public stats struct of full bytes that a caller whose
 * struct is size bytes knows (an older scratch.h's struct is a prefix of
 * ours), or 0 when size holds no counter or is not a multiple of 8: the
 * call then fails with -EINVAL. */
static inline size_t scratch__stats_len(uint32_t size, size_t full)
{
	if (size < 16 || size % 8 != 0)
		return 0;
	return size < full ? size : full;
}

/* ---------------------------------------------------------------------- */
/* OS layer (os.c)                                                        */
/* ---------------------------------------------------------------------- */

/* Reserve size bytes of address space aligned on align (a power of two),
 * inaccessible until scratch__os_commit() opens a part of it, without
 * committing swap (MAP_NORESERVE). NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_reserve(size_t size, size_t align);
/* Make [p, p + size) of a reservation read-write. false when the kernel
 * refuses (no mapping left, strict overcommit); errno is kept. */
SCRATCH_HIDDEN bool scratch__os_commit(void *p, size_t size);
/* Anonymous read-write memory for metadata; NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_map(size_t size);
SCRATCH_HIDDEN void scratch__os_unmap(void *p, size_t size);
/* Map size bytes of fd shared; read-only when !writable; at addr when addr
 * is not NULL (MAP_FIXED: replaces what is there). NULL on failure. */
SCRATCH_HIDDEN void *scratch__os_map_file(int fd, size_t size, bool writable, void *addr);
/* Move the mapping [from, from + size) to to, replacing what is there
 * (mremap MREMAP_FIXED). 0 or -errno; on failure nothing moved. */
SCRATCH_HIDDEN int scratch__os_move(void *from, void *to, size_t size);
/* Move the pages of [from, from + size) to to, replacing what is there,
 * and leave the old range mapped and empty (mremap MREMAP_DONTUNMAP,
 * Linux 5.7; from and to private anonymous). 0 or -errno (EFAULT: the
 * range spans mappings and the kernel, before 6.17, moves only within
 * one); on failure nothing moved. errno is kept. */
SCRATCH_HIDDEN int scratch__os_move_pages(void *from, void *to, size_t size);
/* Is the page at probe (a private anonymous mapping of its own, never
 * written) locked (mlock, mlockall)? The kernel refuses MADV_DONTNEED on
 * locked pages: one system call. errno is kept. */
SCRATCH_HIDDEN bool scratch__os_locked(void *probe);
/* An anonymous file (memfd, close-on-exec) of size bytes: the fd, or -errno. */
SCRATCH_HIDDEN int scratch__os_memfd(const char *name, size_t size);
/* Directory entries of fd into buf as struct linux_dirent64 records
 * (getdents64, which allocates nothing, unlike readdir): bytes read, 0 at
 * the end, or -errno. */
SCRATCH_HIDDEN long scratch__os_getdents(int fd, void *buf, size_t len);
/* Give the pages back; the range stays mapped and reads as zero. false
 * when the kernel kept them (locked pages: mlock, mlockall), and then the
 * range still holds what was written; errno is kept. */
SCRATCH_HIDDEN bool scratch__os_decommit(void *p, size_t size);
/* A child forked from now on gets the range zero-filled, without its page
 * tables copied (on), or a copy again (off); false when the kernel refuses
 * (before Linux 4.14). errno is kept. */
SCRATCH_HIDDEN bool scratch__os_wipe_on_fork(void *p, size_t size, bool on);
/* Fault the range's pages in, writable, with one call (MADV_POPULATE_WRITE,
 * Linux 5.14): what a write to each page would do, without a trap per
 * page. Pages already there keep their contents. false when the kernel
 * would not (older kernels: then never again; no memory); errno is kept. */
SCRATCH_HIDDEN bool scratch__os_populate(void *p, size_t size);
/* How many pages of the size bytes at p (page aligned) are resident:
 * mincore(2), into vec, of the range's pages bytes. -1 on an error; errno
 * is kept. */
SCRATCH_HIDDEN long scratch__os_resident(void *p, size_t size, unsigned char *vec, size_t pages);
/* Ask for transparent huge pages on the range, or (on false) for none;
 * best effort. */
SCRATCH_HIDDEN void scratch__os_hugepage(void *p, size_t size, bool on);
/* Does the system give huge pages only where asked (transparent_hugepage
 * "madvise" mode)? false for "always", "never", or when unknown. */
SCRATCH_HIDDEN bool scratch__os_thp_on_request(void);
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

/* Consistent snapshot of a thread's counters c (segment.h), retrying
 * while the writer is inside. */
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
/* The mapped segment of this process, or NULL: trace.c reads the ring's
 * layout from it (values it wrote itself). */
SCRATCH_HIDDEN struct scratch_seg_header *scratch__segment_header(void);
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

/* Register an owner; returns its id (>= 1), or 0 when the table is full or
 * there is no segment (the owner then keeps its counters to itself). */
SCRATCH_HIDDEN uint32_t scratch__owner_register(enum scratch__owner_kind kind, const char *name);
/* The owner's counter block, or NULL for id 0. */
SCRATCH_HIDDEN struct scratch__owner_counters *scratch__owner_counters(uint32_t id);
SCRATCH_HIDDEN void scratch__owner_unregister(uint32_t id);

#endif /* SCRATCH_INTERNAL_H */
