/*
 * host_jelinked.c - a host that links jemalloc itself (as redis does).
 *
 * Its malloc family binds to whichever malloc comes first: jemalloc's
 * without the shim, the shim's under it. The shim must still find its own
 * backend: glibc's through the __libc_* names (not jemalloc's, which
 * dlsym(RTLD_NEXT) would return), or the same libjemalloc.
 *
 * "mixed" also frees mallocx() blocks with free() and malloc() blocks with
 * dallocx(), which jemalloc allows: that is safe without the shim and with
 * the jemalloc backend only (the glibc backend would hand a jemalloc block
 * to glibc). Prints "<mode> ok", or what broke on stderr and exits 1.
 */
#include "config.h"

#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <string.h>

#include "host_common.h"

static int failures;

static void expect(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "host_jelinked: %s\n", what);
		failures++;
	}
}

static const size_t sizes[] = {8, 100, 5000, 64 * HOST_KIB, 300 * HOST_KIB, 3 * HOST_MIB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void separate(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		unsigned char *p = malloc(n);
		expect(p && malloc_usable_size(p) >= n, "malloc");
		if (!p)
			continue;
		host_fill(p, n, i);
		p = realloc(p, 2 * n);
		expect(p && host_check(p, n, n, i), "realloc");
		free(p);
		void *q = NULL;
		expect(posix_memalign(&q, 64, n) == 0 && ((uintptr_t)q & 63) == 0,
		       "posix_memalign");
		free(q);
		/* jemalloc's own API, paired with itself */
		unsigned char *x = mallocx(n, MALLOCX_ZERO);
		expect(x && x[n - 1] == 0 && sallocx(x, 0) >= n, "mallocx");
		if (x) {
			host_fill(x, n, 7);
			x = rallocx(x, 3 * n, 0);
			expect(x && host_check(x, n, n, 7), "rallocx");
			dallocx(x, 0);
		}
	}
}

static void mixed(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *x = mallocx(n, 0);
		expect(x != NULL, "mallocx");
		free(x);
		void *p = mallocx(n, 0);
		expect(p && malloc_usable_size(p) >= n, "usable size of a mallocx block");
		p = realloc(p, n + 1);
		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "separate";

	if (!strcmp(mode, "separate"))
		separate();
	else if (!strcmp(mode, "mixed"))
		mixed();
	else
		return 2;
	if (failures)
		return 1;
	printf("%s ok\n", mode);
	return 0;
}
