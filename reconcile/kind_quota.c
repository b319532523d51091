/*
 * The quota preference kind: Cloud Quotas QuotaPreferences (quota.NAME,
 * NAME being the quotaPreferenceId).
 *
 * The API has no delete: a preference no longer declared is abandoned (vx
 * stops managing it and says so; the preference stays). An increase is
 * granted by Google in its own time: while it is reconciling with nothing
 * granted yet (Cloud Quotas then gives no grantedValue at all) or less
 * than preferred, the plan shows it as pending, with what was asked and
 * how long ago. A
 * decrease of more than 10% is refused by Google's safety checks unless the
 * declaration asks for ignoreSafetyChecks.
 */
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/import.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/provider_quota.h"
#include "reconcile/kind_quota.h"
#include "reconcile/stack.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "util/banned.h"

#define KIND_NAME "QuotaPreference"

static int used(const struct stack *st, const struct state *state)
{
	if (stack_count(st, &kind_quota))
		return 1;
	for (size_t i = 0; state && i < state->nrecords; i++)
		if (!strcmp(state->records[i].kind, KIND_NAME))
			return 1;
	return 0;
}

static struct live_quota *live_find_mut(struct live_quotas *qs, const char *id)
{
	for (size_t i = 0; qs && i < qs->n; i++)
		if (qs->items[i].id && !strcmp(qs->items[i].id, id))
			return &qs->items[i];
	return NULL;
}

/* Where a preference's quota applies: its region or zone dimension, else "global". */
static const char *quota_location(const struct stack_quota *d)
{
	for (size_t i = 0; i < d->dimensions.n; i++)
		if (!strcmp(d->dimensions.items[i].key, "region") || !strcmp(d->dimensions.items[i].key, "zone"))
			return d->dimensions.items[i].value;
	return "global";
}

/*
 * Cloud Quotas measures a decrease from the value in force: grantedValue,
 * or while none is given (an increase still pending, say) the quota's limit.
 * That limit is read here (one quotaInfos list per service) only for a
 * declared preference without a grantedValue whose preferredValue is to
 * change, the one case where it decides anything. (Not only for a value
 * below the preference's: while a decrease is pending, 10 after 8 may
 * still be more than 10% below the 16 in force.)
 */
static int limits_in_force(struct live_quotas *qs, struct provider *p, const struct stack *st,
			   struct vx_err *err)
{
	struct live_quota_limits lim = { NULL, 0 };
	const char **read = calloc(stack_count(st, &kind_quota) + 1, sizeof(*read));
	size_t nread = 0;
	int rc = 0;

	if (!read)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < stack_count(st, &kind_quota) && rc == 0; i++) {
		const struct stack_quota *d = &stack_quotas(st, NULL)[i];
		struct live_quota *l = live_find_mut(qs, d->d.name);
		size_t k;

		if (!l || l->has_granted || d->preferred_value < 0 || d->preferred_value == l->preferred ||
		    !PROVIDER_HAS(p, quota, list_infos))
			continue;
		for (k = 0; k < nread && strcmp(read[k], d->service); k++)
			;
		if (k == nread) {
			read[nread++] = d->service;
			if ((rc = provider_quota_list_infos(p, st->project, d->service, &lim, err)) < 0) {
				rc = vx_err_wrap(err, "%s: reading the limits of %s", d->d.address, d->service);
				break;
			}
		}
		if (live_quota_limits_find(&lim, d->service, d->quota_id, quota_location(d), &l->limit) == 0)
			l->has_limit = 1;
	}
	live_quota_limits_release(&lim);
	free(read);
	return rc;
}

/* One paginated list of the project's preferences; none without any declared or recorded. */
static int quota_refresh(struct live_store *out, struct provider *p, const struct stack *st,
			 const struct state *state, struct vx_err *err)
{
	struct live_quotas *qs;
	int rc;

	if (!used(st, state))
		return 0;
	if (!(qs = kind_live_slot(out, &kind_quota)) || live_store_note(out, 0, "quota preferences") < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!PROVIDER_HAS(p, quota, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list quota preferences");
	rc = provider_quota_list(p, st->project, qs, err);
	if (rc < 0)
		return vx_err_wrap(err, "reading quota preferences of %s", st->project);
	return limits_in_force(qs, p, st, err);
}

static const struct live_quota *live_find(const struct live_set *live, const char *id)
{
	const struct live_quotas *qs = kind_live(live, &kind_quota);

	for (size_t i = 0; qs && i < qs->n; i++)
		if (qs->items[i].id && !strcmp(qs->items[i].id, id))
			return &qs->items[i];
	return NULL;
}

static char *describe(const struct plan_action *act)
{
	const struct stack_quota *d = act->kdecl;
	const struct live_quota *l = act->klive;
	const char *service = d ? d->service : l ? l->service : NULL;
	const char *quota = d ? d->quota_id : l ? l->quota_id : NULL;
	/* No declaration (an abandon): the preference as it is live, in the same words. */
	const struct vx_label *dims = d ? d->dimensions.items : l ? l->dimensions : NULL;
	size_t ndims = d ? d->dimensions.n : l ? l->ndimensions : 0;
	struct vx_buf b = VX_BUF_INIT;
	int rc;

	if (!quota)
		return NULL;
	rc = vx_buf_printf(&b, "%s %s", service ? service : "?", quota);
	for (size_t i = 0; rc == 0 && i < ndims; i++)
		rc = vx_buf_printf(&b, "%s%s=%s", i ? ", " : " (", dims[i].key, dims[i].value);
	if (rc == 0 && ndims)
		rc = vx_buf_addc(&b, ')');
	if (rc == 0 && (d || l))
		rc = vx_buf_printf(&b, ": %" PRId64, d ? d->preferred_value : l->preferred);
	if (rc == 0 && l && l->has_granted)
		rc = vx_buf_printf(&b, " (granted %" PRId64 ")", l->granted);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

static struct plan_action *add(struct plan *p, enum plan_op k, const char *address,
			       const struct stack_quota *d, const struct live_quota *l,
			       const struct state_record *r)
{
	struct plan_action *a = plan_add_kind_action(p, k, &kind_quota, address, d, l, r);

	if (!a)
		return NULL;
	a->has_values = 1;
	a->old_value = l ? l->preferred : -2;
	a->new_value = d ? d->preferred_value : -2;
	a->shape = describe(a);
	return a;
}

/* Notes a preferredValue changed outside vx, as a reservation's count is (kind_reservation.c). */
static int drift(struct plan *p, struct plan_action *a, int64_t recorded, int64_t live)
{
	char *text = vx_asprintf("preferredValue changed outside vx: %" PRId64 " recorded, %" PRId64 " live",
				 recorded, live);

	return plan_action_drift(p, a, text);
}

/* Whether Google grants less than preferred: partial or denied. */
static int short_of(const struct live_quota *l)
{
	return l->has_granted && l->preferred >= 0 && l->granted < l->preferred;
}

/*
 * "16 requested, pending for 2h05m: nothing granted yet" or "8 granted, 16
 * requested, pending for 2h05m". While a request is reconciling Cloud
 * Quotas gives no grantedValue at all (it is not 0, it is undecided), so a
 * preference without one is pending, not done. The wait is counted from
 * the request's updateTime (else createTime) to the plan's clock, and left
 * out when either is unknown.
 */
static char *pending_text(const struct live_quota *l, int64_t now_ms)
{
	char d[24] = "";
	int known = l->requested_ms > 0 && now_ms >= l->requested_ms;

	if (known)
		status_duration(d, now_ms - l->requested_ms);
	if (l->has_granted)
		return vx_asprintf("%" PRId64 " granted, %" PRId64 " requested, pending%s%s%s%s", l->granted,
				   l->preferred, known ? " for " : "", d, l->state_detail ? ": " : "",
				   l->state_detail ? l->state_detail : "");
	return vx_asprintf("%" PRId64 " requested, pending%s%s: nothing granted yet (Google has not decided)%s%s",
			   l->preferred, known ? " for " : "", d, l->state_detail ? ": " : "",
			   l->state_detail ? l->state_detail : "");
}

/*
 * What Cloud Quotas measures a decrease from: grantedValue, else the
 * quota's limit, else (neither known) the preference's own value.
 */
static int64_t in_force(const struct live_quota *l)
{
	return l->has_granted ? l->granted : l->has_limit ? l->limit : l->preferred;
}

/*
 * The preference was changed outside vx (raised in the console, say) and
 * the declaration, applied, would be a decrease Cloud Quotas refuses: the
 * change outside comes first (the update with its drift, counted in the
 * summary, as a reservation's), then the error saying what applying the
 * declaration needs.
 */
static int drifted_decrease(struct plan *p, const struct stack_quota *d, const struct live_quota *l,
			    const struct state_record *r)
{
	struct plan_action *a = add(p, PLAN_UPDATE, d->d.address, d, l, r);
	int rc;

	if (!a)
		return VX_ENOMEM;
	rc = plan_action_reason(a, vx_asprintf("preferredValue %" PRId64 " -> %" PRId64 " (a decrease Cloud Quotas refuses "
					       "without ignoreSafetyChecks: see the errors)",
					       l->preferred, d->preferred_value));
	if (rc == 0)
		rc = drift(p, a, r->current->value, l->preferred);
	if (rc == 0 && vx_diags_add(&p->errors, NULL, 0, 0,
				    "%s: preferredValue was changed outside vx to %" PRId64 " (%" PRId64 " recorded); "
				    "applying the declared %" PRId64 " would lower the %" PRId64 " in force (%s) by "
				    "more than 10%%, which Cloud Quotas refuses unless asked: declare %" PRId64 " to "
				    "keep the change, or set ignoreSafetyChecks: true in the declaration to go back "
				    "to %" PRId64 " (and remove it once applied)", d->d.address, l->preferred,
				    r->current->value, d->preferred_value, in_force(l),
				    l->has_granted ? "granted" : l->has_limit ? "the quota's limit" : "its preferredValue",
				    l->preferred, d->preferred_value) < 0)
		rc = VX_ENOMEM;
	return rc;
}

static int plan_declared(struct plan *p, const struct kind_plan_input *in, const void *decl, void *ud)
{
	const struct stack_quota *d = decl;
	const struct state_record *r = state_find(in->state, d->d.address);
	const struct live_quota *l = live_find(in->live, d->d.name);
	struct plan_action *a;
	int drifted, rc;

	(void)ud;

	if (!in->live) {
		a = add(p, r ? PLAN_NOOP : PLAN_CREATE, d->d.address, d, NULL, r);
		return a ? plan_action_reason(a, vx_strdup(r ? "refresh off: not read" : "new quota preference")) : VX_ENOMEM;
	}
	if (!l) {
		a = add(p, PLAN_CREATE, d->d.address, d, NULL, r);
		return a ? plan_action_reason(a, vx_strdup("new quota preference")) : VX_ENOMEM;
	}
	if (strcmp(l->service ? l->service : "", d->service) != 0 ||
	    strcmp(l->quota_id ? l->quota_id : "", d->quota_id) != 0)
		return vx_diags_add(&p->errors, NULL, 0, 0,
				    "%s: the preference %s exists for %s %s, not %s %s: a preference cannot "
				    "change its quota; give the declaration another name", d->d.address,
				    d->d.name, l->service ? l->service : "?", l->quota_id ? l->quota_id : "?",
				    d->service, d->quota_id) < 0 ? VX_ENOMEM : 0;
	/* What the state recorded as applied, changed since by someone else (console, gcloud). */
	drifted = r && r->current && r->current->has_value && r->current->value != l->preferred;
	if (l->preferred != d->preferred_value ||
	    (d->contact_email && !(l->contact_email && !strcmp(l->contact_email, d->contact_email)) &&
	     l->contact_email)) {
		/* A decrease of more than 10% of the value in force trips Google's safety checks. */
		if (d->preferred_value >= 0 && in_force(l) > 0 &&
		    d->preferred_value * 10 < in_force(l) * 9 && !d->ignore_safety_checks && drifted)
			return drifted_decrease(p, d, l, r);
		if (d->preferred_value >= 0 && in_force(l) > 0 &&
		    d->preferred_value * 10 < in_force(l) * 9 && !d->ignore_safety_checks)
			return vx_diags_add(&p->errors, NULL, 0, 0,
					    "%s: preferredValue %" PRId64 " is more than 10%% below the %" PRId64
					    " in force (%s; %" PRId64 " requested), which Cloud Quotas refuses "
					    "unless asked: set ignoreSafetyChecks: true in the declaration if that "
					    "decrease is meant, and remove it once applied", d->d.address,
					    d->preferred_value, in_force(l),
					    l->has_granted ? "granted" : l->has_limit ? "the quota's limit"
									 : "its preferredValue",
					    l->preferred) < 0 ? VX_ENOMEM : 0;
		a = add(p, r ? PLAN_UPDATE : PLAN_ADOPT, d->d.address, d, l, r);
		if (!a)
			return VX_ENOMEM;
		if (!r)
			return plan_action_reason(a, vx_asprintf("a preference %s exists: adopted, then preferredValue "
								 "%" PRId64 " -> %" PRId64,
								 d->d.name, l->preferred,
								 d->preferred_value));
		rc = plan_action_reason(a, vx_asprintf("preferredValue %" PRId64 " -> %" PRId64, l->preferred,
						       d->preferred_value));
		return rc == 0 && drifted ? drift(p, a, r->current->value, l->preferred) : rc;
	}
	if (!r) {
		a = add(p, PLAN_ADOPT, d->d.address, d, l, r);
		return a ? plan_action_reason(a, vx_asprintf("a preference %s with this value exists: adopted", d->d.name))
			 : VX_ENOMEM;
	}
	if (l->reconciling && (!l->has_granted || short_of(l))) {
		a = add(p, PLAN_PENDING, d->d.address, d, l, r);
		return a ? plan_action_reason(a, pending_text(l, in->now_ms)) : VX_ENOMEM;
	}
	if (short_of(l)) {
		a = add(p, PLAN_NOOP, d->d.address, d, l, r);
		if (!a)
			return VX_ENOMEM;
		return plan_action_reason(a, vx_asprintf("%" PRId64 " granted, %" PRId64 " requested, not granted in full%s%s",
							 l->granted, l->preferred, l->state_detail ? ": " : "",
							 l->state_detail ? l->state_detail : ""));
	}
	/* Changed outside vx to what is declared now: nothing to do, and no drift to report on
	 * every plan from now on, as no apply would record anything to end it. */
	a = add(p, PLAN_NOOP, d->d.address, d, l, r);
	return a ? 0 : VX_ENOMEM;
}

/* Cloud Quotas has no delete: a preference no longer declared is abandoned. */
static int plan_removed(struct plan *p, const struct kind_plan_input *in, const struct state_record *r, void *ud)
{
	struct plan_action *a = add(p, PLAN_ABANDON, r->address, NULL, live_find(in->live, strchr(r->address, '.') + 1), r);

	(void)ud;
	if (!a || plan_action_reason(a, vx_strdup("no longer declared: Cloud Quotas has no delete, so vx stops "
						  "managing it; the preference stays as it is")) < 0)
		return VX_ENOMEM;
	return 0;
}

static int quota_plan(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err)
{
	static const struct kind_plan_steps how = { "quota preferences", plan_declared, plan_removed, NULL };

	return kind_plan_each(&kind_quota, &how, &pl->plan, in, NULL, err);
}

/* ---- apply ------------------------------------------------------------- */

static int record_run(struct applier *a, const struct plan_action *pa, const char *action,
		      const struct live_quota *l, struct vx_err *err)
{
	const struct stack_quota *d = pa->kdecl;
	struct state_run run;

	memset(&run, 0, sizeof(run));
	run.resource = vx_strdup(l ? l->name : NULL);
	run.region = vx_strdup("global");
	run.action = vx_strdup(action);
	run.state = vx_strdup(l && l->reconciling ? "RECONCILING" : "ACTIVE");
	run.error_message = vx_strdup(l ? l->state_detail : NULL);
	run.value = d ? d->preferred_value : l ? l->preferred : 0;
	return applier_record_action(a, pa->address, KIND_NAME, d ? d->d.hash : NULL, &run, err);
}

static int send(struct applier *a, const struct plan_action *pa, int update, struct vx_err *err)
{
	const struct stack_quota *d = pa->kdecl;
	const struct live_quota *l = pa->klive;
	struct provider_quota_request req;
	struct live_quota got;
	struct vx_err e = VX_ERR_INIT;
	int rc;

	memset(&req, 0, sizeof(req));
	memset(&got, 0, sizeof(got));
	req.project = a->opts->project;
	req.id = d->d.name;
	req.service = d->service;
	req.quota_id = d->quota_id;
	req.dimensions = d->dimensions.items;
	req.ndimensions = d->dimensions.n;
	req.preferred = d->preferred_value;
	req.contact_email = d->contact_email;
	req.justification = d->justification;
	req.etag = update && l ? l->etag : NULL;
	req.ignore_safety_checks = d->ignore_safety_checks;
	req.fence = applier_fence(a);
	rc = update ? provider_quota_update(a->prov, &req, &got, &e)
		    : provider_quota_create(a->prov, &req, &got, &e);
	if (rc < 0) {
		live_quota_release(&got);
		if (applier_fenced(a)) {
			vx_err_release(&e);
			return applier_fence_stop(a, err);
		}
		applier_fail(a, pa->address, update ? "update" : "create", &e);
		applier_mark_failed(a, pa->address);
		vx_err_release(&e);
		return 0;
	}
	vx_err_release(&e);
	rc = record_run(a, pa, update ? "update" : "create", &got, err);
	if (rc == 0) {
		a->res->ok++;
		if (update)
			applier_progress(a, "~ %s update preferredValue %" PRId64 " -> %" PRId64, pa->address,
					 l ? l->preferred : 0, d->preferred_value);
		else
			applier_progress(a, "+ %s create %s (preferredValue %" PRId64 ")", pa->address,
					 got.name ? got.name : d->d.name, d->preferred_value);
	}
	live_quota_release(&got);
	return rc;
}

static int quota_apply(struct applier *a, int removals, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < a->plan->n && rc == 0 && !a->res->fenced; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_quota)
			continue;
		if (removals) {
			if (pa->op == PLAN_ABANDON) {
				/* The abandon is recorded as the record's last run, then the record goes. */
				if ((rc = record_run(a, pa, "abandon", pa->klive, err)) < 0)
					break;
				applier_progress(a, "- %s abandon (the preference stays; vx no longer manages it)",
						 pa->address);
				if ((rc = applier_persist(a, "vx: apply: quota preferences abandoned", err)) < 0)
					break;
				(void)state_remove_record(a->state, pa->address);
				applier_progress(a, "- %s forget", pa->address);
				a->res->ok++;
			}
			continue;
		}
		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped++;
			continue;
		}
		if (pa->op == PLAN_CREATE)
			rc = send(a, pa, 0, err);
		else if (pa->op == PLAN_UPDATE || (pa->op == PLAN_ADOPT && pa->klive &&
			 ((const struct live_quota *)pa->klive)->preferred !=
				 ((const struct stack_quota *)pa->kdecl)->preferred_value))
			rc = send(a, pa, 1, err);
		else if (pa->op == PLAN_ADOPT) {
			rc = record_run(a, pa, "adopt", pa->klive, err);
			if (rc == 0) {
				a->res->ok++;
				applier_progress(a, "~ %s adopt", pa->address);
			}
		}
	}
	if (rc == 0)
		rc = applier_persist(a, removals ? "vx: apply: quota preferences abandoned"
					 : "vx: apply: quota preferences", err);
	return rc;
}

/* ---- vx import (the kind's import slot, reconcile/import.h) ---------------- */

/*
 * Checks the resource name against the address and reads the preference
 * (the project's list) into qs, *out pointing at it in qs.
 */
static int quota_import_read(const struct live_quota **out, struct live_quotas *qs, struct provider *p,
			     const struct stack *st, const struct import_request *req, const char *name,
			     struct vx_err *err)
{
	/* Each part as long as the whole name may be. */
	char proj[128], loc[128], id[128];
	int rc;

	*out = NULL;
	if (import_split_name(req->resource, "locations", "quotaPreferences", proj, loc, id, sizeof(proj)) < 0 ||
	    strcmp(loc, "global"))
		return vx_err_set(err, VX_EINVAL,
				  "%s takes a Cloud Quotas preference, "
				  "projects/PROJECT/locations/global/quotaPreferences/ID, not '%s'",
				  req->address, req->resource);
	/* Cloud Quotas names by project number; the preference is read in the declared project. */
	if (strcmp(proj, st->project) && !import_all_digits(proj))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(id, name))
		return vx_err_set(err, VX_EINVAL, "%s: the preference must have the id %s, as the address has, not %s",
				  req->address, name, id);
	if (!PROVIDER_HAS(p, quota, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list quota preferences");
	if ((rc = provider_quota_list(p, st->project, qs, err)) < 0) {
		/* vx_err_wrap returns err's code, negative (the analyzer cannot see it). */
		rc = vx_err_wrap(err, "%s: reading quota preferences of %s", req->address, st->project);
		return rc < 0 ? rc : VX_EIO;
	}
	for (size_t i = 0; i < qs->n && !*out; i++)
		if (qs->items[i].id && !strcmp(qs->items[i].id, name))
			*out = &qs->items[i];
	if (!*out)
		return vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
	return 0;
}

/* Whether the preference may be this address's: tracked nowhere yet, and for the declared quota. */
static int quota_import_owner(const struct live_quota *l, const struct state *state, const struct stack_quota *d,
			      const struct import_request *req, struct vx_err *err)
{
	char *s, *q;
	int rc;

	if ((rc = import_check_untracked(state, req, l->name, err)) < 0)
		return rc;
	/* A preference cannot change its quota: the next plan could only refuse. */
	if (l->service && l->quota_id && !strcmp(l->service, d->service) && !strcmp(l->quota_id, d->quota_id))
		return 0;
	s = vx_text_clean(l->service ? l->service : "?");
	q = vx_text_clean(l->quota_id ? l->quota_id : "?");
	rc = vx_err_set(err, VX_EINVAL,
			"%s: %s is a preference for %s %s, but %s declares %s %s; a preference cannot change its quota",
			req->address, l->name, s ? s : "?", q ? q : "?", req->address, d->service, d->quota_id);
	free(s);
	free(q);
	return rc;
}

/* The differences, live -> declared, into *df; *dims_differ set when the dimensions do. */
static void quota_import_diffs(struct import_diffs *df, int *dims_differ, const struct live_quota *l,
			       const struct stack_quota *d)
{
	struct vx_buf ld = VX_BUF_INIT, dd = VX_BUF_INIT;
	char a[32], b[32];

	for (size_t i = 0; i < l->ndimensions; i++)
		if (vx_buf_printf(&ld, "%s%s=%s", i ? "," : "", l->dimensions[i].key, l->dimensions[i].value) < 0)
			df->oom = 1;
	for (size_t i = 0; i < d->dimensions.n; i++)
		if (vx_buf_printf(&dd, "%s%s=%s", i ? "," : "", d->dimensions.items[i].key,
				  d->dimensions.items[i].value) < 0)
			df->oom = 1;
	if (strcmp(vx_buf_str(&ld), vx_buf_str(&dd))) {
		import_diff_add(df, "dimensions", ld.len ? vx_buf_str(&ld) : "(none)",
				dd.len ? vx_buf_str(&dd) : "(none)");
		*dims_differ = 1;
	}
	if (l->preferred != d->preferred_value) {
		snprintf(a, sizeof(a), "%" PRId64, l->preferred);
		snprintf(b, sizeof(b), "%" PRId64, d->preferred_value);
		import_diff_add(df, "preferredValue", a, b);
	}
	if (d->contact_email && l->contact_email && strcmp(l->contact_email, d->contact_email))
		import_diff_add(df, "contactEmail", l->contact_email, d->contact_email);
	vx_buf_release(&ld);
	vx_buf_release(&dd);
}

/* What import says of the preference: its name, what is granted, and how it differs. */
static int quota_import_outcome(struct import_outcome *out, const struct live_quota *l, const struct stack_quota *d,
				struct vx_err *err)
{
	struct import_diffs df = { 0 };
	int dims_differ = 0, rc = 0;

	quota_import_diffs(&df, &dims_differ, l, d);
	if (df.oom) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	out->differs = import_diff_text(&df);
	if (out->differs && dims_differ)
		out->next = vx_strdup("Cloud Quotas cannot change a preference's dimensions: the next plan does not either");
	else if (out->differs)
		out->next = vx_strdup("the next plan will update it");
	out->resource = vx_strdup(l->name);
	if (l->has_granted)
		out->status = vx_asprintf("granted %" PRId64 "%s", l->granted, l->reconciling ? ", reconciling" : "");
	else
		out->status = vx_strdup(l->reconciling ? "reconciling" : "active");
	if (!out->resource || !out->status || (out->differs && !out->next))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	vx_buf_release(&df.out);
	return rc;
}

/* The record of the preference, with one run: the import. */
static int quota_import_record(const struct live_quota *l, const struct stack_quota *d, struct state *state,
			       const struct stack *st, const struct import_request *req, struct vx_err *err)
{
	struct state_record *r = NULL;
	struct state_run run;
	int rc;

	if ((rc = import_run_init(&run, req, l->name, st->project, "global", d->d.hash, 0, err)) < 0)
		goto done;
	run.state = vx_strdup(l->reconciling ? "RECONCILING" : "ACTIVE");
	run.error_message = vx_text_clean(l->state_detail ? l->state_detail : "");
	if (run.error_message && !*run.error_message) {
		free(run.error_message);
		run.error_message = NULL;
	}
	run.has_value = 1;
	run.value = l->preferred;
	if ((rc = import_record_of(&r, state, req, err)) < 0)
		goto done;
	free(r->spec_hash);
	r->spec_hash = vx_strdup(d->d.hash);
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	return rc;
}

static int quota_import(struct import_outcome *out, struct state *state, struct provider *p,
			const struct stack *st, const struct import_request *req, int check_only,
			struct vx_err *err)
{
	const char *name = strchr(req->address, '.') + 1;
	const struct stack_quota *d = stack_find_quota(st, name);
	struct live_quotas qs = { 0 };
	const struct live_quota *l = NULL;
	int rc;

	if ((rc = quota_import_read(&l, &qs, p, st, req, name, err)) == 0 &&
	    (rc = quota_import_owner(l, state, d, req, err)) == 0 && (rc = quota_import_outcome(out, l, d, err)) == 0 &&
	    !check_only)
		rc = quota_import_record(l, d, state, st, req, err);
	live_quotas_release(&qs);
	return rc;
}

/* ---- vx status (the kind's status_rows slot, reconcile/status.h) ----------- */

/* A preference's state as vx status shows it: RECONCILING, else GRANTED when all is granted, else PENDING. */
static const char *status_word(const struct live_quota *lq)
{
	if (lq->reconciling)
		return "RECONCILING";
	return lq->has_granted && (lq->granted >= lq->preferred || lq->granted < 0) ? "GRANTED" : "PENDING";
}

static const struct status_values quota_status_values = { "preferred", "granted", "preferred", "granted" };

/* One row per declared preference: what the project's listing says of it. */
static int quota_status_rows(struct status_report *out, const struct status_input *in)
{
	const struct stack *st = in->st;

	for (size_t i = 0; i < stack_count(st, &kind_quota); i++) {
		const struct stack_quota *d = &stack_quotas(st, NULL)[i];
		const struct live_quota *lq = live_find(in->live, d->d.name);
		struct status_row *row = status_row_add(out, kind_quota.prefix, d->d.address);

		if (!row || !(row->region = vx_strdup("global")))
			return VX_ENOMEM;
		row->values = &quota_status_values;
		if (!lq) {
			row->tracking = status_declared_tracking(in, d->d.address);
			continue;
		}
		row->listed = 1;
		row->has_value = 1;
		row->value = lq->preferred;
		row->has_value2 = lq->has_granted;
		row->value2 = lq->granted;
		row->state = vx_strdup(status_word(lq));
		if (!row->state || (lq->name && !(row->resource = vx_text_clean(lq->name))))
			return VX_ENOMEM;
	}
	return 0;
}

static void quota_live_release(void *live)
{
	live_quotas_release(live);
}

/* The declared preference for service's quota_id in region (the first), with its live one. */
static int quota_limit_request(const struct stack *st, const struct live_set *live, const char *service,
			       const char *quota_id, const char *region, struct kind_limit_request *out)
{
	const struct live_quotas *lq = kind_live(live, &kind_quota);
	size_t n;
	const struct stack_quota *qs = stack_quotas(st, &n);

	for (size_t i = 0; i < n; i++) {
		const struct stack_quota *q = &qs[i];
		const char *r = stack_labels_get(&q->dimensions, "region");

		if (strcmp(q->service, service) != 0 || strcmp(q->quota_id, quota_id) != 0 ||
		    (r && strcmp(r, region) != 0))
			continue;
		out->address = q->d.address;
		out->requested = q->preferred_value;
		for (size_t k = 0; lq && k < lq->n && !out->listed; k++)
			if (!strcmp(lq->items[k].id, q->d.name)) {
				out->listed = 1;
				out->reconciling = lq->items[k].reconciling;
				out->preferred = lq->items[k].preferred;
				out->has_granted = lq->items[k].has_granted;
				out->granted = lq->items[k].granted;
			}
		return 1;
	}
	return 0;
}

/* A preference's request, while Cloud Quotas reconciles it, and once decided. */
static int quota_decision(const struct plan_action *a, struct kind_decision *out)
{
	const struct live_quota *l = a->klive;

	if (!l)
		return 0;
	out->pending = l->reconciling;
	out->asked = l->preferred;
	out->has_got = l->has_granted;
	out->got = l->granted;
	out->granted = l->has_granted && l->granted >= l->preferred;
	return 1;
}

const struct kind kind_quota = {
	.name = KIND_NAME,
	.prefix = "quota",
	.rfc1035_names = 1,
	.refresh = quota_refresh,
	.plan = quota_plan,
	.apply = quota_apply,
	.cost = KIND_COST_NONE,
	.noun = "quota preference",
	.noun_plural = "quota preferences",
	.decl_size = sizeof(struct stack_quota),
	.import = quota_import,
	.status_rows = quota_status_rows,
	.live_size = sizeof(struct live_quotas),
	.live_release = quota_live_release,
	.decision = quota_decision,
	.limit_request = quota_limit_request,
	.load_alloc = kind_quota_load_alloc,
	.load_read = kind_quota_load_read,
	.decl_hash = kind_quota_decl_hash,
	.decl_release = kind_quota_decl_release,
	.import_form = "projects/P/locations/global/quotaPreferences/NAME",
	.policy_allow = "quotaPreferences",
};
