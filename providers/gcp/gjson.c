#include "providers/gcp/gjson.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/json.h"
#include "util/banned.h"

const char *gjson_str(const cJSON *o, const char *key)
{
	return vx_json_str(o, key);
}

int gjson_dup(char **out, const cJSON *o, const char *key)
{
	const char *s = gjson_str(o, key);

	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

int gjson_int(const cJSON *it, int64_t lo, int64_t hi, int64_t *out)
{
	return vx_json_int(it, lo, hi, out);
}

int gjson_next_page_token(char **out, const cJSON *root)
{
	const char *s = gjson_str(root, "nextPageToken");

	*out = NULL;
	if (!s || !s[0])
		return 0;
	*out = strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

static size_t skip_ws(const char *b, size_t i, size_t len)
{
	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
		i++;
	return i;
}

/* Past the string opening at b[i] ('"'), escapes skipped; len when unterminated. */
static size_t skip_string(const char *b, size_t i, size_t len)
{
	for (i++; i < len; i++) {
		if (b[i] == '\\')
			i++;
		else if (b[i] == '"')
			return i + 1;
	}
	return len;
}

/* Past the value starting at b[i]: a string, an object or array (to its
 * closing bracket), or a number or literal (to the next delimiter). */
static size_t skip_value(const char *b, size_t i, size_t len)
{
	size_t depth = 0;

	if (i < len && b[i] == '"')
		return skip_string(b, i, len);
	if (i < len && (b[i] == '{' || b[i] == '[')) {
		while (i < len) {
			char c = b[i];

			if (c == '"') {
				i = skip_string(b, i, len);
				continue;
			}
			if (c == '{' || c == '[')
				depth++;
			else if ((c == '}' || c == ']') && --depth == 0)
				return i + 1;
			i++;
		}
		return len;
	}
	while (i < len && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' &&
	       b[i] != '\n' && b[i] != '\r')
		i++;
	return i;
}

int gjson_scan_page_token(const char *body, size_t len, char **out)
{
	static const char key[] = "nextPageToken";
	size_t i, k, klen = sizeof(key) - 1;

	*out = NULL;
	if (!body || (i = skip_ws(body, 0, len)) >= len || body[i] != '{')
		return 0;
	for (i++;;) {
		int ours;

		i = skip_ws(body, i, len);
		if (i < len && body[i] == '}')
			return 1;                         /* no token: the last page */
		if (i >= len || body[i] != '"')
			return 0;
		for (k = i + 1; k < len && body[k] != '"' && body[k] != '\\'; k++)
			;
		if (k >= len || body[k] == '\\')
			return 0;                         /* an escaped key: let the parser judge */
		ours = k - i - 1 == klen && !memcmp(body + i + 1, key, klen);
		i = skip_ws(body, k + 1, len);
		if (i >= len || body[i] != ':')
			return 0;
		i = skip_ws(body, i + 1, len);
		if (i >= len)
			return 0;
		if (ours) {
			if (body[i] != '"')
				return 1;                 /* not a string: no token, as gjson_str says */
			for (k = i + 1; k < len && body[k] != '"' && body[k] != '\\'; k++)
				;
			if (k >= len || body[k] == '\\')
				return 0;
			if (k == i + 1)
				return 1;                 /* "": no token */
			if (!(*out = malloc(k - i)))
				return VX_ENOMEM;
			memcpy(*out, body + i + 1, k - i - 1);
			(*out)[k - i - 1] = '\0';
			return 1;
		}
		i = skip_ws(body, skip_value(body, i, len), len);
		if (i < len && body[i] == ',') {
			i++;
			continue;
		}
		if (i < len && body[i] == '}')
			return 1;
		return 0;
	}
}

cJSON *gjson_parse(const char *body, size_t len)
{
	return vx_json_parse(body, len);
}

cJSON *gjson_parse_object(const char *body, size_t len, const char *what, struct vx_err *err)
{
	cJSON *root;

	if (!body) {
		vx_err_set(err, VX_EINVAL, "%s: empty response body", what);
		return NULL;
	}
	root = gjson_parse(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		vx_err_set(err, VX_EINVAL, "%s: response is not a JSON object", what);
		return NULL;
	}
	return root;
}

int gjson_parse_one(const char *body, size_t len, void *out, size_t elem, gjson_from_fn from,
		    gjson_release_fn rel, const char *what, struct vx_err *err)
{
	cJSON *root;
	int rc;

	memset(out, 0, elem);
	if (!(root = gjson_parse_object(body, len, what, err)))
		return VX_EINVAL;
	rc = from(root, out);
	cJSON_Delete(root);
	if (rc < 0) {
		rel(out);
		return vx_err_set(err, rc, "%s: out of memory", what);
	}
	return 0;
}

int gjson_parse_page(const char *body, size_t len, const char *key, void **items, size_t *n,
		     size_t *alloc, size_t elem, gjson_from_fn from, gjson_release_fn rel,
		     char **next_page_token, const char *what, struct vx_err *err)
{
	struct vx_json_scratch scratch;
	const cJSON *arr, *it;
	cJSON *root;
	size_t count = 0, start = *n, i;
	int rc = 0;

	*next_page_token = NULL;
	/* A page of 1,000 jobs is tens of thousands of nodes: parsed into one
	 * arena, freed whole at the end, and held while the callbacks read it
	 * (a printed part they keep is theirs to free()). */
	vx_json_scratch_begin(&scratch);
	root = gjson_parse_object(body, len, what, err);
	vx_json_scratch_hold(&scratch);
	if (!root) {
		vx_json_scratch_end(&scratch);
		return VX_EINVAL;
	}
	arr = cJSON_GetObjectItemCaseSensitive(root, key);
	if (arr && !cJSON_IsArray(arr) && !cJSON_IsNull(arr)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: %s is not an array", what, key);
		goto done;
	}
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsObject(it))
			count++;
	if (count > (size_t)-1 / elem - *n) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: too many items", what);
		goto done;
	}
	if (vx_grow(items, alloc, *n + count, elem) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	cJSON_ArrayForEach(it, arr) {
		void *dst;

		if (!cJSON_IsObject(it))
			continue;
		dst = (char *)*items + *n * elem;
		memset(dst, 0, elem);
		(*n)++;
		if ((rc = from(it, dst)) < 0) {
			vx_err_set(err, rc, "%s: out of memory", what);
			goto done;
		}
	}
	if ((rc = gjson_next_page_token(next_page_token, root)) < 0)
		vx_err_set(err, rc, "%s: out of memory", what);
done:
	if (rc < 0) {
		for (i = start; i < *n; i++)
			rel((char *)*items + i * elem);
		*n = start;
		free(*next_page_token);
		*next_page_token = NULL;
	}
	vx_json_scratch_end(&scratch); /* the tree with it */
	return rc;
}
