/*
 * tcmalloc.c - the tcmalloc backend of the preload shim
 * (libscratch-preload-tcmalloc.so), over gperftools' tcmalloc_minimal.
 *
 * Requests the pools do not take go to tcmalloc through its own API
 * (tc_malloc, tc_free, ...), which only tcmalloc defines, so those names
 * reach it even though the shim owns malloc and free in the process.
 * tcmalloc sets errno as glibc does; its smallest size class is only
 * 8-byte aligned, which this file rounds up to glibc's 16, as backend.h
 * promises. The malloc family itself is override.c, included at the end.
 */
#include "config.h"

#include <errno.h>
#include <gperftools/tcmalloc.h>
#include <stdint.h>

#include "backend.h"

/* tc_malloc serves sizes from here up with glibc's alignment (and sets
 * ENOMEM itself); smaller ones take this size (malloc(0) too: a unique
 * block, as in glibc). */
#define BACKEND_FAST_MIN GLIBC_MALLOC_ALIGNMENT

static inline void *backend_malloc_fast(size_t size)
{
	return tc_malloc(size);
}

static inline void *backend_malloc(size_t size)
{
	return tc_malloc(size < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : size);
}

static inline void *backend_calloc(size_t count, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return tc_calloc(total < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : total, 1);
}

static inline void *backend_realloc(void *p, size_t size)
{
	return tc_realloc(p, size < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : size);
}

/* tcmalloc may return pages to the OS (madvise) inside free; free must
 * not change errno. */
static inline void backend_free(void *p)
{
	int saved = errno_save();

	tc_free(p);
	errno_restore(saved);
}

static inline void *backend_memalign(size_t alignment, size_t size)
{
	alignment = glibc_alignment(alignment);
	if (alignment == 0)
		return NULL;
	return tc_memalign(alignment, size);
}

static inline void *backend_pvalloc(size_t size)
{
	return tc_pvalloc(size);
}

static inline size_t backend_usable_size(void *p)
{
	return tc_malloc_size(p);
}

#include "override.c"
