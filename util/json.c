/* Reading untrusted JSON: see util/json.h. */
#include "util/json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/banned.h"

const char *vx_json_str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

int vx_json_int(const cJSON *it, int64_t lo, int64_t hi, int64_t *out)
{
	if (cJSON_IsNumber(it)) {
		double d = it->valuedouble;

		/* 2^63 itself rounds in from INT64_MAX as a double: keep it out. */
		if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi ||
		    d >= 9223372036854775807.0)
			return -1;
		*out = (int64_t)d;
		return 0;
	}
	if (cJSON_IsString(it) && it->valuestring[0]) {
		char *end = NULL;
		long long v;

		errno = 0;
		v = strtoll(it->valuestring, &end, 10);
		if (errno || *end || v < lo || v > hi)
			return -1;
		*out = v;
		return 0;
	}
	return -1;
}

/* Offsets of the hex digits of every "\u0000" escape inside a JSON string, in order. */
static int nul_escapes(const char *body, size_t len, size_t **out, size_t *n)
{
	size_t i, alloc = 0;
	int in_string = 0;

	*out = NULL;
	*n = 0;
	for (i = 0; i < len; i++) {
		char c = body[i];

		if (!in_string) {
			in_string = c == '"';
			continue;
		}
		if (c == '"') {
			in_string = 0;
		} else if (c == '\\' && i + 1 < len) {
			if (body[i + 1] == 'u' && len - i >= 6 && !memcmp(body + i + 2, "0000", 4)) {
				if (VX_ALLOC_GROW(*out, *n + 1, alloc) < 0)
					return VX_ENOMEM;
				(*out)[(*n)++] = i + 2;
			}
			i++; /* the escaped character: an escaped quote does not end the string */
		}
	}
	return 0;
}

/* ---- scratch ------------------------------------------------------------ */

static _Thread_local struct vx_json_scratch *innermost;

static int scratch_owns(const void *p)
{
	for (const struct vx_json_scratch *s = innermost; s; s = s->outer)
		if (vx_arena_owns(&s->arena, p))
			return 1;
	return 0;
}

static void *hook_malloc(size_t n)
{
	return innermost ? vx_arena_alloc(&innermost->arena, n) : malloc(n);
}

static void hook_free(void *p)
{
	if (p && !(innermost && scratch_owns(p)))
		free(p);
}

void vx_json_hooks_install(void)
{
	cJSON_Hooks h = { hook_malloc, hook_free };

	cJSON_InitHooks(&h);
}

void vx_json_scratch_begin(struct vx_json_scratch *s)
{
	s->arena.head = NULL;
	s->outer = innermost;
	innermost = s;
}

void vx_json_scratch_reset(struct vx_json_scratch *s)
{
	vx_arena_reset(&s->arena);
}

void vx_json_scratch_hold(struct vx_json_scratch *s)
{
	if (innermost == s)
		innermost = s->outer;
}

void vx_json_scratch_end(struct vx_json_scratch *s)
{
	if (innermost == s)
		innermost = s->outer;
	vx_arena_release(&s->arena);
}

void vx_json_drop(cJSON *root)
{
	if (root && !(innermost && scratch_owns(root)))
		cJSON_Delete(root);
}

/* ---- parsing ------------------------------------------------------------- */

cJSON *vx_json_parse(const char *body, size_t len)
{
	cJSON *root = NULL;
	size_t *at = NULL, n = 0, i;
	char *copy = NULL;

	if (!body || memchr(body, '\0', len))
		return NULL;
	if (nul_escapes(body, len, &at, &n) < 0)
		goto done;
	if (n == 0) {
		root = vx_json_parse_tree(body, len, NULL);
		goto done;
	}
	if (!(copy = malloc(len)))
		goto done;
	memcpy(copy, body, len);
	for (i = 0; i < n; i++)
		memcpy(copy + at[i], "FFFD", 4);
	root = vx_json_parse_tree(copy, len, NULL);
done:
	free(copy);
	free(at);
	return root;
}
