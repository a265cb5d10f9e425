/*
 * mimalloc.c - the mimalloc backend of the preload shim
 * (libscratch-preload-mimalloc.so).
 *
 * Requests the pools do not take go to mimalloc through its own API
 * (mi_malloc, mi_free, ...), which only mimalloc defines, so those names
 * reach it even though the shim owns malloc and free in the process. Its
 * semantics differ from glibc's at the edges (8-byte alignment for the
 * smallest sizes, an alignment that is not a power of two refused); this
 * file gives them glibc's, as backend.h promises. The malloc family itself
 * is override.c, included at the end.
 */
#include "config.h"

#include <errno.h>
#include <mimalloc.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "backend.h"

SCRATCH_COLD static void *fail_nomem(void)
{
	errno = ENOMEM;
	return NULL;
}

static inline void *nomem_if_null(void *p)
{
	return likely(p) ? p : fail_nomem();
}

/* mi_malloc serves sizes from here up with glibc's alignment; smaller ones
 * take this size (malloc(0) too: a unique block, as in glibc). The fast
 * path's sizes (below min_size) fail only when memory is out, where
 * mi_malloc sets ENOMEM itself: a jump. Any size may go to
 * backend_malloc(), where one too large for mimalloc fails without errno. */
#define BACKEND_FAST_MIN GLIBC_MALLOC_ALIGNMENT

static inline void *backend_malloc_fast(size_t size)
{
	return mi_malloc(size);
}

static inline void *backend_malloc(size_t size)
{
	return nomem_if_null(
	        mi_malloc(size < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : size));
}

static inline void *backend_calloc(size_t count, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(count, size, &total))
		return fail_nomem();
	return nomem_if_null(
	        mi_zalloc(total < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : total));
}

static inline void *backend_realloc(void *p, size_t size)
{
	return nomem_if_null(
	        mi_realloc(p, size < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : size));
}

/* mimalloc may return pages to the OS (madvise) inside free; free must
 * not change errno. */
static inline void backend_free(void *p)
{
	int saved = errno_save();

	mi_free(p);
	errno_restore(saved);
}

static inline void *backend_memalign(size_t alignment, size_t size)
{
	alignment = glibc_alignment(alignment);
	if (alignment == 0)
		return NULL;
	return nomem_if_null(mi_malloc_aligned(size ? size : 1, alignment));
}

static inline void *backend_pvalloc(size_t size)
{
	size_t page = getauxval(AT_PAGESZ);
	size_t rounded;

	if (__builtin_add_overflow(size, page - 1, &rounded))
		return fail_nomem();
	rounded &= ~(page - 1);
	return nomem_if_null(mi_malloc_aligned(rounded ? rounded : page, page));
}

static inline size_t backend_usable_size(void *p)
{
	return mi_usable_size(p);
}

/*
 * mimalloc counts the NUMA nodes at its first segment (access(2) of each
 * /sys/devices/system/node/nodeN until one is missing), which leaves
 * ENOENT in errno inside an allocation that succeeds. The first segment is
 * taken here, errno kept, before the host runs: a host whose first
 * allocation is its own would see errno change.
 */
__attribute__((constructor)) static void mimalloc_backend_init(void)
{
	int saved = errno;

	mi_free(mi_malloc(GLIBC_MALLOC_ALIGNMENT));
	errno = saved;
}

#include "override.c"
