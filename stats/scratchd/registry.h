/*
 * registry.h - scratchd's process table: every segment of the run directory
 * it adopted, sampled and drained, live or kept after exit.
 *
 * The registry discovers segments (adopt, rescan), validates them with the
 * segment reader, samples their counters into a history, drains their
 * trace rings, notices exits and reused pids, keeps exited processes for
 * the retention period and evicts them early under --max-exited and
 * --memory-budget. It knows nothing of HTTP or JSON: main.c drives it
 * from its poll loop, serve.c reads it to answer requests.
 *
 * Locking: one mutex guards the table and everything in it. Every function
 * below but registry_open, registry_close, registry_lock and registry_unlock
 * is called with it held (registry_lock). The entries registry_find and
 * registry_next return stay valid until the lock is dropped.
 *
 * Memory: the bytes the entries hold, mem_used, is the sum over entries of
 * their mem (struct registry_proc, its rings, tables and maps text), and
 * mem_used <= budget at all times; evicted and refused entries and the
 * samples and records let go for the budget are counted (registry_counts).
 */
#ifndef SCRATCH_STATS_REGISTRY_H
#define SCRATCH_STATS_REGISTRY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "segread.h"
#include "thread_points.h"

/* What scratchd's options set (scratchd(8)); REGISTRY_CONF_DEFAULT gives
 * the documented defaults. */
struct registry_conf {
	uint64_t interval_ms; /* --interval: between sampling rounds */
	uint64_t retention_s; /* --retention: how long exited processes stay */
	uint32_t history;     /* --history: samples kept per process, at most */
	uint32_t trace_keep;  /* --trace-keep: drained records kept per process, at most */
	uint64_t budget;      /* --memory-budget, bytes */
	uint32_t max_exited;  /* --max-exited */
	bool verbose;         /* -v: log adoptions, exits, evictions */
};

#define REGISTRY_CONF_DEFAULT                                                                      \
	{                                                                                          \
		.interval_ms = 1000, .retention_s = 300, .history = 600, .trace_keep = 16384,      \
		.budget = 64u << 20, .max_exited = 256,                                            \
	}

/* One history sample. */
struct registry_sample {
	uint64_t t_ns; /* CLOCK_REALTIME */
	struct segread_totals tot;
	struct thread_points threads; /* the threads retaining the most */
};

/* One process image (one segment file): read-only to callers. */
struct registry_proc {
	struct registry_proc *next;
	char file[NAME_MAX + 1];
	int fd;
	struct segread seg;
	bool live;
	const char *reason;        /* why it is no longer live: exit, gone, pid_reused, exec */
	uint64_t seen_ns, exit_ns; /* CLOCK_REALTIME */
	uint64_t exited_mono;      /* CLOCK_MONOTONIC when noticed, for retention */
	bool unlinked;             /* scratchd removed its stale file */

	/* last sample */
	struct segread_thread *threads; /* non-free slots, by slot index */
	uint32_t nthreads;
	struct scratch__proc_counters pc;
	struct segread_owner *owners;
	uint32_t nowners;
	struct segread_totals tot;
	struct segread_class *classes; /* size classes in use, in class order */
	uint32_t nclasses;
	bool has_classes;      /* the segment has class counters (a new enough writer) */
	uint64_t sampled_ns;   /* CLOCK_REALTIME of the last sample */
	uint64_t sampled_mono; /* the same, CLOCK_MONOTONIC */

	/* history: a ring of hist_cap samples */
	struct registry_sample *hist;
	uint32_t hist_cap, hist_len, hist_pos;

	/* drained trace records: a ring of trace_cap, oldest at trace_pos */
	struct segread_record *trace;
	uint32_t trace_cap, trace_len, trace_pos;
	uint64_t next_seq;    /* next sequence number to drain */
	uint64_t lost;        /* records lost to wrap or torn */
	uint64_t drained;     /* records taken from the ring */
	uint64_t head;        /* ring head at the last drain */
	uint64_t stall_since; /* CLOCK_MONOTONIC since the drain stopped on one unwritten record */
	bool owners_fresh;    /* the owner table was reread during this drain */
	bool head_warned;     /* a lying ring head was logged (once per process) */
	uint32_t busy;        /* seqlocked reads that gave up in this sample */

	char *maps;       /* file-backed lines of /proc/PID/maps, for symbolization */
	size_t maps_size; /* bytes allocated for maps */

	size_t mem;             /* bytes charged to the budget for this entry */
	uint64_t hist_dropped;  /* samples let go before --history because of the budget */
	uint64_t trace_dropped; /* records let go before --trace-keep because of the budget */
};

/* A segment file that was refused, and why (the last REGISTRY_MAX_REJECTED). */
struct registry_rejected {
	char file[NAME_MAX + 1];
	char error[160];
};

#define REGISTRY_MAX_REJECTED 64

/* The registry's bounds and what they cost, at one moment. */
struct registry_counts {
	uint64_t budget, mem_used, mem_peak;
	uint32_t max_exited;
	uint32_t live, exited;                /* entries by state */
	uint32_t rejected;                    /* files refused (kept in the list) */
	uint64_t evicted_cap;                 /* exited entries evicted over --max-exited */
	uint64_t evicted_budget;              /* exited entries evicted for the budget */
	uint64_t refused;                     /* segments not adopted: no room in the budget */
	uint64_t hist_dropped, trace_dropped; /* let go for the budget, evicted entries included */
	uint64_t samples;                     /* sampling rounds done */
};

/* Set up the table for run_dir (made and checked by rundir_resolve) with
 * conf (copied). Returns 0 or -errno with a cause in err. Not locked. */
int registry_open(const struct registry_conf *conf, const char *run_dir, char *err, size_t errlen);
/* Free every entry and what registry_open took. Not locked; nobody may
 * use the registry after it. */
void registry_close(void);

void registry_lock(void);
void registry_unlock(void);

/* The options it runs with, and the run directory it watches. */
const struct registry_conf *registry_conf(void);
const char *registry_run_dir(void);

/* Adopt the segment file name of the run directory (an inotify event), or
 * every file there (at start, after an inotify overflow). A file that is
 * not a segment, known already, or invalid is skipped (invalid ones are
 * logged once and listed by registry_rejected). */
void registry_adopt(const char *name);
void registry_rescan(void);

/* Drain every live process's trace ring; wakes waiters when anything new
 * came. Cheap: the poll loop calls it every tick. */
void registry_drain(void);
/* One sampling round: liveness, counters, history, retention and the
 * --max-exited cap. Wakes waiters. */
void registry_sample(void);

/* The process with this pid: the live one, else the one that exited last;
 * NULL when none is known. */
struct registry_proc *registry_find(pid_t pid);
/* The entry of segment file name, or NULL (it expired or was evicted). */
struct registry_proc *registry_find_file(const char *name);
/* Iterate: the first entry for p == NULL, else the one after p; NULL at
 * the end. In no particular order. */
struct registry_proc *registry_next(const struct registry_proc *p);
/* Sample a live process again unless its last sample is under 1 ms old:
 * a request wants the counters of now. */
void registry_refresh(struct registry_proc *p);

/* Each pid's newest image (an exec or a reused pid leaves older, exited
 * images of the same pid in the table), in pid order: a malloc'd array of
 * *ret_n entries for the caller to free; NULL with *ret_n = 0 when there
 * are no processes or no memory. */
const struct registry_proc **registry_images(size_t *ret_n);

/* A process's kept trace records, oldest first: the i-th (i < trace_len),
 * the index of the first with seq >= since (trace_len if none), and the
 * first seq still kept (next_seq when none is). */
const struct segread_record *registry_record(const struct registry_proc *p, uint32_t i);
uint32_t registry_record_from(const struct registry_proc *p, uint64_t since);
uint64_t registry_first_seq(const struct registry_proc *p);
/* Its i-th history sample, oldest first (i < hist_len). */
const struct registry_sample *registry_history(const struct registry_proc *p, uint32_t i);
/* The name of its owner id (growth records name owners), NULL if unknown. */
const char *registry_owner_name(const struct registry_proc *p, uint32_t id);

void registry_counts(struct registry_counts *ret);
/* The i-th rejected file, NULL for i >= registry_counts().rejected. */
const struct registry_rejected *registry_rejected(uint32_t i);

/* Waiting (trace followers, the shutdown). registry_wait drops the lock
 * until woken or until (CLOCK_REALTIME, NULL: no limit), then holds it
 * again; returns 0 or ETIMEDOUT. registry_wake wakes every waiter: the
 * registry calls it after each drain that brought records and each round,
 * callers after a change of their own that waiters watch. */
int registry_wait(const struct timespec *until);
void registry_wake(void);
/* Tell waiters the daemon stops (registry_stopping turns true), and wake
 * them. */
void registry_stop(void);
bool registry_stopping(void);

#endif /* SCRATCH_STATS_REGISTRY_H */
