/*
 * shim.h - libscratch's private interface to its preload shim.
 *
 * Not installed and not part of the API: these entry points exist so that
 * the shim's malloc and free reach a pool with nothing checked twice. Their
 * symbols carry the SCRATCH_PRIVATE version (src/libscratch.map), which
 * only a shim built from the same tree may rely on.
 */
#ifndef SCRATCH_SHIM_H
#define SCRATCH_SHIM_H

#include <stddef.h>

#include "scratch.h"

/* Where scratch__shim_acquire() sends a request the pools cannot serve
 * (they are out of address space, or the thread cannot have a cache and
 * the orphan path failed too): the shim's backend. Called with errno as
 * the shim's caller left it. Set once, before the first request. */
typedef void *(*scratch__fallback_fn)(size_t size);

SCRATCH_API void scratch__shim_setup(scratch__fallback_fn fallback);

/* scratch_acquire() for a size the caller has checked is in the pooled
 * range (scratch_range()); when the pools cannot serve it, the fallback's
 * answer. errno is unchanged unless the fallback changes it. */
SCRATCH_API void *scratch__shim_acquire(size_t size);

/* scratch_release() for a pointer the caller has checked lies in the
 * region scratch_region() reports. A pointer there that the pools did not
 * lend (a double or wild free) is ignored. errno is unchanged. */
SCRATCH_API void scratch__shim_release(void *p);

/* scratch__shim_release() for a block realloc outgrew: its pages go back to
 * the OS at once instead of into the thread's cache. */
SCRATCH_API void scratch__shim_release_cold(void *p);

#endif
