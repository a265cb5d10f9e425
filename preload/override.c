/*
 * override.c - the malloc family of the preload shim, over the pools.
 *
 * Not compiled on its own: each backend's glue file (glibc.c, jemalloc.c)
 * defines the backend_* functions of backend.h and includes this file.
 *
 * A thin forwarding layer, the same for both backends: requests whose size
 * falls in the pools' range [min_size, max_size] go to the calling thread's
 * pool (scratch_acquire and friends), everything else to the backend of the
 * shared object (backend.h). free asks the pools first about any pointer
 * that could be a pool block (page aligned): scratch_release recognises one
 * in O(1) without reading foreign memory and declines anything else, which
 * then goes to the backend.
 *
 * Semantics are glibc's, whoever serves the call: malloc(0) and
 * realloc(NULL, 0) give a unique block, realloc(p, 0) frees p and returns
 * NULL, calloc checks the multiplication, failures give NULL and ENOMEM
 * (EINVAL for a bad alignment), errno survives every successful call and
 * every free.
 *
 * The range is read once into globals; before that (calls that come before
 * the shim's constructor, from the loader or libc) the globals make every
 * request take the slow path, which initialises the library. Calls made by
 * the library while it initialises (on the same thread) go to the backend.
 *
 * Pass-through calls are counted in an initial-exec thread-local (its first
 * access never allocates) and handed to the library in batches, the last
 * one when the thread exits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "backend.h"
#include "scratch.h"

#define SHIM_API    __attribute__((visibility("default")))
#define TLS_IE      __attribute__((tls_model("initial-exec")))
#define LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Pass-through calls a thread counts before it tells the library: the
 * flush is a call into libscratch, a few thousand calls make it noise. */
#define PASSTHROUGH_BATCH 4096

/* Every pool block starts on a page (scratch_acquire's contract). */
#define POOL_BLOCK_ALIGN 4096

/* Removed from glibc's headers in 2.26, still exported for old binaries. */
SHIM_API void cfree(void *p);

enum shim_mode {
	MODE_UNKNOWN, /* the range is not known yet */
	MODE_POOLS,   /* pools on: [pool_lo, pool_lo + pool_span] is pooled */
	MODE_PASS,    /* enabled:false or no pools: everything to the backend */
};

static int mode = MODE_UNKNOWN;
/* A request n is pooled when n - pool_lo <= pool_span (one compare). Until
 * the range is known every request looks pooled, so it takes the slow path
 * that learns the range; with the pools off only SIZE_MAX does. */
static size_t pool_lo = 0;
static size_t pool_span = SIZE_MAX;

/* Pass-through calls left in this thread's current batch, counted down:
 * below zero, the batch is handed to the library (passthrough_refill). */
static __thread int passthrough_left TLS_IE;
/* This thread's exit hands its last, partial batch over (exit_key). */
static __thread bool passthrough_armed TLS_IE;
static pthread_key_t exit_key;
static bool exit_key_ok;
static __thread bool starting TLS_IE;

static size_t page_size(void)
{
	static size_t page;
	size_t p = LOAD(&page);

	if (unlikely(!p)) {
		p = getauxval(AT_PAGESZ);
		STORE(&page, p);
	}
	return p;
}

/*
 * Learn the range from the library (which initialises itself on this first
 * call). Returns false when the caller is the library's own initialisation
 * calling back into malloc: that call must go to the backend.
 */
SCRATCH_COLD static bool shim_start(void)
{
	if (__atomic_load_n(&mode, __ATOMIC_ACQUIRE) != MODE_UNKNOWN)
		return true;
	if (starting)
		return false;
	starting = true;
	int saved = errno;
	size_t lo = 0, hi = 0;
	bool on = scratch_range(&lo, &hi) && lo <= hi;
	errno = saved;
	STORE(&pool_lo, on ? lo : SIZE_MAX);
	STORE(&pool_span, on ? hi - lo : 0);
	__atomic_store_n(&mode, on ? MODE_POOLS : MODE_PASS, __ATOMIC_RELEASE);
	starting = false;
	return true;
}

static inline bool in_range(size_t n)
{
	return n - LOAD(&pool_lo) <= LOAD(&pool_span);
}

SCRATCH_COLD static bool pools_start(void)
{
	return shim_start() && __atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_POOLS;
}

/* The pools are known to be on. A caller that saw in_range(n) before this
 * may have read the range before it was published: the library checks the
 * range again and refuses (ERANGE), and the backend serves the request. */
static inline bool pools_on(void)
{
	return likely(__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_POOLS) || pools_start();
}

/* Pool blocks are page aligned (scratch.h), small blocks of any backend
 * almost never are: the library is asked only about pointers that could be
 * its own, so freeing a small block does not leave the shim. */
static inline bool maybe_pool_block(const void *p)
{
	return ((uintptr_t)p & (POOL_BLOCK_ALIGN - 1)) == 0;
}

/* Capacity of p when it is a pool block, else 0. */
static size_t pool_block_size(const void *p)
{
	if (!maybe_pool_block(p))
		return 0;
	if (!pools_on())
		return 0;
	return scratch_usable_size(p);
}

static void passthrough_count(uint64_t n)
{
	if (n && __atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_POOLS)
		scratch_count_passthrough(n);
}

/*
 * The calling thread's batch is used up (or this is its first pass-through
 * call): count the batch, start the next one with this call. The first time,
 * arm the thread-exit hook; pthread_setspecific uses the thread's own slots
 * for the first keys, and allocates through calloc (back here, harmless:
 * already armed) only beyond them.
 */
SCRATCH_COLD static void passthrough_refill(void)
{
	bool armed = passthrough_armed;

	passthrough_left = PASSTHROUGH_BATCH - 1;
	passthrough_armed = true;
	if (armed)
		passthrough_count(PASSTHROUGH_BATCH);
	else if (exit_key_ok)
		pthread_setspecific(exit_key, (void *)1);
}

/* Hand over the calls of the current, partial batch (thread or process exit). */
static void passthrough_flush(void)
{
	if (!passthrough_armed)
		return;
	int used = PASSTHROUGH_BATCH - passthrough_left;
	passthrough_armed = false;
	passthrough_left = 0;
	passthrough_count((uint64_t)used);
}

static void passthrough_exit(void *arg)
{
	(void)arg;
	passthrough_flush();
}

static inline void passthrough(void)
{
	if (unlikely(--passthrough_left < 0))
		passthrough_refill();
}

static void *pass_malloc(size_t n)
{
	passthrough();
	return backend_malloc(n);
}

static void pass_free(void *p)
{
	passthrough();
	backend_free(p);
}

/* A pooled request, falling back to the backend when the pools are out of
 * address space (errno as it was unless both fail). Out of line: the
 * small-request path stays a compare and a jump. */
__attribute__((noinline)) static void *pool_malloc(size_t n)
{
	if (unlikely(!pools_on()))
		return pass_malloc(n);
	int *e = shim_errno();
	int saved = *e;
	void *p = scratch_acquire(n);
	if (likely(p))
		return p;
	*e = saved;
	return pass_malloc(n);
}

static inline void *shim_malloc(size_t n)
{
	if (unlikely(in_range(n)))
		return pool_malloc(n);
	return pass_malloc(n);
}

static inline void shim_free(void *p)
{
	int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);

	if (likely(m == MODE_POOLS)) {
		if (maybe_pool_block(p) && scratch_release(p) == 0)
			return;
	} else if (unlikely(m == MODE_UNKNOWN)) {
		if (pool_block_size(p) && scratch_release(p) == 0)
			return;
	}
	pass_free(p);
}

__attribute__((noinline)) static void *pool_calloc(size_t count, size_t size, size_t total)
{
	if (!pools_on()) {
		passthrough();
		return backend_calloc(count, size);
	}
	int *e = shim_errno();
	int saved = *e;
	void *p = scratch_acquire_zeroed(total);
	if (likely(p))
		return p;
	*e = saved;
	passthrough();
	return backend_calloc(count, size);
}

/* glibc's memalign() rounds an alignment up to a power of two. */
static size_t pow2_ceil(size_t a)
{
	return (a & (a - 1)) ? (size_t)1 << (64 - __builtin_clzll((unsigned long long)a)) : a;
}

__attribute__((noinline)) static void *pool_memalign(size_t alignment, size_t n)
{
	if (!pools_on() || alignment > SIZE_MAX / 2 + 1)
		goto backend;
	int saved = errno;
	/* Every pool block is page aligned; larger alignments are free up to
	 * the block's own and refused (EINVAL) beyond it. */
	void *p = alignment <= page_size() ? scratch_acquire(n)
	                                   : scratch_acquire_aligned(pow2_ceil(alignment), n);
	if (likely(p))
		return p;
	errno = saved;
backend:
	passthrough();
	return backend_memalign(alignment, n);
}

static void *shim_memalign(size_t alignment, size_t n)
{
	if (unlikely(in_range(n)))
		return pool_memalign(alignment, n);
	passthrough();
	return backend_memalign(alignment, n);
}

/* Does a pool block of capacity cap stay put for a realloc to n <= cap?
 * Yes while n is still pooled and the waste stays within the pools' own
 * bound (a quarter of the request), or a new block would be no smaller. */
static bool realloc_in_place(size_t cap, size_t n)
{
	if (!in_range(n))
		return false;
	return cap - n <= n / 4 || scratch_class_size(n) >= cap;
}

/* realloc of the pool block p (capacity cap) to n > 0 bytes. */
static void *realloc_pool_block(void *p, size_t cap, size_t n)
{
	if (n <= cap && realloc_in_place(cap, n))
		return p;
	int saved = errno;
	void *q = shim_malloc(n);
	if (unlikely(!q)) {
		/* A smaller request may always keep the block it has. */
		if (n > cap)
			return NULL;
		errno = saved;
		return p;
	}
	memcpy(q, p, n < cap ? n : cap);
	scratch_release(p);
	return q;
}

/* realloc of the backend block p to a pooled size n. */
SCRATCH_COLD static void *realloc_into_pool(void *p, size_t n)
{
	size_t old = pools_on() ? backend_usable_size(p) : 0;

	/* Without the old size the data cannot be moved: the backend keeps it. */
	if (old) {
		int saved = errno;
		void *q = scratch_acquire(n);
		if (q) {
			memcpy(q, p, old < n ? old : n);
			pass_free(p);
			return q;
		}
		errno = saved;
	}
	passthrough();
	return backend_realloc(p, n);
}

static void *shim_realloc(void *p, size_t n)
{
	if (unlikely(!p))
		return shim_malloc(n);
	if (unlikely(n == 0)) {
		/* glibc frees and returns NULL (REALLOC_ZERO_BYTES_FREES). */
		shim_free(p);
		return NULL;
	}
	size_t cap = pool_block_size(p);
	if (unlikely(cap))
		return realloc_pool_block(p, cap, n);
	if (unlikely(in_range(n)))
		return realloc_into_pool(p, n);
	passthrough();
	return backend_realloc(p, n);
}

/* ---------------------------------------------------------------------- */
/* The interposed functions                                               */
/* ---------------------------------------------------------------------- */

SHIM_API void *malloc(size_t size)
{
	return shim_malloc(size);
}

SHIM_API void free(void *p)
{
	if (likely(p))
		shim_free(p);
}

SHIM_API void cfree(void *p)
{
	if (p)
		shim_free(p);
}

SHIM_API void *calloc(size_t count, size_t size)
{
	size_t total;

	if (unlikely(__builtin_mul_overflow(count, size, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(in_range(total)))
		return pool_calloc(count, size, total);
	passthrough();
	return backend_calloc(count, size);
}

SHIM_API void *realloc(void *p, size_t size)
{
	return shim_realloc(p, size);
}

SHIM_API void *reallocarray(void *p, size_t count, size_t size)
{
	size_t total;

	if (unlikely(__builtin_mul_overflow(count, size, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	return shim_realloc(p, total);
}

/* POSIX: a power of two multiple of sizeof(void *), else EINVAL; errno is
 * not the interface (glibc leaves ENOMEM in it on failure, so do we). */
SHIM_API int posix_memalign(void **ret_p, size_t alignment, size_t size)
{
	if (alignment == 0 || alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)))
		return EINVAL;
	void *p = shim_memalign(alignment, size);
	if (unlikely(!p))
		return ENOMEM;
	*ret_p = p;
	return 0;
}

/* glibc (2.36) makes aligned_alloc an alias of memalign: no C11 check. */
SHIM_API void *aligned_alloc(size_t alignment, size_t size)
{
	return shim_memalign(alignment, size);
}

SHIM_API void *memalign(size_t alignment, size_t size)
{
	return shim_memalign(alignment, size);
}

SHIM_API void *valloc(size_t size)
{
	return shim_memalign(page_size(), size);
}

SHIM_API void *pvalloc(size_t size)
{
	size_t page = page_size();
	size_t rounded;

	if (unlikely(__builtin_add_overflow(size, page - 1, &rounded))) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	if (unlikely(in_range(rounded)) && pools_on()) {
		int saved = errno;
		void *p = scratch_acquire(rounded);
		if (p)
			return p;
		errno = saved;
	}
	passthrough();
	return backend_pvalloc(size);
}

/* A pool block's capacity is real: every byte of it may be written. */
SHIM_API size_t malloc_usable_size(void *p)
{
	if (unlikely(!p))
		return 0;
	size_t cap = pool_block_size(p);
	if (cap)
		return cap;
	passthrough();
	return backend_usable_size(p);
}

/* ---------------------------------------------------------------------- */
/* Start and exit                                                         */
/* ---------------------------------------------------------------------- */

static const char *base_name(const char *path, const char *end)
{
	const char *b = path;

	for (const char *s = path; s < end; s++)
		if (*s == '/')
			b = s + 1;
	return b;
}

/*
 * inherit:false: remove this shared object from LD_PRELOAD, in place (the
 * string is shorter afterwards), so that programs this one executes run
 * without the shim. Entries are separated by colons or spaces (ld.so(8));
 * one matches when its file name is this object's.
 */
static void strip_preload(void)
{
	Dl_info info;

	if (!dladdr((void *)(uintptr_t)strip_preload, &info) || !info.dli_fname)
		return;
	const char *self = base_name(info.dli_fname, info.dli_fname + strlen(info.dli_fname));
	size_t self_len = strlen(self);
	char *list = getenv("LD_PRELOAD");
	if (!list)
		return;
	char *out = list;
	const char *in = list;
	while (*in) {
		while (*in == ':' || *in == ' ')
			in++;
		const char *end = in;
		while (*end && *end != ':' && *end != ' ')
			end++;
		const char *b = base_name(in, end);
		bool mine = (size_t)(end - b) == self_len && memcmp(b, self, self_len) == 0;
		if (end > in && !mine) {
			if (out != list)
				*out++ = ':';
			memmove(out, in, (size_t)(end - in));
			out += end - in;
		}
		in = end;
	}
	*out = '\0';
	if (out == list)
		unsetenv("LD_PRELOAD");
}

__attribute__((constructor)) static void shim_init(void)
{
	uint64_t inherit = 1;

	(void)shim_start();
	exit_key_ok = pthread_key_create(&exit_key, passthrough_exit) == 0;
	if (scratch_conf_get("inherit", &inherit) == 0 && !inherit)
		strip_preload();
}

/* The exiting thread's last batch (other threads hand theirs over when
 * they exit). */
__attribute__((destructor)) static void shim_fini(void)
{
	passthrough_flush();
}
