/*
 * host_numa.c - a test host for the two-node guest (tests/guest_*.test):
 * where the kernel puts the pages of a buffer that one thread allocates and
 * others first touch.
 *
 *   host_numa split MIB   the main thread, on CPU 0, mallocs MIB MiB; a
 *                         worker pinned to CPU 0 writes the first half, one
 *                         pinned to CPU 1 the second (halves cut on a 2 MiB
 *                         boundary, so no huge page straddles them)
 *   host_numa untouched MIB
 *                         mallocs MIB MiB and touches none of it
 *
 * Prints, per range, the pages on node 0, on node 1 and not present, from
 * move_pages(2) with nodes=NULL (which reports, never moves or faults):
 *   first node0=N node1=N absent=N
 *   second node0=N node1=N absent=N
 * A plain malloc/free program: the shim, when preloaded, serves the buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE  4096UL
#define HUGE  (2UL << 20)
#define BATCH 4096

struct half {
	char *from, *to;
	int cpu;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("host_numa: sched_setaffinity");
		exit(2);
	}
}

static void *write_half(void *arg)
{
	const struct half *h = arg;

	pin(h->cpu);
	memset(h->from, 0x5a, (size_t)(h->to - h->from));
	return NULL;
}

/* Pages of [from, to) on node 0, node 1 and not present. */
static void placement(const char *name, char *from, char *to)
{
	unsigned long counts[3] = {0, 0, 0}; /* node 0, node 1, absent */
	void *pages[BATCH];
	int status[BATCH];

	for (char *p = from; p < to;) {
		unsigned long n = 0;

		for (; n < BATCH && p < to; n++, p += PAGE)
			pages[n] = p;
		if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0) {
			perror("host_numa: move_pages");
			exit(2);
		}
		for (unsigned long i = 0; i < n; i++) {
			if (status[i] == 0 || status[i] == 1)
				counts[status[i]]++;
			else if (status[i] == -ENOENT || status[i] == -EFAULT)
				counts[2]++;
			else {
				fprintf(stderr, "host_numa: page status %d\n", status[i]);
				exit(2);
			}
		}
	}
	printf("%s node0=%lu node1=%lu absent=%lu\n", name, counts[0], counts[1], counts[2]);
}

int main(int argc, char **argv)
{
	size_t size;
	char *buf, *first, *mid, *end;

	if (argc != 3 || (size = strtoul(argv[2], NULL, 10) << 20) == 0) {
		fprintf(stderr, "usage: host_numa split|untouched MIB\n");
		return 2;
	}
	pin(0);
	buf = malloc(size);
	if (buf == NULL) {
		perror("host_numa: malloc");
		return 2;
	}
	/* Whole pages only: glibc's chunk header shares the first page. */
	first = (char *)(((uintptr_t)buf + PAGE - 1) & ~(PAGE - 1));
	end = (char *)(((uintptr_t)buf + size) & ~(PAGE - 1));
	mid = (char *)(((uintptr_t)buf + size / 2 + HUGE - 1) & ~(HUGE - 1));
	if (strcmp(argv[1], "split") == 0) {
		struct half h[2] = {{buf, mid, 0}, {mid, buf + size, 1}};
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, write_half, &h[i]) != 0) {
				fprintf(stderr, "host_numa: pthread_create failed\n");
				return 2;
			}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	} else if (strcmp(argv[1], "untouched") != 0) {
		fprintf(stderr, "host_numa: unknown mode %s\n", argv[1]);
		return 2;
	}
	placement("first", first, mid);
	placement("second", mid, end);
	free(buf);
	return 0;
}
