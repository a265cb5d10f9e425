/*
 * fuzz_segment.c - fuzz target for the segment reader (segread.c): any
 * bytes must give an error or a consistent view, never a crash or a read
 * outside the input.
 *
 * Built two ways: with -DSCRATCH_LIBFUZZER under clang -fsanitize=fuzzer
 * (`make fuzz`), or as a standalone driver (`make check` runs it briefly):
 *
 *   fuzz_segment [-n ITERATIONS] [-s SEED] FILE...
 *
 * runs each FILE, then ITERATIONS seeded mutations of each (bytes flipped,
 * header words replaced by boundary values, truncations), and prints how
 * many inputs the reader accepted.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_record(void *ctx, const struct segread_record *r)
{
	uint64_t *n = ctx;

	if (r->nframes > SCRATCH_SEG_MAX_FRAMES)
		abort();
	(*n)++;
}

static uint64_t accepted;

/* The class figures of an accepted segment: within the reader's bounds,
 * in class order, and as the equations of segment.h say. */
static void check_classes(const struct segread *s)
{
	struct segread_class c[SCRATCH_SEG_MAX_CLASSES];
	int n = segread_classes(s, c, SCRATCH_SEG_MAX_CLASSES);

	if (n > (int)s->class_count)
		abort();
	for (int i = 0; i < n; i++) {
		if (c[i].cls < s->class_first || c[i].cls >= s->class_first + s->class_count ||
		    (i > 0 && c[i].cls <= c[i - 1].cls))
			abort();
		if (c[i].requests != c[i].hits + c[i].depot_hits + c[i].misses ||
		    c[i].leased_blocks > c[i].lent)
			abort();
	}
}

/* The block table of an accepted segment: entries in id order, inside
 * the region, of a state the format names. */
static void check_blocks(const struct segread *s)
{
	static struct segread_block b[4096];
	uint64_t base, size;
	uint32_t n = 0, skipped = 0;

	if (segread_region(s, &base, &size) != 0)
		return;
	if (segread_blocks(s, b, 4096, &n, &skipped) != 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		if (b[i].id < 1 || b[i].id > s->block_slots || (i > 0 && b[i].id <= b[i - 1].id))
			abort();
		if (b[i].start < base || b[i].capacity == 0 ||
		    b[i].start + b[i].capacity > base + size ||
		    b[i].state < SCRATCH_SEG_BLK_OWNED || b[i].state > SCRATCH_SEG_BLK_MAX)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct segread_src src = {.fd = -1, .mem = data, .mem_size = size};
	struct segread s;
	struct segread_thread *t;
	struct scratch__proc_counters pc;
	struct segread_owner o;
	struct segread_totals tot;
	uint64_t next = 1, lost = 0, n = 0;
	uint32_t nt = 0;
	char err[160];

	if (segread_open(&src, size, &s, err, sizeof(err)) != 0)
		return 0;
	accepted++;
	t = calloc(s.thread_slots + 1, sizeof(*t));
	if (t == NULL)
		return 0;
	bool *used = calloc(s.thread_slots + 1, sizeof(*used));

	if (used != NULL && segread_threads_used(&s, used) != 0)
		memset(used, 0, s.thread_slots + 1);
	for (uint32_t i = 0; i <= s.thread_slots; i++)
		if (segread_thread(&s, i, &t[nt]) == 0)
			nt++;
	free(used);
	for (uint32_t i = 0; i <= s.owner_slots; i++)
		segread_owner(&s, i, &o);
	if (segread_proc(&s, &pc) != 0)
		memset(&pc, 0, sizeof(pc));
	segread_totals(t, nt, &pc, &tot);
	check_classes(&s);
	check_blocks(&s);
	segread_drain(&s, &next, &lost, 1u << 16, false, count_record, &n);
	next = 1;
	segread_drain(&s, &next, &lost, 1u << 16, true, count_record, &n);
	free(t);
	return 0;
}

#ifndef SCRATCH_LIBFUZZER
static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A boundary or small value into the header's region and block-table
 * words, or into a word of an entry the table's offset points at. */
static void mutate_blocks(uint8_t *buf, size_t len)
{
	static const uint64_t edge[] = {0, 1, 2, 4, 5, 8, 4096, 0x7fffffff, UINT64_MAX, 1u << 20};
	const size_t at0 = offsetof(struct scratch_seg_header, region_base);
	uint64_t v = edge[next_rand() % (sizeof(edge) / sizeof(edge[0]))], off;
	size_t at;

	if (len < sizeof(struct scratch_seg_header))
		return;
	memcpy(&off, buf + offsetof(struct scratch_seg_header, blocks_off), sizeof(off));
	if (next_rand() % 2 == 0 || off == 0 || off >= len) {
		at = at0 + (next_rand() % 4) * 8;
	} else {
		at = (size_t)off + (next_rand() % 64) * 8;
		if (at + 8 > len)
			return;
	}
	memcpy(buf + at, &v, next_rand() % 2 ? 8 : 4);
}

static void mutate(uint8_t *buf, size_t *len)
{
	static const uint64_t edge[] = {
	        0,       1, 7, 8, 63, 64, 4096, 0x7fffffff, 0xffffffff, UINT64_MAX, UINT64_MAX / 2,
	        1u << 20};
	unsigned ops = 1 + (unsigned)(next_rand() % 4);

	for (unsigned k = 0; k<ops && * len> 0; k++) {
		switch (next_rand() % 6) {
		case 0: /* flip a byte anywhere */
			buf[next_rand() % *len] ^= (uint8_t)(1 + next_rand() % 255);
			break;
		case 1: /* a header word to a boundary value */
			if (*len >= 256) {
				uint64_t v = edge[next_rand() % (sizeof(edge) / sizeof(edge[0]))];
				size_t at = (next_rand() % 32) * 8;

				memcpy(buf + at, &v, next_rand() % 2 ? 8 : 4);
			}
			break;
		case 2: /* truncate */
			*len = next_rand() % (*len + 1);
			break;
		case 4: /* the block table's layout words or one of its entries */
			mutate_blocks(buf, *len);
			break;
		default: /* a 32-bit field of the header area to a small value */
			if (*len >= 256) {
				uint32_t v = (uint32_t)(next_rand() % 70000);

				memcpy(buf + (next_rand() % 64) * 4, &v, 4);
			}
			break;
		}
	}
}

static uint8_t *load(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
		perror(path);
		exit(2);
	}
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 1000;
	uint64_t runs = 0;
	int c;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			iterations = strtoul(optarg, NULL, 10);
		else if (c == 's')
			rng = strtoull(optarg, NULL, 10) | 1;
		else
			return 2;
	}
	for (int i = optind; i < argc; i++) {
		size_t len, mlen;
		uint8_t *orig = load(argv[i], &len), *buf = malloc(len + 1);

		if (buf == NULL)
			return 2;
		LLVMFuzzerTestOneInput(orig, len);
		runs++;
		for (unsigned long k = 0; k < iterations; k++) {
			mlen = len;
			memcpy(buf, orig, len);
			mutate(buf, &mlen);
			/* an exact-size copy, so a sanitizer sees any overread */
			uint8_t *exact = malloc(mlen ? mlen : 1);

			memcpy(exact, buf, mlen);
			LLVMFuzzerTestOneInput(exact, mlen);
			free(exact);
			runs++;
		}
		free(buf);
		free(orig);
	}
	printf("fuzz_segment: %llu inputs, %llu accepted by the reader\n", (unsigned long long)runs,
	       (unsigned long long)accepted);
	return 0;
}
#endif
