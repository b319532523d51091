/*
 * The future reservation kind's side of the jobs that run in a booking's
 * window (a CustomJob's `reservation: NAME`, issue 35): whether the
 * window's capacity is there for a job to be created on, and if not, what
 * the job waits for, in the words the plan shows. The job kind asks once
 * every kind planned (kind_job_window.c), so the booking's own action in
 * the same plan counts: an update that opens the delivered reservation to
 * Vertex AI is applied before the job's create (phase order).
 */
#include "reconcile/kind_future_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/plan.h"
#include "util/buf.h"
#include "util/banned.h"

/*
 * "Tue 08 Dec 09:00 UTC". The names are written out rather than taken from
 * strftime's %a and %b, which follow the locale: the plan is the same text
 * on every machine.
 */
static void when_text(char *out, size_t n, int64_t ms)
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 || tm.tm_mon > 11) {
		snprintf(out, n, "?");
		return;
	}
	snprintf(out, n, "%s %02d %s %02d:%02d UTC", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon], tm.tm_hour,
		 tm.tm_min);
}

/* How far ahead ms is, to the minute: "3d 4h", "5h 20m", "12m", "less than a minute". */
static void ahead_text(char *out, size_t n, int64_t ms)
{
	int64_t m = ms / 60000, d = m / 1440, h = m % 1440 / 60;

	if (!m)
		snprintf(out, n, "less than a minute");
	else if (d)
		snprintf(out, n, "%" PRId64 "d %" PRId64 "h", d, h);
	else if (h)
		snprintf(out, n, "%" PRId64 "h %" PRId64 "m", h, m % 60);
	else
		snprintf(out, n, "%" PRId64 "m", m);
}

/* "window opens Tue 08 Dec 09:00 UTC (in 3d 4h)", or "window opened ..." once it has. */
static void opens_text(char *out, size_t n, const struct stack_future *f, int64_t now_ms)
{
	char when[48], ahead[48];

	when_text(when, sizeof(when), f->start_ms);
	if (now_ms && now_ms >= f->start_ms) {
		snprintf(out, n, "window opened %s", when);
		return;
	}
	if (!now_ms) {
		snprintf(out, n, "window opens %s", when);
		return;
	}
	ahead_text(ahead, sizeof(ahead), f->start_ms - now_ms);
	snprintf(out, n, "window opens %s (in %s)", when, ahead);
}

/* The booking's own action in p, or NULL (not targeted). */
static const struct plan_action *booking_action(const struct plan *p, const char *address)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->actions[i].kind_of == &kind_future && !strcmp(p->actions[i].address, address))
			return &p->actions[i];
	return NULL;
}

/*
 * Why a job cannot start on a booking that was listed and is alive: 1 with
 * *why set, 0 when it can (delivered, and open or opened first), VX_ENOMEM.
 */
static int listed_wait(char **why, const struct stack_future *f, const struct live_future *l,
		       const struct plan_action *fa, const char *opens, int64_t now_ms)
{
	const char *status = l->procurement_status ? l->procurement_status : "status unknown";
	char when[48];

	if (now_ms && now_ms >= f->end_ms) {
		when_text(when, sizeof(when), f->end_ms);
		*why = vx_asprintf("window closed %s: a job is not started in a closed window", when);
	} else if (fa && fa->op == PLAN_REPLACE) {
		*why = vx_asprintf("%s; %s is cancelled and booked again by this plan", opens, f->d.address);
	} else if (!l->n_auto_created) {
		*why = vx_asprintf("%s; runs once %s's capacity is delivered (%s)", opens, f->d.address, status);
	} else if (!l->vertex_open && !(fa && fa->op == PLAN_UPDATE && future_needs_opening(l))) {
		*why = vx_asprintf("%s; %s's reservation %s is not open to Vertex AI yet, and this plan does not "
				   "open it (plan %s too)",
				   opens, f->d.address, l->auto_created[0], f->d.address);
	} else {
		return 0;
	}
	return *why ? 1 : VX_ENOMEM;
}

int future_window_ready(char **reservation, char **why, const struct stack_future *f, const struct plan *p,
			const struct live_set *live, int64_t now_ms, const char *project)
{
	const struct live_future *l = live ? future_live_find(live, f->zone, f->d.name) : NULL;
	const struct plan_action *fa = booking_action(p, f->d.address);
	char opens[128];
	int rc;

	*reservation = NULL;
	*why = NULL;
	opens_text(opens, sizeof(opens), f, now_ms);
	if (!live)
		*why = vx_asprintf("%s; refresh off: whether %s's capacity is delivered is not read", opens,
				   f->d.address);
	else if (!l)
		*why = vx_asprintf("%s; %s %s", opens, f->d.address,
				   fa && fa->op == PLAN_CREATE ? "is booked by this plan" : "is not booked");
	else if (fr_status_dead(l->procurement_status))
		*why = vx_asprintf("%s is %s: nothing will be delivered, so the job does not start; book again (plan "
				   "with -replace %s) or remove its reservation:",
				   f->d.address, l->procurement_status, f->d.address);
	else if ((rc = listed_wait(why, f, l, fa, opens, now_ms)) != 0)
		return rc < 0 ? rc : 0;
	else {
		*reservation = vx_asprintf("projects/%s/zones/%s/reservations/%s", l->project ? l->project : project,
					   l->zone ? l->zone : f->zone, l->auto_created[0]);
		return *reservation ? 1 : VX_ENOMEM;
	}
	return *why ? 0 : VX_ENOMEM;
}
