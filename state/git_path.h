#ifndef VX_STATE_GIT_PATH_H
#define VX_STATE_GIT_PATH_H

/*
 * The last commit of a repository's history that changed one file: what an
 * apply records as the commit of the policy in force (Vx-Policy-Commit, a
 * run's policyCommit; docs/policy.md). libgit2 lives in state/, so this does
 * too.
 */

#include "util/err.h"

/*
 * *out (hex, caller frees) = the newest commit reachable from HEAD of the
 * repository whose work tree holds repo_dir in which path (relative to the
 * work tree: ".vx/policy.yaml") differs from the commit's first parent (or
 * which adds it), walking at most GIT_PATH_MAX_WALK commits; NULL when HEAD
 * is unborn, does not hold path, or the walk ends first. 0, VX_ENOTFOUND (no
 * repository), VX_EIO (libgit2), VX_ENOMEM.
 */
int git_path_last_commit(char **out, const char *repo_dir, const char *path, struct vx_err *err) VX_WUR;

#define GIT_PATH_MAX_WALK 100000

#endif
