/*
 * A job's runs: the next attempt of a run (adopting a live job that already
 * carries its labels, resubmitting a failure while resubmit.on and
 * maxAttempts allow, waiting out the backoff after a refused create), the
 * failure class of the current run, and the state's runs brought up to
 * date from the live listing (apply_refresh_state).
 */
#include "reconcile/kind_job_internal.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/apply.h"
#include "reconcile/failure.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/runlabel.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* The backoff after a refused create: at least a minute, at most 15. */
#define REFUSAL_MIN_WAIT_MS (60 * 1000)
#define REFUSAL_MAX_WAIT_MS (15 * 60 * 1000)

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* "2026-11-20 10:02Z" from epoch milliseconds ("2026-11-20 10:02:07Z" with seconds, for a
 * backoff's end); "an unknown time" for none. */
static void fmt_utc(char *buf, size_t len, int64_t ms, int seconds)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "an unknown time");
		return;
	}
	strftime(buf, len, seconds ? "%Y-%m-%d %H:%M:%SZ" : "%Y-%m-%d %H:%MZ", &tm);
}

/*
 * The newest live job carrying exactly the labels of run (spec, run,
 * attempt) of job name, that is not one of the record's known runs.
 */
static const struct live_job *live_for_run(struct builder *b, const char *name,
					   const char *hash, int64_t run, int64_t attempt,
					   const struct plan_record *rec)
{
	const struct plan_input *in = b->in;
	const struct live_job *best = NULL;
	struct run_id id = { in->stack, in->lineage, name, hash, run, attempt, 0 };
	char label[SWEEP_LABEL_MAX + 1];
	struct vx_label *want = NULL;
	size_t nwant = 0;

	if (!in->live)
		return NULL;
	if (runlabel_build(&want, &nwant, &id, NULL, 0) < 0) {
		b->oom = 1;
		return NULL;
	}
	/* a sweep's run carries a label made from its name (reconcile/sweep.h) */
	sweep_job_label(label, name);
	for (size_t i = job_by_job_lower(b, label); i < b->nby_job && !strcmp(job_vx_job_of(b->by_job[i]), label); i++) {
		const struct live_job *j = b->by_job[i];

		/* The lineage is proved by job_owned(): the state may know the job by name. */
		/* Nor the rung: the attempt names the run, and a job of a vx from
		 * before ladders carries no vx-rung. */
		if (!runlabel_match(j->labels, j->nlabels, want, nwant,
				    RUNLABEL_ALL & ~RUNLABEL_LINEAGE & ~RUNLABEL_RUNG) ||
		    !job_owned(b, j))
			continue;
		if (rec && rec->current && rec->current->name && j->name &&
		    !strcmp(rec->current->name, j->name))
			continue;
		if (rec && j->name && in_list(j->name, rec->known, rec->nknown))
			continue;
		/* Nor a run another record holds (one moved there by `vx state mv`
		 * still carries its old address's vx-job). */
		if (j->name && job_is_known(b, j->name))
			continue;
		if (!best || j->create_ms > best->create_ms)
			best = j;
	}
	vx_labels_free(want, nwant);
	return best;
}

/*
 * The highest vx-attempt among the live jobs of this stack (proved ours)
 * carrying the labels of job name's (spec, run) that the state does not
 * know; 0 when none. A state rewound to an older version forgets attempts
 * it made: their jobs still carry their numbers, which the next attempt
 * must not take again (two jobs of one label would each be taken for the
 * other), and which maxAttempts counts. The runs the state knows are its
 * own to number: -replace starts a finished job's count again at 1.
 */
static int64_t live_max_attempt(struct builder *b, const char *name, const char *hash, int64_t run,
				const struct live_job **job)
{
	const struct plan_input *in = b->in;
	struct run_id id = { in->stack, in->lineage, name, hash, run, 1, 0 };
	char label[SWEEP_LABEL_MAX + 1];
	struct vx_label *want = NULL;
	size_t nwant = 0;
	int64_t max = 0;

	*job = NULL;
	if (!in->live)
		return 0;
	if (runlabel_build(&want, &nwant, &id, NULL, 0) < 0) {
		b->oom = 1;
		return 0;
	}
	sweep_job_label(label, name);
	for (size_t i = job_by_job_lower(b, label); i < b->nby_job && !strcmp(job_vx_job_of(b->by_job[i]), label); i++) {
		const struct live_job *j = b->by_job[i];
		const char *v = live_job_label(j, "vx-attempt");
		char *end = NULL;
		long long n;

		if (!v || !runlabel_match(j->labels, j->nlabels, want, nwant,
					  RUNLABEL_ALL & ~RUNLABEL_LINEAGE & ~RUNLABEL_RUNG & ~RUNLABEL_ATTEMPT) ||
		    !job_owned(b, j) || job_is_known(b, j->name))
			continue;
		n = strtoll(v, &end, 10);
		if (end != v && !*end && n > max && n <= INT32_MAX) {
			max = (int64_t)n;
			*job = j;
		}
	}
	vx_labels_free(want, nwant);
	return max;
}

/*
 * The attempt a new run of d is created as, when no live job was adopted
 * for attempt: attempt, or past the highest a live job of (spec, run)
 * carries (*seen: that job, when it moved the number; else NULL).
 */
int64_t job_next_attempt(struct builder *b, const struct plan_decl *d, int64_t attempt,
			    const struct live_job **seen)
{
	int64_t high = live_max_attempt(b, d->name, d->spec_hash, d->run, seen);

	if (high < attempt) {
		*seen = NULL;
		return attempt;
	}
	return high + 1;
}

/*
 * Says in a's reason that its attempt number moved past a live job's
 * (job_next_attempt): "...; attempt 2 is projects/.../customJobs/9 (failed),
 * which the state does not record". Nothing when seen is NULL.
 */
void job_note_seen(struct builder *b, struct plan_action *a, const struct live_job *seen)
{
	if (!seen || !a->reason)
		return;
	job_set_fmt(b, &a->reason, vx_asprintf("%s; attempt %s is %s (%s), which the state does not record",
					   a->reason, live_job_label(seen, "vx-attempt"), seen->name,
					   job_state_short(seen->state)));
}

/*
 * A new run is about to be planned (create, rerun, resubmit, replace): if a
 * live job already has its labels, adopt it instead. Returns 1 when adopted.
 */
int job_maybe_adopt(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		       int64_t attempt, int64_t rung, const char *why, const char *cancel_name)
{
	const struct live_job *j = live_for_run(b, d->name, d->spec_hash, d->run, attempt, rec);
	struct plan_action *a;
	struct job_action *ja;

	if (!j)
		return 0;
	a = job_add_action(b, PLAN_ADOPT, d->address);
	ja = job_action_mut(a);
	if (!a)
		return 1;
	job_fill_decl(b, a, d);
	ja->record = rec;
	ja->run = d->run;
	ja->attempt = attempt;
	job_set_rung(b, a, d, rung);
	job_set_str(b, &ja->adopt_name, j->name);
	job_set_str(b, &ja->live_state, j->state);
	ja->adopt_create_ms = j->create_ms;
	job_set_str(b, &ja->cancel_name, cancel_name);
	if (rec && rec->current)
		job_set_str(b, &ja->old_hash, rec->spec_hash);
	job_set_fmt(b, &a->reason, vx_asprintf("%s; a live job with its labels already exists (%s, %s): "
					   "an earlier apply created it", why, j->name,
					   job_state_short(j->state)));
	return 1;
}

/* Whether class is listed in the declaration's resubmit.on. */
static int resubmits(const struct plan_decl *d, const char *cls)
{
	return cls && in_list(cls, d->resubmit_on, d->nresubmit_on);
}

/* Whether the declaration lists any exit status in resubmit.onExitCodes. */
static int has_exit_codes(const struct plan_decl *d)
{
	const uint64_t *c = d->policy ? d->policy->on_exit_codes : NULL;

	return c && (c[0] | c[1] | c[2] | c[3]);
}

/* Whether exit status code (1..255) is listed in resubmit.onExitCodes. */
static int exit_code_listed(const struct plan_decl *d, int code)
{
	return d->policy && code > 0 && code < 256 &&
	       (d->policy->on_exit_codes[code / 64] & (UINT64_C(1) << (code % 64)));
}

/* The replica's exit status of a user-error run, from Google's sentence; 0: none. */
static int run_exit_code(const struct failed *f)
{
	return f->cls && !strcmp(f->cls, "user-error") && !f->vanished ? failure_exit_code(f->msg) : 0;
}

/*
 * Whether the failed run f is resubmitted (budget allowing): its class is in
 * resubmit.on, or it is a user-error whose replica exited with a status
 * resubmit.onExitCodes lists (user-error need not be in resubmit.on).
 */
static int resubmits_run(const struct plan_decl *d, const struct failed *f)
{
	/* A run vx cancelled after resubmit.maxQueued goes on without an entry in on. */
	return resubmits(d, f->cls) || exit_code_listed(d, run_exit_code(f)) ||
	       (f->cls && !strcmp(f->cls, "queue-timeout"));
}

static void set_error(struct builder *b, struct plan_action *a, int code, const char *msg)
{
	struct job_action *ja = job_action_mut(a);

	ja->error_code = code;
	job_set_str(b, &ja->error_message, msg);
}

/*
 * The reservation a canonical spec's reservationAffinity names
 * (SPECIFIC_RESERVATION: its one value, a full reservation name), into out;
 * 0 when it names none. Keys are sorted and names hold no quotes, so the
 * object is {"key":...,"reservationAffinityType":...,"values":["..."]}.
 */
static int spec_reservation(const char *spec_json, char *out, size_t size)
{
	const char *at = spec_json ? strstr(spec_json, "\"reservationAffinity\":{") : NULL;
	const char *end = at ? strchr(at, '}') : NULL, *v, *q;

	if (!end || !(v = strstr(at, "\"values\":[\"")) || v > end)
		return 0;
	v += strlen("\"values\":[\"");
	if (!(q = strchr(v, '"')) || q > end || (size_t)(q - v) >= size)
		return 0;
	memcpy(out, v, (size_t)(q - v));
	out[q - v] = '\0';
	return 1;
}

const char *job_classify(struct failure_input *in, const struct live_set *kinds, const char *spec_json,
			 const char *prev, struct job_window *w)
{
	char res[512];
	int on = kinds && spec_reservation(spec_json, res, sizeof(res));
	const char *cls;

	memset(w, 0, sizeof(*w));
	for (size_t i = 0; on && i < kind_count; i++)
		if (kind_table[i]->window_of && kind_table[i]->window_of(kinds, res, &w->win)) {
			w->kind = kind_table[i];
			in->window_end_ms = w->win.end_ms;
			break;
		}
	/* A run vx cancelled after resubmit.maxQueued is queue-timeout once it
	 * has ended cancelled (while it is cancelling: nothing yet), even if it
	 * started between vx's last look and the cancel; one that ended
	 * otherwise (the cancel never went out) is classed as any run. */
	if (prev && !strcmp(prev, "queue-timeout") && in->cancelled_by_vx) {
		if (job_state_is_active(in->state))
			return NULL;
		if (in->state && !strcmp(in->state, "JOB_STATE_CANCELLED"))
			return prev;
	}
	cls = failure_classify(in);
	return cls && prev && !strcmp(prev, "window-ended") ? prev : cls;
}

/*
 * The failure class of the current run: its state and error, and what the
 * job itself says (its rung's scheduling strategy, whether it ever started,
 * whether vx cancelled it, when it ended and on whose reservation). f->lj
 * is the live job, NULL when not refreshing or when it vanished;
 * f->window is set to the booking whose window ended it.
 */
const char *job_run_failure(const struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    struct failed *f)
{
	const struct plan_run *cur = rec->current;
	size_t n = d->nrungs > 1 ? d->nrungs : 1;
	size_t k = f->at < 0 ? 0 : (uint64_t)f->at >= n ? n - 1
							: (size_t)f->at;
	struct failure_input in = {
		.state = f->state,
		.error_code = f->code,
		.message = f->msg,
		.scheduling = cur->rung_id.scheduling ? cur->rung_id.scheduling
			      : d->rung_ids	      ? d->rung_ids[k].scheduling
						      : NULL,
		.started = (f->lj ? f->lj->start_ms : 0) > 0 || cur->started_ms > 0,
		.cancelled_by_vx = cur->cancelled_by_vx,
		.ended_ms = f->lj && f->lj->end_ms ? f->lj->end_ms : cur->end_ms,
		.started_ms = f->lj && f->lj->start_ms ? f->lj->start_ms : cur->started_ms,
		.timeout_ms = cur->timeout_ms ? cur->timeout_ms : failure_spec_timeout_ms(rec->spec_json),
	};

	return job_classify(&in, b->in->kinds, rec->spec_json, cur->failure, &f->window);
}

static char *rules_stop_class(const struct builder *b, const struct plan_decl *d, const char *cls, int64_t used,
			      int64_t end);

/*
 * Why resubmit's rules stop asking again after the refused creates r
 * (owned), NULL when none does: as for a failed run, the budget of their
 * class (every refusal recorded but the last was followed by a new
 * create) or resubmit.within's window from the first create.
 */
static char *refusal_stop(const struct builder *b, const struct plan_decl *d, const struct plan_refusal *r)
{
	int64_t within = d->policy ? d->policy->within_ms : 0;

	return rules_stop_class(b, d, r->cls, r->of_class - 1, within > 0 && r->first_ms > 0 ? r->first_ms + within : 0);
}

/* The backoff after n refused creates in a row: resubmit.delay (at least a
 * minute: a refusal is not over in seconds), doubling, at most 15 minutes. */
static int64_t refusal_wait(const struct plan_decl *d, size_t n)
{
	int64_t wait = d->retry_delay_ms > REFUSAL_MIN_WAIT_MS ? d->retry_delay_ms : REFUSAL_MIN_WAIT_MS;

	for (size_t k = 1; k < n && wait < REFUSAL_MAX_WAIT_MS; k++)
		wait *= 2;
	return wait < REFUSAL_MAX_WAIT_MS ? wait : REFUSAL_MAX_WAIT_MS;
}

/*
 * A create the server refused for the declared spec and run is an attempt
 * (docs/format.md): the next one is planned only when resubmit.on lists its
 * class (refused, quota), the budget allows it and its backoff has passed
 * (vxapply and vx watch plan alike, so neither asks again every time);
 * else a noop that shows the refusal. -replace asks again at once. Returns
 * 1 when it planned that noop. 0 when the new run may be planned: *attempt
 * is then past the refused ones, and *why (owned, NULL when there was no
 * refusal) says so for the plan.
 */
int job_refusal_gate(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			int64_t *attempt, char **why)
{
	const struct plan_refusal *r = rec ? &rec->refusal : NULL;
	char when[40], until[40];
	int64_t next, wait, not_before = 0;
	struct plan_action *a;
	struct job_action *ja;
	char *reason, *stop = NULL;

	*why = NULL;
	if (!r || !r->n || !vx_text_same(r->spec_hash, d->spec_hash) || r->run != d->run)
		return 0;
	next = r->attempt + 1 > *attempt ? r->attempt + 1 : *attempt;
	fmt_utc(when, sizeof(when), r->at_ms, 0);
	wait = refusal_wait(d, r->n);
	if (job_replaced(b, d->address)) {
		*attempt = next;
		*why = vx_asprintf("attempt %" PRId64 "/%" PRId64 " after the create was refused (%s at %s): "
				   "-replace asks again", next, d->max_attempts, r->cls, when);
		if (!*why)
			b->oom = 1;
		return 0;
	}
	if (!resubmits(d, r->cls)) {
		reason = vx_asprintf("the create was refused (%s at %s, attempt %" PRId64 "); not asked again: "
				     "%s is not in resubmit.on; fix the cause, then vxapply -replace %s",
				     r->cls, when, r->attempt, r->cls, d->address);
	} else if ((stop = refusal_stop(b, d, r))) {
		reason = vx_asprintf("the create was refused (%s at %s, %zu in a row); gave up: %s; vxapply -replace %s "
				     "asks again",
				     r->cls, when, r->n, stop, d->address);
	} else if (next > d->max_attempts) {
		reason = vx_asprintf("the create was refused (%s at %s); resubmit budget exhausted "
				     "(%" PRId64 "/%" PRId64 " attempts); vxapply -replace %s asks again",
				     r->cls, when, r->attempt, d->max_attempts, d->address);
	} else if (b->in->now_ms > 0 && b->in->now_ms < r->at_ms + wait) {
		not_before = r->at_ms + wait;
		fmt_utc(until, sizeof(until), not_before, 1);
		reason = vx_asprintf("the create was refused (%s at %s, %zu in a row); attempt %" PRId64 "/%" PRId64
				     " not before %s (backoff)", r->cls, when, r->n, next, d->max_attempts, until);
	} else {
		*attempt = next;
		*why = vx_asprintf("attempt %" PRId64 "/%" PRId64 " after the create was refused (%s at %s)",
				   next, d->max_attempts, r->cls, when);
		if (!*why)
			b->oom = 1;
		return 0;
	}
	a = job_add_action(b, PLAN_NOOP, d->address);
	ja = job_action_mut(a);
	if (!a) {
		free(reason);
		free(stop);
		return 1;
	}
	job_fill_decl(b, a, d);
	ja->record = rec;
	job_set_str(b, &ja->old_hash, rec->spec_hash);
	job_set_str(b, &ja->failure_class, r->cls);
	set_error(b, a, 0, r->message);
	job_set_fmt(b, &a->reason, reason);
	ja->not_before_ms = not_before;
	ja->refused = !not_before;
	/* Given up on by resubmit's rules: until when within let attempts start. */
	if (stop && d->policy && d->policy->within_ms > 0 && r->first_ms > 0)
		ja->deadline_ms = r->first_ms + d->policy->within_ms;
	free(stop);
	return 1;
}

/*
 * Why a window-ended run is not resubmitted: "failed (window-ended at T):
 * the window of future_reservation.gpus closed at E; not resubmitted into a
 * closed window".
 */
static char *window_reason(const struct failed *f, const char *when)
{
	char end[40];

	if (!f->window.kind)
		return vx_asprintf("failed (window-ended at %s): the window of its booking closed; not resubmitted "
				   "into a closed window",
				   when);
	fmt_utc(end, sizeof(end), f->window.win.end_ms, 0);
	return vx_asprintf("failed (window-ended at %s): the window of %s.%s closed at %s; not resubmitted into "
			   "a closed window",
			   when, f->window.kind->prefix, f->window.win.name, end);
}

/* After the class in the plan's reason: ": hit its 2h timeout" after a
 * timeout, ": exit code 137" after a user-error that gives it when the job
 * lists resubmit.onExitCodes (it decides then), else "". */
static void class_note(char *out, size_t size, const struct plan_decl *d, const struct plan_record *rec,
		       const struct failed *f)
{
	char t[32];
	int code = has_exit_codes(d) ? run_exit_code(f) : 0;

	out[0] = '\0';
	if (code)
		snprintf(out, size, ": exit code %d", code);
	if (!f->cls || strcmp(f->cls, "timeout") != 0)
		return;
	/* The timeout of the rung it ran on, as recorded at its create (else the record's spec's). */
	failure_timeout_words(t, sizeof(t), rec->current && rec->current->timeout_ms ? rec->current->timeout_ms : failure_spec_timeout_ms(rec->spec_json));
	snprintf(out, size, ": hit its %s timeout", t);
}

/* Why a failure is not resubmitted: its class (and exit status) not listed. */
static char *not_listed(const struct plan_decl *d, const struct failed *f, const char *when, const char *note)
{
	int code = run_exit_code(f);

	if (code && has_exit_codes(d))
		return vx_asprintf("failed (%s at %s)%s; not resubmitted: %s is not in resubmit.on, nor %d in "
				   "resubmit.onExitCodes",
				   f->cls, when, note, f->cls, code);
	return vx_asprintf("failed (%s at %s)%s; not resubmitted: %s is not in resubmit.on", f->cls, when, note,
			   f->cls);
}

/*
 * The noop of a failed run not resubmitted (job_plan_failed), with why:
 * the budget, the class not in resubmit.on, an unknown text, or a window
 * that closed (window-ended: never resubmitted into it).
 */
/* How the plan says "after N of them" of a failure class: "stockouts". */
static const char *class_plural(const char *cls)
{
	static const char *const words[][2] = {
		{ "stockout", "stockouts" },
		{ "preempted", "preemptions" },
		{ "wait-timeout", "wait timeouts" },
		{ "quota", "quota failures" },
		{ "user-error", "user errors" },
		{ "internal", "internal errors" },
		{ "config", "config errors" },
		{ "cancelled-outside", "cancels outside vx" },
		{ "unknown", "unknown failures" },
		{ "refused", "refused creates" },
		{ "timeout", "timeouts" },
		{ "queue-timeout", "queue timeouts" },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(words[i][0], cls))
			return words[i][1];
	return cls;
}

/* The budget resubmit.on's map form gives class cls ({stockout: 6}), -1 when none. */
static int64_t class_budget(const struct plan_decl *d, const char *cls)
{
	const struct state_policy *p = d->policy;

	for (size_t i = 0; p && p->resubmit_budgets && cls && i < p->nresubmit_on; i++)
		if (!strcmp(p->resubmit_on[i], cls))
			return p->resubmit_budgets[i];
	return -1;
}

void job_note_budgets(struct plan_action *a, const struct plan_decl *d, const struct plan_record *rec)
{
	struct job_action *ja = job_action_mut(a);
	/* A create, replace or rerun starts a run whose budgets are untouched. */
	int fresh = a->op == PLAN_CREATE || a->op == PLAN_REPLACE || a->op == PLAN_RERUN || !rec;
	unsigned made;

	if (!ja || !d->policy || !d->policy->resubmit_budgets)
		return;
	/* A resubmit spends one of its failure class's budget. */
	made = a->op == PLAN_RESUBMIT && ja->failure_class ? stack_fail_parse(ja->failure_class) : 0;
	ja->has_budgets = 1;
	for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++) {
		ja->budget_allowed[c] = class_budget(d, stack_fail_names[c]);
		ja->budget_used[c] = (fresh ? 0 : rec->fails[c]) + (made == 1u << c);
	}
}

/* When resubmit.within closes for rec's run (its first create + within), 0: never. */
static int64_t within_deadline(const struct plan_decl *d, const struct plan_record *rec)
{
	int64_t within = d->policy ? d->policy->within_ms : 0;

	return within > 0 && rec->first_create_ms > 0 ? rec->first_create_ms + within : 0;
}

/*
 * Why resubmit's rules stop the failed run f from being resubmitted
 * (owned), NULL when none does: its class's budget is used ("2
 * resubmissions after stockouts used": as many failures of that class
 * were each followed by a new attempt), or resubmit.within's window closed.
 */
static char *rules_stop(const struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			const struct failed *f)
{
	unsigned bit = f->cls ? stack_fail_parse(f->cls) : 0;
	int64_t used = 0;

	for (unsigned c = 0; bit && c < STACK_FAIL_NCLASSES; c++)
		if (bit == 1u << c)
			used = rec->fails[c];
	return rules_stop_class(b, d, f->cls, used, within_deadline(d, rec));
}

/* rules_stop for class cls, of whose budget used resubmissions are spent, within closing at end (0: never). */
static char *rules_stop_class(const struct builder *b, const struct plan_decl *d, const char *cls, int64_t used,
			      int64_t end)
{
	int64_t budget = class_budget(d, cls);
	char until[40], w[32];

	if (budget >= 0 && used >= budget)
		return vx_asprintf("%" PRId64 " resubmission%s after %s used", budget, budget == 1 ? "" : "s",
				   class_plural(cls));
	if (end && b->in->now_ms > 0 && b->in->now_ms >= end) {
		fmt_utc(until, sizeof(until), end, 0);
		failure_timeout_words(w, sizeof(w), d->policy->within_ms);
		return vx_asprintf("resubmit.within %s closed at %s", w, until);
	}
	return NULL;
}

/* Adds to a resubmit's reason until when resubmit.within lets attempts start. */
static void note_deadline(struct builder *b, struct plan_action *a, const struct plan_decl *d,
			  const struct plan_record *rec)
{
	int64_t end = within_deadline(d, rec);
	char until[40], w[32];

	if (!end || !a->reason)
		return;
	job_action_mut(a)->deadline_ms = end;
	fmt_utc(until, sizeof(until), end, 0);
	failure_timeout_words(w, sizeof(w), d->policy->within_ms);
	job_set_fmt(b, &a->reason, vx_asprintf("%s; resubmit.within %s: no attempt after %s", a->reason, w, until));
}

/*
 * resubmit.returnAfter: whether the next attempt after f goes back to rung
 * 0. Only a failure of a class the ladder moves down on (no capacity where
 * the run was) does, of a run on a rung >= 1 that left rung 0 returnAfter
 * or longer ago: the capacity it left may have freed up since.
 */
static int returns_to_rung0(const struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    const struct failed *f)
{
	int64_t back = d->policy ? d->policy->return_after_ms : 0;

	return back > 0 && d->nrungs > 1 && f->at >= 1 && rec->left_rung0_ms > 0 &&
	       plan_next_rung(0, f->cls, 2) == 1 && b->in->now_ms > 0 && b->in->now_ms >= rec->left_rung0_ms + back;
}

/* Adds to a resubmit's reason why it goes back to rung 0 (returns_to_rung0). */
static void note_return(struct builder *b, struct plan_action *a, const struct plan_decl *d,
			const struct plan_record *rec)
{
	char left[40], w[32];

	if (!a->reason)
		return;
	fmt_utc(left, sizeof(left), rec->left_rung0_ms, 0);
	failure_timeout_words(w, sizeof(w), d->policy->return_after_ms);
	job_set_fmt(b, &a->reason, vx_asprintf("%s; back to rung 0 (returnAfter %s passed since it left rung 0 at %s)", a->reason, w, left));
}

static struct plan_action *failed_noop(struct builder *b, struct plan_action *a, const struct plan_decl *d,
				       const struct plan_record *rec, const struct failed *f,
				       const struct live_job *seen, int64_t next, const char *when, char *stop)
{
	const struct plan_run *cur = rec->current;
	struct job_action *ja = job_action_mut(a);
	char note[64];

	class_note(note, sizeof(note), d, rec, f);
	job_fill_decl(b, a, d);
	job_set_rung(b, a, d, f->at);
	ja->record = rec;
	job_set_str(b, &ja->old_hash, rec->spec_hash);
	job_set_str(b, &ja->failure_class, f->cls);
	job_set_str(b, &ja->live_state, f->state);
	set_error(b, a, f->vanished ? 0 : f->code, f->vanished ? NULL : f->msg);
	if (!strcmp(f->cls, "window-ended"))
		job_set_fmt(b, &a->reason, window_reason(f, when));
	else if (stop)
		job_set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s)%s; gave up: %s", f->cls, when, note, stop));
	else if (resubmits_run(d, f))
		job_set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s)%s; resubmit budget exhausted "
						       "(%" PRId64 "/%" PRId64 " attempts)",
						       f->cls, when, note, seen ? next - 1 : cur->attempt, d->max_attempts));
	else if (!strcmp(f->cls, "unknown"))
		/* An ambiguous text errs towards not resubmitting, and says so. */
		job_set_fmt(b, &a->reason, vx_asprintf("failed (unknown at %s); not resubmitted: no rule of vx "
						       "knows this message, so it may fail the same way again "
						       "(list unknown in resubmit.on to resubmit such failures)",
						       when));
	else
		job_set_fmt(b, &a->reason, not_listed(d, f, when, note));
	/* Given up on by resubmit's rules: until when within let attempts start. */
	if (stop)
		ja->deadline_ms = within_deadline(d, rec);
	job_note_seen(b, a, seen);
	free(stop);
	return a;
}

/*
 * Resubmits a failed run while resubmit.on lists its class and the budget
 * allows, counting the attempts live jobs of (spec, run) carry that the
 * state forgot (a rewound state: live_max_attempt), else a noop that says
 * why. Returns the action, NULL when out of memory or when a refusal's
 * backoff planned it (job_refusal_gate).
 */
struct plan_action *job_plan_failed(struct builder *b, const struct plan_decl *d,
				       const struct plan_record *rec, const struct failed *f)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *seen = NULL;
	int back = returns_to_rung0(b, d, rec, f);
	int64_t next = cur->attempt + 1, rung = back ? 0 : plan_next_rung(f->at, f->cls, d->nrungs);
	struct plan_action *a;
	struct job_action *ja;
	char when[40], note[64], *refused = NULL;
	char *stop = resubmits_run(d, f) ? rules_stop(b, d, rec, f) : NULL;
	int go = resubmits_run(d, f) && !stop;

	fmt_utc(when, sizeof(when), f->lj && f->lj->end_ms ? f->lj->end_ms : cur->end_ms, 0);
	class_note(note, sizeof(note), d, rec, f);
	if (go && cur->attempt < d->max_attempts) {
		if (job_refusal_gate(b, d, rec, &next, &refused))
			return NULL;
		if (job_maybe_adopt(b, d, rec, next, rung, "resubmit", NULL)) {
			free(refused);
			return NULL;
		}
		next = job_next_attempt(b, d, next, &seen);
	}
	if (go && next <= d->max_attempts) {
		a = job_add_action(b, PLAN_RESUBMIT, d->address);
		ja = job_action_mut(a);
		if (!a) {
			free(refused);
			return NULL;
		}
		job_fill_decl(b, a, d);
		ja->record = rec;
		ja->run = d->run;
		ja->attempt = next;
		job_set_rung(b, a, d, rung);
		job_set_str(b, &ja->old_hash, rec->spec_hash);
		job_set_str(b, &ja->failure_class, f->cls);
		job_set_str(b, &ja->live_state, f->state);
		set_error(b, a, f->vanished ? 0 : f->code, f->vanished ? NULL : f->msg);
		if (d->nrungs > 1)
			job_set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " on rung %" PRId64
							   " (region %s) after %s in %s",
							   next, d->max_attempts, rung, job_rung_region(d, rung), f->cls,
							   cur->region ? cur->region : job_rung_region(d, f->at)));
		else
			job_set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " after %s at %s%s", next, d->max_attempts, f->cls, when, note));
		if (refused)
			job_set_fmt(b, &a->reason, refused);
		if (back)
			note_return(b, a, d, rec);
		note_deadline(b, a, d, rec);
		job_note_seen(b, a, seen);
		return a;
	}
	free(refused);
	a = job_add_action(b, PLAN_NOOP, d->address);
	if (!a) {
		free(stop);
		return NULL;
	}
	return failed_noop(b, a, d, rec, f, seen, next, when, stop);
}

/* "2h 3m" for how long a run waited: days, hours and minutes, each only
 * when not 0 ("45s" under a minute). */
static void queued_words(char *out, size_t size, int64_t ms)
{
	static const char unit[3] = { 'd', 'h', 'm' };
	int64_t s = ms > 0 ? ms / 1000 : 0;
	int64_t part[3] = { s / 86400, s % 86400 / 3600, s % 3600 / 60 };
	size_t n = 0;

	out[0] = '\0';
	for (int i = 0; i < 3; i++)
		if (part[i] && n < size)
			n += (size_t)snprintf(out + n, size - n, "%s%" PRId64 "%c", n ? " " : "", part[i], unit[i]);
	if (!out[0])
		snprintf(out, size, "%" PRId64 "s", s);
}

/*
 * How long the current run has been queued or pending without ever
 * starting (its create to now), or -1 when it is in another state, has a
 * start time, or its create time or now is unknown.
 */
static int64_t queued_for(const struct builder *b, const struct plan_run *cur, const struct failed *f)
{
	int64_t created = f->lj && f->lj->create_ms ? f->lj->create_ms : cur->created_ms;

	if (!f->state || (strcmp(f->state, "JOB_STATE_QUEUED") != 0 && strcmp(f->state, "JOB_STATE_PENDING") != 0))
		return -1;
	if ((f->lj && f->lj->start_ms > 0) || cur->started_ms > 0 || created <= 0 || b->in->now_ms <= 0)
		return -1;
	return b->in->now_ms - created;
}

/*
 * Whether the current run is one vx cancelled after resubmit.maxQueued that
 * is still cancelling (an apply died, or stopped waiting, after the cancel):
 * its next attempt is planned as for a run still queued, and the apply waits
 * for the end before the create, sending no second cancel.
 */
static int queue_cancelling(const struct plan_run *cur, const struct failed *f)
{
	return f->state && !strcmp(f->state, "JOB_STATE_CANCELLING") && cur->cancelled_by_vx && cur->failure &&
	       !strcmp(cur->failure, "queue-timeout") && !(f->lj && f->lj->start_ms > 0) && cur->started_ms <= 0;
}

/* The noop of a run past maxQueued that stays queued: why (owned) and what stops it (owned). */
static int queued_noop(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		       const struct failed *f, int64_t queued, char *why, char *stop)
{
	struct plan_action *a = job_add_action(b, PLAN_NOOP, d->address);
	struct job_action *ja = job_action_mut(a);

	if (a) {
		job_fill_decl(b, a, d);
		job_set_rung(b, a, d, f->at);
		ja->record = rec;
		ja->queued_ms = queued > 0 ? queued : 0;
		job_set_str(b, &ja->old_hash, rec->spec_hash);
		job_set_str(b, &ja->live_state, f->state);
		job_set_fmt(b, &a->reason, why && stop ? vx_asprintf("%s; left queued: %s", why, stop) : NULL);
	}
	free(why);
	free(stop);
	return 1;
}

/* Why a run past maxQueued is left queued (owned), NULL when its next attempt may start. */
static char *queued_stop(const struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			 const struct failed *q, int64_t next, int *stopped)
{
	char *stop = NULL;

	*stopped = 1;
	/* A protected job is never cancelled by a plan, not even this one. */
	if (d->protect)
		return vx_asprintf("protect: true");
	if ((stop = rules_stop(b, d, rec, q)))
		return stop;
	if (next > d->max_attempts)
		return vx_asprintf("resubmit budget exhausted (%" PRId64 "/%" PRId64 " attempts)", next - 1,
				   d->max_attempts);
	*stopped = 0;
	return NULL;
}

int job_plan_queued(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		    const struct failed *f)
{
	const struct plan_run *cur = rec->current;
	int64_t limit = d->policy ? d->policy->max_queued_ms : 0, queued = queued_for(b, cur, f), next, rung;
	int cancelling = queue_cancelling(cur, f), stopped;
	const struct live_job *seen = NULL;
	struct failed q = *f;
	char held[64], lim[32], *why, *stop;
	struct plan_action *a;
	struct job_action *ja;

	if (!cancelling && (limit <= 0 || queued < limit))
		return 0;
	q.cls = "queue-timeout";
	queued_words(held, sizeof(held), queued);
	failure_timeout_words(lim, sizeof(lim), limit);
	why = cancelling ? vx_asprintf("vx cancelled it after resubmit.maxQueued; created once the cancel has ended")
			 : vx_asprintf("queued %s without starting (maxQueued %s)", held, lim);
	next = job_next_attempt(b, d, cur->attempt + 1, &seen);
	stop = queued_stop(b, d, rec, &q, next, &stopped);
	if (stopped)
		return queued_noop(b, d, rec, f, queued, why, stop);
	rung = plan_next_rung(f->at, q.cls, d->nrungs);
	a = job_add_action(b, PLAN_RESUBMIT, d->address);
	if (!(ja = job_action_mut(a)) || !why) {
		free(why);
		b->oom = 1;
		return 1;
	}
	job_fill_decl(b, a, d);
	ja->record = rec;
	ja->run = d->run;
	ja->attempt = next;
	ja->queued_ms = queued > 0 ? queued : 0;
	job_set_rung(b, a, d, rung);
	job_set_str(b, &ja->old_hash, rec->spec_hash);
	job_set_str(b, &ja->failure_class, q.cls);
	job_set_str(b, &ja->live_state, f->state);
	/* The run is cancelled first; the apply creates the next once it has ended. */
	job_set_str(b, &ja->cancel_name, cur->name);
	if (d->nrungs > 1)
		job_set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " on rung %" PRId64 " (region %s) after %s in %s: %s", next, d->max_attempts, rung, job_rung_region(d, rung), q.cls, cur->region ? cur->region : job_rung_region(d, f->at), why));
	else
		job_set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " after %s: %s", next, d->max_attempts, q.cls, why));
	free(why);
	note_deadline(b, a, d, rec);
	job_note_seen(b, a, seen);
	return 1;
}

static int set_if_changed(char **dst, const char *src, int *changed)
{
	if ((!*dst && !src) || (*dst && src && !strcmp(*dst, src)))
		return 0;
	free(*dst);
	*dst = src ? strdup(src) : NULL;
	*changed = 1;
	return (src && !*dst) ? VX_ENOMEM : 0;
}

const struct live_job *job_live_lookup(const struct live_job **idx, size_t n, const char *name)
{
	struct live_job key;
	const struct live_job *kp = &key, *const *hit;

	if (!name)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = (char *)(uintptr_t)name; /* only compared, never written */
	hit = bsearch(&kp, idx, n, sizeof(*idx), job_cmp_live_name);
	return hit ? *hit : NULL;
}

/*
 * Copies what lj says about run into it (its class with the window of the
 * booking kinds lists, *w set to it). Returns 1 when something changed, 0
 * when not, < 0 when out of memory (run is left half-updated but valid).
 */
static int refresh_run(struct state_run *run, const struct live_job *lj, const struct state_record *r,
		       const struct live_set *kinds, struct job_window *w)
{
	struct failure_input in = {
		.state = lj->state, .error_code = lj->error_code, .message = lj->error_message,
		.cancelled_by_vx = run->cancelled_by_vx,
	};
	int same_spec = r && vx_text_same(run->spec_hash, r->spec_hash);
	const char *cls;
	int changed = 0;

	if (set_if_changed(&run->state, lj->state, &changed) < 0 ||
	    set_if_changed(&run->error_message, lj->error_message, &changed) < 0)
		return VX_ENOMEM;
	if (run->error_code != lj->error_code) {
		run->error_code = lj->error_code;
		changed = 1;
	}
	if (lj->end_ms && run->ended_ms != lj->end_ms) {
		run->ended_ms = lj->end_ms;
		changed = 1;
	}
	/* When it started (first RUNNING): queue time and running time, for status and cost. */
	if (lj->start_ms && run->started_ms != lj->start_ms) {
		run->started_ms = lj->start_ms;
		changed = 1;
	}
	/* Its rung's strategy, else the record's spec's when the run is of that spec. */
	in.scheduling = run->rung_scheduling;
	if (!in.scheduling && same_spec)
		in.scheduling = failure_spec_strategy(r->spec_json);
	in.started = run->started_ms > 0;
	in.ended_ms = run->ended_ms;
	in.started_ms = run->started_ms;
	in.timeout_ms = run->timeout_ms ? run->timeout_ms : same_spec ? failure_spec_timeout_ms(r->spec_json)
								      : 0;
	cls = job_classify(&in, kinds, same_spec ? r->spec_json : NULL, run->failure, w);
	/* Cancelling after resubmit.maxQueued: the class the apply recorded stays. */
	if (!cls && run->failure && !strcmp(run->failure, "queue-timeout") && run->cancelled_by_vx &&
	    job_state_is_active(lj->state))
		cls = run->failure;
	if (set_if_changed(&run->failure, cls, &changed) < 0)
		return VX_ENOMEM;
	/* The replica's exit status, from Google's sentence (never the log tail). */
	if (run->exit_code != (cls ? failure_exit_code(lj->error_message) : 0)) {
		run->exit_code = cls ? failure_exit_code(lj->error_message) : 0;
		changed = 1;
	}
	return changed;
}

/* " (window-ended: the window of future_reservation.gpus closed at 2026-01-13 09:00Z)" */
static void window_words(char *out, size_t size, const struct state_run *run, const struct job_window *w)
{
	char end[40];

	out[0] = '\0';
	if (!run->failure || strcmp(run->failure, "window-ended") || !w->kind)
		return;
	fmt_utc(end, sizeof(end), w->win.end_ms, 0);
	snprintf(out, size, ": the window of %s.%s closed at %s", w->kind->prefix, w->win.name, end);
}

/* Refreshes run from the index; appends a summary line naming it when it changed. */
static size_t refresh_one(struct state_run *run, const struct live_job **idx, size_t n,
			  struct state_record *r, int earlier, const struct live_set *kinds, struct vx_buf *b)
{
	const struct live_job *lj = job_live_lookup(idx, n, run->resource);
	struct job_window w;
	char *old_state, why[256];
	int changed;

	if (!lj)
		return 0;
	memset(&w, 0, sizeof(w));
	old_state = vx_strdup(run->state);
	changed = refresh_run(run, lj, r, kinds, &w);
	/* Reached by walking the records, not state_edit: marked here, so the
	 * next save writes it (a failure may have changed part of it). */
	if (changed != 0)
		state_record_mark(r);
	window_words(why, sizeof(why), run, &w);
	if (changed > 0 &&
	    vx_buf_printf(b, "%s%s%s%s: %s -> %s%s%s%s%s\n", r->address, earlier ? " (earlier run " : "",
			  earlier ? run->resource : "", earlier ? ")" : "", job_state_short(old_state),
			  job_state_short(run->state), run->failure ? " (" : "",
			  run->failure ? run->failure : "", why, run->failure ? ")" : "") < 0)
		vx_buf_reset(b);
	free(old_state);
	return changed > 0;
}

size_t apply_refresh_state(struct state *state, const struct live_jobs *live, const struct live_set *kinds,
			   char **summary)
{
	struct vx_buf b = VX_BUF_INIT;
	const struct live_job **idx = NULL;
	size_t changed = 0, n = 0;

	if (summary)
		*summary = NULL;
	if (!live || !live->n)
		return 0;
	/* An index, so refreshing every run of 10,000 records is not 10,000 scans of the listing. */
	idx = calloc(live->n, sizeof(*idx));
	if (!idx)
		return 0;
	for (size_t k = 0; k < live->n; k++)
		if (live->items[k].name)
			idx[n++] = &live->items[k];
	qsort(idx, n, sizeof(*idx), job_cmp_live_name);
	for (size_t i = 0; i < state->nrecords; i++) {
		struct state_record *r = &state->records[i];

		/*
		 * Earlier runs too, until they are seen ending: a replaced run is
		 * moved to history while it is still cancelling, and its end would
		 * otherwise never be recorded.
		 */
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource && !job_state_is_terminal(r->history[h].state))
				changed += refresh_one(&r->history[h], idx, n, r, 1, kinds, &b);
		if (r->current && r->current->resource)
			changed += refresh_one(r->current, idx, n, r, 0, kinds, &b);
	}
	free(idx);
	if (summary)
		*summary = b.len ? vx_buf_detach(&b) : NULL;
	vx_buf_release(&b);
	return changed;
}
