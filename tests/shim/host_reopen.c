/*
 * host_reopen.c - a host that closes every descriptor above 2 and reuses
 * the numbers while its threads keep the pools growing.
 *
 *   host_reopen DIR
 *
 * Writes DIR/in (1 MiB of a known pattern) and makes the pools grow (growth
 * traces), then close_range(3, ~0U, 0), opens DIR/in at fd 3 and DIR/out at
 * fd 4, and starts four threads that grow the pools (128 KiB-4 MiB) until
 * the copy is done. The main thread copies fd 3 to fd 4 in 4 KiB chunks,
 * growing the pools once per chunk too, and checks after every chunk that
 * each offset is exactly what it read or wrote. At the end DIR/out must
 * equal the pattern byte for byte and DIR/in must be unchanged. Prints a
 * verdict on stdout; exits 0 when everything held, 1 otherwise.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host_grow.h"

#define FILE_SIZE (HOST_MIB)
#define CHUNK     4096
#define GROWERS   4

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "host_reopen: ");                                          \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static unsigned char pattern[FILE_SIZE];

static void make_pattern(void)
{
	for (size_t i = 0; i < FILE_SIZE; i++)
		pattern[i] = (unsigned char)host_word(11, i);
}

/* The whole of path equals pattern. */
static bool file_is_pattern(const char *path)
{
	static unsigned char buf[FILE_SIZE + 1];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n == FILE_SIZE && memcmp(buf, pattern, FILE_SIZE) == 0;
}

static bool write_pattern(const char *path)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(pattern, 1, FILE_SIZE, f) == FILE_SIZE;

	return f && fclose(f) == 0 && ok;
}

/* fd 3 to fd 4, chunk by chunk, with one growth on this thread per chunk;
 * the offsets checked after every step. */
static void copy(void)
{
	struct host_grow g = {.min = 128 * HOST_KIB, .max = HOST_MIB, .blocks = 2, .seed = 5};
	uint64_t rng = 5;
	char buf[CHUNK];
	off_t done = 0;
	ssize_t n;

	while ((n = read(3, buf, sizeof(buf))) > 0) {
		EXPECT(n == CHUNK, "short read at %lld: %zd", (long long)done, n);
		EXPECT(memcmp(buf, pattern + done, (size_t)n) == 0, "read wrong bytes at %lld",
		       (long long)done);
		EXPECT(write(4, buf, (size_t)n) == n, "write at %lld failed", (long long)done);
		done += n;
		EXPECT(lseek(3, 0, SEEK_CUR) == done, "input offset %lld, read %lld",
		       (long long)lseek(3, 0, SEEK_CUR), (long long)done);
		EXPECT(lseek(4, 0, SEEK_CUR) == done, "output offset %lld, wrote %lld",
		       (long long)lseek(4, 0, SEEK_CUR), (long long)done);
		EXPECT(host_grow_round(&g, &rng) == 0, "a block was not served or not intact");
		if (failures > 10)
			break;
	}
	EXPECT(n == 0 && done == FILE_SIZE, "copied %lld bytes of %zu", (long long)done,
	       (size_t)FILE_SIZE);
}

int main(int argc, char **argv)
{
	struct host_grow g = {.min = 128 * HOST_KIB, .max = 4 * HOST_MIB, .blocks = 6};
	struct host_grow gs[GROWERS];
	pthread_t th[GROWERS];
	char in[4096], out[4096];
	unsigned started = 0;
	int stop = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: host_reopen DIR\n");
		return 2;
	}
	snprintf(in, sizeof(in), "%s/in", argv[1]);
	snprintf(out, sizeof(out), "%s/out", argv[1]);
	make_pattern();
	g.rounds = 2;
	if (!write_pattern(in) || host_grow_threads(&g, GROWERS) != 0) {
		fprintf(stderr, "host_reopen: could not set up\n");
		return 1;
	}
	close_range(3, ~0U, 0);
	if (open(in, O_RDONLY) != 3 || open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600) != 4) {
		fprintf(stderr, "host_reopen: files not opened at 3 and 4\n");
		return 1;
	}
	g.rounds = 0;
	g.stop = &stop;
	for (; started < GROWERS; started++) {
		gs[started] = g;
		gs[started].seed = 20 + started;
		if (pthread_create(&th[started], NULL, host_grow_thread, &gs[started]) != 0)
			break;
	}
	EXPECT(started == GROWERS, "only %u threads started", started);
	copy();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		EXPECT(gs[i].bad == 0, "grower %u: %d blocks not served or not intact", i,
		       gs[i].bad);
	}
	EXPECT(close(4) == 0, "close(4): %m");
	EXPECT(file_is_pattern(out), "the output differs from what was written");
	EXPECT(file_is_pattern(in), "the input changed");
	if (failures) {
		printf("reopen: %d failures\n", failures);
		return 1;
	}
	printf("reopen: %d bytes copied from fd 3 to fd 4, both files intact\n", FILE_SIZE);
	return 0;
}
