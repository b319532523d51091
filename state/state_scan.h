#ifndef VX_STATE_STATE_SCAN_H
#define VX_STATE_STATE_SCAN_H

/*
 * The other states kept in the same place as this one, and whether one of
 * them records a resource: vx import must not adopt a resource another
 * stack already owns, since a plan of either would then cancel, replace or
 * delete it under the other.
 *
 *	git: the branches refs/heads/vx/state/NAME of the repository holding
 *	     stack_dir, and what it tracks of a remote's
 *	     (refs/remotes/R/vx/state/NAME), but this state's own branch and
 *	     its copies (a state kept on a branch named otherwise is not seen);
 *	gcs: every object NAME/state.json of the bucket, but this state's
 *	     own prefix.
 *
 * Nothing is loaded whole: each record (git: jobs/NAME.json and the like;
 * gcs: the state object) is searched for the resource's name as a JSON
 * string first, and parsed only when it holds it, to tell a run's
 * resource from a mention elsewhere. What is read is untrusted: sizes are
 * capped and a record that does not parse is skipped, as a record of
 * another version of vx may not.
 */

#include "util/err.h"

struct blob_store;

struct state_scan_place {
	const char *stack_dir;          /* git: a directory inside the repository, else NULL */
	const char *branch;             /* git: this state's branch ("vx/state/NAME") */
	const char *bucket;             /* gcs: the bucket, else NULL */
	const char *prefix;             /* gcs: this state's prefix ("vx/state/NAME") */
	struct blob_store *store;	/* gcs: borrowed (state/blobstore.h) */
};

/* Where another state records a resource. Owned strings. */
struct state_scan_hit {
	char *stack;   /* that state's stack ("other") */
	char *where;   /* "refs/heads/vx/state/other", "gs://bucket/vx/state/other" */
	char *address; /* the address recording it there ("job.b"); NULL: none found */
};

void state_scan_hit_release(struct state_scan_hit *h);

/*
 * Looks for resource in the current or past runs of every other state of
 * place: 0 with out->address set at the first found, or NULL when none
 * does. VX_EIO (git) or the storage error (gcs) when the place cannot be
 * read; VX_ENOMEM.
 */
int state_scan_find(struct state_scan_hit *out, const struct state_scan_place *place, const char *resource,
		    struct vx_err *err) VX_WUR;

#endif
