/*
 * override.c - the malloc family of the preload shim, over the pools.
 *
 * Not compiled on its own: each backend's glue file (glibc.c, jemalloc.c)
 * defines the backend_* functions of backend.h and includes this file.
 *
 * A thin forwarding layer, the same for both backends: requests whose size
 * falls in the pools' range [min_size, max_size] go to the calling thread's
 * pool (scratch_acquire and friends), everything else to the backend of the
 * shared object (backend.h). free hands a pointer to the pools only when it
 * lies in the pools' address region (scratch_region), which no backend
 * block ever does; any other pointer goes straight to the backend.
 *
 * Semantics are glibc's, whoever serves the call: malloc(0) and
 * realloc(NULL, 0) give a unique block, realloc(p, 0) frees p and returns
 * NULL, calloc checks the multiplication, failures give NULL and ENOMEM
 * (EINVAL for a bad alignment), errno survives every successful call and
 * every free.
 *
 * The ranges are read once into globals; before that (calls that come
 * before the shim's constructor, from the loader or libc) the globals make
 * every request and every free take the slow path, which initialises the
 * library. Calls made by the library while it initialises (on the same
 * thread) go to the backend.
 *
 * The fast paths are a compare, the pass-through count (malloc only) and a
 * jump to the backend (the objects are built with -fno-plt: the jump goes
 * through the GOT entry, not through the PLT): nothing is saved on the
 * stack. A pooled request costs one more compare before the jump into the
 * pools' shim entries (src/shim.h), which skip the checks made here.
 *
 * Pass-through allocations (every allocating call the backend serves:
 * malloc, calloc, realloc and the aligned ones) are counted in an
 * initial-exec thread-local (its first access never allocates) and handed
 * to the library in batches, the last one when the thread exits. Frees are
 * not counted: a free serves no request, and not counting it keeps the
 * backend's free a bare jump (on glibc).
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "backend.h"
#include "scratch.h"
#include "shim.h"

#define SHIM_API    __attribute__((visibility("default")))
#define TLS_IE      __attribute__((tls_model("initial-exec")))
#define LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Pass-through calls a thread counts before it tells the library: the
 * flush is a call into libscratch, a few thousand calls make it noise. */
#define PASSTHROUGH_BATCH 4096

/* Removed from glibc's headers in 2.26, still exported for old binaries. */
SHIM_API void cfree(void *p);

enum shim_mode {
	MODE_UNKNOWN, /* the ranges are not known yet */
	MODE_POOLS,   /* pools on */
	MODE_PASS,    /* enabled:false or no pools: everything to the backend */
};

/*
 * What the fast paths test, each with one compare, written once by
 * shim_start(). It runs in the constructor, or at the first call if one
 * comes earlier, before the host starts threads, so the fast paths read
 * them as plain loads (which the compiler folds into the compares). The
 * values before it make every request and every free take the slow paths,
 * which learn them; with the pools off nothing but the backend is ever
 * reached.
 *
 * pass_below: requests below it are never pooled (min_size; SIZE_MAX with
 * the pools off). malloc_fast_span: malloc hands n straight to
 * backend_malloc_fast() when n - BACKEND_FAST_MIN < malloc_fast_span.
 * pool_off, pool_span: n is pooled when n - BACKEND_FAST_MIN - pool_off <
 * pool_span (pool_off is min_size - BACKEND_FAST_MIN; span 0: no request
 * is). malloc_pool_end: pool_off + pool_span with the pools on, else 0;
 * malloc tests k < malloc_pool_end alone, since a k that failed its first
 * compare is at least malloc_fast_span, which is pool_off with the pools
 * on (two instructions fewer on every pooled malloc than k - pool_off <
 * pool_span). region_lo, region_hi: every pool block lies in [region_lo,
 * region_hi) (scratch_region), a region the library maps once and never
 * gives back, so no backend block is ever in it; free sends a pointer
 * outside it straight to the backend. Two compares rather than one on
 * p - region_lo: a pointer below the region (the brk heap, and the mappings
 * made after the pools', the kernel placing them top down) is ruled out by
 * the first compare alone.
 */
static int mode = MODE_UNKNOWN;
static size_t pass_below = 0;
static size_t malloc_fast_span = 0;
static size_t pool_off = 0;
static size_t pool_span = 0;
static size_t malloc_pool_end = 0;
static uintptr_t region_lo = 0;
static uintptr_t region_hi = UINTPTR_MAX;
/* Where free sends a pointer in the region: free_early() until the start,
 * then scratch__shim_release() (a jump through this pointer, no mode test). */
static void free_early(void *p);
static void (*region_free)(void *p) = free_early;
static void *pass_malloc(size_t n);

/* Pass-through allocations left in this thread's current batch, counted down:
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
 * Learn the ranges from the library (which initialises itself on this
 * first call). Returns false when the caller is the library's own
 * initialisation calling back into malloc: that call must go to the
 * backend. errno_tpoff is learned first: the fast paths that use it only
 * run once the ranges are published.
 */
SCRATCH_COLD static bool shim_start(void)
{
	if (__atomic_load_n(&mode, __ATOMIC_ACQUIRE) != MODE_UNKNOWN)
		return true;
	if (starting)
		return false;
	starting = true;
	errno_learn();
	int saved = errno;
	size_t lo = 0, hi = 0, size = 0;
	uintptr_t base = 0;
	bool on = scratch_range(&lo, &hi) && lo <= hi && hi < SIZE_MAX &&
	          scratch_region(&base, &size);
	errno = saved;
	size_t below = on ? lo : SIZE_MAX;
	STORE(&pool_off, on ? lo - BACKEND_FAST_MIN : 0);
	STORE(&region_lo, on ? base : UINTPTR_MAX);
	STORE(&region_hi, on ? base + size : 0);
	if (on)
		scratch__shim_setup(pass_malloc);
	STORE(&region_free, on ? scratch__shim_release : free_early);
	STORE(&pass_below, below);
	STORE(&malloc_fast_span, below > BACKEND_FAST_MIN ? below - BACKEND_FAST_MIN : 0);
	/* Last, the spans: a request pooled on another thread meanwhile finds
	 * the region known to free (x86-64 keeps stores in order). */
	STORE(&pool_span, on ? hi - lo + 1 : 0);
	STORE(&malloc_pool_end, on && below > BACKEND_FAST_MIN ? hi - BACKEND_FAST_MIN + 1 : 0);
	__atomic_store_n(&mode, on ? MODE_POOLS : MODE_PASS, __ATOMIC_RELEASE);
	starting = false;
	return true;
}

/* Is a request pooled, given k = its size - BACKEND_FAST_MIN? */
static inline bool in_range_from(size_t k)
{
	return k - pool_off < pool_span;
}

static inline bool in_range(size_t n)
{
	return in_range_from(n - BACKEND_FAST_MIN);
}

/* Is a request of n bytes pooled? For the paths that tested n >=
 * pass_below first: before the start (when pass_below is 0) this learns
 * the range. */
static bool pooled(size_t n)
{
	if (likely(in_range(n)))
		return true;
	return unlikely(__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_UNKNOWN) && shim_start() &&
	       in_range(n);
}

/* Could p be a pool block? Before the start every pointer could. */
static inline bool in_region(const void *p)
{
	return (uintptr_t)p >= region_lo && (uintptr_t)p < region_hi;
}

/* Capacity of p when it is a pool block, else 0. scratch_usable_size()
 * never initialises the library and never reads foreign memory. */
static size_t pool_block_size(const void *p)
{
	if (!in_region(p))
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

/* The requests backend_malloc_fast() does not take and the pools do not
 * either (below BACKEND_FAST_MIN, above max_size), and every request before
 * the start (which learns the range). */
__attribute__((noinline)) static void *malloc_other(size_t n)
{
#if BACKEND_FAST_MIN > 0
	if (n < BACKEND_FAST_MIN)
		return pass_malloc(n);
#endif
	if (unlikely(pooled(n)))
		return scratch__shim_acquire(n);
	return pass_malloc(n);
}

/*
 * A pooled request goes to the pools' shim entry, which falls back to the
 * backend itself (pass_malloc, set by shim_start) when they are out of
 * address space, errno as it was unless both fail: a jump, so malloc needs
 * no frame.
 */
static inline void *shim_malloc(size_t n)
{
	size_t k = n - BACKEND_FAST_MIN;

	if (likely(k < malloc_fast_span)) {
		passthrough();
		return backend_malloc_fast(n);
	}
	if (likely(k < malloc_pool_end))
		return scratch__shim_acquire(n);
	return malloc_other(n);
}

/*
 * free before the start: the library is asked about every pointer (a host
 * that links libscratch may have lent blocks already; it declines the
 * others without initialising anything), and the backend gets the rest,
 * errno kept by hand because backend_free() can rely on errno_tpoff only
 * after the start. scratch__shim_release() takes its place in region_free
 * at the start.
 */
SCRATCH_COLD static void free_early(void *p)
{
	if (!p || scratch_release(p) == 0)
		return;
	int saved = errno;
	backend_free(p);
	errno = saved;
}

/*
 * A pointer in the pools' region is, in a correct program, a pool block
 * (the backend never has memory there): scratch__shim_release() takes it,
 * or drops a pointer it did not lend (a double or wild free) rather than
 * hand it to a backend that never saw it. free(NULL) goes to the backend
 * (both take it): a test fewer on the fast path.
 */
static inline void shim_free(void *p)
{
	if (unlikely(in_region(p))) {
		region_free(p);
		return;
	}
	backend_free(p);
}

__attribute__((noinline)) static void *calloc_slow(size_t count, size_t size, size_t total)
{
	if (pooled(total)) {
		int saved = errno_save();
		void *p = scratch_acquire_zeroed(total);
		if (likely(p))
			return p;
		errno_restore(saved);
	}
	passthrough();
	return backend_calloc(count, size);
}

/* glibc's memalign() rounds an alignment up to a power of two. */
static size_t pow2_ceil(size_t a)
{
	return (a & (a - 1)) ? (size_t)1 << (64 - __builtin_clzll((unsigned long long)a)) : a;
}

__attribute__((noinline)) static void *memalign_slow(size_t alignment, size_t n)
{
	if (!pooled(n) || alignment > SIZE_MAX / 2 + 1)
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
	if (unlikely(n >= pass_below))
		return memalign_slow(alignment, n);
	passthrough();
	return backend_memalign(alignment, n);
}

/* Does pool block p stay put for a realloc to n? Yes while n is within
 * the block's capacity (a limited lease of this thread's grows back to
 * it: src/pool_tail.c), n is still pooled and a fresh request of n could take the
 * block too (the pools' reuse bound, max_fit: a buffer growing into a
 * block the pools doubled for it, one served from a larger class's block,
 * or a shrink within the bound, whose pages are there already). A shrink
 * beyond the bound moves, so the big block goes back to the cache. */
static bool realloc_in_place(void *p, size_t n)
{
	return pooled(n) && scratch__shim_keeps(p, n);
}

/* realloc of the pool block p (capacity cap) to n > 0 bytes. */
static void *realloc_pool_block(void *p, size_t cap, size_t n)
{
	if (realloc_in_place(p, n)) /* within its capacity (cap may be a limited lease's) */
		return p;
	int saved = errno;
	size_t moved = 0;
	/* Growing into a larger pool block, the pages move rather than copy. */
	void *q = n > cap && in_range(n) ? scratch__shim_grow(p, cap, n, &moved) : shim_malloc(n);
	if (unlikely(!q)) {
		/* A smaller request may always keep the block it has. */
		if (n > cap)
			return NULL;
		errno = saved;
		return p;
	}
	memcpy((char *)q + moved, (char *)p + moved, (n < cap ? n : cap) - moved);
	if (n > cap)
		scratch__shim_release_cold(p);
	else
		scratch_release(p);
	return q;
}

/* realloc of the backend block p to a pooled size n. */
SCRATCH_COLD static void *realloc_into_pool(void *p, size_t n)
{
	size_t old = backend_usable_size(p);

	/* Without the old size the data cannot be moved: the backend keeps it. */
	if (old) {
		int saved = errno;
		void *q = scratch_acquire(n);
		if (q) {
			memcpy(q, p, old < n ? old : n);
			backend_free(p);
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
	if (unlikely(n >= pass_below) && pooled(n))
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
	shim_free(p);
}

SHIM_API void cfree(void *p)
{
	shim_free(p);
}

SHIM_API void *calloc(size_t count, size_t size)
{
	size_t total;

	if (unlikely(__builtin_mul_overflow(count, size, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(total >= pass_below))
		return calloc_slow(count, size, total);
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
	if (unlikely(rounded >= pass_below) && pooled(rounded)) {
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
	return backend_usable_size(p); /* not an allocation: not counted */
}

typedef int (*trim_fn)(size_t);

/* glibc's own malloc_trim, from libc's handle as glibc.c finds
 * malloc_usable_size (the shim defines the name): looked up at the first
 * call, which is never inside malloc. NULL when libc will not say. */
static trim_fn libc_trim(void)
{
	static trim_fn fn;
	trim_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
	void *libc;

	if (f != NULL)
		return f;
	libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	if (libc != NULL) {
		f = (trim_fn)(uintptr_t)dlsym(libc, "malloc_trim");
		dlclose(libc);
	}
	if (f != NULL)
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	return f;
}

/*
 * A host that calls malloc_trim wants its allocator's free memory back:
 * the pools' idle blocks go back too (scratch_trim(): this thread's cache
 * and the depot now, every other thread's cache at its next slow path),
 * then glibc's heap does, with pad as glibc reads it. 1 when memory was
 * released. errno is kept.
 */
SHIM_API int malloc_trim(size_t pad)
{
	int saved = errno;
	size_t pooled = 0;
	trim_fn f;
	int r;

	if (__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_POOLS)
		pooled = scratch_trim();
	f = libc_trim();
	r = f != NULL ? f(pad) : 0;
	errno = saved;
	return r || pooled != 0;
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
