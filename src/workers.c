/*
 * workers.c - the persistent worker pool.
 *
 * Owns scratch_workers_* (see scratch.h) and the internal hooks of
 * workers.h. The row-parallel matvec over it is matvec.c.
 *
 * One pool is a mapping holding the shared state and one cache line per
 * worker. A dispatch has three steps:
 *   1. the dispatcher takes the pool (busy flag), writes the job slot,
 *      clears the done count and bumps the epoch (a release store);
 *   2. every worker that sees the new epoch runs the job once, then adds
 *      one to done; the dispatcher runs its own share as the last
 *      participant and waits until done == workers;
 *   3. the dispatcher gives the pool back.
 * Because the dispatcher waits for every worker, each worker runs each job
 * exactly once and no job slot is rewritten while a worker still reads it.
 *
 * Sleeping: a worker spins on the epoch for a bounded budget, then parks on
 * the epoch futex after raising its parked flag. The dispatcher wakes the
 * futex only when some worker's flag is up, so dispatches to spinning
 * workers make no syscall. The same pattern lets the dispatcher sleep on
 * the done count when workers are slow.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "workers.h"

#define DEFAULT_SPIN     4000
#define DEFAULT_MAX_WORK 8 /* default worker threads at most */
#define GRAINS_PER_PART  8 /* automatic grain: rows / (8 * participants) */

enum job_kind {
	JOB_RUN,
	JOB_ROWS,
	JOB_STOP,
};

/* One worker thread. Its parked flag has a cache line of its own: the
 * worker writes it when it sleeps, the dispatcher reads all of them. */
struct worker {
	uint32_t parked;
	unsigned index;
	struct scratch_workers *pool;
	pthread_t thread;
} __attribute__((aligned(SCRATCH_CACHELINE)));

/* The job slot: written by the dispatcher before it bumps the epoch, read
 * by the workers after they saw the new epoch, never written while a
 * worker may read it (the dispatcher waits for done first). */
struct job {
	enum job_kind kind;
	unsigned n; /* participants */
	scratch_job_fn fn;
	void *ctx;
	const struct scratch_rows_part *parts;
	size_t nparts;
};

struct scratch_workers {
	/* set at creation, read-only afterwards */
	unsigned nworkers;
	int spin;
	uint32_t generation; /* fork_generation at creation */
	size_t map_bytes;
	uint32_t owner;
	struct scratch__owner_counters *oc; /* segment block, or &priv */
	struct worker *workers;

	/* the dispatcher's: 0 free, 1 taken */
	uint32_t busy __attribute__((aligned(SCRATCH_CACHELINE)));
	struct job job;

	/* the futex workers sleep on; bumped once per dispatch */
	uint32_t epoch __attribute__((aligned(SCRATCH_CACHELINE)));

	/* workers finished with the current job; the dispatcher sleeps on it */
	uint32_t done __attribute__((aligned(SCRATCH_CACHELINE)));
	uint32_t caller_parked;

	/* next grain of the current row job */
	size_t cursor __attribute__((aligned(SCRATCH_CACHELINE)));

	/* counters not in the owner block (relaxed atomics, any thread) */
	uint64_t inline_runs __attribute__((aligned(SCRATCH_CACHELINE)));
	struct scratch__owner_counters priv;
};

/* Depth of jobs the calling thread is running; a worker thread is always
 * inside one. Initial-exec like every libscratch thread-local. */
static __thread unsigned tls_job_depth __attribute__((tls_model("initial-exec")));
/* The pool this thread serves (a worker) or dispatches on right now. */
static __thread const struct scratch_workers *tls_pool __attribute__((tls_model("initial-exec")));

/* Bumped in the child of every fork. A child has none of its parent's
 * worker threads, so a pool created before the fork runs serially there
 * and its destroy only frees memory. */
static uint32_t fork_generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	__atomic_fetch_add(&fork_generation, 1, __ATOMIC_RELAXED);
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static inline void count(uint64_t *field)
{
	__atomic_fetch_add(field, 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* Row spaces                                                             */
/* ---------------------------------------------------------------------- */

static size_t part_grain(const struct scratch_rows_part *part, unsigned n)
{
	size_t g = part->grain;

	if (g == 0)
		g = part->rows / ((size_t)GRAINS_PER_PART * n);
	if (g == 0)
		g = 1;
	return g < part->rows ? g : part->rows;
}

static size_t part_grains(const struct scratch_rows_part *part, unsigned n)
{
	size_t g;

	if (part->rows == 0)
		return 0;
	g = part_grain(part, n);
	return part->rows / g + (part->rows % g != 0);
}

/*
 * Pull grains from *cursor until every part is covered. The cursor counts
 * grains over all parts in order, so one fetch-add claims one grain and a
 * participant only ever walks forward through the parts: no per-part
 * storage, O(parts) walking per participant.
 */
static void rows_share(const struct scratch_rows_part *parts, size_t nparts, unsigned n,
                       unsigned participant, size_t *cursor)
{
	size_t p = 0, base = 0, grains = nparts ? part_grains(&parts[0], n) : 0;
	size_t grain = nparts && parts[0].rows ? part_grain(&parts[0], n) : 0;

	for (;;) {
		size_t k = __atomic_fetch_add(cursor, 1, __ATOMIC_RELAXED);
		size_t begin, end;

		while (p < nparts && k >= base + grains) {
			base += grains;
			if (++p < nparts) {
				grains = part_grains(&parts[p], n);
				grain = grains ? part_grain(&parts[p], n) : 0;
			}
		}
		if (p == nparts)
			return;
		begin = (k - base) * grain;
		/* not begin + grain < rows: that sum can wrap near SIZE_MAX */
		end = grain < parts[p].rows - begin ? begin + grain : parts[p].rows;
		parts[p].fn(parts[p].ctx, begin, end, participant);
	}
}

static void job_share(struct scratch_workers *w, const struct job *job, unsigned participant)
{
	tls_job_depth++;
	if (job->kind == JOB_RUN)
		job->fn(job->ctx, participant, job->n);
	else
		rows_share(job->parts, job->nparts, job->n, participant, &w->cursor);
	tls_job_depth--;
}

/* ---------------------------------------------------------------------- */
/* Sleeping and waking                                                    */
/* ---------------------------------------------------------------------- */

/*
 * Wait until the epoch differs from seen; returns the new epoch (read with
 * acquire, so the job slot written before it is visible).
 *
 * No wake-up can be missed. The worker stores parked = 1 and then loads the
 * epoch; the dispatcher stores the new epoch and then loads every parked
 * flag. All four accesses are sequentially consistent, so in their single
 * total order at least one side sees the other's store: either the worker
 * sees the new epoch and does not sleep, or the dispatcher sees parked = 1
 * and calls futex_wake after its epoch store. In the second case the
 * kernel's futex_wait compares the epoch with seen atomically with going to
 * sleep, so a wake that comes before the worker is asleep makes the wait
 * return EAGAIN instead of being lost.
 */
static uint32_t wait_epoch(struct scratch_workers *w, struct worker *me, uint32_t seen)
{
	uint32_t e;

	for (int i = 0; i < w->spin; i++) {
		e = __atomic_load_n(&w->epoch, __ATOMIC_ACQUIRE);
		if (e != seen)
			return e;
		scratch__spin_poll(i);
	}
	for (;;) {
		__atomic_store_n(&me->parked, 1, __ATOMIC_SEQ_CST);
		e = __atomic_load_n(&w->epoch, __ATOMIC_SEQ_CST);
		if (e == seen) {
			count(&w->oc->parks);
			scratch__os_futex_wait(&w->epoch, seen, -1);
			e = __atomic_load_n(&w->epoch, __ATOMIC_ACQUIRE);
		}
		__atomic_store_n(&me->parked, 0, __ATOMIC_RELAXED);
		if (e != seen)
			return e;
	}
}

/* The dispatcher's side of the argument above: called after the epoch
 * store, with one wake call for all sleepers, none when all spin. */
static void wake_parked(struct scratch_workers *w)
{
	for (unsigned i = 0; i < w->nworkers; i++) {
		if (__atomic_load_n(&w->workers[i].parked, __ATOMIC_SEQ_CST)) {
			count(&w->oc->wakes);
			scratch__os_futex_wake(&w->epoch, INT_MAX);
			return;
		}
	}
}

static inline bool alive(const struct scratch_workers *w);

/*
 * The dispatcher waits for done == workers, spinning, then sleeping on the
 * done futex. Same argument as wait_epoch, with the roles swapped: the
 * dispatcher stores caller_parked = 1 then loads done; the last worker adds
 * to done then loads caller_parked (both sequentially consistent). A
 * dispatcher that forked inside its own share returns in the child, where
 * no worker will ever finish: it stops waiting there.
 */
static void wait_done(struct scratch_workers *w)
{
	uint32_t n = w->nworkers, d;

	for (int i = 0; i < w->spin; i++) {
		if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) == n || !alive(w))
			return;
		scratch__spin_poll(i);
	}
	for (;;) {
		__atomic_store_n(&w->caller_parked, 1, __ATOMIC_SEQ_CST);
		d = __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
		if (d == n || !alive(w))
			break;
		count(&w->oc->parks);
		scratch__os_futex_wait(&w->done, d, -1);
	}
	__atomic_store_n(&w->caller_parked, 0, __ATOMIC_RELAXED);
}

/* A worker's end of a job. After its add it must not read the job slot:
 * the dispatcher may already be writing the next one. */
static void finish(struct scratch_workers *w)
{
	uint32_t d = __atomic_add_fetch(&w->done, 1, __ATOMIC_SEQ_CST);

	/* A stale caller_parked from a later dispatch only costs a spurious
	 * wake; the dispatcher re-checks done after every wait. */
	if (d == w->nworkers && __atomic_load_n(&w->caller_parked, __ATOMIC_SEQ_CST)) {
		count(&w->oc->wakes);
		scratch__os_futex_wake(&w->done, 1);
	}
}

static void *worker_main(void *arg)
{
	struct worker *me = arg;
	struct scratch_workers *w = me->pool;
	uint32_t seen = 0;

	/* A worker only ever runs jobs: any dispatch it makes is nested. */
	tls_job_depth = 1;
	tls_pool = w;
	for (;;) {
		seen = wait_epoch(w, me, seen);
		if (w->job.kind == JOB_STOP)
			break;
		job_share(w, &w->job, me->index);
		finish(w);
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Dispatch                                                               */
/* ---------------------------------------------------------------------- */

/* False in a child process: the workers stayed with the parent. */
static inline bool alive(const struct scratch_workers *w)
{
	return w->generation == __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
}

static bool take(struct scratch_workers *w)
{
	uint32_t expected = 0;

	return __atomic_compare_exchange_n(&w->busy, &expected, 1, false, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_RELAXED);
}

static void give_back(struct scratch_workers *w)
{
	__atomic_store_n(&w->busy, 0, __ATOMIC_RELEASE);
}

/* Publish the job held in w->job and start the workers. */
static void publish(struct scratch_workers *w)
{
	__atomic_store_n(&w->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->cursor, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->epoch, w->epoch + 1, __ATOMIC_SEQ_CST);
	wake_parked(w);
}

/* The caller holds the pool: hand job to every worker, run the caller's
 * share as the last participant, wait for the workers. */
static int run_parallel(struct scratch_workers *w, struct job *job, scratch__prepare_fn prepare,
                        void *prepare_ctx)
{
	int rc;

	job->n = w->nworkers + 1;
	if (prepare && (rc = prepare(prepare_ctx, job->n)) != 0) {
		give_back(w);
		return rc;
	}
	w->job = *job;
	SCRATCH__ADD(&w->oc->dispatches, 1);
	tls_pool = w;
	publish(w);
	job_share(w, &w->job, w->nworkers);
	wait_done(w);
	tls_pool = NULL;
	give_back(w);
	return 0;
}

/* Run job on this thread alone, as participant 0 of 1. */
static int run_inline(struct scratch_workers *w, struct job *job, scratch__prepare_fn prepare,
                      void *prepare_ctx)
{
	size_t cursor = 0;
	int rc;

	job->n = 1;
	if (prepare && (rc = prepare(prepare_ctx, 1)) != 0)
		return rc;
	const struct scratch_workers *outer = tls_pool;

	if (w) {
		count(&w->inline_runs);
		tls_pool = w; /* so a destroy of w from inside the job is refused */
	}
	tls_job_depth++;
	if (job->kind == JOB_RUN)
		job->fn(job->ctx, 0, 1);
	else
		rows_share(job->parts, job->nparts, 1, 0, &cursor);
	tls_job_depth--;
	tls_pool = outer;
	return 0;
}

/*
 * Run job with every participant, or serially on this thread when the pool
 * is serial, this thread is inside a job (nesting), the pool's threads
 * stayed in the parent of a fork, or another thread holds the pool: never
 * wait for anything but the workers of our own dispatch. prepare
 * (optional) learns the number of participants first and may refuse.
 */
static int dispatch(struct scratch_workers *w, struct job *job, scratch__prepare_fn prepare,
                    void *prepare_ctx)
{
	if (w && w->nworkers > 0 && tls_job_depth == 0 && alive(w) && take(w))
		return run_parallel(w, job, prepare, prepare_ctx);
	return run_inline(w, job, prepare, prepare_ctx);
}

int scratch__workers_run_prepared(scratch_workers_t *w, scratch__prepare_fn prepare,
                                  scratch_job_fn f, void *ctx)
{
	struct job job = {.kind = JOB_RUN, .fn = f, .ctx = ctx};

	if (!f)
		return -EINVAL;
	return dispatch(w, &job, prepare, ctx);
}

int scratch_workers_run(scratch_workers_t *w, scratch_job_fn f, void *ctx)
{
	return scratch__workers_run_prepared(w, NULL, f, ctx);
}

/* Every part valid, and the total number of grains fits a size_t for any
 * pool size (the cursor may overshoot by one claim per participant). */
static bool parts_valid(const struct scratch_rows_part *parts, size_t nparts)
{
	size_t total = SCRATCH_WORKERS_MAX;

	if (nparts > 0 && !parts)
		return false;
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].rows > 0 && !parts[i].fn)
			return false;
		if (__builtin_add_overflow(total, parts[i].rows, &total))
			return false;
	}
	return true;
}

int scratch_workers_run_many(scratch_workers_t *w, const struct scratch_rows_part *parts,
                             size_t nparts)
{
	struct job job = {.kind = JOB_ROWS, .parts = parts, .nparts = nparts};

	if (!parts_valid(parts, nparts))
		return -EINVAL;
	if (nparts == 0)
		return 0;
	return dispatch(w, &job, NULL, NULL);
}

int scratch_workers_run_rows(scratch_workers_t *w, size_t rows, size_t grain, scratch_rows_fn f,
                             void *ctx)
{
	struct scratch_rows_part part = {.fn = f, .ctx = ctx, .rows = rows, .grain = grain};

	return scratch_workers_run_many(w, &part, 1);
}

/* ---------------------------------------------------------------------- */
/* Creation and destruction                                               */
/* ---------------------------------------------------------------------- */

/* A bad SCRATCH_THREADS or SCRATCH_SPIN is said once per variable. */
static void warn_once(void *ctx, const char *line)
{
	if (!__atomic_exchange_n((bool *)ctx, true, __ATOMIC_RELAXED))
		scratch__warn(line);
}

static int env_count(const char *var, bool *warned)
{
	return (int)scratch__conf_env(var, getenv(var), warn_once, warned);
}

static int resolve_threads(int threads)
{
	static bool warned;
	unsigned ncpu;

	if (threads == SCRATCH_WORKERS_DEFAULT)
		threads = env_count("SCRATCH_THREADS", &warned);
	if (threads >= 0)
		return threads <= 1 ? 0 : threads - 1;
	ncpu = scratch__os_ncpu();
	return ncpu - 1 < DEFAULT_MAX_WORK ? (int)ncpu - 1 : DEFAULT_MAX_WORK;
}

static int resolve_spin(int spin)
{
	static bool warned;

	if (spin == SCRATCH_WORKERS_DEFAULT)
		spin = env_count("SCRATCH_SPIN", &warned);
	return spin >= 0 ? spin : DEFAULT_SPIN;
}

/* Pin worker i to the (i+1)-th CPU the process may use (best effort). */
static void pin_worker(pthread_t thread, unsigned i)
{
	cpu_set_t allowed, one;
	unsigned n, want, seen = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	n = (unsigned)CPU_COUNT(&allowed);
	if (n == 0)
		return;
	want = (i + 1) % n;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ != want)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(thread, sizeof(one), &one);
		return;
	}
}

static void name_worker(pthread_t thread, const char *prefix, unsigned i)
{
	char name[16];
	size_t pos = 0;

	/* Linux thread names hold 15 characters; keep the number visible. */
	scratch__fmt_str(name, 12, &pos, prefix);
	scratch__fmt_str(name, sizeof(name), &pos, "-");
	scratch__fmt_u64(name, sizeof(name), &pos, i + 1);
	pthread_setname_np(thread, name);
}

/* Tell the first started workers to stop and join them. */
static void stop_workers(struct scratch_workers *w, unsigned started)
{
	w->job.kind = JOB_STOP;
	__atomic_store_n(&w->epoch, w->epoch + 1, __ATOMIC_SEQ_CST);
	/* Unconditional: a worker that never ran has parked == 0 but may be
	 * about to sleep; the epoch compare in futex_wait covers it too. */
	scratch__os_futex_wake(&w->epoch, INT_MAX);
	for (unsigned i = 0; i < started; i++)
		pthread_join(w->workers[i].thread, NULL);
}

/* Start the worker threads with every signal blocked, so that signals
 * keep going to the host's own threads. Returns 0 or -errno. */
static int start_workers(struct scratch_workers *w, const struct scratch_workers_opts *opts)
{
	sigset_t all, old;
	unsigned i;
	int rc = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < w->nworkers; i++) {
		struct worker *wk = &w->workers[i];

		wk->pool = w;
		wk->index = i;
		rc = -pthread_create(&wk->thread, NULL, worker_main, wk);
		if (rc != 0)
			break;
		if (opts && opts->pin)
			pin_worker(wk->thread, i);
		name_worker(wk->thread, opts && opts->name ? opts->name : "scratch-w", i);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		stop_workers(w, i);
	return rc;
}

scratch_workers_t *scratch_workers_new(const struct scratch_workers_opts *opts)
{
	struct scratch_workers *w;
	size_t bytes;
	int nworkers, rc;

	if (opts && (opts->threads < SCRATCH_WORKERS_DEFAULT ||
	             opts->threads > SCRATCH_WORKERS_MAX || opts->spin < SCRATCH_WORKERS_DEFAULT)) {
		errno = EINVAL;
		return NULL;
	}
	nworkers = resolve_threads(opts ? opts->threads : SCRATCH_WORKERS_DEFAULT);
	bytes = sizeof(*w) + (size_t)nworkers * sizeof(struct worker);
	w = scratch__os_map(bytes);
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->map_bytes = bytes;
	w->nworkers = (unsigned)nworkers;
	w->spin = resolve_spin(opts ? opts->spin : SCRATCH_WORKERS_DEFAULT);
	pthread_once(&atfork_once, atfork_register);
	w->generation = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
	/* The mapping is page aligned, so the workers are cache-line aligned. */
	w->workers = (struct worker *)(void *)(w + 1);
	(void)scratch__init();
	w->owner = scratch__owner_register(SCRATCH__OWNER_WORKERS,
	                                   opts && opts->name ? opts->name : "scratch-w");
	w->oc = w->owner ? scratch__owner_counters(w->owner) : NULL;
	if (!w->oc)
		w->oc = &w->priv;
	SCRATCH__STORE(&w->oc->workers, w->nworkers);
	rc = start_workers(w, opts);
	if (rc != 0) {
		if (w->owner)
			scratch__owner_unregister(w->owner);
		scratch__os_unmap(w, bytes);
		errno = -rc;
		return NULL;
	}
	return w;
}

int scratch_workers_destroy(scratch_workers_t *w)
{
	if (!w)
		return 0;
	if (tls_pool == w)
		return -EBUSY;
	if (alive(w)) {
		/* Wait out a dispatch in flight on another thread. */
		while (!take(w))
			sched_yield();
		stop_workers(w, w->nworkers);
	}
	if (w->owner)
		scratch__owner_unregister(w->owner);
	scratch__os_unmap(w, w->map_bytes);
	return 0;
}

unsigned scratch_workers_size(const scratch_workers_t *w)
{
	return w ? w->nworkers + 1 : 1;
}

int scratch_workers_stats(const scratch_workers_t *w, struct scratch_workers_stats *ret_stats)
{
	struct scratch_workers_stats st = {0};
	size_t n;

	if (!w || !ret_stats || (n = scratch__stats_len(ret_stats->size, sizeof(st))) == 0)
		return -EINVAL;
	st.size = ret_stats->size;
	st.version = SCRATCH_WORKERS_STATS_VERSION;
	st.workers = w->nworkers;
	st.spin = (uint64_t)w->spin;
	st.dispatches = __atomic_load_n(&w->oc->dispatches, __ATOMIC_RELAXED);
	st.inline_runs = __atomic_load_n(&w->inline_runs, __ATOMIC_RELAXED);
	st.parks = __atomic_load_n(&w->oc->parks, __ATOMIC_RELAXED);
	st.wakes = __atomic_load_n(&w->oc->wakes, __ATOMIC_RELAXED);
	memcpy(ret_stats, &st, n);
	return 0;
}
