/*
 * backend.h - what the preload shim needs from the allocator it forwards to.
 *
 * Each shared object is one glue file (glibc.c or jemalloc.c) that defines
 * these functions and then includes override.c, the malloc family that is
 * the same for every backend (mimalloc's alloc-override idea). Being in one
 * translation unit, the backend calls inline into the interposed functions:
 * a request the pools do not take costs a compare and a jump.
 *
 * Every function has the glibc semantics of its namesake, so the shim
 * behaves the same whichever backend serves the requests it does not pool:
 * failures return NULL with errno ENOMEM (EINVAL for a bad alignment),
 * zero-sized requests return a unique pointer, and free never changes
 * errno.
 */
#ifndef SCRATCH_PRELOAD_BACKEND_H
#define SCRATCH_PRELOAD_BACKEND_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/*
 * This thread's errno without a call into libc (the paths that must keep
 * errno are hot). libc's errno is an initial-exec thread-local, so it lies
 * at the same offset from the thread pointer in every thread of the process
 * (and in a forked child): errno_tpoff, learned once by errno_learn() before
 * the shim publishes its ranges, makes an access one load of the offset and
 * one %fs-relative access, with no per-thread set-up. Until it is learned
 * the offset is 0, the thread pointer's own first word: errno_save() and
 * errno_restore() then read it and write the same value back, which changes
 * nothing (the paths that can run that early keep errno themselves).
 */
#if defined(__x86_64__) && defined(__SEG_FS)
static uintptr_t errno_tpoff;

static inline void errno_learn(void)
{
	uintptr_t tp = *(const uintptr_t __seg_fs *)0; /* the TCB's self pointer */

	__atomic_store_n(&errno_tpoff, (uintptr_t)&errno - tp, __ATOMIC_RELAXED);
}

static inline int errno_save(void)
{
	return *(const int __seg_fs *)errno_tpoff;
}

static inline void errno_restore(int saved)
{
	*(int __seg_fs *)errno_tpoff = saved;
}
#else
static inline void errno_learn(void)
{
}

static inline int errno_save(void)
{
	return errno;
}

static inline void errno_restore(int saved)
{
	errno = saved;
}
#endif

/*
 * backend_malloc_fast() serves the requests of at least BACKEND_FAST_MIN
 * bytes that the pools do not take (below min_size); backend_malloc()
 * serves any size. malloc's fast path tests both bounds with one compare.
 */
static inline void *backend_malloc_fast(size_t size);
static inline void *backend_malloc(size_t size);
static inline void *backend_calloc(size_t count, size_t size);
/* p is a backend block (not NULL), size is not 0. */
static inline void *backend_realloc(void *p, size_t size);
/* p is a backend block or NULL (which does nothing); errno is left as it
 * was once errno_learn() ran. */
static inline void backend_free(void *p);

/* glibc's smallest alignment: malloc(1) is 16-byte aligned there, while
 * jemalloc's, tcmalloc's and mimalloc's 8-byte classes are only 8-byte
 * aligned. */
#define GLIBC_MALLOC_ALIGNMENT 16

/*
 * The alignment glibc's memalign() gives for the one asked, for a backend
 * that takes powers of two only: at least GLIBC_MALLOC_ALIGNMENT, rounded
 * up to a power of two; 0, with errno EINVAL, above SIZE_MAX / 2 + 1.
 */
static inline size_t glibc_alignment(size_t alignment)
{
	if (alignment > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return 0;
	}
	if (alignment < GLIBC_MALLOC_ALIGNMENT)
		return GLIBC_MALLOC_ALIGNMENT;
	if (alignment & (alignment - 1))
		return (size_t)1 << (64 - __builtin_clzll((unsigned long long)alignment));
	return alignment;
}

/*
 * glibc's memalign(): any alignment up to SIZE_MAX / 2 + 1 is accepted; one
 * that is not a power of two is rounded up to the next one. A larger one
 * gives NULL and EINVAL.
 */
static inline void *backend_memalign(size_t alignment, size_t size);
/* glibc's pvalloc(): page aligned, size rounded up to whole pages. */
static inline void *backend_pvalloc(size_t size);

/* Bytes usable at the backend block p; 0 when the backend cannot tell
 * (never more than the block really has). */
static inline size_t backend_usable_size(void *p);

#endif /* SCRATCH_PRELOAD_BACKEND_H */
