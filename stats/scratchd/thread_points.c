/*
 * thread_points.c - the per-thread part of scratchd's history samples
 * (thread_points.h): the THREAD_POINTS live threads retaining the most,
 * kept sorted as they are read, and the rest summed.
 */
#include "config.h"

#include <stdlib.h>

#include "thread_points.h"

/* Whether a ranks before b: more retained first, then the lower tid (so
 * the choice among equals is stable from one sample to the next). */
static bool ranks_before(const struct thread_point *a, const struct thread_point *b)
{
	return a->retained != b->retained ? a->retained > b->retained : a->tid < b->tid;
}

/* Insert p into the sorted, bounded list of s; what falls off the end is
 * added to the others. */
static void keep_point(struct thread_points *s, struct thread_point p)
{
	uint32_t i = s->n;

	if (i == THREAD_POINTS) {
		struct thread_point *last = &s->p[i - 1];

		if (!ranks_before(&p, last)) {
			s->others++;
			s->other_retained += p.retained;
			s->other_leased += p.leased;
			return;
		}
		s->others++;
		s->other_retained += last->retained;
		s->other_leased += last->leased;
		i--;
	} else {
		s->n++;
	}
	for (; i > 0 && ranks_before(&p, &s->p[i - 1]); i--)
		s->p[i] = s->p[i - 1];
	s->p[i] = p;
}

void thread_points_fill(struct thread_points *s, const struct segread_thread *t, uint32_t n)
{
	s->n = s->others = 0;
	s->other_retained = s->other_leased = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (t[i].state != SCRATCH_SEG_LIVE)
			continue;
		keep_point(s, (struct thread_point){.tid = t[i].tid,
		                                    .retained = segread_retained(&t[i].c),
		                                    .leased = segread_leased(&t[i].c)});
	}
}

static json_t *u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

void thread_points_json(const struct thread_points *s, json_t *o)
{
	json_t *a = json_array();

	for (uint32_t i = 0; i < s->n; i++)
		json_array_append_new(a, json_pack("{s:i,s:o,s:o}", "tid", s->p[i].tid, "retained",
		                                   u64(s->p[i].retained), "leased",
		                                   u64(s->p[i].leased)));
	json_object_set_new(o, "thread_points", a);
	json_object_set_new(o, "other_threads",
	                    json_pack("{s:i,s:o,s:o}", "threads", (int)s->others, "retained",
	                              u64(s->other_retained), "leased", u64(s->other_leased)));
}
