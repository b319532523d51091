#ifndef VX_RECONCILE_IMPORT_H
#define VX_RECONCILE_IMPORT_H

/*
 * vx import ADDR RESOURCE (Terraform's import): adopts a resource that
 * exists in the cloud into the state, under an address the stack declares.
 * import_resource is the same for every kind; what a kind's resource is
 * and how it is read, checked and recorded is its import slot (struct
 * kind, reconcile/kind.h), chosen by the address's prefix:
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

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

struct provider;
struct stack;
struct state;
struct live_jobs;
struct state_record;
struct state_run;
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

/* ---- for the kinds' import slots ------------------------------------------ */

/*
 * Splits "projects/P/<coll1>/A/<coll2>/B" into P, A and B (copied into the
 * buffers, len bytes each). 0, or -1 when name has another shape or a
 * segment that is empty, too long or not made of [A-Za-z0-9_.-].
 */
int import_split_name(const char *name, const char *coll1, const char *coll2, char *p, char *a, char *b,
		      size_t len);
/* Whether s is one or more decimal digits (a project number, a job id). */
int import_all_digits(const char *s);

/*
 * VX_ECONFLICT when resource is already tracked: by an address of state
 * (its current or a past run), or by another state beside it
 * (req->others), where a plan of either stack would cancel, replace or
 * delete it under the other. 0 when neither records it.
 */
int import_check_untracked(const struct state *state, const struct import_request *req, const char *resource,
			   struct vx_err *err) VX_WUR;

/*
 * What differs, live -> declared, as out->differs says it: "what live ->
 * declared" items joined by ", ", past the sixth "and N more". oom is set
 * when a step ran out of memory (the text is then not made). It starts
 * zeroed ({ 0 }); the owner releases out (vx_buf_release) whatever happened.
 */
struct import_diffs {
	struct vx_buf out;
	size_t n;
	int oom;
};

/* Adds "what live -> declared"; both are shown cleaned of control characters, NULL as "(none)". */
void import_diff_add(struct import_diffs *d, const char *what, const char *live, const char *decl);
/* d's text, owned by the caller; NULL with no difference (or out of memory). */
char *import_diff_text(struct import_diffs *d);

/*
 * Fills *run as an import records the resource: its name, project and
 * region (a zone, "global"), action "import", spec_hash, attempt 1,
 * created at created_ms (0: unknown, the request's time), the request's
 * config commit and actor. The kind adds what else it knows. VX_ENOMEM;
 * the caller releases run (state_run_release) either way.
 */
int import_run_init(struct state_run *run, const struct import_request *req, const char *resource,
		    const char *project, const char *region, const char *spec_hash, int64_t created_ms,
		    struct vx_err *err) VX_WUR;
/*
 * The record of req->address in state (*out borrows it), added with the
 * address's kind when there is none (state_add_record's errors).
 */
int import_record_of(struct state_record **out, struct state *state, const struct import_request *req,
		     struct vx_err *err) VX_WUR;

/*
 * The job refresh's hook (reconcile/kind_job_import.c): a job imported
 * without vx's labels is not in a list by label, and would be taken for
 * deleted outside vx. For each run
 * recorded with action "import" (current, or earlier and not seen ending)
 * that live lacks, reads it by name and adds it to live. A job gone
 * (VX_ENOTFOUND) is left out, as a list would have left it.
 */
int import_refresh_jobs(struct live_jobs *live, struct provider *p, const struct state *state,
			struct vx_err *err) VX_WUR;

#endif
