/* vx watch's cycle: see workflow/watch.h. */
#include "workflow/watch.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "providers/gcp/provider_gcp.h"
#include "reconcile/apply.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/policy_rules.h"
#include "reconcile/notify.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/watch_live.h"
#include "state/backend.h"
#include "state/git_follow.h"
#include "state/state_git.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/diag.h"
#include "util/hashmap.h"
#include "workflow/applying.h"
#include "workflow/ci.h"
#include "workflow/planning.h"
#include "workflow/workspace.h"
#include "util/banned.h"

const char *const watch_job_states[8] = { "queued", "pending", "running", "succeeded",
					  "failed", "cancelled", "other", "unseen" };

/* Notifications sent per cycle at most, and the time they may take: a backlog
 * or a hung receiver delays the next cycle by this much at most (the lease is
 * not held meanwhile). */
#define NOTIFY_PER_CYCLE 20
#define NOTIFY_BUDGET_MS 30000

/* Something told once: "address|what" until it no longer holds. */
struct told {
	char **items;
	size_t n;
	char **next;            /* this cycle's, which replace items at the end of it */
	size_t nnext;
};

struct watch {
	struct vx_ctx *ctx;
	struct provider *prov;      /* kept across cycles: one token, reused connections */
	struct watch_opts o;
	struct watch_events ev;
	struct workspace_events wev;
	struct watch_live *live;
	struct notify_outbox *outbox;
	struct told told;
	int64_t since_ms;
	int warned_old;             /* the runs ended before since_ms, not announced, were told */
	/* -follow REMOTE/BRANCH: the remote and branch, the stack's directory in
	 * the repository, the commit fetched last and the last one that loaded. */
	char *remote, *branch, *dir_in_repo;
	struct git_follow fetched, good;
	struct stack_source *src_files;
	struct stack_source src_policy; /* src.policy's, when the good commit has one */
	struct workspace_source src;
	/* watch-error: the Stack's targets as last loaded (the stack may not load
	 * when the error is that), and the streak of one error. */
	struct stack targets;
	char *err_msg;
	int err_streak;
	int64_t err_since_ms;
	char err_sent[NOTIFY_KEY_LEN + 1];
	/* Quota preferences seen reconciling (pending) last cycle, and the events of
	 * those that stopped since: granted or denied (address, preferred, granted). */
	struct told pending;
	struct quota_news *news;
	size_t nnews;
	/* The idle fast path (watch_cycle): what the last full cycle's decision
	 * depended on, kept when it found nothing to do. */
	int idle_armed;
	uint64_t idle_files;        /* watch_files_digest of the stack's files (or of the followed commit) */
	char *idle_rev;             /* the state's revision that cycle loaded (NULL: none) */
	struct state_backend *idle_backend; /* that cycle's backend, to read the revision */
	int64_t idle_until_ms;      /* the earliest deadline the clock crosses, INT64_MAX: none */
	size_t idle_jobs[8];        /* that cycle's jobs_by_state */
	int64_t deadline_ms;        /* the look's earliest deadline so far */
	int untold;                 /* the look saw something not told yet: the locked plan tells it */
	/* The stack as the last look loaded it (kept_check), the digest of what it
	 * was read from, and whether that was settled; the repository's policy
	 * file, whose changes load it again (NULL: not in a repository). */
	struct stack *kept;
	uint64_t kept_key;
	int kept_settled;
	char *policy_path;
	int notify_due;             /* the look found deliveries to try, and nothing else to do */
};

/* What a look saw that is news to tell: a quota preference decided, a budget's
 * hold or threshold (address NULL: the stack's own). */
struct quota_news {
	char *address;
	unsigned kind;              /* NOTIFY_QUOTA_GRANTED or _DENIED */
	char state[96];             /* "granted 16 of 16", "granted 8 of 16" */
	char key[24];               /* the preferred value: one event per request */
	int64_t until_ms;	    /* its deliveries are kept until then (0: a week) */
};

/* The same error this many cycles in a row is a watch-error notification. */
#define WATCH_ERROR_CYCLES 5

/* ---- lines ---- */

static void say(struct watch *w, const char *kind, const char *address, const char *fmt, ...)
	VX_PRINTF(4, 5);

static void say(struct watch *w, const char *kind, const char *address, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	struct vx_buf b = VX_BUF_INIT;

	if (!w->ev.line)
		return;
	va_start(ap, fmt);
	msg = vx_buf_vprintf(&b, fmt, ap) < 0 ? NULL : vx_buf_detach(&b);
	va_end(ap);
	vx_buf_release(&b);
	w->ev.line(w->ev.ud, kind, address, msg ? msg : "(out of memory)");
	free(msg);
}

static void on_diags(void *ud, const struct vx_diags *d)
{
	struct watch *w = ud;

	for (size_t i = 0; i < d->n && i < 20; i++) {
		char *s = vx_diag_format(&d->items[i]);

		say(w, "error", NULL, "%s", s ? s : "(out of memory)");
		free(s);
	}
	if (d->n > 20 || d->dropped)
		say(w, "error", NULL, "... and %zu more", d->n - (d->n > 20 ? 20 : d->n) + d->dropped);
}

static void on_problem(void *ud, const char *doing, const struct vx_err *e)
{
	say(ud, "warn", NULL, "%s: %s", doing, vx_err_msg(e));
}

/* The address a line names ("+ job.a created ...", "job.a: running -> failed"), or NULL. */
static char *address_in(const char *line)
{
	for (const char *p = line; *p; p++) {
		if (p != line && p[-1] != ' ')
			continue;
		if (kind_of_address(p))
			return strndup(p, strcspn(p, " :,"));
	}
	return NULL;
}

static void on_progress(void *ud, const char *line)
{
	char *addr = address_in(line);

	say(ud, "act", addr, "%s", line);
	free(addr);
}

/* Whether what is in t's last cycle's set. */
static int told_in(const struct told *t, const char *what)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->items[i], what))
			return 1;
	return 0;
}

/* Whether what was told (once per change) is told already; remembered for the next cycle. */
static int told_once_in(struct told *t, const char *what)
{
	char **p;
	int seen = 0;

	for (size_t i = 0; i < t->n && !seen; i++)
		seen = !strcmp(t->items[i], what);
	for (size_t i = 0; i < t->nnext; i++)
		if (!strcmp(t->next[i], what))
			return 1;
	p = realloc(t->next, (t->nnext + 1) * sizeof(*p));
	if (!p)
		return seen;
	t->next = p;
	if ((p[t->nnext] = strdup(what)))
		t->nnext++;
	return seen;
}

/* At the end of a cycle that planned: what was not told again is forgotten. */
static void told_turn(struct told *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->items[i]);
	free(t->items);
	t->items = t->next;
	t->n = t->nnext;
	t->next = NULL;
	t->nnext = 0;
}

static int told_once(struct watch *w, const char *what)
{
	return told_once_in(&w->told, what);
}

/*
 * Whether what is to be said now. Only the plan made under the lease tells
 * (quiet 0): the look (quiet 1) plans from a state read before its lists,
 * so it can see another watcher's fresh run as not yet recorded. The look
 * keeps what was told as told, and what was not makes the cycle take the
 * lease, whose plan tells it if it still holds.
 */
static int tell(struct watch *w, const char *what, int quiet)
{
	int seen = 0;

	if (!quiet)
		return !told_once(w, what);
	for (size_t i = 0; i < w->told.nnext && !seen; i++)
		seen = !strcmp(w->told.next[i], what);
	if (seen || told_in(&w->told, what))
		(void)told_once(w, what);
	else
		w->untold = 1;
	return 0;
}

static void told_release(struct told *t)
{
	told_turn(t);
	told_turn(t);
}

/* ---- what the applied configuration authorises ---- */

/* Whether a is the next attempt after a run resubmit.maxQueued ended, on the rung that run was on. */
static int queue_same_rung(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	return ja->failure_class && !strcmp(ja->failure_class, "queue-timeout") && ja->record &&
	       ja->record->current && ja->record->current->rung == ja->rung;
}

/* The wait before a resubmission after a class that means no capacity: the
 * job's resubmit.delay doubling per attempt, at most 15 minutes; after a
 * queue-timeout, when the next attempt goes on the same rung. */
static int64_t resubmit_wait(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);
	const struct stack_job *j = job_action_job(a);
	int64_t wait;

	if (!j || !ja->failure_class ||
	    (strcmp(ja->failure_class, "stockout") && strcmp(ja->failure_class, "wait-timeout") &&
	     !queue_same_rung(a)))
		return 0;
	wait = j->resubmit_delay_ms;
	for (int64_t k = 2; k < ja->attempt && wait < STACK_MAX_RESUBMIT_DELAY_MS; k++)
		wait *= 2;
	return wait < STACK_MAX_RESUBMIT_DELAY_MS ? wait : STACK_MAX_RESUBMIT_DELAY_MS;
}

/* A job whose declaration is what its state records as applied. */
static int as_applied(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	return ja->decl && ja->record && ja->record->spec_hash && ja->decl->spec_hash &&
	       !strcmp(ja->decl->spec_hash, ja->record->spec_hash) && ja->decl->run == ja->record->run;
}

/* The start of the events' look-back (since_ms, on this machine's clock) on
 * Google's clock, as google_now is (provider_now_ms). */
static int64_t google_since(const struct watch *w, int64_t google_now)
{
	return w->since_ms + (google_now - vx_now_ms(w->ctx));
}

/*
 * Whether the policy a's job declares (resubmit, ladder, after:, the
 * sweep's limits) is not the one its record says was applied: then it is
 * declared but not applied, told once per change naming what differs.
 * The watcher acts from the record only: a record from a vx that did not
 * record the policy is not taken to hold what the files say.
 */
static int policy_unapplied(struct watch *w, const struct plan_action *a, int quiet)
{
	const struct job_action *ja = job_action_of(a);
	const struct state_policy *applied = ja->record ? ja->record->applied : NULL;
	struct vx_buf why = VX_BUF_INIT;
	char *what;
	int rc;

	if (!a->kind_of || !a->kind_of->watch_runs || !ja->decl || !ja->decl->policy || !ja->record)
		return 0;
	/* Out of memory (rc < 0) holds the action too: never act on what is not known to be applied. */
	rc = applied ? policy_diff(&why, applied, ja->decl->policy, 0)
	     : vx_buf_adds(&why, "the state records no policy for it, as an older vx wrote it: one "
				 "vxapply records it") < 0
		     ? VX_ENOMEM
		     : 1;
	if (rc == 0) {
		vx_buf_release(&why);
		return 0;
	}
	what = vx_asprintf("unapplied|%s|policy|%s", a->address, rc < 0 ? "" : vx_buf_str(&why));
	if (tell(w, what ? what : a->address, quiet))
		say(w, "unapplied", a->address, "%s: declared but not applied (%s); waiting for vxapply", a->address,
		    rc < 0 ? "out of memory" : vx_buf_str(&why));
	free(what);
	vx_buf_release(&why);
	return 1;
}

/*
 * Whether the watcher may carry a out now (1), and if not, says why once.
 * quiet: the unlocked look (nothing is told yet; the locked plan tells).
 */
static int authorised(struct watch *w, const struct plan_action *a, int64_t now_ms, int quiet)
{
	const struct job_action *ja = job_action_of(a);
	char what[512];
	int64_t wait, end;

	/* A refused create waiting for its backoff (the planner's refusal gate): told once. */
	if (a->op == PLAN_NOOP && ja->not_before_ms > 0) {
		if (ja->not_before_ms < w->deadline_ms)
			w->deadline_ms = ja->not_before_ms;
		snprintf(what, sizeof(what), "refused|%s|%" PRId64, a->address, ja->not_before_ms);
		if (tell(w, what, quiet))
			say(w, "wait", a->address, "%s: %s", a->address, a->reason ? a->reason : "");
	}
	if (a->op == PLAN_NOOP || a->op == PLAN_PENDING || a->op == PLAN_WAIT)
		return 1;
	if (a->op == PLAN_ADOPT)
		return 1;
	/* What the applied declaration of a kind whose runs are not the watcher's asked for. */
	if (!w->o.sync && a->kind_of && !a->kind_of->watch_runs && a->kind_of->watch_may && a->kind_of->watch_may(a))
		return 1;
	if (!w->o.sync && as_applied(a) && policy_unapplied(w, a, quiet))
		return 0;
	if (!w->o.sync && !((a->op == PLAN_RESUBMIT || a->op == PLAN_CREATE ||
			     (a->op == PLAN_RERUN && ja->after_rerun)) &&
			    as_applied(a))) {
		snprintf(what, sizeof(what), "unapplied|%s|%s|%s", a->address, plan_op_name(a->op),
			 ja->new_hash ? ja->new_hash : "");
		if (tell(w, what, quiet))
			say(w, "unapplied", a->address, "%s: declared but not applied (the plan says %s); "
			    "waiting for vxapply", a->address, plan_op_name(a->op));
		return 0;
	}
	if (!a->kind_of || !a->kind_of->watch_runs)
		return 1;
	end = ja->record && ja->record->current ? ja->record->current->end_ms : 0;
	if (a->op == PLAN_RESUBMIT && (wait = resubmit_wait(a)) > 0 && end > 0 && now_ms < end + wait) {
		if (end + wait < w->deadline_ms)
			w->deadline_ms = end + wait;
		snprintf(what, sizeof(what), "delay|%s|%" PRId64, a->address, ja->attempt);
		if (tell(w, what, quiet))
			say(w, "wait", a->address, "%s: attempt %" PRId64 " after %s waits until %llds after "
						   "it ended (resubmit.delay)",
			    a->address, ja->attempt, ja->failure_class,
			    (long long)(wait / 1000));
		return 0;
	}
	return 1;
}

/* Whether op would start or change something: what a policy violation holds. */
static int starts_or_changes(enum plan_op op)
{
	return op == PLAN_CREATE || op == PLAN_REPLACE || op == PLAN_RERUN || op == PLAN_RESUBMIT ||
	       op == PLAN_UPDATE;
}

/*
 * Whether the policy in force forbids what a would start or change (a
 * violation about its address, or one about the whole stack): then a is a
 * wait with the reason, said once per violation. The stack's files broke
 * the policy after what runs was applied (a rung added before the policy
 * changed): nothing new starts, and nothing running is cancelled for it.
 * A violation about a fallback rung only skips that rung (the kind's
 * policy_rung): the run goes on the next rung allowed, said once, and is
 * held only when none remains.
 */
static int policy_holds(struct watch *w, struct plan *p, const struct policy_rules *pol, struct plan_action *a,
			int quiet)
{
	const struct policy_violation *v;
	char *what, *why;
	int moved;

	if (!starts_or_changes(a->op) || !(v = policy_rules_violation_of(pol, a->address)))
		return 0;
	moved = a->kind_of && a->kind_of->policy_rung ? a->kind_of->policy_rung(a, pol) : 0;
	if (moved == 2 && (what = vx_asprintf("rung|%s|%s", a->address, a->reason ? a->reason : ""))) {
		if (tell(w, what, quiet))
			say(w, "policy", a->address, "%s: %s", a->address, a->reason ? a->reason : "");
		free(what);
	}
	if (moved > 0)
		return 0;
	why = vx_asprintf("held: policy: %s", v->msg);
	what = vx_asprintf("policy|%s|%s", a->address, v->msg);
	if (tell(w, what ? what : a->address, quiet))
		say(w, "wait", a->address, "%s: %s", a->address, why ? why : "held: policy (out of memory)");
	free(what);
	p->counts[a->op]--;
	p->counts[PLAN_WAIT]++;
	a->op = PLAN_WAIT;
	a->held = 1;
	if (why && plan_action_reason(a, why) < 0)
		free(why);
	return 1;
}

/*
 * Past resubmit.maxQueued with no rung to move to, a resubmit that cancels
 * its run becomes the cancel alone: the next attempt waits until
 * resubmit.delay has passed since the run ended (resubmit_wait, a later cycle).
 */
static void queue_cancel_first(struct plan *p, struct plan_action *a)
{
	if (a->op != PLAN_RESUBMIT || !job_action_of(a)->cancel_name || !queue_same_rung(a) || resubmit_wait(a) <= 0)
		return;
	p->counts[a->op]--;
	p->counts[PLAN_CANCEL]++;
	a->op = PLAN_CANCEL;
}

static void hold(struct plan *p, struct plan_action *a)
{
	p->counts[a->op]--;
	p->counts[PLAN_NOOP]++;
	a->op = PLAN_NOOP;
	a->held = 1;
}

/*
 * Whether a relies on an action of p held back (its kind's watch_relies):
 * then it is held too, and said once. Runs once every action was looked at.
 */
static int relies_on_held(struct watch *w, const struct plan *p, const struct plan_action *a, int quiet)
{
	const char *on;
	char what[512];

	if (a->op == PLAN_NOOP || !a->kind_of || !a->kind_of->watch_relies || !(on = a->kind_of->watch_relies(p, a)))
		return 0;
	snprintf(what, sizeof(what), "relies|%s|%s|%s", a->address, plan_op_name(a->op), on);
	if (tell(w, what, quiet))
		say(w, "unapplied", a->address, "%s: %s waits for %s, held back (declared but not applied); waiting "
						"for vxapply",
		    a->address, plan_op_name(a->op), on);
	return 1;
}

/*
 * Turns what the policy in force (pol, NULL: none) forbids into waits and
 * what may not be done now into noops; returns how many actions remain.
 */
static size_t keep_authorised(struct watch *w, struct plan *p, const struct policy_rules *pol, int64_t now_ms,
			      int quiet)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++)
		if (!policy_holds(w, p, pol, &p->actions[i], quiet) && !authorised(w, &p->actions[i], now_ms, quiet))
			hold(p, &p->actions[i]);
		else
			queue_cancel_first(p, &p->actions[i]);
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];

		if (relies_on_held(w, p, a, quiet))
			hold(p, a);
		else
			n += a->op != PLAN_NOOP && a->op != PLAN_PENDING && a->op != PLAN_WAIT;
	}
	return n;
}

/* A new entry of the news, zeroed, about address (NULL: the stack); NULL, nothing added, when out of memory. */
static struct quota_news *news_add(struct watch *w, const char *address)
{
	struct quota_news *n = realloc(w->news, (w->nnews + 1) * sizeof(*n));
	char *copy = address ? strdup(address) : NULL;

	if (n)
		w->news = n;
	if (!n || (address && !copy)) {
		free(copy);
		return NULL;
	}
	n = &w->news[w->nnews++];
	memset(n, 0, sizeof(*n));
	n->address = copy;
	return n;
}

/*
 * One budget-exhausted event per hold episode: the first run held, under the
 * budget applied, is the episode (its key: the budget's cents and the run's
 * attempt), so a restarted watcher or a second one sends it once.
 */
static void budget_news(struct watch *w, const struct plan_action *a, const char *why, int64_t cents)
{
	/* The attempt of a run the watcher follows (a job's); 0 for another kind's action. */
	int64_t attempt = a->kind_of && a->kind_of->watch_runs ? job_action_of(a)->attempt : 0;
	struct quota_news *n = news_add(w, a->address);

	if (!n)
		return;
	n->kind = NOTIFY_BUDGET_SPENT;
	snprintf(n->state, sizeof(n->state), "%s", why ? why : "held: budget");
	budget_exhausted_key(n->key, cents, attempt);
}

/* A stack's event for the news: address NULL, its deliveries kept until until_ms (0: a week). 0, or -1 out of memory. */
static int stack_news(struct watch *w, unsigned kind, const char *state, const char *key, int64_t until_ms)
{
	struct quota_news *n = news_add(w, NULL);

	if (!n)
		return -1;
	n->kind = kind;
	n->until_ms = until_ms;
	snprintf(n->state, sizeof(n->state), "%.95s", state);
	snprintf(n->key, sizeof(n->key), "%.23s", key);
	return 0;
}

/*
 * The budget applied's warnAt thresholds the period's spend has reached:
 * a `budget` event each, once per threshold per period (workflow/budget.h:
 * the key names the threshold and the period, and its delivery is kept
 * until the period ends), vxapply's and the watcher's alike.
 */
static void warn_news(struct watch *w, const struct planning *pl, const struct workspace *ws, int64_t now)
{
	struct budget_warning warn[BUDGET_MAX_WARN];
	size_t n = budget_warnings(warn, ws, &pl->prices, now);

	for (size_t i = 0; i < n; i++)
		if (stack_news(w, NOTIFY_BUDGET, warn[i].state, warn[i].key, warn[i].until_ms) < 0)
			break;
}

/*
 * The budget applied (the state's, never the files': a raise must be
 * reviewed and applied first) against the runs the plan would start: in
 * plan order, a run whose at most would take the period's spend past it is
 * held, with the reason "held: budget, $340 left", told once. What runs is
 * never stopped for money. A spend or a cost that cannot be known holds
 * too. now is Google's clock, which the runs' times are on. Returns how
 * many were held.
 */
static size_t budget_holds(struct watch *w, struct planning *pl, const struct workspace *ws, int64_t now, int quiet)
{
	struct stack_budget b = { .set = 1 };
	struct vx_buf left_text = VX_BUF_INIT;
	struct plan *p = &pl->planner.plan;
	double spent = 0, left, adds = 0;
	size_t held = 0;
	char what[512];

	if (ws->state.budget_cents <= 0)
		return 0;
	b.usd = (double)ws->state.budget_cents / 100.0;
	b.days = ws->state.budget_days;
	if (budget_spent(&spent, ws, &b, &pl->prices, now) != 0)
		spent = -1;
	left = spent < 0 ? -1 : round((b.usd - spent) * 100.0) / 100.0;
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct capacity_cost *c = capacity_cost_of(&pl->capacity, a->address);
		char *why;

		if (a->op == PLAN_NOOP || a->op == PLAN_PENDING || a->op == PLAN_WAIT || !c || !c->starts)
			continue;
		if (left >= 0 && c->known && adds + c->usd_max <= left) {
			adds += c->usd_max;
			continue;
		}
		vx_buf_reset(&left_text);
		if (left < 0 || budget_money(&left_text, left - adds > 0 ? left - adds : 0) < 0)
			vx_buf_reset(&left_text);
		why = left < 0 ? vx_strdup("held: budget, the period's spend is unknown")
			       : vx_asprintf("held: budget, %s left", vx_buf_str(&left_text));
		hold(p, a);
		free(a->reason);
		a->reason = why;
		if (!held && !quiet)
			budget_news(w, a, why, ws->state.budget_cents);
		snprintf(what, sizeof(what), "budget|%s|%s", a->address, why ? why : "");
		if (tell(w, what, quiet))
			say(w, "wait", a->address, "%s: %s (its at most would take the spend past the budget applied)",
			    a->address, why ? why : "held: budget");
		held++;
	}
	vx_buf_release(&left_text);
	return held;
}

/* ---- notifications ---- */

/*
 * Notes in w->notify_due whether some event of events still waits for a
 * target that wants it and may be tried now (not waiting for its backoff),
 * or was sent and waits to be recorded. Returns 0: deliveries need no lease
 * (the cycle notifies without it when it has nothing else to do).
 */
static int undelivered(struct watch *w, const struct state *state, const struct notify_list *events)
{
	const struct stack *st = &w->targets;
	int64_t now = vx_now_ms(w->ctx);

	w->notify_due = 0;
	for (size_t e = 0; e < events->n && !w->notify_due; e++)
		for (size_t t = 0; t < st->nnotify && !w->notify_due; t++) {
			char id[NOTIFY_ID_LEN + 1], key[NOTIFY_KEY_LEN + 1];

			if (!(st->notify[t].on & events->items[e].kind))
				continue;
			if (notify_event_id(id, &events->items[e]) < 0 || notify_delivery_key(key, id, &st->notify[t]) < 0 ||
			    (!state_notified_has(state, key) && notify_outbox_due(w->outbox, key, now)))
				w->notify_due = 1;
		}
	return 0;
}

/* Whether a notify target of st wants events of kind. */
static int wanted(const struct stack *st, unsigned kind)
{
	for (size_t t = 0; t < st->nnotify; t++)
		if (st->notify[t].on & kind)
			return 1;
	return 0;
}

/*
 * The runs that gave up or succeeded before the announce window (the day before
 * the watcher started), which a target wants but is not sent: said once per
 * watcher, naming up to three, rather than dropped without a word. The window
 * is on Google's clock (now is Google's), as the runs' end times are.
 */
static void warn_too_old(struct watch *w, const struct stack *st, const struct plan *p, int64_t now)
{
	int64_t window = google_since(w, now);
	struct notify_list all = { NULL, 0 };
	struct vx_buf b = VX_BUF_INIT;
	char since[STATE_TIME_MAX], ended[STATE_TIME_MAX];
	const char *first = NULL;
	size_t n = 0;

	if (w->warned_old || !st->nnotify || notify_collect(&all, p, st->name, now, INT64_MIN) < 0)
		goto done;
	for (size_t i = 0; i < all.n; i++) {
		const struct notify_event *ev = &all.items[i];

		if (!(ev->kind & (NOTIFY_GAVE_UP | NOTIFY_SUCCEEDED)) || ev->time_ms >= window ||
		    !wanted(st, ev->kind))
			continue;
		if (++n > 3)
			continue;
		state_time_format(ev->time_ms, ended);
		if (vx_buf_printf(&b, "%s%s %s (ended %s)", b.len ? ", " : "", ev->address,
				  notify_kind_name(ev->kind), ended) < 0)
			goto done;
		if (!first)
			first = ev->address;
	}
	if (n == 0)
		goto done;
	w->warned_old = 1;
	state_time_format(window, since);
	say(w, "warn", n == 1 ? first : NULL, "not announcing %zu run%s that ended before %s, the announce "
	    "window (a day before the watcher started): %s%s", n, n == 1 ? "" : "s", since, vx_buf_str(&b),
	    n > 3 ? ", ..." : "");
done:
	vx_buf_release(&b);
	notify_list_release(&all);
}

/* After the lease is given back (applying_notify): each delivery recorded as it succeeds. */
static int send_notifications(struct watch *w, struct applying *ap, struct notify_list *events,
			      struct watch_result *res, struct vx_err *err)
{
	struct notify_report rep;
	int rc = applying_notify(ap, &w->targets, w->outbox, events, NOTIFY_PER_CYCLE, NOTIFY_BUDGET_MS, &rep, err);

	for (size_t i = 0; i < rep.n; i++) {
		const struct notify_outcome *o = &rep.items[i];

		if (o->sent)
			res->notified++;
		/* A stack's own event (budget) has no address. */
		say(w, "notify", o->address, "%s%s%s to notify[%zu]%s%s%s", o->address ? o->address : "",
		    o->address ? ": " : "", o->event, o->target, o->sent ? o->why ? " delivered; " : " delivered" : o->dropped ? " dropped: "
															       : " not delivered: ",
		    o->why ? o->why : "", o->sent || o->dropped ? "" : " (tried again later)");
	}
	notify_report_release(&rep);
	return rc;
}

/* ---- -follow ---- */

/*
 * A followed commit's stack files as the loader takes them, into out (room
 * for f->n), and its .vx/policy.yaml into *policy, which binds the stack as
 * the work tree's would; returns *policy, or NULL when the commit has none.
 */
static const struct stack_source *follow_sources(struct stack_source *out, struct stack_source *policy,
						 const struct git_follow *f)
{
	for (size_t i = 0; i < f->n; i++) {
		out[i].name = f->files[i].name;
		out[i].data = f->files[i].data;
		out[i].len = f->files[i].len;
	}
	policy->name = f->also.name;
	policy->data = f->also.data;
	policy->len = f->also.len;
	return f->also.data ? policy : NULL;
}

/* The good commit's files as the workspace takes them. */
static int source_of(struct watch *w)
{
	struct stack_source *f = realloc(w->src_files, (w->good.n + 1) * sizeof(*f));

	if (!f)
		return VX_ENOMEM;
	w->src_files = f;
	w->src.files = f;
	w->src.n = w->good.n;
	w->src.policy = follow_sources(f, &w->src_policy, &w->good);
	w->src.commit = w->good.commit;
	return 0;
}

/* Whether the fetched files load as a stack (diagnostics told once per commit). */
static int loads(struct watch *w, const struct git_follow *f)
{
	struct stack_source *files = calloc(f->n + 1, sizeof(*files)), policy;
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	struct vx_err e = VX_ERR_INIT;
	char what[80];
	int rc;

	if (!files)
		return 0;
	rc = stack_load_mem_policy(&st, w->o.dir, files, f->n, follow_sources(files, &policy, f), NULL, &d, &e);
	snprintf(what, sizeof(what), "badcommit|%s", f->commit);
	if (rc < 0 && !told_once(w, what)) {
		char *why = rc == VX_EINVAL ? vx_asprintf("%zu error%s above", vx_diags_count(&d),
							  vx_diags_count(&d) == 1 ? "" : "s")
					    : vx_strdup(vx_err_msg(&e));

		on_diags(w, &d);
		if (w->good.n)
			say(w, "error", NULL, "%s/%s at %.12s does not load (%s); %.12s, the last good commit, stays "
			    "in force", w->remote, w->branch, f->commit, why ? why : "", w->good.commit);
		else
			say(w, "error", NULL, "%s/%s at %.12s does not load (%s)", w->remote, w->branch, f->commit,
			    why ? why : "");
		free(why);
	}
	stack_free(st);
	vx_diags_release(&d);
	vx_err_release(&e);
	free(files);
	return rc == 0;
}

/*
 * Fetches the followed branch; the commit becomes the one in force when it
 * loads. The cycle goes on with the last good one when the fetch fails or
 * the new commit does not load; it fails only when there is none.
 */
static int follow(struct watch *w, struct vx_err *err)
{
	int rc = git_follow_fetch(&w->fetched, w->o.dir, w->dir_in_repo, w->remote, w->branch, POLICY_REPO_FILE,
				  err);

	if (rc < 0) {
		if (!w->good.n)
			return rc;
		say(w, "warn", NULL, "%s; %.12s, the last good commit, stays in force", vx_err_msg(err),
		    w->good.commit);
		vx_err_release(err);
		return 0;
	}
	if (strcmp(w->fetched.commit, w->good.commit) && loads(w, &w->fetched)) {
		if (w->good.n)
			say(w, "follow", NULL, "%s/%s: now at %.12s", w->remote, w->branch, w->fetched.commit);
		git_follow_release(&w->good);
		w->good = w->fetched;
		memset(&w->fetched, 0, sizeof(w->fetched));
		if (source_of(w) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	if (!w->good.n)
		return vx_err_set(err, VX_EINVAL, "%s/%s at %.12s does not load, and no earlier commit did",
				  w->remote, w->branch, w->fetched.commit);
	return 0;
}

/* The source the cycle's workspaces read: the followed commit, or the directory (NULL). */
static const struct workspace_source *source(const struct watch *w)
{
	return w->remote ? &w->src : NULL;
}

/* ---- quota preferences that stopped reconciling ---- */

static void news_release(struct watch *w)
{
	for (size_t i = 0; i < w->nnews; i++)
		free(w->news[i].address);
	free(w->news);
	w->news = NULL;
	w->nnews = 0;
}

/*
 * A preference that was reconciling last cycle and no longer is has been
 * granted (all it asked for) or denied (less). Seen by this watcher only:
 * the state records no reconciling, so a restart in between misses it.
 */
static void quota_changes(struct watch *w, const struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		struct kind_decision d;
		struct quota_news *n;
		char what[300];

		memset(&d, 0, sizeof(d));
		if (!a->kind_of || !a->kind_of->decision || !a->kind_of->decision(a, &d))
			continue;
		snprintf(what, sizeof(what), "pending|%s|%lld", a->address, (long long)d.asked);
		if (d.pending) {
			(void)told_once_in(&w->pending, what);
			continue;
		}
		if (!told_in(&w->pending, what))
			continue;
		if (!(n = news_add(w, a->address)))
			return;
		n->kind = d.granted ? NOTIFY_QUOTA_GRANTED : NOTIFY_QUOTA_DENIED;
		snprintf(n->state, sizeof(n->state), "granted %lld of %lld", d.has_got ? (long long)d.got : 0LL,
			 (long long)d.asked);
		snprintf(n->key, sizeof(n->key), "%lld", (long long)d.asked);
	}
}

static int news_events(struct watch *w, struct notify_list *out, const char *stack)
{
	for (size_t i = 0; i < w->nnews; i++) {
		struct notify_event ev;
		int rc;

		memset(&ev, 0, sizeof(ev));
		ev.kind = w->news[i].kind;
		ev.stack = stack;
		ev.address = w->news[i].address;
		ev.state = w->news[i].state;
		ev.key = w->news[i].key;
		ev.keep_until_ms = w->news[i].until_ms;
		ev.time_ms = vx_now_ms(w->ctx);
		if ((rc = notify_list_add(out, &ev)) < 0)
			return rc;
	}
	return 0;
}

/* ---- watch-error ---- */

static void targets_release(struct watch *w)
{
	for (size_t i = 0; i < w->targets.nnotify; i++) {
		free(w->targets.notify[i].url);
		free(w->targets.notify[i].url_env);
		free(w->targets.notify[i].secret_env);
	}
	free(w->targets.notify);
	free(w->targets.name);
	w->targets.notify = NULL;
	w->targets.nnotify = 0;
	w->targets.name = NULL;
}

/*
 * Keeps the Stack's name and notify: targets of a stack that loaded, as far
 * as they were applied: a target whose digest the state does not hold (new,
 * or changed since vxapply) is kept with no event (on = 0, so its index
 * stays) and told once. A commit not applied never points notifications
 * elsewhere.
 */
static void keep_targets(struct watch *w, const struct stack *st, const struct state *state)
{
	struct stack_notify *t = st->nnotify ? calloc(st->nnotify, sizeof(*t)) : NULL;
	char *name = vx_strdup(st->name);

	if ((st->nnotify && !t) || (st->name && !name)) {
		free(t);
		free(name);
		return;
	}
	for (size_t i = 0; i < st->nnotify; i++) {
		char d[NOTIFY_TARGET_LEN + 1] = "", what[64];

		t[i] = st->notify[i];
		t[i].url = vx_strdup(st->notify[i].url);
		t[i].url_env = vx_strdup(st->notify[i].url_env);
		t[i].secret_env = vx_strdup(st->notify[i].secret_env);
		if (notify_target_digest(d, &st->notify[i]) == 0 && state_notify_target_has(state, d))
			continue;
		t[i].on = 0;
		snprintf(what, sizeof(what), "target|%.32s", d);
		if (!told_once(w, what))
			say(w, "unapplied", NULL, "notify[%zu]: declared but not applied (a new or changed notify "
			    "target); waiting for vxapply", i);
	}
	targets_release(w);
	w->targets.notify = t;
	w->targets.nnotify = st->nnotify;
	w->targets.name = name;
}

static const char *err_getenv(void *ud, const char *name)
{
	struct watch *w = ud;

	return w->o.getenv ? w->o.getenv(name) : NULL;
}

static int err_delivered(void *ud, const char *key)
{
	return !strcmp(((struct watch *)ud)->err_sent, key);
}

static int err_record(void *ud, const char *key, int64_t at_ms)
{
	(void)at_ms;
	snprintf(((struct watch *)ud)->err_sent, NOTIFY_KEY_LEN + 1, "%s", key);
	return 0;
}

/*
 * After a failed cycle: the same error WATCH_ERROR_CYCLES times in a row is
 * told to the targets once per streak. Recorded in memory only: the state
 * may be what fails.
 */
static void note_error(struct watch *w, const char *msg)
{
	struct notify_list l = { NULL, 0 };
	struct notify_event ev;
	struct notify_report rep;
	struct notify_sink sink = { err_delivered, err_record, err_getenv, NULL, w->o.notify_loopback, w,
				    notify_host_here };
	struct vx_err e = VX_ERR_INIT;
	char key[24];

	if (!w->err_msg || strcmp(w->err_msg, msg)) {
		free(w->err_msg);
		w->err_msg = vx_strdup(msg);
		w->err_streak = 0;
		w->err_since_ms = vx_now_ms(w->ctx);
	}
	if (++w->err_streak != WATCH_ERROR_CYCLES || !w->targets.nnotify)
		return;
	memset(&ev, 0, sizeof(ev));
	snprintf(key, sizeof(key), "%lld", (long long)w->err_since_ms);
	ev.kind = NOTIFY_WATCH_ERROR;
	ev.stack = w->targets.name;
	ev.message = msg;
	ev.key = key;
	ev.time_ms = vx_now_ms(w->ctx);
	if (notify_list_add(&l, &ev) < 0)
		return;
	if (notify_send(&rep, w->outbox, w->prov, &w->targets, &l, &sink, ev.time_ms, 1, &e) == 0) {
		for (size_t i = 0; i < rep.n; i++)
			say(w, "notify", NULL, "watch-error to notify[%zu]%s%s", rep.items[i].target,
			    rep.items[i].sent ? " delivered" : " not delivered: ", rep.items[i].why ? rep.items[i].why : "");
		notify_report_release(&rep);
	}
	vx_err_release(&e);
	notify_list_release(&l);
}

/* ---- the cycle ---- */

/* The runs the state holds as active: the watch reader reads them by name when they leave the list. */
static int expect_active(struct watch *w, const struct state *st)
{
	const char **names = calloc(st->nrecords + 1, sizeof(*names));
	size_t n = 0;
	int rc;

	if (!names)
		return VX_ENOMEM;
	for (size_t i = 0; i < st->nrecords; i++) {
		const struct state_run *cur = st->records[i].current;

		if (cur && cur->resource && !job_state_is_terminal(cur->state))
			names[n++] = cur->resource;
	}
	rc = watch_live_expect(w->live, names, n);
	free(names);
	return rc;
}

/* Opens the provider of ws and refreshes through the watcher's reader. */
static int use_reader(struct watch *w, struct workspace *ws, struct vx_err *err)
{
	int rc;

	if ((rc = workspace_provider(ws, err)) < 0)
		return rc;
	if (!w->live && (rc = watch_live_new(&w->live, ws->prov, w->ctx,
					     w->o.full_every_ms ? w->o.full_every_ms : 600000, err)) < 0)
		return rc;
	watch_live_set_real(w->live, ws->prov);
	ws->reader = watch_live_provider(w->live);
	if (ws->state_loaded && (rc = expect_active(w, &ws->state)) < 0)
		return vx_err_set(err, rc, "out of memory");
	return 0;
}

static void count_jobs(struct watch_result *res, const struct live_jobs *js)
{
	static const char *const full[] = { "JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING",
					    "JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED" };

	memset(res->jobs_by_state, 0, sizeof(res->jobs_by_state));
	for (size_t i = 0; i < js->n; i++) {
		size_t k = 0;

		while (k < 6 && (!js->items[i].state || strcmp(js->items[i].state, full[k])))
			k++;
		res->jobs_by_state[k]++;
	}
}

/* ---- the idle fast path ---- */

static int is_yaml(const char *s)
{
	size_t n = strlen(s);

	return s[0] != '.' && ((n > 5 && !strcmp(s + n - 5, ".yaml")) || (n > 4 && !strcmp(s + n - 4, ".yml")));
}

/* What the digests take of a file: size, modification time, inode, device; *newest (may be NULL) raised to its time. */
static void file_stamp(const struct stat *sb, int64_t v[5], int64_t *newest)
{
	v[0] = (int64_t)sb->st_size;
	v[1] = (int64_t)sb->st_mtim.tv_sec;
	v[2] = (int64_t)sb->st_mtim.tv_nsec;
	v[3] = (int64_t)sb->st_ino;
	v[4] = (int64_t)sb->st_dev;
	if (newest && v[1] * 1000000000 + v[2] > *newest)
		*newest = v[1] * 1000000000 + v[2];
}

int watch_files_digest(const char *dir, uint64_t *out, int64_t *newest, struct vx_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct vx_buf p = VX_BUF_INIT;
	uint64_t sum = 0, n = 0;
	int rc = 0;

	*out = 0;
	if (newest)
		*newest = 0;
	if (!d)
		return vx_err_set(err, VX_EIO, "reading %s: %s", dir, strerror(errno));
	/* The files the stack loads (reconcile/stack.c): its *.yaml and *.yml, by name,
	 * size, modification time and inode; a sum, so the order read does not matter. */
	while ((errno = 0, de = readdir(d)) != NULL) {
		struct stat sb;
		int64_t v[5];
		uint64_t h = VX_FNV1A64_BASIS;

		if (!is_yaml(de->d_name))
			continue;
		vx_buf_reset(&p);
		if (vx_buf_printf(&p, "%s/%s", dir, de->d_name) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		if (stat(p.data, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		file_stamp(&sb, v, newest);
		h = vx_fnv1a64_add(h, de->d_name, strlen(de->d_name) + 1);
		h = vx_fnv1a64_add(h, v, sizeof(v));
		sum += h;
		n++;
	}
	if (errno) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", dir, strerror(errno));
		goto done;
	}
	*out = vx_fnv1a64_add(sum, &n, sizeof(n));
done:
	vx_buf_release(&p);
	closedir(d);
	return rc;
}

/*
 * What the stack is read from this cycle: its files and the repository's
 * policy file, or the followed commit. *settled (may be NULL) is 0 when a
 * file was written in the last two seconds: a write in the same tick of the
 * file system's clock may keep the time and size the digest saw (git's
 * index calls such entries "racily clean"), so the stack loaded now is not
 * kept for later cycles.
 */
static int stack_digest(struct watch *w, uint64_t *out, int *settled, struct vx_err *err)
{
	int64_t newest = 0;
	struct stat sb;
	int rc;

	if (settled)
		*settled = 1;
	if (w->remote) {
		*out = vx_fnv1a64(w->good.commit, strlen(w->good.commit));
		return 0;
	}
	if ((rc = watch_files_digest(w->o.dir, out, &newest, err)) < 0)
		return rc;
	if (w->policy_path && stat(w->policy_path, &sb) == 0) {
		int64_t v[5];

		file_stamp(&sb, v, &newest);
		*out = vx_fnv1a64_add(*out, v, sizeof(v));
	}
	if (settled)
		*settled = newest / 1000000000 < (int64_t)time(NULL) - 2;
	return 0;
}

/*
 * The stack kept from the last cycle is used again only when what it was
 * read from is unchanged (key) and was settled then; otherwise it is
 * dropped and this cycle's look loads the stack afresh, which the act then
 * uses too (w->kept, filled by the workspace).
 */
static void kept_check(struct watch *w, int key_ok, uint64_t key, int settled)
{
	if (key_ok && w->kept && w->kept_settled && key == w->kept_key) {
		vx_log(w->ctx, VX_LOG_DEBUG, "watch: the stack's files are as the last cycle read them: not read again");
		return;
	}
	stack_free(w->kept);
	w->kept = NULL;
	w->kept_key = key;
	w->kept_settled = key_ok && settled;
}

static void idle_disarm(struct watch *w)
{
	w->idle_armed = 0;
	free(w->idle_rev);
	w->idle_rev = NULL;
	state_backend_free(w->idle_backend);
	w->idle_backend = NULL;
}

/*
 * After a look that found nothing to do: keeps what its decision depended
 * on, when all of it can be told again cheaply. Not for a stack that
 * declares reservations or quotas (their refresh is not a list of active
 * jobs), nor a state the backend cannot tell the revision of without
 * loading it or fetching (file, gcs, git with a remote).
 */
static void idle_arm(struct watch *w, struct workspace *ws, const struct plan *p, uint64_t files,
		     const struct watch_result *res, int64_t now)
{
	int64_t until = w->deadline_ms;

	if (!w->live || ws->st->state.backend != STACK_BACKEND_GIT || ws->st->state.remote || w->nnews ||
	    w->pending.n || !ws->backend || w->notify_due)
		return;
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct job_action *ja = job_action_of(a);
		const struct stack_job *j = job_action_job(a);
		const struct plan_run *cur = ja->record ? ja->record->current : NULL;
		int64_t t;

		if (!a->kind_of || !a->kind_of->watch_runs)
			return;
		/* A run queued or pending is "stuck" after stuckAfter (reconcile/notify.c). */
		if (j && cur && cur->created_ms > 0 && ja->live_state &&
		    (!strcmp(ja->live_state, "JOB_STATE_QUEUED") || !strcmp(ja->live_state, "JOB_STATE_PENDING")) &&
		    (t = cur->created_ms + j->stuck_after_ms) > now && t < until)
			until = t;
		/* A refused create's backoff ends: the next full cycle asks again. */
		if (ja->not_before_ms > now && ja->not_before_ms < until)
			until = ja->not_before_ms;
	}
	if (ws->revision && !(w->idle_rev = strdup(ws->revision)))
		return;
	w->idle_backend = ws->backend;
	ws->backend = NULL;
	w->idle_files = files;
	w->idle_until_ms = until;
	memcpy(w->idle_jobs, res->jobs_by_state, sizeof(w->idle_jobs));
	w->idle_armed = 1;
}

/*
 * Whether this cycle may be idle: the stack's files (or followed commit),
 * the state's revision, the clock and the active lists are as the last
 * full cycle left them. When in doubt, no (0, *same 0). *followed: the
 * followed branch was fetched already.
 */
static int idle_check(struct watch *w, int *same, int *followed, struct vx_err *err)
{
	uint64_t files;
	char *rev = NULL;
	int rc;

	*same = 0;
	if (w->remote) {
		*followed = 1;
		if ((rc = follow(w, err)) < 0)
			return rc;
	}
	if (stack_digest(w, &files, NULL, err) < 0) {
		vx_err_release(err);
		return 0;
	}
	if (files != w->idle_files || provider_now_ms(w->prov, w->ctx) >= w->idle_until_ms)
		return 0;
	if (state_revision(w->idle_backend, &rev, err) < 0) {
		vx_err_release(err);
		return 0;
	}
	rc = !rev != !w->idle_rev || (rev && strcmp(rev, w->idle_rev));
	free(rev);
	if (rc)
		return 0;
	return watch_live_idle(w->live, same, err);
}

/*
 * The look without the lease: whether anything needs doing. Fills *need
 * (1: take the lease) and the job counts. followed: the followed branch
 * was fetched this cycle already.
 */
static int look(struct watch *w, int *need, struct watch_result *res, int followed, struct vx_err *err)
{
	struct workspace ws;
	struct planning pl;
	struct planning_opts po;
	struct notify_list events = { NULL, 0 };
	struct live_set kinds;
	char *summary = NULL;
	int64_t now = vx_now_ms(w->ctx);
	size_t refreshed, left;
	uint64_t files = 0;
	int rc, planned = 0, files_ok = 0, settled = 0;

	*need = 0;
	idle_disarm(w);
	w->deadline_ms = INT64_MAX;
	w->untold = 0;
	memset(&ws, 0, sizeof(ws));
	memset(&pl, 0, sizeof(pl));
	memset(&po, 0, sizeof(po));
	po.refresh = 1;
	po.budget_holds = 1;
	if (w->remote && !followed && (rc = follow(w, err)) < 0)
		goto done;
	/* Read before the files are: a change while they load shows next cycle. */
	if (stack_digest(w, &files, &settled, err) == 0)
		files_ok = 1;
	else
		vx_err_release(err);
	kept_check(w, files_ok, files, settled);
	if ((rc = workspace_open_lent(&ws, w->ctx, w->o.dir, w->prov, source(w), &w->kept, WORKSPACE_LENIENT, &w->wev,
				      err)) < 0 ||
	    (rc = workspace_load_state(&ws, err)) < 0 || (rc = use_reader(w, &ws, err)) < 0 ||
	    (rc = planning_run(&pl, &ws, &po, err)) < 0)
		goto done;
	planned = 1;
	now = provider_now_ms(w->prov, w->ctx); /* Google's: what the plan's times are on */
	keep_targets(w, ws.st, &ws.state);
	count_jobs(res, kind_job_listed(&ws.store));
	if (pl.planner.plan.errors.n) {
		on_diags(w, &pl.planner.plan.errors);
		rc = vx_err_set(err, VX_EINVAL, "the plan has errors: nothing is done until they are fixed");
		goto done;
	}
	left = keep_authorised(w, &pl.planner.plan, ws.st->policy, now, 1);
	left -= budget_holds(w, &pl, &ws, now, 1);
	*need = left > 0 || w->untold;
	kinds = live_store_view(&ws.store);
	refreshed = apply_refresh_state(&ws.state, kind_job_listed(&ws.store), &kinds, &summary);
	if ((rc = notify_collect(&events, &pl.planner.plan, ws.st->name, now, google_since(w, now))) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	warn_too_old(w, ws.st, &pl.planner.plan, now);
	news_release(w);
	quota_changes(w, &pl.planner.plan);
	warn_news(w, &pl, &ws, now);
	if (ws.st->nnotify && (rc = news_events(w, &events, ws.st->name)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	*need = *need || refreshed || ws.migrated || undelivered(w, &ws.state, &events);
	if (!*need && files_ok) {
		told_turn(&w->told);
		told_turn(&w->pending);
		planned = 0;
		idle_arm(w, &ws, &pl.planner.plan, files, res, now);
	}
done:
	/* What was not told again this time no longer holds (only when it planned). */
	if (planned) {
		told_turn(&w->told);
		told_turn(&w->pending);
	}
	free(summary);
	notify_list_release(&events);
	planning_release(&pl);
	workspace_close(&ws);
	return rc;
}

/* One record line per run that changed ("job.a: running -> failed (preempted)"). */
static void say_recorded(struct watch *w, const char *summary)
{
	const char *l = summary ? summary : "";

	while (*l) {
		size_t n = strcspn(l, "\n");

		if (n) {
			char *one = strndup(l, n), *addr = one ? address_in(one) : NULL;

			say(w, "record", addr, "recorded: %s", one ? one : "");
			free(addr);
			free(one);
		}
		l += n + (l[n] == '\n');
	}
}

/* After applying_run: the counts and the failures. */
static void account_run(struct watch *w, struct applying *ap, struct watch_result *res)
{
	res->done = ap->res.ok;
	res->failed = ap->res.failed;
	res->acted = res->acted || ap->res.ok;
	for (size_t i = 0; i < ap->res.failures.n; i++)
		say(w, "failed", NULL, "%s", ap->res.failures.items[i].msg);
	for (size_t i = 0; i < ap->pl.planner.plan.n; i++) {
		const struct plan_action *a = &ap->pl.planner.plan.actions[i];
		const struct state_record *r = a->op == PLAN_RESUBMIT ? state_find(&ap->ws.state, a->address) : NULL;

		if (r && r->current && r->current->attempt == job_action_of(a)->attempt && r->current->resource)
			res->resubmitted++;
	}
}

/* The options of a cycle's apply: vxapply's steps, as a watcher takes them. */
static void act_opts(struct watch *w, struct applying_opts *ao, const struct applying_events *aev)
{
	memset(ao, 0, sizeof(*ao));
	ao->ev = aev;
	ao->ci = w->o.ci;
	ao->parallelism = w->o.parallelism;
	ao->lease_ms = w->o.lease_ms;
	ao->inflight_ms = w->o.inflight_ms;
	ao->lock_timeout_ms = w->o.lock_wait_ms ? w->o.lock_wait_ms : 5000;
	ao->operation = "watch";
	ao->getenv = w->o.getenv;
	ao->notify_loopback = w->o.notify_loopback;
	ao->keep_policy = !w->o.sync;
}

/*
 * Takes the lease (locked) or only loads the state (a cycle whose only work
 * is notifications needs no lease: each delivery's record takes it for its
 * own write). 1 when the lease is another's (the cycle is skipped, said).
 */
static int act_lock(struct watch *w, struct applying *ap, const struct applying_opts *ao, int locked,
		    struct watch_result *res, struct vx_err *err)
{
	struct planning_opts lock_po;
	int rc;

	memset(&lock_po, 0, sizeof(lock_po)); /* no prefetch: the watcher's reader lists */
	if (!locked) {
		ap->opts = ao;
		return workspace_load_state(&ap->ws, err);
	}
	rc = applying_lock(ap, ao, &lock_po, err);
	if (rc == VX_ECONFLICT) {
		const char *m = vx_err_msg(err), *advice = strstr(m, "; lock id ");

		res->skipped = 1;
		/* Who holds it and until when; not vxapply's advice to wait or unlock: the
		 * next cycle asks again, and a running apply's lease is never to be cleared. */
		say(w, "skip", NULL, "skipped: %.*s; the next cycle tries again", advice ? (int)(advice - m) : (int)strlen(m),
		    m);
		vx_err_release(err);
		return 1;
	}
	return rc;
}

/* Under the lease: the refresh recorded, what is authorised carried out. */
static int act_apply(struct watch *w, struct applying *ap, const struct applying_opts *ao,
		     const struct planning_opts *po, int64_t now, struct watch_result *res, struct vx_err *err)
{
	int rc;

	if ((rc = applying_record(ap, po, err)) < 0)
		return rc;
	if (ap->refreshed) {
		res->acted = 1;
		say_recorded(w, ap->refresh_summary);
	}
	/* After the refresh is recorded: the spend counts the runs that just ended. */
	(void)budget_holds(w, &ap->pl, &ap->ws, now, 0);
	/* -sync records what waits as applied, as vxapply does, even with no change. */
	if (planning_has_changes(&ap->pl) || (w->o.sync && planning_has_waits(&ap->pl))) {
		if ((rc = applying_run(ap, ao, err)) < 0)
			return rc;
		account_run(w, ap, res);
	}
	/* -sync applies the whole declaration, its notify targets too. */
	return w->o.sync ? applying_targets(ap, err) : 0;
}

/*
 * Plan again as things are now and, under the lease (locked), do what is
 * authorised; then, the lease given back, notify. Without locked, only
 * notify: nothing else was found to do.
 */
static int act(struct watch *w, struct watch_result *res, int locked, struct vx_err *err)
{
	struct applying ap;
	struct planning_opts po;
	struct applying_events aev = { .progress = on_progress, .ud = w };
	struct applying_opts ao;
	struct notify_list events = { NULL, 0 };
	int64_t now;
	int rc;

	memset(&po, 0, sizeof(po));
	po.refresh = 1;
	po.budget_holds = 1;
	act_opts(w, &ao, &aev);
	applying_init(&ap);
	/* The look's stack (w->kept): the same files, not read again. */
	if ((rc = applying_open_lent(&ap, w->ctx, w->o.dir, w->prov, source(w), &w->kept, WORKSPACE_LENIENT, &w->wev,
				     err)) < 0)
		goto done;
	if ((rc = act_lock(w, &ap, &ao, locked, res, err)) != 0) {
		rc = rc > 0 ? 0 : rc;
		goto done;
	}
	if ((rc = use_reader(w, &ap.ws, err)) < 0 || (rc = applying_plan(&ap, &ao, &po, err)) < 0)
		goto done;
	if (ap.pl.planner.plan.errors.n) {
		on_diags(w, &ap.pl.planner.plan.errors);
		rc = vx_err_set(err, VX_EINVAL, "the plan has errors: nothing is done until they are fixed");
		goto done;
	}
	now = provider_now_ms(w->prov, w->ctx);
	/* The locked plan tells; a notify-only cycle's plan (no lease) is quiet, as the look is. */
	(void)keep_authorised(w, &ap.pl.planner.plan, ap.ws.st->policy, now, !locked);
	if (locked && (rc = act_apply(w, &ap, &ao, &po, now, res, err)) < 0)
		goto done;
	keep_targets(w, ap.ws.st, &ap.ws.state);
	if ((rc = applying_events(&ap, google_since(w, now), &events)) < 0 || (rc = news_events(w, &events, ap.ws.st->name)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	if (!vx_interrupted(w->ctx))
		rc = send_notifications(w, &ap, &events, res, err);
done:
	notify_list_release(&events);
	applying_close(&ap);
	return rc;
}

int watch_cycle(struct watch *w, struct watch_result *res, struct vx_err *err)
{
	struct watch_live_stats before, after;
	int need = 0, rc;

	int idle = 0, followed = 0;

	memset(res, 0, sizeof(*res));
	memset(&before, 0, sizeof(before));
	if (w->live)
		watch_live_stats(w->live, &before);
	rc = w->idle_armed ? idle_check(w, &idle, &followed, err) : 0;
	if (rc == 0 && idle) {
		/* Nothing it depends on changed: the last full cycle's decision holds. */
		res->idle = 1;
		memcpy(res->jobs_by_state, w->idle_jobs, sizeof(res->jobs_by_state));
	} else if (rc == 0) {
		rc = look(w, &need, res, followed, err);
		/* Only notifications to send: no lease (each delivery's record takes it). */
		if (rc == 0 && !vx_interrupted(w->ctx) && (need || w->notify_due))
			rc = act(w, res, need, err);
	}
	if (rc < 0)
		idle_disarm(w);
	if (w->live) {
		watch_live_cycle_end(w->live);
		watch_live_stats(w->live, &after);
		res->full_lists = after.full_lists - before.full_lists;
		res->active_lists = after.active_lists - before.active_lists;
		res->gets = after.gets - before.gets;
		/* After a failure, list everything next time. Its own changes need no
		 * full list: what it created is active, what it cancelled is read by name. */
		if (rc < 0)
			watch_live_invalidate(w->live);
	}
	if (rc < 0 && !vx_interrupted(w->ctx))
		note_error(w, vx_err_msg(err));
	else if (rc == 0)
		w->err_streak = 0;
	return rc;
}

/* REMOTE/BRANCH, and where the stack is in the repository. */
static int follow_setup(struct watch *w, const char *spec, struct vx_err *err)
{
	const char *slash = strchr(spec, '/');
	char *root = NULL, *real = NULL;
	size_t n;
	int rc = 0;

	if (!slash || slash == spec || !slash[1])
		return vx_err_set(err, VX_EINVAL, "-follow takes REMOTE/BRANCH (origin/main), not \"%s\"", spec);
	if (!(w->remote = strndup(spec, (size_t)(slash - spec))) || !(w->branch = strdup(slash + 1)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((rc = state_git_workdir(&root, w->o.dir, err)) < 0)
		return vx_err_wrap(err, "-follow: %s", w->o.dir);
	if (!(real = realpath(w->o.dir, NULL))) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: no such directory", w->o.dir);
		goto done;
	}
	n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (!strcmp(real, root) || (!strncmp(real, root, n) && real[n] == '\0'))
		w->dir_in_repo = strdup(".");
	else if (!strncmp(real, root, n) && real[n] == '/')
		w->dir_in_repo = strdup(real + n + 1);
	else
		rc = vx_err_set(err, VX_EINVAL, "-follow: %s is not inside the repository at %s", real, root);
	if (rc == 0 && !w->dir_in_repo)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	free(root);
	free(real);
	return rc;
}

/* The repository's policy file a stack read from its directory is bound by (NULL: none, or out of memory). */
static void policy_path_of(struct watch *w)
{
	struct vx_err e = VX_ERR_INIT;
	char *root = NULL;

	if (state_git_workdir(&root, w->o.dir, &e) == 0)
		w->policy_path = vx_asprintf("%s/%s", root, POLICY_REPO_FILE);
	vx_err_release(&e);
	free(root);
}

int watch_new(struct watch **out, struct vx_ctx *ctx, const struct watch_opts *opts,
	      const struct watch_events *ev, struct vx_err *err)
{
	struct watch *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	if (!w || notify_outbox_new(&w->outbox) < 0) {
		free(w);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	if ((rc = gcp_provider_new(&w->prov, ctx, NULL, err)) < 0) {
		notify_outbox_free(w->outbox);
		free(w);
		return rc;
	}
	w->ctx = ctx;
	w->o = *opts;
	if (ev)
		w->ev = *ev;
	w->wev.diags = on_diags;
	w->wev.problem = on_problem;
	w->wev.ud = w;
	w->since_ms = vx_now_ms(ctx) - NOTIFY_LOOKBACK_MS;
	if (opts->follow && (rc = follow_setup(w, opts->follow, err)) < 0) {
		watch_free(w);
		return rc;
	}
	if (!opts->follow)
		policy_path_of(w);
	*out = w;
	return 0;
}

size_t watch_api_errors(struct watch *w, const char **names, uint64_t *counts, size_t max)
{
	return w->prov && w->prov->api_errors ? w->prov->api_errors(w->prov, names, counts, max) : 0;
}

int64_t watch_retry_after(struct watch *w)
{
	return w->prov && w->prov->retry_after ? w->prov->retry_after(w->prov) : 0;
}

void watch_free(struct watch *w)
{
	if (!w)
		return;
	watch_live_free(w->live);
	if (w->prov)
		w->prov->free(w->prov);
	notify_outbox_free(w->outbox);
	told_release(&w->told);
	free(w->remote);
	free(w->branch);
	free(w->dir_in_repo);
	git_follow_release(&w->fetched);
	git_follow_release(&w->good);
	free(w->src_files);
	targets_release(w);
	free(w->err_msg);
	idle_disarm(w);
	told_release(&w->pending);
	news_release(w);
	stack_free(w->kept);
	free(w->policy_path);
	free(w);
}
