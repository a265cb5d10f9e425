/*
 * workers.h - what the worker pool offers libscratch's other files.
 *
 * The workspace's execute needs to know how many participants a dispatch
 * really gets (the pool may run a call serially: nested, concurrent or a
 * serial pool) before any participant starts, so that it can lease a team
 * of exactly that shape. That hook is internal; the public API is in
 * scratch.h.
 */
#ifndef SCRATCH_WORKERS_H
#define SCRATCH_WORKERS_H

#include "internal.h"

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
