/* suites.h - every Check suite of the one test runner. */
#ifndef SCRATCH_TESTS_SUITES_H
#define SCRATCH_TESTS_SUITES_H

#include <check.h>

Suite *conf_suite(void);
Suite *pool_suite(void);
Suite *workers_suite(void);
Suite *arena_suite(void);
Suite *workspace_suite(void);
Suite *segread_suite(void);
Suite *topology_suite(void);
Suite *placement_suite(void);
Suite *faults_suite(void);
Suite *report_suite(void);

#endif
