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

/* realloc's growth from pool block from into the larger pool block to,
 * both lent to the caller: from's 2 MiB-aligned pages move to the start
 * of to (mremap), which is faster than copying them and faults none.
 * Returns the bytes moved (from's range there reads zero now), 0 when
 * none did (either is not a pool block, to is not larger, from is below
 * 2 MiB, or the kernel would not); the caller copies the rest. */
SCRATCH_API size_t scratch__shim_move(void *to, void *from);

/* realloc's growth of pool block p (capacity cap, lent to the caller) to
 * a pooled size n > cap: scratch__shim_acquire(n), then
 * scratch__shim_move() of p into it, whose count goes to *ret_moved. A
 * new block this takes is filled with the thread's idle pages only after
 * the part p's pages take. */
SCRATCH_API void *scratch__shim_grow(void *p, size_t cap, size_t n, size_t *ret_moved);

/* realloc of pool block p (lent to the caller) to a pooled n: true when n
 * is within the block's capacity and a request of n may take the block
 * (the reuse bound, max_fit), and then p stays lent for n (a limited
 * lease of the calling thread's, grown past its limit, loses the limit:
 * src/pool_tail.c); false when p is not a pool block, is too large or too
 * small for n, or is another thread's limited lease grown past its limit. */
SCRATCH_API bool scratch__shim_keeps(void *p, size_t n);

#endif
