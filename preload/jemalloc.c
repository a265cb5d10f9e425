/*
 * jemalloc.c - the jemalloc backend of the preload shim
 * (libscratch-preload-jemalloc.so).
 *
 * Requests the pools do not take go to jemalloc's non-standard API
 * (mallocx, rallocx, dallocx, sallocx): those names are jemalloc's alone, so
 * they reach jemalloc even though the shim owns malloc and free in the
 * process. jemalloc's own semantics differ from glibc's at the edges (size 0
 * is undefined for mallocx, errno is not set, aligned_alloc wants a power of
 * two); this file gives them glibc's, as backend.h promises.
 */
#include "config.h"

#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "backend.h"

const char scratch__backend_name[] = "jemalloc";

/* glibc's smallest alignment: malloc(1) is 16-byte aligned there, while
 * jemalloc's 8-byte class is only 8-byte aligned. */
#define GLIBC_MALLOC_ALIGNMENT 16

static void *fail_nomem(void)
{
	errno = ENOMEM;
	return NULL;
}

static void *alloc(size_t size, int flags)
{
	/* mallocx(0) is undefined; glibc's malloc(0) gives a unique block. */
	void *p = mallocx(size ? size : 1, flags);

	return likely(p) ? p : fail_nomem();
}

void *scratch__backend_malloc(size_t size)
{
	/* Requests below 16 bytes would get jemalloc's 8-byte class. */
	return alloc(size,
	             size < GLIBC_MALLOC_ALIGNMENT ? MALLOCX_ALIGN(GLIBC_MALLOC_ALIGNMENT) : 0);
}

void *scratch__backend_calloc(size_t count, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(count, size, &total))
		return fail_nomem();
	int flags = MALLOCX_ZERO;
	if (total < GLIBC_MALLOC_ALIGNMENT)
		flags |= MALLOCX_ALIGN(GLIBC_MALLOC_ALIGNMENT);
	return alloc(total, flags);
}

void *scratch__backend_realloc(void *p, size_t size)
{
	void *q = rallocx(
	        p, size, size < GLIBC_MALLOC_ALIGNMENT ? MALLOCX_ALIGN(GLIBC_MALLOC_ALIGNMENT) : 0);

	return likely(q) ? q : fail_nomem();
}

/* jemalloc may purge (madvise) inside dallocx; free must not change errno. */
void scratch__backend_free(void *p)
{
	int saved = errno;

	dallocx(p, 0);
	errno = saved;
}

void *scratch__backend_memalign(size_t alignment, size_t size)
{
	if (alignment > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (alignment < GLIBC_MALLOC_ALIGNMENT)
		alignment = GLIBC_MALLOC_ALIGNMENT;
	/* glibc rounds an alignment that is not a power of two up to one. */
	if (alignment & (alignment - 1))
		alignment = (size_t)1 << (64 - __builtin_clzll((unsigned long long)alignment));
	return alloc(size, MALLOCX_ALIGN(alignment));
}

void *scratch__backend_pvalloc(size_t size)
{
	size_t page = getauxval(AT_PAGESZ);
	size_t rounded;

	if (__builtin_add_overflow(size, page - 1, &rounded))
		return fail_nomem();
	rounded &= ~(page - 1);
	return alloc(rounded ? rounded : page, MALLOCX_ALIGN(page));
}

size_t scratch__backend_usable_size(void *p)
{
	return sallocx(p, 0);
}
