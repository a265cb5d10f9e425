/*
 * host_stress.c - randomized multi-threaded allocation stress.
 *
 * Each thread runs a fixed, seeded sequence of malloc, calloc, realloc,
 * aligned allocations and frees over a mix of small, pooled and large
 * sizes. Every block carries a pattern (host_common.h) that is verified
 * before it is freed or moved; calloc's zeroes and realloc's kept prefix
 * are verified too. Blocks travel between threads through a shared table
 * (atomic exchange), so many frees are cross-thread. The byte at
 * malloc_usable_size - 1 of each block is written, so an overstated usable
 * size corrupts a neighbour and fails a later check.
 *
 * Usage: host_stress [threads [ops]]. Prints "stress ok", or what broke on
 * stderr and exits 1.
 */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "host_common.h"

#define LOCAL  48
#define SHARED 256

struct blk {
	unsigned char *p;
	size_t n;
	uint64_t seed;
};

/* Shared slots hold a small heap descriptor, freed by whoever takes it. */
static struct blk *shared[SHARED];
static long ops_per_thread = 30000;
static int bad;

static void broke(const char *what, const struct blk *b)
{
	fprintf(stderr, "host_stress: %s (size %zu)\n", what, b->n);
	__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
}

static void stamp(struct blk *b, uint64_t seed)
{
	size_t u = malloc_usable_size(b->p);

	if (u < b->n)
		broke("usable size below the request", b);
	else
		b->p[u - 1] = 0x77;
	b->seed = seed;
	host_fill(b->p, b->n, seed);
}

static void release(struct blk *b)
{
	if (!b->p)
		return;
	if (!host_check(b->p, b->n, b->n, b->seed))
		broke("pattern lost before free", b);
	free(b->p);
	b->p = NULL;
}

static bool zeroed(const unsigned char *p, size_t n)
{
	if (n <= HOST_DENSE_LIMIT) {
		for (size_t i = 0; i < n; i++)
			if (p[i])
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 <= n; i += HOST_STRIDE / 2)
		if (p[i] | p[i + 7])
			return false;
	return p[n - 1] == 0;
}

static const size_t aligns[] = {16, 64, 4096, 2 * HOST_MIB};

static void one_op(struct blk *local, uint64_t *rng, uint64_t *gen, int t)
{
	uint64_t r = host_rand(rng);
	struct blk *b = &local[r % LOCAL];
	unsigned op = (unsigned)((r >> 16) % 10);
	uint64_t seed = ((uint64_t)t << 40) | (*gen)++;

	switch (op) {
	case 0:
	case 1:
	case 2:
		release(b);
		b->n = host_size(rng);
		b->p = malloc(b->n);
		if (!b->p)
			return broke("malloc failed", b);
		stamp(b, seed);
		break;
	case 3:
		release(b);
		b->n = host_size(rng);
		b->p = calloc(1, b->n);
		if (!b->p)
			return broke("calloc failed", b);
		if (!zeroed(b->p, b->n))
			broke("calloc not zeroed", b);
		stamp(b, seed);
		break;
	case 4: {
		if (!b->p)
			break;
		size_t n = host_size(rng);
		unsigned char *q = realloc(b->p, n);
		if (!q)
			return broke("realloc failed", b);
		size_t keep = n < b->n ? n : b->n;
		if (!host_check(q, keep, b->n, b->seed))
			broke("realloc lost the contents", b);
		b->p = q;
		b->n = n;
		stamp(b, seed);
		break;
	}
	case 5: {
		release(b);
		size_t a = aligns[(r >> 24) % 4];
		void *p = NULL;
		b->n = host_size(rng);
		if (posix_memalign(&p, a, b->n) != 0 || ((uintptr_t)p & (a - 1)))
			return broke("posix_memalign", b);
		b->p = p;
		stamp(b, seed);
		break;
	}
	case 6:
	case 7: {
		/* Trade a block with whoever left one in a random shared slot. */
		if (!b->p)
			break;
		struct blk *d = malloc(sizeof(*d));
		if (!d)
			return broke("descriptor", b);
		*d = *b;
		struct blk *got =
		        __atomic_exchange_n(&shared[(r >> 32) % SHARED], d, __ATOMIC_ACQ_REL);
		b->p = NULL;
		if (got) {
			*b = *got;
			free(got);
		}
		break;
	}
	default:
		release(b);
		break;
	}
}

static void *stress_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	struct blk local[LOCAL] = {{0}};
	uint64_t rng = 0x9e3779b97f4a7c15 ^ (uint64_t)(t + 1), gen = 0;

	for (long i = 0; i < ops_per_thread; i++)
		one_op(local, &rng, &gen, t);
	for (int i = 0; i < LOCAL; i++)
		release(&local[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t th[64];

	if (argc > 2)
		ops_per_thread = atol(argv[2]);
	if (nthreads < 1 || nthreads > 64 || ops_per_thread < 1) {
		fprintf(stderr, "usage: host_stress [threads (1-64) [ops]]\n");
		return 2;
	}
	for (intptr_t t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, stress_thread, (void *)t) != 0) {
			fprintf(stderr, "host_stress: pthread_create failed\n");
			return 1;
		}
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	for (int s = 0; s < SHARED; s++) {
		if (!shared[s])
			continue;
		release(shared[s]);
		free(shared[s]);
	}
	if (bad)
		return 1;
	printf("stress ok\n");
	return 0;
}
