/*
 * forward.c - the least an LD_PRELOAD malloc can cost: a reference for
 * `make bench`.
 *
 * malloc and free forward straight to the allocator behind them: no pools,
 * no counting, no errno handling, built like the shim (-fno-plt), so each
 * call costs one compare and one jump on top of the allocator's own. Run
 * under bench/small beside the shim, it splits the shim's pass-through
 * overhead into what any interposer pays and what the shim adds. Not
 * installed; not meant for real programs.
 *
 * Built twice, as each of the shim's backends is:
 * - libforward.so forwards malloc, free, calloc and realloc to glibc's
 *   __libc_* entry points; the other entries are left to glibc, which owns
 *   every block;
 * - libforward-jemalloc.so (FORWARD_JEMALLOC) forwards malloc and free to
 *   jemalloc's own, through pointers taken from libjemalloc's handle in a
 *   constructor, as the shim's jemalloc backend does (mallocx and dallocx
 *   until then). It is preloaded before libjemalloc.so.2, which serves every
 *   other entry;
 * - libforward-tcmalloc.so (FORWARD_TCMALLOC) and libforward-mimalloc.so
 *   (FORWARD_MIMALLOC) forward malloc and free to tc_malloc and tc_free, or
 *   mi_malloc and mi_free, as those shims' backends do. Each is preloaded
 *   before its allocator's library, which serves every other entry.
 */
#include <stddef.h>
#include <stdint.h>

#include <errno.h>
#if defined(FORWARD_JEMALLOC)
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#elif defined(FORWARD_TCMALLOC)
#include <gperftools/tcmalloc.h>
#elif defined(FORWARD_MIMALLOC)
#include <mimalloc.h>
#endif

#define FORWARD_API __attribute__((visibility("default")))

FORWARD_API void *malloc(size_t size);
FORWARD_API void free(void *p);

#if defined(FORWARD_JEMALLOC)
typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

static void *malloc_by_mallocx(size_t size)
{
	void *p = mallocx(size ? size : 1, 0);

	if (!p)
		errno = ENOMEM;
	return p;
}

static void free_by_dallocx(void *p)
{
	if (p)
		dallocx(p, 0);
}

static malloc_fn target_malloc = malloc_by_mallocx;
static free_fn target_free = free_by_dallocx;

/* jemalloc's malloc and free: its handle's scope holds libjemalloc and
 * libc, never this object, so these are not our own. */
__attribute__((constructor)) static void forward_init(void)
{
	void *h = dlopen("libjemalloc.so.2", RTLD_LAZY | RTLD_NOLOAD);
	malloc_fn m;
	free_fn f;

	if (!h)
		return;
	m = (malloc_fn)(uintptr_t)dlsym(h, "malloc");
	f = (free_fn)(uintptr_t)dlsym(h, "free");
	if (m && f) {
		target_free = f;
		target_malloc = m;
	}
	dlclose(h);
}

#define TARGET_MALLOC(n) target_malloc(n)
#define TARGET_FREE(p)   target_free(p)
#elif defined(FORWARD_TCMALLOC)
#define TARGET_MALLOC(n) tc_malloc(n)
#define TARGET_FREE(p)   tc_free(p)
#elif defined(FORWARD_MIMALLOC)
#define TARGET_MALLOC(n) mi_malloc(n)
#define TARGET_FREE(p)   mi_free(p)
#else
/* glibc exports these (GLIBC_2.2.5) but declares them in no header. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

FORWARD_API void *calloc(size_t count, size_t size);
FORWARD_API void *realloc(void *p, size_t size);

void *calloc(size_t count, size_t size)
{
	return __libc_calloc(count, size);
}

void *realloc(void *p, size_t size)
{
	return __libc_realloc(p, size);
}

#define TARGET_MALLOC(n) __libc_malloc(n)
#define TARGET_FREE(p)   __libc_free(p)
#endif

/* The one compare the shim's malloc makes before it forwards: a bound read
 * from memory, so the compiler cannot fold it. */
static volatile size_t forward_below = SIZE_MAX;

void *malloc(size_t size)
{
	if (__builtin_expect(size < forward_below, 1))
		return TARGET_MALLOC(size);
	errno = ENOMEM; /* SIZE_MAX bytes: glibc's answer */
	return NULL;
}

/* The shim rules a pointer out with a compare against its region; here
 * against an empty one. */
static volatile uintptr_t forward_lo = UINTPTR_MAX;

void free(void *p)
{
	if (__builtin_expect((uintptr_t)p < forward_lo, 1))
		TARGET_FREE(p);
}
