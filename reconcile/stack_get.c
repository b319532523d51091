/*
 * The stack loader's typed YAML getters: a field of a mapping read as a
 * string, an integer, a boolean, one of a set of words, a mapping or a map of
 * strings, with what is missing or of the wrong type reported through the
 * loader (stack_loader.h).
 */
#include "reconcile/stack_loader.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "reconcile/load/ynode.h"
#include "util/banned.h"

/* The value node for key when present and not null, else NULL. */
const struct ynode *stack_get_value(const struct ynode *map, const char *key)
{
	const struct ynode *v = ynode_get(map, key);

	if (!v || (v->kind == YNODE_SCALAR && ynode_is_null(v)))
		return NULL;
	return v;
}

void stack_get_missing(struct loader *L, const struct ynode *map, const char *path, const char *key)
{
	const struct ynode *k = ynode_get_key(map, key);

	/* present but null: say so where it is written */
	if (k)
		stack_err(L, ynode_get(map, key), "%s%s%s: a value is required", path, *path ? "." : "",
		     key);
	else if (*path)
		stack_err(L, map, "%s: missing required field \"%s\"", path, key);
	else
		stack_err(L, map, "missing required field \"%s\"", key);
}

/* The longest "path.key" the stack_get_* functions name in their messages (cut beyond). */
#define FULL_MAX 96

/*
 * "path.key" ("key" at the top of a document) into full, for a message.
 * Only on the way to an error: a load reads a dozen fields per job, and
 * formatting each one's name up front was a tenth of vx validate's CPU.
 */
static const char *field_path(char full[FULL_MAX], const char *path, const char *key)
{
	snprintf(full, FULL_MAX, "%s%s%s", path, *path ? "." : "", key);
	return full;
}

/*
 * The start of every get_*: the value of key (NULL when absent or null,
 * reported when required), *node set to it (when node is not NULL).
 */
static const struct ynode *get_field(struct loader *L, const struct ynode *map, const char *path,
				     const char *key, int required, const struct ynode **node)
{
	const struct ynode *v = stack_get_value(map, key);

	if (node)
		*node = v;
	if (!v && required)
		stack_get_missing(L, map, path, key);
	return v;
}

/* A string field: 1 with *out set (borrowed) when present and a string; 0 when
 * absent (reported if required) or wrong (reported). */
int stack_get_str(const char **out, const struct ynode **node, struct loader *L,
		  const struct ynode *map, const char *path, const char *key, int required)
{
	const struct ynode *v;
	char full[FULL_MAX];

	*out = NULL;
	v = get_field(L, map, path, key, required, node);
	if (!v)
		return 0;
	if (!stack_is_string(v)) {
		stack_wrong_type(L, v, field_path(full, path, key), "string");
		return 0;
	}
	if (memchr(v->str, '\0', v->len) || v->len != strlen(v->str)) {
		stack_err(L, v, "%s: contains a NUL character", field_path(full, path, key));
		return 0;
	}
	*out = v->str;
	return 1;
}

/* An integer field (a plain integer, or a string holding one), in decimal. */
int stack_get_int(int64_t *out, const struct ynode **node, struct loader *L,
		  const struct ynode *map, const char *path, const char *key, int required)
{
	const struct ynode *v;
	struct ynode_why why;
	char full[FULL_MAX];

	v = get_field(L, map, path, key, required, node);
	if (!v)
		return 0;
	if (ynode_int(out, &why, v, INT64_MIN, INT64_MAX) < 0) {
		stack_err(L, v, "%s: %s", field_path(full, path, key), why.s);
		return 0;
	}
	return 1;
}

int stack_get_bool(int *out, struct loader *L, const struct ynode *map, const char *path,
		   const char *key)
{
	const struct ynode *v;
	char full[FULL_MAX];

	v = get_field(L, map, path, key, 0, NULL);
	if (!v)
		return 0;
	if (v->kind != YNODE_SCALAR || strcmp(stack_type_of(v), "boolean")) {
		stack_wrong_type(L, v, field_path(full, path, key), "boolean");
		return 0;
	}
	*out = v->str[0] == 't' || v->str[0] == 'T';
	return 1;
}

/* An enum field: *out = 1 + index into words. */
int stack_get_enum(int *out, struct loader *L, const struct ynode *map, const char *key,
		   const char *const *words, size_t n)
{
	const struct ynode *v;
	const char *s;

	if (!stack_get_str(&s, &v, L, map, "", key, 0))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s, words[i])) {
			*out = (int)i + 1;
			return 1;
		}
	}
	stack_unknown_word(L, v, key, "value", words, n);
	return 0;
}

/* A map that must be a mapping node (reported otherwise); NULL when absent. */
const struct ynode *stack_get_map(struct loader *L, const struct ynode *map, const char *key,
				   const char *path)
{
	const struct ynode *v = stack_get_value(map, key);

	if (v && v->kind != YNODE_MAP) {
		stack_wrong_type(L, v, path, "mapping");
		return NULL;
	}
	return v;
}

/*
 * Reads a map of strings (labels: with the label rules; dimensions: any
 * non-empty key). Scalars of any type are taken as written (version: 2),
 * since label values are text.
 */
void stack_get_string_map(struct stack_labels *out, struct loader *L, const struct ynode *map,
			  const char *key, int labels)
{
	const struct ynode *m = stack_get_map(L, map, key, key);

	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		const struct ynode *k = m->pairs[i].key, *v = m->pairs[i].value;
		const char *val;

		if (v->kind != YNODE_SCALAR) {
			stack_err(L, v, "%s.%s: expected a string, got a %s", key, k->str, stack_type_of(v));
			continue;
		}
		/* `team:` or `team: null` is no value, not "": refuse it rather
		 * than guess (an empty label value is written ""). */
		if (ynode_is_null(v)) {
			stack_err(L, v, "%s.%s: expected a string, got null%s", key, k->str,
			     labels ? " (write \"\" for an empty value)" : "");
			continue;
		}
		val = v->str;
		if (labels) {
			if (!stack_names_label_key_valid(k->str)) {
				stack_err(L, k, "%s: key \"%s\" is not valid: use lowercase letters, digits, "
				     "\"_\" and \"-\", starting with a letter, at most 64 characters",
				     key, k->str);
				continue;
			}
			if (!strncmp(k->str, "vx-", 3)) {
				stack_err(L, k, "%s: key \"%s\" is reserved: keys starting with \"vx-\" "
				     "belong to vx", key, k->str);
				continue;
			}
			if (!stack_names_label_value_valid(val)) {
				stack_err(L, v, "%s.%s: value \"%s\" is not valid: use lowercase letters, "
				     "digits, \"_\" and \"-\", at most 64 characters", key, k->str, val);
				continue;
			}
		} else {
			if (k->str[0] == '\0') {
				stack_err(L, k, "%s: empty key", key);
				continue;
			}
			if (!strcmp(k->str, "user") || !strcmp(k->str, "resource")) {
				stack_err(L, k, "%s: the \"%s\" dimension may not be set", key, k->str);
				continue;
			}
			if (val[0] == '\0') {
				stack_err(L, v, "%s.%s: empty value", key, k->str);
				continue;
			}
		}
		if (stack_labels_set(out, k->str, val) < 0) {
			stack_oom(L);
			return;
		}
	}
	if (labels && out->n > STACK_MAX_USER_LABELS)
		stack_err(L, m, "%s: %zu labels, at most %d (vx adds %d of its own to Vertex's 64)", key,
		     out->n, STACK_MAX_USER_LABELS, 64 - STACK_MAX_USER_LABELS);
}
