/*
 * check_conf.c - the SCRATCH_CONF parser, a pure function.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "suites.h"

struct warnings {
	int n;
	char last[256];
};

static void collect(void *ctx, const char *line)
{
	struct warnings *w = ctx;

	w->n++;
	strncpy(w->last, line, sizeof(w->last) - 1);
}

static int parse(const char *s, struct scratch__conf *c, struct warnings *w)
{
	memset(w, 0, sizeof(*w));
	scratch__conf_defaults(c);
	return scratch__conf_parse(s, c, collect, w);
}

START_TEST(test_defaults)
{
	struct scratch__conf c;
	struct warnings w;

	ck_assert_int_eq(parse("", &c, &w), 0);
	ck_assert_int_eq(parse(NULL, &c, &w), 0);
	ck_assert(c.enabled);
	ck_assert_uint_eq(c.min_size, 64 << 10);
	ck_assert_uint_eq(c.max_size, 1 << 30);
	ck_assert(c.stats && c.trace && !c.thp && c.thp_dense && c.populate && c.inherit &&
	          !c.keep_segment);
	ck_assert(!c.verbose);
	/* jemalloc's figures: lg_extent_max_active_fit 6 and dirty_decay_ms */
	ck_assert_uint_eq(c.max_fit, 64);
	ck_assert_uint_eq(c.decay_ms, 10000);
	ck_assert(c.decay_thread);
	ck_assert(c.lend);
	ck_assert_int_eq(w.n, 0);
}
END_TEST

START_TEST(test_good_values)
{
	struct scratch__conf c;
	struct warnings w;

	ck_assert_int_eq(parse("min_size:128K,max_size:2G,cache_count:3,cache_bytes:1MiB,"
	                       "enabled:false,stats:off,trace:no,trace_frames:4,keep_segment:yes,"
	                       "depot_bytes:0,reserve:1T,trace_ring:1024,max_threads:7,inherit:0,"
	                       "verbose:on,max_fit:1,decay_ms:0,decay_thread:off,lend:no,"
	                       "populate:false",
	                       &c, &w),
	                 0);
	ck_assert_uint_eq(c.min_size, 128 << 10);
	ck_assert_uint_eq(c.max_size, UINT64_C(2) << 30);
	ck_assert_uint_eq(c.cache_count, 3);
	ck_assert_uint_eq(c.cache_bytes, 1 << 20);
	ck_assert(!c.enabled && !c.stats && !c.trace && c.keep_segment && !c.inherit);
	ck_assert(c.verbose);
	ck_assert_uint_eq(c.trace_frames, 4);
	ck_assert_uint_eq(c.depot_bytes, 0);
	ck_assert_uint_eq(c.reserve, UINT64_C(1) << 40);
	ck_assert_uint_eq(c.trace_ring, 1024);
	ck_assert_uint_eq(c.max_threads, 7);
	ck_assert_uint_eq(c.max_fit, 1);
	ck_assert_uint_eq(c.decay_ms, 0);
	ck_assert(!c.decay_thread);
	ck_assert(!c.lend);
	ck_assert(!c.populate);
	ck_assert_int_eq(w.n, 0);
	ck_assert_int_eq(parse("max_fit:4096,decay_ms:2147483648", &c, &w), 0);
	ck_assert_uint_eq(c.max_fit, 4096);
	ck_assert_uint_eq(c.decay_ms, UINT64_C(1) << 31);
}
END_TEST

START_TEST(test_bad_values_keep_defaults)
{
	static const char *const bad[] = {
	        "min_size:6x4",    "min_size:",
	        "min_size:-1",     "min_size:1K",
	        "cache_count:4K",  "cache_count:abc",
	        "enabled:maybe",   "trace_frames:17",
	        "trace_ring:1000", "max_threads:0",
	        "reserve:1M",      "nosuchkey:1",
	        "justakey",        "min_size:99999999999999999999",
	        "max_size:1GX",    "cache_bytes:12Q",
	        "verbose:2",       "verbose:",
	        "max_fit:0",       "max_fit:4097",
	        "max_fit:8K",      "decay_ms:-5",
	        "decay_ms:10s",    "decay_ms:2147483649",
	        "decay_thread:2",
	};
	struct scratch__conf c, def;
	struct warnings w;
	char a[512], b[512];

	scratch__conf_defaults(&def);
	scratch__conf_format(&def, b, sizeof(b));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i], &c, &w) == 1, "'%s' not refused", bad[i]);
		ck_assert_int_eq(w.n, 1);
		scratch__conf_format(&c, a, sizeof(a));
		ck_assert_msg(strcmp(a, b) == 0, "'%s' changed the config", bad[i]);
	}
}
END_TEST

START_TEST(test_messages)
{
	struct scratch__conf c;
	struct warnings w;

	parse("max_fit:0", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for max_fit: '0' (expected a whole number from 1 to "
	                 "4096), using 64");
	parse("decay_ms:1s", &c, &w);
	ck_assert_str_eq(w.last, "invalid value for decay_ms: '1s' (expected a whole number from 0 "
	                         "to 2147483648), using 10000");
	parse("min_size:6x4", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for min_size: '6x4' (expected a size from 16K to 64G), "
	                 "using 64K");
	/* each kind of key says what it takes; sizes print in their largest exact unit */
	parse("min_size:1024", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for min_size: '1024' (expected a size from 16K to 64G), "
	                 "using 64K");
	parse("thp:maybe", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for thp: 'maybe' (expected true or false), using false");
	parse("cache_count:4K", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for cache_count: '4K' (expected a whole number from 0 "
	                 "to 1024), using 8");
	parse("trace_ring:100", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for trace_ring: '100' (expected a power of two from "
	                 "64 to 1048576), using 4096");
	/* the value kept is the one set before, in its largest exact unit */
	parse("cache_bytes:1536K,cache_bytes:lots", &c, &w);
	ck_assert_uint_eq(c.cache_bytes, 1536 << 10);
	ck_assert_str_eq(w.last, "invalid value for cache_bytes: 'lots' (expected a size from 0 to "
	                         "16T), using 1536K");
	parse("verbose:loud", &c, &w);
	ck_assert_str_eq(w.last,
	                 "invalid value for verbose: 'loud' (expected true or false), using false");
	parse("bogus:1", &c, &w);
	ck_assert_str_eq(w.last, "unknown SCRATCH_CONF key 'bogus', ignored");
	parse("bogus", &c, &w);
	ck_assert_str_eq(w.last,
	                 "malformed SCRATCH_CONF entry 'bogus' (expected key:value), ignored");
	/* control characters never reach the terminal */
	parse("x\x1b[2J:1", &c, &w);
	ck_assert_ptr_null(strchr(w.last, '\x1b'));
}
END_TEST

START_TEST(test_mixed_and_empty_entries)
{
	struct scratch__conf c;
	struct warnings w;

	ck_assert_int_eq(parse(",,cache_count:2,,bad:1,cache_bytes:2M,", &c, &w), 1);
	ck_assert_uint_eq(c.cache_count, 2);
	ck_assert_uint_eq(c.cache_bytes, 2 << 20);
	/* later entries win */
	ck_assert_int_eq(parse("cache_count:2,cache_count:5", &c, &w), 0);
	ck_assert_uint_eq(c.cache_count, 5);
}
END_TEST

/* SCRATCH_THREADS and SCRATCH_SPIN go through the same table and rules. */
START_TEST(test_env_variables)
{
	struct warnings w;

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(scratch__conf_env("SCRATCH_THREADS", "3", collect, &w), 3);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_THREADS", "0", collect, &w), 0);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_THREADS", "256", collect, &w), 256);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_SPIN", "2147483647", collect, &w), INT32_MAX);
	/* unset and empty are "not given", and say nothing */
	ck_assert_int_eq(scratch__conf_env("SCRATCH_SPIN", NULL, collect, &w), -1);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_SPIN", "", collect, &w), -1);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_NOPE", "1", collect, &w), -1);
	ck_assert_int_eq(w.n, 0);
	/* out of range, a unit, a sign: one line each, the default kept */
	ck_assert_int_eq(scratch__conf_env("SCRATCH_THREADS", "257", collect, &w), -1);
	ck_assert_str_eq(w.last, "invalid value for SCRATCH_THREADS: '257' (expected a whole "
	                         "number from 0 to 256), using the default");
	ck_assert_int_eq(scratch__conf_env("SCRATCH_THREADS", "4K", collect, &w), -1);
	ck_assert_int_eq(scratch__conf_env("SCRATCH_SPIN", "-5", collect, &w), -1);
	ck_assert_str_eq(w.last, "invalid value for SCRATCH_SPIN: '-5' (expected a whole number "
	                         "from 0 to 2147483647), using the default");
	ck_assert_int_eq(scratch__conf_env("SCRATCH_SPIN", "2147483648", collect, &w), -1);
	ck_assert_int_eq(w.n, 4);
}
END_TEST

START_TEST(test_cross_key_rules)
{
	struct scratch__conf c;
	struct warnings w;

	/* given keys conflict: max_size yields to reserve, min_size to max_size */
	ck_assert_int_eq(parse("min_size:2M,max_size:1M", &c, &w), 1);
	ck_assert_uint_eq(c.min_size, 64 << 10);
	ck_assert_uint_eq(c.max_size, 1 << 20);
	ck_assert_str_eq(w.last, "min_size 2M is above max_size 1M, using 64K");
	ck_assert_int_eq(parse("min_size:32K,max_size:16K", &c, &w), 1);
	ck_assert_uint_eq(c.min_size, 16 << 10);
	ck_assert_int_eq(parse("reserve:1G,max_size:1G", &c, &w), 1);
	ck_assert_uint_eq(c.reserve, 1 << 30);
	ck_assert_uint_eq(c.max_size, 256 << 20);
	ck_assert_str_eq(w.last, "max_size 1G is above reserve/4 = 256M, using 256M");
	ck_assert_int_eq(parse("reserve:1G,min_size:512M", &c, &w), 1);
	ck_assert_uint_eq(c.max_size, 256 << 20);
	ck_assert_uint_eq(c.min_size, 64 << 10);

	/* keys left out follow the ones given, without a word */
	ck_assert_int_eq(parse("reserve:2G", &c, &w), 0);
	ck_assert_uint_eq(c.reserve, 2ull << 30);
	ck_assert_uint_eq(c.max_size, 512 << 20);
	ck_assert_uint_eq(c.min_size, 64 << 10);
	ck_assert_int_eq(parse("max_size:64G", &c, &w), 0);
	ck_assert_uint_eq(c.reserve, 256ull << 30);
	ck_assert_int_eq(parse("min_size:4G", &c, &w), 0);
	ck_assert_uint_eq(c.max_size, 4ull << 30);
	ck_assert_uint_eq(c.reserve, 64ull << 30);
	ck_assert_int_eq(parse("min_size:32G", &c, &w), 0);
	ck_assert_uint_eq(c.max_size, 32ull << 30);
	ck_assert_uint_eq(c.reserve, 128ull << 30);
	ck_assert_int_eq(parse("max_size:32K", &c, &w), 0);
	ck_assert_uint_eq(c.min_size, 32 << 10);
	ck_assert_uint_eq(c.max_size, 32 << 10);
	ck_assert_uint_eq(c.reserve, 64ull << 30);
}
END_TEST

START_TEST(test_sizes)
{
	uint64_t v;

	ck_assert(scratch__parse_size("0", 1, &v) && v == 0);
	ck_assert(scratch__parse_size("64K", 3, &v) && v == 65536);
	ck_assert(scratch__parse_size("64KiB", 5, &v) && v == 65536);
	ck_assert(scratch__parse_size("64kb", 4, &v) && v == 65536);
	ck_assert(scratch__parse_size("3m", 2, &v) && v == 3 << 20);
	ck_assert(scratch__parse_size("100B", 4, &v) && v == 100);
	ck_assert(scratch__parse_size("16T", 3, &v) && v == UINT64_C(16) << 40);
	ck_assert(!scratch__parse_size("", 0, &v));
	ck_assert(!scratch__parse_size("K", 1, &v));
	ck_assert(!scratch__parse_size("20000000T", 9, &v));
	ck_assert(!scratch__parse_size("1.5M", 4, &v));
	ck_assert(!scratch__parse_size("1MM", 3, &v));
}
END_TEST

START_TEST(test_lookup_and_format)
{
	struct scratch__conf c;
	uint64_t v = 42;
	char buf[512];

	scratch__conf_defaults(&c);
	ck_assert_int_eq(scratch__conf_lookup(&c, "min_size", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(scratch__conf_lookup(&c, "stats", &v), 0);
	ck_assert_uint_eq(v, 1);
	v = 42;
	ck_assert_int_eq(scratch__conf_lookup(&c, "nope", &v), -ENOENT);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(scratch__conf_lookup(&c, NULL, &v), -EINVAL);
	scratch__conf_format(&c, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "min_size:65536,"));
	ck_assert_ptr_nonnull(strstr(buf, "keep_segment:false"));
	ck_assert_ptr_nonnull(strstr(buf, "verbose:false"));
	/* the rendering parses back to the same configuration */
	{
		struct scratch__conf back;
		struct warnings w;

		char again[512];

		parse(buf, &back, &w);
		ck_assert_int_eq(w.n, 0);
		scratch__conf_format(&back, again, sizeof(again));
		ck_assert_str_eq(again, buf);
	}
	/* truncation is safe */
	scratch__conf_format(&c, buf, 8);
	ck_assert_uint_eq(strlen(buf), 7);
}
END_TEST

/* What stderr (fd 2) receives while f(conf, msg) runs, into buf. */
static void capture_stderr(void (*f)(const struct scratch__conf *, const char *),
                           const struct scratch__conf *conf, const char *msg, char *buf, size_t len)
{
	int fds[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(saved, 0);
	dup2(fds[1], STDERR_FILENO);
	f(conf, msg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	n = read(fds[0], buf, len - 1);
	close(fds[0]);
	buf[n > 0 ? n : 0] = '\0';
}

/* A condition of the environment is printed only under verbose:true, as
 * one line, and never touches errno. */
START_TEST(test_env_warn_verbose)
{
	struct scratch__conf c;
	struct warnings w;
	char got[256];

	parse("", &c, &w);
	errno = EINTR;
	capture_stderr(scratch__env_warn, &c, "pools off", got, sizeof(got));
	ck_assert_str_eq(got, "");
	capture_stderr(scratch__env_warn, NULL, "pools off", got, sizeof(got));
	ck_assert_str_eq(got, "");
	parse("verbose:true", &c, &w);
	capture_stderr(scratch__env_warn, &c, "pools off", got, sizeof(got));
	ck_assert_str_eq(got, "scratch: pools off\n");
	ck_assert_int_eq(errno, EINTR);
}
END_TEST

/* per_node: on by default (the pools put it in force only on two nodes
 * or more), a boolean like the others, kept through the format. */
START_TEST(test_per_node)
{
	struct scratch__conf c;
	struct warnings w;
	uint64_t v;
	char buf[512];

	ck_assert_int_eq(parse("", &c, &w), 0);
	ck_assert(c.per_node);
	ck_assert_int_eq(parse("per_node:false", &c, &w), 0);
	ck_assert(!c.per_node);
	ck_assert_int_eq(scratch__conf_lookup(&c, "per_node", &v), 0);
	ck_assert_uint_eq(v, 0);
	scratch__conf_format(&c, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, ",per_node:false,"));
	ck_assert_int_eq(parse("per_node:off,per_node:on", &c, &w), 0);
	ck_assert(c.per_node);
	ck_assert_int_eq(parse("per_node:0,per_node:numa", &c, &w), 1);
	ck_assert(!c.per_node);
	ck_assert_str_eq(
	        w.last, "invalid value for per_node: 'numa' (expected true or false), using false");
}
END_TEST

Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_good_values);
	tcase_add_test(tc, test_mixed_and_empty_entries);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_lookup_and_format);
	tcase_add_test(tc, test_env_warn_verbose);
	tcase_add_test(tc, test_per_node);
	suite_add_tcase(s, tc);
	tc = tcase_create("misuse");
	tcase_add_test(tc, test_bad_values_keep_defaults);
	tcase_add_test(tc, test_messages);
	tcase_add_test(tc, test_cross_key_rules);
	tcase_add_test(tc, test_env_variables);
	suite_add_tcase(s, tc);
	return s;
}
