/*
 * touch.h - the first fault sample of every page of a process, kept as
 * runs: the audit's first-toucher store (audit.h). The sampler (faults.h)
 * hands every page fault of the whole process; this keeps, per 4 KiB
 * page, the earliest sample's thread and CPU, and which pages had a major
 * fault (the page came from disk, read by this process).
 *
 * Why runs: a process that touches 12 GiB takes about three million
 * faults, and a hash of page -> sample took 48 bytes or more a page. A
 * thread that walks a buffer faults page after page, so adjacent pages
 * with the same first toucher become one run of 24 bytes: memory grows
 * with the number of runs, at worst one a sample (every other page by
 * another thread), never with the bytes touched.
 *
 * Samples arrive in batches (one per drain of the rings), out of time
 * order between rings: touch_add() queues them, touch_flush() sorts the
 * batch, keeps each page's earliest sample, and merges it in. A page that
 * already has a run keeps it (an earlier batch is earlier), so "first" is
 * exact up to the batch: two faults of one page from two CPUs within one
 * drain are ordered by their times. Each batch is a generation; runs of
 * different generations never merge, so a caller can tell which pages
 * were first touched before a moment it marked (touch_generation()).
 *
 * Every function returns 0 or -ENOMEM; on -ENOMEM the batch is dropped
 * and counted (struct touch_map.dropped), the runs stay as they were.
 */
#ifndef SCRATCH_STATS_TOUCH_H
#define SCRATCH_STATS_TOUCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOUCH_PAGE 4096u

/* A first toucher: a thread on a CPU. */
struct touch_who {
	pid_t tid;
	int32_t cpu;
};

/* Pages [page, page + pages * TOUCH_PAGE) first touched by who[who] in
 * generation gen. */
struct touch_run {
	uint64_t page;
	uint32_t pages;
	uint32_t who;
	uint32_t gen;
};

struct touch_pending {
	uint64_t page, time_ns;
	pid_t tid;
	int32_t cpu;
};

struct touch_map {
	struct touch_run *r; /* by page, disjoint */
	size_t n, cap;
	struct touch_who *who;
	size_t nwho, capwho;
	uint64_t *major; /* pages with a major-fault sample, sorted, unique */
	size_t nmajor, capmajor;
	struct touch_pending *pend;
	size_t npend, cappend;
	uint64_t *pend_major;
	size_t npend_major, cappend_major;
	uint32_t gen;     /* the generation the next flush writes */
	uint64_t dropped; /* samples lost to a failed allocation */
};

/* Queue one sample (addr is any address in the page). A major-fault
 * sample only marks its page: the all-faults event samples the same fault
 * too, and that one names the toucher. */
int touch_add(struct touch_map *m, uint64_t addr, pid_t tid, int cpu, uint64_t time_ns, bool major);

/* Merge the queued samples in, as generation m->gen, then start the next
 * generation. */
int touch_flush(struct touch_map *m);

/* The generation the next flush writes: runs with a smaller gen were
 * flushed before this call. */
static inline uint32_t touch_generation(const struct touch_map *m)
{
	return m->gen;
}

/* The run holding page (any address in it), NULL when it has no sample. */
const struct touch_run *touch_lookup(const struct touch_map *m, uint64_t addr);

/*
 * The run that stands for addr when the kernel maps more than one page
 * per fault: addr's own run, else, when every run overlapping the aligned
 * window of window bytes around addr has the same thread, the first of
 * them (file fault-around maps up to 64 KiB a read fault, a transparent
 * huge page is 2 MiB). NULL otherwise: two threads faulted there, and
 * which one mapped addr is not known.
 */
const struct touch_run *touch_lookup_window(const struct touch_map *m, uint64_t addr,
                                            uint64_t window);

/* Whether page (any address in it) had a major-fault sample. */
bool touch_major(const struct touch_map *m, uint64_t addr);

/* The major-fault page at or after addr below hi, 0 when none. */
uint64_t touch_major_next(const struct touch_map *m, uint64_t addr, uint64_t hi);

/* The index in m->r of the first run that ends above addr (m->n when
 * none): runs below it lie wholly below addr's page. */
size_t touch_index(const struct touch_map *m, uint64_t addr);

/* Forget [lo, hi): its pages were given back, the next fault is a new
 * first touch. */
void touch_forget(struct touch_map *m, uint64_t lo, uint64_t hi);

/* Bytes of memory the map holds (runs, threads, majors, queue capacity). */
size_t touch_memory(const struct touch_map *m);

void touch_free(struct touch_map *m);

#endif /* SCRATCH_STATS_TOUCH_H */
