#include "workflow/stateedit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "workflow/ci.h"
#include "workflow/workspace.h"

#include "util/banned.h"

/* Takes the lease (not for a dry run), loads the state, names who in every commit. */
static int begin(struct workspace *ws, const struct stateedit_opts *o, const char *operation,
		 struct vx_err *err)
{
	struct state_lock_opts lo;
	int rc;

	if (o->reason && strlen(o->reason) > STATEEDIT_REASON_MAX)
		return vx_err_set(err, VX_EINVAL, "-reason: at most %d characters", STATEEDIT_REASON_MAX);
	if (!o->dry_run) {
		memset(&lo, 0, sizeof(lo));
		lo.operation = operation;
		lo.lease_ms = o->lease_ms;
		lo.unlock_args = o->unlock_args;
		if ((rc = state_lock_acquire(ws->backend, &lo, err)) < 0)
			return rc;
	}
	if ((rc = workspace_load_state(ws, err)) < 0)
		return rc;
	if (!ws->state.serial)
		return vx_err_set(err, VX_ENOTFOUND, "stack %s has no state yet: nothing to change",
				  ws->st->name);
	return state_audit(ws->backend, o->ci->actor, o->ci->pr_url, o->ci->run_url, err);
}

/* Writes the state with message, then gives the lease back; rc is kept when it failed. */
static int finish(struct workspace *ws, const struct stateedit_opts *o, const char *message, int rc,
		  struct vx_err *err)
{
	struct vx_err e = VX_ERR_INIT;

	if (rc == 0 && !o->dry_run)
		rc = state_write(ws->backend, &ws->state, message, err);
	if (!o->dry_run && state_lock_held(ws->backend) && state_lock_drop(ws->backend, &e) < 0 && rc == 0) {
		rc = vx_err_set(err, e.code, "releasing the lease: %s", vx_err_msg(&e));
	}
	vx_err_release(&e);
	return rc;
}

/* "Reason: ..." for the commit message, cleaned; "" without one. */
static int add_reason(struct vx_buf *msg, const struct stateedit_opts *o)
{
	char *clean = o->reason && *o->reason ? vx_text_clean(o->reason) : NULL;
	int rc = 0;

	if (o->reason && *o->reason && !clean)
		return VX_ENOMEM;
	if (clean)
		rc = vx_buf_printf(msg, "\nReason: %s\n", clean);
	free(clean);
	return rc;
}

static int pending(const struct state *st, const char *address, struct vx_err *err)
{
	for (size_t i = 0; i < st->njournal; i++)
		if (!strcmp(st->journal[i].address, address))
			return vx_err_set(err, VX_ECONFLICT, "%s: an apply's %s is not confirmed yet (the journal "
					  "holds it); run vxplan and vxapply first, which find the job or plan it "
					  "again", address, st->journal[i].op);
	return 0;
}

/* Whether rm lets r's runs go: NAME is only their label (the kind's name_in_label). */
static int releases_runs(const struct state_record *r)
{
	const struct kind *k = kind_of_address(r->address);

	return k && k->name_in_label;
}

/* Keeps r's job runs from being adopted or cancelled again: their names go to released. */
static int release_runs(struct state *st, const struct state_record *r, struct vx_err *err)
{
	for (size_t i = 0; i <= r->nhistory; i++) {
		const struct state_run *run = i < r->nhistory ? &r->history[i] : r->current;
		int rc;

		if (!run || !run->resource)
			continue;
		if ((rc = state_released_add(st, run->resource)) < 0)
			return vx_err_set(err, rc, rc == VX_ENOMEM ? "out of memory"
					  : "the state already releases %d jobs, its most", STATE_MAX_RELEASED);
	}
	return 0;
}

/* One line of rm's report about r (before it goes). */
static int report_rm(struct vx_buf *rep, const struct state_record *r, int dry_run)
{
	const struct state_run *cur = r->current;
	const char *verb = dry_run ? "would remove" : "removed";

	/* A resource named NAME in Google Cloud: a plan that declares it adopts it. */
	if (!releases_runs(r))
		return vx_buf_printf(rep, "%s: %s from the state; %s is left as it is (a plan that still "
				     "declares it finds it by its name and adopts it again)\n", r->address, verb,
				     cur && cur->resource ? cur->resource : "the live resource");
	if (!cur || !cur->resource)
		return vx_buf_printf(rep, "%s: %s from the state (it has no live job)\n", r->address, verb);
	return vx_buf_printf(rep, "%s: %s from the state; its job %s (%s) is left as it is, and no plan "
			     "adopts or cancels it again\n", r->address, verb, cur->resource,
			     job_state_short(cur->state));
}

/* Whether address names record r: itself, or r is a run of the sweep (or slice) it names. */
static int names(const char *address, const struct state_record *r)
{
	return !strcmp(address, r->address) || sweep_address_matches(address, r->address);
}

int stateedit_rm(struct workspace *ws, const char *const *addrs, size_t n, const struct stateedit_opts *o,
		 char **report, struct vx_err *err)
{
	struct vx_buf rep = VX_BUF_INIT, msg = VX_BUF_INIT, body = VX_BUF_INIT;
	struct state *st = &ws->state;
	int rc;

	*report = NULL;
	if ((rc = begin(ws, o, "state rm", err)) < 0)
		goto done;
	for (size_t k = 0; k < n && rc == 0; k++) {
		size_t hit = 0;

		for (size_t i = 0; i < st->nrecords && rc == 0; i++)
			if (names(addrs[k], &st->records[i]) && !(rc = pending(st, st->records[i].address, err)))
				hit++;
		if (rc == 0 && !hit)
			rc = vx_err_set(err, VX_ENOTFOUND, "%s is not in the state of stack %s ('vx state list' "
					"lists what is)", addrs[k], ws->st->name);
	}
	if (rc < 0 || (rc = vx_buf_adds(&msg, "vx state rm:")) < 0)
		goto done;
	for (size_t i = 0; i < st->nrecords && rc == 0;) {
		const struct state_record *r = &st->records[i];
		int hit = 0;

		for (size_t k = 0; k < n && !hit; k++)
			hit = names(addrs[k], r);
		if (!hit) {
			i++;
			continue;
		}
		if (report_rm(&rep, r, o->dry_run) < 0 || vx_buf_printf(&msg, " %s", r->address) < 0 ||
		    vx_buf_printf(&body, "- %s state rm %s\n", r->address,
				  r->current && r->current->resource ? r->current->resource : "-") < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		if (releases_runs(r) && (rc = release_runs(st, r, err)) < 0)
			break;
		{
			char *address = vx_strdup(r->address);

			rc = address ? state_remove_record(st, address) : vx_err_set(err, VX_ENOMEM, "out of memory");
			free(address);
		}
	}
	if (rc == 0 && (vx_buf_printf(&msg, "\n\n%s", vx_buf_str(&body)) < 0 || add_reason(&msg, o) < 0))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	rc = finish(ws, o, vx_buf_str(&msg), rc, err);
	if (rc == 0 && !(*report = vx_strdup(vx_buf_str(&rep))))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	vx_buf_release(&rep);
	vx_buf_release(&msg);
	vx_buf_release(&body);
	return rc;
}

/* What mv refuses, before anything changes. */
static int mv_check(const struct state *st, const char *from, const char *to, struct vx_err *err)
{
	const struct kind *k = kind_of_address(from);
	int rc;

	/* Only a record whose NAME is a label may take another (the kind's name_in_label). */
	if (!k || !k->name_in_label || kind_of_address(to) != k)
		return vx_err_set(err, VX_EINVAL, "%s, %s: state mv moves jobs; a reservation's or quota "
				  "preference's NAME is its name in Google Cloud, which cannot be renamed",
				  from, to);
	if (!strchr(from, '[') != !strchr(to, '['))
		return vx_err_set(err, VX_EINVAL, "%s is %s and %s is %s: a sweep's run is named by its "
				  "matrix values and labelled so, and a job is not; move a run to another "
				  "run of a sweep, a job to a job", from, strchr(from, '[') ? "a sweep's run" : "a job",
				  to, strchr(to, '[') ? "a sweep's run" : "a job");
	if (!state_find(st, from))
		return vx_err_set(err, VX_ENOTFOUND, "%s is not in the state ('vx state list' lists what "
				  "is)", from);
	if (state_find(st, to))
		return vx_err_set(err, VX_EINVAL, "%s is already in the state: remove it first "
				  "('vx state rm %s') or choose another name", to, to);
	if ((rc = pending(st, from, err)) < 0 || (rc = pending(st, to, err)) < 0)
		return rc;
	return 0;
}

int stateedit_mv(struct workspace *ws, const char *from, const char *to, const struct stateedit_opts *o,
		 char **report, struct vx_err *err)
{
	struct vx_buf rep = VX_BUF_INIT, msg = VX_BUF_INIT;
	struct state_record moved, *r = NULL;
	const struct state_run *cur;
	int rc;

	*report = NULL;
	memset(&moved, 0, sizeof(moved));
	if ((rc = begin(ws, o, "state mv", err)) < 0 || (rc = mv_check(&ws->state, from, to, err)) < 0)
		goto done;
	if ((rc = state_record_copy(&moved, state_find(&ws->state, from))) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	cur = moved.current;
	if (vx_buf_printf(&rep, "%s -> %s: %s the record with its %zu runs%s%s%s\n", from, to,
			  o->dry_run ? "would move" : "moved", moved.nhistory + (cur != NULL),
			  cur && cur->resource ? "; the live job " : "", cur && cur->resource ? cur->resource : "",
			  cur && cur->resource ? " keeps its labels and is followed as before" : "") < 0 ||
	    vx_buf_printf(&msg, "vx state mv: %s -> %s\n\n- %s state mv %s\n", from, to, from, to) < 0 ||
	    add_reason(&msg, o) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = state_remove_record(&ws->state, from)) < 0 ||
	    (rc = state_add_record(&ws->state, to, moved.kind, &r, err)) < 0)
		goto done;
	free(moved.address);
	moved.address = r->address;
	r->address = NULL;
	state_record_release(r);
	*r = moved;
	memset(&moved, 0, sizeof(moved));
done:
	state_record_release(&moved);
	rc = finish(ws, o, vx_buf_str(&msg), rc, err);
	if (rc == 0 && !(*report = vx_strdup(vx_buf_str(&rep))))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	vx_buf_release(&rep);
	vx_buf_release(&msg);
	return rc;
}
