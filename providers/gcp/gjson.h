#ifndef VX_GCP_GJSON_H
#define VX_GCP_GJSON_H

/*
 * Reading Google API answers with cJSON, shared by the REST clients in
 * providers/gcp/ (vertex, compute, quotas, storage). Internal to this folder:
 * it is the one place where the clients' parsers meet cJSON, so it names
 * cJSON's struct; nothing outside providers/gcp/ includes it.
 *
 * The getters are lenient in one way on purpose: a field of the wrong JSON
 * type counts as absent, so a surprising answer degrades to "not set"
 * instead of a crash or a half-filled struct. Only running out of memory is
 * an error (VX_ENOMEM).
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct cJSON;

/* o[key] when it is a string (borrowed), else NULL. o may be NULL or not an object. */
const char *gjson_str(const struct cJSON *o, const char *key);

/* *out = a copy of gjson_str(o, key), or NULL when that is NULL. Returns 0 or VX_ENOMEM. */
int gjson_dup(char **out, const struct cJSON *o, const char *key) VX_WUR;

/*
 * An integer in [lo, hi] from a JSON number that is whole and finite or a
 * non-empty decimal string (Google sends int64 fields as strings). Returns 0
 * with *out set, or -1 (out untouched) when it is absent, of another type,
 * not a whole number or out of range.
 */
int gjson_int(const struct cJSON *it, int64_t lo, int64_t hi, int64_t *out);

/* *out = a copy of a non-empty root["nextPageToken"], else NULL. Returns 0 or VX_ENOMEM. */
int gjson_next_page_token(char **out, const struct cJSON *root) VX_WUR;

/*
 * The nextPageToken of a list reply without parsing it: a scan of the top
 * level object's keys that skips their values. Returns 1 with *out the
 * token (NULL: none, as gjson_next_page_token would say for a valid
 * body), 0 when unsure (escapes in a key or the token, or a body that is
 * not an object as expected: parse it instead), VX_ENOMEM. It does not
 * validate the body: the full parse still must, and must agree.
 */
int gjson_scan_page_token(const char *body, size_t len, char **out) VX_WUR;

/*
 * Parses body as JSON (caller frees with cJSON_Delete); NULL when it is not
 * JSON or memory ran out. Every parser of a server's answer goes through
 * here, because cJSON alone is not safe with NUL: it decodes "\u0000" into a
 * C string that then ends early ("customJobs/1\u0000evil" would read as
 * "customJobs/1", another job). So a raw NUL byte (never valid JSON) makes
 * the body unreadable, and each "\u0000" escape inside a string is read as
 * U+FFFD, the replacement character: no name, token or label check accepts
 * it, and text shows it visibly, so the value is refused where it matters
 * instead of being cut short.
 */
struct cJSON *gjson_parse(const char *body, size_t len);

/*
 * Parses body (through gjson_parse) as a JSON object (caller frees with cJSON_Delete). On failure
 * returns NULL and sets err to "<what>: empty response body" or
 * "<what>: response is not a JSON object" (VX_EINVAL).
 */
struct cJSON *gjson_parse_object(const char *body, size_t len, const char *what,
				 struct vx_err *err);

/* Fills dst (a zeroed struct) from a JSON object; 0 or VX_ENOMEM. dst may be half filled on failure. */
typedef int (*gjson_from_fn)(const struct cJSON *o, void *dst);
/* Releases the contents of a struct filled by a gjson_from_fn. */
typedef void (*gjson_release_fn)(void *dst);

/*
 * One resource: zeroes out (elem bytes), parses body as an object and fills
 * out with from. Returns 0; VX_EINVAL (see gjson_parse_object); or
 * VX_ENOMEM with "<what>: out of memory", out released.
 */
int gjson_parse_one(const char *body, size_t len, void *out, size_t elem, gjson_from_fn from,
		    gjson_release_fn rel, const char *what, struct vx_err *err) VX_WUR;

/*
 * One page of a list answer: appends the objects of root[key] (other array
 * members are skipped) to the array *items of *n elem-sized entries with
 * room for *alloc, growing it, and sets *next_page_token (caller frees;
 * NULL on the last page). A key that is absent or null is an empty page.
 * Returns 0; VX_EINVAL when the body is not an object or root[key] not an
 * array ("<what>: <key> is not an array"); VX_ENOMEM. On failure the entries
 * this call appended are released, *n restored and *next_page_token NULL, so
 * earlier pages stay intact.
 */
int gjson_parse_page(const char *body, size_t len, const char *key, void **items, size_t *n,
		     size_t *alloc, size_t elem, gjson_from_fn from, gjson_release_fn rel,
		     char **next_page_token, const char *what, struct vx_err *err) VX_WUR;

#endif
