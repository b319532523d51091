/*
 * The plan's part of sweeps (reconcile/sweep.h): maxParallel and maxFailed
 * applied to what the job kind planned for each run, and the counts the
 * plan shows a sweep's block with. The job kind plans every run like any
 * other job; this pass only holds back creates, so a later vxapply or
 * vx watch cycle, planning again, starts the next runs as others finish.
 */
#include "reconcile/provider_job.h"
#include "reconcile/sweep.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/banned.h"

/* The state a run's action keeps: the live job's, else the state's last seen. */
static const char *run_state(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	if (ja->live_state)
		return ja->live_state;
	return ja->record && ja->record->current ? ja->record->current->state : NULL;
}

struct held {
	struct plan_action *a;
	size_t order; /* the run's index in the stack's jobs: the sweep's order */
};

static int cmp_held(const void *x, const void *y)
{
	const struct held *a = x, *b = y;

	return a->order < b->order ? -1 : a->order > b->order;
}

static void to_wait(struct plan *p, struct plan_action *a, char *reason)
{
	p->counts[a->op]--;
	p->counts[PLAN_WAIT]++;
	a->op = PLAN_WAIT;
	free(a->reason);
	a->reason = reason;
}

static int cmp_action_ptr(const void *a, const void *b)
{
	return strcmp((*(const struct plan_action *const *)a)->address,
		      (*(const struct plan_action *const *)b)->address);
}

/* Where one dependency stands. */
enum dep { DEP_OK, DEP_PENDING, DEP_GAVE_UP };

static enum dep dep_state(const struct plan_action *a, const char **what)
{
	const char *s = run_state(a);

	*what = "not started yet";
	if (a->op == PLAN_NOOP || a->op == PLAN_UPDATE) {
		if (s && !strcmp(s, "JOB_STATE_SUCCEEDED"))
			return DEP_OK;
		if (s && (!strcmp(s, "JOB_STATE_FAILED") || !strcmp(s, "JOB_STATE_CANCELLED") ||
			  !strcmp(s, "JOB_STATE_EXPIRED"))) {
			*what = job_state_short(s);
			return DEP_GAVE_UP;
		}
		if (s)
			*what = job_state_short(s);
		return DEP_PENDING;
	}
	if (a->op == PLAN_RESUBMIT)
		*what = "being resubmitted";
	else if (a->op == PLAN_REPLACE || a->op == PLAN_RERUN)
		*what = "starting a new run";
	else if (a->op == PLAN_WAIT)
		*what = "waiting";
	return DEP_PENDING;
}

/*
 * after: a job that starts a run (create or rerun) only once every job it
 * names succeeded in its current run; until then its action is PLAN_WAIT,
 * saying for which and why, and when one gave up, that it is not created.
 */
static int after_follow(struct plan *p, const struct stack *st, struct plan_action **by);

static int after_gate(struct plan *p, const struct stack *st)
{
	struct plan_action **by = calloc(p->n + 1, sizeof(*by));
	int rc;

	if (!by)
		return VX_ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		by[i] = &p->actions[i];
	qsort(by, p->n, sizeof(*by), cmp_action_ptr);
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct stack_job *j = job_action_job(a);
		const char *pending = NULL, *gave_up = NULL, *why = NULL, *w;
		char *reason;

		if (!j || !j->nafter || (a->op != PLAN_CREATE && a->op != PLAN_RERUN))
			continue;
		for (size_t e = 0; e < j->nafter && !gave_up; e++)
			for (size_t k = 0; k < stack_count(st, &kind_job) && !gave_up; k++) {
				struct plan_action key = { .address = stack_jobs(st, NULL)[k].d.address }, *kp = &key, **hit;
				enum dep d;

				if (!key.address || !sweep_address_matches(j->after[e], key.address))
					continue;
				hit = bsearch(&kp, by, p->n, sizeof(*by), cmp_action_ptr);
				d = hit ? dep_state(*hit, &w) : DEP_PENDING;
				if (!hit)
					w = "not in this plan (-target)";
				if (d == DEP_GAVE_UP) {
					gave_up = key.address;
					why = w;
				} else if (d == DEP_PENDING && !pending) {
					pending = key.address;
					why = w;
				}
			}
		if (gave_up)
			reason = vx_asprintf("not created: %s gave up (%s); after: starts this job only once it "
					     "succeeds: fix it and bump its run", gave_up, why);
		else if (pending)
			reason = vx_asprintf("waits for %s (%s): after: starts this job once it succeeded",
					     pending, why);
		else
			continue;
		if (!reason) {
			free(by);
			return VX_ENOMEM;
		}
		to_wait(p, a, reason);
	}
	rc = after_follow(p, st, by);
	free(by);
	return rc;
}

/* The current run of a dependency's action as the state has it, or NULL. */
static const struct state_run *dep_run(const struct plan_action *a)
{
	const struct state_record *r = a->krecord;

	return r ? r->current : NULL;
}

/*
 * Whether the dependent's run cur followed dep's current run: the run its
 * follow record names; a run written before that record (none recorded)
 * followed the dependency runs made before it was created.
 */
static int followed(const struct state_run *cur, const char *address, const struct state_run *dep)
{
	const char *name;

	if (!dep)
		return 1;
	if (!cur->nfollows)
		return !dep->created_ms || !cur->created_ms || dep->created_ms <= cur->created_ms;
	name = vx_labels_get(cur->follows, cur->nfollows, address);
	return name && dep->resource && !strcmp(name, dep->resource);
}

static void to_rerun(struct plan *p, struct plan_action *a, const struct stack_job *j,
		     const struct state_run *cur, char *reason)
{
	struct job_action *ja = job_action_mut(a);

	p->counts[a->op]--;
	p->counts[PLAN_RERUN]++;
	a->op = PLAN_RERUN;
	ja->after_rerun = 1;
	ja->run = j->run;
	/* a new attempt of the same (spec, run): its labels and output
	 * directory are not the previous run's */
	ja->attempt = cur->attempt + 1;
	ja->rung = 0;
	free(a->reason);
	a->reason = reason;
}

/*
 * after: a dependent whose current run did not follow a dependency's
 * current run. While that dependency starts or runs its new run, the
 * dependent waits; once it succeeded, a finished dependent reruns, and an
 * active one waits until it ended (its run is not cancelled).
 */
static int after_follow(struct plan *p, const struct stack *st, struct plan_action **by)
{
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct stack_job *j = job_action_job(a);
		const struct state_record *r = a->krecord;
		const struct plan_action *fresh = NULL, *pending = NULL;
		const char *why = NULL, *s = run_state(a), *w;
		char *reason;

		if (!j || !j->nafter || !r || !r->current || (a->op != PLAN_NOOP && a->op != PLAN_UPDATE))
			continue;
		for (size_t e = 0; e < j->nafter && !pending; e++)
			for (size_t k = 0; k < stack_count(st, &kind_job) && !pending; k++) {
				struct plan_action key = { .address = stack_jobs(st, NULL)[k].d.address }, *kp = &key, **hit;
				enum dep d;

				if (!key.address || !sweep_address_matches(j->after[e], key.address))
					continue;
				hit = bsearch(&kp, by, p->n, sizeof(*by), cmp_action_ptr);
				if (!hit)
					continue;
				d = dep_state(*hit, &w);
				if ((*hit)->op != PLAN_NOOP && (*hit)->op != PLAN_UPDATE && d == DEP_PENDING) {
					pending = *hit;
					why = w;
				} else if (!followed(r->current, key.address, dep_run(*hit))) {
					if (d == DEP_OK) {
						if (!fresh)
							fresh = *hit;
					} else {
						pending = *hit;
						why = w;
					}
				}
			}
		if (pending)
			reason = vx_asprintf("waits for %s (%s): after: runs this job again once it succeeded",
					     pending->address, why);
		else if (!fresh)
			continue;
		else {
			const struct state_run *n = dep_run(fresh);
			char *run = vx_asprintf("run %" PRId64 ", attempt %" PRId64 ": %s", n->run, n->attempt,
						n->resource ? n->resource : "?");

			if (!run)
				return VX_ENOMEM;
			if (s && job_state_is_active(s))
				reason = vx_asprintf("its run is %s after %s's previous run; after: runs it again "
						     "once it ended (%s has a new run: %s)", job_state_short(s),
						     fresh->address, fresh->address, run);
			else if (r->current->nfollows &&
				 !vx_labels_get(r->current->follows, r->current->nfollows, fresh->address))
				reason = vx_asprintf("after: now names %s, whose run (%s) the last run did not "
						     "follow", fresh->address, run);
			else
				reason = vx_asprintf("%s has a new run (%s) after the last run %s", fresh->address,
						     run, s ? job_state_short(s) : "ended");
			free(run);
			if (reason && !(s && job_state_is_active(s))) {
				to_rerun(p, a, j, r->current, reason);
				continue;
			}
		}
		if (!reason)
			return VX_ENOMEM;
		to_wait(p, a, reason);
	}
	return 0;
}

/* The declared run of a sweep action a is for, or NULL when a is not a sweep's run. */
static const struct stack_job *sweep_run_of(const struct stack *st, const struct plan_action *a)
{
	const struct stack_job *j;
	const char *name;

	if (!(name = kind_address_name(&kind_job, a->address)) || !strchr(a->address, '[') ||
	    !(j = stack_find_job(st, name)) || !j->sweep)
		return NULL;
	return j;
}

/*
 * Counts run action a in its sweep's ps: running, waiting for after:,
 * finished or failed by its last state. 1 when a creates a run (counted by
 * the caller), 0 otherwise.
 */
static int count_run(struct plan_sweep *ps, const struct plan_action *a)
{
	const char *s = run_state(a);

	ps->runs++;
	switch (a->op) {
	case PLAN_CREATE:
		return 1;
	case PLAN_REPLACE:
	case PLAN_RERUN:
	case PLAN_RESUBMIT:
		ps->running++;
		break;
	case PLAN_WAIT: /* held by after: */
		ps->waiting++;
		break;
	default:
		if (s && job_state_is_active(s))
			ps->running++;
		else if (s && !strcmp(s, "JOB_STATE_SUCCEEDED"))
			ps->finished++;
		else if (s && (!strcmp(s, "JOB_STATE_FAILED") || !strcmp(s, "JOB_STATE_CANCELLED") ||
			       !strcmp(s, "JOB_STATE_EXPIRED")))
			ps->failed++;
		break;
	}
	return 0;
}

/*
 * Holds back the creates h[0..n) of sweep ps (in declaration order) that its
 * limits do not let start: all of them once maxFailed runs gave up, else
 * those over maxParallel. VX_ENOMEM or 0.
 */
static int hold_back(struct plan *p, struct plan_sweep *ps, struct held *h, size_t n)
{
	size_t room = n;

	qsort(h, n, sizeof(*h), cmp_held);
	if (ps->max_failed && ps->failed >= (size_t)ps->max_failed && n) {
		room = 0;
		ps->held = vx_asprintf("%zu run%s gave up (maxFailed %" PRId64 "): the waiting runs "
				       "are not started; fix the cause, then raise maxFailed or bump "
				       "run",
				       ps->failed, ps->failed == 1 ? "" : "s", ps->max_failed);
		if (!ps->held)
			return VX_ENOMEM;
	} else if (ps->max_parallel) {
		room = ps->running >= (size_t)ps->max_parallel ? 0
							       : (size_t)ps->max_parallel - ps->running;
		if (room > n)
			room = n;
	}
	for (size_t i = room; i < n; i++) {
		char *why = ps->held ? vx_asprintf("waits: %s", ps->held)
				     : vx_asprintf("waits: maxParallel %" PRId64 " runs of %s are "
						   "active; starts as runs finish",
						   ps->max_parallel,
						   ps->address);

		if (!why)
			return VX_ENOMEM;
		to_wait(p, h[i].a, why);
	}
	ps->creates = room;
	ps->waiting += n - room;
	ps->now = ps->running + room;
	return 0;
}

int sweep_plan_limit(struct plan *p, const struct stack *st)
{
	struct held *creates = NULL;
	size_t *ncreates = NULL, *start = NULL, total = 0;
	const struct stack_job *j;
	int rc = 0;

	if (after_gate(p, st) < 0)
		return VX_ENOMEM;
	if (!stack_nsweeps(st))
		return 0;
	p->sweeps = calloc(stack_nsweeps(st), sizeof(*p->sweeps));
	ncreates = calloc(stack_nsweeps(st) + 1, sizeof(*ncreates));
	start = calloc(stack_nsweeps(st) + 1, sizeof(*start));
	if (!p->sweeps || !ncreates || !start)
		goto oom;
	p->nsweeps = stack_nsweeps(st);
	for (size_t i = 0; i < stack_nsweeps(st); i++) {
		p->sweeps[i].max_parallel = stack_sweeps(st, NULL)[i].max_parallel;
		p->sweeps[i].max_failed = stack_sweeps(st, NULL)[i].max_failed;
		if (!(p->sweeps[i].address = vx_strdup(stack_sweeps(st, NULL)[i].address)))
			goto oom;
	}
	/* first pass: counts; creates per sweep */
	for (size_t i = 0; i < p->n; i++)
		if ((j = sweep_run_of(st, &p->actions[i])) &&
		    count_run(&p->sweeps[j->sweep - 1], &p->actions[i])) {
			ncreates[j->sweep - 1]++;
			total++;
		}
	/* the creates of each sweep together, from start[k] on */
	creates = calloc(total + 1, sizeof(*creates));
	if (!creates)
		goto oom;
	for (size_t i = 1; i < stack_nsweeps(st); i++)
		start[i] = start[i - 1] + ncreates[i - 1];
	memset(ncreates, 0, stack_nsweeps(st) * sizeof(*ncreates));
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];

		if (a->op != PLAN_CREATE || !(j = sweep_run_of(st, a)))
			continue;
		creates[start[j->sweep - 1] + ncreates[j->sweep - 1]++] =
			(struct held){ .a = a, .order = (size_t)(j - stack_jobs(st, NULL)) };
	}
	/* second pass: hold back what the limits do not let start */
	for (size_t k = 0; k < stack_nsweeps(st); k++)
		if ((rc = hold_back(p, &p->sweeps[k], creates + start[k], ncreates[k])) < 0)
			goto done;
	goto done;
oom:
	rc = VX_ENOMEM;
done:
	free(creates);
	free(ncreates);
	free(start);
	return rc;
}

/*
 * Whether recording j as r's waiting declaration changes r (1), or not (0),
 * VX_ENOMEM: for a record with a run of its own, another policy; else also
 * a new record, another spec, run, protect or onRemove. An apply writes the
 * state only when something changed.
 */
static int wait_changes(const struct state_record *r, const struct stack *st, const struct stack_job *j)
{
	struct vx_buf why = VX_BUF_INIT;
	struct state_policy *p;
	int rc;

	if (!r->current && (!r->spec_hash || strcmp(r->spec_hash, j->spec.hash) || r->run != j->run ||
			    !r->protect != !j->protect || r->on_remove != j->on_remove))
		return 1;
	if (!r->applied)
		return 1;
	if (!(p = calloc(1, sizeof(*p))))
		return VX_ENOMEM;
	rc = policy_of_job(p, st, j);
	if (rc == 0)
		rc = policy_diff(&why, r->applied, p, 0);
	state_policy_free(p);
	vx_buf_release(&why);
	return rc;
}

/* Records j, held back by pa, as the applied declaration of its record (made when there is none). */
static int record_wait(struct applier *a, const struct plan_action *pa, const struct stack_job *j,
		       struct vx_err *err)
{
	struct state_record *r = state_edit(a->state, pa->address);
	char *hash, *json;
	int rc;

	if (!r && state_add_record(a->state, pa->address, kind_job.name, &r, err) < 0)
		return err->code ? err->code : VX_ENOMEM;
	/* A run held back with a run of its own (after: waits for a new run of a
	 * dependency) keeps its record but takes the policy applied now. */
	if ((rc = wait_changes(r, a->st, j)) <= 0)
		return rc < 0 ? vx_err_set(err, VX_ENOMEM, "apply: out of memory") : 0;
	a->dirty = 1;
	if (r->current)
		return policy_record(r, a->st, j) < 0 ? vx_err_set(err, VX_ENOMEM, "apply: out of memory") : 0;
	hash = vx_strdup(j->spec.hash);
	json = j->spec.redacted_json ? vx_strdup(j->spec.redacted_json) : NULL;
	if (!hash || (j->spec.redacted_json && !json)) {
		free(hash);
		free(json);
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	free(r->spec_hash);
	r->spec_hash = hash;
	free(r->spec_json);
	r->spec_json = json;
	r->run = j->run;
	r->protect = j->protect;
	r->on_remove = j->on_remove;
	/* Held back by the limits applied now: the watcher starts it under them. */
	return policy_record(r, a->st, j) < 0 ? vx_err_set(err, VX_ENOMEM, "apply: out of memory") : 0;
}

int sweep_apply_waits(struct applier *a, struct vx_err *err)
{
	int rc;

	/* vx watch without -sync: a run held back is recorded by the apply that
	 * applies its declaration, never from files nobody applied. */
	if (a->opts->keep_policy)
		return 0;
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		const struct stack_job *j = job_action_job(pa);

		if (pa->op != PLAN_WAIT || pa->kind_of != &kind_job || !j)
			continue;
		if ((rc = record_wait(a, pa, j, err)) < 0)
			return rc;
	}
	/* Written now, even when no line of progress follows in this apply: a
	 * record kept only in memory would leave the job "declared but not
	 * applied" for the watcher. */
	return applier_persist(a, "vx: apply: jobs recorded as waiting", err);
}

int sweep_follows(const struct state *state, const struct stack_job *j, struct vx_label **out,
		  size_t *nout)
{
	for (size_t i = 0; i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];
		int named = 0;

		for (size_t e = 0; e < j->nafter && !named; e++)
			named = sweep_address_matches(j->after[e], r->address);
		if (named && r->current && r->current->resource && r->current->state &&
		    !strcmp(r->current->state, "JOB_STATE_SUCCEEDED") &&
		    vx_labels_set(out, nout, r->address, r->current->resource) < 0)
			return VX_ENOMEM;
	}
	return 0;
}

size_t sweep_history_keep(struct state_history_entry *h, size_t n, const char *target)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (h[i].address && sweep_address_matches(target, h[i].address)) {
			h[k++] = h[i];
			continue;
		}
		state_history_entry_release(&h[i]);
	}
	return k;
}
