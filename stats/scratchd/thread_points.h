/*
 * thread_points.h - the per-thread part of a history sample: the retained
 * and leased bytes of at most THREAD_POINTS live threads (those retaining
 * the most, most first), and the rest summed, so a sample has one size
 * whatever the thread count and the history stays within scratchd's
 * memory budget. A sample embeds one struct thread_points; the history's
 * JSON renders it as "thread_points" and "other_threads".
 */
#ifndef SCRATCH_STATS_THREAD_POINTS_H
#define SCRATCH_STATS_THREAD_POINTS_H

#include <jansson.h>
#include <stdint.h>

#include "segread.h"

#define THREAD_POINTS 16

struct thread_point {
	int32_t tid;
	uint64_t retained, leased;
};

struct thread_points {
	uint32_t n;      /* entries of p[], most retained first (ties: lower tid) */
	uint32_t others; /* live threads left out, summed below */
	struct thread_point p[THREAD_POINTS];
	uint64_t other_retained, other_leased;
};

/* Fill tp from the n thread slots t (exited slots are left out). */
void thread_points_fill(struct thread_points *tp, const struct segread_thread *t, uint32_t n);

/* Add tp to a sample's JSON object o: "thread_points" [{tid, retained,
 * leased}] and "other_threads" {threads, retained, leased}. */
void thread_points_json(const struct thread_points *tp, json_t *o);

#endif /* SCRATCH_STATS_THREAD_POINTS_H */
