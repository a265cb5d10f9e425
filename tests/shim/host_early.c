/*
 * host_early.c - allocations that come before the shim's constructor.
 *
 * This program links libshimearly (tests/shim/shimplug.c) as an ordinary
 * dependency: its constructor runs before the preloaded shim's and
 * allocates small and pooled blocks, so the shim has to start itself from
 * inside that first malloc. main checks the blocks (and, under the shim,
 * that the pooled ones came from the pools); the library's destructor
 * checks them again and frees them. Prints "early ok".
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

#include "host_common.h"
#include "shimplug.h"

int main(void)
{
	bool (*owns)(const void *) =
	        (bool (*)(const void *))(uintptr_t)dlsym(RTLD_DEFAULT, "scratch_owns");
	size_t n;
	int bad = 0, pooled = 0;
	void *p;

	for (int i = 0; (p = plug_kept(i, &n)) != NULL; i++) {
		bad += !host_check(p, n, n, 1000 + (uint64_t)i);
		if (owns && n >= 64 * HOST_KIB)
			pooled += owns(p);
	}
	if (owns && pooled == 0) {
		fprintf(stderr, "host_early: no constructor block came from the pools\n");
		bad++;
	}
	if (bad)
		return 1;
	printf("early ok\n");
	return 0;
}
