/*
 * workers.h - what the worker pool offers libscratch's other files.
 *
 * The workspace's execute needs to know how many participants a dispatch
 * really gets (the pool may run a call serially: nested, concurrent or a
 * serial pool) before any participant starts, so that it can lease a team
 * of exactly that shape. That hook is internal; the public API is in
 * scratch.h. The spin-wait poll is shared with the workspace's barrier.
 */
#ifndef SCRATCH_WORKERS_H
#define SCRATCH_WORKERS_H

#include <sched.h>

#include "internal.h"

static inline void scratch__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Poll i of a spin loop. Every 32nd poll yields the CPU: on a machine with
 * more runnable threads than CPUs, the thread we wait for may be queued
 * behind us on this very CPU, and pausing alone would burn the whole budget
 * before it runs. With idle CPUs sched_yield returns at once.
 */
static inline void scratch__spin_poll(int i)
{
	if ((i & 31) == 31)
		sched_yield();
	else
		scratch__cpu_relax();
}

/* Called once on the dispatching thread with the number of participants
 * the call will have, before any of them runs f. Nonzero (a -errno) stops
 * the call: no participant runs and run_prepared returns it. */
typedef int (*scratch__prepare_fn)(void *ctx, unsigned n);

/*
 * As scratch_workers_run(w, f, ctx), with prepare(ctx, n) first. w may be
 * NULL (serial). Returns 0, -EINVAL for a NULL f, or prepare's error.
 */
SCRATCH_HIDDEN int scratch__workers_run_prepared(scratch_workers_t *w, scratch__prepare_fn prepare,
                                                 scratch_job_fn f, void *ctx);

#endif /* SCRATCH_WORKERS_H */
