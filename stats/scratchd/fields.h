/*
 * fields.h - one field table, two renderings: a JSON object and the
 * Prometheus text exposition, in the way jemalloc's emitter feeds both its
 * table and its JSON output.
 *
 * A table is an array of struct field over one C type (a counters struct,
 * a process entry). Each field says where its value is and how it is
 * shown in each format: its JSON key, and, when it is also a metric, the
 * metric's name (after the family's prefix), type and HELP text. A
 * document writes a table's fields with fields_json(); /metrics writes its
 * families with fields_prom(). So a key or a metric name is written in one
 * place, and tests/unit/check_fields.c pins every one
 * that the documents render.
 *
 * Scopes: a table may serve several objects (one counters table for a
 * process's totals, a thread, a history sample). Each field carries a bit
 * mask of the scopes whose JSON holds it (json_in) and of those with a
 * metric series (prom_in); the caller names the scope it renders.
 *
 * Prometheus conventions (https://prometheus.io/docs/practices/naming/):
 * base units (bytes, seconds) in the name's suffix (_bytes), counters end
 * in _total, one name per meaning; what varies (a thread, a size class, a
 * reason) is a label, and the sum over a label of one metric makes sense.
 */
#ifndef SCRATCH_STATS_FIELDS_H
#define SCRATCH_STATS_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where a field's value is. */
enum field_kind {
	FIELD_U64,   /* uint64_t at off */
	FIELD_U32,   /* uint32_t at off */
	FIELD_I32,   /* int32_t at off */
	FIELD_BOOL,  /* bool at off */
	FIELD_TEXT,  /* char array at off: untrusted text, a JSON string */
	FIELD_FN,    /* computed: json() for JSON, value() for the metric */
	FIELD_TABLE, /* the fields of sub (of scope sub_scope) of the object at off, inline
	              * (key NULL) or as the object key; JSON only */
};

/* Its metric type; FIELD_JSON_ONLY: no metric. */
enum field_type {
	FIELD_JSON_ONLY = 0,
	FIELD_COUNTER,
	FIELD_GAUGE,
};

struct field {
	const char *key;    /* JSON key, "a.b": key b of the object a; NULL: no key */
	const char *metric; /* metric name after the family prefix; NULL: no metric */
	const char *label;  /* a fixed label pair of the series ("state=\"live\""), or NULL */
	enum field_type type;
	const char *help; /* HELP text, no final period (the family adds its own tail) */
	unsigned json_in; /* scopes whose JSON carries the key */
	unsigned prom_in; /* scopes with a metric series */
	enum field_kind kind;
	size_t off;                         /* FIELD_U64 ... FIELD_TEXT: offset in the object */
	json_t *(*json)(const void *obj);   /* FIELD_FN: a new reference */
	uint64_t (*value)(const void *obj); /* FIELD_FN with a metric */
	const struct field *sub;            /* FIELD_TABLE */
	size_t nsub;
	unsigned sub_scope;
};

/* A table and its length: FIELDS(t) for a static array t. */
#define FIELDS(t) (t), (sizeof(t) / sizeof((t)[0]))

/* Entries for the common shapes: a JSON-only member of type, a JSON-only
 * computed value, and the fields of table (of scope) of a member, inline. */
#define FIELD_AT(k, in, kd, type, member)                                                          \
	{                                                                                          \
		.key = (k), .json_in = (in), .kind = (kd), .off = offsetof(type, member)           \
	}
#define FIELD_FN_JSON(k, in, fn)                                                                   \
	{                                                                                          \
		.key = (k), .json_in = (in), .kind = FIELD_FN, .json = (fn)                        \
	}
#define FIELD_INLINE(in, type, member, table, scope)                                               \
	{                                                                                          \
		.json_in = (in), .kind = FIELD_TABLE, .off = offsetof(type, member),               \
		.sub = (table), .nsub = sizeof(table) / sizeof((table)[0]), .sub_scope = (scope)   \
	}

/* Set into o the JSON of obj's fields of scope, in table order ("a.b"
 * keys create or extend the object a in o). */
void fields_json(json_t *o, const struct field *t, size_t n, unsigned scope, const void *obj);

/* The number a field shows for obj (FIELD_U64, U32, I32, BOOL, or FN with
 * value()); 0 for text. */
uint64_t fields_value(const struct field *f, const void *obj);

/*
 * The objects of a family, for fields_prom(): the i-th object of the
 * scope, with its labels ("pid=\"1\",exe=\"x\"", escaped with
 * fields_escape) in labels; false past the last.
 */
typedef bool (*fields_each_fn)(void *ctx, size_t i, const void **ret_obj, char *labels, size_t len);

/*
 * Every metric family of the table's fields for scope, in table order: a
 * HELP line (help + help_tail, e.g. ", per thread."), a TYPE line, then
 * one sample per object that each() gives. Consecutive fields of one
 * metric name (differing by their fixed label) make one family.
 */
void fields_prom(FILE *f, const char *prefix, const char *help_tail, const struct field *t,
                 size_t n, unsigned scope, fields_each_fn each, void *ctx);

/* A label value escaped as the text format says (backslash, quote,
 * newline) into buf, cut at len; text that is not valid UTF-8 keeps only
 * its printable ASCII. Returns the length written. */
size_t fields_escape(char *buf, size_t len, const char *s);

/* A JSON string of untrusted text: as is when it is valid UTF-8, else
 * every byte outside printable ASCII becomes '?', so a key is never
 * dropped and the output stays valid. */
json_t *fields_text(const char *s);
/* An unsigned JSON integer (capped at INT64_MAX, jansson's range). */
json_t *fields_u64(uint64_t v);

#endif /* SCRATCH_STATS_FIELDS_H */
