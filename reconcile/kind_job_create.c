/*
 * How the job kind's actions are carried out: cancels (and forgets), then
 * updates, adoptions and creates in batches of -parallelism. Each create's
 * intent is journaled and persisted before it is sent, an earlier apply's
 * intents are settled first (its creates may still land), uncertain
 * creates are resolved by listing, refused ones recorded as attempts, and
 * every request is fenced by the lease.
 */
#include "reconcile/applier.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/apply.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/load/machines.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/runlabel.h"
#include "reconcile/load/spec.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/pool.h"
#include "util/banned.h"

/* One unit of API work run on a worker thread. */
struct task {
	struct provider *prov;
	int is_cancel;
	const char *cancel_name;
	const struct provider_fence *fence; /* for cancels; creates carry it in req */
	struct provider_job_request req;
	struct live_job created;
	struct vx_err err;
	int rc;
};

static void task_one(void *ud, size_t i)
{
	struct task *t = (struct task *)ud + i;

	if (t->is_cancel)
		t->rc = provider_job_cancel(t->prov, t->cancel_name, t->fence, &t->err);
	else
		t->rc = provider_job_create(t->prov, &t->req, &t->created, &t->err);
}

/* Runs tasks all at once, each on its own worker (n == count here: callers batch). */
static void run_tasks(struct task *tasks, size_t n)
{
	vx_pool_run(n, n, task_one, tasks);
}


static const struct stack_job *decl_job(const struct plan_action *pa)
{
	return job_action_job(pa);
}

/* Marks the record's current run as cancelled by vx (so it is never "cancelled outside"). */
static void mark_cancelled(struct state *state, const char *address, const char *resource)
{
	struct state_record *r = state_edit(state, address);

	if (r && r->current && r->current->resource && !strcmp(r->current->resource, resource)) {
		r->current->cancelled_by_vx = 1;
		free(r->current->state);
		r->current->state = strdup("JOB_STATE_CANCELLING");
	}
}

/*
 * An action that cancels a run resubmit.maxQueued ended (class
 * queue-timeout): a resubmit, or a cancel alone when vx watch keeps the
 * next attempt for resubmit.delay.
 */
static int is_queue_cancel(const struct plan_action *pa)
{
	const struct job_action *ja = job_action_of(pa);

	return pa->kind_of == &kind_job && ja->cancel_name && ja->failure_class &&
	       !strcmp(ja->failure_class, "queue-timeout");
}

/* The state's current run of pa's address when it is the run pa cancels, else NULL. */
static struct state_run *cancelled_run(struct applier *a, const struct plan_action *pa)
{
	struct state_record *r = state_edit(a->state, pa->address); /* marked: callers change the run */
	const char *name = job_action_of(pa)->cancel_name;

	return r && r->current && r->current->resource && name && !strcmp(r->current->resource, name) ? r->current
												      : NULL;
}

/* Records on run that vx cancels it for queue-timeout (on 1), or that it did not after all (on 0). */
static void mark_queue_cancel(struct applier *a, struct state_run *run, int on)
{
	run->cancelled_by_vx = on;
	free(run->failure);
	run->failure = NULL;
	if (on && !(run->failure = strdup("queue-timeout")))
		a->oom = 1;
	a->dirty = 1;
}

/*
 * resubmit.maxQueued: a GET of the run just before its cancel, which the
 * list may show late. Returns 1 when it is still queued or pending and has
 * never started (its record then says vx cancels it, class queue-timeout),
 * 2 when it is cancelling from vx's own cancel (an earlier apply's: no
 * second one is sent, its end is waited for), 0 when it is left alone: it
 * started, ended, or could not be read (said).
 */
static int still_queued(struct applier *a, const struct plan_action *pa)
{
	const char *name = job_action_of(pa)->cancel_name;
	struct state_run *run = cancelled_run(a, pa);
	struct vx_err e = VX_ERR_INIT;
	struct live_job lj;
	int queued;

	memset(&lj, 0, sizeof(lj));
	if (!run)
		return 0;
	if (provider_job_get(a->prov, name, &lj, NULL, &e) < 0) {
		applier_fail(a, pa->address, "cancel", &e);
		vx_err_release(&e);
		return 0;
	}
	queued = lj.start_ms <= 0 && lj.state &&
		 (!strcmp(lj.state, "JOB_STATE_QUEUED") || !strcmp(lj.state, "JOB_STATE_PENDING"));
	if (lj.start_ms <= 0 && lj.state && !strcmp(lj.state, "JOB_STATE_CANCELLING") && run->cancelled_by_vx &&
	    run->failure && !strcmp(run->failure, "queue-timeout"))
		queued = 2;
	else if (queued)
		mark_queue_cancel(a, run, 1);
	else
		applier_progress(a, "~ %s left alone: run %s is %s, it started (or ended) before the cancel "
				    "resubmit.maxQueued planned",
				 pa->address, name, job_state_short(lj.state));
	live_job_release(&lj);
	return queued;
}

/*
 * Of the cancels in acts[0..*n), keeps those of runs past resubmit.maxQueued
 * only when a GET shows them still waiting (still_queued); their records
 * say so durably before any is sent, so an apply that dies after the cancel
 * leaves a run its successor knows vx cancelled, and why.
 */
static int check_queued(struct applier *a, const struct plan_action **acts, size_t *n, struct vx_err *err)
{
	size_t kept = 0, marked = 0;

	for (size_t i = 0; i < *n; i++) {
		/* Left alone, or cancelling already: no cancel is sent. */
		if (is_queue_cancel(acts[i]) && still_queued(a, acts[i]) != 1)
			continue;
		marked += is_queue_cancel(acts[i]);
		acts[kept++] = acts[i];
	}
	*n = kept;
	return marked ? applier_persist(a, "vx: apply: cancels after resubmit.maxQueued", err) : 0;
}

static int do_cancels(struct applier *a, struct vx_err *err)
{
	size_t n = 0, par = (size_t)(a->opts->parallelism > 0 ? a->opts->parallelism : 8);
	const struct plan_action **acts = calloc(a->plan->n + 1, sizeof(*acts));
	struct task *tasks = NULL;
	int rc = 0;

	if (!acts)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	for (size_t i = 0; i < a->plan->n; i++)
		if (job_action_of(&a->plan->actions[i])->cancel_name)
			acts[n++] = &a->plan->actions[i];
	rc = check_queued(a, acts, &n, err);
	for (size_t off = 0; off < n && rc == 0; off += par) {
		size_t k = n - off < par ? n - off : par;

		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			break;
		}
		tasks = calloc(k, sizeof(*tasks));
		if (!tasks) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			break;
		}
		for (size_t i = 0; i < k; i++) {
			tasks[i].prov = a->prov;
			tasks[i].is_cancel = 1;
			tasks[i].cancel_name = job_action_of(acts[off + i])->cancel_name;
			tasks[i].fence = applier_fence(a);
		}
		/* Renewed if due, so the batch starts with most of the lease ahead. */
		rc = applier_heartbeat(a, err);
		if (rc == 0)
			run_tasks(tasks, k);
		if (rc == 0 && a->fenced)
			rc = applier_fence_stop(a, err);
		for (size_t i = 0; i < k && rc == 0; i++) {
			const struct plan_action *pa = acts[off + i];
			const struct job_action *ja = job_action_of(pa);

			if (tasks[i].rc < 0 && tasks[i].rc != VX_ENOTFOUND) {
				applier_fail(a, pa->address, "cancel", &tasks[i].err);
				/* Not cancelled: it may still start, and is not vx's queue-timeout. */
				if (is_queue_cancel(pa) && cancelled_run(a, pa))
					mark_queue_cancel(a, cancelled_run(a, pa), 0);
			} else {
				/*
				 * Only the record whose current run this is learns of the
				 * cancel (an untracked job's action has no record), and the
				 * record stays: the next plan forgets it once the run has
				 * ended, so its last state is recorded.
				 */
				if (ja->record)
					mark_cancelled(a->state, pa->address, ja->cancel_name);
				if (pa->op == PLAN_CANCEL)
					a->res->ok++;
				applier_progress(a, "- %s cancel %s%s", pa->address, ja->cancel_name,
						 ja->record ? "" : " (untracked)");
			}
		}
		for (size_t i = 0; i < k; i++)
			vx_err_release(&tasks[i].err);
		free(tasks);
		tasks = NULL;
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	free(acts);
	return rc;
}

/*
 * Whether the run pa cancelled after resubmit.maxQueued has been seen to
 * end (a GET, whose state the record then holds); 1 too when pa is not
 * such a cancel, or its run was left alone or is gone (nothing to wait for).
 */
static int queue_end_seen(struct applier *a, const struct plan_action *pa)
{
	struct state_run *run = is_queue_cancel(pa) ? cancelled_run(a, pa) : NULL;
	struct vx_err e = VX_ERR_INIT;
	struct live_job lj;
	int rc, ended;

	if (!run || !run->cancelled_by_vx || job_state_is_terminal(run->state))
		return 1;
	memset(&lj, 0, sizeof(lj));
	rc = provider_job_get(a->prov, run->resource, &lj, NULL, &e);
	vx_err_release(&e);
	if (rc < 0)
		return rc == VX_ENOTFOUND;
	ended = job_state_is_terminal(lj.state);
	if (ended) {
		free(run->state);
		if (!(run->state = strdup(lj.state)))
			a->oom = 1;
		run->ended_ms = lj.end_ms;
		a->dirty = 1;
	}
	live_job_release(&lj);
	return ended;
}

/*
 * The runs cancelled after resubmit.maxQueued, read until each has ended,
 * up to ctx->cancel_wait_ms (default 120 s): the next attempt is created
 * only then, so an address never has two active runs. One still
 * cancelling is left to the next apply or watch cycle (collect_creates).
 */
static int wait_queue_ends(struct applier *a, struct vx_err *err)
{
	int64_t limit = a->ctx->cancel_wait_ms ? a->ctx->cancel_wait_ms : 120000;
	int64_t poll = a->opts->poll_ms > 0 ? a->opts->poll_ms : 2000, start = vx_mono_ms(a->ctx);
	int rc = 0;

	while (rc == 0) {
		size_t left = 0;

		for (size_t i = 0; i < a->plan->n; i++)
			left += !queue_end_seen(a, &a->plan->actions[i]);
		if (!left || vx_mono_ms(a->ctx) - start >= limit || vx_interrupted(a->ctx))
			break;
		vx_sleep_ms(a->ctx, poll);
		rc = applier_heartbeat(a, err);
	}
	return rc;
}

/* Whether pa's create may go: not the next attempt after a maxQueued cancel whose run has not ended. */
static int queue_create_ready(struct applier *a, const struct plan_action *pa)
{
	const struct state_run *run = is_queue_cancel(pa) ? cancelled_run(a, pa) : NULL;

	if (!is_queue_cancel(pa))
		return 1;
	/* Left alone (it started): no new attempt. */
	if (!run || !run->cancelled_by_vx)
		return 0;
	if (job_state_is_terminal(run->state))
		return 1;
	applier_progress(a, "~ %s attempt %lld waits: run %s is still cancelling; the next apply (or vx watch) "
			    "creates it once it has ended",
			 pa->address, (long long)job_action_of(pa)->attempt,
			 run->resource);
	return 0;
}

/* Records what j declares as r's applied policy, unless the apply keeps the policy as it is. */
static void record_policy(struct applier *a, struct state_record *r, const struct stack_job *j)
{
	if (!a->opts->keep_policy && policy_record(r, a->st, j) < 0)
		a->oom = 1;
}

/* Jobs whose protect, onRemove or policy changed: recorded, no run started. */
static void do_updates(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		struct state_record *r;

		if (pa->kind_of != &kind_job || pa->op != PLAN_UPDATE || !decl_job(pa))
			continue;
		if ((r = state_edit(a->state, pa->address))) {
			r->protect = decl_job(pa)->protect;
			r->on_remove = decl_job(pa)->on_remove;
			record_policy(a, r, decl_job(pa));
			a->res->ok++;
			applier_progress(a, "~ %s update %s", pa->address, pa->reason ? pa->reason : "");
		}
	}
}

static void do_forgets(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_job || pa->op != PLAN_FORGET)
			continue;
		if (state_find(a->state, pa->address))
			(void)state_remove_record(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "- %s forget", pa->address);
	}
}

static int is_create(enum plan_op k)
{
	return k == PLAN_CREATE || k == PLAN_REPLACE || k == PLAN_RERUN || k == PLAN_RESUBMIT;
}

/* Everything one create needs, kept for the batch. */
struct create {
	const struct plan_action *pa;
	const struct stack_job *job;
	struct vx_label *labels;
	size_t nlabels;
	int done;  /* settled without a create (adopted) */
	size_t region_ix; /* its region's place among the regions, by first appearance */
	size_t rank;      /* how many creates of its region come before it in the plan */
	char *spec_json;  /* owned: the spec to send when not the rung's own (a job in a booking's
			   * window, on the reservation Google delivered: job_window_spec), or NULL */
};

/* The region of the rung c's run goes on. */
static const char *create_region(const struct create *c)
{
	return stack_job_rung_region(c->job, job_action_of(c->pa)->rung);
}

static int make_labels(struct applier *a, struct create *c)
{
	const struct stack_job *j = c->job;
	/* The identity is the declared spec's hash on every rung: moving down
	 * the ladder is another attempt of the same run, not a new spec. */
	const struct job_action *ja = job_action_of(c->pa);
	struct run_id id = { a->st->name, a->state->lineage, j->d.name, j->spec.hash, ja->run, ja->attempt,
			     ja->rung };

	return runlabel_build(&c->labels, &c->nlabels, &id, j->labels.items, j->labels.n);
}

/* Makes sure the record exists and matches the declaration; returns it. */
static struct state_record *record_for(struct applier *a, const struct stack_job *j, struct vx_err *err)
{
	struct state_record *r = state_edit(a->state, j->d.address);

	if (!r && state_add_record(a->state, j->d.address, "CustomJob", &r, err) < 0)
		return NULL;
	record_policy(a, r, j);
	return r;
}

/*
 * Records on run what it is created with (machine type, GPUs, replicas,
 * strategy, reservation), so vx report and vx log can price it after the
 * declaration changes. The machine type is the accelerator pools' (else the
 * first pool's); replicas and GPUs are totals over the pools. 0, or VX_ENOMEM.
 */
static int run_machines(struct state_run *run, const struct job_spec *spec)
{
	const char *first = NULL, *gpu_machine = NULL, *gpu = NULL;
	int64_t replicas = 0, gpus = 0;

	for (size_t i = 0; i < spec->npools; i++) {
		const struct spec_pool *p = &spec->pools[i];
		const char *vertex = p->accelerator_type;
		int64_t each = p->accelerator_count, n = p->replica_count > 0 ? p->replica_count : 1;

		if (!p->machine_type)
			continue;
		if (!first)
			first = p->machine_type;
		replicas += n;
		if (!vertex)
			(void)machines_fixed_gpus(p->machine_type, &vertex, &each);
		if (!vertex)
			continue;
		if (each <= 0 && !machines_fixed_gpus(p->machine_type, NULL, &each))
			each = 1;
		gpus += n * each;
		if (!gpu) {
			gpu = vertex;
			gpu_machine = p->machine_type;
		}
	}
	/* The rung's own scheduling.timeout, if it sets one: what Vertex ends the run at. */
	run->timeout_ms = failure_spec_timeout_ms(spec->canonical_json);
	if (!first)
		return 0;
	run->machine_type = vx_strdup(gpu_machine ? gpu_machine : first);
	run->accelerator_type = gpu ? vx_strdup(gpu) : NULL;
	run->accelerator_count = gpus;
	run->replicas = replicas;
	run->strategy = vx_strdup(spec->strategy ? spec->strategy : "STANDARD");
	run->reservation = spec->reservation ? vx_strdup(spec->reservation) : NULL;
	if (!run->machine_type || !run->strategy || (gpu && !run->accelerator_type) ||
	    (spec->reservation && !run->reservation))
		return VX_ENOMEM;
	return 0;
}

/* Records a new current run (created or adopted) for a job. */
static int start_run(struct applier *a, const struct plan_action *pa, const struct stack_job *j,
		     const struct live_job *lj, const struct vx_label *labels, size_t nlabels,
		     const char *action, struct vx_err *err)
{
	const struct job_action *ja = job_action_of(pa);
	struct state_record *r = record_for(a, j, err);
	struct state_run run;
	int new_key;

	if (!r)
		return err->code ? err->code : VX_ENOMEM;
	memset(&run, 0, sizeof(run));
	new_key = !r->spec_hash || strcmp(r->spec_hash, j->spec.hash) != 0 || r->run != j->run;
	free(r->spec_hash);
	r->spec_hash = strdup(j->spec.hash);
	free(r->spec_json);
	r->spec_json = j->spec.redacted_json ? strdup(j->spec.redacted_json) : NULL;
	r->run = j->run;
	r->protect = j->protect;
	r->on_remove = j->on_remove;
	r->attempts = new_key ? 1 : ja->attempt;
	run.resource = vx_strdup(lj->name);
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(lj->region ? lj->region : stack_job_rung_region(j, ja->rung));
	run.action = vx_strdup(action);
	run.spec_hash = vx_strdup(j->spec.hash);
	run.run = ja->run;
	run.attempt = ja->attempt;
	run.rung = ja->rung;
	/* What the rung is, so a later edit of the ladder finds the run on it
	 * wherever the rung moved (kind_job's job_run_rung). Jobs without a ladder
	 * record none: their records keep their bytes. */
	if (j->nrungs) {
		struct plan_rung_id id;

		job_rung_id(&id, j, ja->rung);
		run.rung_scheduling = vx_strdup(id.scheduling);
		run.rung_machine = vx_strdup(id.machine);
		run.rung_reservation = vx_strdup(id.reservation);
	}
	if (run_machines(&run, stack_job_rung_spec(j, ja->rung)) < 0) {
		state_run_release(&run);
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	run.state = vx_strdup(lj->state ? lj->state : "JOB_STATE_QUEUED");
	run.created_ms = lj->create_ms ? lj->create_ms : vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	run.config_dirty = a->opts->config_dirty;
	run.decl_hash = a->opts->config_dirty ? vx_strdup(a->opts->decl_hash) : NULL;
	applier_stamp_run(a, &run);
	for (size_t i = 0; i < nlabels; i++)
		if (vx_labels_set(&run.labels, &run.nlabels, labels[i].key, labels[i].value) < 0) {
			state_run_release(&run);
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		}
	/* after: which run of each dependency this run follows (sweep_plan.c) */
	if (j->nafter && sweep_follows(a->state, j, &run.follows, &run.nfollows) < 0) {
		state_run_release(&run);
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	return state_record_start_run(r, &run, err);
}

/*
 * Whether a failed create was the server refusing this job (a permission, an
 * argument, a precondition, quota), the only failure that counts as an
 * attempt. Not the caller's credentials (401), an interrupt, a local error:
 * they say nothing of the job, and the next apply must simply try.
 */
static int server_refused(int rc)
{
	return rc != VX_EAUTH && rc != VX_ECANCELED && rc != VX_EIO && rc != VX_ENOMEM;
}

/*
 * A create the server refused (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, ...)
 * made no job, but it was an attempt: a past run with no resource, its
 * attempt, time, class (failure_classify_refusal) and message. The plan
 * reads it back (note_refusals, job_refusal_gate): the next try waits for
 * resubmit.on, maxAttempts and a backoff, never every apply.
 */
static void record_refused(struct applier *a, const struct create *c, const char *verb,
			   const struct vx_err *why)
{
	struct vx_err e2 = VX_ERR_INIT;
	struct state_record *r = record_for(a, c->job, &e2);
	const char *msg = vx_err_msg(why);
	const char *cls = failure_classify_refusal(msg);
	const struct job_action *ja = job_action_of(c->pa);
	struct state_run run;

	memset(&run, 0, sizeof(run));
	if (!r) {
		vx_err_release(&e2);
		a->oom = 1;
		return;
	}
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(create_region(c));
	run.action = vx_strdup(verb);
	run.spec_hash = vx_strdup(c->job->spec.hash);
	run.run = ja->run;
	run.attempt = ja->attempt;
	run.rung = ja->rung;
	run.failure = vx_strdup(cls);
	run.error_message = vx_strdup(msg);
	if (run_machines(&run, stack_job_rung_spec(c->job, ja->rung)) < 0)
		a->oom = 1;
	run.created_ms = run.ended_ms = vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	applier_stamp_run(a, &run);
	for (size_t i = 0; i < c->nlabels; i++)
		if (vx_labels_set(&run.labels, &run.nlabels, c->labels[i].key, c->labels[i].value) < 0)
			a->oom = 1;
	if (state_record_add_history(r, &run, &e2) < 0)
		a->oom = 1;
	vx_err_release(&e2);
}

static int record_created(struct applier *a, const char *name, const char *region)
{
	char **n1 = realloc(a->res->created, (a->res->ncreated + 1) * sizeof(*n1));
	char **n2;

	if (!n1)
		return VX_ENOMEM;
	a->res->created = n1;
	n2 = realloc(a->res->created_regions, (a->res->ncreated + 1) * sizeof(*n2));
	if (!n2)
		return VX_ENOMEM;
	a->res->created_regions = n2;
	n1[a->res->ncreated] = vx_strdup(name);
	n2[a->res->ncreated] = vx_strdup(region);
	a->res->ncreated++;
	return 0;
}


/*
 * After an uncertain create: list the region and look for the job by its
 * labels. 1 = found (copied to *out), 0 = certainly absent, < 0 = could not list.
 */
static int find_by_labels(struct applier *a, const struct create *c, struct live_job *out,
			  struct vx_err *err)
{
	struct live_jobs js = { 0 };
	const char *region = create_region(c);
	const char *job = vx_labels_get(c->labels, c->nlabels, "vx-job");
	/* Only this job's runs: settling waits, listing again, and a region may
	 * hold thousands of the stack's jobs. */
	int rc = job && PROVIDER_HAS(a->prov, job, list_runs)
			 ? provider_job_list_runs(a->prov, a->opts->project, region, a->st->name, job, &js, err)
			 : provider_job_list(a->prov, a->opts->project, region, a->st->name, &js, err);

	if (rc < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < js.n && rc == 0; i++) {
		if (runlabel_match(js.items[i].labels, js.items[i].nlabels, c->labels, c->nlabels,
				   RUNLABEL_ALL)) {
			rc = live_job_copy(out, &js.items[i]) < 0 ? VX_ENOMEM : 1;
		}
	}
	live_jobs_release(&js);
	return rc;
}

static void fill_request(struct applier *a, struct task *t, const struct create *c)
{
	t->prov = a->prov;
	t->req.project = a->opts->project;
	/* A rung's own region and spec; baseOutputDirectory is the job's on
	 * every rung (a rung cannot set it), so training resumes from its checkpoints. */
	t->req.region = create_region(c);
	t->req.display_name = c->job->display_name;
	t->req.labels = c->labels;
	t->req.nlabels = c->nlabels;
	t->req.spec_json = c->spec_json ? c->spec_json
					: stack_job_rung_spec(c->job, job_action_of(c->pa)->rung)->canonical_json;
	t->req.fence = applier_fence(a);
}

/* Resolves an uncertain create; the job may exist. Returns 0 when settled. */
static int resolve_uncertain(struct applier *a, struct create *c, struct task *t)
{
	struct vx_err e2 = VX_ERR_INIT;
	int tries, resent = 0;

	if (vx_interrupted(a->ctx)) {
		/* Asked to stop: no listing now; the next apply settles the intent. */
		vx_err_set(&t->err, VX_EUNCERTAIN, "%s; the intent stays journaled and the next "
			   "apply adopts the job if it was made", vx_err_msg(&t->err));
		return t->rc;
	}
	for (tries = 0; tries < 2; tries++) {
		struct live_job found;
		int rc;

		memset(&found, 0, sizeof(found));
		rc = find_by_labels(a, c, &found, &e2);
		if (rc == 1) {
			live_job_release(&t->created);
			t->created = found;
			t->rc = 0;
			vx_log(a->ctx, VX_LOG_INFO, "%s: the uncertain create did create %s; adopted",
			       c->pa->address, found.name);
			break;
		}
		if (rc < 0) {
			/* Cannot tell: leave the intent in the journal for the next run. */
			vx_err_set(&t->err, VX_EUNCERTAIN, "the create's outcome is unknown and listing "
				   "failed (%s); the intent stays journaled and the next plan will "
				   "adopt the job if it exists", vx_err_msg(&e2));
			break;
		}
		if (tries == 1 || vx_interrupted(a->ctx))
			break;
		/* Certainly not created: try once more. */
		vx_err_release(&t->err);
		t->rc = provider_job_create(a->prov, &t->req, &t->created, &t->err);
		resent = 1;
		if (t->rc != VX_EUNCERTAIN)
			break;
	}
	if (resent && t->rc < 0) {
		/* The HTTP layer's "not sent again" speaks of its own tries: say that
		 * apply itself sent the create a second time. */
		char *last = vx_strdup(vx_err_msg(&t->err));

		vx_err_set(&t->err, t->rc, "sent twice: the first create's outcome was unknown and no job "
			   "carried its labels, so it was sent once more; that one: %s",
			   last ? last : "out of memory");
		free(last);
	}
	vx_err_release(&e2);
	return t->rc;
}

static int do_adopts(struct applier *a, struct vx_err *err)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		const struct job_action *ja = job_action_of(pa);
		const struct stack_job *j = decl_job(pa);
		struct create c = { pa, j, NULL, 0, 0, 0, 0, NULL };
		struct live_job lj;
		int rc;

		if (pa->op != PLAN_ADOPT || !j)
			continue;
		memset(&lj, 0, sizeof(lj));
		lj.name = ja->adopt_name;
		lj.region = pa->region;
		lj.state = ja->live_state;
		lj.create_ms = ja->adopt_create_ms;
		if (make_labels(a, &c) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		rc = start_run(a, pa, j, &lj, c.labels, c.nlabels, "adopt", err);
		vx_labels_free(c.labels, c.nlabels);
		if (rc < 0)
			return rc;
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		if (record_created(a, ja->adopt_name, pa->region) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		applier_progress(a, "~ %s adopt %s", pa->address, ja->adopt_name);
	}
	return 0;
}

/* The journaled intent of an earlier apply for exactly this run (same labels), or NULL. */
static const struct state_intent *pending_intent(const struct applier *a, const struct create *c)
{
	for (size_t i = 0; i < a->state->njournal; i++) {
		const struct state_intent *in = &a->state->journal[i];

		if (!strcmp(in->address, c->pa->address) &&
		    runlabel_match(in->labels, in->nlabels, c->labels, c->nlabels,
				   RUNLABEL_SPEC | RUNLABEL_RUN | RUNLABEL_ATTEMPT))
			return in;
	}
	return NULL;
}

/*
 * An earlier apply journaled this very create and died before recording the
 * result: its request may still land. Wait (listing by labels) until the
 * intent is older than the in-flight window. Returns 1 and fills *found when
 * the job appeared, 0 when it is safe to create, 2 when interrupted first (the
 * intent must stay), < 0 on error.
 */
static int settle_intent(struct applier *a, const struct create *c, struct live_job *found,
			 struct vx_err *err)
{
	const struct state_intent *in = pending_intent(a, c);
	int64_t window = a->opts->inflight_ms > 0 ? a->opts->inflight_ms : 65000;
	int64_t poll = a->opts->poll_ms > 0 ? a->opts->poll_ms : 2000;
	int64_t started, now;
	int said = 0;

	if (!in)
		return 0;
	started = in->started_ms;
	for (;;) {
		int rc = find_by_labels(a, c, found, err);

		if (rc == VX_ECANCELED) {
			vx_err_release(err);
			return 2;
		}
		if (rc != 0)
			return rc;
		now = vx_now_ms(a->ctx);
		if (now - started >= window)
			return 0;
		if (vx_interrupted(a->ctx))
			return 2;
		/* The wait may outlast a short lease: keep it. */
		rc = applier_heartbeat(a, err);
		if (rc < 0)
			return rc;
		if (!said++ && a->hooks->progress) {
			char *line = vx_asprintf("  %s: an earlier apply's create of this run is unconfirmed "
						 "(%.1f s ago); waiting up to %.0f s for it to appear before "
						 "creating it again", c->pa->address, (double)(now - started) / 1000,
						 (double)(window - (now - started)) / 1000);

			if (line)
				a->hooks->progress(a->hooks->ud, line);
			free(line);
		}
		vx_sleep_ms(a->ctx, poll < window - (now - started) ? poll : window - (now - started));
	}
}

/*
 * A job on a declared reservation is created only once that reservation
 * exists: when its create or replace failed in this apply, the job's
 * create is not sent (it would fail on a missing reservation) and says why.
 */
static int needs_failed_reservation(struct applier *a, const struct plan_action *pa)
{
	const char *name = decl_job(pa)->spec.reservation;
	struct vx_err e = VX_ERR_INIT;
	char *addr;
	int failed;

	if (!name)
		return 0;
	if (!(addr = vx_asprintf("reservation.%s", name))) {
		a->oom = 1;
		return 1;
	}
	failed = applier_has_failed(a, addr);
	if (failed) {
		vx_err_set(&e, VX_EINVAL, "not sent: it runs on %s, which was not created", addr);
		applier_fail(a, pa->address, plan_op_name(pa->op), &e);
		vx_err_release(&e);
	}
	free(addr);
	return failed;
}

/* This plan's create or replace of persistent resource address, or NULL. */
static const struct plan_action *persistent_made(const struct plan *p, const char *address)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->actions[i].kind_of == &kind_persistent && !strcmp(p->actions[i].address, address) &&
		    (p->actions[i].op == PLAN_CREATE || p->actions[i].op == PLAN_REPLACE))
			return &p->actions[i];
	return NULL;
}

/*
 * A job on a declared persistent resource this apply creates or replaces is
 * sent only once that resource is RUNNING: Vertex refuses a job on a
 * resource in any other state, and one whose create failed does not exist.
 * Otherwise the job's create is not sent and says why; the next plan shows
 * it waiting for the resource (kind_persistent_jobs.c).
 */
static int needs_unready_persistent(struct applier *a, const struct plan_action *pa)
{
	size_t nd;
	const struct stack_persistent *ds = stack_persistents(a->st, &nd);
	const struct stack_job *j = decl_job(pa);

	for (size_t i = 0; i < nd; i++) {
		const struct state_record *r;
		const char *st;
		struct vx_err e = VX_ERR_INIT;

		if (!stack_persistent_of_job(&ds[i], j))
			continue;
		if (!persistent_made(a->plan, ds[i].d.address))
			return 0;
		r = state_find(a->state, ds[i].d.address);
		st = r && r->current && r->current->state ? r->current->state : "not created";
		if (!applier_has_failed(a, ds[i].d.address) && !strcmp(st, "RUNNING"))
			return 0;
		vx_err_set(&e, VX_EINVAL, "not sent: it runs on %s, which is %s", ds[i].d.address,
			   applier_has_failed(a, ds[i].d.address) ? "not created" : st);
		applier_fail(a, pa->address, plan_op_name(pa->op), &e);
		vx_err_release(&e);
		return 1;
	}
	return 0;
}

static int cmp_round_robin(const void *x, const void *y)
{
	const struct create *c = x, *d = y;

	if (c->rank != d->rank)
		return c->rank < d->rank ? -1 : 1;
	return c->region_ix < d->region_ix ? -1 : c->region_ix > d->region_ix;
}

/*
 * Orders the creates round-robin over their regions: the first of each
 * region (regions in the order they first appear), then the second of each,
 * and so on; within a region, plan (name) order. Google limits creates per
 * region (60 a minute), and the HTTP layer keeps one token bucket per
 * region, so a batch of -parallelism creates that all fall in one region
 * waits on that region's bucket while the others' buckets sit full. With
 * the batches interleaved, every batch draws on every region's bucket, the
 * buckets run side by side and N regions go N times as fast. The batches
 * and the crash-safety protocol around each (settle, journal and persist
 * the intents, create, record and persist the results) are unchanged: only
 * which creates share a batch changes. Why batches stay rather than a pool
 * of workers: docs/design-notes.md ("Apply across regions").
 */
static int order_round_robin(struct create *cs, size_t n)
{
	const char **regions = calloc(n + 1, sizeof(*regions));
	size_t *counts = calloc(n + 1, sizeof(*counts));
	size_t nregions = 0;

	if (!regions || !counts) {
		free(regions);
		free(counts);
		return VX_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		size_t r = 0;

		/* Regions are few (tens at most): a scan is cheaper than a table. */
		while (r < nregions && strcmp(regions[r], create_region(&cs[i])))
			r++;
		if (r == nregions)
			regions[nregions++] = create_region(&cs[i]);
		cs[i].region_ix = r;
		cs[i].rank = counts[r]++;
	}
	if (nregions > 1)
		qsort(cs, n, sizeof(*cs), cmp_round_robin);
	free(regions);
	free(counts);
	return 0;
}

/*
 * The creates of the plan (create, replace, rerun, resubmit) with their
 * labels, into cs (room for every action); *n is how many. A create on a
 * reservation that failed in this apply, and a replace whose cancel
 * failed, are left out.
 */
static int collect_creates(struct applier *a, struct create *cs, size_t *n, struct vx_err *err)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (!is_create(pa->op) || !decl_job(pa))
			continue;
		if (needs_failed_reservation(a, pa) || needs_unready_persistent(a, pa) || job_window_blocked(a, pa) ||
		    !queue_create_ready(a, pa))
			continue;
		/* A replace whose cancel failed must not start a second run. */
		if (pa->op == PLAN_REPLACE) {
			const struct state_record *r = state_find(a->state, pa->address);

			if (!r || !r->current || !r->current->cancelled_by_vx) {
				a->res->skipped++;
				continue;
			}
		}
		cs[*n].pa = pa;
		cs[*n].job = decl_job(pa);
		/* Counted first: the caller frees what a failed one holds. */
		(*n)++;
		if (make_labels(a, &cs[*n - 1]) < 0 ||
		    job_window_spec(&cs[*n - 1].spec_json, a->st, cs[*n - 1].job, job_action_of(pa)) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	if (order_round_robin(cs, *n) < 0)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	return 0;
}

/* Step 0 of a batch: runs an apply that died may still be creating are settled first. */
static int settle_batch(struct applier *a, struct create *cs, size_t k, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < k && rc == 0; i++) {
		struct create *c = &cs[i];
		struct live_job found;
		int st;

		memset(&found, 0, sizeof(found));
		st = settle_intent(a, c, &found, err);
		if (st < 0) {
			rc = st;
			break;
		}
		if (st == 2) {
			/* Still unconfirmed: its intent stays for the next apply. */
			a->res->interrupted = 1;
			a->res->skipped++;
			c->done = 1;
		}
		if (st == 1) {
			rc = start_run(a, c->pa, c->job, &found, c->labels, c->nlabels, "adopt", err);
			if (rc == 0) {
				(void)state_journal_remove(a->state, c->pa->address);
				a->res->ok++;
				if (record_created(a, found.name, create_region(c)) < 0)
					a->oom = 1;
				applier_progress(a, "~ %s adopt %s (created by an earlier apply)", c->pa->address,
					 found.name);
			}
			c->done = 1;
		}
		live_job_release(&found);
	}
	return rc;
}

/* Step 1: the intents journaled, durably, before any create is sent. */
static int journal_batch(struct applier *a, const struct create *cs, size_t k, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < k && rc == 0; i++)
		if (!cs[i].done)
			rc = applier_journal(a, cs[i].pa->address, plan_op_name(cs[i].pa->op),
					     cs[i].labels, cs[i].nlabels, err);
	if (rc == 0)
		rc = applier_persist(a, "vx: apply: intents", err);
	/* Renewed if due, so the batch starts with most of the lease ahead. */
	if (rc == 0)
		rc = applier_heartbeat(a, err);
	return rc;
}

/* Step 2: the creates not settled, in parallel; tasks[i] is cs[i]'s (k of them). */
static void create_batch(struct applier *a, const struct create *cs, size_t k, struct task *tasks)
{
	size_t m = 0;
	struct task *todo = tasks;

	/* Settled creates are left out of the batch. */
	for (size_t i = 0; i < k; i++)
		if (!cs[i].done)
			fill_request(a, &tasks[m++], &cs[i]);
	run_tasks(todo, m);
	for (size_t i = k, j = m; i-- > 0;) {
		/* Spread results back to their creates' slots. */
		if (!cs[i].done) {
			j--;
			if (j != i) {
				tasks[i] = tasks[j];
				memset(&tasks[j], 0, sizeof(tasks[j]));
			}
		}
	}
}

/*
 * Step 3: the results recorded. Not after the fence refused: the lease may
 * be another apply's, which adopts by labels whatever this batch made.
 */
static int record_batch(struct applier *a, struct create *cs, size_t k, struct task *tasks,
			struct vx_err *err)
{
	int rc = 0;

	if (a->fenced)
		rc = applier_fence_stop(a, err);
	for (size_t i = 0; i < k && rc == 0; i++) {
		struct create *c = &cs[i];
		struct task *t = &tasks[i];
		const char *verb = plan_op_name(c->pa->op);

		if (c->done)
			continue;
		if (t->rc == VX_EUNCERTAIN)
			resolve_uncertain(a, c, t);
		if (a->fenced) {
			rc = applier_fence_stop(a, err);
			break;
		}
		if (t->rc == 0) {
			rc = start_run(a, c->pa, c->job, &t->created, c->labels, c->nlabels, verb, err);
			if (rc == 0) {
				(void)state_journal_remove(a->state, c->pa->address);
				a->res->ok++;
				if (record_created(a, t->created.name, create_region(c)) < 0)
					a->oom = 1;
				applier_progress(a, "+ %s %s %s", c->pa->address, verb, t->created.name);
			}
		} else {
			if (t->rc != VX_EUNCERTAIN) {
				(void)state_journal_remove(a->state, c->pa->address);
				if (server_refused(t->rc))
					record_refused(a, c, verb, &t->err);
			}
			applier_fail(a, c->pa->address, verb, &t->err);
		}
	}
	return rc;
}

/* One batch of k creates: settle, journal, create, record. */
static int run_batch(struct applier *a, struct create *cs, size_t k, struct vx_err *err)
{
	struct task *tasks;
	int rc = settle_batch(a, cs, k, err);

	if (rc == 0)
		rc = journal_batch(a, cs, k, err);
	if (rc < 0)
		return rc;
	tasks = calloc(k, sizeof(*tasks));
	if (!tasks)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	create_batch(a, cs, k, tasks);
	rc = record_batch(a, cs, k, tasks, err);
	for (size_t i = 0; i < k; i++) {
		live_job_release(&tasks[i].created);
		vx_err_release(&tasks[i].err);
	}
	free(tasks);
	return rc;
}

static int do_creates(struct applier *a, struct vx_err *err)
{
	size_t n = 0, par = (size_t)(a->opts->parallelism > 0 ? a->opts->parallelism : 8);
	struct create *cs = calloc(a->plan->n + 1, sizeof(*cs));
	int rc = 0;

	if (!cs)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	rc = collect_creates(a, cs, &n, err);
	if (rc < 0)
		goto done;
	for (size_t off = 0; off < n && rc == 0; off += par) {
		size_t k = n - off < par ? n - off : par;

		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped += n - off;
			break;
		}
		rc = run_batch(a, &cs[off], k, err);
		/*
		 * The results are saved with the next batch's intents, one commit
		 * for both (half the saves of a large apply, each of which costs
		 * every record's bytes): in between they are in memory only, and
		 * a crash there leaves their intents journaled, which the next
		 * apply settles by labels (it adopts the jobs), as after a crash
		 * during the create itself. The last batch is saved below.
		 */
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	/* The last batch's results; after an interrupt, the batches run so far.
	 * Not after the fence refused: the lease may be another apply's. */
	if (!a->fenced) {
		struct vx_err later = VX_ERR_INIT;
		int prc;

		if (n && a->msg.len == 0 && vx_buf_adds(&a->msg, "(no job created)\n") < 0)
			a->oom = 1;
		prc = applier_persist(a, "vx: apply: creates", rc == 0 ? err : &later);
		if (rc == 0)
			rc = prc;
		vx_err_release(&later);
	}
done:
	for (size_t i = 0; i < n; i++) {
		vx_labels_free(cs[i].labels, cs[i].nlabels);
		free(cs[i].spec_json);
	}
	free(cs);
	return rc;
}

int apply_job_removals(struct applier *a, struct vx_err *err)
{
	int rc = do_cancels(a, err);

	if (rc == 0)
		rc = wait_queue_ends(a, err);
	if (rc == 0)
		do_forgets(a);
	return rc;
}

int apply_job_changes(struct applier *a, struct vx_err *err)
{
	int rc;

	do_updates(a);
	rc = sweep_apply_waits(a, err);
	if (rc == 0)
		rc = do_adopts(a, err);
	if (rc == 0)
		rc = applier_persist(a, "vx: apply: updates and adoptions", err);
	if (rc == 0)
		rc = do_creates(a, err);
	return rc;
}
