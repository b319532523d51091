#ifndef VX_RECONCILE_IMPORT_H
#define VX_RECONCILE_IMPORT_H

/*
 * vx import ADDR RESOURCE (Terraform's import): adopts a resource that
 * exists in the cloud into the state, under an address the stack declares.
 * One function per kind, chosen by the address's prefix (kind.h):
 *
 *	job.NAME          projects/P/locations/R/customJobs/ID
 *	reservation.NAME  projects/P/zones/Z/reservations/NAME
 *	quota.NAME        projects/P/locations/global/quotaPreferences/NAME
 *
 * The resource is read (a get for a job, the zone's or project's list for
 * the others), everything the server says is checked, and the address gets
 * a record whose current run is the resource with action "import". What
 * differs from the declaration is not refused: it is recorded as it is
 * live, so the next plan shows exactly that difference as its update or
 * replacement (Terraform imports and lets the plan show the diff), and it
 * is said in out->differs. What cannot be the address's resource is
 * refused, with nothing changed: another project, region or zone than the
 * declared one, a name that is not the address's, a resource the state
 * already tracks, one another state beside it records (another stack's
 * branch vx/state/NAME, another state in the bucket), or one that another
 * stack or state marked as its own.
 *
 * A CustomJob cannot be given labels once made (Vertex AI has no update
 * for it): one imported without vx's labels is vx's only by this state's
 * record, which out->warning says.
 */

#include <stdint.h>

#include "util/err.h"

struct provider;
struct stack;
struct state;
struct live_jobs;
struct state_scan_place;

struct import_request {
	const char *address;       /* "job.a": declared in the stack */
	const char *resource;      /* the resource name as the user gave it */
	const char *config_commit; /* recorded on the run, or NULL */
	const char *launched_by;   /* the actor (cmd/ci.h), or NULL */
	int64_t now_ms;            /* when the resource gives no creation time */
	/* The other states beside this one (state/state_scan.h), whose records
	 * must not hold the resource; NULL: none looked at (file backend). */
	const struct state_scan_place *others;
};

struct import_outcome {
	char *resource;  /* the resource as the server names it (what the state records) */
	char *status;    /* "running", "READY", "granted 8": its state in a word or two */
	char *differs;   /* "count 2 -> 3, ..." (live -> declared), or NULL when it matches */
	char *next;      /* what the next plan does about it ("the next plan will replace it"), or NULL */
	char *warning;   /* to be shown once (a job vx cannot label), or NULL */
};

void import_outcome_release(struct import_outcome *o);

/*
 * Reads the resource and, unless check_only, records it in state (one new
 * current run for the address). Refusals are VX_EINVAL (the address or the
 * resource cannot be this one), VX_ENOTFOUND (no such resource) and
 * VX_ECONFLICT (it is already tracked), with a message made to be shown as
 * is; provider errors pass through. state is unchanged on error.
 */
int import_resource(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err) VX_WUR;

/*
 * The job refresh's hook: a job imported without vx's labels is not in a
 * list by label, and would be taken for deleted outside vx. For each run
 * recorded with action "import" (current, or earlier and not seen ending)
 * that live lacks, reads it by name and adds it to live. A job gone
 * (VX_ENOTFOUND) is left out, as a list would have left it.
 */
int import_refresh_jobs(struct live_jobs *live, struct provider *p, const struct state *state,
			struct vx_err *err) VX_WUR;

#endif
