/*
 * scratchd.h - the daemon's state, shared by its discovery/sampling loop
 * (scratchd.c) and its HTTP side (serve.c).
 *
 * One mutex (sd.lock) guards the process list and everything in it; the
 * loop takes it to sample and drain, the HTTP threads to answer. Followers
 * of a trace wait on sd.cond, broadcast after each drain and state change.
 */
#ifndef SCRATCH_STATS_SCRATCHD_H
#define SCRATCH_STATS_SCRATCHD_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "segread.h"
#include "thread_history.h"

struct sd_sample {
	uint64_t t_ns; /* CLOCK_REALTIME */
	struct segread_totals tot;
	struct thread_points threads; /* the threads retaining the most */
};

struct sd_proc {
	struct sd_proc *next;
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
	struct sd_sample *hist;
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

struct sd_rejected {
	char file[NAME_MAX + 1];
	char error[160];
};

#define SD_MAX_REJECTED 64
#define SD_MAX_RETIRED  1024

struct sd_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	char run_dir[PATH_MAX];
	char socket_path[PATH_MAX];
	struct sd_proc *procs;
	struct sd_rejected rejected[SD_MAX_REJECTED];
	uint32_t nrejected;
	char (*retired)[NAME_MAX + 1]; /* kept files already reported and expired */
	uint32_t nretired;
	uint64_t interval_ms, retention_s, start_ns;
	uint32_t history, trace_keep;
	uint64_t samples; /* sampling rounds done */

	/* Bounds under churn (see "Memory" above). */
	uint64_t budget; /* --memory-budget, bytes */
	uint64_t mem_used, mem_peak;
	uint32_t max_exited;                  /* --max-exited */
	uint32_t nexited;                     /* exited entries in sd.procs */
	uint64_t evicted_cap;                 /* exited entries evicted over --max-exited */
	uint64_t evicted_budget;              /* exited entries evicted for the budget */
	uint64_t refused;                     /* segments not adopted: no room in the budget */
	uint64_t hist_dropped, trace_dropped; /* sums of the per-process counts, evicted included */
};

extern struct sd_state sd;

/* serve.c: start/stop the HTTP side on the Unix socket fd (and, when
 * listen is not NULL, "/metrics" on 127.0.0.1:PORT). Returns 0 or -errno
 * with a cause in err. */
int sd_serve_start(int unix_fd, const char *listen, char *err, size_t errlen);
/* Parse a --listen address, 127.x.y.z:PORT; -EINVAL with a message in err. */
struct sockaddr_in;
int sd_parse_listen(const char *s, struct sockaddr_in *sa, char *err, size_t errlen);
void sd_serve_stop(void);

/* JSON of one process (summary, or with threads and owners). Under sd.lock. */
json_t *sd_proc_json(const struct sd_proc *p, bool detail);
/* The process with this pid: the live one, else the latest exited one. */
struct sd_proc *sd_find(pid_t pid);
/* Sample a live process again if its last sample is older than 1 ms. */
void sd_refresh(struct sd_proc *p);

/* The owner kind's name. */
const char *sd_owner_kind(uint32_t kind);

#endif /* SCRATCH_STATS_SCRATCHD_H */
