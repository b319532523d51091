#include "workflow/workspace.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/provider_gcp.h"
#include "reconcile/kind.h"
#include "reconcile/planner.h"
#include "reconcile/prefetch.h"
#include "reconcile/policy_rules.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/state_file.h"
#include "state/blobstore.h"
#include "state/state_gcs.h"
#include "providers/gcp/storage.h"
#include "state/state_git.h"
#include "state/lock.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "util/banned.h"

/*
 * The stack directory relative to the root of its git work tree ("." at the
 * root), which a saved plan records so another checkout finds the stack;
 * *out = NULL when the directory is in no repository (file state). Only
 * running out of memory is an error: a plan without it still applies here.
 */
static int dir_in_repo(char **out, const char *dir)
{
	struct vx_err e = VX_ERR_INIT;
	char *root = NULL;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (state_git_workdir(&root, dir, &e) < 0) {
		rc = e.code == VX_ENOMEM ? VX_ENOMEM : 0;
		goto done;
	}
	n = strlen(root);
	if (!strcmp(dir, root))
		*out = strdup(".");
	else if (!strncmp(dir, root, n) && (dir[n] == '/' || (n == 1 && root[0] == '/')))
		*out = strdup(dir + n + (dir[n] == '/'));
	else
		goto done;
	if (!*out)
		rc = VX_ENOMEM;
done:
	free(root);
	vx_err_release(&e);
	return rc;
}

/*
 * The gcs backend, on the provider's credentials and endpoints (made here,
 * earlier than for the other backends), and on the stack's repository for
 * the config commit when the stack is in one.
 */
static int open_gcs(struct workspace *ws, struct vx_err *err)
{
	struct state_gcs_opts o;
	struct storage_client sc;
	int rc;

	/* The state's objects through the provider's storage client: the
	 * backend sees only the blob store (state/blobstore.h). */

	memset(&o, 0, sizeof(o));
	o.stack = ws->st->name;
	o.bucket = ws->st->state.bucket;
	o.path = ws->st->state.path;
	ws->state_ref = o.path ? vx_asprintf("gs://%s/%s", o.bucket, o.path)
			       : vx_asprintf("gs://%s/vx/state/%s", o.bucket, o.stack);
	if (!ws->state_ref)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((rc = workspace_provider(ws, err)) < 0 ||
	    (rc = gcp_provider_storage(ws->prov, &sc, err)) < 0 ||
	    (rc = storage_blob_store(&o.store, &sc, err)) < 0)
		return vx_err_wrap(err, "state backend gcs");
	if (ws->dir_in_repo) {
		struct state_git_opts go;

		memset(&go, 0, sizeof(go));
		go.stack = ws->st->name;
		go.stack_dir = ws->dir;
		if ((rc = state_git_open(&o.config, ws->ctx, &go, err)) < 0) {
			blob_store_free(o.store);
			return rc;
		}
	}
	return state_gcs_open(&ws->backend, ws->ctx, &o, err);
}

/* Opens the state backend ws->st names (ws->st: the stack, or the Stack read ahead). */
static int open_backend(struct workspace *ws, struct vx_err *err)
{
	int rc;

	if (ws->st->state.backend == STACK_BACKEND_FILE) {
		struct vx_buf p = VX_BUF_INIT;

		if (ws->st->state.path[0] == '/')
			rc = vx_buf_adds(&p, ws->st->state.path);
		else
			rc = vx_buf_printf(&p, "%s/%s", ws->dir, ws->st->state.path);
		if (rc < 0) {
			vx_buf_release(&p);
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		}
		ws->state_ref = vx_buf_detach(&p);
		{
			struct state_file_opts fo = { ws->st->name, ws->state_ref };

			rc = state_file_open(&ws->backend, ws->ctx, &fo, err);
			if (rc == VX_ENOTFOUND)
				vx_err_wrap(err, "state file %s", ws->st->state.path);
		}
	} else if (ws->st->state.backend == STACK_BACKEND_GIT) {
		struct state_git_opts go;

		memset(&go, 0, sizeof(go));
		go.stack = ws->st->name;
		go.stack_dir = ws->dir;
		go.branch = ws->st->state.branch;
		go.remote = ws->st->state.remote;
		ws->state_ref = vx_asprintf("refs/heads/%s", ws->st->state.branch);
		if (!ws->state_ref)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		rc = state_git_open(&ws->backend, ws->ctx, &go, err);
		if (rc == VX_ENOTFOUND)
			vx_err_wrap(err, "state backend git: %s is not inside a git repository "
				    "(run 'git init', or set state: {backend: file, path: vx-state.json})",
				    ws->st->dir);
	} else if (ws->st->state.backend == STACK_BACKEND_GCS) {
		rc = open_gcs(ws, err);
	} else {
		rc = vx_err_set(err, VX_EINVAL, "state backend %s is not supported",
				stack_backend_name(ws->st->state.backend));
	}
	return rc;
}

static int load_state_now(struct workspace *ws, struct vx_err *err);

static void *early_state_main(void *arg)
{
	struct workspace *ws = arg;

	ws->early_rc = load_state_now(ws, &ws->early_err);
	/* The gcs backend may have signed a token here (see reconcile/prefetch.c). */
	OPENSSL_thread_stop();
	return NULL;
}

/* Closes what early_start opened from the Stack document: the lists, the backend. */
static void drop_opened(struct workspace *ws)
{
	prefetch_free(ws->prefetch);
	ws->prefetch = NULL;
	free(ws->prefetch_revision);
	ws->prefetch_revision = NULL;
	state_backend_free(ws->backend);
	ws->backend = NULL;
	free(ws->state_ref);
	ws->state_ref = NULL;
}

/*
 * The other regions the stack's jobs name (stack_peek_regions: read from the
 * files' bytes, not parsed), listed now rather than once the stack is
 * loaded: over three regions, those lists waited for the whole load.
 * Hints only: a region they miss is listed with the rest of the stack.
 */
static void prefetch_hinted(struct workspace *ws)
{
	struct vx_err e = VX_ERR_INIT;
	char **regions = NULL;
	size_t n = 0;

	if (stack_peek_regions(&regions, &n, ws->dir, &e) < 0)
		vx_err_release(&e);
	for (size_t i = 0; i < n; i++) {
		if (!vx_text_same(regions[i], ws->peek->region))
			prefetch_add_jobs(ws->prefetch, ws->peek->project, regions[i], ws->peek->name);
		free(regions[i]);
	}
	free(regions);
}

/*
 * A plan reads ahead (docs/design-notes.md, "a plan's first second"): from
 * the Stack document alone (stack_peek) it opens the state backend, reads
 * the state's revision, starts listing the Stack's default region and the
 * others its jobs name and loads the state on a thread, all while the rest
 * of the stack loads. Nothing fails here: without a clean Stack, a backend
 * or a thread, the plan goes on as if it had not tried.
 */
static void early_start(struct workspace *ws)
{
	struct vx_err e = VX_ERR_INIT;
	int jobs = 0;

	if (stack_peek(&ws->peek, &jobs, ws->dir, &e) < 0)
		goto done;
	ws->st = ws->peek;
	if (open_backend(ws, &e) < 0 || state_revision(ws->backend, &ws->prefetch_revision, &e) < 0 ||
	    workspace_provider(ws, &e) < 0 ||
	    prefetch_start_jobs(&ws->prefetch, ws->prov, ws->peek->project, jobs ? ws->peek->region : NULL,
				ws->peek->name, &e) < 0 ||
	    pthread_create(&ws->early_thread, NULL, early_state_main, ws) != 0) {
		drop_opened(ws);
		goto done;
	}
	ws->early = 1;
	if (jobs)
		prefetch_hinted(ws);
done:
	ws->st = NULL;
	vx_err_release(&e);
}

/* Waits for the state read ahead, if any: its result is kept for workspace_load_state. */
static void early_join(struct workspace *ws)
{
	if (ws->early == 1) {
		pthread_join(ws->early_thread, NULL);
		ws->early = 2;
	}
}

/* Forgets everything read ahead (the whole stack says otherwise, or failed). */
static void early_abandon(struct workspace *ws)
{
	early_join(ws);
	if (!ws->early)
		return;
	ws->early = 0;
	vx_err_release(&ws->early_err);
	if (ws->state_loaded)
		state_release(&ws->state);
	ws->state_loaded = 0;
	free(ws->revision);
	ws->revision = NULL;
	drop_opened(ws);
}

/* Tells ev the violations of the policy st was loaded with, each once, sorted. */
static int tell_violations(const struct stack *st, const char *dir, const struct workspace_events *ev)
{
	struct vx_diags d = { NULL, 0, 0, 10000, 0 };
	int rc = 0;

	for (size_t i = 0; i < st->policy->nviolations && rc == 0; i++) {
		const struct policy_violation *v = &st->policy->violations[i];

		if (!v->repeat)
			rc = vx_diags_add(&d, v->file, v->line, v->col, "%s", v->msg);
	}
	if (rc == 0) {
		vx_diags_sort(&d);
		ev->violations(ev->ud, dir, &d);
	}
	vx_diags_release(&d);
	return rc;
}

/* The stack in dir (or src), loaded; its problems told to ev. */
static int load_stack(struct stack **st, const char *dir, const struct workspace_source *src, unsigned flags,
		      const struct workspace_events *ev, struct vx_err *err)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	int rc;

	if (flags & WORKSPACE_LENIENT)
		rc = stack_load_lenient(st, dir, src ? src->files : NULL, src ? src->n : 0, src ? src->policy : NULL,
					&diags, err);
	else
		rc = src ? stack_load_mem_policy(st, dir, src->files, src->n, src->policy, NULL, &diags, err)
			 : stack_load(st, dir, NULL, &diags, err);
	if (rc == VX_EINVAL) {
		if (ev && ev->diags)
			ev->diags(ev->ud, &diags);
		vx_err_set(err, VX_EINVAL, "%s: the stack has %zu error%s", dir, vx_diags_count(&diags),
			   vx_diags_count(&diags) == 1 ? "" : "s");
	}
	vx_diags_release(&diags);
	return rc;
}

static int open_ws(struct workspace *ws, struct vx_ctx *ctx, const char *dir, int ahead,
		   struct provider *lent, const struct workspace_source *src, struct stack **kept, unsigned flags,
		   const struct workspace_events *ev, struct vx_err *err)
{
	struct stack *st = kept ? *kept : NULL;
	char real[PATH_MAX];
	int rc;

	memset(ws, 0, sizeof(*ws));
	ws->ctx = ctx;
	ws->ev = ev;
	ws->prov = lent;
	ws->prov_lent = lent != NULL;
	if (!realpath(dir, real))
		return vx_err_set(err, VX_ENOTFOUND, "%s: no such directory", dir);
	ws->dir = strdup(real);
	if (!ws->dir)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((rc = dir_in_repo(&ws->dir_in_repo, ws->dir)) < 0)
		return vx_err_set(err, rc, "out of memory");
	if (ahead)
		early_start(ws);
	if (!st && (rc = load_stack(&st, dir, src, flags, ev, err)) < 0) {
		early_abandon(ws);
		return rc;
	}
	ws->st = st;
	/* The caller's to keep (and free) from now on. */
	if (kept) {
		*kept = st;
		ws->st_kept = 1;
	}
	if (st->policy && st->policy->nviolations && ev && ev->violations && (rc = tell_violations(st, dir, ev)) < 0)
		return vx_err_set(err, rc, "out of memory");
	if (ws->early && stack_same_home(ws->peek, st)) {
		struct vx_err e = VX_ERR_INIT;

		/* The declared places the default region's list did not cover. */
		if (prefetch_add(ws->prefetch, st, &e) < 0)
			vx_err_release(&e);
		early_join(ws);
	} else {
		early_abandon(ws);
		if ((rc = open_backend(ws, err)) < 0)
			return rc;
	}
	if (src) {
		/* The commit is the configuration: clean by construction. */
		ws->config_checked = 1;
		ws->config_commit = vx_strdup(src->commit);
		return ws->config_commit ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return state_config_commit(ws->backend, &ws->config_commit, err);
}

int workspace_open(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
		   const struct workspace_events *ev, struct vx_err *err)
{
	return open_ws(ws, ctx, dir, 0, NULL, NULL, NULL, 0, ev, err);
}

int workspace_open_lenient(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
			   const struct workspace_events *ev, struct vx_err *err)
{
	return open_ws(ws, ctx, dir, 0, NULL, NULL, NULL, WORKSPACE_LENIENT, ev, err);
}

int workspace_open_lent(struct workspace *ws, struct vx_ctx *ctx, const char *dir, struct provider *prov,
			const struct workspace_source *src, struct stack **kept, unsigned flags,
			const struct workspace_events *ev, struct vx_err *err)
{
	return open_ws(ws, ctx, dir, 0, prov, src, kept, flags, ev, err);
}

int workspace_open_ahead(struct workspace *ws, struct vx_ctx *ctx, const char *dir,
			 const struct workspace_events *ev, struct vx_err *err)
{
	return open_ws(ws, ctx, dir, 1, NULL, NULL, NULL, 0, ev, err);
}

int workspace_load_state(struct workspace *ws, struct vx_err *err)
{
	int rc;

	/* Loaded ahead (workspace_open_ahead): its result, once. */
	if (ws->early == 2) {
		ws->early = 3;
		rc = ws->early_rc;
		if (rc < 0)
			vx_err_set(err, rc, "%s", vx_err_msg(&ws->early_err));
		vx_err_release(&ws->early_err);
		return rc;
	}
	return load_state_now(ws, err);
}

static int load_state_now(struct workspace *ws, struct vx_err *err)
{
	int rc;

	if (ws->state_loaded) {
		state_release(&ws->state);
		ws->state_loaded = 0;
	}
	free(ws->revision);
	ws->revision = NULL;
	ws->salted = 0;
	ws->migrated = 0;
	rc = state_load(ws->backend, &ws->state, err);
	if (rc < 0)
		return rc;
	ws->state_loaded = 1;
	rc = state_revision(ws->backend, &ws->revision, err);
	if (rc < 0)
		return rc;
	/* Lists that started before this version of the state was fixed may
	 * miss jobs it records (reconcile/prefetch.h): not used. */
	if (ws->prefetch && (!ws->prefetch_revision != !ws->revision ||
			     (ws->revision && strcmp(ws->prefetch_revision, ws->revision) != 0)))
		prefetch_discard(ws->prefetch);
	/* Until the first write, nothing stored was hashed with the salt, so it may
	 * still be chosen (a git lock commit may have stored one at serial 0). A
	 * state written before salts gets one here, stored by the next write. */
	ws->salt_fresh = ws->state.serial == 0 || !ws->state.salt;
	return state_ensure_salt(&ws->state, ws->ctx, err);
}

int workspace_salt(struct workspace *ws, const char *plan_salt, struct vx_err *err)
{
	int rc;

	if (ws->salted)
		return 0;
	if (plan_salt && ws->salt_fresh && strcmp(plan_salt, ws->state.salt) != 0) {
		char *s;

		if (!state_salt_ok(plan_salt))
			return vx_err_set(err, VX_EINVAL, "the saved plan's state salt is not 64 hex digits");
		if (!(s = strdup(plan_salt)))
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		free(ws->state.salt);
		ws->state.salt = s;
	}
	rc = stack_apply_salt(ws->st, ws->state.salt, err);
	if (rc < 0)
		return rc;
	rc = planner_migrate_legacy(&ws->state, ws->st, &ws->migrated);
	if (rc < 0)
		return vx_err_set(err, rc, "out of memory");
	ws->salted = 1;
	return 0;
}

int workspace_config_status(struct workspace *ws, struct vx_err *err)
{
	int rc;

	if (ws->config_checked)
		return 0;
	rc = state_config_changes(ws->backend, ws->dir, &ws->config_changes, err);
	if (rc < 0)
		return vx_err_wrap(err, "%s", ws->dir);
	ws->config_checked = 1;
	return 0;
}

int workspace_provider(struct workspace *ws, struct vx_err *err)
{
	if (ws->prov)
		return 0;
	return gcp_provider_new(&ws->prov, ws->ctx, NULL, err);
}

/* Reads the live cloud for every kind (reconcile/kind.h): one list per place in use. */
int workspace_refresh(struct workspace *ws, struct vx_err *err)
{
	int rc = workspace_provider(ws, err);

	if (rc < 0)
		return rc;
	rc = kind_refresh_all(&ws->store, workspace_reader(ws), ws->st, ws->state_loaded ? &ws->state : NULL,
			      err);
	if (ws->prefetch)
		prefetch_refreshed(ws->prefetch);
	if (rc < 0)
		return rc;
	return 0;
}

void workspace_prefetch(struct workspace *ws)
{
	struct vx_err e = VX_ERR_INIT;

	if (ws->prefetch)
		return;
	/* The revision first: the lists must start after it (prefetch.h). */
	free(ws->prefetch_revision);
	ws->prefetch_revision = NULL;
	if (state_revision(ws->backend, &ws->prefetch_revision, &e) < 0 || workspace_provider(ws, &e) < 0 ||
	    prefetch_start(&ws->prefetch, ws->prov, ws->st, &e) < 0)
		ws->prefetch = NULL;
	vx_err_release(&e);
}

struct provider *workspace_reader(struct workspace *ws)
{
	if (ws->reader)
		return ws->reader;
	return ws->prefetch ? prefetch_reader(ws->prefetch) : ws->prov;
}

void workspace_close(struct workspace *ws)
{
	if (ws->backend && state_lock_held(ws->backend)) {
		struct vx_err e = VX_ERR_INIT;

		if (state_lock_drop(ws->backend, &e) < 0 && ws->ev && ws->ev->problem)
			ws->ev->problem(ws->ev->ud, "releasing the state lock", &e);
		vx_err_release(&e);
	}
	early_join(ws);
	vx_err_release(&ws->early_err);
	live_store_release(&ws->store);
	prefetch_free(ws->prefetch);
	free(ws->prefetch_revision);
	if (ws->prov && !ws->prov_lent)
		ws->prov->free(ws->prov);
	if (ws->state_loaded)
		state_release(&ws->state);
	state_backend_free(ws->backend);
	if (!ws->st_kept)
		stack_free(ws->st);
	stack_free(ws->peek);
	free(ws->dir);
	free(ws->dir_in_repo);
	free(ws->state_ref);
	free(ws->revision);
	free(ws->config_commit);
	free(ws->config_changes);
	memset(ws, 0, sizeof(*ws));
}
