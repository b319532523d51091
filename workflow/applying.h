#ifndef VX_WORKFLOW_APPLYING_H
#define VX_WORKFLOW_APPLYING_H

/*
 * An apply, step by step, under the state lease: open the stack (or a saved
 * plan's), take the lease, load the state, check a saved plan is not stale,
 * plan, record what the refresh saw, carry the plan out with the lease's
 * heartbeat and fence, and follow the created jobs. vxapply calls the steps
 * in order and prints between them (the plan, the question, the summary);
 * a watcher calls the same steps each cycle, without the question.
 *
 *	applying_init(&ap);
 *	applying_open(&ap, ctx, dir, wev, err)            (or applying_open_saved)
 *	applying_lock(&ap, &opts, po, err)
 *	applying_plan(&ap, &opts, po, err)                ap.pl.planner.plan: render it
 *	applying_record(&ap, err)                         when the plan has no errors
 *	applying_run(&ap, &opts, err)                     when it has changes
 *	applying_wait(&ap, until_done, poll_ms, &opts, err)
 *	applying_close(&ap);                              always, whatever failed
 *
 * Every step returns 0 or a negative VX_E* with err's message complete
 * (the caller adds only "vx: "); after a failure go straight to
 * applying_close, which gives the lease back. Nothing here prints, reads the
 * terminal or exits: lines for the user go to struct applying_events. An
 * interrupt (ctx->interrupted) stops the apply from starting new actions
 * (reconcile/apply.h); what ran is recorded and the steps return normally,
 * with ap.res.interrupted set.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "reconcile/apply.h"
#include "reconcile/out/render.h"
#include "util/buf.h"
#include "util/err.h"
#include "workflow/planning.h"
#include "workflow/workspace.h"

struct ci;
struct live_job;
struct notify_list;
struct notify_outbox;
struct notify_report;
struct stack;
struct state_lock;
struct vx_ctx;

/* What an apply tells its caller, each optional; ud is passed back. */
struct applying_events {
	/* A line of progress ("+ job.a created ..."): from the applying thread. */
	void (*progress)(void *ud, const char *line);
	/* Once, when the lease is another's and lock_timeout_ms allows waiting for it. */
	void (*lock_wait)(void *ud, const struct state_lock *l, int64_t timeout_ms);
	/* -wait: a followed job's state changed (lj NULL when it was not listed). */
	void (*job_changed)(void *ud, const char *name, const struct live_job *lj, const char *state,
			    int64_t seconds);
	/* -wait: between polls, how many are pending, running and finished. */
	void (*waiting)(void *ud, size_t pending, size_t running, size_t done, int64_t seconds);
	void *ud;
};

/* How to apply; the caller's, borrowed for the steps it is given to. */
struct applying_opts {
	const struct applying_events *ev; /* may be NULL */
	const struct ci *ci;        /* who applies (workflow/ci.h); required */
	int parallelism;            /* at most this many API calls at once; 0 = 8 */
	int64_t lease_ms;           /* the state lease; 0 = the backend's default */
	int64_t lock_timeout_ms;    /* how long to wait for another's lease; 0 = fail at once */
	const char *unlock_args;    /* the stack's directory in the 'vx unlock' hint, or NULL */
	int committed_only;         /* refuse a stack with uncommitted changes (in CI) */
	int64_t inflight_ms;        /* how long a journaled create may be in flight; 0 = default */
	int keep_policy;            /* apply_options.keep_policy: vx watch without -sync */
	/* What the lease names as its holder's operation: "apply" (NULL) or "watch". */
	const char *operation;
	/* The command's environment, for the notify targets' urlEnv and secretEnv
	 * (the command reads it; library code never calls getenv). NULL: empty. */
	const char *(*getenv)(const char *name);
	int notify_loopback;        /* VX_NOTIFY_ALLOW_LOOPBACK=1: targets on this machine may be posted to */
	/* vxapply -allow-over-budget: a plan over the Stack's budget may be applied,
	 * and every state commit then records it (state_audit_over_budget). */
	int allow_over_budget;
};

struct applying {
	struct workspace ws;
	struct planning pl;
	int from_file;             /* applying a saved plan */
	int not_a_plan;            /* applying_open_saved failed reading or parsing the file */
	const char *planfile;      /* borrowed from applying_open_saved */
	struct saved_plan sp;      /* the saved plan, when from_file */
	struct vx_buf file;        /* its text (sp borrows nothing from it) */
	char *plan_dir;            /* where the saved plan's stack was found */
	int64_t pr;                /* the pull request applied: the saved plan's, else the CI's */
	const char *pr_url;
	size_t refreshed;          /* runs whose state the refresh changed (applying_record) */
	char *refresh_summary;
	/* Starts no reviewer approved that the Stack's budget held once the
	 * refresh was recorded (applying_record): the runs that ended since the
	 * last record took the spend past what covers them. */
	size_t budget_held;
	struct apply_result res;   /* what applying_run did */
	int ran;                   /* applying_run ran */
	/* The fence's test pause (util/testhook.h, "before-send"), armed when
	 * the lease is taken: checks wait on pause_lock meanwhile, so no
	 * request slips out while frozen. */
	const struct applying_opts *opts;
	int pause_armed;
	int paused;
	pthread_mutex_t pause_lock;
};

/* Zeroes ap before a cycle; applying_close ends it. */
void applying_init(struct applying *ap);

/*
 * vxapply's budget notifications (docs/budgets.md), appended to out: a
 * `budget` event for each warnAt threshold of the budget applied that the
 * period's spend reached, and one `budget-exhausted` for the first start the
 * budget held, keyed as the watcher keys them, so that each is told once
 * whichever of them sees it first. Run after applying_targets recorded the
 * budget. 0, or VX_ENOMEM.
 */
int applying_budget_events(struct applying *ap, struct notify_list *out) VX_WUR;

/* Opens the stack in dir (workspace_open; with prov, workspace_open_lent: the
 * caller's provider, borrowed, its stack kept across opens, and its flags). */
int applying_open(struct applying *ap, struct vx_ctx *ctx, const char *dir,
		  const struct workspace_events *wev, struct vx_err *err) VX_WUR;
int applying_open_lent(struct applying *ap, struct vx_ctx *ctx, const char *dir, struct provider *prov,
		       const struct workspace_source *src, struct stack **kept, unsigned flags,
		       const struct workspace_events *wev, struct vx_err *err) VX_WUR;
/*
 * Reads the plan saved in planfile (by `vxplan -out`), finds its stack (in
 * the current directory's checkout, then the plan file's, then where it was
 * planned) and opens it; po gets the plan's refresh and -target list (its
 * arrays grow; the strings stay ap's). VX_EINVAL with not_a_plan set when
 * the file is no saved plan, or when it names an invalid actor.
 */
int applying_open_saved(struct applying *ap, struct vx_ctx *ctx, const char *planfile,
			struct planning_opts *po, const struct workspace_events *wev,
			struct vx_err *err) VX_WUR;
/*
 * vx show: opens the saved plan's stack and state as applying_open_saved
 * and applying_lock do, without the lease and without the cloud, and makes
 * the checks applying_plan makes first: *stale (owned) says why `vxapply
 * planfile` would refuse it ("the state moved since the plan was made
 * (serial 3 then, 4 now); run vxplan again"), NULL when the state and the
 * declaration are still the plan's (apply still plans again and compares).
 * An error when that cannot be told (not_a_plan set when the file is none).
 */
int applying_saved_stale(struct applying *ap, struct vx_ctx *ctx, const char *planfile,
			 const struct workspace_events *wev, char **stale, struct vx_err *err) VX_WUR;
/*
 * Refuses uncommitted changes when opts->committed_only, takes the lease
 * (waiting up to opts->lock_timeout_ms; VX_ECONFLICT when it stays
 * another's), starts the lists when po->refresh, and loads the state.
 */
int applying_lock(struct applying *ap, const struct applying_opts *opts, const struct planning_opts *po,
		  struct vx_err *err) VX_WUR;
/*
 * Names who applies in every state commit, marks a dirty configuration,
 * refuses a saved plan whose state or declaration moved since (VX_ECONFLICT),
 * then plans (planning_run) and, for a saved plan, checks the plan made now
 * is the one saved. A plan with errors is no failure here.
 */
int applying_plan(struct applying *ap, const struct applying_opts *opts, const struct planning_opts *po,
		  struct vx_err *err) VX_WUR;
/*
 * Records in one state commit how the runs the refresh saw have changed,
 * and the records re-keyed with the state's salt, before anything else is
 * done; nothing when there is nothing to record.
 */
int applying_record(struct applying *ap, const struct planning_opts *po, struct vx_err *err) VX_WUR;
/*
 * Carries the plan out (reconcile/apply.h) under the lease: each step
 * persisted in the state, the lease renewed as it goes, every mutating
 * request fenced. 0 when it ran, whatever failed (ap->res says what); an
 * error when it could not go on: the state could not be written, or the
 * fence refused (ap->res.fenced; the lease is given back at close if still
 * ours).
 */
int applying_run(struct applying *ap, const struct applying_opts *opts, struct vx_err *err) VX_WUR;
/*
 * Follows the jobs applying_run created until they run (until_done: end),
 * refreshing every poll_ms, telling opts->ev. 0, 1 when one failed, or a
 * negative code when listing failed.
 */
int applying_wait(struct applying *ap, int until_done, int64_t poll_ms, const struct applying_opts *opts,
		  struct vx_err *err) VX_WUR;
/*
 * The notifications of this apply (reconcile/notify.h): what its plan shows
 * (runs that gave up, succeeded or are stuck, ended at since_ms or later)
 * and, after applying_run, the resubmissions it made. Appended to out, whose
 * strings borrow from ap. 0 or VX_ENOMEM.
 */
int applying_events(struct applying *ap, int64_t since_ms, struct notify_list *out) VX_WUR;
/*
 * Records the Stack's notify targets as applied (the state's notifyTargets,
 * reconcile/notify.h): what a watcher may send to; and its budget (the
 * state's budget): what a watcher holds the runs it starts to. Written under
 * the lease, each in its own commit when it changed; nothing when not.
 */
int applying_targets(struct applying *ap, struct vx_err *err) VX_WUR;
/*
 * Sends events to targets (NULL: the Stack's notify targets), each once, at
 * most max_sends requests in at most budget_ms (0: no limit), ob
 * remembering backoffs between calls. The lease is given back first: a
 * receiver, however slow, never holds it. Each delivery is recorded in the
 * state as soon as its receiver answered 2xx, under the lease taken for
 * that one write (a short wait; when another holds it, the delivery is
 * recorded by the next call, and ob keeps this process from sending it
 * again). *rep (release it) says what happened. 0, or an error giving the
 * lease back.
 */
int applying_notify(struct applying *ap, const struct stack *targets, struct notify_outbox *ob,
		    const struct notify_list *events, size_t max_sends, int64_t budget_ms,
		    struct notify_report *rep, struct vx_err *err) VX_WUR;

/* Gives the lease back (after a fence refused: only if still ours), closes
 * the workspace and frees everything; ap is zeroed. */
void applying_close(struct applying *ap);

#endif
