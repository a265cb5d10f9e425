/*
 * host_semantics.c - the malloc family's edge cases, as glibc specifies them.
 *
 * A plain program (not linked to libscratch). Every check prints one line
 * on stdout whose text depends only on the outcome the C library and glibc
 * specify, never on addresses or an allocator's rounding, so the output is
 * the same with and without the preload shim; shim_semantics.test compares
 * them. A violated guarantee also makes the exit status 1.
 *
 * When the shim is loaded (scratch_owns resolves), pooled sizes are also
 * checked for what the shim promises beyond glibc: they are pool blocks,
 * page aligned, with malloc_usable_size the block's capacity, and realloc
 * within the capacity stays in place. Those findings go to stderr only.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The huge and failed requests below are the point of this file. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#if __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static int failures;
static bool (*owns)(const void *);
static size_t (*usable)(const void *);
static size_t pool_min = SIZE_MAX, pool_max;

static void check(bool ok, const char *what)
{
	printf("%-60s %s\n", what, ok ? "ok" : "FAILED");
	if (!ok)
		failures++;
}

static void note(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "shim promise broken: %s\n", what);
		failures++;
	}
}

static bool pooled(size_t n)
{
	return owns != NULL && n >= pool_min && n <= pool_max;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static bool intact(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			return false;
	return true;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static const size_t sizes[] = {
        1,           15,           16,           100,          4095,      4096,
        60 * KIB,    64 * KIB - 1, 64 * KIB,     64 * KIB + 1, 100 * KIB, 1 * MIB,
        2 * MIB - 1, 2 * MIB,      3 * MIB + 17, 64 * MIB,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_malloc(void)
{
	char what[128];
	void *a = malloc(0), *b = malloc(0);

	check(a != NULL && b != NULL && a != b, "malloc(0) gives distinct blocks");
	free(a);
	free(b);
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		errno = 4242;
		unsigned char *p = malloc(n);
		snprintf(what, sizeof(what), "malloc(%zu): aligned 16, usable, errno kept", n);
		check(p && (uintptr_t)p % 16 == 0 && malloc_usable_size(p) >= n && errno == 4242,
		      what);
		if (!p)
			continue;
		fill(p, n, 7);
		/* Every byte malloc_usable_size admits may be written. */
		memset(p + n, 0x5a, malloc_usable_size(p) - n);
		snprintf(what, sizeof(what), "malloc(%zu): contents kept", n);
		check(intact(p, n, 7), what);
		if (pooled(n)) {
			note(owns(p), "a pooled size comes from the pool");
			note((uintptr_t)p % 4096 == 0, "pool blocks are page aligned");
			note(malloc_usable_size(p) == usable(p), "usable size is the capacity");
		}
		errno = 4343;
		free(p);
		snprintf(what, sizeof(what), "free(malloc(%zu)) keeps errno", n);
		check(errno == 4343, what);
	}
	errno = 0;
	check(malloc(SIZE_MAX) == NULL && errno == ENOMEM, "malloc(SIZE_MAX): NULL, ENOMEM");
	errno = 0;
	check(malloc((size_t)PTRDIFF_MAX + 1) == NULL && errno == ENOMEM,
	      "malloc(PTRDIFF_MAX + 1): NULL, ENOMEM");
	errno = 4444;
	free(NULL);
	check(errno == 4444, "free(NULL) is a no-op");
	check(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) == 0");
}

static void test_calloc(void)
{
	char what[128];

	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		/* Dirty a block of the same size first, so a recycled one shows. */
		unsigned char *d = malloc(n);
		if (d) {
			memset(d, 0xa5, n);
			free(d);
		}
		errno = 4242;
		unsigned char *p = calloc(1, n);
		snprintf(what, sizeof(what), "calloc(1, %zu): zeroed, errno kept", n);
		check(p && all_zero(p, n) && errno == 4242, what);
		free(p);
		p = calloc(n, 1);
		snprintf(what, sizeof(what), "calloc(%zu, 1): zeroed", n);
		check(p && all_zero(p, n), what);
		free(p);
	}
	void *p = calloc(0, 0);
	check(p != NULL, "calloc(0, 0) gives a block");
	free(p);
	p = calloc(0, 100);
	check(p != NULL, "calloc(0, 100) gives a block");
	free(p);
	errno = 0;
	check(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "calloc overflow: NULL, ENOMEM");
	errno = 0;
	check(calloc((size_t)1 << 32, (size_t)1 << 32) == NULL && errno == ENOMEM,
	      "calloc(2^32, 2^32): NULL, ENOMEM");
	errno = 0;
	check(calloc(1, SIZE_MAX) == NULL && errno == ENOMEM, "calloc(1, SIZE_MAX): NULL, ENOMEM");
}

/* Sizes a block goes through: up into the pools, between classes, out
 * beyond them and back down below the threshold. */
static const size_t path[] = {
        100,     70 * KIB, 200 * KIB, 5 * MIB,      5 * MIB + 100, 40 * MIB,  100 * KIB, 50,
        1 * MIB, 10,       64 * KIB,  64 * KIB - 1, 3 * MIB,       128 * KIB, 1,
};

static void test_realloc(void)
{
	char what[160];
	unsigned char *p = realloc(NULL, 1000);

	check(p != NULL && malloc_usable_size(p) >= 1000, "realloc(NULL, 1000) is malloc(1000)");
	fill(p, 1000, 3);
	size_t have = 1000;
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
		size_t n = path[i];
		errno = 4242;
		unsigned char *q = realloc(p, n);
		size_t keep = have < n ? have : n;
		snprintf(what, sizeof(what), "realloc %zu -> %zu: contents kept, errno kept", have,
		         n);
		check(q && intact(q, keep, 3) && malloc_usable_size(q) >= n && errno == 4242, what);
		if (!q)
			return;
		fill(q, n, 3);
		p = q;
		have = n;
	}
	errno = 0;
	unsigned char *q = realloc(p, SIZE_MAX);
	check(q == NULL && errno == ENOMEM && intact(p, have, 3),
	      "realloc(p, SIZE_MAX): NULL, ENOMEM, p intact");
	errno = 4242;
	check(realloc(p, 0) == NULL && errno == 4242, "realloc(p, 0) frees p, returns NULL");

	/* A block grows in place while its capacity lasts. */
	p = malloc(100 * KIB);
	if (p && pooled(100 * KIB)) {
		size_t cap = malloc_usable_size(p);
		note(realloc(p, cap) == p, "realloc within the capacity stays in place");
		note(realloc(p, 100 * KIB + 1) == p, "a small growth stays in place");
	}
	if (p) {
		fill(p, 100 * KIB, 5);
		errno = 0;
		q = realloc(p, SIZE_MAX);
		check(q == NULL && errno == ENOMEM && intact(p, 100 * KIB, 5),
		      "realloc(100 KiB block, SIZE_MAX): NULL, ENOMEM, intact");
	}
	free(p);
	p = realloc(NULL, 0);
	check(p != NULL, "realloc(NULL, 0) gives a block");
	free(p);

	p = reallocarray(NULL, 1000, 100);
	check(p != NULL && malloc_usable_size(p) >= 100000, "reallocarray(NULL, 1000, 100)");
	if (p) {
		fill(p, 100000, 9);
		q = reallocarray(p, 2000, 1000);
		check(q && intact(q, 100000, 9), "reallocarray grows, contents kept");
		p = q ? q : p;
	}
	errno = 0;
	q = reallocarray(p, SIZE_MAX / 2, 3);
	check(q == NULL && errno == ENOMEM && intact(p, 100000, 9),
	      "reallocarray overflow: NULL, ENOMEM, p intact");
	free(p);
}

static const size_t alignments[] = {
        8, 16, 32, 64, 256, 4096, 8192, 64 * KIB, 2 * MIB, 4 * MIB,
};
static const size_t asizes[] = {0, 1, 100, 100 * KIB, 1 * MIB, 4 * MIB, 9 * MIB};

static void test_posix_memalign(void)
{
	char what[128];
	void *p, *sentinel = (void *)&p;

	for (size_t i = 0; i < sizeof(alignments) / sizeof(alignments[0]); i++) {
		for (size_t j = 0; j < sizeof(asizes) / sizeof(asizes[0]); j++) {
			size_t a = alignments[i], n = asizes[j];
			p = sentinel;
			errno = 4242;
			int rc = posix_memalign(&p, a, n);
			snprintf(what, sizeof(what), "posix_memalign(%zu, %zu)", a, n);
			check(rc == 0 && p != sentinel && (uintptr_t)p % a == 0 &&
			              malloc_usable_size(p) >= n && errno == 4242,
			      what);
			if (rc == 0) {
				memset(p, 1, n);
				if (pooled(n) && a <= 4096)
					note(owns(p), "an aligned pooled size comes from the pool");
				free(p);
			}
		}
	}
	static const size_t bad[] = {0, 1, 2, 4, 12, 24, 48, 100, 4097};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = sentinel;
		int rc = posix_memalign(&p, bad[i], 1000);
		snprintf(what, sizeof(what), "posix_memalign(%zu, 1000): EINVAL, untouched",
		         bad[i]);
		check(rc == EINVAL && p == sentinel, what);
		p = sentinel;
		rc = posix_memalign(&p, bad[i], 1 * MIB);
		snprintf(what, sizeof(what), "posix_memalign(%zu, 1 MiB): EINVAL, untouched",
		         bad[i]);
		check(rc == EINVAL && p == sentinel, what);
	}
	p = sentinel;
	check(posix_memalign(&p, 64, SIZE_MAX - 4096) == ENOMEM && p == sentinel,
	      "posix_memalign(64, huge): ENOMEM, untouched");
	p = sentinel;
	check(posix_memalign(&p, (size_t)1 << 62, 1 * MIB) == ENOMEM && p == sentinel,
	      "posix_memalign(2^62, 1 MiB): ENOMEM, untouched");
}

typedef void *(*align_fn)(size_t, size_t);

static void test_memalign_like(const char *name, align_fn fn)
{
	char what[128];

	for (size_t i = 0; i < sizeof(alignments) / sizeof(alignments[0]); i++) {
		for (size_t j = 0; j < sizeof(asizes) / sizeof(asizes[0]); j++) {
			size_t a = alignments[i], n = asizes[j];
			errno = 4242;
			void *p = fn(a, n);
			snprintf(what, sizeof(what), "%s(%zu, %zu)", name, a, n);
			check(p && (uintptr_t)p % a == 0 && malloc_usable_size(p) >= n &&
			              errno == 4242,
			      what);
			if (p)
				memset(p, 1, n);
			free(p);
		}
	}
	/* glibc 2.36: no C11 check, an odd alignment is rounded up to a power
	 * of two; one above SIZE_MAX / 2 + 1 is EINVAL. */
	static const size_t odd[] = {0, 1, 3, 24, 100, 5000, 3 * MIB};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t want = 1;
		while (want < odd[i])
			want <<= 1;
		for (size_t j = 0; j < 2; j++) {
			size_t n = j ? 2 * MIB : 1000;
			void *p = fn(odd[i], n);
			snprintf(what, sizeof(what), "%s(%zu, %zu): aligned to %zu", name, odd[i],
			         n, want);
			check(p && (uintptr_t)p % want == 0 && malloc_usable_size(p) >= n, what);
			free(p);
		}
	}
	errno = 0;
	snprintf(what, sizeof(what), "%s(SIZE_MAX, 100): NULL, EINVAL", name);
	check(fn(SIZE_MAX, 100) == NULL && errno == EINVAL, what);
	errno = 0;
	snprintf(what, sizeof(what), "%s(SIZE_MAX, 1 MiB): NULL, EINVAL", name);
	check(fn(SIZE_MAX, 1 * MIB) == NULL && errno == EINVAL, what);
	errno = 0;
	snprintf(what, sizeof(what), "%s(64, SIZE_MAX - 4096): NULL, ENOMEM", name);
	check(fn(64, SIZE_MAX - 4096) == NULL && errno == ENOMEM, what);
}

static void test_page_allocs(void)
{
	char what[128];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t j = 0; j < sizeof(asizes) / sizeof(asizes[0]); j++) {
		size_t n = asizes[j];
		void *p = valloc(n);
		snprintf(what, sizeof(what), "valloc(%zu): page aligned", n);
		check(p && (uintptr_t)p % page == 0 && malloc_usable_size(p) >= n, what);
		if (p)
			memset(p, 2, n);
		free(p);
		p = pvalloc(n);
		snprintf(what, sizeof(what), "pvalloc(%zu): page aligned, whole pages", n);
		check(p && (uintptr_t)p % page == 0 &&
		              malloc_usable_size(p) >= ((n + page - 1) & ~(page - 1)),
		      what);
		if (p)
			memset(p, 2, (n + page - 1) & ~(page - 1));
		free(p);
	}
	errno = 0;
	check(valloc(SIZE_MAX - 100) == NULL && errno == ENOMEM, "valloc(huge): NULL, ENOMEM");
	errno = 0;
	check(pvalloc(SIZE_MAX - 100) == NULL && errno == ENOMEM, "pvalloc(huge): NULL, ENOMEM");
}

/* cfree is gone from glibc's headers but still exported for old binaries
 * (as cfree@GLIBC_2.2.5, which the shim's unversioned cfree answers). */
static void test_cfree(void)
{
	void (*cf)(void *) =
	        (void (*)(void *))(uintptr_t)dlvsym(RTLD_DEFAULT, "cfree", "GLIBC_2.2.5");

	check(cf != NULL, "cfree@GLIBC_2.2.5 is there");
	if (!cf)
		return;
	errno = 4242;
	cf(malloc(100));
	cf(malloc(1 * MIB));
	cf(NULL);
	check(errno == 4242, "cfree frees, errno kept");
}

int main(void)
{
	owns = (bool (*)(const void *))(uintptr_t)dlsym(RTLD_DEFAULT, "scratch_owns");
	usable = (size_t(*)(const void *))(uintptr_t)dlsym(RTLD_DEFAULT, "scratch_usable_size");
	bool (*range)(size_t *, size_t *) =
	        (bool (*)(size_t *, size_t *))(uintptr_t)dlsym(RTLD_DEFAULT, "scratch_range");
	if (owns && usable && range && !range(&pool_min, &pool_max))
		owns = NULL; /* pools off: nothing is pooled */
	if (!usable || !range)
		owns = NULL;

	test_malloc();
	test_calloc();
	test_realloc();
	test_posix_memalign();
	test_memalign_like("aligned_alloc", aligned_alloc);
	test_memalign_like("memalign", memalign);
	test_page_allocs();
	test_cfree();
	fflush(stdout);
	if (owns)
		fprintf(stderr, "host_semantics: pool checks done (range %zu..%zu)\n", pool_min,
		        pool_max);
	return failures ? 1 : 0;
}
