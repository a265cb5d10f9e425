/*
 * shimplug.c - a plugin that allocates, for the shim's dlopen tests.
 *
 * Loaded by host_robust with dlopen (also with RTLD_DEEPBIND, where its
 * malloc binds to libc's directly and bypasses the shim). It allocates in
 * its constructor and frees in its destructor, and lends and takes blocks
 * across the boundary.
 */
#include "config.h"

#include <stdlib.h>

#include "host_common.h"
#include "shimplug.h"

#define NKEEP 4
static void *kept[NKEEP];
static const size_t kept_size[NKEEP] = {100, 70 * HOST_KIB, 1 * HOST_MIB, 5 * HOST_MIB};

__attribute__((constructor)) static void plug_init(void)
{
	for (int i = 0; i < NKEEP; i++) {
		kept[i] = malloc(kept_size[i]);
		if (kept[i])
			host_fill(kept[i], kept_size[i], 1000 + (uint64_t)i);
	}
}

__attribute__((destructor)) static void plug_fini(void)
{
	for (int i = 0; i < NKEEP; i++) {
		if (kept[i] && !host_check(kept[i], kept_size[i], kept_size[i], 1000 + (uint64_t)i))
			abort(); /* a test plugin: the host's test reports the crash */
		free(kept[i]);
	}
}

void *plug_kept(int i, size_t *ret_size)
{
	if (i < 0 || i >= NKEEP)
		return NULL;
	*ret_size = kept_size[i];
	return kept[i];
}

void *plug_alloc(size_t n, uint64_t seed)
{
	void *p = malloc(n);

	if (p)
		host_fill(p, n, seed);
	return p;
}

void *plug_realloc(void *p, size_t n)
{
	return realloc(p, n);
}

bool plug_free(void *p, size_t n, uint64_t seed)
{
	bool ok = host_check(p, n, n, seed);

	free(p);
	return ok;
}
