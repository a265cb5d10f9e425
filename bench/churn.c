/*
 * churn.c - a large-block churn host: a live set of blocks of random sizes,
 * replaced one at a time.
 *
 * The host keeps --blocks blocks of random sizes between --min and --max MiB
 * (page-granular, drawn from a seeded PRNG, so every allocator sees the same
 * sequence) and, --steps times, frees a random one, mallocs a new one of a
 * new random size and touches every page of it: a host whose tensors change
 * shape all the time (a server batching requests of random lengths). What it
 * measures is what the allocator keeps resident beyond the live set, and what
 * its reuse costs in faults and time.
 *
 * The program uses plain malloc/free and never links libscratch, so any
 * allocator can be LD_PRELOADed under it unchanged.
 *
 * Output: a human line, then one line "churn key=value ..." for scripts:
 * steps_per_s over the steps (the initial fill left out), faults (minflt +
 * majflt) per step, peak RSS (VmHWM) and the live set's own peak, in KiB.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define KIB        ((size_t)1 << 10)
#define MIB        ((size_t)1 << 20)
#define PAGE       (4 * KIB)
#define MAX_BLOCKS 4096

struct churn {
	unsigned blocks;
	unsigned steps;
	unsigned min_mib;
	unsigned max_mib;
	unsigned seed;
	uint64_t rng;
	char *live[MAX_BLOCKS];
	size_t size[MAX_BLOCKS];
	size_t live_bytes;
	size_t live_peak;
};

/* A random size from min_mib to max_mib MiB, in whole pages. */
static size_t random_size(struct churn *c)
{
	size_t lo = c->min_mib * MIB / PAGE, hi = c->max_mib * MIB / PAGE;

	return (lo + bench_next_random(&c->rng) % (hi - lo + 1)) * PAGE;
}

/* One write per page: the block becomes resident, as a host's tensor does
 * when it is first written, without the cost of writing every byte. */
static void touch(char *p, size_t n, unsigned char fill)
{
	size_t i;

	for (i = 0; i < n; i += PAGE)
		p[i] = (char)fill;
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Slot i gets a new block of a new random size, touched. Returns false when
 * malloc fails (the slot is then empty). */
static bool refill(struct churn *c, unsigned i, unsigned char fill)
{
	size_t n = random_size(c);

	c->live[i] = malloc(n);
	if (!c->live[i])
		return false;
	touch(c->live[i], n, fill);
	c->size[i] = n;
	c->live_bytes += n;
	if (c->live_bytes > c->live_peak)
		c->live_peak = c->live_bytes;
	return true;
}

static void release(struct churn *c, unsigned i)
{
	free(c->live[i]);
	c->live[i] = NULL;
	c->live_bytes -= c->size[i];
	c->size[i] = 0;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: churn [--blocks N] [--steps N] [--min MIB] [--max MIB] [--seed N]\n"
	        "  --blocks N  blocks in the live set (default 32, max %d)\n"
	        "  --steps N   blocks replaced, one at a time (default 2000)\n"
	        "  --min MIB   smallest block, MiB (default 5)\n"
	        "  --max MIB   largest block, MiB (default 25)\n"
	        "  --seed N    the seed of the size and victim sequence (default 1)\n",
	        MAX_BLOCKS);
}

/* Parse argv into c. Returns 0, 1 (help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct churn *c)
{
	const struct bench_opt opts[] = {
	        {"--blocks", &c->blocks, 1, MAX_BLOCKS}, {"--steps", &c->steps, 1, 1u << 24},
	        {"--min", &c->min_mib, 1, 1024},         {"--max", &c->max_mib, 1, 1024},
	        {"--seed", &c->seed, 0, UINT_MAX},
	};
	int rc = bench_parse_opts("churn", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), usage);

	if (rc != 0)
		return rc;
	if (c->min_mib > c->max_mib) {
		fprintf(stderr, "churn: --min (%u) must not exceed --max (%u)\n", c->min_mib,
		        c->max_mib);
		return -1;
	}
	c->rng = c->seed;
	return 0;
}

/* Fill the live set, then replace a random block --steps times. Returns 0, or
 * 1 when malloc failed. */
static int churn_run(struct churn *c)
{
	double t0, t1;
	long f0, f1;
	unsigned i, s;
	int rc = 0;

	for (i = 0; i < c->blocks; i++)
		if (!refill(c, i, 1))
			goto out_fail;
	f0 = bench_faults();
	t0 = bench_now_s();
	for (s = 0; s < c->steps; s++) {
		i = (unsigned)(bench_next_random(&c->rng) % c->blocks);
		release(c, i);
		if (!refill(c, i, (unsigned char)(s + 2)))
			goto out_fail;
	}
	t1 = bench_now_s();
	f1 = bench_faults();
	printf("churn: %u blocks of %u-%u MiB, %u steps: %.0f steps/s, %.1f faults/step, "
	       "peak RSS %.1f MiB (live set peak %.1f MiB)\n",
	       c->blocks, c->min_mib, c->max_mib, c->steps, c->steps / (t1 - t0),
	       (double)(f1 - f0) / c->steps, (double)bench_peak_rss_kib() / 1024.0,
	       (double)c->live_peak / (double)MIB);
	printf("churn blocks=%u min_mib=%u max_mib=%u steps=%u seconds=%.4f steps_per_s=%.2f "
	       "faults=%ld faults_per_step=%.2f peak_rss_kib=%ld live_peak_kib=%zu\n",
	       c->blocks, c->min_mib, c->max_mib, c->steps, t1 - t0, c->steps / (t1 - t0), f1 - f0,
	       (double)(f1 - f0) / c->steps, bench_peak_rss_kib(), c->live_peak / KIB);
	goto out_free;
out_fail:
	fprintf(stderr, "churn: malloc failed\n");
	rc = 1;
out_free:
	for (i = 0; i < c->blocks; i++)
		if (c->live[i])
			release(c, i);
	return rc;
}

int main(int argc, char **argv)
{
	static struct churn c = {
	        .blocks = 32, .steps = 2000, .min_mib = 5, .max_mib = 25, .seed = 1};
	int rc = parse_args(argc, argv, &c);

	if (rc)
		return rc > 0 ? 0 : 2;
	return churn_run(&c);
}
