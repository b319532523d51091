#ifndef VX_WORKFLOW_IMPORTING_H
#define VX_WORKFLOW_IMPORTING_H

/*
 * `vx import ADDR RESOURCE`, the workflow: open the stack, check the address
 * is declared, take the lease (not for a check), load and salt the state,
 * adopt the resource (reconcile/import.h) and record it in one state commit.
 * Nothing here prints: the outcome is in struct importing for the caller.
 */

#include "reconcile/import.h"
#include "util/err.h"
#include "workflow/workspace.h"

struct blob_store;
struct ci;
struct vx_ctx;

struct importing {
	struct workspace ws;
	struct import_outcome out;  /* what the import found (and did, unless a check) */
	char *prefix;               /* gcs: the state's prefix, for the scan of the others */
	struct blob_store *store;   /* gcs: the bucket's objects, for that scan */
	char *message;              /* the state commit's message */
};

/*
 * Imports resource under address into the state of the stack in dir; with
 * check, only reads the resource and says in im->out what importing would
 * find (no lease, no write). im is overwritten. Errors are complete
 * messages ("import: ..."): VX_EINVAL for an address not declared (with the
 * nearest declared one as a hint), VX_ECONFLICT for a lease held by
 * another, else the backend's, the provider's or the import's error.
 * importing_close(im) after success or failure.
 */
int importing_run(struct importing *im, struct vx_ctx *ctx, const char *dir, const char *address,
		  const char *resource, int check, const struct ci *ci, const struct workspace_events *ev,
		  struct vx_err *err) VX_WUR;
/* Gives the lease back, closes the workspace, frees everything; im is zeroed. */
void importing_close(struct importing *im);

#endif
