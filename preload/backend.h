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

#include "internal.h"

/* This thread's errno without a call into libc each time (the paths that
 * must keep errno are hot): its address is fixed for the thread's life, and
 * the same in a forked child. */
static __thread int *shim_errno_ptr __attribute__((tls_model("initial-exec")));

static inline int *shim_errno(void)
{
	int *e = shim_errno_ptr;

	if (unlikely(e == NULL))
		shim_errno_ptr = e = &errno;
	return e;
}

static inline void *backend_malloc(size_t size);
static inline void *backend_calloc(size_t count, size_t size);
/* p is a backend block (not NULL), size is not 0. */
static inline void *backend_realloc(void *p, size_t size);
/* p is a backend block (not NULL); errno is left as it was. */
static inline void backend_free(void *p);

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
