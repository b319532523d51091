#ifndef VX_STATE_STATE_GIT_H
#define VX_STATE_STATE_GIT_H

/*
 * The git backend (the default): the state is the branch vx/state/<stack>
 * of the repository that contains the stack directory. Its tree holds
 *
 *	stack.json               stack, serial, lineage, journal ("lock": null; states
 *	                         written before the lease ref kept the lease there)
 *	jobs/NAME.json           one record per job address
 *	reservations/NAME.json   (later) reservation.NAME
 *	quotas/NAME.json         (later) quota.NAME
 *
 * so `git log vx/state/<stack> -- jobs/NAME.json` is a job's history.
 * Everything is written with libgit2 as objects plus a compare-and-swap of
 * the branch ref: the work tree, the index and HEAD are never touched.
 * Commits are signed by user.name/user.email of the repository's config
 * ("vx <vx@localhost>" when unset) at the time of ctx's clock (UTC), so a
 * fixed clock gives fixed commit ids.
 *
 * The lease is not on the branch but on refs/vx/lease/<stack>, a chain of
 * commits whose tree holds lease.json (the holder, or "null" once
 * released), so the branch's history holds only what vx did (see
 * state/lock.h and docs/leases.md).
 *
 * With a remote, the branch is fetched (into refs/remotes/REMOTE/BRANCH)
 * before every load and lock operation and fast-forwarded (VX_ECONFLICT if
 * the local and remote branches diverged), and pushed with a non-force
 * refspec after every commit; a rejected push (someone else moved the
 * branch first) undoes the local commit and is VX_ECONFLICT. The lease ref
 * is kept in step the same way (tracking ref
 * refs/vx/remotes/REMOTE/lease/<stack>): fetched before every lease
 * operation and before every state write, pushed after every lease commit. ssh remotes
 * authenticate with the ssh agent; others need no credentials (file://).
 *
 * The backend calls git_libgit2_init() when opened and
 * git_libgit2_shutdown() when freed.
 */

#include "util/err.h"

struct state_backend;
struct vx_ctx;

struct state_git_opts {
	const char *stack;     /* the stack's name (required) */
	const char *stack_dir; /* a directory inside the repository; the repository is found by
				* walking up from it (required unless repo_path is set) */
	const char *repo_path; /* the repository itself, or NULL */
	const char *branch;    /* NULL: "vx/state/<stack>" */
	const char *remote;    /* NULL: local only; else a configured remote ("origin") */
};

/* VX_ENOTFOUND: no repository there; VX_EINVAL: bad options or remote. */
int state_git_open(struct state_backend **out, const struct vx_ctx *ctx,
		   const struct state_git_opts *opts, struct vx_err *err) VX_WUR;

/*
 * The root of the work tree of the git repository containing dir (found by
 * walking up, as git does), as an absolute path without symbolic links and
 * without a trailing '/'; the caller frees *out. VX_ENOTFOUND when dir is not
 * inside a repository or the repository is bare. Saved plans name their
 * stack relative to it, so another checkout of the same commit finds it.
 */
int state_git_workdir(char **out, const char *dir, struct vx_err *err) VX_WUR;

#endif
