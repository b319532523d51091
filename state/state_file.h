#ifndef VX_STATE_STATE_FILE_H
#define VX_STATE_STATE_FILE_H

/*
 * The file backend (state: {backend: file, path: FILE}) for people without
 * git: the whole state as one JSON document (state_to_json) in FILE,
 * replaced atomically (write FILE.tmp.PID, fsync, rename, fsync the
 * directory), and the lease in FILE.lock, created with O_EXCL and holding
 * the lock JSON (state_lock_to_json). There is no history beyond the
 * records' own past runs: state_history gives one entry, the current
 * record. Taking over a stale FILE.lock replaces it with a rename; two
 * processes taking over the same stale lock at the same instant could
 * both believe they won, which the git backend does not allow.
 */

#include "util/err.h"

struct state_backend;
struct vx_ctx;

struct state_file_opts {
	const char *stack; /* the stack's name (required) */
	const char *path;  /* the state file (required); its directory must exist:
			    * VX_ENOTFOUND ("the directory D does not exist") otherwise */
};

int state_file_open(struct state_backend **out, const struct vx_ctx *ctx,
		    const struct state_file_opts *opts, struct vx_err *err) VX_WUR;

#endif
