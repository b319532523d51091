/*
 * A booking's window as the rest of vx sees it: which booking delivered a
 * reservation a job ran on (so that a run ended at the window's end is
 * classed window-ended, reconcile/failure.h), and its notifications:
 * Google's decision (booking-approved, booking-declined) and its window
 * (window-opened, window-closing, window-closed). Each is worked out from
 * what the refresh lists now, with an id that is the same every time
 * (reconcile/notify.h), so a watcher restarted, or another one, tells it
 * once.
 */
#include "reconcile/kind_future_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/notify.h"
#include "reconcile/plan.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/banned.h"

const struct notify_event_kind future_events[FUTURE_NEVENTS] = {
	{ FUTURE_EVENT_APPROVED, "booking-approved", "was approved" },
	{ FUTURE_EVENT_DECLINED, "booking-declined", "was declined" },
	{ FUTURE_EVENT_WINDOW_OPENED, "window-opened", "window opened" },
	{ FUTURE_EVENT_WINDOW_CLOSING, "window-closing", "window closing" },
	{ FUTURE_EVENT_WINDOW_CLOSED, "window-closed", "window closed" },
	{ FUTURE_EVENT_FAILED, "booking-failed", "was not delivered" },
};

/* The default of window.closingLead (kind_future_load.c), for a booking no longer declared. */
#define DEFAULT_CLOSING_LEAD_MS ((int64_t)2 * 3600 * 1000)

/* Whether l delivered reservation name (one of status.autoCreatedReservations,
 * or the booking's own name, which gcloud says the reservation inherits). */
static int delivered_as(const struct live_future *l, const char *name, size_t n)
{
	if (strlen(l->name) == n && !strncmp(l->name, name, n))
		return 1;
	for (size_t i = 0; i < l->n_auto_created; i++)
		if (strlen(l->auto_created[i]) == n && !strncmp(l->auto_created[i], name, n))
			return 1;
	return 0;
}

/* "projects/P/zones/Z/reservations/R": P, Z and R (not NUL-terminated). */
static int split_reservation(const char *s, const char **p, size_t *np, const char **z, size_t *nz,
			     const char **r, size_t *nr)
{
	const char *e;

	if (!s || strncmp(s, "projects/", 9))
		return 0;
	*p = s + 9;
	if (!(e = strchr(*p, '/')) || strncmp(e, "/zones/", 7))
		return 0;
	*np = (size_t)(e - *p);
	*z = e + 7;
	if (!(e = strchr(*z, '/')) || strncmp(e, "/reservations/", 14))
		return 0;
	*nz = (size_t)(e - *z);
	*r = e + 14;
	*nr = strlen(*r);
	return *np && *nz && *nr && !strchr(*r, '/');
}

int future_window_of(const struct live_set *live, const char *reservation, struct kind_window *out)
{
	const struct live_futures *fs = kind_live(live, &kind_future);
	const char *p, *z, *r;
	size_t np, nz, nr;

	if (!fs || !split_reservation(reservation, &p, &np, &z, &nz, &r, &nr))
		return 0;
	for (size_t i = 0; i < fs->n; i++) {
		const struct live_future *l = &fs->items[i];

		/* Only calendar mode ends the VMs at the end time (DEFAULT keeps them). */
		if (!l->mode || strcmp(l->mode, "CALENDAR") || !l->zone || strlen(l->zone) != nz ||
		    strncmp(l->zone, z, nz) || (l->project && (strlen(l->project) != np || strncmp(l->project, p, np))) ||
		    !delivered_as(l, r, nr))
			continue;
		out->name = l->name;
		out->start_ms = l->start_ms;
		out->end_ms = l->end_ms;
		return 1;
	}
	return 0;
}

/* Delivered: the window opened with capacity in it. */
static int delivered(const struct live_future *l)
{
	const char *s = l->procurement_status;

	return l->n_auto_created ||
	       (s && (!strcmp(s, "PROVISIONING") || !strcmp(s, "FULFILLED") || !strcmp(s, "FAILED_PARTIALLY_FULFILLED")));
}

/* One event of a's booking, at time at, saying message (owned), told apart by key (owned). */
static int add_event(struct notify_list *out, const struct plan_action *a, const char *stack, unsigned kind,
		     int64_t at, char *key, char *message)
{
	const struct live_future *l = a->klive;
	struct notify_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.message = ev.owned[0] = message;
	ev.key = ev.owned[1] = key;
	if (!ev.message || !ev.key) {
		free(ev.owned[0]);
		free(ev.owned[1]);
		return VX_ENOMEM;
	}
	ev.kind = kind;
	ev.stack = stack;
	ev.address = a->address;
	ev.state = l->procurement_status;
	ev.time_ms = at;
	return notify_list_add(out, &ev);
}

/* An event of the window: the window's start names it (a booking made again for another window is another). */
static int window_event(struct notify_list *out, const struct plan_action *a, const char *stack, unsigned kind,
			int64_t at, char *message)
{
	const struct live_future *l = a->klive;
	char start[VX_TIME_MAX];

	vx_time_format(start, sizeof(start), l->start_ms, VX_TIME_SECONDS);
	return add_event(out, a, stack, kind, at, vx_strdup(start), message);
}

/* The reservation the capacity is in, for the messages. */
static const char *reservation_of(const struct live_future *l)
{
	return l->n_auto_created ? l->auto_created[0] : l->name;
}

/*
 * Google approved the request but could not deliver it, or all of it
 * (FAILED, FAILED_PARTIALLY_FULFILLED): booking-failed. Google fails a
 * booking at its start time, days after the request, so its time is the
 * window's start (or when vx saw it, before then), and it is news until a
 * lookback after the start.
 */
static int failed_event(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
			int64_t since_ms)
{
	const struct live_future *l = a->klive;
	int none = !strcmp(l->procurement_status, "FAILED");
	int64_t at = now_ms < l->start_ms ? now_ms - now_ms % 1000 : l->start_ms;
	char start[VX_TIME_MAX], got[32];

	if (now_ms >= l->start_ms && l->start_ms < since_ms)
		return 0;
	vx_time_format(start, sizeof(start), l->start_ms, VX_TIME_SECONDS);
	snprintf(got, sizeof(got), "%" PRId64, l->fulfilled_count);
	return add_event(out, a, stack, FUTURE_EVENT_FAILED, at, vx_asprintf("%" PRId64, l->create_ms),
			 vx_asprintf("Google delivered %s of the %" PRId64 " VMs booked from %s (%s); vx does not ask "
				     "again by itself",
				     none ? "none" : got, l->total_count, start, l->procurement_status));
}

/*
 * Google's decision on the request: booking-approved once it is approved
 * (or further on), booking-declined when declined. The API records no time
 * of the decision, so it is news while the request is (made at since_ms or
 * later: Google decides within minutes, secondary sources say); its time
 * is when vx saw it (to the second), its creation time tells it from a
 * later request.
 */
static int booking_event(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
			 int64_t since_ms)
{
	const struct live_future *l = a->klive;
	const char *s = l->procurement_status;
	char start[VX_TIME_MAX];

	if (s && l->create_ms > 0 && (!strcmp(s, "FAILED") || !strcmp(s, "FAILED_PARTIALLY_FULFILLED")))
		return failed_event(out, a, stack, now_ms, since_ms);
	if (!s || l->create_ms <= 0 || l->create_ms < since_ms || !strcmp(s, "CANCELLED") ||
	    !strcmp(s, "PENDING_APPROVAL") || !strcmp(s, "PENDING_AMENDMENT_APPROVAL") || !strcmp(s, "DRAFTING"))
		return 0;
	vx_time_format(start, sizeof(start), l->start_ms, VX_TIME_SECONDS);
	now_ms -= now_ms % 1000;
	if (!strcmp(s, "DECLINED"))
		return add_event(out, a, stack, FUTURE_EVENT_DECLINED, now_ms, vx_asprintf("%" PRId64, l->create_ms),
				 vx_asprintf("Google declined %" PRId64 " VMs from %s; vx does not ask again by itself "
					     "(plan with -replace to book again)",
					     l->total_count, start));
	if (fr_status_dead(s) || !strncmp(s, "FAILED", 6))
		return 0;
	return add_event(out, a, stack, FUTURE_EVENT_APPROVED, now_ms, vx_asprintf("%" PRId64, l->create_ms),
			 vx_asprintf("Google approved %" PRId64 " VMs from %s; delivered when the window opens",
				     l->total_count, start));
}

/*
 * The booking's decision (booking_event), then its window: window-opened
 * while it is open, window-closing from closingLead before its end,
 * window-closed after it, each only while it is news (its time at since_ms
 * or later) and only for a booking that was delivered.
 */
int future_notify(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
		  int64_t since_ms)
{
	const struct live_future *l = a->klive;
	const struct stack_future *d = a->kdecl;
	int64_t lead = d ? d->closing_lead_ms : DEFAULT_CLOSING_LEAD_MS, closing;
	int calendar, rc;
	char end[VX_TIME_MAX];

	if (!l)
		return 0;
	if ((rc = booking_event(out, a, stack, now_ms, since_ms)) < 0)
		return rc;
	if (!delivered(l) || l->end_ms <= l->start_ms || now_ms < l->start_ms)
		return 0;
	calendar = l->mode && !strcmp(l->mode, "CALENDAR");
	closing = l->end_ms - lead;
	vx_time_format(end, sizeof(end), l->end_ms, VX_TIME_SECONDS);
	if (now_ms >= l->end_ms)
		return l->end_ms < since_ms ? 0
					    : window_event(out, a, stack, FUTURE_EVENT_WINDOW_CLOSED, l->end_ms,
							   vx_asprintf("the window closed at %s%s%s%s", end,
								       calendar ? ": Google ended the runs on reservation " : "",
								       calendar ? reservation_of(l) : "", calendar ? " and deleted it" : ""));
	if (now_ms >= closing && closing > l->start_ms)
		return closing < since_ms ? 0
					  : window_event(out, a, stack, FUTURE_EVENT_WINDOW_CLOSING, closing,
							 vx_asprintf("the window closes at %s%s%s%s", end,
								     calendar ? ": Google ends the runs still on reservation " : "",
								     calendar ? reservation_of(l) : "", calendar ? " then" : ""));
	return l->start_ms < since_ms ? 0
				      : window_event(out, a, stack, FUTURE_EVENT_WINDOW_OPENED, l->start_ms,
						     vx_asprintf("%" PRId64 " VMs in reservation %s until %s", l->total_count,
								 reservation_of(l), end));
}
