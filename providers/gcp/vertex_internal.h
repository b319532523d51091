#ifndef VX_GCP_VERTEX_INTERNAL_H
#define VX_GCP_VERTEX_INTERNAL_H

/*
 * What the Vertex AI clients of this folder (customJobs in vertex.c,
 * persistentResources in persistent.c) do the same way: the regional send,
 * the parse of display text, times and google.rpc.Status, and leaving out
 * listed resources whose names are not of this project and region. Not a
 * public surface: vertex.h and persistent.h are.
 */

#include <stddef.h>

#include <cjson/cJSON.h>

#include "providers/gcp/http.h"
#include "util/ctx.h"
#include "util/err.h"

/*
 * Sends one request to region's aiplatform host and turns everything but a
 * 2xx into err, prefixed with what. A request other than GET is checked
 * against fence (NULL: none). Returns 0 with resp filled on 2xx.
 */
int vertex_send(struct gcp_http *http, const struct gcp_fence *fence, const char *method, const char *url,
		const char *body, const char *region, int is_create, enum gcp_retry retry, const char *rpc,
		const char *what, struct gcp_response *resp, struct vx_err *err) VX_WUR;

/* Parses one answer into out; err set on failure. */
typedef int (*vertex_parse_fn)(const char *body, size_t len, void *out, struct vx_err *err);

/* GET url on region's host for rpc (safe to retry), parsed by parse into out; errors wrapped with what. */
int vertex_read(struct gcp_http *http, const char *url, const char *region, const char *rpc, const char *what,
		vertex_parse_fn parse, void *out, struct vx_err *err) VX_WUR;

/* *out = o[key], cleaned for a terminal (util/text.h): display text only, never names. */
int vertex_dup_text(char **out, const cJSON *o, const char *key) VX_WUR;

/* *out = ms of the RFC 3339 time at o[key]; 0 when absent or malformed. */
void vertex_js_time(const cJSON *o, const char *key, int64_t *out);

/* A google.rpc.Status object: its code (0 when absent) and message (cleaned, NULL when absent). */
int vertex_parse_status(const cJSON *st, int *code, char **message) VX_WUR;

/* How drop_bad_names speaks of one kind of listed resource. */
struct vertex_listed {
	size_t elem;                     /* the size of an item */
	size_t name_off;                 /* offsetof its char *name */
	int (*name_check)(const char *name, const char *project, const char *region);
	void (*release)(void *item);
	const char *noun, *collection, *not_done; /* "job", "customJobs", "cancelled" */
};

/*
 * Leaves out of items (*n of them) every one whose name is not a name of
 * this project and region in k's collection, with a warning on ctx's log:
 * vx would act on whatever such a name points at.
 */
void vertex_drop_bad_names(const struct vx_ctx *ctx, const struct vertex_listed *k, void *items, size_t *n,
			   const char *project, const char *region, const char *what);

#endif
