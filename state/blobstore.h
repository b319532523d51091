#ifndef VX_STATE_BLOBSTORE_H
#define VX_STATE_BLOBSTORE_H

/*
 * What the gcs backend (state_gcs.h) and the scan of other states
 * (state_scan.h) need of an object store: named blobs in a bucket, each
 * with a generation that changes on every write, and mutations guarded by
 * a generation precondition (compare-and-swap). state/ declares it and
 * never names a client; a provider implements it (providers/gcp/storage.h:
 * storage_blob_store, Cloud Storage's JSON API) and the opener in workflow/
 * hands one to the backend. So state/ stays below the providers.
 *
 * Every operation returns 0 or a negative code: VX_ENOTFOUND for a missing
 * object, VX_ECONFLICT for a failed precondition (which may be our own
 * retried request that landed: read the object back before deciding that
 * someone else wrote it), VX_EUNCERTAIN for a mutation without a
 * precondition whose outcome is not known, VX_EINVAL for a name the store
 * refuses or an answer it does not believe, else the transport's error.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* No precondition (for if_generation_match). */
#define BLOB_ANY_GENERATION ((int64_t)-1)

/* One source of blob_compose: an object at a generation (0: its current one). */
struct blob_source {
	const char *name;
	int64_t generation;
};

struct blob_store;

struct blob_store_ops {
	/* The content (owned, NUL-terminated past *len) and the generation it belongs to. */
	int (*read)(struct blob_store *s, const char *bucket, const char *name, char **data,
		    size_t *len, int64_t *generation, struct vx_err *err);
	/* The current generation, without the content. */
	int (*stat)(struct blob_store *s, const char *bucket, const char *name, int64_t *generation,
		    struct vx_err *err);
	/*
	 * Writes data as JSON. if_generation_match: 0 = the object must not
	 * exist, G = it must be at generation G, BLOB_ANY_GENERATION = no
	 * precondition. *new_generation (may be NULL) gets the written one.
	 */
	int (*write)(struct blob_store *s, const char *bucket, const char *name, const void *data,
		     size_t len, int64_t if_generation_match, int64_t *new_generation,
		     struct vx_err *err);
	/* Makes name the concatenation of the n sources (at most 32) in the store
	 * itself; a source gone (or at a generation gone) is VX_ENOTFOUND. */
	int (*compose)(struct blob_store *s, const char *bucket, const char *name,
		       const struct blob_source *src, size_t n, int64_t if_generation_match,
		       int64_t *new_generation, struct vx_err *err);
	/* Every name starting with prefix, in lexicographic order: *out an array of
	 * *n owned strings (free each, then the array; NULL when none). */
	int (*list)(struct blob_store *s, const char *bucket, const char *prefix, char ***out,
		    size_t *n, struct vx_err *err);
	/* Deletes name, at if_generation_match as for write. */
	int (*remove)(struct blob_store *s, const char *bucket, const char *name,
		      int64_t if_generation_match, struct vx_err *err);
	void (*free)(struct blob_store *s);
};

/* The common part, first in each implementation's own struct. */
struct blob_store {
	const struct blob_store_ops *ops;
};

/* The operations through s's table, for short call sites. */
static inline VX_WUR int blob_read(struct blob_store *s, const char *bucket, const char *name, char **data,
				   size_t *len, int64_t *generation, struct vx_err *err)
{
	return s->ops->read(s, bucket, name, data, len, generation, err);
}

static inline VX_WUR int blob_stat(struct blob_store *s, const char *bucket, const char *name,
				   int64_t *generation, struct vx_err *err)
{
	return s->ops->stat(s, bucket, name, generation, err);
}

static inline VX_WUR int blob_write(struct blob_store *s, const char *bucket, const char *name,
				    const void *data, size_t len, int64_t if_generation_match,
				    int64_t *new_generation, struct vx_err *err)
{
	return s->ops->write(s, bucket, name, data, len, if_generation_match, new_generation, err);
}

static inline VX_WUR int blob_compose(struct blob_store *s, const char *bucket, const char *name,
				      const struct blob_source *src, size_t n, int64_t if_generation_match,
				      int64_t *new_generation, struct vx_err *err)
{
	return s->ops->compose(s, bucket, name, src, n, if_generation_match, new_generation, err);
}

static inline VX_WUR int blob_list(struct blob_store *s, const char *bucket, const char *prefix, char ***out,
				   size_t *n, struct vx_err *err)
{
	return s->ops->list(s, bucket, prefix, out, n, err);
}

static inline VX_WUR int blob_remove(struct blob_store *s, const char *bucket, const char *name,
				     int64_t if_generation_match, struct vx_err *err)
{
	return s->ops->remove(s, bucket, name, if_generation_match, err);
}

/* NULL-safe. */
static inline void blob_store_free(struct blob_store *s)
{
	if (s)
		s->ops->free(s);
}

#endif
