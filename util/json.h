#ifndef VX_UTIL_JSON_H
#define VX_UTIL_JSON_H

/*
 * Reading untrusted JSON with cJSON, for every layer that reads what a
 * server or a store sent: the REST clients of providers/gcp/ (through
 * gjson.h) and the gcs state backend's history objects. Names cJSON's
 * struct; callers include <cjson/cJSON.h> themselves.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

struct cJSON;

/*
 * Parses body as JSON (caller frees with cJSON_Delete); NULL when it is not
 * JSON or memory ran out. cJSON alone is not safe with NUL: it decodes
 * "\u0000" into a C string that then ends early ("customJobs/1\u0000evil"
 * would read as "customJobs/1", another job). So a raw NUL byte (never
 * valid JSON) makes the body unreadable, and each "\u0000" escape inside a
 * string is read as U+FFFD, the replacement character: no name, token or
 * label check accepts it, and text shows it visibly, so the value is
 * refused where it matters instead of being cut short.
 */
struct cJSON *vx_json_parse(const char *body, size_t len);

/*
 * cJSON_ParseWithLengthOpts(text, len, end, 0), about three times faster on
 * the text vx writes (util/json_parse.c): the same tree, from cJSON's
 * allocator (so in the thread's scratch when one is begun), *end after the
 * value; and on anything unusual cJSON's own result, error position
 * included. Not for a body that may hold "\u0000": vx_json_parse is.
 */
struct cJSON *vx_json_parse_tree(const char *text, size_t len, const char **end);

/* o[key] when it is a string (borrowed), else NULL. o may be NULL or not an object. */
const char *vx_json_str(const struct cJSON *o, const char *key);

/*
 * An integer in [lo, hi] from a JSON number that is whole and finite or a
 * non-empty decimal string (Google sends int64 fields as strings). Returns 0
 * with *out set, or -1 (out untouched) when it is absent, of another type,
 * not a whole number or out of range.
 */
int vx_json_int(const struct cJSON *it, int64_t lo, int64_t hi, int64_t *out);

/*
 * A cJSON scratch. While one is begun on a thread, every cJSON node and
 * string that thread allocates (parsing, building, printing) comes from the
 * scratch's arena, and is freed all at once by vx_json_scratch_reset or
 * vx_json_scratch_end instead of one malloc'd node at a time: reading 10,000
 * state records spent more on cJSON's frees than on its parse. Nothing
 * allocated in a scratch may be used after its reset (copy what is kept),
 * and nothing printed in one may be passed to free() (cJSON_free is right
 * either way). Scratches nest; memory allocated outside any is malloc'd as
 * usual and may be freed inside one. Takes effect once
 * vx_json_hooks_install has run (at the start of main, before any thread);
 * before that a scratch changes nothing but speed.
 */
struct vx_json_scratch {
	struct vx_arena arena;
	struct vx_json_scratch *outer;
};

void vx_json_hooks_install(void);
void vx_json_scratch_begin(struct vx_json_scratch *s);
void vx_json_scratch_reset(struct vx_json_scratch *s);
void vx_json_scratch_end(struct vx_json_scratch *s); /* s the thread's innermost, or held */

/*
 * Stops s allocating (the thread's allocations go where they went before s
 * began) while its trees stay readable until vx_json_scratch_end: for code
 * that reads a tree parsed in s through callbacks that may print parts of
 * it and keep the text (to free() later). After this nothing of s's trees
 * may be freed, cJSON_Delete included, or joined to another tree.
 */
void vx_json_scratch_hold(struct vx_json_scratch *s);

/* cJSON_Delete(root), or nothing when root lives in one of this thread's scratches. */
void vx_json_drop(struct cJSON *root);

#endif
