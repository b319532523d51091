#ifndef VX_RECONCILE_KIND_FUTURE_INTERNAL_H
#define VX_RECONCILE_KIND_FUTURE_INTERNAL_H

/* What the future reservation kind's files share (kind_future.c, kind_future_apply.c). */

#include "reconcile/kind.h"
#include "reconcile/kind_future.h"
#include "reconcile/notify.h"
#include "reconcile/provider_future.h"

#define FUTURE_KIND_NAME "FutureReservation"

struct state_record;
struct applier;
struct import_outcome;
struct import_request;
struct status_report;
struct status_input;

/* The marker vx appends to the description of the bookings it makes. */
char *future_marker(const char *stack, const char *lineage);
int future_has_marker(const struct live_future *l, const char *mark);
/* The project and zone a recorded booking lives in. */
void future_record_place(const struct state_record *r, const struct stack *st, const char **project,
			 const char **zone);
const struct live_future *future_live_find(const struct live_set *live, const char *zone, const char *name);
/* DECLINED, CANCELLED, FAILED: nothing will be delivered. */
int fr_status_dead(const char *s);
/* PROCURING and after: no change or cancel accepted. */
int fr_status_locked(const char *s);
/* Delivered (PROVISIONING on), and a delivered reservation Vertex AI may not use yet. */
int future_needs_opening(const struct live_future *l);
/* "APPROVED: Google delivers ...": the status and what happens next. */
char *future_status_next(const struct live_future *l);

/* kind_future_apply.c: the row's apply, import and status slots. */
int future_apply(struct applier *a, int removals, struct vx_err *err);
int future_import(struct import_outcome *out, struct state *state, struct provider *p, const struct stack *st,
		  const struct import_request *req, int check_only, struct vx_err *err);
int future_status_rows(struct status_report *out, const struct status_input *in);

/* kind_future_notify.c: the row's window_of and notify slots. */
struct kind_window;
struct notify_list;
int future_window_of(const struct live_set *live, const char *reservation, struct kind_window *out);
/*
 * The booking's notification events (struct kind's events, in kind_future_notify.c).
 * Their bits are fixed for good: they are in the digests of applied notify targets.
 */
enum future_event {
	FUTURE_EVENT_APPROVED = 1u << 7,	/* "booking-approved": Google approved the request */
	FUTURE_EVENT_DECLINED = 1u << 8,	/* "booking-declined" */
	FUTURE_EVENT_WINDOW_OPENED = 1u << 9,	/* "window-opened": the window began, capacity delivered */
	FUTURE_EVENT_WINDOW_CLOSING = 1u << 10, /* "window-closing": window.closingLead before its end */
	FUTURE_EVENT_WINDOW_CLOSED = 1u << 11,	/* "window-closed": its end; the runs on it were ended */
	FUTURE_EVENT_FAILED = 1u << 13,		/* "booking-failed": approved, then not (all) delivered */
};
#define FUTURE_NEVENTS 6
extern const struct notify_event_kind future_events[FUTURE_NEVENTS];
int future_notify(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
		  int64_t since_ms);
/* kind_future_cost.c: the row's held_record slot (vx report). */
struct prices;
struct state_run;
void future_held_record(const struct state_record *rec, const struct state_run *run, const struct prices *p,
			struct kind_held_shape *out);

#endif
