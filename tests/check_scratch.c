/*
 * check_scratch.c - the one Check runner: adds every module's suite.
 *
 * Select with Check's own variables: CK_RUN_SUITE=pool, CK_RUN_CASE=limits.
 * CK_FORK=no runs everything in one process (valgrind, debuggers).
 */
#include <stdlib.h>

#include "suites.h"

static Suite *(*const suites[])(void) = {
        conf_suite,      pool_suite,   workers_suite, arena_suite,    workspace_suite,
        stats_abi_suite, debug_suite,  segread_suite, topology_suite, placement_suite,
        faults_suite,    fields_suite, report_suite,
};

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		srunner_add_suite(sr, suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
