/*
 * bench.h - the helpers the bench programs share: clocks, peak RSS, option
 * parsing, a sink for pointers, the median, a PRNG.
 *
 * Every helper is static inline, as each program's own copy was static: the
 * programs time loops of a few nanoseconds (pair.c and small.c count the
 * instructions of a malloc+free pair under callgrind), and a helper called out
 * of line inside a timed loop would add its call to what is measured.
 */
#ifndef SCRATCH_BENCH_H
#define SCRATCH_BENCH_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Tell the compiler that p escapes and memory is read, so a malloc+free pair
 * or the writes to a block are not elided. Emits no instruction. */
static inline void bench_keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Seconds on clock id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline double bench_clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of wall-clock time (CLOCK_MONOTONIC). */
static inline double bench_now_s(void)
{
	return bench_clock_s(CLOCK_MONOTONIC);
}

/* Nanoseconds of wall-clock time (CLOCK_MONOTONIC). */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Page faults of this process so far (minor and major, every thread). */
static inline long bench_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* The peak resident set in KiB: VmHWM of this process image (ru_maxrss also
 * counts the image before an exec), else ru_maxrss. */
static inline long bench_peak_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
				break;
		fclose(f);
	}
	if (kib < 0) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		kib = ru.ru_maxrss;
	}
	return kib;
}

/* Parse s, a whole decimal number in [lo, hi], into *ret. Returns false, and
 * leaves *ret alone, for anything else. */
static inline bool bench_parse_ulong(const char *s, unsigned long lo, unsigned long hi,
                                     unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

/* bench_parse_ulong for an unsigned. */
static inline bool bench_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *ret)
{
	unsigned long v;

	if (!bench_parse_ulong(s, lo, hi, &v))
		return false;
	*ret = (unsigned)v;
	return true;
}

/* One numeric option of a bench program: "--name N", N in [lo, hi], into
 * *target. */
struct bench_opt {
	const char *name;
	unsigned *target;
	unsigned lo, hi;
};

/* Parse argv, a list of "--name N" options, into opts[0..n). --help or -h
 * prints usage to standard output and returns 1; an unknown option or a bad
 * number prints one error (the former with usage) to standard error and
 * returns -1; else 0. prog names the program in the errors. */
static inline int bench_parse_opts(const char *prog, int argc, char **argv,
                                   const struct bench_opt *opts, size_t n, void (*usage)(FILE *))
{
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i];
		const struct bench_opt *o = NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		for (size_t k = 0; k < n && o == NULL; k++)
			if (!strcmp(a, opts[k].name))
				o = &opts[k];
		if (o == NULL) {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
			usage(stderr);
			return -1;
		}
		if (i + 1 >= argc || !bench_parse_uint(argv[i + 1], o->lo, o->hi, o->target)) {
			fprintf(stderr, "%s: %s needs a number from %u to %u\n", prog, a, o->lo,
			        o->hi);
			return -1;
		}
	}
	return 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n), n > 0 (the mean of the middle two when n is even).
 * Sorts v. */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The next number of a splitmix64 sequence: a seeded PRNG, so that every
 * allocator under test sees the same sizes. */
static inline uint64_t bench_next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
