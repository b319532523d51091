#ifndef VX_STATE_STATE_GCS_H
#define VX_STATE_STATE_GCS_H

/*
 * The gcs backend (state: {backend: gcs, bucket: B, path: P}) for teams
 * whose CI may not push to the config repository. Objects under P:
 *
 *	P/state.json              the state (state_to_json, as the file backend)
 *	P/lease.json              the lease (state_lock_to_json), when held
 *	P/history/NNNNNNNNNN.json serial N (10 digits) with the message and time
 *	                          of the write that made it
 *
 * Every mutation is a compare-and-swap with ifGenerationMatch: state.json
 * is written only at the generation it was read at (0: it must not exist),
 * so of two writers based on the same state one wins and the other gets
 * VX_ECONFLICT; lease.json is created with ifGenerationMatch=0, renewed and
 * taken over by a rewrite at the generation read, and released by a delete
 * at that generation. A state write first checks that lease.json still
 * names this backend's lease. A failed precondition may be our own retried
 * request that landed (state/blobstore.h): the object is read back
 * and compared before it counts as a conflict.
 *
 * History: the writer that wins serial N writes history/N right after, with
 * ifGenerationMatch=0 (so a history object is never replaced); the writer
 * of serial N+1 first makes sure history/N exists (had the winner of N died
 * before writing it, with no message). state_history reads state.json and
 * walks history/ down until an object is missing or of another lineage.
 *
 * Everything read is untrusted: sizes are capped (STATE_MAX_JSON for the
 * state and history, 64 KiB for the lease), the JSON is validated by the
 * state codec, and a history object must hold the serial and lineage its
 * name and the walk promise.
 */

#include "util/err.h"

struct blob_store;
struct state_backend;
struct vx_ctx;

struct state_gcs_opts {
	const char *stack;                    /* the stack's name (required) */
	const char *bucket;                   /* required */
	const char *path;                     /* the object prefix; NULL: "vx/state/<stack>" */
	/* The objects' store (providers/gcp/storage.h: storage_blob_store),
	 * owned by the gcs backend from the call on, even when the open fails. */
	struct blob_store *store;
	/* Answers config_commit/config_changes (a git backend on the stack's
	 * repository), owned by the gcs backend from the call on, even when
	 * the open fails; NULL: none, as with the file backend. */
	struct state_backend *config;
};

/* VX_EINVAL: a bad bucket or path. */
int state_gcs_open(struct state_backend **out, const struct vx_ctx *ctx,
		   const struct state_gcs_opts *opts, struct vx_err *err) VX_WUR;

#endif
