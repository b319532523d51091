#ifndef VX_GCP_STORAGE_H
#define VX_GCP_STORAGE_H

/*
 * Cloud Storage JSON API objects, for a state file kept with
 * compare-and-swap: read (content and its generation), write and delete
 * guarded by ifGenerationMatch. A failed precondition (HTTP 412) is
 * VX_ECONFLICT; a missing object VX_ENOTFOUND.
 *
 * Object names go into URLs as one escaped path segment ("state/x.json" ->
 * "state%2Fx.json"). Mutations are retried by the http layer only when they
 * carry a precondition (as Google's own client does); without one they are
 * sent once and may return VX_EUNCERTAIN.
 *
 * Note: a retried write with a precondition whose first attempt did land
 * fails with VX_ECONFLICT; a caller that sees a conflict should read the
 * object back before deciding someone else wrote it.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct blob_store;
struct gcp_http;
struct vx_ctx;

/*
 * base_url: "https://storage.googleapis.com/storage/v1/";
 * upload_url: "https://storage.googleapis.com/upload/storage/v1/". Borrowed.
 */
struct storage_client {
	struct gcp_http *http;
	const struct vx_ctx *ctx;
	const char *base_url;
	const char *upload_url;
};

/* No precondition (for if_generation_match). */
#define STORAGE_ANY_GENERATION ((int64_t)-1)

/* Object metadata. Owned strings, NULL when absent; numbers 0 when absent. */
struct storage_object {
	char *name;
	char *bucket;
	int64_t generation;
	int64_t metageneration;
	int64_t size;
	char *content_type;
	char *md5_hash;   /* base64 */
	char *crc32c;     /* base64 */
	char *etag;
};

#define STORAGE_OBJECT_INIT { 0 }

void storage_object_release(struct storage_object *o);

/* Parses an object resource (body need not be NUL-terminated). VX_EINVAL when not a JSON
 * object or when it has no valid generation. */
int storage_object_parse_json(const char *body, size_t len, struct storage_object *out,
			      struct vx_err *err) VX_WUR;

/* GET b/B/o/O: the metadata. */
int storage_object_stat(struct storage_client *c, const char *bucket, const char *object,
			struct storage_object *out, struct vx_err *err) VX_WUR;

/*
 * Reads the content and the generation it belongs to: the metadata first,
 * then GET b/B/o/O?alt=media&ifGenerationMatch=G (starting over, a few
 * times, when the object changes in between). *data (owned, NUL-terminated
 * past *len) and *generation are set on success.
 */
int storage_object_read(struct storage_client *c, const char *bucket, const char *object,
			char **data, size_t *len, int64_t *generation, struct vx_err *err) VX_WUR;

/*
 * POST {upload}b/B/o?uploadType=multipart&name=O[&ifGenerationMatch=G]
 * with a multipart/related body (metadata {"contentType":...}, then the
 * data). if_generation_match: 0 = the object must not exist, G = it must be
 * at generation G, STORAGE_ANY_GENERATION = no precondition. content_type
 * NULL = "application/json". *new_generation (may be NULL) gets the written
 * generation.
 */
int storage_object_write(struct storage_client *c, const char *bucket, const char *object,
			 const void *data, size_t len, const char *content_type,
			 int64_t if_generation_match, int64_t *new_generation,
			 struct vx_err *err) VX_WUR;

/* One source of storage_object_compose: an object at a generation (0: its current one). */
struct storage_compose_source {
	const char *name;
	int64_t generation;
};

/*
 * POST b/B/o/O/compose[?ifGenerationMatch=G]: makes O, in the same bucket,
 * the concatenation of the n sources (at most 32), on the server: no byte
 * of them is sent. A source at a generation that no longer exists is
 * VX_ENOTFOUND, as is a missing source. content_type NULL =
 * "application/json". *new_generation (may be NULL) gets O's generation.
 * Needs storage.objects.get on the sources and storage.objects.create on O.
 */
int storage_object_compose(struct storage_client *c, const char *bucket, const char *object,
			   const struct storage_compose_source *src, size_t n,
			   const char *content_type, int64_t if_generation_match,
			   int64_t *new_generation, struct vx_err *err) VX_WUR;

/* The most pages storage_object_list reads before it gives up (VX_EINVAL). */
#define STORAGE_LIST_MAX_PAGES 1000

/*
 * GET b/B/o?prefix=P[&pageToken=T]: the names of every object whose name
 * starts with prefix, page after page (at most STORAGE_LIST_MAX_PAGES), in
 * the server's order (lexicographic). *out is an array of *n owned strings
 * (free each, then the array; NULL when none). A name that does not start
 * with prefix or is not a valid object name, or a page token that does not
 * move, is VX_EINVAL: what a server lists is not believed.
 */
int storage_object_list(struct storage_client *c, const char *bucket, const char *prefix,
			char ***out, size_t *n, struct vx_err *err) VX_WUR;

/* DELETE b/B/o/O[?ifGenerationMatch=G]. */
int storage_object_delete(struct storage_client *c, const char *bucket, const char *object,
			  int64_t if_generation_match, struct vx_err *err) VX_WUR;

/*
 * The blob store of state/blobstore.h (what the gcs state backend and the
 * scan of other states use) on a copy of c: each operation is the
 * storage_object_* call of the same name, with content type
 * application/json. c's http layer is borrowed and must outlive the store.
 * Free with blob_store_free. VX_ENOMEM.
 */
int storage_blob_store(struct blob_store **out, const struct storage_client *c,
		       struct vx_err *err) VX_WUR;

#endif
