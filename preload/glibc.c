/*
 * glibc.c - the glibc backend of the preload shim (libscratch-preload.so).
 *
 * Requests the pools do not take go to glibc's allocator through the
 * __libc_* names it exports for exactly this purpose. They are bound at link
 * time, so nothing is looked up while malloc runs, and a host that links
 * jemalloc (whose malloc would answer dlsym(RTLD_NEXT, "malloc")) still gets
 * glibc here. The malloc family itself is override.c, included at the end.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <stdint.h>

#include "backend.h"

/* glibc exports these (GLIBC_2.2.5) but declares them in no header. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_pvalloc(size_t size);

/* glibc's malloc takes every size itself. */
#define BACKEND_FAST_MIN 0

static inline void *backend_malloc(size_t size)
{
	return __libc_malloc(size);
}

static inline void *backend_malloc_fast(size_t size)
{
	return __libc_malloc(size);
}

static inline void *backend_calloc(size_t count, size_t size)
{
	return __libc_calloc(count, size);
}

static inline void *backend_realloc(void *p, size_t size)
{
	return __libc_realloc(p, size);
}

/* glibc >= 2.33 keeps errno across free (munmap or madvise may fail), which
 * is the contract (older ones are not supported): a tail jump. */
static inline void backend_free(void *p)
{
	__libc_free(p);
}

static inline void *backend_memalign(size_t alignment, size_t size)
{
	return __libc_memalign(alignment, size);
}

static inline void *backend_pvalloc(size_t size)
{
	return __libc_pvalloc(size);
}

typedef size_t (*usable_fn)(void *);

/*
 * glibc's malloc_usable_size() is the one entry without a __libc_ alias, and
 * the shim defines malloc_usable_size itself, so it is looked up in libc's
 * own handle: that scope holds libc and the loader only, never the shim or
 * a jemalloc the host linked. The lookup happens once, from the shim's
 * constructor (or the first call, if one comes earlier), never inside
 * malloc; any allocation dlopen or dlsym makes goes through the shim's
 * malloc, which does not need this pointer, so there is no recursion.
 */
static usable_fn glibc_usable_size(void)
{
	static usable_fn fn;
	usable_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);

	if (likely(f))
		return f;
	int saved = errno;
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	if (libc) {
		f = (usable_fn)(uintptr_t)dlsym(libc, "malloc_usable_size");
		dlclose(libc);
	}
	errno = saved;
	if (f)
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	return f;
}

static inline size_t backend_usable_size(void *p)
{
	usable_fn f = glibc_usable_size();

	/* Unknown is 0: an overstated size lets a program write past its block. */
	return f ? f(p) : 0;
}

/* Resolve the lookup above before the host runs. */
__attribute__((constructor)) static void glibc_backend_init(void)
{
	(void)glibc_usable_size();
}

#include "override.c"
