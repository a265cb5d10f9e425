/*
 * scratch.h - the one public header of libscratch.
 *
 * libscratch gives each thread pools of large temporary blocks ("scratch"
 * buffers) that are cheap to reuse, a bump arena over them, an owning
 * workspace that lends per-worker and team buffers with exact accounting,
 * and a persistent worker pool.
 *
 * Conventions, for every function below:
 *   - every exported name starts with scratch_, every macro with SCRATCH_;
 *   - actions return 0 or a negative errno value;
 *   - constructors return a pointer, or NULL and set errno;
 *   - predicates return bool;
 *   - out-parameters (ret_...) are left untouched when a call fails;
 *   - a stats struct (struct scratch_*stats) begins with size and version:
 *     the caller sets size to sizeof the struct it was built with, the
 *     library writes only what that size covers and sets version. A struct
 *     from an older scratch.h is a prefix of today's, so a counter added
 *     later at the end breaks no program built before it. A size that
 *     holds no counter (below 16) or is not a multiple of 8 gives -EINVAL;
 *   - nothing here calls malloc, so all of it is safe to call from inside a
 *     malloc implementation (the preload shim does).
 *
 * Configuration comes from the environment variable SCRATCH_CONF
 * ("key:value,key:value", as MALLOC_CONF); see libscratch(3).
 */
#ifndef SCRATCH_H
#define SCRATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SCRATCH_API __attribute__((visibility("default")))
#else
#define SCRATCH_API
#endif

#define SCRATCH_VERSION_MAJOR 0
#define SCRATCH_VERSION_MINOR 1

/* ---------------------------------------------------------------------- */
/* Thread-local scratch pools                                             */
/* ---------------------------------------------------------------------- */

/*
 * Counters of one thread's pool, or of all threads together (exited ones
 * included). Byte figures count block capacities, not requests.
 *
 *   leased <= retained
 *   retained == bytes of pool blocks held (idle in caches or the depot, or lent)
 *   allocs == hits + depot_hits + misses
 */
#define SCRATCH_STATS_VERSION 3

struct scratch_stats {
	uint32_t size;             /* in: sizeof(struct scratch_stats) */
	uint32_t version;          /* out: SCRATCH_STATS_VERSION */
	uint64_t allocs;           /* successful scratch_acquire calls */
	uint64_t hits;             /* served from the thread's own cache */
	uint64_t depot_hits;       /* served from the process-wide depot */
	uint64_t misses;           /* served by growing: fresh pages */
	uint64_t frees;            /* scratch_release calls on pool blocks */
	uint64_t remote_frees_in;  /* blocks other threads freed back to this one */
	uint64_t remote_frees_out; /* blocks this thread freed to their owners */
	uint64_t passthrough;      /* allocations the preload shim sent to its backend */
	uint64_t retained;         /* bytes held: idle plus lent */
	uint64_t leased;           /* bytes lent right now */
	uint64_t peak_leased;      /* highest leased seen (total: sum of per-thread peaks) */
	uint64_t trimmed;          /* bytes returned to the OS so far */
	uint64_t threads;          /* threads counted (live and exited) */
	/* version 2: bytes of pages moved from idle blocks into new ones, which
	 * a growth did not fault again */
	uint64_t moved;
	/* version 3: bytes of new pages populated in one call ahead of the
	 * write, instead of faulted one at a time */
	uint64_t populated;
};

/*
 * Acquire a block of at least size bytes from the calling thread's pool.
 * The block is page aligned, and aligned on 2 MiB when its capacity is at
 * least 2 MiB. Returns NULL and sets errno to ERANGE when size is outside
 * [min_size, max_size] or the pool is disabled, and to ENOMEM when no
 * memory is left. The caller owns the block until scratch_release().
 */
SCRATCH_API void *scratch_acquire(size_t size);

/* As scratch_acquire(), but the first size bytes read as zero. Pages that
 * are known to be fresh are not written. */
SCRATCH_API void *scratch_acquire_zeroed(size_t size);

/* As scratch_acquire(), with an alignment: a power of two up to the block's
 * own alignment (see above). A larger or malformed alignment gives NULL and
 * errno EINVAL. */
SCRATCH_API void *scratch_acquire_aligned(size_t alignment, size_t size);

/*
 * Give a block back. Returns 0 when p was a pool block (it goes back to the
 * thread that owns it), or -EINVAL when p is not a pool block: then nothing
 * happens, so the caller may hand p to another allocator. NULL gives
 * -EINVAL. Never reads memory it does not own; never changes errno.
 */
SCRATCH_API int scratch_release(void *p);

/* True when p is the start of a block this library lent. O(1); never reads
 * memory it does not own. */
SCRATCH_API bool scratch_owns(const void *p);

/* Capacity of the pool block at p (>= the size asked for), or 0 when p is
 * not a pool block. */
SCRATCH_API size_t scratch_usable_size(const void *p);

/* Capacity a request of size bytes would get (its size class), or 0 when
 * size is outside the pool's range. */
SCRATCH_API size_t scratch_class_size(size_t size);

/* The pool's request range: [*ret_min, *ret_max]. Returns false when the
 * pools are disabled (enabled:false or no address space): then every
 * acquire fails with ERANGE. */
SCRATCH_API bool scratch_range(size_t *ret_min, size_t *ret_max);

/* The address range every pool block lies in: a pointer outside
 * [*ret_base, *ret_base + *ret_size) is never a pool block, so a caller
 * such as the preload shim's free() can rule foreign pointers out without
 * a call. Fixed once the pools are initialised. Returns false (outputs
 * untouched) when the pools are disabled. */
SCRATCH_API bool scratch_region(uintptr_t *ret_base, size_t *ret_size);

/*
 * Return idle memory to the OS: the calling thread's cache, the depot and
 * the caches of exited threads, at once; every other thread empties its own
 * cache at its next scratch_acquire(). Lent blocks are never touched.
 * Returns the number of bytes released now.
 */
SCRATCH_API size_t scratch_trim(void);

/* Empty the calling thread's cache into the depot (nothing is returned to
 * the OS beyond the depot's limit). */
SCRATCH_API void scratch_thread_flush(void);

/* Counters of the calling thread. Returns 0, or -EINVAL for NULL or a bad
 * size (see the conventions at the top). */
SCRATCH_API int scratch_stats_thread(struct scratch_stats *ret_stats);

/* Counters summed over all threads, exited ones included, plus the depot.
 * Exact whenever no pool call is in flight. Returns 0, or -EINVAL for NULL
 * or a bad size. */
SCRATCH_API int scratch_stats_total(struct scratch_stats *ret_stats);

/*
 * Counters of one size class, summed over all threads (exited ones
 * included), as scratch_stats_class() fills them. The caller sets size to
 * sizeof(struct scratch_class_stats); the library fills what both it and
 * the caller know and sets version (SCRATCH_CLASS_STATS_VERSION), as for
 * every stats struct (see the conventions at the top). Requests
 * count by the class of the request; frees and bytes by the class of the
 * block (a request served by a block of a larger class leases that block):
 *
 *   requests = hits + depot_hits + misses      larger_hits <= hits + depot_hits
 *   summed over classes, each count is scratch_stats_total()'s
 */
#define SCRATCH_CLASS_STATS_VERSION 1

struct scratch_class_stats {
	uint32_t size;        /* in: sizeof(struct scratch_class_stats) */
	uint32_t version;     /* out: SCRATCH_CLASS_STATS_VERSION */
	uint64_t capacity;    /* bytes of one block of the class */
	uint64_t min_request; /* the smallest request the class serves */
	uint64_t requests;    /* pooled requests of the class */
	uint64_t hits;        /* served by a thread's cache (own or larger class) */
	uint64_t depot_hits;  /* served by the depot (own or larger class) */
	uint64_t larger_hits; /* of those, by an idle block of a larger class */
	uint64_t misses;      /* served by growing: fresh pages */
	uint64_t frees;       /* releases of the class's blocks */
	uint64_t leased;      /* bytes of the class's blocks lent now */
	uint64_t idle;        /* bytes of the class's blocks held idle (caches, depot) */
};

/* The counters of the size class a request of size bytes falls in (see
 * scratch_class_size()). Exact whenever no pool call is in flight. Returns
 * 0; -EINVAL for NULL or a bad size (see the conventions); -ERANGE
 * when size is not pooled (outside [min_size, max_size], or the pools are
 * off), with ret_stats zeroed past size and version. */
SCRATCH_API int scratch_stats_class(size_t size, struct scratch_class_stats *ret_stats);

/* Count n allocation calls that the preload shim served from its backend
 * (they show as "passthrough" in this thread's stats). */
SCRATCH_API void scratch_count_passthrough(uint64_t n);

/*
 * The value of a configuration key as the library parsed it from
 * SCRATCH_CONF (sizes in bytes, booleans as 0/1). Returns 0, or -ENOENT for
 * an unknown key, -EINVAL for NULL.
 */
SCRATCH_API int scratch_conf_get(const char *key, uint64_t *ret_value);

/* ---------------------------------------------------------------------- */
/* Arena (arena.c)                                                        */
/* ---------------------------------------------------------------------- */

/*
 * Bump allocation over pool blocks ("chunks"). Allocating bumps an offset;
 * nothing is freed on its own. scratch_arena_reset() empties the arena in
 * O(1) once it has settled on one chunk: it keeps the largest chunk and
 * gives the others back (a full chunk is followed by one at least twice as
 * large, so a repeating workload settles after a few resets). Marks save a
 * position and rewind frees everything allocated after it.
 *
 * Chunks are acquired from the pool of the thread that allocates, so they
 * show in that thread's retained and leased bytes; the arena is an owner in
 * the stats segment too. One thread at a time may use an arena.
 */
typedef struct scratch_arena scratch_arena_t;

/* A saved position; plain data (see scratch_arena_rewind for how long it
 * stays valid). */
struct scratch_arena_mark {
	uint32_t chunk;
	uint64_t id;
	size_t used;
};

#define SCRATCH_ARENA_STATS_VERSION 1

struct scratch_arena_stats {
	uint32_t size;      /* in: sizeof(struct scratch_arena_stats) */
	uint32_t version;   /* out: SCRATCH_ARENA_STATS_VERSION */
	uint64_t chunks;    /* pool blocks held */
	uint64_t retained;  /* bytes of those blocks */
	uint64_t used;      /* bytes handed out (padding and skipped tails included) */
	uint64_t peak_used; /* highest used seen */
	uint64_t resets;
	uint64_t growths; /* chunks acquired over the arena's life */
};

/* An empty arena (no memory until the first allocation) whose first chunk
 * holds at least chunk_size bytes (0: 1 MiB; at most the pool's max_size);
 * name shows in the stats segment (NULL: "arena"). NULL and errno ENOMEM
 * on failure. */
SCRATCH_API scratch_arena_t *scratch_arena_new(const char *name, size_t chunk_size);

/*
 * size bytes aligned on align (a power of two up to 4096; 0 means 16),
 * valid until the reset, rewind or destroy that frees them; 0 bytes get a
 * pointer of their own, as from malloc(0). Returns NULL
 * with errno EINVAL (bad alignment), ERANGE (size above the pool's
 * max_size, or pools disabled) or ENOMEM.
 */
SCRATCH_API void *scratch_arena_alloc(scratch_arena_t *a, size_t size, size_t align);

/* Free everything; keep the largest chunk for reuse. */
SCRATCH_API void scratch_arena_reset(scratch_arena_t *a);

/* Save the current position in *ret_mark. Returns 0, or -EINVAL. */
SCRATCH_API int scratch_arena_mark(const scratch_arena_t *a, struct scratch_arena_mark *ret_mark);

/*
 * Free everything allocated after mark; chunks taken since go back to the
 * pool. Returns 0, or -EINVAL for a mark that is not valid any more: taken
 * before a reset, or freed by a rewind since (a rewind to an earlier
 * position; of the rewinds to ever later positions, the 16 latest are
 * remembered). Then nothing changes. A mark taken while the arena was
 * empty is always valid.
 */
SCRATCH_API int scratch_arena_rewind(scratch_arena_t *a, const struct scratch_arena_mark *mark);

/* Give every chunk back and free the arena. NULL is ignored. */
SCRATCH_API void scratch_arena_destroy(scratch_arena_t *a);

/* The arena's counters. Returns 0, or -EINVAL for NULL or a bad size. */
SCRATCH_API int scratch_arena_stats(const scratch_arena_t *a,
                                    struct scratch_arena_stats *ret_stats);

/* ---------------------------------------------------------------------- */
/* Worker pool (workers.c)                                                */
/* ---------------------------------------------------------------------- */

/*
 * A persistent pool of worker threads. The threads are spawned once by
 * scratch_workers_new(); each dispatch publishes one job in a shared slot,
 * bumps an epoch and wakes only the workers that went to sleep. The calling
 * thread joins the work as the last participant (index size - 1) and
 * returns when every participant is done, so everything the job wrote is
 * visible to the caller afterwards.
 *
 * Workers spin for a bounded budget after each job (SCRATCH_SPIN, default
 * 4000 polls) and then sleep on a futex until the next dispatch.
 *
 * Nested and concurrent dispatch: a call made while the calling thread is
 * itself running a job (of this pool or any other) runs serially inline on
 * that thread, as participant 0 of 1. A call made while another thread is
 * dispatching on the same pool does not wait: it also runs serially on its
 * own thread. Neither case can deadlock, and the job in flight is not
 * disturbed. A NULL pool means "serial" everywhere below. In the child of
 * a fork(), a pool created before it runs every call serially (its threads
 * stayed with the parent), and destroying it there only frees its memory.
 *
 * Unlike the pool functions above, scratch_workers_new() creates threads
 * (pthread_create allocates with malloc): do not call it from inside a
 * malloc implementation. Dispatching does not allocate.
 */
typedef struct scratch_workers scratch_workers_t;

/* One job: called once on every participant, participant in [0, n). */
typedef void (*scratch_job_fn)(void *ctx, unsigned participant, unsigned n);

/* A grain of rows [begin, end) of a row space, on participant. */
typedef void (*scratch_rows_fn)(void *ctx, size_t begin, size_t end, unsigned participant);

/* Use the environment or the built-in default for a field below. */
#define SCRATCH_WORKERS_DEFAULT (-1)
/* Most participants a pool can have (worker threads + the caller). */
#define SCRATCH_WORKERS_MAX 256

struct scratch_workers_opts {
	/* participants, the caller included: 0 or 1 = serial (no threads);
	 * SCRATCH_WORKERS_DEFAULT: $SCRATCH_THREADS, else the number of
	 * usable CPUs, at most 9 (8 worker threads) */
	int threads;
	/* polls a worker makes before sleeping: 0 = sleep at once;
	 * SCRATCH_WORKERS_DEFAULT: $SCRATCH_SPIN, else 4000 */
	int spin;
	/* pin worker i to the (i+1)-th usable CPU (the caller is not moved) */
	bool pin;
	/* prefix of thread names ("name-1", ...) and the owner name in the
	 * stats segment; NULL: "scratch-w" */
	const char *name;
};

/* Counters of one pool. Each is an independent running count. */
#define SCRATCH_WORKERS_STATS_VERSION 1

struct scratch_workers_stats {
	uint32_t size;        /* in: sizeof(struct scratch_workers_stats) */
	uint32_t version;     /* out: SCRATCH_WORKERS_STATS_VERSION */
	uint64_t workers;     /* worker threads (participants - 1) */
	uint64_t spin;        /* spin budget in polls */
	uint64_t dispatches;  /* jobs handed to the worker threads */
	uint64_t inline_runs; /* calls run serially: serial pool, nested or concurrent */
	uint64_t parks;       /* times a worker, or a caller waiting for one, slept */
	uint64_t wakes;       /* futex wake calls made to end such a sleep */
};

/* One row space of scratch_workers_run_many(). grain 0 picks a grain from
 * rows and the pool size. */
struct scratch_rows_part {
	scratch_rows_fn fn;
	void *ctx;
	size_t rows;
	size_t grain;
};

/*
 * Create a pool per opts (NULL: all defaults). Bad SCRATCH_THREADS or
 * SCRATCH_SPIN values print one line on stderr and fall back to the
 * defaults. Returns NULL and sets errno (EINVAL for a bad opts field,
 * EAGAIN or ENOMEM when threads or memory run out).
 */
SCRATCH_API scratch_workers_t *scratch_workers_new(const struct scratch_workers_opts *opts);

/*
 * Stop and join every worker, sleeping or spinning, and free the pool.
 * Waits for a dispatch another thread has in flight. Returns 0, or -EBUSY
 * when called from inside a job of this pool (that would join itself);
 * NULL gives 0.
 */
SCRATCH_API int scratch_workers_destroy(scratch_workers_t *w);

/* Participants of a dispatch: worker threads + 1 (1 for NULL or serial). */
SCRATCH_API unsigned scratch_workers_size(const scratch_workers_t *w);

/* Run f(ctx, p, n) once on every participant p in [0, n) and wait for all.
 * Returns 0, or -EINVAL for a NULL f. */
SCRATCH_API int scratch_workers_run(scratch_workers_t *w, scratch_job_fn f, void *ctx);

/*
 * Cover rows [0, rows) in grains of at most grain rows (0: automatic),
 * pulled by the participants from a shared cursor, so faster ones take
 * more; f(ctx, begin, end, p) is called once per grain. Returns 0, or
 * -EINVAL for a NULL f with rows > 0.
 */
SCRATCH_API int scratch_workers_run_rows(scratch_workers_t *w, size_t rows, size_t grain,
                                         scratch_rows_fn f, void *ctx);

/* Several row spaces in one dispatch: every grain of every part, each part
 * seeing its own row indices. Returns 0, or -EINVAL (NULL parts with
 * nparts > 0, a NULL fn with rows > 0, or more grains than fit a size_t). */
SCRATCH_API int scratch_workers_run_many(scratch_workers_t *w,
                                         const struct scratch_rows_part *parts, size_t nparts);

/* The pool's counters. Returns 0, or -EINVAL for NULL or a bad size. */
SCRATCH_API int scratch_workers_stats(const scratch_workers_t *w,
                                      struct scratch_workers_stats *ret_stats);

/*
 * The dot product of a[0..n) and x[0..n) in the library's fixed order:
 * eight partial sums s[k] over j = k mod 8 for j < n - n % 8, combined as
 * ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then the tail added in order. Every
 * matvec below computes each output with exactly this function, so results
 * do not depend on the pool size or the grain.
 */
SCRATCH_API float scratch_dot(const float *a, const float *x, size_t n);

/* y[i] = scratch_dot(a + i * cols, x, cols) for i < rows (a row-major,
 * contiguous), rows spread over the pool. Bit-identical to the serial loop.
 * Returns 0, or -EINVAL for NULL arrays or rows * cols overflowing. */
SCRATCH_API int scratch_matvec(scratch_workers_t *w, const float *a, const float *x, float *y,
                               size_t rows, size_t cols);

/* Two inputs through one matrix, which is streamed once: y0 = a x0 and
 * y1 = a x1, bit-identical to two scratch_matvec() calls. */
SCRATCH_API int scratch_matvec2(scratch_workers_t *w, const float *a, const float *x0,
                                const float *x1, float *y0, float *y1, size_t rows, size_t cols);

/* ---------------------------------------------------------------------- */
/* Workspace (workspace.c)                                                */
/* ---------------------------------------------------------------------- */

/*
 * An owner of the buffers a GEMM-like parallel call needs, kept between
 * calls. A call leases a team (an exclusive team set) for its number of
 * members; the team holds, per member, an A block, a tile and a scatter
 * slot, plus one shared panel, the scatter vector (every member's scatter
 * slot) and a barrier for the members. Concurrent calls get different
 * teams; a released team keeps its buffers for the next call. The barrier
 * and scatter vector are rebuilt only when a team is leased with a
 * different number of members than before.
 *
 * A member's slots are acquired from the pool of the thread that asks for
 * them, so the thread that writes a buffer touches it first. A lease made
 * on a thread already inside a call on the same workspace (holding a
 * lease, or running a member of scratch_workspace_execute) gets a fresh
 * call-local team: its buffers are not counted, not traced and are freed
 * on release.
 *
 * retained, leased and panel bytes (stats and the stats segment's owner
 * table) are exact whenever no workspace call is in flight, also after a
 * call that failed halfway. A traced workspace records every growth of a
 * slot or panel as (thread, bytes); scratch_workspace_growths() hands the
 * records over (growths that came from fresh pool pages also go to the
 * stats segment's trace ring, naming the workspace).
 */
typedef struct scratch_workspace scratch_workspace_t;
typedef struct scratch_team scratch_team_t;

enum scratch_slot {
	SCRATCH_SLOT_A = 0,       /* a member's packed block of A */
	SCRATCH_SLOT_TILE = 1,    /* a member's output tile */
	SCRATCH_SLOT_SCATTER = 2, /* a member's scatter scratch (in the scatter vector) */
	SCRATCH_SLOT_KINDS = 3
};

/* scratch_workspace_new() flag: keep growth records. */
#define SCRATCH_WORKSPACE_TRACED 0x1u

#define SCRATCH_WORKSPACE_STATS_VERSION 1

struct scratch_workspace_stats {
	uint32_t size;         /* in: sizeof(struct scratch_workspace_stats) */
	uint32_t version;      /* out: SCRATCH_WORKSPACE_STATS_VERSION */
	uint64_t retained;     /* bytes of pool blocks held, leased or idle */
	uint64_t leased;       /* of those, in teams leased right now */
	uint64_t panel_bytes;  /* of those, panels */
	uint64_t teams;        /* team sets kept */
	uint64_t leases;       /* leases served from kept teams */
	uint64_t local_leases; /* re-entrant leases served call-local */
	uint64_t rebuilds;     /* barrier and scatter vector rebuilds (shape changes) */
	uint64_t growths;      /* slot and panel growths */
	uint64_t lost;         /* growth records dropped while the buffer was full */
};

/* One growth of a traced workspace: which thread acquired how many bytes. */
struct scratch_growth {
	uint64_t tid;
	uint64_t bytes;
};

/* One member's part of scratch_workspace_execute(). */
typedef void (*scratch_team_fn)(void *ctx, scratch_team_t *team, unsigned member, unsigned members);

/* A workspace named name in the stats segment (NULL: "workspace"); flags 0
 * or SCRATCH_WORKSPACE_TRACED. NULL with errno EINVAL or ENOMEM. */
SCRATCH_API scratch_workspace_t *scratch_workspace_new(const char *name, unsigned flags);

/* Free every buffer and the workspace. Returns 0, or -EBUSY (nothing done)
 * while a team is leased. NULL gives 0. */
SCRATCH_API int scratch_workspace_destroy(scratch_workspace_t *ws);

/*
 * Lease a team for members members (1..SCRATCH_WORKERS_MAX), exclusive
 * until scratch_team_release(), which the same thread must call. NULL with
 * errno EINVAL or ENOMEM.
 */
SCRATCH_API scratch_team_t *scratch_workspace_lease(scratch_workspace_t *ws, unsigned members);

/* Give the team back (its buffers stay with the workspace, or are freed if
 * it was call-local). Returns 0, -EINVAL, or -EPERM from another thread. */
SCRATCH_API int scratch_team_release(scratch_team_t *team);

/* The number of members the team was leased for (0 for NULL). */
SCRATCH_API unsigned scratch_team_members(const scratch_team_t *team);

/*
 * member's buffer of the given kind, at least bytes long, grown from the
 * calling thread's pool when too small (the old contents are not kept).
 * Each member's slots must be used by one thread at a time. NULL with
 * errno EINVAL (bad member or kind), ERANGE (above the pool's max_size) or
 * ENOMEM; the old buffer is then kept and the accounting unchanged.
 */
SCRATCH_API void *scratch_team_slot(scratch_team_t *team, unsigned member, enum scratch_slot kind,
                                    size_t bytes);

/* The shared panel, at least bytes long, grown as a slot is. Call it from
 * one member at a time (e.g. before a barrier). */
SCRATCH_API void *scratch_team_panel(scratch_team_t *team, size_t bytes);

/* The scatter vector: entry m is member m's scatter slot (NULL until it
 * was grown), for m < members. Read other members' entries after a
 * barrier. */
SCRATCH_API void *const *scratch_team_scatter(const scratch_team_t *team);

/* Wait until every member arrived; true on exactly one of them. */
SCRATCH_API bool scratch_team_barrier(scratch_team_t *team);

/*
 * Lease a team shaped for the call, run fn(ctx, team, member, members) on
 * every participant of scratch_workers_run(w, ...) (w NULL: serially) and
 * release the team. members is what the pool really gives the call (1 when
 * it runs serially), so barriers never wait for a member that does not
 * come. Returns 0, -EINVAL, or -ENOMEM when no team could be leased (fn
 * was then not called).
 */
SCRATCH_API int scratch_workspace_execute(scratch_workspace_t *ws, scratch_workers_t *w,
                                          scratch_team_fn fn, void *ctx);

/* Free the buffers of teams not leased right now; leased teams keep
 * theirs. Returns the bytes given back to the pools. */
SCRATCH_API size_t scratch_workspace_trim(scratch_workspace_t *ws);

/* The workspace's counters. Returns 0, or -EINVAL for NULL or a bad size. */
SCRATCH_API int scratch_workspace_stats(scratch_workspace_t *ws,
                                        struct scratch_workspace_stats *ret_stats);

/* Move up to max growth records, oldest first, into ret; returns how many. */
SCRATCH_API size_t scratch_workspace_growths(scratch_workspace_t *ws, struct scratch_growth *ret,
                                             size_t max);

#ifdef __cplusplus
}
#endif

#endif /* SCRATCH_H */
