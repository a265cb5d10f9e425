/*
 * host_robust.h - what host_robust's two files share: the failure count,
 * EXPECT, the round trips, and the subcommands host_robust_env.c defines.
 */
#ifndef SCRATCH_TESTS_HOST_ROBUST_H
#define SCRATCH_TESTS_HOST_ROBUST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host_common.h"

extern int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "host_robust: %s:%d: ", __func__, __LINE__);               \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Allocate, fill, verify and free one block of n bytes. */
bool round_trip(size_t n, uint64_t seed);
/* round_trip() over sizes from small to pooled. */
bool mixed_round(uint64_t seed);

/* host_robust_env.c: what the host's environment imposes */
void test_no_fds(void);
void test_region_full(void);
void test_count(void);
void test_realloc_growth(void);
void test_malloc_trim(void);
void test_mlockall(void);
void test_fork_cheap(void);
void test_seccomp(char *self, const char *profile);
void test_seccomp_run(const char *profile);
void test_as_limit(void);

#endif
