#ifndef VX_CMD_WORKSPACE_H
#define VX_CMD_WORKSPACE_H

/*
 * What plan, apply, log, state and unlock share: the loaded stack, its
 * state backend and state, the cloud provider and the live jobs. cmd/ code:
 * it prints the stack's diagnostics itself.
 */

#include <pthread.h>
#include <stddef.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "state/state.h"
#include "util/ctx.h"
#include "util/err.h"

struct stack;
struct state_backend;
struct planner_place;
struct prefetch;

struct workspace {
	struct vx_ctx *ctx;
	char *dir;                  /* absolute stack directory */
	char *dir_in_repo;          /* dir relative to its git work tree's root, or NULL */
	struct stack *st;
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
	struct prefetch *prefetch;  /* the declared places' lists, read while the state loads */
	char *prefetch_revision;    /* the state's revision when they started, or NULL */
	struct live_store store;    /* what the refresh read (reconcile/kind.h), every kind */
	/* Read ahead (workspace_open_ahead): the Stack document alone, and the
	 * state loaded on early_thread while the rest of the stack loaded. */
	struct stack *peek;
	int early;                  /* 0 none, 1 running, 2 joined (result kept), 3 result taken */
	pthread_t early_thread;
	int early_rc;
	struct vx_err early_err;
};

/* Loads the stack in dir (printing its diagnostics on stderr) and opens its
 * state backend. VX_EINVAL after printing when the stack is invalid. */
int workspace_open(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
		   struct vx_err *err) VX_WUR;
/*
 * The same, for a plan that will refresh: the state backend, the state and
 * the Stack's default region's jobs are read while the stack loads, from
 * its Stack document alone, and used only when the whole stack names the
 * same stack, project, region and state (else read again as usual).
 */
int workspace_open_ahead(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
			 struct vx_err *err) VX_WUR;
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
void workspace_close(struct workspace *ws);


#endif
