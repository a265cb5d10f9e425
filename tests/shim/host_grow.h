/*
 * host_grow.h - threads that keep the pools growing, for the transparency
 * hosts (host_fds, host_daemon, host_reopen).
 *
 * A grower allocates blocks of sizes drawn in [min, max] and holds every
 * one until its round ends, so no request can be served from an idle block:
 * each is a growth, and each growth takes a growth trace (a stack walk).
 * Only a block's first and last word are written and checked: the hosts
 * need address space and growths, not resident memory.
 */
#ifndef SCRATCH_HOST_GROW_H
#define SCRATCH_HOST_GROW_H

#include <pthread.h>
#include <stdlib.h>

#include "host_common.h"

#define HOST_GROW_MAX_BLOCKS 64

struct host_grow {
	size_t min, max;          /* request sizes, bytes */
	unsigned blocks;          /* blocks held at once (<= HOST_GROW_MAX_BLOCKS) */
	unsigned rounds;          /* rounds to run; 0: until *stop is set */
	const int *stop;          /* read with an atomic load when rounds == 0 */
	uint64_t seed;            /* different per thread */
	void (*after_call)(void); /* called after every malloc and free, or NULL */
	int bad;                  /* out: blocks not served or not intact */
};

static inline void host_grow_call_done(const struct host_grow *g)
{
	if (g->after_call)
		g->after_call();
}

/* Sizes spread over every class from min to max: a power-of-two step of
 * min, plus an odd number of pages below the next step. */
static inline size_t host_grow_size(const struct host_grow *g, uint64_t *rng)
{
	uint64_t r = host_rand(rng);
	size_t n = g->min;

	while (n < g->max / 2 && (r & 1)) {
		n *= 2;
		r >>= 1;
	}
	n += (size_t)(r % (n / 4096)) * 4096;
	return n < g->max ? n : g->max;
}

/* One round: allocate g->blocks blocks, then free them. Returns the
 * number of blocks that were not served or lost their first or last word. */
static inline int host_grow_round(struct host_grow *g, uint64_t *rng)
{
	void *held[HOST_GROW_MAX_BLOCKS];
	size_t size[HOST_GROW_MAX_BLOCKS];
	uint64_t w;
	int bad = 0;

	for (unsigned i = 0; i < g->blocks; i++) {
		size[i] = host_grow_size(g, rng);
		held[i] = malloc(size[i]);
		host_grow_call_done(g);
		if (!held[i]) {
			bad++;
			continue;
		}
		w = host_word(g->seed, i);
		memcpy(held[i], &w, 8);
		memcpy((char *)held[i] + size[i] - 8, &w, 8);
	}
	for (unsigned i = 0; i < g->blocks; i++) {
		if (!held[i])
			continue;
		w = host_word(g->seed, i);
		if (memcmp(held[i], &w, 8) || memcmp((char *)held[i] + size[i] - 8, &w, 8))
			bad++;
		free(held[i]);
		host_grow_call_done(g);
	}
	return bad;
}

/* pthread entry: arg is a struct host_grow. */
static inline void *host_grow_thread(void *arg)
{
	struct host_grow *g = arg;
	uint64_t rng = g->seed | 1;

	for (unsigned r = 0;
	     g->rounds ? r < g->rounds : !__atomic_load_n(g->stop, __ATOMIC_RELAXED); r++)
		g->bad += host_grow_round(g, &rng);
	return NULL;
}

/* Run n growers (n <= 8) made from proto to completion, each with its own
 * seed. Returns the number of bad blocks, or -1 when a thread could not
 * start. */
static inline int host_grow_threads(const struct host_grow *proto, unsigned n)
{
	struct host_grow g[8];
	pthread_t th[8];
	unsigned started = 0;
	int bad = 0;

	for (; started < n && started < 8; started++) {
		g[started] = *proto;
		g[started].seed = proto->seed + started + 1;
		if (pthread_create(&th[started], NULL, host_grow_thread, &g[started]) != 0)
			break;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		bad += g[i].bad;
	}
	return started == n ? bad : -1;
}

#endif /* SCRATCH_HOST_GROW_H */
