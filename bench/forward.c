/*
 * forward.c - the least an LD_PRELOAD malloc can cost: a reference for
 * `make bench`.
 *
 * malloc, free, calloc and realloc forward straight to glibc's __libc_*
 * entry points: no pools, no counting, no errno handling, built like the
 * shim (-fno-plt), so each call costs one compare and one jump through the
 * GOT on top of glibc's own. The other entries are left to glibc, which
 * owns every block. Run under bench/small beside the shim, it splits the
 * shim's pass-through overhead into what any interposer pays and what the
 * shim adds. Not installed; not meant for real programs.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define FORWARD_API __attribute__((visibility("default")))

/* glibc exports these (GLIBC_2.2.5) but declares them in no header. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

FORWARD_API void *malloc(size_t size);
FORWARD_API void free(void *p);
FORWARD_API void *calloc(size_t count, size_t size);
FORWARD_API void *realloc(void *p, size_t size);

/* The one compare the shim's malloc makes before it forwards: a bound read
 * from memory, so the compiler cannot fold it. */
static volatile size_t forward_below = SIZE_MAX;

void *malloc(size_t size)
{
	if (__builtin_expect(size < forward_below, 1))
		return __libc_malloc(size);
	errno = ENOMEM; /* SIZE_MAX bytes: glibc's answer */
	return NULL;
}

/* The shim rules a pointer out with a compare against its region; here
 * against an empty one. */
static volatile uintptr_t forward_lo = UINTPTR_MAX;

void free(void *p)
{
	if (__builtin_expect((uintptr_t)p < forward_lo, 1))
		__libc_free(p);
}

void *calloc(size_t count, size_t size)
{
	return __libc_calloc(count, size);
}

void *realloc(void *p, size_t size)
{
	return __libc_realloc(p, size);
}
