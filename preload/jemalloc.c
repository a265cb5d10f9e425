/*
 * jemalloc.c - the jemalloc backend of the preload shim
 * (libscratch-preload-jemalloc.so).
 *
 * Requests the pools do not take go to jemalloc. Its non-standard API
 * (mallocx, rallocx, dallocx, sallocx) is jemalloc's alone, so those names
 * reach jemalloc even though the shim owns malloc and free in the process.
 * jemalloc's semantics differ from glibc's at the edges (size 0 is
 * undefined for mallocx, errno is not set, 8-byte alignment for tiny
 * sizes); this file gives them glibc's, as backend.h promises. The malloc
 * family itself is override.c, included at the end.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "backend.h"

#define TINY_FLAGS MALLOCX_ALIGN(GLIBC_MALLOC_ALIGNMENT)

/*
 * jemalloc's malloc and free have a fast path that mallocx and dallocx lack
 * (jemalloc 5.3: mallocx+dallocx cost 180 instructions a pair, malloc+free
 * 70), which alone would cost small allocations far more than the shim's
 * 5% budget. They are jemalloc's exported malloc and free, which the shim
 * hides under its own, so they are taken from libjemalloc's handle (whose
 * scope is libjemalloc and libc, never the shim), once, from the
 * constructor, outside any allocation, and only if they are defined by the
 * object that defines mallocx. Until then, and if the lookup fails, the
 * pointers hold wrappers over mallocx and dallocx (both pairs are the same
 * allocator), so a call through them is never tested for NULL: the shim's
 * malloc ends in a jump through the pointer. They are set before the host
 * has threads, and read as plain loads.
 */
typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

SCRATCH_COLD static void *fail_nomem(void)
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

/* Sizes of at least GLIBC_MALLOC_ALIGNMENT, until jemalloc's malloc is known. */
static void *malloc_by_mallocx(size_t size)
{
	return alloc(size, 0);
}

static void free_by_dallocx(void *p)
{
	if (p)
		dallocx(p, 0);
}

static malloc_fn je_malloc = malloc_by_mallocx;
static free_fn je_free = free_by_dallocx;

/* The base address of the object that defines f, or NULL. */
static void *object_of(const void *f)
{
	Dl_info info;

	return dladdr(f, &info) ? info.dli_fbase : NULL;
}

__attribute__((constructor)) static void jemalloc_backend_init(void)
{
	int saved = errno;
	void *h = dlopen("libjemalloc.so.2", RTLD_LAZY | RTLD_NOLOAD);

	if (h) {
		malloc_fn m = (malloc_fn)(uintptr_t)dlsym(h, "malloc");
		free_fn f = (free_fn)(uintptr_t)dlsym(h, "free");
		void *je = object_of((const void *)(uintptr_t)mallocx);
		if (m && f && je && object_of((const void *)(uintptr_t)m) == je &&
		    object_of((const void *)(uintptr_t)f) == je) {
			__atomic_store_n(&je_free, f, __ATOMIC_RELAXED);
			__atomic_store_n(&je_malloc, m, __ATOMIC_RELAXED);
		}
		dlclose(h);
	}
	errno = saved;
}

/* jemalloc's malloc serves sizes from here up (it sets ENOMEM itself);
 * smaller ones need mallocx for glibc's 16-byte alignment. */
#define BACKEND_FAST_MIN GLIBC_MALLOC_ALIGNMENT

static inline void *backend_malloc_fast(size_t size)
{
	return je_malloc(size);
}

/* jemalloc's 16-byte class is 16-byte aligned, its smaller ones are not;
 * malloc(0) gets a unique block of that class too, as in glibc. */
static inline void *backend_malloc(size_t size)
{
	return je_malloc(size < GLIBC_MALLOC_ALIGNMENT ? GLIBC_MALLOC_ALIGNMENT : size);
}

static inline void *backend_calloc(size_t count, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(count, size, &total))
		return fail_nomem();
	return alloc(total, MALLOCX_ZERO | (total < GLIBC_MALLOC_ALIGNMENT ? TINY_FLAGS : 0));
}

static inline void *backend_realloc(void *p, size_t size)
{
	void *q = rallocx(p, size, size < GLIBC_MALLOC_ALIGNMENT ? TINY_FLAGS : 0);

	return likely(q) ? q : fail_nomem();
}

/* jemalloc (5.3) may purge (madvise) inside free and does not keep errno
 * itself; free must not change it. */
static inline void backend_free(void *p)
{
	int saved = errno_save();

	je_free(p);
	errno_restore(saved);
}

static inline void *backend_memalign(size_t alignment, size_t size)
{
	alignment = glibc_alignment(alignment);
	if (alignment == 0)
		return NULL;
	return alloc(size, MALLOCX_ALIGN(alignment));
}

static inline void *backend_pvalloc(size_t size)
{
	size_t page = getauxval(AT_PAGESZ);
	size_t rounded;

	if (__builtin_add_overflow(size, page - 1, &rounded))
		return fail_nomem();
	rounded &= ~(page - 1);
	return alloc(rounded ? rounded : page, MALLOCX_ALIGN(page));
}

static inline size_t backend_usable_size(void *p)
{
	return sallocx(p, 0);
}

#include "override.c"
