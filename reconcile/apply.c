#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/kind.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/failure.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

void apply_result_release(struct apply_result *r)
{
	vx_diags_release(&r->failures);
	for (size_t i = 0; i < r->ncreated; i++) {
		free(r->created[i]);
		free(r->created_regions[i]);
	}
	free(r->created);
	free(r->created_regions);
	memset(r, 0, sizeof(*r));
}

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

static void *task_main(void *arg)
{
	struct task *t = arg;

	if (t->is_cancel)
		t->rc = t->prov->cancel_job(t->prov, t->cancel_name, t->fence, &t->err);
	else
		t->rc = t->prov->create_job(t->prov, &t->req, &t->created, &t->err);
	return NULL;
}

/* Runs tasks on up to n threads at once (n == count here: callers batch). */
static void run_tasks(struct task *tasks, size_t n)
{
	pthread_t *th = calloc(n ? n : 1, sizeof(*th));
	int *started = calloc(n ? n : 1, sizeof(*started));

	for (size_t i = 0; i < n; i++) {
		if (th && started && pthread_create(&th[i], NULL, task_main, &tasks[i]) == 0)
			started[i] = 1;
		else
			task_main(&tasks[i]); /* no thread to be had: run it here */
	}
	for (size_t i = 0; i < n; i++)
		if (th && started && started[i])
			pthread_join(th[i], NULL);
	free(th);
	free(started);
}


static int fence_check(void *ud, struct vx_err *err)
{
	struct applier *a = ud;
	int rc = a->hooks->fence(a->hooks->ud, err);

	if (rc < 0) {
		pthread_mutex_lock(&a->fence_lock);
		if (!a->fenced) {
			a->fenced = 1;
			(void)vx_err_set(&a->fence_err, rc, "%s", vx_err_msg(err));
		}
		pthread_mutex_unlock(&a->fence_lock);
	}
	return rc;
}

static const struct provider_fence *fence_of(const struct applier *a)
{
	return a->hooks->fence ? &a->fence : NULL;
}

static int fence_stop(struct applier *a, struct vx_err *err);

const struct provider_fence *applier_fence(const struct applier *a)
{
	return fence_of(a);
}

int applier_fenced(const struct applier *a)
{
	int f;

	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	f = a->fenced;
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	return f;
}

int applier_fence_stop(struct applier *a, struct vx_err *err)
{
	return fence_stop(a, err);
}

void applier_mark_failed(struct applier *a, const char *address)
{
	char **grown = realloc(a->failed, (a->nfailed + 1) * sizeof(*grown));

	if (!grown || !(grown[a->nfailed] = strdup(address))) {
		if (grown)
			a->failed = grown;
		a->oom = 1;
		return;
	}
	a->failed = grown;
	a->nfailed++;
}

int applier_has_failed(const struct applier *a, const char *address)
{
	for (size_t i = 0; i < a->nfailed; i++)
		if (!strcmp(a->failed[i], address))
			return 1;
	return 0;
}

/* The fence refused during the last batch: stop with its message. */
static int fence_stop(struct applier *a, struct vx_err *err)
{
	a->res->fenced = 1;
	return vx_err_set(err, a->fence_err.code, "%s", vx_err_msg(&a->fence_err));
}

void applier_progress(struct applier *a, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0) {
		if (a->hooks->progress)
			a->hooks->progress(a->hooks->ud, vx_buf_str(&b));
		if (vx_buf_add(&a->msg, b.data, b.len) < 0 || vx_buf_addc(&a->msg, '\n') < 0)
			a->oom = 1;
	}
	vx_buf_release(&b);
}

void applier_fail(struct applier *a, const char *address, const char *what, const struct vx_err *e)
{
	a->res->failed++;
	vx_diags_add(&a->res->failures, NULL, 0, 0, "%s: %s: %s", address, what, vx_err_msg(e));
	if (a->hooks->progress) {
		char *line = vx_asprintf("! %s %s failed: %s", address, what, vx_err_msg(e));

		if (line)
			a->hooks->progress(a->hooks->ud, line);
		free(line);
	}
}

int applier_persist(struct applier *a, const char *summary, struct vx_err *err)
{
	struct vx_buf m = VX_BUF_INIT;
	int rc;

	if (a->oom)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	if (a->msg.len == 0)
		return 0;
	rc = vx_buf_printf(&m, "%s\n\n%s", summary, vx_buf_str(&a->msg));
	if (rc == 0)
		rc = a->hooks->persist(a->hooks->ud, a->state, vx_buf_str(&m), err);
	else
		rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	vx_buf_release(&m);
	vx_buf_reset(&a->msg);
	return rc;
}

int applier_heartbeat(struct applier *a, struct vx_err *err)
{
	return a->hooks->heartbeat ? a->hooks->heartbeat(a->hooks->ud, err) : 0;
}

static const struct stack_job *decl_job(const struct plan_action *pa)
{
	return pa->decl ? (const struct stack_job *)pa->decl->user : NULL;
}

/* Marks the record's current run as cancelled by vx (so it is never "cancelled outside"). */
static void mark_cancelled(struct state *state, const char *address, const char *resource)
{
	struct state_record *r = state_find(state, address);

	if (r && r->current && r->current->resource && !strcmp(r->current->resource, resource)) {
		r->current->cancelled_by_vx = 1;
		free(r->current->state);
		r->current->state = strdup("JOB_STATE_CANCELLING");
	}
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
		if (a->plan->actions[i].cancel_name)
			acts[n++] = &a->plan->actions[i];
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
			tasks[i].cancel_name = acts[off + i]->cancel_name;
			tasks[i].fence = fence_of(a);
		}
		/* Renewed if due, so the batch starts with most of the lease ahead. */
		rc = applier_heartbeat(a, err);
		if (rc == 0)
			run_tasks(tasks, k);
		if (rc == 0 && a->fenced)
			rc = fence_stop(a, err);
		for (size_t i = 0; i < k && rc == 0; i++) {
			const struct plan_action *pa = acts[off + i];

			if (tasks[i].rc < 0 && tasks[i].rc != VX_ENOTFOUND) {
				applier_fail(a, pa->address, "cancel", &tasks[i].err);
			} else {
				/*
				 * Only the record whose current run this is learns of the
				 * cancel (an untracked job's action has no record), and the
				 * record stays: the next plan forgets it once the run has
				 * ended, so its last state is recorded.
				 */
				if (pa->record)
					mark_cancelled(a->state, pa->address, pa->cancel_name);
				if (pa->kind == PLAN_CANCEL)
					a->res->ok++;
				applier_progress(a, "- %s cancel %s%s", pa->address, pa->cancel_name,
					 pa->record ? "" : " (untracked)");
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

/* Jobs whose protect changed: recorded, no run started. */
static void do_updates(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		struct state_record *r;

		if (pa->kind_of != &kind_job || pa->kind != PLAN_UPDATE || !decl_job(pa))
			continue;
		if ((r = state_find(a->state, pa->address))) {
			r->protect = decl_job(pa)->protect;
			a->res->ok++;
			applier_progress(a, "~ %s update %s", pa->address, pa->reason ? pa->reason : "");
		}
	}
}

static void do_forgets(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_job || pa->kind != PLAN_FORGET)
			continue;
		if (state_find(a->state, pa->address))
			(void)state_remove_record(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "- %s forget", pa->address);
	}
}

static int is_create(enum plan_kind k)
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
};

static int make_labels(struct applier *a, struct create *c)
{
	const struct stack_job *j = c->job;
	struct run_id id = { a->st->name, a->state->lineage, j->d.name, j->spec.hash, c->pa->run,
			     c->pa->attempt };

	return runlabel_build(&c->labels, &c->nlabels, &id, j->labels.items, j->labels.n);
}

/* Makes sure the record exists and matches the declaration; returns it. */
static struct state_record *record_for(struct applier *a, const struct stack_job *j, struct vx_err *err)
{
	struct state_record *r = state_find(a->state, j->d.address);

	if (!r && state_add_record(a->state, j->d.address, "CustomJob", &r, err) < 0)
		return NULL;
	return r;
}

/* Records a new current run (created or adopted) for a job. */
static int start_run(struct applier *a, const struct plan_action *pa, const struct stack_job *j,
		     const struct live_job *lj, const struct vx_label *labels, size_t nlabels,
		     const char *action, struct vx_err *err)
{
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
	r->attempts = new_key ? 1 : pa->attempt;
	run.resource = vx_strdup(lj->name);
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(lj->region ? lj->region : j->region);
	run.action = vx_strdup(action);
	run.spec_hash = vx_strdup(j->spec.hash);
	run.run = pa->run;
	run.attempt = pa->attempt;
	run.state = vx_strdup(lj->state ? lj->state : "JOB_STATE_QUEUED");
	run.created_ms = lj->create_ms ? lj->create_ms : vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	run.config_dirty = a->opts->config_dirty;
	run.decl_hash = a->opts->config_dirty ? vx_strdup(a->opts->decl_hash) : NULL;
	run.launched_by = vx_strdup(a->opts->launched_by);
	for (size_t i = 0; i < nlabels; i++)
		if (vx_labels_set(&run.labels, &run.nlabels, labels[i].key, labels[i].value) < 0) {
			state_run_release(&run);
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		}
	return state_record_start_run(r, &run, err);
}

/*
 * A create the server refused (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, ...)
 * made no job, but the audit log must say it was tried: a past run with no
 * resource, its time, class and message. The plan still sees no current
 * run and creates it again next time.
 */
static void record_refused(struct applier *a, const struct create *c, const char *verb,
			   const struct vx_err *why)
{
	struct vx_err e2 = VX_ERR_INIT;
	struct state_record *r = record_for(a, c->job, &e2);
	const char *msg = vx_err_msg(why);
	const char *cls = failure_classify("JOB_STATE_FAILED", 0, msg, 0);
	struct state_run run;

	memset(&run, 0, sizeof(run));
	if (!r) {
		vx_err_release(&e2);
		a->oom = 1;
		return;
	}
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(c->job->region);
	run.action = vx_strdup(verb);
	run.spec_hash = vx_strdup(c->job->spec.hash);
	run.run = c->pa->run;
	run.attempt = c->pa->attempt;
	run.failure = vx_strdup(cls && !strcmp(cls, "quota") ? "quota" : "refused");
	run.error_message = vx_strdup(msg);
	run.created_ms = run.ended_ms = vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	run.launched_by = vx_strdup(a->opts->launched_by);
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
	int rc = a->prov->list_jobs(a->prov, a->opts->project, c->job->region, a->st->name, &js, err);

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
	t->req.region = c->job->region;
	t->req.display_name = c->job->display_name;
	t->req.labels = c->labels;
	t->req.nlabels = c->nlabels;
	t->req.spec_json = c->job->spec.canonical_json;
	t->req.fence = fence_of(a);
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
		t->rc = a->prov->create_job(a->prov, &t->req, &t->created, &t->err);
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

int applier_record_action(struct applier *a, const char *address, const char *kind_name,
			  const char *decl_hash, struct state_run *run, struct vx_err *err)
{
	struct state_record *r = state_find(a->state, address);

	if (!r && state_add_record(a->state, address, kind_name, &r, err) < 0) {
		state_run_release(run);
		return err->code;
	}
	if (decl_hash) {
		free(r->spec_hash);
		r->spec_hash = vx_strdup(decl_hash);
	}
	if (!run->project)
		run->project = vx_strdup(a->opts->project);
	run->spec_hash = vx_strdup(r->spec_hash);
	run->attempt = 1;
	run->created_ms = vx_now_ms(a->ctx);
	run->config_commit = vx_strdup(a->opts->config_commit);
	run->launched_by = vx_strdup(a->opts->launched_by);
	run->has_value = 1;
	return state_record_start_run(r, run, err);
}

int applier_journal(struct applier *a, const char *address, const char *op,
		    const struct vx_label *labels, size_t nlabels, struct vx_err *err)
{
	struct state_intent in;
	int rc;

	/* Borrowed: state_journal_add keeps a copy. labels are sorted by key. */
	memset(&in, 0, sizeof(in));
	in.address = (char *)(uintptr_t)address;
	in.op = (char *)(uintptr_t)op;
	in.started_ms = vx_now_ms(a->ctx);
	in.labels = (struct vx_label *)(uintptr_t)labels;
	in.nlabels = nlabels;
	rc = state_journal_add(a->state, &in, err);
	if (rc == 0 && vx_buf_printf(&a->msg, "intent %s %s\n", address, op) < 0)
		a->oom = 1;
	return rc;
}

static int do_adopts(struct applier *a, struct vx_err *err)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		const struct stack_job *j = decl_job(pa);
		struct create c = { pa, j, NULL, 0, 0, 0, 0 };
		struct live_job lj;
		int rc;

		if (pa->kind != PLAN_ADOPT || !j)
			continue;
		memset(&lj, 0, sizeof(lj));
		lj.name = pa->adopt_name;
		lj.region = pa->region;
		lj.state = pa->live_state;
		lj.create_ms = pa->adopt_create_ms;
		if (make_labels(a, &c) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		rc = start_run(a, pa, j, &lj, c.labels, c.nlabels, "adopt", err);
		vx_labels_free(c.labels, c.nlabels);
		if (rc < 0)
			return rc;
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		if (record_created(a, pa->adopt_name, pa->region) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		applier_progress(a, "~ %s adopt %s", pa->address, pa->adopt_name);
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
		applier_fail(a, pa->address, plan_kind_name(pa->kind), &e);
		vx_err_release(&e);
	}
	free(addr);
	return failed;
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
		while (r < nregions && strcmp(regions[r], cs[i].job->region))
			r++;
		if (r == nregions)
			regions[nregions++] = cs[i].job->region;
		cs[i].region_ix = r;
		cs[i].rank = counts[r]++;
	}
	if (nregions > 1)
		qsort(cs, n, sizeof(*cs), cmp_round_robin);
	free(regions);
	free(counts);
	return 0;
}

static int do_creates(struct applier *a, struct vx_err *err)
{
	size_t n = 0, par = (size_t)(a->opts->parallelism > 0 ? a->opts->parallelism : 8);
	struct create *cs = calloc(a->plan->n + 1, sizeof(*cs));
	struct task *tasks = NULL;
	int rc = 0;

	if (!cs)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (!is_create(pa->kind) || !decl_job(pa))
			continue;
		if (needs_failed_reservation(a, pa))
			continue;
		/* A replace whose cancel failed must not start a second run. */
		if (pa->kind == PLAN_REPLACE) {
			const struct state_record *r = state_find(a->state, pa->address);

			if (!r || !r->current || !r->current->cancelled_by_vx) {
				a->res->skipped++;
				continue;
			}
		}
		cs[n].pa = pa;
		cs[n].job = decl_job(pa);
		if (make_labels(a, &cs[n]) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			goto done;
		}
		n++;
	}
	if (order_round_robin(cs, n) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		goto done;
	}
	for (size_t off = 0; off < n && rc == 0; off += par) {
		size_t k = n - off < par ? n - off : par;

		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped += n - off;
			break;
		}
		/* 0. Runs an apply that died may still be creating: settle them first. */
		for (size_t i = 0; i < k && rc == 0; i++) {
			struct create *c = &cs[off + i];
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
					if (record_created(a, found.name, c->job->region) < 0)
						a->oom = 1;
					applier_progress(a, "~ %s adopt %s (created by an earlier apply)", c->pa->address,
						 found.name);
				}
				c->done = 1;
			}
			live_job_release(&found);
		}
		/* 1. Journal the intents, durably, before any create is sent. */
		for (size_t i = 0; i < k && rc == 0; i++)
			if (!cs[off + i].done)
				rc = applier_journal(a, cs[off + i].pa->address, plan_kind_name(cs[off + i].pa->kind),
						     cs[off + i].labels, cs[off + i].nlabels, err);
		if (rc == 0)
			rc = applier_persist(a, "vx: apply: intents", err);
		/* Renewed if due, so the batch starts with most of the lease ahead. */
		if (rc == 0)
			rc = applier_heartbeat(a, err);
		if (rc < 0)
			break;
		/* 2. Create, in parallel. */
		tasks = calloc(k, sizeof(*tasks));
		if (!tasks) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			break;
		}
		{
			size_t m = 0;
			struct task *todo = tasks;

			/* Settled creates are left out of the batch. */
			for (size_t i = 0; i < k; i++)
				if (!cs[off + i].done)
					fill_request(a, &tasks[m++], &cs[off + i]);
			run_tasks(todo, m);
			for (size_t i = k, j = m; i-- > 0;) {
				/* Spread results back to their creates' slots. */
				if (!cs[off + i].done) {
					j--;
					if (j != i) {
						tasks[i] = tasks[j];
						memset(&tasks[j], 0, sizeof(tasks[j]));
					}
				}
			}
		}
		/*
		 * 3. Results. Not after the fence refused: the lease may be another
		 * apply's, which adopts by labels whatever this batch made.
		 */
		if (a->fenced)
			rc = fence_stop(a, err);
		for (size_t i = 0; i < k && rc == 0; i++) {
			struct create *c = &cs[off + i];
			struct task *t = &tasks[i];
			const char *verb = plan_kind_name(c->pa->kind);

			if (c->done)
				continue;
			if (t->rc == VX_EUNCERTAIN)
				resolve_uncertain(a, c, t);
			if (a->fenced) {
				rc = fence_stop(a, err);
				break;
			}
			if (t->rc == 0) {
				rc = start_run(a, c->pa, c->job, &t->created, c->labels, c->nlabels, verb, err);
				if (rc == 0) {
					(void)state_journal_remove(a->state, c->pa->address);
					a->res->ok++;
					if (record_created(a, t->created.name, c->job->region) < 0)
						a->oom = 1;
					applier_progress(a, "+ %s %s %s", c->pa->address, verb, t->created.name);
				}
			} else {
				if (t->rc != VX_EUNCERTAIN) {
					(void)state_journal_remove(a->state, c->pa->address);
					record_refused(a, c, verb, &t->err);
				}
				applier_fail(a, c->pa->address, verb, &t->err);
			}
		}
		for (size_t i = 0; i < k; i++) {
			live_job_release(&tasks[i].created);
			vx_err_release(&tasks[i].err);
		}
		free(tasks);
		tasks = NULL;
		if (rc == 0) {
			if (a->msg.len == 0 && vx_buf_adds(&a->msg, "(no job created)\n") < 0)
				a->oom = 1;
			rc = applier_persist(a, "vx: apply: creates", err);
		}
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
done:
	for (size_t i = 0; i < n; i++)
		vx_labels_free(cs[i].labels, cs[i].nlabels);
	free(cs);
	return rc;
}

int apply_job_removals(struct applier *a, struct vx_err *err)
{
	int rc = do_cancels(a, err);

	if (rc == 0)
		do_forgets(a);
	return rc;
}

int apply_job_changes(struct applier *a, struct vx_err *err)
{
	int rc;

	do_updates(a);
	rc = do_adopts(a, err);
	if (rc == 0)
		rc = applier_persist(a, "vx: apply: updates and adoptions", err);
	if (rc == 0)
		rc = do_creates(a, err);
	return rc;
}

int apply_run(struct apply_result *result, struct vx_ctx *ctx, const struct plan *plan,
	      const struct stack *st, struct state *state, struct provider *prov,
	      const struct apply_options *opts, const struct apply_hooks *hooks, struct vx_err *err)
{
	struct applier a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.ctx = ctx;
	a.plan = plan;
	a.st = st;
	a.state = state;
	a.prov = prov;
	a.opts = opts;
	a.hooks = hooks;
	a.res = result;
	a.fence.check = fence_check;
	a.fence.ud = &a;
	pthread_mutex_init(&a.fence_lock, NULL);
	memset(result, 0, sizeof(*result));
	/* Removals in reverse phase order (jobs are cancelled before the
	 * reservation they run on is deleted), then changes in phase order
	 * (quota preferences, reservations, jobs). */
	rc = 0;
	for (size_t k = kind_count; k-- > 0 && rc == 0 && !a.res->fenced;)
		rc = kind_table[k]->apply(&a, 1, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply: removals", err);
	for (size_t k = 0; k < kind_count && rc == 0 && !a.res->fenced; k++)
		rc = kind_table[k]->apply(&a, 0, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply", err);
	for (size_t i = 0; i < a.nfailed; i++)
		free(a.failed[i]);
	free(a.failed);
	vx_buf_release(&a.msg);
	vx_err_release(&a.fence_err);
	pthread_mutex_destroy(&a.fence_lock);
	return rc;
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

static int cmp_live_name(const void *a, const void *b)
{
	return strcmp((*(const struct live_job *const *)a)->name,
		      (*(const struct live_job *const *)b)->name);
}

static const struct live_job *live_lookup(const struct live_job **idx, size_t n, const char *name)
{
	struct live_job key;
	const struct live_job *kp = &key, *const *hit;

	if (!name)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = (char *)(uintptr_t)name; /* only compared, never written */
	hit = bsearch(&kp, idx, n, sizeof(*idx), cmp_live_name);
	return hit ? *hit : NULL;
}

/*
 * Copies what lj says about run into it. Returns 1 when something changed,
 * 0 when not, < 0 when out of memory (run is left half-updated but valid).
 */
static int refresh_run(struct state_run *run, const struct live_job *lj)
{
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
	cls = failure_classify(lj->state, lj->error_code, lj->error_message, run->cancelled_by_vx);
	if (set_if_changed(&run->failure, cls, &changed) < 0)
		return VX_ENOMEM;
	return changed;
}

/* Refreshes run from the index; appends a summary line naming it when it changed. */
static size_t refresh_one(struct state_run *run, const struct live_job **idx, size_t n,
		       const char *address, int earlier, struct vx_buf *b)
{
	const struct live_job *lj = live_lookup(idx, n, run->resource);
	char *old_state;
	int changed;

	if (!lj)
		return 0;
	old_state = vx_strdup(run->state);
	changed = refresh_run(run, lj);
	if (changed > 0 &&
	    vx_buf_printf(b, "%s%s%s%s: %s -> %s%s%s%s\n", address, earlier ? " (earlier run " : "",
			  earlier ? run->resource : "", earlier ? ")" : "", job_state_short(old_state),
			  job_state_short(run->state), run->failure ? " (" : "",
			  run->failure ? run->failure : "", run->failure ? ")" : "") < 0)
		vx_buf_reset(b);
	free(old_state);
	return changed > 0;
}

size_t apply_refresh_state(struct state *state, const struct live_jobs *live, char **summary)
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
	qsort(idx, n, sizeof(*idx), cmp_live_name);
	for (size_t i = 0; i < state->nrecords; i++) {
		struct state_record *r = &state->records[i];

		/*
		 * Earlier runs too, until they are seen ending: a replaced run is
		 * moved to history while it is still cancelling, and its end would
		 * otherwise never be recorded.
		 */
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource && !job_state_is_terminal(r->history[h].state))
				changed += refresh_one(&r->history[h], idx, n, r->address, 1, &b);
		if (r->current && r->current->resource)
			changed += refresh_one(r->current, idx, n, r->address, 0, &b);
	}
	free(idx);
	if (summary)
		*summary = b.len ? vx_buf_detach(&b) : NULL;
	vx_buf_release(&b);
	return changed;
}
