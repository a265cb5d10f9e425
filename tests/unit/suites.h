/* suites.h - every Check suite of the one test runner. */
#ifndef SCRATCH_TESTS_SUITES_H
#define SCRATCH_TESTS_SUITES_H

#include <check.h>

/* UNDER_TSAN: built with ThreadSanitizer (gcc names it one way, clang the
 * other), whose runtime adds threads and mappings that some cases count. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

Suite *conf_suite(void);
Suite *pool_suite(void);
Suite *pool_threads_suite(void);
Suite *pool_reuse_suite(void);
Suite *pool_decay_suite(void);
Suite *workers_suite(void);
Suite *arena_suite(void);
Suite *workspace_suite(void);
Suite *stats_abi_suite(void);
Suite *debug_suite(void);
Suite *segread_suite(void);
Suite *topology_suite(void);
Suite *placement_suite(void);
Suite *faults_suite(void);
Suite *report_suite(void);
Suite *fields_suite(void);

#endif
