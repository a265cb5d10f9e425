/*
 * check_scratch.c - the one Check runner: adds every module's suite.
 *
 * Select with Check's own variables: CK_RUN_SUITE=pool, CK_RUN_CASE=limits.
 * CK_FORK=no runs everything in one process (valgrind, debuggers).
 *
 * Every case that turns stats on writes a segment file. Unless the caller
 * names a run directory (SCRATCH_RUNTIME_DIR), they go to a private one,
 * removed at the end with whatever a case left in it (keep_segment:true),
 * not to the user's own /dev/shm/scratch-$EUID, which a scratchd may watch.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"

static char run_dir[64];

static void run_dir_make(void)
{
	const char *env = getenv("SCRATCH_RUNTIME_DIR");

	if (env != NULL && *env != '\0')
		return;
	snprintf(run_dir, sizeof(run_dir), "/dev/shm/scratch-check.XXXXXX");
	if (mkdtemp(run_dir) == NULL) {
		snprintf(run_dir, sizeof(run_dir), "/tmp/scratch-check.XXXXXX");
		if (mkdtemp(run_dir) == NULL) {
			perror("check_scratch: mkdtemp");
			exit(EXIT_FAILURE);
		}
	}
	setenv("SCRATCH_RUNTIME_DIR", run_dir, 1);
}

static void run_dir_remove(void)
{
	DIR *d;
	struct dirent *e;

	if (run_dir[0] == '\0' || (d = opendir(run_dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	if (rmdir(run_dir) != 0)
		perror("check_scratch: rmdir");
}

static Suite *(*const suites[])(void) = {
        conf_suite,       pool_suite,    pool_threads_suite, pool_reuse_suite,
        pool_decay_suite, workers_suite, arena_suite,        workspace_suite,
        stats_abi_suite,  debug_suite,   segread_suite,      topology_suite,
        placement_suite,  faults_suite,  fields_suite,       report_suite,
};

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	run_dir_make();
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		srunner_add_suite(sr, suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	run_dir_remove();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
