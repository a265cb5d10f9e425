/*
 * host_common.h - patterns the shim's test hosts write into their blocks
 * and verify before every free, so that a block handed out twice, moved
 * without its contents or freed into the wrong place shows up.
 *
 * Small blocks are written whole; large ones get one word per 512 bytes and
 * their last word, which touches every page without making the tests slow.
 */
#ifndef SCRATCH_HOST_COMMON_H
#define SCRATCH_HOST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HOST_KIB ((size_t)1 << 10)
#define HOST_MIB ((size_t)1 << 20)

/* Blocks up to this size are written and checked byte by byte. */
#define HOST_DENSE_LIMIT (16 * HOST_KIB)
#define HOST_STRIDE      512

static inline uint64_t host_word(uint64_t seed, size_t i)
{
	uint64_t x = seed ^ (i * UINT64_C(0x9e3779b97f4a7c15));

	x ^= x >> 31;
	return x * UINT64_C(0xbf58476d1ce4e5b9);
}

static inline void host_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *c = p;

	if (n <= HOST_DENSE_LIMIT) {
		for (size_t i = 0; i < n; i++)
			c[i] = (unsigned char)host_word(seed, i);
		return;
	}
	/* Strided words stop short of the last one, which never overlaps. */
	for (size_t i = 0; i + 16 <= n; i += HOST_STRIDE) {
		uint64_t w = host_word(seed, i);
		memcpy(c + i, &w, 8);
	}
	uint64_t w = host_word(seed, n - 8);
	memcpy(c + n - 8, &w, 8);
}

/* True when the first n bytes still hold what host_fill(p, filled, seed)
 * wrote there (n <= filled; a realloc keeps a prefix). */
static inline bool host_check(const void *p, size_t n, size_t filled, uint64_t seed)
{
	const unsigned char *c = p;
	uint64_t w;

	if (filled <= HOST_DENSE_LIMIT) {
		for (size_t i = 0; i < n; i++)
			if (c[i] != (unsigned char)host_word(seed, i))
				return false;
		return true;
	}
	for (size_t i = 0; i + 16 <= filled && i + 8 <= n; i += HOST_STRIDE) {
		memcpy(&w, c + i, 8);
		if (w != host_word(seed, i))
			return false;
	}
	if (n < filled)
		return true;
	memcpy(&w, c + n - 8, 8);
	return w == host_word(seed, n - 8);
}

/* Writes to p count as seen: a compiler may drop stores to a block that
 * is only freed afterwards, and a test of what a freed block held needs
 * them done. */
static inline void host_written(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* A small, fast PRNG (xorshift64*), deterministic per seed. */
static inline uint64_t host_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* A request size: mostly small, a quarter pooled (64 KiB..1 MiB), a few
 * large (1..8 MiB). */
static inline size_t host_size(uint64_t *state)
{
	uint64_t r = host_rand(state);
	unsigned pick = (unsigned)(r % 100);

	r >>= 8;
	if (pick < 70)
		return 1 + (size_t)(r % 4096);
	if (pick < 95)
		return 64 * HOST_KIB + (size_t)(r % (960 * HOST_KIB));
	return 1 * HOST_MIB + (size_t)(r % (7 * HOST_MIB));
}

#endif /* SCRATCH_HOST_COMMON_H */
