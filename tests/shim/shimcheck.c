/*
 * shimcheck.c - preloaded after the shim by the real-program tests, to show
 * that the pools were used: at exit it appends the process's pool totals
 * (scratch_stats_total) to the file named by $SCRATCH_SHIMCHECK_OUT, one
 * line per process: "pid allocs hits passthrough". Children inherit both
 * the preload and the variable, so each process adds its own line.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scratch.h"

__attribute__((destructor)) static void shimcheck_report(void)
{
	const char *path = getenv("SCRATCH_SHIMCHECK_OUT");
	struct scratch_stats st = {.size = sizeof(st)};
	char line[160];

	if (!path || scratch_stats_total(&st) != 0)
		return;
	int n = snprintf(line, sizeof(line), "%ld %llu %llu %llu\n", (long)getpid(),
	                 (unsigned long long)st.allocs, (unsigned long long)st.hits,
	                 (unsigned long long)st.passthrough);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0 && write(fd, line, (size_t)n) != n)
		n = -1;
	close(fd);
}
