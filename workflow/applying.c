/* An apply under the state lease: see workflow/applying.h. */
#include "workflow/applying.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reconcile/notify.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/policy_rules.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/wait.h"
#include "state/backend.h"
#include "state/git_path.h"
#include "state/lock.h"
#include "state/state.h"
#include "state/state_git.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "workflow/ci.h"
#include "util/testhook.h"
#include "util/banned.h"

static int hook_persist(void *ud, struct state *st, const char *message, struct vx_err *err)
{
	struct applying *ap = ud;

	return state_write(ap->ws.backend, st, message, err);
}

static void hook_progress(void *ud, const char *line)
{
	struct applying *ap = ud;
	const struct applying_events *ev = ap->opts->ev;

	if (ev && ev->progress)
		ev->progress(ev->ud, line);
}

/* Renews the lease when a third of it has passed since the last renewal. */
static int hook_heartbeat(void *ud, struct vx_err *err)
{
	struct applying *ap = ud;

	return state_lock_heartbeat(ap->ws.backend, err);
}

/* Right before each create or cancel is sent, from worker threads. */
static int hook_fence(void *ud, struct vx_err *err)
{
	struct applying *ap = ud;
	int rc;

	if (!ap->pause_armed)
		return state_lock_fence(ap->ws.backend, err);
	pthread_mutex_lock(&ap->pause_lock);
	if (!ap->paused)
		ap->paused = vx_test_hook(ap->ws.ctx, "before-send");
	rc = state_lock_fence(ap->ws.backend, err);
	pthread_mutex_unlock(&ap->pause_lock);
	return rc;
}

/*
 * The fence refused: the lease may be another apply's by now. Give it back
 * if it is still ours (a compare-and-swap, so it never clears theirs); when
 * it is not, the fence's message has said all there is to say.
 */
static void drop_after_fence(struct workspace *ws)
{
	struct vx_err e = VX_ERR_INIT;
	int rc = state_lock_drop(ws->backend, &e);

	if (rc < 0 && rc != VX_ECONFLICT && ws->ev && ws->ev->problem)
		ws->ev->problem(ws->ev->ud, "releasing the state lock", &e);
	vx_err_release(&e);
}

static int is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Whether a saved plan's dir_in_repo stays inside the repository: relative, no "..". */
static int inside_repo(const char *p)
{
	if (!*p || p[0] == '/')
		return 0;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2))
			return 0;
		if (!p[n])
			return 1;
		p += n + 1;
	}
}

/*
 * Where the saved plan's stack is in this checkout: dir_in_repo under the
 * work tree of the current directory's repository (a CI runner applying an
 * artifact from its checkout), else under that of the plan file's, else the
 * absolute dir it was planned in (plans from before dir_in_repo, stacks
 * outside git). The plan's own declaration hash then proves it is the same
 * stack. *out is owned by the caller.
 */
static int saved_plan_dir(char **out, const struct saved_plan *sp, const char *planfile,
			  struct vx_err *err)
{
	const char *slash = strrchr(planfile, '/');
	char *from[2] = { NULL, NULL }, *root = NULL, *cand = NULL;
	int rc = 0;

	*out = NULL;
	if (!sp->dir_in_repo)
		goto absolute;
	if (!inside_repo(sp->dir_in_repo))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"dir_in_repo\" must be a relative path "
				  "inside the repository, not \"%s\"", sp->dir_in_repo);
	from[0] = strdup(".");
	from[1] = slash ? vx_asprintf("%.*s", slash == planfile ? 1 : (int)(slash - planfile), planfile)
			: strdup(".");
	if (!from[0] || !from[1]) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < 2; i++) {
		struct vx_err e = VX_ERR_INIT;

		free(root);
		root = NULL;
		if (state_git_workdir(&root, from[i], &e) < 0) {
			vx_err_release(&e);
			continue;
		}
		cand = !strcmp(sp->dir_in_repo, ".") ? strdup(root)
						      : vx_asprintf("%s/%s", root, sp->dir_in_repo);
		if (!cand) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		if (is_dir(cand)) {
			*out = cand;
			goto done;
		}
		free(cand);
		cand = NULL;
	}
	if (!is_dir(sp->dir)) {
		rc = vx_err_set(err, VX_ENOTFOUND, "the plan's stack directory %s is in no git checkout "
				"of the current directory or of the plan file, and %s (where it was "
				"planned) does not exist; run vxapply inside a checkout of the planned commit",
				sp->dir_in_repo, sp->dir);
		goto done;
	}
absolute:
	*out = strdup(sp->dir);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	free(root);
	free(from[0]);
	free(from[1]);
	return rc;
}

void applying_init(struct applying *ap)
{
	memset(ap, 0, sizeof(*ap));
	pthread_mutex_init(&ap->pause_lock, NULL);
}

int applying_open(struct applying *ap, struct vx_ctx *ctx, const char *dir,
		  const struct workspace_events *wev, struct vx_err *err)
{
	return workspace_open(&ap->ws, ctx, dir, wev, err);
}

int applying_open_lent(struct applying *ap, struct vx_ctx *ctx, const char *dir, struct provider *prov,
		       const struct workspace_source *src, struct stack **kept, unsigned flags,
		       const struct workspace_events *wev, struct vx_err *err)
{
	return workspace_open_lent(&ap->ws, ctx, dir, prov, src, kept, flags, wev, err);
}

int applying_open_saved(struct applying *ap, struct vx_ctx *ctx, const char *planfile,
			struct planning_opts *po, const struct workspace_events *wev, struct vx_err *err)
{
	struct saved_plan *sp = &ap->sp;
	int rc;

	ap->from_file = 1;
	ap->planfile = planfile;
	if ((rc = vx_buf_read_file(&ap->file, planfile, 16u << 20, err)) < 0 ||
	    (rc = saved_plan_parse(sp, ap->file.data, ap->file.len, err)) < 0) {
		ap->not_a_plan = 1;
		return vx_err_wrap(err, "%s", planfile);
	}
	po->refresh = sp->refresh;
	/* The plan is a file someone handed us: who it names reaches commits and terminals. */
	if (sp->planned_by && (!ci_actor_ok(sp->planned_by) || (sp->pr_url && !ci_url_ok(sp->pr_url))))
		return vx_err_set(err, VX_EINVAL, "apply: %s: \"planned_by\" names no valid actor or pull "
				  "request URL (printable, no spaces, at most %d and %d characters)", planfile,
				  CI_ACTOR_MAX, CI_URL_MAX);
	if ((rc = saved_plan_dir(&ap->plan_dir, sp, planfile, err)) < 0)
		return vx_err_wrap(err, "%s", planfile);
	if ((rc = workspace_open(&ap->ws, ctx, ap->plan_dir, wev, err)) < 0)
		return rc;
	/* The saved plan's own -target list, so the plan is remade with the same scope. */
	for (size_t i = 0; i < sp->ntargets; i++)
		if (planning_opts_add(&po->targets, &po->ntargets, sp->targets[i]) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* Planned with -allow-other-lineage: applied with it, as reviewed. */
	po->allow_other_lineage |= sp->allow_other_lineage;
	/* And with -allow-released. */
	po->allow_released |= sp->allow_released;
	return 0;
}

/* Told once, when apply starts waiting for another's lock. */
static void on_lock_wait(void *ud, const struct state_lock *l, int64_t timeout_ms)
{
	struct applying *ap = ud;
	const struct applying_events *ev = ap->opts->ev;

	if (ev && ev->lock_wait)
		ev->lock_wait(ev->ud, l, timeout_ms);
}

int applying_lock(struct applying *ap, const struct applying_opts *opts, const struct planning_opts *po,
		  struct vx_err *err)
{
	struct workspace *ws = &ap->ws;
	struct state_lock_opts lo;
	int rc;

	if ((rc = workspace_config_status(ws, err)) < 0)
		return rc;
	/*
	 * A CI job applies what was reviewed and merged: uncommitted YAML there
	 * is a build step gone wrong, and the runs would name a commit that does
	 * not hold what was applied.
	 */
	if (ws->config_changes && opts->committed_only)
		return vx_err_set(err, VX_EINVAL, "apply: the stack has uncommitted changes (%s); CI is set, "
				  "and in CI vx applies only committed configuration: commit them first",
				  ws->config_changes);
	memset(&lo, 0, sizeof(lo));
	lo.operation = opts->operation ? opts->operation : "apply";
	lo.lease_ms = opts->lease_ms;
	lo.timeout_ms = opts->lock_timeout_ms;
	lo.on_wait = on_lock_wait;
	lo.ud = ap;
	ap->opts = opts;
	lo.unlock_args = opts->unlock_args;
	ap->pause_armed = vx_test_hook_armed(ws->ctx, "before-send");
	if ((rc = state_lock_acquire(ws->backend, &lo, err)) < 0)
		return rc;
	/* Only now: lists made before the lease was ours could miss what the
	 * apply that held it last created. */
	if (po->refresh)
		workspace_prefetch(ws);
	return workspace_load_state(ws, err);
}

/* A saved plan applies only to the state and declaration it was made from:
 * VX_ECONFLICT with what moved ("the state moved since ..."). */
static int check_saved(struct applying *ap, struct vx_err *err)
{
	const struct saved_plan *sp = &ap->sp;
	struct workspace *ws = &ap->ws;
	int rc;

	if (ws->state.serial != sp->state_serial ||
	    (sp->state_serial && sp->state_lineage && strcmp(sp->state_lineage, ws->state.lineage)))
		return vx_err_set(err, VX_ECONFLICT, "the state moved since the plan was made "
				  "(serial %llu then, %llu now); run vxplan again",
				  (unsigned long long)sp->state_serial, (unsigned long long)ws->state.serial);
	/* The declaration hash covers sensitive values by their HMAC under the
	 * state's salt, so it is compared once the same state is loaded. */
	if ((rc = workspace_salt(ws, sp->state_salt, err)) < 0)
		return rc;
	if (strcmp(sp->decl_hash, ws->st->decl_hash) != 0)
		return vx_err_set(err, VX_ECONFLICT, "the declaration changed since the plan was "
				  "made; run vxplan again");
	return 0;
}

int applying_saved_stale(struct applying *ap, struct vx_ctx *ctx, const char *planfile,
			 const struct workspace_events *wev, char **stale, struct vx_err *err)
{
	struct planning_opts po;
	int rc;

	*stale = NULL;
	memset(&po, 0, sizeof(po));
	if ((rc = applying_open_saved(ap, ctx, planfile, &po, wev, err)) < 0 ||
	    (rc = workspace_load_state(&ap->ws, err)) < 0)
		goto done;
	rc = check_saved(ap, err);
	if (rc == VX_ECONFLICT) {
		rc = (*stale = vx_strdup(vx_err_msg(err))) ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
		if (rc == 0)
			vx_err_release(err);
	}
done:
	planning_opts_release(&po);
	return rc;
}

/*
 * The commit of the policy in force, for every state write's trailer and
 * every run started (docs/policy.md): the last commit that changed the
 * repository's .vx/policy.yaml, else (a stack's own Policy alone, in the
 * stack's files) the config commit; none without a policy.
 */
static int record_policy_commit(struct workspace *ws, struct vx_err *err)
{
	const struct policy_rules *p = ws->st->policy;
	char *commit = NULL;
	int rc = 0;

	if (p && p->repo && p->root)
		rc = git_path_last_commit(&commit, p->root, POLICY_REPO_FILE, err);
	else if (p && ws->config_commit && !(commit = vx_strdup(ws->config_commit)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	if (rc == 0)
		rc = state_policy_commit(ws->backend, commit, err);
	free(commit);
	return rc < 0 ? vx_err_wrap(err, "the policy's commit") : 0;
}

/* "Vx-Allow-Over-Budget: by $1,500" on every state commit of this apply. */
static int audit_over_budget(struct applying *ap, struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc = vx_buf_adds(&b, "by ");

	if (rc == 0)
		rc = budget_money(&b, ap->pl.budget.r.exceed_by);
	rc = rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory")
		    : state_audit_over_budget(ap->ws.backend, vx_buf_str(&b), err);
	vx_buf_release(&b);
	return rc;
}

int applying_plan(struct applying *ap, const struct applying_opts *opts, const struct planning_opts *po,
		  struct vx_err *err)
{
	struct workspace *ws = &ap->ws;
	int rc;

	/* The pull request is the saved plan's (reviewed there), else this pipeline's own. */
	ap->pr = ap->from_file && ap->sp.pr_number ? ap->sp.pr_number : opts->ci->pr;
	ap->pr_url = ap->from_file && ap->sp.pr_number ? ap->sp.pr_url : opts->ci->pr_url;
	if ((rc = state_audit(ws->backend, opts->ci->actor, ap->pr_url, opts->ci->run_url, err)) < 0)
		return rc;
	if ((rc = record_policy_commit(ws, err)) < 0)
		return rc;
	/* From here on every state commit says the configuration applied is not HEAD's. */
	if (ws->config_changes && (rc = state_config_dirty(ws->backend, ws->st->decl_hash, err)) < 0)
		return rc;
	if (ap->from_file && (rc = check_saved(ap, err)) < 0)
		return vx_err_wrap(err, "apply: %s", ap->planfile);
	if ((rc = planning_run(&ap->pl, ws, po, err)) < 0)
		return rc;
	if (ap->from_file && (rc = saved_plan_matches(&ap->sp, &ap->pl.planner.plan, err)) < 0)
		return vx_err_wrap(err, "%s", ap->planfile);
	if (opts->allow_over_budget && planning_over_budget(&ap->pl))
		return audit_over_budget(ap, err);
	return 0;
}

/* Commits what the refresh saw about the runs (summary: one line per run changed). */
static int record_refresh(struct workspace *ws, size_t refreshed, size_t migrated, const char *summary,
			  struct vx_err *err)
{
	/* The subject names the runs that changed and how ("vx refresh: job.a running → succeeded"). */
	char *subject = refreshed ? apply_subject("vx refresh: ", summary) : NULL;
	char *msg = refreshed
		? vx_asprintf("%s%s\n\n%s", subject ? subject : "vx refresh: runs changed",
			      migrated ? "; sensitive values re-keyed" : "", summary ? summary : "")
		: vx_asprintf("vx: %zu record%s re-keyed: sensitive values as HMAC-SHA-256 "
			      "with the state's salt\n", migrated, migrated == 1 ? "" : "s");
	int rc = msg ? state_write(ws->backend, &ws->state, msg, err) : VX_ENOMEM;

	if (rc < 0) {
		if (!err->code)
			vx_err_set(err, rc, "out of memory");
		rc = vx_err_wrap(err, "recording the jobs' states");
	}
	free(subject);
	free(msg);
	return rc;
}

int applying_record(struct applying *ap, const struct planning_opts *po, struct vx_err *err)
{
	struct workspace *ws = &ap->ws;
	struct live_set kinds = live_store_view(&ws->store);
	int rc;

	ap->refreshed = po->refresh ? apply_refresh_state(&ws->state, kind_job_listed(&ws->store), &kinds,
							  &ap->refresh_summary)
				    : 0;
	/*
	 * How runs ended is recorded before anything else happens, in its own
	 * commit: a run that failed and is now forgotten, or a job cancelled,
	 * keeps its final state in the history. Records migrated to salted
	 * hashes are written now too, or a stack that never changes would keep
	 * its plain hashes forever.
	 */
	if (!ap->refreshed && !ws->migrated)
		return 0;
	if ((rc = record_refresh(ws, ap->refreshed, ws->migrated, ap->refresh_summary, err)) < 0)
		return rc;
	/* The spend is the state's history: what just ended counts now, before anything starts
	 * (vxapply; the watcher holds to the budget applied once it recorded, workflow/watch.c). */
	if (!ap->refreshed || po->budget_holds || !ws->st->budget.set)
		return 0;
	if (budget_hold_unreviewed(&ap->budget_held, &ap->pl.planner.plan, &ap->pl.capacity, ws, &ap->pl.prices,
				   po->now_ms ? po->now_ms : vx_now_ms(ws->ctx)) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

int applying_run(struct applying *ap, const struct applying_opts *opts, struct vx_err *err)
{
	struct workspace *ws = &ap->ws;
	struct apply_options ao;
	struct apply_hooks hooks = {
		.persist = hook_persist,
		.progress = hook_progress,
		.heartbeat = hook_heartbeat,
		.fence = hook_fence,
		.ud = ap,
	};
	int rc;

	memset(&ao, 0, sizeof(ao));
	ao.parallelism = opts->parallelism ? opts->parallelism : 8;
	ao.project = ws->st->project;
	ao.config_commit = ws->config_commit;
	ao.config_dirty = ws->config_changes != NULL;
	ao.decl_hash = ws->st->decl_hash;
	ao.launched_by = opts->ci->actor;
	ao.policy_commit = ws->backend->policy_commit;
	ao.planned_by = ap->from_file ? ap->sp.planned_by : NULL;
	ao.pr_number = ap->pr;
	ao.pr_url = ap->pr_url;
	ao.inflight_ms = opts->inflight_ms;
	ao.keep_policy = opts->keep_policy;
	ap->opts = opts;
	rc = apply_run(&ap->res, ws->ctx, &ap->pl.planner.plan, ws->st, &ws->state, ws->prov, &ao, &hooks, err);
	ap->ran = 1;
	if (rc < 0 && !ap->res.fenced)
		rc = vx_err_wrap(err, "apply stopped: writing the state failed");
	return rc;
}

/* -wait: reconcile/wait.c's hooks, which decides; the caller's events say it. */
struct waiter {
	struct workspace *ws;
	const struct applying_events *ev;
};

static int wait_refresh(void *ud, const struct live_jobs **out, struct vx_err *err)
{
	struct waiter *w = ud;
	int rc = workspace_refresh(w->ws, err);

	*out = kind_job_listed(&w->ws->store);
	return rc;
}

static void wait_changed(void *ud, const char *name, const struct live_job *lj, const char *state,
			 int64_t secs)
{
	struct waiter *w = ud;

	if (w->ev && w->ev->job_changed)
		w->ev->job_changed(w->ev->ud, name, lj, state, secs);
}

static void wait_waiting(void *ud, size_t pending, size_t running, size_t done, int64_t secs)
{
	struct waiter *w = ud;

	if (w->ev && w->ev->waiting)
		w->ev->waiting(w->ev->ud, pending, running, done, secs);
}

int applying_wait(struct applying *ap, int until_done, int64_t poll_ms, const struct applying_opts *opts,
		  struct vx_err *err)
{
	struct waiter w = { &ap->ws, opts->ev };
	struct wait_hooks h = { wait_refresh, wait_changed, wait_waiting, &w };
	int rc = wait_jobs(ap->ws.ctx, ap->res.created, ap->res.ncreated, until_done, poll_ms, &h, err);

	if (rc < 0)
		return vx_err_wrap(err, "waiting for jobs");
	return rc;
}

/* How long to wait for the lease to record one delivery: short, since a
 * delivery not recorded now is recorded by the next call. */
#define RECORD_LOCK_WAIT_MS 3000

/* applying_notify's sink: the state loaded under the lease, then each
 * delivery recorded under the lease taken for that write alone. */
struct recorder {
	struct applying *ap;
	int64_t until_mono;         /* the budget's end (vx_mono_ms), 0: none */
	int busy;                   /* a record failed: none more is tried in this call */
	const struct notify_list *events; /* what is sent, and to whom: what a key is of */
	const struct stack *targets;
};

/*
 * How long the delivery key must be remembered at least: its event's
 * keep_until_ms (a budget threshold's period end), 0 for the usual week.
 */
static int64_t rec_keep_until(const struct recorder *r, const char *key)
{
	for (size_t e = 0; e < r->events->n; e++) {
		const struct notify_event *ev = &r->events->items[e];
		char id[NOTIFY_ID_LEN + 1], k[NOTIFY_KEY_LEN + 1];

		if (!ev->keep_until_ms || notify_event_id(id, ev) < 0)
			continue;
		for (size_t t = 0; t < r->targets->nnotify; t++)
			if (notify_delivery_key(k, id, &r->targets->notify[t]) == 0 && !strcmp(k, key))
				return ev->keep_until_ms;
	}
	return 0;
}

static int rec_delivered(void *ud, const char *key)
{
	struct recorder *r = ud;

	return state_notified_has(&r->ap->ws.state, key);
}

/* Takes the lease, adds key to the state as it is now, writes it, gives the lease back. */
static int record_one(struct applying *ap, const char *key, int64_t at_ms, int64_t until_ms, struct vx_err *err)
{
	struct state fresh = STATE_INIT;
	struct state_lock_opts lo;
	struct vx_err e = VX_ERR_INIT;
	char *msg = NULL;
	int rc;

	memset(&lo, 0, sizeof(lo));
	lo.operation = ap->opts && ap->opts->operation ? ap->opts->operation : "apply";
	lo.lease_ms = ap->opts ? ap->opts->lease_ms : 0;
	lo.timeout_ms = RECORD_LOCK_WAIT_MS;
	if ((rc = state_lock_acquire(ap->ws.backend, &lo, err)) < 0)
		return rc;
	if ((rc = state_load(ap->ws.backend, &fresh, err)) < 0)
		goto done;
	if ((rc = state_notified_add_until(&fresh, key, at_ms, until_ms)) < 0) {
		rc = vx_err_set(err, rc, "recording %s: %s", key, rc == VX_ENOMEM ? "out of memory" : "not a key");
		goto done;
	}
	if (!(msg = vx_asprintf("vx notify: delivered %s\n", key))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_write(ap->ws.backend, &fresh, msg, err);
done:
	if (state_lock_drop(ap->ws.backend, &e) < 0 && ap->ws.ev && ap->ws.ev->problem)
		ap->ws.ev->problem(ap->ws.ev->ud, "releasing the state lock", &e);
	vx_err_release(&e);
	free(msg);
	state_release(&fresh);
	return rc;
}

static int rec_record(void *ud, const char *key, int64_t at_ms)
{
	struct recorder *r = ud;
	struct applying *ap = r->ap;
	struct vx_err e = VX_ERR_INIT;
	int64_t until = rec_keep_until(r, key);
	int rc;

	/* In memory first: nothing recorded is sent twice by this call. */
	if ((rc = state_notified_add_until(&ap->ws.state, key, at_ms, until)) < 0)
		return rc == VX_ENOMEM ? rc : 0;
	if (r->busy)
		return VX_ECONFLICT;
	rc = record_one(ap, key, at_ms, until, &e);
	if (rc < 0) {
		r->busy = 1;
		if (rc != VX_ECONFLICT && rc != VX_ENOMEM && ap->ws.ev && ap->ws.ev->problem)
			ap->ws.ev->problem(ap->ws.ev->ud, "recording a notification delivered", &e);
	}
	vx_err_release(&e);
	return rc;
}

static const char *rec_getenv(void *ud, const char *name)
{
	struct recorder *r = ud;

	return r->ap->opts && r->ap->opts->getenv ? r->ap->opts->getenv(name) : NULL;
}

static int64_t rec_time_left(void *ud)
{
	struct recorder *r = ud;

	return r->until_mono ? r->until_mono - vx_mono_ms(r->ap->ws.ctx) : INT64_MAX;
}

/* The resubmissions the apply made: the state's current run is the attempt planned. */
static int resubmitted_events(struct notify_list *out, const struct plan *p, const struct state *state,
			      const char *stack)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct job_action *ja = job_action_of(a);
		const struct state_record *r;
		struct notify_event ev;
		int rc;

		if (a->op != PLAN_RESUBMIT)
			continue;
		r = state_find(state, a->address);
		if (!r || !r->current || r->current->attempt != ja->attempt || !r->current->resource)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.kind = NOTIFY_RESUBMITTED;
		ev.stack = stack;
		ev.address = a->address;
		ev.run = r->run;
		ev.attempt = ja->attempt;
		ev.rung = ja->rung;
		ev.state = r->current->state;
		ev.cls = ja->failure_class;
		ev.message = ja->error_message;
		ev.job = r->current->resource;
		ev.time_ms = r->current->created_ms;
		if ((rc = notify_list_add(out, &ev)) < 0)
			return rc;
	}
	return 0;
}

int applying_events(struct applying *ap, int64_t since_ms, struct notify_list *out)
{
	/* Google's now: the runs' times are on its clock (provider_now_ms). */
	int rc = notify_collect(out, &ap->pl.planner.plan, ap->ws.st->name,
			       provider_now_ms(ap->ws.prov, ap->ws.ctx), since_ms);

	if (rc == 0 && ap->ran)
		rc = resubmitted_events(out, &ap->pl.planner.plan, &ap->ws.state, ap->ws.st->name);
	return rc;
}

/* A budget event of the stack (address NULL: a warnAt threshold) or of a held start, its strings copied. */
static int budget_event(struct notify_list *out, unsigned kind, const char *stack, const char *address,
			const char *state, const char *key, int64_t until_ms, int64_t now_ms)
{
	struct notify_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.stack = stack;
	ev.address = address;
	ev.owned[0] = vx_strdup(state);
	ev.owned[1] = vx_strdup(key);
	ev.state = ev.owned[0];
	ev.key = ev.owned[1];
	ev.keep_until_ms = until_ms;
	ev.time_ms = now_ms;
	if (!ev.owned[0] || !ev.owned[1]) {
		free(ev.owned[0]);
		free(ev.owned[1]);
		return VX_ENOMEM;
	}
	return notify_list_add(out, &ev);
}

int applying_budget_events(struct applying *ap, struct notify_list *out)
{
	const struct state *s = &ap->ws.state;
	const struct plan *p = &ap->pl.planner.plan;
	struct budget_warning warn[BUDGET_MAX_WARN];
	int64_t now = provider_now_ms(ap->ws.prov, ap->ws.ctx);
	size_t n = budget_warnings(warn, &ap->ws, &ap->pl.prices, now);
	char key[24];
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = budget_event(out, NOTIFY_BUDGET, ap->ws.st->name, NULL, warn[i].state, warn[i].key, warn[i].until_ms,
				  now);
	/* One budget-exhausted per episode, as the watcher's: the first start held, keyed alike. */
	for (size_t i = 0; i < p->n && rc == 0 && s->budget_cents > 0; i++) {
		const struct plan_action *a = &p->actions[i];

		if (a->op != PLAN_WAIT || !a->held || !a->reason || strncmp(a->reason, "held: budget", 12))
			continue;
		budget_exhausted_key(key, s->budget_cents, job_action_of(a)->attempt);
		return budget_event(out, NOTIFY_BUDGET_SPENT, ap->ws.st->name, a->address, a->reason, key, 0, now);
	}
	return rc;
}

/*
 * Records the Stack's budget as applied (the state's budget): what a watcher
 * holds the runs it would start to. In its own commit when it changed.
 */
static int applying_budget(struct applying *ap, struct vx_err *err)
{
	const struct stack_budget *b = &ap->ws.st->budget;
	struct state *s = &ap->ws.state;
	int64_t cents = b->set ? llround(b->usd * 100.0) : 0, days = b->set ? b->days : 0;
	char period[16];
	char *msg;
	int rc;

	size_t nwarn = b->set ? b->nwarn : 0;

	if (s->budget_cents == cents && s->budget_days == days && s->nbudget_warn_at == nwarn &&
	    !memcmp(s->budget_warn_at, b->warn_at, nwarn * sizeof(int)))
		return 0;
	s->budget_cents = cents;
	s->budget_days = days;
	s->nbudget_warn_at = nwarn;
	memcpy(s->budget_warn_at, b->warn_at, nwarn * sizeof(int));
	msg = cents ? vx_asprintf("vx budget: applied: %lld.%02lld USD per %s\n", (long long)(cents / 100),
				  (long long)(cents % 100), stack_budget_period(b, period, sizeof(period)))
		    : vx_strdup("vx budget: none applied\n");
	if (!msg)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = state_write(ap->ws.backend, s, msg, err);
	free(msg);
	return rc < 0 ? vx_err_wrap(err, "recording the budget applied") : 0;
}

int applying_targets(struct applying *ap, struct vx_err *err)
{
	const struct stack *st = ap->ws.st;
	char digests[16][NOTIFY_TARGET_LEN + 1];
	const char *d[16];
	size_t n = 0, off = 0;
	char list[16 * 12];
	char *msg;
	int changed = 0, rc;

	if ((rc = applying_budget(ap, err)) < 0)
		return rc;
	for (size_t i = 0; i < st->nnotify && i < 16; i++, n++) {
		if ((rc = notify_target_digest(digests[i], &st->notify[i])) < 0)
			return vx_err_set(err, rc, "out of memory");
		d[i] = digests[i];
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%snotify[%zu]", i ? ", " : "", i);
	}
	if ((rc = state_notify_targets_set(&ap->ws.state, d, n, &changed)) < 0)
		return vx_err_set(err, rc, "recording the notify targets: %s", rc == VX_ENOMEM ? "out of memory" : "bad digest");
	if (!changed)
		return 0;
	msg = n ? vx_asprintf("vx notify: targets applied: %s\n", list) : vx_strdup("vx notify: no target applied\n");
	if (!msg)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = state_write(ap->ws.backend, &ap->ws.state, msg, err);
	free(msg);
	return rc < 0 ? vx_err_wrap(err, "recording the notify targets applied") : 0;
}

int applying_notify(struct applying *ap, const struct stack *targets, struct notify_outbox *ob,
		    const struct notify_list *events, size_t max_sends, int64_t budget_ms,
		    struct notify_report *rep, struct vx_err *err)
{
	const struct stack *st = targets ? targets : ap->ws.st;
	struct recorder r = { ap, budget_ms > 0 ? vx_mono_ms(ap->ws.ctx) + budget_ms : 0, 0, events, st };
	struct notify_sink sink = { rec_delivered, rec_record, rec_getenv, rec_time_left, 0, &r, notify_host_here };
	int rc;

	memset(rep, 0, sizeof(*rep));
	if (!st || !st->nnotify || !events->n)
		return 0;
	sink.allow_loopback = ap->opts && ap->opts->notify_loopback;
	/* The lease is given back before any receiver is asked: a slow or dead one
	 * must not hold up an apply. */
	if (state_lock_held(ap->ws.backend) && (rc = state_lock_drop(ap->ws.backend, err)) < 0)
		return vx_err_wrap(err, "giving the state lease back before notifying");
	return notify_send(rep, ob, ap->ws.prov, st, events, &sink, vx_now_ms(ap->ws.ctx), max_sends, err);
}

void applying_close(struct applying *ap)
{
	if (ap->res.fenced && ap->ws.backend)
		drop_after_fence(&ap->ws);
	free(ap->refresh_summary);
	free(ap->plan_dir);
	vx_buf_release(&ap->file);
	saved_plan_release(&ap->sp);
	apply_result_release(&ap->res);
	planning_release(&ap->pl);
	workspace_close(&ap->ws);
	pthread_mutex_destroy(&ap->pause_lock);
	memset(ap, 0, sizeof(*ap));
}
