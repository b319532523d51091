#ifndef VX_STATE_GIT_FOLLOW_H
#define VX_STATE_GIT_FOLLOW_H

/*
 * vx watch -follow REMOTE/BRANCH: the stack as merged, not as the work tree
 * holds it. Fetches the branch (libgit2: no work tree is touched, no pull)
 * into refs/remotes/REMOTE/BRANCH and reads the stack directory's files
 * from that commit's tree, the way the loader reads a directory: *.yaml and
 * *.yml directly in it, by name, names starting with "." skipped, each at
 * most 8 MiB, symbolic links refused (git stores the link, not the file).
 * libgit2 lives in state/, so this does too.
 */

#include <stddef.h>

#include "util/err.h"

struct git_follow_file {
	char *name;   /* "jobs.yaml" */
	char *data;   /* the blob, NUL-terminated */
	size_t len;
};

struct git_follow {
	char commit[41];              /* the fetched commit, hex */
	struct git_follow_file *files;
	size_t n;
	/* the commit's file at the path `also` names (the repository's policy),
	 * name its path; data NULL when not asked for or not there */
	struct git_follow_file also;
};

/*
 * Fetches remote's branch in the repository whose work tree holds repo_dir
 * and fills out with the files of dir_in_repo (relative to the work tree,
 * "." for its root) at that commit, and with also (a path from the work
 * tree's root, NULL: none) that file of the commit, when it is a file
 * there, into out->also. VX_ENOTFOUND when the branch or the
 * directory is not there; VX_EIO for a failed fetch (its message, with URL
 * credentials hidden). out is released first.
 */
int git_follow_fetch(struct git_follow *out, const char *repo_dir, const char *dir_in_repo,
		     const char *remote, const char *branch, const char *also, struct vx_err *err) VX_WUR;
void git_follow_release(struct git_follow *f);

#endif
