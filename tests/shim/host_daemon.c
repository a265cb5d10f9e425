/*
 * host_daemon.c - a double-forking daemon that keeps a log.
 *
 *   host_daemon LOG
 *
 * The program makes the pools grow once (a growth trace), then daemonizes
 * the classic way: fork, setsid, fork again; the daemon closes fds 0-1023,
 * opens /dev/null at 0, 1 and 2 and LOG at 3, and runs a worker thread
 * that grows the pools with 128 KiB-1 MiB blocks and writes 40 lines to
 * fd 3, one after each round. Its exit status counts the writes that
 * failed or came short, plus 100 when fd 3 is no longer LOG at the end.
 *
 * The starting process is made a child subreaper, so the daemon is
 * reparented to it and it can wait for the daemon's end; it then checks
 * that LOG holds exactly the 40 lines and prints a verdict on stdout.
 * Exits 0 when the log is complete, 1 otherwise.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_grow.h"

#define LOG_LINES 40

static int log_failures;

/* One line per round of growth, written with one write(2) to fd 3. */
static void *worker(void *arg)
{
	struct host_grow g = {
	        .min = 128 * HOST_KIB, .max = HOST_MIB, .blocks = 8, .rounds = 1, .seed = 7};
	uint64_t rng = 7;
	char line[80];

	(void)arg;
	for (int i = 0; i < LOG_LINES; i++) {
		int bad = host_grow_round(&g, &rng);
		int n = snprintf(line, sizeof(line), "line %02d of %d: %d bad blocks\n", i + 1,
		                 LOG_LINES, bad);

		if (write(3, line, (size_t)n) != n)
			log_failures++;
	}
	return NULL;
}

static bool same_file(int fd, const struct stat *want)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == want->st_dev && st.st_ino == want->st_ino;
}

/* The daemon itself: never returns. */
static void daemon_main(const char *log)
{
	struct stat st;
	pthread_t th;

	for (int fd = 0; fd < 1024; fd++)
		close(fd);
	for (int fd = 0; fd < 3; fd++)
		if (open("/dev/null", O_RDWR) != fd)
			_exit(200);
	if (open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) != 3 || fstat(3, &st) != 0)
		_exit(201);
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		_exit(202);
	pthread_join(th, NULL);
	exit(log_failures + (same_file(3, &st) ? 0 : 100));
}

/* The log holds exactly LOG_LINES lines "line NN of 40: 0 bad blocks", in
 * order, and nothing else. */
static bool log_complete(const char *log)
{
	char want[80], got[80];
	FILE *f = fopen(log, "r");
	int good = 0, lines = 0;

	if (!f)
		return false;
	while (fgets(got, sizeof(got), f)) {
		snprintf(want, sizeof(want), "line %02d of %d: 0 bad blocks\n", lines + 1,
		         LOG_LINES);
		if (strcmp(got, want) == 0)
			good++;
		else if (lines < 3)
			fprintf(stderr, "host_daemon: log line %d is '%.40s'\n", lines + 1, got);
		lines++;
	}
	fclose(f);
	return good == LOG_LINES && lines == LOG_LINES;
}

int main(int argc, char **argv)
{
	struct host_grow g = {.min = 256 * HOST_KIB, .max = 256 * HOST_KIB, .blocks = 1, .seed = 3};
	uint64_t rng = 3;
	int status, dstatus = -1;
	pid_t pid, p;

	if (argc != 2) {
		fprintf(stderr, "usage: host_daemon LOG\n");
		return 2;
	}
	if (host_grow_round(&g, &rng) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		perror("host_daemon: start");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() == 0)
			daemon_main(argv[1]);
		_exit(0);
	}
	/* The intermediate child, then the daemon (reparented to us). */
	while ((p = wait(&status)) > 0)
		if (p != pid)
			dstatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("daemon exit status %d\n", dstatus);
	if (dstatus != 0 || !log_complete(argv[1])) {
		printf("log incomplete\n");
		return 1;
	}
	printf("log complete: %d lines, every write whole, fd 3 still the log\n", LOG_LINES);
	return 0;
}
