/*
 * pool_init.c - configuration and set-up.
 *
 * The first slow path of the process (or scratch__init() from elsewhere in
 * the library) parses SCRATCH_CONF, reserves the region within what the
 * environment allows, has each mechanism set up its tables, opens the
 * stats segment, and publishes the fast paths' gates last. A process
 * whose pools cannot run here says why in its segment.
 *
 * Owns the init lock, first in the lock order, and the process counters
 * for when there is no segment.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"
#include "segment.h" /* the reasons the pools may be off */

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int tls_in_init __attribute__((tls_model("initial-exec")));
static struct scratch__proc_counters proc_own;
static struct scratch__proc_classes pcls_own;

static void conf_warn(void *ctx, const char *line)
{
	(void)ctx;
	scratch__warn(line);
}

/* Reserve the region, halving the request until the kernel agrees: its
 * size, or 0. Only base is stored: the release fast paths read it, gated by
 * size, which setup() publishes last. */
static uint64_t reserve_region(uint64_t want)
{
	for (uint64_t sz = want; sz >= (UINT64_C(1) << 30); sz /= 2) {
		void *p = scratch__os_reserve(sz, HUGE_SIZE);

		if (p != NULL) {
			__atomic_store_n(&g.base, (uintptr_t)p, __ATOMIC_RELAXED);
			return sz;
		}
	}
	return 0;
}

/* The kernel granted less than reserve: the largest block must still fit
 * the region as the range rules require (max_size <= reserve/4). The
 * segment records it (SCRATCH_SEG_F_LOWERED); verbose:true says it. */
SCRATCH_COLD static void shrink_range(uint64_t size)
{
	char line[160];
	size_t pos = 0;

	g.conf.max_size = size / 4;
	if (g.conf.min_size > g.conf.max_size)
		g.conf.min_size = g.conf.max_size;
	scratch__fmt_str(line, sizeof(line), &pos, "only ");
	scratch__fmt_size(line, sizeof(line), &pos, size);
	scratch__fmt_str(line, sizeof(line), &pos,
	                 " of address space could be reserved, using max_size ");
	scratch__fmt_size(line, sizeof(line), &pos, g.conf.max_size);
	scratch__env_warn(&g.conf, line);
}

/* Pools off for reason (an environmental one): said only under
 * verbose:true, recorded in the segment by the caller. Returns reason. */
SCRATCH_COLD static uint32_t pools_off(uint32_t reason, const char *why)
{
	scratch__env_warn(&g.conf, why);
	return reason;
}

/*
 * Reserve the region within what the environment allows. Returns 0 with
 * its size in *ret_size (max_size lowered to fit it when *ret_lowered), or
 * why the pools cannot run here (enum scratch_seg_pools_off).
 */
static uint32_t region_setup(uint64_t *ret_size, bool *ret_lowered)
{
	uint64_t size = g.conf.reserve, room;

	if (sysconf(_SC_PAGESIZE) != (long)PAGE_SIZE)
		return pools_off(SCRATCH_SEG_OFF_PAGE_SIZE,
		                 "the page size is not 4K: the pools are off");
	room = scratch__os_as_room();
	if (room != UINT64_MAX) {
		/* Under ulimit -v the region takes at most a quarter of what is
		 * left: the rest is the backend's, which serves every size the
		 * pools do not. */
		if (room / 4 < (UINT64_C(1) << 30))
			return pools_off(SCRATCH_SEG_OFF_AS_LIMIT,
			                 "the address space limit (ulimit -v) leaves no room for "
			                 "the pools (1G at least): they are off");
		if (size > room / 4)
			size = room / 4;
	}
	size = reserve_region(size);
	if (size == 0)
		return pools_off(SCRATCH_SEG_OFF_RESERVE,
		                 "not even 1G of address space could be reserved: the pools are "
		                 "off");
	*ret_lowered = g.conf.max_size > size / 4;
	if (*ret_lowered)
		shrink_range(size);
	*ret_size = size;
	return SCRATCH_SEG_POOLS_ON;
}

/* The class table, then each mechanism's tables for a region of size
 * bytes. False when there is no memory for them. */
static bool tables_setup(uint64_t size)
{
	unsigned top;

	g.cls_base = class_index(g.conf.min_size);
	top = class_index(g.conf.max_size);
	if (top >= NBINS)
		top = NBINS - 1;
	g.nbins = top - g.cls_base + 1;
	for (unsigned i = g.cls_base; i <= top; i++)
		g.cls_size[i] = class_capacity(i);
	if (!scratch__region_layout(size) || !scratch__grow_setup())
		return false;
	g.ntcs = (uint32_t)g.conf.max_threads;
	g.tcs = scratch__os_map((uint64_t)g.ntcs * sizeof(struct tcache));
	return g.tcs != NULL;
}

/* per_node: a depot list per node where the cpuset spans two nodes or
 * more with ids below DEPOT_NODES; else one list, and the key reads false
 * (the configuration in force). */
static void nodes_setup(void)
{
	unsigned count, span;

	g.nodes = 1;
	if (!g.conf.per_node)
		return;
	scratch__os_nodes(&count, &span);
	if (count > 1 && span <= DEPOT_NODES)
		g.nodes = span;
	else if (count > 1)
		scratch__env_warn(&g.conf, "NUMA node ids reach 64: one depot for every node");
	g.conf.per_node = g.nodes > 1;
}

/*
 * Parse the configuration and set the pools up; false leaves them off.
 * A bad SCRATCH_CONF entry is the user's doing and always printed; what
 * the environment imposes is printed only under verbose:true, and when
 * stats are on it is recorded in the segment, which a process whose pools
 * are off for such a reason still gets (enabled:false gets none).
 */
static bool setup(void)
{
	uint64_t size = 0;
	bool lowered = false;
	uint32_t off;

	scratch__conf_defaults(&g.conf);
	scratch__conf_parse(getenv("SCRATCH_CONF"), &g.conf, conf_warn, NULL);
	if (!g.conf.enabled)
		return false;
	off = region_setup(&size, &lowered);
	if (off == SCRATCH_SEG_POOLS_ON && !tables_setup(size))
		off = pools_off(SCRATCH_SEG_OFF_NOMEM,
		                "no memory for the pools' tables: the pools are off");
	if (off != SCRATCH_SEG_POOLS_ON) {
		if (g.conf.stats)
			scratch__segment_open(&g.conf, off, false);
		return false;
	}
	g.born_ms = scratch__os_monotonic_ms();
	scratch__tcache_boot();
	g.cache_limit = (uint32_t)g.conf.cache_count;
	g.cache_bytes = g.conf.cache_bytes;
	g.max_fit = g.conf.max_fit;
	nodes_setup();
	g.proc = &proc_own;
	g.pcls = &pcls_own;
	if (g.conf.stats && scratch__segment_open(&g.conf, SCRATCH_SEG_POOLS_ON, lowered) == 0 &&
	    scratch__segment_proc() != NULL) {
		g.proc = scratch__segment_proc();
		if (scratch__segment_proc_classes() != NULL)
			g.pcls = scratch__segment_proc_classes();
	}
	g.proc->region_bytes = size;
	scratch__segment_region(g.base, size);
	/* The gates of the fast paths go last, with release order: threads
	 * that have not synchronised with this setup test them at any time,
	 * and must find the tables behind them. */
	__atomic_store_n(&g.min, g.conf.min_size, __ATOMIC_RELAXED);
	__atomic_store_n(&g.span, g.conf.max_size - g.conf.min_size, __ATOMIC_RELEASE);
	__atomic_store_n(&g.size, size, __ATOMIC_RELEASE);
	return true;
}

SCRATCH_COLD static bool init_slow(void)
{
	int st;

	if (tls_in_init)
		return false; /* re-entered from inside our own initialisation */
	tls_in_init = 1;
	pthread_mutex_lock(&init_lock);
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == ST_NONE)
		__atomic_store_n(&g.state, setup() ? ST_READY : ST_OFF, __ATOMIC_RELEASE);
	st = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&init_lock);
	tls_in_init = 0;
	return st == ST_READY;
}

bool scratch__init(void)
{
	int st = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);

	if (likely(st == ST_READY))
		return true;
	if (st == ST_OFF)
		return false;
	return init_slow();
}

const struct scratch__conf *scratch__conf(void)
{
	if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == ST_NONE)
		init_slow();
	return &g.conf;
}

int scratch_conf_get(const char *key, uint64_t *ret_value)
{
	return scratch__conf_lookup(scratch__conf(), key, ret_value);
}

/* Fork takes the init lock first (pool_fork.c). */
void scratch__init_prefork(void)
{
	pthread_mutex_lock(&init_lock);
}

void scratch__init_postfork(void)
{
	pthread_mutex_unlock(&init_lock);
}
