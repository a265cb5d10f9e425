/*
 * check_maps.c - unit suite of stats/audit/maps.c, the whole-process
 * inventory's parsers and categories, in the one Check runner
 * (tests/check_scratch.c): /proc/PID/maps and numa_maps text, good and
 * hostile, the stack pointer of a thread's syscall and stat lines, and
 * every category rule, with its evidence. Then the same parsers on this
 * process's own files, against what it knows of itself.
 *
 * Select with CK_RUN_SUITE=maps, CK_RUN_CASE=parse|numa|classify|self.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "maps.h"
#include "suites.h"
#include "sys.h"

#define MIB (1ull << 20)

static const char *const MAPS_TEXT =
        "55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1234                       /usr/bin/cat\n"
        "55d0c8a02000-55d0c8a07000 r-xp 00002000 08:01 1234                       /usr/bin/cat\n"
        "55d0c9000000-55d0c9021000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
        "7f0000021000-7f0004000000 ---p 00000000 00:00 0 \n"
        "7f1000000000-7f1040000000 rw-p 00000000 00:00 0 \n"
        "7f2000000000-7f2000001000 ---p 00000000 00:00 0 \n"
        "7f2000001000-7f2000801000 rw-p 00000000 00:00 0 \n"
        "7f3000000000-7f3004000000 r--s 00000000 08:01 99          /models/my model.gguf\n"
        "7f3100000000-7f3100100000 rw-s 00000000 00:1a 7                          /dev/shm/seg\n"
        "7f3200000000-7f3200100000 rw-s 00000000 00:01 32768                      /SYSV00000000 "
        "(deleted)\n"
        "7f3300000000-7f3300100000 rw-s 00000000 00:01 5                          /memfd:kv "
        "(deleted)\n"
        "7f3400000000-7f3400100000 rw-s 00000000 00:01 6                          /dev/zero "
        "(deleted)\n"
        "7f3500000000-7f3500100000 rw-p 00000000 00:00 0                          [anon:kv cache]\n"
        "7f4000000000-7f4100000000 ---p 00000000 00:00 0 \n"
        "7f4100000000-7f4100200000 rw-p 00000000 00:00 0 \n"
        "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
        "7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static const char *const NUMA_TEXT =
        "55d0c8a00000 default file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4\n"
        "55d0c8a02000 default file=/usr/bin/cat mapped=5 N0=3 N1=2 kernelpagesize_kB=4\n"
        "55d0c9000000 default heap anon=33 dirty=33 N0=33 kernelpagesize_kB=4\n"
        "7f0000000000 default anon=20 dirty=20 N1=20 kernelpagesize_kB=4\n"
        "7f0000021000 default\n"
        "7f1000000000 interleave:0-1 anon=1024 dirty=1024 N0=512 N1=512 kernelpagesize_kB=4\n"
        "7f3000000000 prefer (many):0-1 file=/models/my\\040model.gguf mapped=16384 N0=16384 "
        "kernelpagesize_kB=4\n"
        "7f3500000000 default huge anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n"
        "7f9999999000 default anon=3 dirty=3 N1=3 kernelpagesize_kB=4\n"
        "7ffd00000000 default stack anon=4 dirty=4 N0=4 kernelpagesize_kB=4\n";

static struct maps parsed(void)
{
	struct maps m;

	ck_assert_int_eq(maps_parse(MAPS_TEXT, &m), 0);
	return m;
}

static const struct maps_entry *at(const struct maps *m, uint64_t addr)
{
	const struct maps_entry *e = maps_find(m, addr);

	ck_assert_ptr_nonnull(e);
	return e;
}

/* ---- /proc/PID/maps ---- */

START_TEST(test_parse)
{
	struct maps m = parsed();
	const struct maps_entry *e;

	ck_assert_uint_eq(m.n, 19);
	e = &m.e[0];
	ck_assert_uint_eq(e->start, 0x55d0c8a00000ull);
	ck_assert_uint_eq(e->end, 0x55d0c8a02000ull);
	ck_assert_str_eq(e->perms, "r--p");
	ck_assert_uint_eq(e->dev_major, 8);
	ck_assert_uint_eq(e->dev_minor, 1);
	ck_assert_uint_eq(e->inode, 1234);
	ck_assert_str_eq(e->path, "/usr/bin/cat");
	ck_assert_uint_eq(m.e[1].offset, 0x2000);
	ck_assert_str_eq(m.e[3].path, "");
	ck_assert_str_eq(at(&m, 0x7f3000000000ull)->path, "/models/my model.gguf");
	ck_assert_str_eq(at(&m, 0x7f3200000000ull)->path, "/SYSV00000000 (deleted)");
	ck_assert_ptr_null(maps_find(&m, 0x1000));
	ck_assert_ptr_null(maps_find(&m, 0x7f0004000000ull));
	ck_assert_uint_eq(at(&m, 0x7f0004000000ull - 1)->start, 0x7f0000021000ull);
	maps_free(&m);
	/* no text at all: an empty inventory */
	ck_assert_int_eq(maps_parse("", &m), 0);
	ck_assert_uint_eq(m.n, 0);
	maps_free(&m);
}
END_TEST

START_TEST(test_parse_hostile)
{
	static const char *const bad[] = {
	        "zz-1000 rw-p 00000000 00:00 0\n",
	        "1000 rw-p 00000000 00:00 0\n",
	        "2000-1000 rw-p 00000000 00:00 0\n",
	        "1000-1000 rw-p 00000000 00:00 0\n",
	        "1000-2000 rwxq 00000000 00:00 0\n",
	        "1000-2000 rw-p\n",
	        "1000-2000 rw-p 00000000 00-00 0\n",
	        "1000-2000 rw-p 00000000 00:00 x\n",
	        "1000-2000 rw-p 00000000 00:00 0x5\n",
	        "1000-2000 rw-p 00000000 1ffffffff:00 0\n",
	        "1000-2000 rw-p 00000000 00:00 99999999999999999999999\n",
	        "10000000000000000000-20000000000000000000 rw-p 00000000 00:00 0\n",
	        "3000-4000 rw-p 00000000 00:00 0\n1000-2000 rw-p 00000000 00:00 0\n",
	        "1000-3000 rw-p 00000000 00:00 0\n2000-4000 rw-p 00000000 00:00 0\n",
	        "1000-2000 rw-p 00000000 00:00 0\n\n",
	        "\n",
	        "1000-2000 r",
	};
	struct maps m = {.n = 77};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(maps_parse(bad[i], &m) == -EINVAL, "accepted: %s", bad[i]);
		ck_assert_uint_eq(m.n, 77); /* untouched */
	}
	ck_assert_int_eq(maps_parse(NULL, &m), -EINVAL);
	/* no newline after the last line is fine */
	ck_assert_int_eq(maps_parse("1000-2000 rw-p 00000000 00:00 0", &m), 0);
	ck_assert_uint_eq(m.n, 1);
	maps_free(&m);
}
END_TEST

/* ---- numa_maps ---- */

START_TEST(test_numa)
{
	struct maps m = parsed();
	const struct maps_entry *e;
	size_t i;

	ck_assert_int_eq(maps_join_numa(&m, NUMA_TEXT), 0);
	ck_assert_uint_eq(m.nodes, 2);
	e = at(&m, 0x55d0c8a02000ull);
	i = (size_t)(e - m.e);
	ck_assert(e->have_numa);
	ck_assert_uint_eq(maps_node_bytes(&m, i, 0), 3 * 4096);
	ck_assert_uint_eq(maps_node_bytes(&m, i, 1), 2 * 4096);
	ck_assert_uint_eq(maps_node_bytes(&m, i, 7), 0);
	ck_assert_uint_eq(e->resident, 5 * 4096);
	e = at(&m, 0x55d0c9000000ull);
	ck_assert(e->numa_heap);
	ck_assert_uint_eq(e->anon_pages, 33);
	e = at(&m, 0x7f1000000000ull);
	ck_assert_str_eq(e->policy, "interleave:0-1");
	ck_assert_uint_eq(e->resident, 1024 * 4096);
	e = at(&m, 0x7f3000000000ull);
	ck_assert_str_eq(e->policy, "prefer (many):0-1");
	ck_assert_uint_eq(maps_node_bytes(&m, (size_t)(e - m.e), 0), 64 * MIB);
	/* hugetlb: pages of kernelpagesize_kB */
	e = at(&m, 0x7f3500000000ull);
	ck_assert(e->numa_huge);
	ck_assert_uint_eq(e->page_bytes, 2 * MIB);
	ck_assert_uint_eq(e->resident, 4 * MIB);
	ck_assert(at(&m, 0x7ffd00000000ull)->numa_stack);
	/* a mapping with no pages */
	e = at(&m, 0x7f0000021000ull);
	ck_assert(e->have_numa);
	ck_assert_uint_eq(e->resident, 0);
	/* a line no entry has: it moved between the reads, its bytes still count */
	ck_assert_uint_eq(m.moved_lines, 1);
	ck_assert_uint_eq(m.moved_bytes[1], 3 * 4096);
	ck_assert(!at(&m, 0x7f2000001000ull)->have_numa);
	/* a second join replaces the counts */
	ck_assert_int_eq(
	        maps_join_numa(&m, "7f0000000000 default anon=1 N0=1 kernelpagesize_kB=4\n"), 0);
	ck_assert_uint_eq(m.nodes, 1);
	ck_assert_uint_eq(at(&m, 0x7f0000000000ull)->resident, 4096);
	ck_assert_uint_eq(at(&m, 0x7f1000000000ull)->resident, 0);
	ck_assert_uint_eq(m.moved_lines, 0);
	maps_free(&m);
}
END_TEST

START_TEST(test_numa_hostile)
{
	static const char *const bad[] = {
	        "xyz default N0=1\n",
	        "7f0000000000\n",
	        "7f0000000000 default N0=\n",
	        "7f0000000000 default N0=x\n",
	        "7f0000000000 default N=5\n",
	        "7f0000000000 default N0x=5\n",
	        "7f0000000000 default N0=5x\n",
	        "7f0000000000 default N0=99999999999999999999999\n",
	        "7f0000000000 default kernelpagesize_kB=0\n",
	        "7f0000000000 default kernelpagesize_kB=3\n",
	        "7f0000000000 default anon=1 N0=1 kernelpagesize_kB=4\n\n",
	};
	struct maps m = parsed();

	ck_assert_int_eq(maps_join_numa(&m, NUMA_TEXT), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(maps_join_numa(&m, bad[i]) == -EINVAL, "accepted: %s", bad[i]);
		/* as it was */
		ck_assert_uint_eq(m.nodes, 2);
		ck_assert_uint_eq(at(&m, 0x7f1000000000ull)->resident, 1024 * 4096);
		ck_assert_uint_eq(m.moved_lines, 1);
	}
	ck_assert_int_eq(maps_join_numa(&m, "7f0000000000 default N64=1\n"), -ERANGE);
	ck_assert_int_eq(maps_join_numa(&m, NULL), -EINVAL);
	ck_assert_uint_eq(at(&m, 0x7f1000000000ull)->resident, 1024 * 4096);
	/* unknown keys are the kernel's to add: ignored */
	ck_assert_int_eq(
	        maps_join_numa(&m, "7f0000000000 default newkey=3 flag N1=2 kernelpagesize_kB=4\n"),
	        0);
	ck_assert_uint_eq(at(&m, 0x7f0000000000ull)->resident, 2 * 4096);
	maps_free(&m);
}
END_TEST

/* ---- stack pointers ---- */

START_TEST(test_syscall)
{
	uint64_t sp = 0;

	ck_assert_int_eq(maps_parse_syscall("202 0x7f0000001000 0x80 0x2 0x0 0x0 0x0 "
	                                    "0x7f2000800f00 0x7f8d300c8aec\n",
	                                    &sp),
	                 0);
	ck_assert_uint_eq(sp, 0x7f2000800f00ull);
	ck_assert_int_eq(maps_parse_syscall("-1 0x7ffd00020000 0x401000\n", &sp), 0);
	ck_assert_uint_eq(sp, 0x7ffd00020000ull);
	ck_assert_int_eq(maps_parse_syscall("running\n", &sp), -EAGAIN);
	ck_assert_int_eq(maps_parse_syscall("", &sp), -EINVAL);
	ck_assert_int_eq(maps_parse_syscall("1 2 3\n", &sp), -EINVAL);
	ck_assert_int_eq(maps_parse_syscall("202 0x1 0x2 0x3 0x4 0x5 0x6 0xzz 0x7\n", &sp),
	                 -EINVAL);
	ck_assert_int_eq(maps_parse_syscall("202 0x1 0x2 0x3 0x4 0x5 0x6 0x7\n", &sp), -EINVAL);
	ck_assert_int_eq(maps_parse_syscall(NULL, &sp), -EINVAL);
	ck_assert_uint_eq(sp, 0x7ffd00020000ull);
}
END_TEST

/* A stat line whose field 29 (kstkesp) is sp. */
static void stat_with_sp(char *buf, size_t len, const char *sp)
{
	size_t at = (size_t)snprintf(buf, len, "42 (a) b) (c) S");

	for (int f = 4; f <= 52; f++)
		at += (size_t)snprintf(buf + at, len - at, " %s", f == 29 ? sp : "0");
}

START_TEST(test_stat_sp)
{
	char line[512];
	uint64_t sp = 0;

	stat_with_sp(line, sizeof(line), "140737488338944");
	ck_assert_int_eq(maps_parse_stat_sp(line, strlen(line), &sp), 0);
	ck_assert_uint_eq(sp, 140737488338944ull);
	stat_with_sp(line, sizeof(line), "0");
	ck_assert_int_eq(maps_parse_stat_sp(line, strlen(line), &sp), -ENODATA);
	stat_with_sp(line, sizeof(line), "x");
	ck_assert_int_eq(maps_parse_stat_sp(line, strlen(line), &sp), -EINVAL);
	ck_assert_int_eq(maps_parse_stat_sp("42 (a) S 1 2", 12, &sp), -EINVAL);
	ck_assert_int_eq(maps_parse_stat_sp("42 (a", 5, &sp), -EINVAL);
	/* len stops the read, not the NUL */
	stat_with_sp(line, sizeof(line), "77");
	ck_assert_int_eq(maps_parse_stat_sp(line, 20, &sp), -EINVAL);
	ck_assert_uint_eq(sp, 140737488338944ull);
}
END_TEST

/* ---- categories ---- */

START_TEST(test_classify)
{
	struct maps_stack stacks[] = {{1235, 0x7f2000800f00ull}, {1236, 0x12345}};
	struct maps_context c = {.pid = 1234,
	                         .pool_lo = 0x7f4000000000ull,
	                         .pool_hi = 0x7f4100200000ull,
	                         .max_size = 1 << 30,
	                         .stacks = stacks,
	                         .nstacks = 2};
	struct maps m = parsed();
	const struct maps_entry *e;

	maps_classify(&m, &c);
	ck_assert_int_eq(at(&m, 0x55d0c8a00000ull)->category, MAPS_FILE);
	ck_assert_int_eq(at(&m, 0x55d0c9000000ull)->category, MAPS_HEAP);
	/* the arena heap: head and tail, HEAP_MAX_SIZE in all */
	e = at(&m, 0x7f0000000000ull);
	ck_assert_int_eq(e->category, MAPS_HEAP);
	ck_assert_msg(strstr(e->why, "rw-p head 132.0 KiB + ---p tail 63.9 MiB") != NULL, "%s",
	              e->why);
	ck_assert_int_eq(at(&m, 0x7f0000021000ull)->category, MAPS_HEAP);
	/* 1 GiB, 64 MiB-aligned, no tail: above max_size? it is 1 GiB = max_size */
	e = at(&m, 0x7f1000000000ull);
	ck_assert_int_eq(e->category, MAPS_ANON);
	/* a thread's stack by its stack pointer, and the guard below it */
	e = at(&m, 0x7f2000001000ull);
	ck_assert_int_eq(e->category, MAPS_STACK);
	ck_assert_int_eq(e->tid, 1235);
	ck_assert_int_eq(at(&m, 0x7f2000000000ull)->category, MAPS_STACK);
	ck_assert_int_eq(at(&m, 0x7f2000000000ull)->tid, 1235);
	/* a MAP_SHARED model file is a file, not shared memory */
	e = at(&m, 0x7f3000000000ull);
	ck_assert_int_eq(e->category, MAPS_FILE);
	ck_assert(strstr(e->why, "shared") != NULL);
	ck_assert_int_eq(at(&m, 0x7f3100000000ull)->category, MAPS_SHM);
	ck_assert(strstr(at(&m, 0x7f3200000000ull)->why, "System V") != NULL);
	ck_assert(strstr(at(&m, 0x7f3300000000ull)->why, "memfd") != NULL);
	ck_assert(strstr(at(&m, 0x7f3400000000ull)->why, "MAP_ANONYMOUS") != NULL);
	ck_assert_int_eq(at(&m, 0x7f3500000000ull)->category, MAPS_ANON);
	/* the pools' region, reservation and carved block alike */
	ck_assert_int_eq(at(&m, 0x7f4000000000ull)->category, MAPS_POOL);
	ck_assert_int_eq(at(&m, 0x7f4100000000ull)->category, MAPS_POOL);
	e = at(&m, 0x7ffd00000000ull);
	ck_assert_int_eq(e->category, MAPS_STACK);
	ck_assert_int_eq(e->tid, 1234);
	ck_assert_int_eq(at(&m, 0x7ffd00100000ull)->category, MAPS_OTHER);
	ck_assert_int_eq(at(&m, 0xffffffffff600000ull)->category, MAPS_OTHER);
	/* without the pools' region, it is anonymous, above max_size */
	c.pool_lo = c.pool_hi = 0;
	maps_classify(&m, &c);
	e = at(&m, 0x7f4000000000ull);
	ck_assert_int_eq(e->category, MAPS_ANON);
	ck_assert_msg(strstr(e->why, "above the pools' max_size (1.0 GiB)") != NULL, "%s", e->why);
	ck_assert_str_eq(maps_category_name(MAPS_SHM), "shm");
	ck_assert_str_eq(maps_category_name((enum maps_category)99), "unknown");
	maps_free(&m);
}
END_TEST

START_TEST(test_classify_arena_shapes)
{
	static const char *const not_arenas[] = {
	        /* misaligned */
	        "7f0000001000-7f0000021000 rw-p 00000000 00:00 0 \n"
	        "7f0000021000-7f0004001000 ---p 00000000 00:00 0 \n",
	        /* a tail that ends short of 64 MiB */
	        "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	        "7f0000021000-7f0003000000 ---p 00000000 00:00 0 \n",
	        /* a gap before the tail */
	        "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	        "7f0000022000-7f0004000000 ---p 00000000 00:00 0 \n",
	        /* a file where the tail should be */
	        "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	        "7f0000021000-7f0004000000 ---p 00000000 08:01 9  /x\n",
	        /* a head that is not rw-p */
	        "7f0000000000-7f0000021000 r--p 00000000 00:00 0 \n"
	        "7f0000021000-7f0004000000 ---p 00000000 00:00 0 \n",
	};
	struct maps_context c = {.pid = 1};
	struct maps m;

	for (size_t i = 0; i < sizeof(not_arenas) / sizeof(not_arenas[0]); i++) {
		ck_assert_int_eq(maps_parse(not_arenas[i], &m), 0);
		maps_classify(&m, &c);
		ck_assert_msg(m.e[0].category != MAPS_HEAP, "an arena: %s", not_arenas[i]);
		maps_free(&m);
	}
	/* grown to its maximum: one rw-p mapping of 64 MiB, aligned */
	ck_assert_int_eq(maps_parse("7f0004000000-7f0008000000 rw-p 00000000 00:00 0 \n", &m), 0);
	maps_classify(&m, &c);
	ck_assert_int_eq(m.e[0].category, MAPS_HEAP);
	ck_assert(strstr(m.e[0].why, "grown to its maximum") != NULL);
	maps_free(&m);
}
END_TEST

START_TEST(test_classify_merged_stack)
{
	/* a thread's 8 MiB stack above its guard, merged by the kernel with
	 * the 32 MiB buffer mapped right above it */
	static const char *const text = "7f0000000000-7f0000001000 ---p 00000000 00:00 0 \n"
	                                "7f0000001000-7f0002801000 rw-p 00000000 00:00 0 \n";
	struct maps_stack st = {77, 0x7f0000800000ull};
	struct maps_context c = {.pid = 1, .stacks = &st, .nstacks = 1, .stack_max = 8u << 20};
	struct maps m;

	ck_assert_int_eq(maps_parse(text, &m), 0);
	maps_classify(&m, &c);
	ck_assert_int_eq(m.e[1].category, MAPS_ANON);
	ck_assert_msg(strstr(m.e[1].why, "holds thread 77's stack, merged") != NULL, "%s",
	              m.e[1].why);
	/* no bound: it is the thread's stack */
	c.stack_max = 0;
	maps_classify(&m, &c);
	ck_assert_int_eq(m.e[1].category, MAPS_STACK);
	ck_assert_int_eq(m.e[0].tid, 77);
	/* two stack pointers in one mapping (a cached stack taken over): the
	 * later wins */
	{
		struct maps_stack two[] = {{77, 0x7f0000800000ull}, {78, 0x7f0000900000ull}};

		c.stacks = two;
		c.nstacks = 2;
		maps_classify(&m, &c);
		ck_assert_int_eq(m.e[1].tid, 78);
	}
	maps_free(&m);
}
END_TEST

/* ---- this process ---- */

START_TEST(test_self)
{
	char *maps_text = sys_read_file("/proc/self/maps", 64u << 20, NULL);
	char *numa_text = sys_read_file("/proc/self/numa_maps", 64u << 20, NULL);
	size_t len = 8 * MIB;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct maps_context c = {.pid = getpid()};
	const struct maps_entry *e;
	struct maps m;
	uint64_t total = 0;

	ck_assert_ptr_ne(p, MAP_FAILED);
	memset(p, 1, len);
	free(maps_text);
	free(numa_text);
	maps_text = sys_read_file("/proc/self/maps", 64u << 20, NULL);
	numa_text = sys_read_file("/proc/self/numa_maps", 64u << 20, NULL);
	ck_assert_ptr_nonnull(maps_text);
	ck_assert_int_eq(maps_parse(maps_text, &m), 0);
	if (numa_text != NULL) /* a kernel without CONFIG_NUMA has none */
		ck_assert_int_eq(maps_join_numa(&m, numa_text), 0);
	maps_classify(&m, &c);
	e = maps_find(&m, (uint64_t)(uintptr_t)p);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->category, MAPS_ANON);
	if (numa_text != NULL) {
		/* every byte written is resident, on some node */
		for (unsigned n = 0; n < m.nodes; n++)
			total += maps_node_bytes(&m, (size_t)(e - m.e), n);
		ck_assert_uint_ge(total, len);
		ck_assert_uint_eq(total, e->resident);
	}
	e = maps_find(&m, (uint64_t)(uintptr_t)&c);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->category, MAPS_STACK);
	ck_assert_int_eq(e->tid, getpid());
	e = maps_find(&m, (uint64_t)(uintptr_t)maps_parse);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->category, MAPS_FILE);
	maps_free(&m);
	munmap(p, len);
	free(maps_text);
	free(numa_text);
}
END_TEST

Suite *maps_suite(void)
{
	Suite *s = suite_create("maps");
	TCase *parse = tcase_create("parse");
	TCase *numa = tcase_create("numa");
	TCase *classify = tcase_create("classify");
	TCase *self = tcase_create("self");

	tcase_add_test(parse, test_parse);
	tcase_add_test(parse, test_parse_hostile);
	tcase_add_test(parse, test_syscall);
	tcase_add_test(parse, test_stat_sp);
	tcase_add_test(numa, test_numa);
	tcase_add_test(numa, test_numa_hostile);
	tcase_add_test(classify, test_classify);
	tcase_add_test(classify, test_classify_arena_shapes);
	tcase_add_test(classify, test_classify_merged_stack);
	tcase_add_test(self, test_self);
	suite_add_tcase(s, parse);
	suite_add_tcase(s, numa);
	suite_add_tcase(s, classify);
	suite_add_tcase(s, self);
	return s;
}
