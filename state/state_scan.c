/*
 * Other states in the same repository or bucket (state/state_scan.h). Its
 * own libgit2 handle on the repository, apart from the git backend's: this
 * reads other branches only, once, and writes nothing.
 */
#include "state/state_scan.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>

#include "state/blobstore.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* Other stacks' state branches, and what a clone or fetch tracks of a remote's. */
#define BRANCHES "refs/heads/vx/state/"
static const char *const globs[] = { BRANCHES "*", "refs/remotes/*/vx/state/*" };
/* A record larger than this is not one vx wrote: skipped. */
#define RECORD_MAX ((size_t)16 << 20)

void state_scan_hit_release(struct state_scan_hit *h)
{
	free(h->stack);
	free(h->where);
	free(h->address);
	memset(h, 0, sizeof(*h));
}

/* Whether r's current or a past run is resource. */
static int record_has(const struct state_record *r, const char *resource)
{
	if (r->current && r->current->resource && !strcmp(r->current->resource, resource))
		return 1;
	for (size_t h = 0; h < r->nhistory; h++)
		if (r->history[h].resource && !strcmp(r->history[h].resource, resource))
			return 1;
	return 0;
}

/*
 * Whether text holds needle ("\"RESOURCE\""): the cheap test before a
 * parse. By hand: memmem is a GNU extension this build does not enable.
 */
static int mentions(const void *text, size_t len, const char *needle)
{
	const char *p = text, *end = p + len;
	size_t nl = strlen(needle);

	while (nl && (size_t)(end - p) >= nl && (p = memchr(p, needle[0], (size_t)(end - p - (ptrdiff_t)nl) + 1))) {
		if (!memcmp(p, needle, nl))
			return 1;
		p++;
	}
	return 0;
}

/* Another state's names are read from a branch or bucket anyone may write: shown cleaned. */
static int hit_set(struct state_scan_hit *out, const char *stack, const char *where, const char *address,
		   struct vx_err *err)
{
	out->stack = vx_text_clean(stack);
	out->where = vx_text_clean(where);
	out->address = vx_text_clean(address ? address : "?");
	if (!out->stack || !out->where || !out->address) {
		state_scan_hit_release(out);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- git ------------------------------------------------------------------- */

static int gfail(struct vx_err *err, const char *what)
{
	const git_error *e = git_error_last();

	return vx_err_set(err, VX_EIO, "reading the other states: %s: %s", what,
			  e && e->message ? e->message : "unknown libgit2 error");
}

/* The address in the records of one folder sub of a branch's tree (depth 1: a bucket of one) that has
 * resource, into out. */
static int scan_dir(struct state_scan_hit *out, git_repository *repo, const git_tree *sub, int depth,
		    const char *ref, const char *needle, const char *resource, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < git_tree_entrycount(sub) && rc == 0 && !out->address; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(sub, i);
		struct state_record r;
		struct vx_err pe = VX_ERR_INIT;
		git_blob *blob = NULL;
		size_t n;

		/* A fanned-out folder's bucket (jobs/ab/NAME.json, docs/state.md): its records too. */
		if (depth == 0 && git_tree_entry_type(e) == GIT_OBJECT_TREE) {
			git_tree *bucket = NULL;

			if (git_tree_lookup(&bucket, repo, git_tree_entry_id(e)) == 0)
				rc = scan_dir(out, repo, bucket, 1, ref, needle, resource, err);
			git_tree_free(bucket);
			continue;
		}
		if (git_tree_entry_type(e) != GIT_OBJECT_BLOB || git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0)
			continue;
		n = (size_t)git_blob_rawsize(blob);
		memset(&r, 0, sizeof(r));
		if (n <= RECORD_MAX && mentions(git_blob_rawcontent(blob), n, needle) &&
		    state_record_from_json(&r, git_blob_rawcontent(blob), n, &pe) == 0 && record_has(&r, resource))
			rc = hit_set(out, strstr(ref, "vx/state/") + strlen("vx/state/"), ref, r.address, err);
		state_record_release(&r);
		vx_err_release(&pe);
		git_blob_free(blob);
	}
	return rc;
}

/*
 * The address in the records of tree (one branch) that has resource, into
 * out: every record folder's (a prefix and an "s", state.h), of whatever
 * kind, as the git backend reads them.
 */
static int scan_tree(struct state_scan_hit *out, git_repository *repo, const git_tree *tree, const char *ref,
		     const char *needle, const char *resource, struct vx_err *err)
{
	int rc = 0;

	for (size_t d = 0; d < git_tree_entrycount(tree) && rc == 0 && !out->address; d++) {
		const git_tree_entry *de = git_tree_entry_byindex(tree, d);
		git_tree *sub = NULL;

		if (!state_dir_prefix(git_tree_entry_name(de)) || git_tree_entry_type(de) != GIT_OBJECT_TREE ||
		    git_tree_lookup(&sub, repo, git_tree_entry_id(de)) < 0)
			continue; /* not a record folder */
		rc = scan_dir(out, repo, sub, 0, ref, needle, resource, err);
		git_tree_free(sub);
	}
	return rc;
}

/* Whether name is this state's branch or a remote's copy of it (refs/remotes/R/BRANCH). */
static int own_ref(const char *name, const char *own, const char *branch)
{
	size_t n = strlen(name), b = branch ? strlen(branch) : 0;

	return !strcmp(name, own) || (b && !strncmp(name, "refs/remotes/", 13) && n > b + 13 &&
				      name[n - b - 1] == '/' && !strcmp(name + n - b, branch) &&
				      !memchr(name + 13, '/', n - b - 1 - 13));
}

static int scan_git(struct state_scan_hit *out, const struct state_scan_place *place, const char *needle,
		    const char *resource, struct vx_err *err)
{
	git_repository *repo = NULL;
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	struct vx_buf own = VX_BUF_INIT;
	int rc = 0;

	if (git_libgit2_init() < 0)
		return vx_err_set(err, VX_EIO, "reading the other states: libgit2 did not start");
	if (vx_buf_printf(&own, "refs/heads/%s", place->branch ? place->branch : "") < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (git_repository_open_ext(&repo, place->stack_dir, 0, NULL) < 0) {
		rc = gfail(err, place->stack_dir);
		goto done;
	}
	for (size_t g = 0; g < sizeof(globs) / sizeof(globs[0]) && rc == 0 && !out->address; g++) {
		if (git_reference_iterator_glob_new(&it, repo, globs[g]) < 0) {
			rc = gfail(err, globs[g]);
			goto done;
		}
		while (rc == 0 && !out->address && git_reference_next(&ref, it) == 0) {
			const char *name = git_reference_name(ref);
			git_commit *c = NULL;
			git_tree *tree = NULL;

			if (!own_ref(name, vx_buf_str(&own), place->branch) && strstr(name, "vx/state/")[9] &&
			    git_reference_type(ref) == GIT_REFERENCE_DIRECT &&
			    git_commit_lookup(&c, repo, git_reference_target(ref)) == 0 &&
			    git_commit_tree(&tree, c) == 0)
				rc = scan_tree(out, repo, tree, name, needle, resource, err);
			git_tree_free(tree);
			git_commit_free(c);
			git_reference_free(ref);
			ref = NULL;
		}
		git_reference_iterator_free(it);
		it = NULL;
	}
done:
	git_reference_iterator_free(it);
	git_repository_free(repo);
	vx_buf_release(&own);
	git_libgit2_shutdown();
	return rc;
}

/* ---- gcs ------------------------------------------------------------------- */

static int scan_gcs(struct state_scan_hit *out, const struct state_scan_place *place, const char *needle,
		    const char *resource, struct vx_err *err)
{
	char **names = NULL, *own = NULL;
	size_t n = 0;
	int rc;

	if (!(own = vx_asprintf("%s/state.json", place->prefix)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = blob_list(place->store, place->bucket, "", &names, &n, err);
	for (size_t i = 0; rc == 0 && i < n && !out->address; i++) {
		size_t len_i = strlen(names[i]);
		struct state st;
		struct vx_err pe = VX_ERR_INIT;
		char *data = NULL, *where = NULL;
		size_t len = 0;
		int64_t gen = 0;

		/* A state is PREFIX/state.json: every other object is passed over. */
		if (!strcmp(names[i], own) || len_i < 11 || strcmp(names[i] + len_i - 11, "/state.json"))
			continue;
		memset(&st, 0, sizeof(st));
		/* Gone or unreadable since listed: not a state that holds it now. */
		if (blob_read(place->store, place->bucket, names[i], &data, &len, &gen, &pe) == 0 &&
		    len <= STATE_MAX_JSON && mentions(data, len, needle) && state_from_json(&st, data, len, &pe) == 0) {
			for (size_t k = 0; k < st.nrecords && !out->address && rc == 0; k++) {
				if (!record_has(&st.records[k], resource))
					continue;
				where = vx_asprintf("gs://%s/%.*s", place->bucket,
						    (int)(strlen(names[i]) - strlen("/state.json")), names[i]);
				rc = where ? hit_set(out, st.stack ? st.stack : "?", where, st.records[k].address, err)
					   : vx_err_set(err, VX_ENOMEM, "out of memory");
			}
		}
		state_release(&st);
		vx_err_release(&pe);
		free(data);
		free(where);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(own);
	return rc < 0 ? vx_err_wrap(err, "reading the other states in gs://%s", place->bucket) : 0;
}

int state_scan_find(struct state_scan_hit *out, const struct state_scan_place *place, const char *resource,
		    struct vx_err *err)
{
	char *needle;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!(needle = vx_asprintf("\"%s\"", resource)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (place->stack_dir)
		rc = scan_git(out, place, needle, resource, err);
	else if (place->bucket && place->store && place->prefix)
		rc = scan_gcs(out, place, needle, resource, err);
	free(needle);
	if (rc < 0)
		state_scan_hit_release(out);
	return rc;
}
