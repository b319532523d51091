/*
 * The last commit that changed a file (state/git_path.h), by a walk of the
 * first parents from HEAD comparing the file's blob id in each commit's tree
 * with its parent's.
 */
#include "state/git_path.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

/* The blob id of path in commit c into *id: 1 when there, 0 when not. */
static int blob_at(git_oid *id, git_commit *c, const char *path)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int found = 0;

	if (git_commit_tree(&tree, c) == 0 && git_tree_entry_bypath(&e, tree, path) == 0) {
		git_oid_cpy(id, git_tree_entry_id(e));
		found = 1;
	}
	git_error_clear();
	git_tree_entry_free(e);
	git_tree_free(tree);
	return found;
}

/* The walk: *out set to the first commit whose blob of path differs from its first parent's. */
static int walk(char **out, git_repository *repo, const char *path, struct vx_err *err)
{
	git_commit *c = NULL, *parent = NULL;
	git_oid id, here, there;
	char hex[GIT_OID_HEXSZ + 1];
	int rc = 0;

	if (git_reference_name_to_id(&id, repo, "HEAD") < 0 || git_commit_lookup(&c, repo, &id) < 0) {
		git_error_clear();
		return 0; /* unborn: no commit at all */
	}
	if (!blob_at(&here, c, path))
		goto done;
	for (size_t n = 0; n < GIT_PATH_MAX_WALK; n++) {
		int in_parent = git_commit_parentcount(c) > 0 && git_commit_parent(&parent, c, 0) == 0 &&
				blob_at(&there, parent, path);

		git_error_clear();
		if (!in_parent || !git_oid_equal(&here, &there)) {
			git_oid_tostr(hex, sizeof(hex), git_commit_id(c));
			if (!(*out = vx_strdup(hex)))
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		git_commit_free(c);
		c = parent;
		parent = NULL;
	}
done:
	git_commit_free(parent);
	git_commit_free(c);
	return rc;
}

int git_path_last_commit(char **out, const char *repo_dir, const char *path, struct vx_err *err)
{
	git_repository *repo = NULL;
	int rc;

	*out = NULL;
	if (git_libgit2_init() < 0)
		return vx_err_set(err, VX_EIO, "libgit2 did not start");
	if (git_repository_open_ext(&repo, repo_dir, 0, NULL) < 0) {
		git_error_clear();
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: no git repository holds it", repo_dir);
	} else {
		rc = walk(out, repo, path, err);
	}
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc;
}
