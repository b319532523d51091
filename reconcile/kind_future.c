/*
 * The future reservation kind: a booking of GPU VMs for a window, in
 * Compute Engine's future reservations (future_reservation.NAME). Calendar
 * mode (Dynamic Workload Scheduler) is one with reservationMode CALENDAR.
 * docs/future-reservations.md holds the API facts and the careful readings
 * taken here: a submitted booking is never amended (any change of its
 * request is "cancel and book again", shown as such), it is cancelled only
 * before it locks, and deleted once cancelled, refused, failed or ended.
 *
 * Like reservations, future reservations have no labels: vx marks its own
 * in the description ("vx: stack=S lineage=L") and never cancels nor
 * deletes one it cannot prove is this state's (the marker, or the state
 * knowing it). An insert is journaled with its requestId before it is
 * sent; after a crash the next plan adopts the booking it finds by name and
 * marker, so a kill never makes two. This file: the row, refresh and plan;
 * kind_future_apply.c: apply and import; kind_future_load.c: declarations.
 */
#include "reconcile/kind_future_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/plan.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/planner.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/banned.h"

char *future_marker(const char *stack, const char *lineage)
{
	return vx_asprintf("vx: stack=%s lineage=%s", stack, lineage);
}

int future_has_marker(const struct live_future *l, const char *mark)
{
	const char *d = l->description;
	size_t n = strlen(mark), dn;

	if (!d)
		return 0;
	dn = strlen(d);
	return dn >= n && !strcmp(d + dn - n, mark) && (dn == n || d[dn - n - 1] == ' ');
}

void future_record_place(const struct state_record *r, const struct stack *st, const char **project,
			 const char **zone)
{
	*project = r && r->current && r->current->project ? r->current->project : st->project;
	*zone = r && r->current ? r->current->region : NULL;
}

const struct live_future *future_live_find(const struct live_set *live, const char *zone, const char *name)
{
	const struct live_futures *fs = kind_live(live, &kind_future);

	for (size_t i = 0; fs && zone && i < fs->n; i++)
		if (!strcmp(fs->items[i].name, name) && fs->items[i].zone && !strcmp(fs->items[i].zone, zone))
			return &fs->items[i];
	return NULL;
}

/* ---- the procurement status, by docs/future-reservations.md's table ---- */

static int status_is(const char *s, const char *const *set)
{
	for (size_t i = 0; s && set[i]; i++)
		if (!strcmp(s, set[i]))
			return 1;
	return 0;
}

/* Google decided against it, or it was cancelled: nothing will be delivered. */
int fr_status_dead(const char *s)
{
	static const char *const set[] = { "DECLINED", "CANCELLED", "FAILED", NULL };

	return status_is(s, set);
}

/* Locked: no change and no cancel accepted (PROCURING on). */
int fr_status_locked(const char *s)
{
	static const char *const set[] = { "PROCURING", "PROVISIONING", "FULFILLED", "FAILED_PARTIALLY_FULFILLED",
					   "COMMITTED", NULL };

	return status_is(s, set);
}

int future_needs_opening(const struct live_future *l)
{
	const char *s = l->procurement_status;

	return l->n_auto_created && !l->vertex_open && !l->delivered_gone && s &&
	       (!strcmp(s, "PROVISIONING") || !strcmp(s, "FULFILLED") || !strcmp(s, "FAILED_PARTIALLY_FULFILLED"));
}

/* What the status means and what happens next, in words. */
char *future_status_next(const struct live_future *l)
{
	const char *s = l->procurement_status ? l->procurement_status : "unknown";

	if (!strcmp(s, "PENDING_APPROVAL") || !strcmp(s, "PENDING_AMENDMENT_APPROVAL"))
		return vx_asprintf("%s: Google reviews the request; next: approved or declined", s);
	if (!strcmp(s, "DRAFTING"))
		return vx_asprintf("%s: a draft, not submitted for review", s);
	if (!strcmp(s, "APPROVED"))
		return vx_asprintf("%s: Google delivers the capacity when the window opens", s);
	if (!strcmp(s, "PROCURING"))
		return vx_asprintf("%s: locked (no change or cancel accepted); delivered when the window opens", s);
	if (!strcmp(s, "PROVISIONING"))
		return vx_asprintf("%s: the window is open; its reservations are being made", s);
	if (l->delivered_gone)
		return vx_asprintf("%s: reservation %s is gone (Google deletes it when the window closes)", s,
				   l->auto_created[0]);
	if (!strcmp(s, "FULFILLED"))
		return vx_asprintf("%s: %" PRId64 " VMs delivered in reservation %s until the window closes", s,
				   l->total_count, l->n_auto_created ? l->auto_created[0] : "?");
	if (!strcmp(s, "DECLINED"))
		return vx_asprintf("%s: Google refused the request; vx does not ask again by itself "
				   "(plan with -replace to book again)",
				   s);
	if (!strcmp(s, "FAILED") || !strcmp(s, "FAILED_PARTIALLY_FULFILLED"))
		return vx_asprintf("%s: Google could not deliver %s; vx does not ask again by itself", s,
				   !strcmp(s, "FAILED") ? "the capacity" : "all of it");
	if (!strcmp(s, "CANCELLED"))
		return vx_asprintf("%s: nothing will be delivered", s);
	return vx_asprintf("%s: a status vx does not know; nothing is assumed", s);
}

/* ---- refresh ---- */

/* Whether every delivered reservation of f is in rs with serviceShareType ALLOW_ALL; *gone:
 * none of them is in rs. */
static int delivered_open(const struct live_future *f, const struct live_reservations *rs, int *gone)
{
	size_t open = 0, listed = 0;

	for (size_t i = 0; i < f->n_auto_created; i++)
		for (size_t k = 0; k < rs->n; k++)
			if (!strcmp(rs->items[k].name, f->auto_created[i])) {
				listed++;
				open += rs->items[k].share_type && !strcmp(rs->items[k].share_type, "ALLOW_ALL");
				break;
			}
	*gone = f->n_auto_created && !listed;
	return f->n_auto_created && open == f->n_auto_created;
}

/*
 * The bookings of all from index from on that have delivered reservations:
 * whether Vertex AI may use them, from one list of the zone's reservations.
 */
static int refresh_delivered(struct live_store *out, struct live_futures *all, size_t from, struct provider *p,
			     const char *project, const char *zone, struct vx_err *err)
{
	struct live_reservations rs = { 0 };
	char *what;
	size_t i = from;
	int rc;

	while (i < all->n && !all->items[i].n_auto_created)
		i++;
	if (i == all->n)
		return 0;
	if (!(what = vx_asprintf("reservations in %s (delivered by future reservations)", zone)) ||
	    live_store_note(out, 0, what) < 0) {
		free(what);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	free(what);
	if ((rc = provider_reservation_list(p, project, zone, &rs, err)) < 0)
		return vx_err_wrap(err, "the reservations they delivered");
	for (; i < all->n; i++)
		all->items[i].vertex_open = delivered_open(&all->items[i], &rs, &all->items[i].delivered_gone);
	live_reservations_release(&rs);
	return 0;
}

static const char *decl_zone(const struct stack *st, size_t i)
{
	return stack_futures(st, NULL)[i].zone;
}

/* One zone's list into the kind's slot, and what Vertex AI may use of what it delivered. */
static int list_zone(struct live_store *out, struct provider *p, const char *project, const char *zone,
		     struct vx_err *err)
{
	struct live_futures *all = kind_live_slot(out, &kind_future), fs = { 0 };
	size_t from = all->n;
	int rc;

	if (!PROVIDER_HAS(p, future, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list future reservations");
	rc = provider_future_list(p, project, zone, &fs, err);
	for (size_t k = 0; k < fs.n && rc == 0; k++)
		if (live_futures_push(all, &fs.items[k]) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	live_futures_release(&fs);
	return rc ? rc : refresh_delivered(out, all, from, p, project, zone, err);
}

/* One list per zone a declared or recorded booking is in; none without any. */
static int fr_refresh(struct live_store *out, struct provider *p, const struct stack *st, const struct state *state,
		      struct vx_err *err)
{
	static const struct kind_places how = { "future reservations", decl_zone, future_record_place, list_zone,
						NULL, NULL };

	return kind_refresh_places(&kind_future, &how, out, p, st, state, err);
}

/* ---- plan ---- */

static struct plan_action *add(struct plan *p, enum plan_op k, const char *address, const struct stack_future *d,
			       const struct live_future *l, const struct state_record *r)
{
	struct plan_action *a = plan_add_kind_action(p, k, &kind_future, address, d, l, r);

	if (!a)
		return NULL;
	a->has_values = 1;
	a->old_value = l ? l->total_count : -2;
	a->new_value = d ? d->total_count : -2;
	return a;
}

static int plan_error(struct plan *p, char *text)
{
	int rc = text && vx_diags_add(&p->errors, NULL, 0, 0, "%s", text) == 0 ? 0 : VX_ENOMEM;

	free(text);
	return rc;
}

/* What differs that a submitted booking cannot change, in words, or NULL. */
static char *request_change(const struct stack_future *d, const struct live_future *l)
{
	char a[64], b[64];

	if (!l->mode || strcmp(l->mode, d->calendar ? "CALENDAR" : "DEFAULT"))
		return vx_asprintf("mode %s -> %s", l->mode ? l->mode : "none", d->calendar ? "CALENDAR" : "DEFAULT");
	if (l->start_ms != d->start_ms || l->end_ms != d->end_ms) {
		vx_time_window(a, sizeof(a), l->start_ms, l->end_ms);
		vx_time_window(b, sizeof(b), d->start_ms, d->end_ms);
		return vx_asprintf("window %s -> %s", a, b);
	}
	if (l->total_count != d->total_count)
		return vx_asprintf("totalCount %" PRId64 " -> %" PRId64, l->total_count, d->total_count);
	if (!vx_text_same(l->machine_type, d->machine_type))
		return vx_asprintf("machineType %s -> %s", l->machine_type ? l->machine_type : "none", d->machine_type);
	if (!vx_text_same(l->accelerator_type, d->accelerator) ||
	    (d->accelerator && l->accelerator_count != d->accelerator_count))
		return vx_asprintf("guestAccelerators %" PRId64 "x%s -> %" PRId64 "x%s", l->accelerator_count,
				   l->accelerator_type ? l->accelerator_type : "none", d->accelerator_count,
				   d->accelerator ? d->accelerator : "none");
	return NULL;
}

/* A start in the past cannot be booked: a plan error (the declaration itself is valid). */
static int start_passed(struct plan *p, const struct kind_plan_input *in, const struct stack_future *d)
{
	char t[VX_TIME_MAX];

	if (!in->now_ms || d->start_ms > in->now_ms)
		return 0;
	vx_time_format(t, sizeof(t), d->start_ms, VX_TIME_SECONDS);
	return plan_error(p, vx_asprintf("%s: window.start %s is in the past: a booking must start after it "
					 "is made; move the window",
					 d->d.address, t)) < 0
		       ? VX_ENOMEM
		       : 1;
}

/* Whether l can still be cancelled (before it locks and before its window). */
static int cancellable(const struct kind_plan_input *in, const struct live_future *l)
{
	return !fr_status_locked(l->procurement_status) && !fr_status_dead(l->procurement_status) &&
	       (!in->now_ms || in->now_ms < l->start_ms);
}

/*
 * The request of a booking changed (why, owned): "cancel and book again"
 * when it can still be cancelled and the new window is ahead; else an error.
 */
static int plan_rebook(struct plan *p, const struct kind_plan_input *in, const struct stack_future *d,
		       const struct live_future *l, const struct state_record *r, char *why)
{
	struct plan_action *a;
	int rc;

	if (!why)
		return VX_ENOMEM;
	if (r && r->protect)
		rc = plan_error(p, vx_asprintf("%s is protected (protect: true): %s would cancel it and book "
					       "again; refused",
					       d->d.address, why));
	else if (!cancellable(in, l) && !fr_status_dead(l->procurement_status))
		rc = plan_error(p, vx_asprintf("%s: %s cannot change: the booking is %s, and Google accepts no "
					       "change or cancel from then on",
					       d->d.address, why,
					       l->procurement_status ? l->procurement_status : "in an unknown state"));
	else if ((rc = start_passed(p, in, d)) == 0) {
		a = add(p, PLAN_REPLACE, d->d.address, d, l, r);
		rc = a ? plan_action_reason(a, vx_asprintf("%s: a submitted booking cannot change; cancel and book again "
							   "(the new request is reviewed anew)",
							   why))
		       : VX_ENOMEM;
	}
	free(why);
	return rc < 0 ? rc : 0;
}

/* A declared booking not found live: booked (again, if vx booked it before). */
static int plan_missing(struct plan *p, const struct kind_plan_input *in, const struct stack_future *d,
			const struct state_record *r)
{
	struct plan_action *a;
	int rc = start_passed(p, in, d);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (!(a = add(p, PLAN_CREATE, d->d.address, d, NULL, r)))
		return VX_ENOMEM;
	if (r && r->current) {
		rc = plan_action_reason(a, vx_strdup("deleted outside vx: booked again as declared, submitted for approval"));
		return rc ? rc : plan_action_drift(p, a, vx_asprintf("future reservation %s was deleted outside vx", d->d.name));
	}
	return plan_action_reason(a, vx_strdup("new booking: submitted for Google's approval"));
}

/*
 * The declaration changed only where Google has nothing to change (protect,
 * closingLead, a description a submitted booking keeps): recorded, nothing sent.
 */
static int plan_vx_only(struct plan *p, const struct stack_future *d, const struct live_future *l,
			const struct state_record *r)
{
	struct plan_action *a = add(p, PLAN_UPDATE, d->d.address, d, l, r);

	if (!a)
		return VX_ENOMEM;
	if (!r->protect != !d->protect)
		return plan_action_reason(a, vx_asprintf("protect %s -> %s: recorded; nothing is sent to Google",
							 r->protect ? "true" : "false", d->protect ? "true" : "false"));
	return plan_action_reason(a, vx_strdup("description or window.closingLead changed: recorded; nothing is sent to "
					       "Google (a submitted booking keeps its description)"));
}

/* Declared, live and recorded: left as it is (its status said), or booked again. */
static int plan_known(struct plan *p, const struct kind_plan_input *in, const struct stack_future *d,
		      const struct live_future *l, const struct state_record *r)
{
	const char *cur = r->current ? r->current->state : NULL;
	struct plan_action *a;
	char *why;
	int rc;

	if (l->procurement_status && !strcmp(l->procurement_status, "CANCELLED") &&
	    !(cur && !strcmp(cur, "CANCELLED"))) {
		if ((rc = plan_rebook(p, in, d, l, r, vx_strdup("cancelled outside vx"))) < 0)
			return rc;
		a = p->n ? &p->actions[p->n - 1] : NULL;
		if (a && a->kind_of == &kind_future && !strcmp(a->address, d->d.address))
			return plan_action_drift(p, a, vx_asprintf("future reservation %s was cancelled outside vx", d->d.name));
		return 0;
	}
	if (kind_replaced(in, d->d.address))
		return plan_rebook(p, in, d, l, r, vx_strdup("-replace"));
	if ((why = request_change(d, l)))
		return plan_rebook(p, in, d, l, r, why);
	if (r->spec_hash && d->d.hash[0] && strcmp(r->spec_hash, d->d.hash) != 0)
		return plan_vx_only(p, d, l, r);
	/* After the end Compute has deleted the delivered reservation: nothing to open. */
	if (future_needs_opening(l) && !(in->now_ms && in->now_ms >= l->end_ms)) {
		if (!(a = add(p, PLAN_UPDATE, d->d.address, d, l, r)))
			return VX_ENOMEM;
		return plan_action_reason(a, vx_asprintf("%s: open reservation %s to Vertex AI (serviceShareType ALLOW_ALL), "
							 "so that jobs can run on it",
							 l->procurement_status,
							 l->auto_created[0]));
	}
	if (!(a = add(p, PLAN_NOOP, d->d.address, d, l, r)))
		return VX_ENOMEM;
	return plan_action_reason(a, future_status_next(l));
}

static int plan_declared(struct plan *p, const struct kind_plan_input *in, const void *decl, void *ud)
{
	const struct stack_future *d = decl;
	const char *mark = ud;
	const struct state_record *r = state_find(in->state, d->d.address);
	const struct live_future *l = future_live_find(in->live, d->zone, d->d.name);
	struct plan_action *a;

	if (!in->live) {
		/* Refresh off: from the state alone, a recorded booking is as declared. */
		a = add(p, r ? PLAN_NOOP : PLAN_CREATE, d->d.address, d, NULL, r);
		return a ? plan_action_reason(a, vx_strdup(r ? "refresh off: not read" : "new booking")) : VX_ENOMEM;
	}
	if (l && !future_has_marker(l, mark) && !r)
		return plan_error(p, vx_asprintf("%s: a future reservation %s already exists in %s and is not this "
						 "stack's (its description has no \"%s\"); give the declaration "
						 "another name",
						 d->d.address, d->d.name, d->zone, mark));
	if (!l)
		return plan_missing(p, in, d, r);
	if (!r) {
		a = add(p, PLAN_ADOPT, d->d.address, d, l, r);
		return a ? plan_action_reason(a, vx_asprintf("a future reservation %s with this stack's marker exists in %s: "
							     "an earlier apply booked it",
							     d->d.name, d->zone))
			 : VX_ENOMEM;
	}
	return plan_known(p, in, d, l, r);
}

/* What cancelling saves: the window's VM-hours, not yet billed (capacity.c prices them, est.). */
static char *cancel_reason(const struct live_future *l)
{
	int64_t hours = (l->end_ms - l->start_ms) / 3600000;

	return vx_asprintf("no longer declared: cancelled before its window opens, then deleted; saves %" PRId64
			   " VMs x %" PRId64 " h = %" PRId64 " VM-hours (%" PRId64 " GPU-hours; Google publishes no "
			   "calendar-mode prices: the cost line estimates them at on-demand rates)",
			   l->total_count, hours,
			   l->total_count * hours, l->total_count * hours * l->accelerator_count);
}

static int plan_removed(struct plan *p, const struct kind_plan_input *in, const struct state_record *r,
			void *ud)
{
	const char *name = strchr(r->address, '.') + 1, *project, *zone;
	const struct live_future *l;
	struct plan_action *a;
	char end[VX_TIME_MAX];

	(void)ud;

	future_record_place(r, in->st, &project, &zone);
	l = future_live_find(in->live, zone, name);
	if (!in->live)
		return 0;
	if (!l) {
		a = add(p, PLAN_FORGET, r->address, NULL, NULL, r);
		return a ? plan_action_reason(a, vx_strdup("no longer declared, and already gone (history stays in git)"))
			 : VX_ENOMEM;
	}
	if (r->protect)
		return plan_error(p, vx_asprintf("%s is protected (protect: true): it is no longer declared; "
						 "cancelling it is refused",
						 r->address));
	if (cancellable(in, l)) {
		a = add(p, PLAN_CANCEL, r->address, NULL, l, r);
		return a ? plan_action_reason(a, cancel_reason(l)) : VX_ENOMEM;
	}
	if (fr_status_dead(l->procurement_status) || (in->now_ms && in->now_ms >= l->end_ms)) {
		a = add(p, PLAN_DELETE, r->address, NULL, l, r);
		return a ? plan_action_reason(a, vx_asprintf("no longer declared, and %s: deleted",
							     fr_status_dead(l->procurement_status)
								     ? l->procurement_status
								     : "its window has closed"))
			 : VX_ENOMEM;
	}
	vx_time_format(end, sizeof(end), l->end_ms, VX_TIME_SECONDS);
	if (vx_diags_add(&p->warnings, NULL, 0, 0, "%s is no longer declared, but the booking is %s: Google "
						   "accepts no cancel; it is deleted after its window closes (%s)",
			 r->address,
			 l->procurement_status ? l->procurement_status : "locked", end) < 0)
		return VX_ENOMEM;
	a = add(p, PLAN_NOOP, r->address, NULL, l, r);
	return a ? 0 : VX_ENOMEM;
}

/* The shape line: VMs, GPUs, zone and window, and the status when listed. */
static char *describe(const struct plan_action *act)
{
	const struct stack_future *d = act->kdecl;
	const struct live_future *l = act->klive;
	const char *mt = d ? d->machine_type : l ? l->machine_type
						 : NULL;
	const char *at = d ? d->accelerator : l ? l->accelerator_type
						: NULL;
	int64_t ac = d ? d->accelerator_count : l ? l->accelerator_count
						  : 0;
	int64_t count = d ? d->total_count : l ? l->total_count
					       : 0;
	const char *zone = d ? d->zone : l ? l->zone
					   : "?";
	int64_t start = d ? d->start_ms : l ? l->start_ms
					    : 0;
	int64_t end = d ? d->end_ms : l ? l->end_ms
					: 0;
	char win[64], gpus[96] = "", st[64] = "";

	if (!mt)
		return NULL;
	vx_time_window(win, sizeof(win), start, end);
	if (at)
		snprintf(gpus, sizeof(gpus), ", %" PRId64 "\u00d7%s", ac, at);
	if (l && l->procurement_status)
		snprintf(st, sizeof(st), " (%s)", l->procurement_status);
	return vx_asprintf("%s \u00d7%" PRId64 "%s in %s, %s%s", mt, count, gpus, zone, win, st);
}

static int fr_plan(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err)
{
	static const struct kind_plan_steps how = { "future reservations", plan_declared, plan_removed, describe };
	char *mark = future_marker(in->st->name, in->lineage);
	int rc = mark ? kind_plan_each(&kind_future, &how, &pl->plan, in, mark, err)
		      : vx_err_set(err, VX_ENOMEM, "planning future reservations: out of memory");

	free(mark);
	return rc;
}

/* ---- the row's other slots ---- */

static void fr_live_release(void *live)
{
	live_futures_release(live);
}

/* A booking's action holds its VMs for the window (and only then): the declared shape, else the live one's. */
static void fr_capacity(const struct plan_action *a, struct kind_capacity *out)
{
	const struct stack_future *d = a->kdecl;
	const struct live_future *l = a->klive;

	out->holds = 1;
	if (d) {
		out->zone = d->zone;
		out->machine_type = d->machine_type;
		out->accelerator = d->accelerator;
		out->accelerator_count = d->accelerator_count;
		out->window_start_ms = d->start_ms;
		out->window_end_ms = d->end_ms;
	} else if (l) {
		out->zone = l->zone;
		out->machine_type = l->machine_type;
		out->accelerator = l->accelerator_type;
		out->accelerator_count = l->accelerator_count;
		out->window_start_ms = l->start_ms;
		out->window_end_ms = l->end_ms;
	}
}

/* A declared booking's machines: the VMs booked (x GPUs each), none in use that vx knows of;
 * none at all once Google declined it, it failed or was cancelled (nothing will be delivered). */
static void fr_held(const struct stack *st, const struct live_set *live, size_t i, struct kind_held *out)
{
	const struct stack_future *d = &stack_futures(st, NULL)[i];
	const struct live_future *l = future_live_find(live, d->zone, d->d.name);

	out->address = d->d.address;
	out->name = l && l->n_auto_created ? l->auto_created[0] : d->d.name;
	out->zone = d->zone;
	out->machine_type = d->machine_type;
	out->accelerator = d->accelerator;
	out->accelerator_count = d->accelerator_count;
	out->count = l && l->procurement_status && fr_status_dead(l->procurement_status) ? 0 : d->total_count;
	out->in_use = 0;
	out->window_start_ms = d->start_ms;
	out->window_end_ms = d->end_ms;
	out->listed = l != NULL;
}

/*
 * The opening of the delivered reservation to Vertex AI, planned for a
 * booking whose declaration is the one its record says was applied: the
 * reviewed declaration asked for it, so vx watch does it unreviewed. An
 * update of a declaration not applied (protect, the description) is not.
 */
static int fr_watch_may(const struct plan_action *a)
{
	const struct stack_future *d = a->kdecl;
	const struct state_record *r = a->krecord;

	return a->op == PLAN_UPDATE && d && r && a->klive && future_needs_opening(a->klive) && r->spec_hash &&
	       d->d.hash[0] && !strcmp(r->spec_hash, d->d.hash);
}

const struct kind kind_future = {
	.name = FUTURE_KIND_NAME,
	.prefix = "future_reservation",
	.rfc1035_names = 1,
	.refresh = fr_refresh,
	.plan = fr_plan,
	.apply = future_apply,
	.cost = KIND_COST_HELD,
	.capacity = fr_capacity,
	.update_says_why = 1,
	.noun = "future reservation",
	.noun_plural = "future reservations",
	.decl_size = sizeof(struct stack_future),
	.import = future_import,
	.status_rows = future_status_rows,
	.live_size = sizeof(struct live_futures),
	.live_release = fr_live_release,
	.watch_runs = 0,
	/* Its own pass (test_kind: each row one), before the jobs' (table order): a job's reservation: names a booking. */
	.load_alloc = kind_future_load_alloc,
	.load_read = kind_future_load_read,
	.decl_hash = kind_future_decl_hash,
	.decl_release = kind_future_decl_release,
	.held = fr_held,
	.summary_if_declared = 1,
	.import_form = "projects/P/zones/ZONE/futureReservations/NAME",
	.window_of = future_window_of,
	.notify = future_notify,
	.events = future_events,
	.nevents = FUTURE_NEVENTS,
	.held_record = future_held_record,
	.watch_may = fr_watch_may,
	.policy_allow = "reservations",
};
