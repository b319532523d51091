#ifndef VX_WORKFLOW_WORKSPACE_H
#define VX_WORKFLOW_WORKSPACE_H

/*
 * What plan, apply, import, log, state and unlock share, and the first
 * steps of every reconcile cycle: the loaded stack, its state backend and
 * state, the cloud provider and what the refresh read of the live cloud.
 *
 * One cycle: workspace_open (or _open_ahead), workspace_load_state,
 * workspace_salt, workspace_refresh, ..., workspace_close. close releases
 * everything open ever took, whatever step failed, and leaves the struct
 * zeroed, ready for the next open: a process may run cycles for as long as
 * it likes. Nothing here prints or exits: what the user should see goes to
 * the caller's struct workspace_events, errors to struct vx_err.
 */

#include <pthread.h>
#include <stddef.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "state/state.h"
#include "util/ctx.h"
#include "util/err.h"

struct stack;
struct stack_source;
struct state_backend;
struct vx_diags;
struct planner_place;
struct prefetch;

/*
 * What a workspace tells its caller, each optional (NULL: not told); ud is
 * passed back. Called on the thread that called the workspace function.
 */
struct workspace_events {
	/* The stack did not load (VX_EINVAL): its diagnostics, sorted, before
	 * the error "DIR: the stack has N errors" is returned. */
	void (*diags)(void *ud, const struct vx_diags *d);
	/* Something that failed without failing the call (releasing the state
	 * lock at close): what was being done, and why it failed. */
	void (*problem)(void *ud, const char *doing, const struct vx_err *e);
	/* A lenient open (workspace_open_lenient) loaded a stack that breaks
	 * its policy: each violation once, sorted, and the directory as given. */
	void (*violations)(void *ud, const char *dir, const struct vx_diags *d);
	void *ud;
};

struct workspace {
	struct vx_ctx *ctx;
	const struct workspace_events *ev; /* borrowed from the opener; may be NULL */
	char *dir;                  /* absolute stack directory */
	char *dir_in_repo;          /* dir relative to its git work tree's root, or NULL */
	struct stack *st;
	int st_kept; /* st is the caller's (workspace_open_lent's kept): not freed here */
	struct state_backend *backend;
	struct state state;
	int state_loaded;
	int salt_fresh;             /* the state's salt is not committed yet: never written
				     * (serial 0), or written before salts (see workspace_salt) */
	int salted;                 /* workspace_salt ran for this loaded state */
	size_t migrated;            /* records brought to salted hashes in memory, to be written */
	char *state_ref;            /* "refs/heads/vx/state/NAME" or the state file */
	char *revision;             /* state tip (git commit) when loaded, or NULL */
	char *config_commit;        /* HEAD of the stack's repository, or NULL */
	int config_checked;         /* workspace_config_status ran */
	char *config_changes;       /* the stack's files changed since config_commit, or NULL (clean) */
	struct provider *prov;
	int prov_lent;              /* prov is the caller's (workspace_open_lent): not freed here */
	struct prefetch *prefetch;  /* the declared places' lists, read while the state loads */
	char *prefetch_revision;    /* the state's revision when they started, or NULL */
	struct live_store store;    /* what the refresh read (reconcile/kind.h), every kind */
	/* The caller's reader to refresh through instead (vx watch's, over ws->prov):
	 * borrowed, never freed here; NULL: the prefetch's or ws->prov. */
	struct provider *reader;
	/* Read ahead (workspace_open_ahead): the Stack document alone, and the
	 * state loaded on early_thread while the rest of the stack loaded. */
	struct stack *peek;
	int early;                  /* 0 none, 1 running, 2 joined (result kept), 3 result taken */
	pthread_t early_thread;
	int early_rc;
	struct vx_err early_err;
};

/*
 * Loads the stack in dir and opens its state backend. ws is overwritten
 * (zeroed first); ctx and ev (NULL for no events) must outlive it.
 * VX_EINVAL when the stack is invalid, after its diagnostics went to
 * ev->diags; VX_ENOTFOUND for no such directory or state; any other error
 * of the backend. On failure too, workspace_close(ws) releases what was
 * opened.
 */
int workspace_open(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
		   const struct workspace_events *ev, struct vx_err *err) VX_WUR;
/*
 * A stack that breaks its policy (reconcile/policy_rules.h) opens only this
 * way: with its violations in ws->st->policy->violations, for a command that
 * only reads it (status, log, report, state, unlock ...) and for the watcher,
 * which holds what they forbid. Every other open is strict, so validate,
 * plan, apply and import refuse it as an invalid stack (VX_EINVAL).
 */
int workspace_open_lenient(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
			   const struct workspace_events *ev, struct vx_err *err) VX_WUR;
/* workspace_open_lent's flags: lenient about the policy, as workspace_open_lenient. */
#define WORKSPACE_LENIENT 1u

/*
 * The stack as a commit holds it (vx watch -follow): its files, read from
 * that commit, and the commit, which the runs then name as their config
 * commit (a commit holds no uncommitted changes).
 */
struct workspace_source {
	const struct stack_source *files;
	size_t n;
	const char *commit;         /* 40 hex */
	/* the commit's .vx/policy.yaml, binding the stack (reconcile/policy_rules.h), or NULL */
	const struct stack_source *policy;
};

/*
 * workspace_open with the caller's provider, kept across many workspaces
 * (vx watch's cycles: one set of credentials and connections, a token
 * fetched once an hour rather than once a cycle), borrowed and never freed
 * here; and, when src is not NULL, the stack read from src rather than dir's
 * files (dir still names where it lives: its repository and state). flags:
 * 0 (strict) or WORKSPACE_LENIENT.
 *
 * kept (may be NULL): the caller's stack, kept across workspaces. When
 * *kept is not NULL it is the stack these files load to, loaded before with
 * the same src and flags: it is used as it is, not loaded again (vx watch,
 * whose files did not change since). When *kept is NULL, the stack loaded
 * is handed to the caller there. Either way the workspace borrows it and
 * workspace_close leaves it; the caller frees it (stack_free) after the
 * last workspace that uses it is closed.
 */
int workspace_open_lent(struct workspace *ws, struct vx_ctx *ctx, const char *dir, struct provider *prov,
			const struct workspace_source *src, struct stack **kept, unsigned flags,
			const struct workspace_events *ev, struct vx_err *err) VX_WUR;

/*
 * The same, for a plan that will refresh: the state backend, the state and
 * the Stack's default region's jobs are read while the stack loads, from
 * its Stack document alone, and used only when the whole stack names the
 * same stack, project, region and state (else read again as usual).
 */
int workspace_open_ahead(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
			 const struct workspace_events *ev, struct vx_err *err) VX_WUR;
/* (Re)loads the state (the first time after workspace_open_ahead: what was read ahead). */
int workspace_load_state(struct workspace *ws, struct vx_err *err) VX_WUR;
/*
 * Keys the stack's sensitive values with the loaded state's salt
 * (stack_apply_salt) and migrates records written before salts in memory
 * (planner_migrate_legacy, counted in ws->migrated); once per load, before
 * anything compares hashes. plan_salt: the salt a saved plan was made with,
 * used instead of the state's while that one is not committed (salt_fresh),
 * so that `vxapply PLAN` hashes as `vxplan -out PLAN` did; NULL otherwise.
 */
int workspace_salt(struct workspace *ws, const char *plan_salt, struct vx_err *err) VX_WUR;

/* Fills config_changes (once): the stack's files that differ from the config commit. */
int workspace_config_status(struct workspace *ws, struct vx_err *err) VX_WUR;
/* Creates the provider (credentials, endpoints) if not yet done. */
int workspace_provider(struct workspace *ws, struct vx_err *err) VX_WUR;
/* Reads the live cloud for every kind: one list call per region, zone or project in use. */
int workspace_refresh(struct workspace *ws, struct vx_err *err) VX_WUR;

/*
 * Starts listing the declared places (reconcile/prefetch.h) so the next
 * workspace_load_state() and the lists overlap; call it right before that
 * load, when a refresh will follow (an apply: once it holds the lease). It
 * never fails: without a provider or a thread the refresh lists as usual,
 * and reports any error then.
 */
void workspace_prefetch(struct workspace *ws);

/* The provider list calls go to: the prefetch's reader while one is held,
 * else ws->prov. */
struct provider *workspace_reader(struct workspace *ws);
/*
 * Gives the state lock back if still held (a failure goes to ev->problem),
 * joins the read-ahead thread, frees everything and zeroes ws. Safe on a
 * zeroed ws and after any failed step.
 */
void workspace_close(struct workspace *ws);


#endif
