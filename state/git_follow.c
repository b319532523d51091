#include "state/git_follow.h"

#include <stdlib.h>
#include <string.h>

#include <git2.h>

#include "state/git_url.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

#define FOLLOW_MAX_FILE ((size_t)8 << 20)
#define FOLLOW_MAX_FILES 10000

static int gfail(struct vx_err *err, int code, const char *what)
{
	const git_error *e = git_error_last();
	int rc = vx_err_set(err, code, "%s: %s", what, e && e->message ? e->message : "unknown libgit2 error");

	/* A remote's URL may hold a token (docs/gitops.md); libgit2 quotes URLs. */
	if (err && err->msg)
		vx_text_redact_userinfo(err->msg);
	return rc;
}

void git_follow_release(struct git_follow *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->files[i].name);
		free(f->files[i].data);
	}
	free(f->files);
	free(f->also.name);
	free(f->also.data);
	memset(f, 0, sizeof(*f));
}

static int is_yaml(const char *name)
{
	size_t n = strlen(name);

	if (name[0] == '.')
		return 0;
	return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct git_follow_file *)a)->name, ((const struct git_follow_file *)b)->name);
}

/* The blobs of tree's YAML files into out. */
static int read_files(struct git_follow *out, git_repository *repo, git_tree *tree, const char *dir,
		      struct vx_err *err)
{
	size_t n = git_tree_entrycount(tree);
	int rc = 0;

	if (n > FOLLOW_MAX_FILES)
		return vx_err_set(err, VX_EINVAL, "%s: more than %d entries", dir, FOLLOW_MAX_FILES);
	if (!(out->files = calloc(n + 1, sizeof(*out->files))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		git_blob *blob = NULL;
		struct git_follow_file *f = &out->files[out->n];
		git_object_size_t size;

		if (!is_yaml(name) || git_tree_entry_type(e) != GIT_OBJECT_BLOB)
			continue;
		if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK) {
			rc = vx_err_set(err, VX_EINVAL, "%s/%s: a symbolic link in the followed commit: git stores the "
					"link, not the file it names; copy the file into the repository", dir, name);
			break;
		}
		if (git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0) {
			rc = gfail(err, VX_EIO, name);
			break;
		}
		size = git_blob_rawsize(blob);
		if (size > FOLLOW_MAX_FILE) {
			rc = vx_err_set(err, VX_EINVAL, "%s/%s: larger than 8 MiB", dir, name);
		} else if (!(f->name = strdup(name)) || !(f->data = malloc((size_t)size + 1))) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		} else {
			memcpy(f->data, git_blob_rawcontent(blob), (size_t)size);
			f->data[size] = '\0';
			f->len = (size_t)size;
		}
		if (f->name)
			out->n++;
		git_blob_free(blob);
	}
	if (rc == 0)
		qsort(out->files, out->n, sizeof(*out->files), cmp_name);
	return rc;
}

static int remote_url(git_repository *repo, const char *remote, git_remote **out, struct vx_err *err)
{
	char *url = git_url_of_remote(repo, remote);
	int rc = 0;

	*out = NULL;
	if (!url)
		return vx_err_set(err, VX_ENOTFOUND, "-follow: no remote \"%s\" in the repository (no remote.%s.url)",
				  remote, remote);
	if (git_remote_create_anonymous(out, repo, url) < 0)
		rc = gfail(err, VX_EINVAL, "-follow");
	free(url);
	return rc;
}

static int fetch(git_repository *repo, const char *remote, const char *branch, const char *tracking,
		 struct vx_err *err)
{
	git_remote *rem = NULL;
	git_fetch_options fo;
	char *spec = vx_asprintf("+refs/heads/%s:%s", branch, tracking);
	git_strarray specs = { &spec, 1 };
	int rc = 0;

	if (!spec)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* An anonymous remote on the configured URL, as the state's own fetch
	 * (state_git.c): our refspec only, and no leak of libgit2 1.5's lookup. */
	if ((rc = remote_url(repo, remote, &rem, err)) < 0)
		goto done;
	if (git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION) < 0) {
		rc = gfail(err, VX_EIO, "-follow");
		goto done;
	}
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.update_fetchhead = 0;
	if (git_remote_fetch(rem, &specs, &fo, NULL) < 0)
		rc = gfail(err, VX_EIO, "fetching the followed branch");
done:
	git_remote_free(rem);
	free(spec);
	return rc;
}

/* The blob at path of root (a file of the commit) into *f; nothing when it is not one. */
static int read_also(struct git_follow_file *f, git_repository *repo, git_tree *root, const char *path,
		     struct vx_err *err)
{
	git_tree_entry *e = NULL;
	git_blob *blob = NULL;
	git_object_size_t size;
	int rc = 0;

	if (git_tree_entry_bypath(&e, root, path) < 0 || git_tree_entry_type(e) != GIT_OBJECT_BLOB ||
	    git_tree_entry_filemode(e) == GIT_FILEMODE_LINK || git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0) {
		git_error_clear();
		goto done;
	}
	size = git_blob_rawsize(blob);
	if (size > FOLLOW_MAX_FILE) {
		rc = vx_err_set(err, VX_EINVAL, "%s: larger than 8 MiB", path);
	} else if (!(f->name = strdup(path)) || !(f->data = malloc((size_t)size + 1))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	} else {
		memcpy(f->data, git_blob_rawcontent(blob), (size_t)size);
		f->data[size] = '\0';
		f->len = (size_t)size;
	}
done:
	git_blob_free(blob);
	git_tree_entry_free(e);
	return rc;
}

int git_follow_fetch(struct git_follow *out, const char *repo_dir, const char *dir_in_repo,
		     const char *remote, const char *branch, const char *also, struct vx_err *err)
{
	git_repository *repo = NULL;
	git_commit *commit = NULL;
	git_tree *root = NULL, *tree = NULL;
	git_tree_entry *entry = NULL;
	git_oid id;
	char *tracking = vx_asprintf("refs/remotes/%s/%s", remote, branch);
	int rc = 0;

	git_follow_release(out);
	if (!tracking)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	git_libgit2_init();
	if (git_repository_open_ext(&repo, repo_dir, 0, NULL) < 0) {
		rc = gfail(err, VX_ENOTFOUND, repo_dir);
		goto done;
	}
	if ((rc = fetch(repo, remote, branch, tracking, err)) < 0)
		goto done;
	if (git_reference_name_to_id(&id, repo, tracking) < 0 || git_commit_lookup(&commit, repo, &id) < 0 ||
	    git_commit_tree(&root, commit) < 0) {
		rc = gfail(err, VX_ENOTFOUND, tracking);
		goto done;
	}
	git_oid_tostr(out->commit, sizeof(out->commit), &id);
	if (also && (rc = read_also(&out->also, repo, root, also, err)) < 0)
		goto done;
	if (!strcmp(dir_in_repo, ".")) {
		tree = root;
		root = NULL;
	} else if (git_tree_entry_bypath(&entry, root, dir_in_repo) < 0 ||
		   git_tree_entry_type(entry) != GIT_OBJECT_TREE ||
		   git_tree_lookup(&tree, repo, git_tree_entry_id(entry)) < 0) {
		git_error_clear();
		rc = vx_err_set(err, VX_ENOTFOUND, "%s/%s has no directory %s (commit %.12s)", remote, branch,
				dir_in_repo, out->commit);
		goto done;
	}
	rc = read_files(out, repo, tree, dir_in_repo, err);
done:
	if (rc < 0)
		git_follow_release(out);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_tree_free(root);
	git_commit_free(commit);
	git_repository_free(repo);
	git_libgit2_shutdown();
	free(tracking);
	return rc;
}
