/*
 * faults.h - first-toucher sampling: every page fault of a process, with
 * the thread, CPU, address and time, from perf_event_open(2) software
 * page-fault events (PERF_COUNT_SW_PAGE_FAULTS, sample_period 1,
 * TID|TIME|ADDR|CPU). The first sample of a page names the thread that
 * first touched it: the audit's "first touch sampled" tier.
 *
 * Two ways in, as perf record has:
 *  - launch (faults_launch): fork, open one event per online CPU for the
 *    child (inherit, enable_on_exec, disabled) while it waits on a pipe,
 *    then let it exec. No fault of the command is missed, and its threads
 *    and children are covered from birth. Per-CPU rings, because an
 *    inherited per-task event (cpu -1) cannot be mmapped.
 *  - attach (faults_attach): one event per existing thread (pid = tid,
 *    cpu -1); faults_rescan() attaches threads created since and closes
 *    those that exited. Faults before a thread is attached are not seen:
 *    report them as unknown, never guess.
 *
 * Samples are read from mmapped rings by faults_drain(); a ring that fills
 * before it is drained loses records, which the kernel reports
 * (PERF_RECORD_LOST) and faults_get_stats() counts. Samples from different
 * rings are not in time order: compare their times.
 *
 * Permissions: where the kernel refuses (perf_event_paranoid > 2 without
 * CAP_PERFMON, which is Debian's default; a seccomp filter or container
 * runtime; another user's process) every function that opens events
 * returns the errno and writes the reason into err, naming the sysctl or
 * the cause, so the audit can say which tier is off and why. With
 * perf_event_paranoid 2, kernel-mode faults on user addresses (a read(2)
 * into a fresh buffer) are excluded and faults_get_stats() says so.
 *
 * Every function returns 0 (or a count) or a negative errno and, on
 * failure, one human line in err (errlen bytes; err may be NULL). Nothing
 * is printed. A handle is used by one thread at a time.
 */
#ifndef SCRATCH_STATS_FAULTS_H
#define SCRATCH_STATS_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct faults_sample {
	pid_t pid, tid;
	uint32_t cpu;
	uint64_t addr;
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	bool major;       /* from the major-fault event (faults_opts.major) */
};

struct faults_opts {
	uintptr_t lo, hi;    /* keep samples with lo <= addr < hi; hi 0 keeps all */
	unsigned ring_pages; /* data pages per ring, a power of two; 0: 64 */
	/* Also sample major faults (PERF_COUNT_SW_PAGE_FAULTS_MAJ: the page
	 * had to be read in), into rings of their own, an eighth of the size.
	 * A major fault is sampled twice: once by each event. */
	bool major;
};

struct faults_stats {
	uint64_t samples; /* sample records read */
	uint64_t kept;    /* of those, inside [lo, hi) and handed to the caller */
	uint64_t major;   /* of those, from the major-fault event */
	/* Samples the kernel dropped (a full ring): the PERF_RECORD_LOSTs' sum,
	 * and the drops no record reported yet (the events' counts minus the
	 * records read, as of the last drain: exact once the tasks are gone). */
	uint64_t lost;
	uint64_t lost_records;
	unsigned events;    /* open events (rings) */
	unsigned attached;  /* attach mode: threads ever attached */
	bool kernel_faults; /* false when kernel-mode faults are excluded */
};

typedef struct faults faults_t;
typedef void faults_fn(const struct faults_sample *s, void *arg);

/*
 * Can this process sample page faults at all? Opens and closes one event
 * on itself. Returns 0, or the -errno of the refusal with its reason in
 * err (see faults_launch).
 */
int faults_probe(char *err, size_t errlen);

/*
 * Launch argv (argv[0] looked up in PATH) with sampling armed before its
 * exec. On success *ret is the handle and *ret_child the child's pid; the
 * caller reaps the child (waitpid) and drains until then. Returns 0, or:
 * -EACCES/-EPERM (sampling refused: perf_event_paranoid, seccomp, LSM),
 * -ENOSYS/-EOPNOTSUPP/-ENOENT/-ENODEV (no perf events or no software
 * events here), -EMFILE, -ENOMEM, or the errno of a failed exec (-ENOENT,
 * -EACCES for a COMMAND that cannot be run); err begins with "cannot run "
 * exactly when the exec failed, so a caller can tell a refused sampler from
 * a bad COMMAND with the same errno. On failure no child is left running.
 */
int faults_launch(char *const argv[], const struct faults_opts *o, faults_t **ret, pid_t *ret_child,
                  char *err, size_t errlen);

/*
 * Attach to every thread of the running process pid. Returns 0, or -ESRCH
 * (gone), -EACCES/-EPERM (refused: the reason in err names the sysctl, or
 * another user's process), -ENOSYS/-EOPNOTSUPP, -EMFILE, -ENOMEM. Threads
 * that exit during the attach are skipped.
 */
int faults_attach(pid_t pid, const struct faults_opts *o, faults_t **ret, char *err, size_t errlen);

/*
 * Attach mode: attach threads of the process that appeared since the last
 * scan, and drain (into fn) and close the events of threads that exited.
 * Returns the number of threads newly attached, -ESRCH when the process is
 * gone (its last samples are still drained), or another -errno. In launch
 * mode it returns 0: inherited events already cover new threads.
 */
int faults_rescan(faults_t *f, faults_fn *fn, void *arg, char *err, size_t errlen);

/*
 * Wait up to timeout_ms for a ring to reach its wakeup mark or an event's
 * task to exit. Returns the number of events that reported (0 on timeout),
 * or -errno from poll.
 */
int faults_wait(faults_t *f, int timeout_ms);

/* Events whose task has not exited yet. */
unsigned faults_live(const faults_t *f);

/*
 * Read every ring: fn is called for each sample inside the range, in ring
 * order. Returns the number of samples handed to fn.
 */
long faults_drain(faults_t *f, faults_fn *fn, void *arg);

/* Attach mode: the tid of event i (0 <= i < events), for progress lines. */
pid_t faults_event_tid(const faults_t *f, unsigned i);

void faults_get_stats(const faults_t *f, struct faults_stats *ret);

/* Close every event and unmap every ring; does not touch the child. */
void faults_close(faults_t *f);

#endif /* SCRATCH_STATS_FAULTS_H */
