/*
 * grow.c - a buffer grown by realloc: a host whose sequence buffer (a KV
 * cache, a token log) gets longer as it runs.
 *
 * --rounds times, the host grows one buffer from --from MiB to --to MiB by an
 * eighth at a time with realloc, writes the part each step adds, and frees it
 * at the end. What it measures is what a growing realloc costs: copying the
 * old contents or moving its pages, and the faults of the new part.
 *
 * The program uses plain malloc/realloc/free and never links libscratch, so
 * any allocator can be LD_PRELOADed under it unchanged.
 *
 * Output: a human line, then one line "grow key=value ..." for scripts:
 * us_per_realloc (the realloc calls alone), seconds (everything, the writes
 * too), faults (minflt + majflt) per realloc and peak RSS (VmHWM) in KiB.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MIB ((size_t)1 << 20)

struct grow {
	unsigned rounds;
	unsigned from_mib;
	unsigned to_mib;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: grow [--rounds N] [--from MIB] [--to MIB]\n"
	             "  --rounds N  buffers grown, one after the other (default 20)\n"
	             "  --from MIB  the first size (default 4)\n"
	             "  --to MIB    grown by an eighth at a time up to this size (default 256)\n");
}

/* Parse argv into g. Returns 0, 1 (help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct grow *g)
{
	const struct bench_opt opts[] = {
	        {"--rounds", &g->rounds, 1, 65536},
	        {"--from", &g->from_mib, 1, 65536},
	        {"--to", &g->to_mib, 1, 65536},
	};
	int rc = bench_parse_opts("grow", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), usage);

	if (rc != 0)
		return rc;
	if (g->from_mib > g->to_mib) {
		fprintf(stderr, "grow: --from (%u) must not exceed --to (%u)\n", g->from_mib,
		        g->to_mib);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct grow g = {.rounds = 20, .from_mib = 4, .to_mib = 256};
	double in_realloc = 0, t0;
	unsigned long reallocs = 0;
	long f0;
	int rc = parse_args(argc, argv, &g);

	if (rc != 0)
		return rc < 0 ? 2 : 0;
	t0 = bench_now_s();
	f0 = bench_faults();
	for (unsigned r = 0; r < g.rounds; r++) {
		size_t size = (size_t)g.from_mib * MIB, last = (size_t)g.to_mib * MIB;
		char *buf = malloc(size);

		if (buf == NULL) {
			fprintf(stderr, "grow: malloc(%zu) failed\n", size);
			return 1;
		}
		memset(buf, (int)r, size);
		while (size < last) {
			size_t next = size + size / 8 < last ? size + size / 8 : last;
			double a = bench_now_s();
			char *q = realloc(buf, next);

			in_realloc += bench_now_s() - a;
			reallocs++;
			if (q == NULL) {
				fprintf(stderr, "grow: realloc(%zu) failed\n", next);
				free(buf);
				return 1;
			}
			if (q[size - 1] != (char)r || q[0] != (char)r) {
				fprintf(stderr, "grow: realloc lost the contents at %zu bytes\n",
				        size);
				return 1;
			}
			memset(q + size, (int)r, next - size);
			buf = q;
			size = next;
		}
		free(buf);
	}
	double secs = bench_now_s() - t0;
	long faults = bench_faults() - f0;
	double us = reallocs ? in_realloc * 1e6 / (double)reallocs : 0;

	printf("grow: %u buffers grown %u -> %u MiB by an eighth: %.1f us per realloc, %.1f "
	       "faults per realloc, peak RSS %.1f MiB\n",
	       g.rounds, g.from_mib, g.to_mib, us,
	       (double)faults / (double)(reallocs ? reallocs : 1),
	       (double)bench_peak_rss_kib() / 1024);
	printf("grow rounds=%u from_mib=%u to_mib=%u reallocs=%lu seconds=%.4f us_per_realloc=%.2f "
	       "faults=%ld faults_per_realloc=%.2f peak_rss_kib=%ld\n",
	       g.rounds, g.from_mib, g.to_mib, reallocs, secs, us, faults,
	       (double)faults / (double)(reallocs ? reallocs : 1), bench_peak_rss_kib());
	return 0;
}
