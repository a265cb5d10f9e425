/*
 * check_debug.c - SCRATCH_ASSERT (debug.h): what a failed assertion
 * writes and that it aborts, and that a build without --enable-debug does
 * not evaluate the expression at all.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug.h"
#include "suites.h"

/* Run fn in a child with fd 2 on a pipe; returns its wait status and what
 * it wrote, NUL-terminated. */
static int in_child(void (*fn)(void), char *out, size_t len)
{
	int fds[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got + 1 < len && (n = read(fds[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void fail_direct(void)
{
	scratch__assert_fail("pool.c", 1234, "leased <= retained");
}

START_TEST(test_assert_fail_message)
{
	char out[256];
	int status = in_child(fail_direct, out, sizeof(out));

	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	ck_assert_str_eq(out, "scratch: pool.c:1234: assertion failed: leased <= retained\n");
}
END_TEST

static int evaluated;

static int touch(void)
{
	evaluated++;
	return 0;
}

/* the line of the assertion below */
static const int assert_line = __LINE__ + 3;
static void assert_false(void)
{
	SCRATCH_ASSERT(touch() == 1);
}

START_TEST(test_assert_macro)
{
	char out[256], want[256];
	int status = in_child(assert_false, out, sizeof(out));

#if defined(SCRATCH_DEBUG)
	snprintf(want, sizeof(want), "scratch: %s:%d: assertion failed: touch() == 1\n", __FILE__,
	         assert_line);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	ck_assert_str_eq(out, want);
#else
	/* compiled out: not even evaluated */
	(void)want;
	(void)assert_line;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_str_eq(out, "");
	assert_false();
	ck_assert_int_eq(evaluated, 0);
#endif
}
END_TEST

Suite *debug_suite(void)
{
	Suite *s = suite_create("debug");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_assert_fail_message);
	tcase_add_test(tc, test_assert_macro);
	suite_add_tcase(s, tc);
	return s;
}
