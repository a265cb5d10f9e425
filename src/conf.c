/*
 * conf.c - SCRATCH_CONF parsing ("key:value,..." as jemalloc's MALLOC_CONF),
 * the other SCRATCH_* variables, and the library's only diagnostics channel.
 *
 * Everything here is pure or writes with one write(2): it runs inside
 * malloc, before stdio may be usable, so it never allocates. A failed
 * SCRATCH_ASSERT (debug.h) says so the same way, then aborts.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

enum conf_type { CONF_BOOL, CONF_SIZE, CONF_COUNT };

/* One row per key: the table is the documentation's source of truth. */
struct conf_key {
	const char *name;
	enum conf_type type;
	size_t offset;
	uint64_t min, max; /* accepted range (sizes and counts) */
	bool pow2;         /* value must be a power of two */
};

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)
#define KEY(n, t, lo, hi, p)                                                                       \
	{                                                                                          \
#n, t, offsetof(struct scratch__conf, n), lo, hi, p                                \
	}

static const struct conf_key keys[] = {
        KEY(enabled, CONF_BOOL, 0, 1, false),
        KEY(min_size, CONF_SIZE, 16 * KIB, 64 * GIB, false),
        KEY(max_size, CONF_SIZE, 16 * KIB, 64 * GIB, false),
        KEY(cache_count, CONF_COUNT, 0, 1024, false),
        KEY(cache_bytes, CONF_SIZE, 0, 16 * TIB, false),
        KEY(depot_bytes, CONF_SIZE, 0, 16 * TIB, false),
        KEY(per_node, CONF_BOOL, 0, 1, false),
        KEY(max_fit, CONF_COUNT, 1, 4096, false),
        KEY(decay_ms, CONF_COUNT, 0, UINT64_C(1) << 31, false),
        KEY(decay_thread, CONF_BOOL, 0, 1, false),
        KEY(lend, CONF_BOOL, 0, 1, false),
        KEY(reserve, CONF_SIZE, 1 * GIB, 16 * TIB, false),
        KEY(thp, CONF_BOOL, 0, 1, false),
        KEY(thp_dense, CONF_BOOL, 0, 1, false),
        KEY(populate, CONF_BOOL, 0, 1, false),
        KEY(stats, CONF_BOOL, 0, 1, false),
        KEY(trace, CONF_BOOL, 0, 1, false),
        KEY(trace_frames, CONF_COUNT, 0, 16, false),
        KEY(trace_ring, CONF_COUNT, 64, 1 << 20, true),
        KEY(max_threads, CONF_COUNT, 1, 65535, false),
        KEY(keep_segment, CONF_BOOL, 0, 1, false),
        KEY(inherit, CONF_BOOL, 0, 1, false),
        KEY(verbose, CONF_BOOL, 0, 1, false),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The variables of their own, read by the worker pool; no field: the value
 * is returned (scratch__conf_env). */
static const struct conf_key env_keys[] = {
        {"SCRATCH_THREADS", CONF_COUNT, 0, 0, SCRATCH_WORKERS_MAX, false},
        {"SCRATCH_SPIN", CONF_COUNT, 0, 0, INT32_MAX, false},
};

void scratch__conf_defaults(struct scratch__conf *conf)
{
	*conf = (struct scratch__conf){
	        .enabled = true,
	        .min_size = 64 * KIB,
	        .max_size = 1 * GIB,
	        .cache_count = 8,
	        .cache_bytes = 512 * MIB,
	        .depot_bytes = 1 * GIB,
	        /* in force only where there are two nodes or more */
	        .per_node = true,
	        /* jemalloc's opt_lg_extent_max_active_fit is 6: 64x */
	        .max_fit = 64,
	        /* jemalloc's dirty_decay_ms default */
	        .decay_ms = 10000,
	        .decay_thread = true,
	        .lend = true,
	        .reserve = 64 * GIB,
	        /* as the system has it (THP in madvise mode: small pages), as
	         * jemalloc's thp:default, tcmalloc and mimalloc do */
	        .thp = false,
	        /* where the pages are written whole anyway (pool_dense.c): no
	         * byte more resident, a fault a frame instead of 512 */
	        .thp_dense = true,
	        /* one trap a page costs more than one call for them all */
	        .populate = true,
	        .stats = true,
	        .trace = true,
	        .trace_frames = 8,
	        .trace_ring = 4096,
	        .max_threads = 1024,
	        .keep_segment = false,
	        .inherit = true,
	        .verbose = false,
	};
}

/* ---------------------------------------------------------------------- */
/* Formatting and diagnostics                                              */
/* ---------------------------------------------------------------------- */

void scratch__fmt_str(char *buf, size_t len, size_t *pos, const char *s)
{
	if (len == 0)
		return;
	while (*s != '\0' && *pos + 1 < len)
		buf[(*pos)++] = *s++;
	buf[*pos] = '\0';
}

void scratch__fmt_u64(char *buf, size_t len, size_t *pos, uint64_t v)
{
	char tmp[21];
	size_t n = sizeof(tmp) - 1;

	tmp[n] = '\0';
	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	scratch__fmt_str(buf, len, pos, tmp + n);
}

/* Append at most n bytes of s, replacing control characters, so a hostile
 * environment value cannot forge terminal output. */
void scratch__fmt_quoted(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
	char one[2] = {0, 0};

	scratch__fmt_str(buf, len, pos, "'");
	for (size_t i = 0; i < n && i < 64; i++) {
		one[0] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
		scratch__fmt_str(buf, len, pos, one);
	}
	if (n > 64)
		scratch__fmt_str(buf, len, pos, "...");
	scratch__fmt_str(buf, len, pos, "'");
}

void scratch__warn(const char *msg)
{
	char line[512];
	size_t pos = 0;
	int saved = errno;

	scratch__fmt_str(line, sizeof(line), &pos, "scratch: ");
	scratch__fmt_str(line, sizeof(line) - 1, &pos, msg);
	line[pos++] = '\n';
	/* One write, so lines of different threads do not interleave. */
	if (write(STDERR_FILENO, line, pos) < 0) {
		/* nothing sensible is left to do */
	}
	errno = saved;
}

void scratch__assert_fail(const char *file, unsigned line, const char *expr)
{
	char msg[512];
	size_t pos = 0;

	scratch__fmt_str(msg, sizeof(msg), &pos, file);
	scratch__fmt_str(msg, sizeof(msg), &pos, ":");
	scratch__fmt_u64(msg, sizeof(msg), &pos, line);
	scratch__fmt_str(msg, sizeof(msg), &pos, ": assertion failed: ");
	scratch__fmt_str(msg, sizeof(msg), &pos, expr);
	scratch__warn(msg);
	abort();
}

void scratch__env_warn(const struct scratch__conf *conf, const char *msg)
{
	if (conf != NULL && conf->verbose)
		scratch__warn(msg);
}

/* ---------------------------------------------------------------------- */
/* Values                                                                  */
/* ---------------------------------------------------------------------- */

bool scratch__parse_size(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0, mul = 1;
	size_t i = 0;

	if (len == 0)
		return false;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
			return false;
	}
	if (i == 0)
		return false;
	if (i < len) {
		switch (s[i] | 0x20) {
		case 'k':
			mul = KIB;
			break;
		case 'm':
			mul = MIB;
			break;
		case 'g':
			mul = GIB;
			break;
		case 't':
			mul = TIB;
			break;
		case 'b':
			mul = 1;
			i--;
			break; /* plain "B" */
		default:
			return false;
		}
		i++;
		/* accept K, KB, KiB (all powers of 1024) */
		if (i < len && (s[i] == 'i' || s[i] == 'I') && mul > 1)
			i++;
		if (i < len && (s[i] == 'b' || s[i] == 'B'))
			i++;
		if (i != len)
			return false;
	}
	if (__builtin_mul_overflow(v, mul, &v))
		return false;
	*ret = v;
	return true;
}

static bool parse_bool(const char *s, size_t len, uint64_t *ret)
{
	static const char *const yes[] = {"true", "1", "yes", "on"};
	static const char *const no[] = {"false", "0", "no", "off"};

	for (size_t i = 0; i < 4; i++) {
		if (strlen(yes[i]) == len && strncmp(s, yes[i], len) == 0) {
			*ret = 1;
			return true;
		}
		if (strlen(no[i]) == len && strncmp(s, no[i], len) == 0) {
			*ret = 0;
			return true;
		}
	}
	return false;
}

static uint64_t get_field(const struct scratch__conf *conf, const struct conf_key *k)
{
	const char *base = (const char *)conf + k->offset;
	bool b;
	uint64_t v;

	if (k->type == CONF_BOOL) {
		memcpy(&b, base, sizeof(b));
		return b;
	}
	memcpy(&v, base, sizeof(v));
	return v;
}

static void set_field(struct scratch__conf *conf, const struct conf_key *k, uint64_t v)
{
	char *base = (char *)conf + k->offset;
	bool b = v != 0;

	if (k->type == CONF_BOOL)
		memcpy(base, &b, sizeof(b));
	else
		memcpy(base, &v, sizeof(v));
}

static const struct conf_key *find_key(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == len && strncmp(keys[i].name, name, len) == 0)
			return &keys[i];
	return NULL;
}

static void warn_line(scratch__conf_warn_fn warn, void *ctx, const char *a, const char *q,
                      size_t qlen, const char *b)
{
	char line[256];
	size_t pos = 0;

	scratch__fmt_str(line, sizeof(line), &pos, a);
	if (q != NULL)
		scratch__fmt_quoted(line, sizeof(line), &pos, q, qlen);
	scratch__fmt_str(line, sizeof(line), &pos, b);
	if (warn != NULL)
		warn(ctx, line);
}

/* A size in the largest unit that divides it exactly (64K, 1G, 1536M). */
void scratch__fmt_size(char *buf, size_t len, size_t *pos, uint64_t v)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v != 0 && v % KIB == 0 && u < 3) {
		v /= KIB;
		u++;
	}
	scratch__fmt_u64(buf, len, pos, v);
	if (u >= 0) {
		char unit[2] = {units[u], '\0'};

		scratch__fmt_str(buf, len, pos, unit);
	}
}

/* v as SCRATCH_CONF spells it: true/false, a count or a size. */
static void fmt_value(char *buf, size_t len, size_t *pos, const struct conf_key *k, uint64_t v)
{
	if (k->type == CONF_BOOL)
		scratch__fmt_str(buf, len, pos, v ? "true" : "false");
	else if (k->type == CONF_SIZE)
		scratch__fmt_size(buf, len, pos, v);
	else
		scratch__fmt_u64(buf, len, pos, v);
}

#define CURRENT_DEFAULT UINT64_MAX /* warn_invalid: "using the default" */

/* "invalid value for KEY: 'VALUE' (expected ...), using CURRENT" */
static void warn_invalid(scratch__conf_warn_fn warn, void *ctx, const struct conf_key *k,
                         const char *val, size_t vlen, uint64_t current)
{
	char line[256];
	size_t pos = 0;

	scratch__fmt_str(line, sizeof(line), &pos, "invalid value for ");
	scratch__fmt_str(line, sizeof(line), &pos, k->name);
	scratch__fmt_str(line, sizeof(line), &pos, ": ");
	scratch__fmt_quoted(line, sizeof(line), &pos, val, vlen);
	if (k->type == CONF_BOOL) {
		scratch__fmt_str(line, sizeof(line), &pos, " (expected true or false)");
	} else {
		scratch__fmt_str(line, sizeof(line), &pos,
		                 k->type == CONF_SIZE ? " (expected a size from "
		                 : k->pow2            ? " (expected a power of two from "
		                                      : " (expected a whole number from ");
		fmt_value(line, sizeof(line), &pos, k, k->min);
		scratch__fmt_str(line, sizeof(line), &pos, " to ");
		fmt_value(line, sizeof(line), &pos, k, k->max);
		scratch__fmt_str(line, sizeof(line), &pos, ")");
	}
	scratch__fmt_str(line, sizeof(line), &pos, ", using ");
	if (current == CURRENT_DEFAULT)
		scratch__fmt_str(line, sizeof(line), &pos, "the default");
	else
		fmt_value(line, sizeof(line), &pos, k, current);
	if (warn != NULL)
		warn(ctx, line);
}

/* Parse val as key k takes it (type, range, power of two) into *ret. */
static bool parse_value(const struct conf_key *k, const char *val, size_t len, uint64_t *ret)
{
	uint64_t v;
	bool ok =
	        k->type == CONF_BOOL ? parse_bool(val, len, &v) : scratch__parse_size(val, len, &v);

	if (ok && k->type == CONF_COUNT) {
		/* counts take no unit suffix */
		for (size_t i = 0; i < len; i++)
			ok = ok && val[i] >= '0' && val[i] <= '9';
	}
	if (ok && k->type != CONF_BOOL && (v < k->min || v > k->max))
		ok = false;
	if (ok && k->pow2 && (v & (v - 1)) != 0)
		ok = false;
	if (ok)
		*ret = v;
	return ok;
}

/* Parse one "key:value" entry; returns the number of problems (0 or 1). */
static int parse_entry(const char *e, size_t len, struct scratch__conf *conf, uint32_t *given,
                       scratch__conf_warn_fn warn, void *ctx)
{
	const char *colon = memchr(e, ':', len);
	const struct conf_key *k;
	uint64_t v;

	if (colon == NULL) {
		warn_line(warn, ctx, "malformed SCRATCH_CONF entry ", e, len,
		          " (expected key:value), ignored");
		return 1;
	}
	k = find_key(e, (size_t)(colon - e));
	if (k == NULL) {
		warn_line(warn, ctx, "unknown SCRATCH_CONF key ", e, (size_t)(colon - e),
		          ", ignored");
		return 1;
	}
	colon++;
	len -= (size_t)(colon - e);
	if (!parse_value(k, colon, len, &v)) {
		warn_invalid(warn, ctx, k, colon, len, get_field(conf, k));
		return 1;
	}
	set_field(conf, k, v);
	*given |= UINT32_C(1) << (k - keys);
	return 0;
}

static bool given_key(uint32_t given, const char *name)
{
	return (given >> (find_key(name, strlen(name)) - keys)) & 1;
}

/* "KEY V is above WHAT W, using U" */
static void warn_above(scratch__conf_warn_fn warn, void *ctx, const char *key, uint64_t v,
                       const char *what, uint64_t w, uint64_t u)
{
	const struct conf_key *k = find_key(key, strlen(key));
	char line[256];
	size_t pos = 0;

	scratch__fmt_str(line, sizeof(line), &pos, key);
	scratch__fmt_str(line, sizeof(line), &pos, " ");
	fmt_value(line, sizeof(line), &pos, k, v);
	scratch__fmt_str(line, sizeof(line), &pos, " is above ");
	scratch__fmt_str(line, sizeof(line), &pos, what);
	scratch__fmt_str(line, sizeof(line), &pos, " ");
	fmt_value(line, sizeof(line), &pos, k, w);
	scratch__fmt_str(line, sizeof(line), &pos, ", using ");
	fmt_value(line, sizeof(line), &pos, k, u);
	if (warn != NULL)
		warn(ctx, line);
}

/*
 * The range must satisfy min_size <= max_size <= reserve/4. Keys the string
 * left out follow the ones it gave: reserve grows to 4 x max_size, max_size
 * comes down to reserve/4 or up to min_size, min_size down to max_size.
 * When given keys conflict, reserve wins over max_size and max_size over
 * min_size; the loser is reported once and takes the nearest value that
 * fits (min_size its default if that fits).
 */
static int cross_keys(struct scratch__conf *c, uint32_t given, scratch__conf_warn_fn warn,
                      void *ctx)
{
	const bool gmin = given_key(given, "min_size"), gmax = given_key(given, "max_size");
	uint64_t hi = gmax || c->min_size < c->max_size ? c->max_size : c->min_size;
	uint64_t cap;
	int problems = 0;

	if (!given_key(given, "reserve") && hi > c->reserve / 4)
		c->reserve = 4 * hi; /* hi <= 64G: within reserve's range */
	cap = c->reserve / 4;
	if (!gmax) {
		if (c->min_size > c->max_size)
			c->max_size = c->min_size;
		if (c->max_size > cap)
			c->max_size = cap;
	} else if (c->max_size > cap) {
		warn_above(warn, ctx, "max_size", c->max_size, "reserve/4 =", cap, cap);
		c->max_size = cap;
		problems++;
	}
	if (c->min_size > c->max_size) {
		if (gmin) {
			struct scratch__conf def;
			uint64_t use;

			scratch__conf_defaults(&def);
			use = def.min_size <= c->max_size ? def.min_size : c->max_size;
			warn_above(warn, ctx, "min_size", c->min_size, "max_size", c->max_size,
			           use);
			c->min_size = use;
			problems++;
		} else {
			c->min_size = c->max_size;
		}
	}
	return problems;
}

int64_t scratch__conf_env(const char *name, const char *value, scratch__conf_warn_fn warn,
                          void *ctx)
{
	uint64_t v;

	if (value == NULL || *value == '\0')
		return -1;
	for (size_t i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++) {
		const struct conf_key *k = &env_keys[i];

		if (strcmp(k->name, name) != 0)
			continue;
		if (parse_value(k, value, strlen(value), &v))
			return (int64_t)v;
		warn_invalid(warn, ctx, k, value, strlen(value), CURRENT_DEFAULT);
		return -1;
	}
	return -1;
}

int scratch__conf_parse(const char *s, struct scratch__conf *conf, scratch__conf_warn_fn warn,
                        void *ctx)
{
	uint32_t given = 0;
	int problems = 0;

	if (s == NULL)
		return 0;
	while (*s != '\0') {
		const char *end = strchr(s, ',');
		size_t len = end != NULL ? (size_t)(end - s) : strlen(s);

		if (len > 0)
			problems += parse_entry(s, len, conf, &given, warn, ctx);
		s += len;
		if (*s == ',')
			s++;
	}
	return problems + cross_keys(conf, given, warn, ctx);
}

int scratch__conf_lookup(const struct scratch__conf *conf, const char *key, uint64_t *ret_value)
{
	const struct conf_key *k;

	if (key == NULL || ret_value == NULL)
		return -EINVAL;
	k = find_key(key, strlen(key));
	if (k == NULL)
		return -ENOENT;
	*ret_value = get_field(conf, k);
	return 0;
}

size_t scratch__conf_format(const struct scratch__conf *conf, char *buf, size_t len)
{
	size_t pos = 0;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NKEYS; i++) {
		uint64_t v = get_field(conf, &keys[i]);

		if (i > 0)
			scratch__fmt_str(buf, len, &pos, ",");
		scratch__fmt_str(buf, len, &pos, keys[i].name);
		scratch__fmt_str(buf, len, &pos, ":");
		if (keys[i].type == CONF_BOOL)
			scratch__fmt_str(buf, len, &pos, v ? "true" : "false");
		else
			scratch__fmt_u64(buf, len, &pos, v);
	}
	return pos;
}
