/*
 * fields.c - the field table's two renderers, JSON and the Prometheus text
 * format 0.0.4 (fields.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"

json_t *fields_u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *fields_text(const char *s)
{
	json_t *j = json_string(s);
	char *buf;
	size_t n = 0;

	if (j != NULL)
		return j;
	buf = malloc(strlen(s) + 1);
	if (buf == NULL)
		return json_string("");
	for (; *s != '\0'; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	buf[n] = '\0';
	j = json_string(buf);
	free(buf);
	return j;
}

static const void *at(const struct field *f, const void *obj)
{
	return (const char *)obj + f->off;
}

uint64_t fields_value(const struct field *f, const void *obj)
{
	switch (f->kind) {
	case FIELD_U64:
		return *(const uint64_t *)at(f, obj);
	case FIELD_U32:
		return *(const uint32_t *)at(f, obj);
	case FIELD_I32:
		return (uint64_t)(int64_t) * (const int32_t *)at(f, obj);
	case FIELD_BOOL:
		return *(const bool *)at(f, obj);
	case FIELD_FN:
		return f->value != NULL ? f->value(obj) : 0;
	case FIELD_TEXT:
	case FIELD_TABLE:
		break;
	}
	return 0;
}

static json_t *json_value(const struct field *f, const void *obj)
{
	switch (f->kind) {
	case FIELD_U64:
	case FIELD_U32:
		return fields_u64(fields_value(f, obj));
	case FIELD_I32:
		return json_integer(*(const int32_t *)at(f, obj));
	case FIELD_BOOL:
		return json_boolean(*(const bool *)at(f, obj));
	case FIELD_TEXT:
		return fields_text(at(f, obj));
	case FIELD_FN:
		return f->json != NULL ? f->json(obj) : fields_u64(fields_value(f, obj));
	case FIELD_TABLE: {
		json_t *o = json_object();

		fields_json(o, f->sub, f->nsub, f->sub_scope, at(f, obj));
		return o;
	}
	}
	return json_null();
}

/* The object "a.b" goes into: a in o (made when missing), or o itself. */
static json_t *parent_of(json_t *o, const char *key, const char **ret_leaf)
{
	const char *dot = strchr(key, '.');
	char name[64];
	json_t *sub;

	*ret_leaf = key;
	if (dot == NULL || (size_t)(dot - key) >= sizeof(name))
		return o;
	memcpy(name, key, (size_t)(dot - key));
	name[dot - key] = '\0';
	sub = json_object_get(o, name);
	if (!json_is_object(sub)) {
		sub = json_object();
		json_object_set_new(o, name, sub);
	}
	*ret_leaf = dot + 1;
	return parent_of(sub, dot + 1, ret_leaf);
}

void fields_json(json_t *o, const struct field *t, size_t n, unsigned scope, const void *obj)
{
	for (size_t i = 0; i < n; i++) {
		const char *leaf;
		json_t *parent;

		if (!(t[i].json_in & scope))
			continue;
		if (t[i].kind == FIELD_TABLE && t[i].key == NULL) {
			fields_json(o, t[i].sub, t[i].nsub, t[i].sub_scope, at(&t[i], obj));
			continue;
		}
		if (t[i].key == NULL)
			continue;
		parent = parent_of(o, t[i].key, &leaf);
		json_object_set_new(parent, leaf, json_value(&t[i], obj));
	}
}

size_t fields_escape(char *buf, size_t len, const char *s)
{
	json_t *valid = json_string(s);
	bool utf8 = valid != NULL;
	size_t o = 0;

	json_decref(valid);
	if (len == 0)
		return 0;
	for (; *s != '\0' && o + 3 <= len; s++) {
		if (!utf8 && (*s < 0x20 || *s >= 0x7f)) {
			buf[o++] = '?';
		} else if (*s == '\\' || *s == '"') {
			buf[o++] = '\\';
			buf[o++] = *s;
		} else if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *s;
		}
	}
	buf[o] = '\0';
	return o;
}

static const char *type_name(enum field_type t)
{
	return t == FIELD_COUNTER ? "counter" : "gauge";
}

/* The samples of field f for every object each() gives. */
static void samples(FILE *f, const char *prefix, const struct field *fd, unsigned scope,
                    fields_each_fn each, void *ctx)
{
	char labels[2048];
	const void *obj;

	(void)scope;
	for (size_t i = 0; each(ctx, i, &obj, labels, sizeof(labels)); i++) {
		const char *sep = labels[0] != '\0' && fd->label != NULL ? "," : "";

		fprintf(f, "%s%s", prefix, fd->metric);
		if (labels[0] != '\0' || fd->label != NULL)
			fprintf(f, "{%s%s%s}", labels, sep, fd->label != NULL ? fd->label : "");
		fprintf(f, " %llu\n", (unsigned long long)fields_value(fd, obj));
	}
}

void fields_prom(FILE *f, const char *prefix, const char *help_tail, const struct field *t,
                 size_t n, unsigned scope, fields_each_fn each, void *ctx)
{
	const char *family = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct field *fd = &t[i];

		if (fd->metric == NULL || !(fd->prom_in & scope))
			continue;
		if (family == NULL || strcmp(family, fd->metric) != 0) {
			fprintf(f, "# HELP %s%s %s%s\n# TYPE %s%s %s\n", prefix, fd->metric,
			        fd->help, help_tail, prefix, fd->metric, type_name(fd->type));
			family = fd->metric;
		}
		samples(f, prefix, fd, scope, each, ctx);
	}
}
