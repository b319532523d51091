/* vx import's workflow: see workflow/importing.h. */
#include "workflow/importing.h"

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/provider_gcp.h"
#include "providers/gcp/storage.h"
#include "reconcile/kind.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/blobstore.h"
#include "state/lock.h"
#include "state/state_scan.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/suggest.h"
#include "workflow/ci.h"
#include "util/banned.h"

/*
 * "not declared", with the nearest declared address as a hint. The
 * addresses are offered kind by kind in the reverse of kind_table's phase
 * order (jobs first, as they have always been): on a tie the first wins.
 */
static int not_declared(const struct stack *st, const char *address, struct vx_err *err)
{
	size_t n = 0, k = 0;
	const char **names;
	const char *near;
	int rc;

	for (size_t t = 0; t < kind_count; t++)
		for (size_t i = 0; kind_decl_at(kind_table[t], st, i); i++)
			n++;
	names = calloc(n + 1, sizeof(*names));
	for (size_t t = kind_count; names && t-- > 0;)
		for (size_t i = 0; kind_decl_at(kind_table[t], st, i); i++)
			names[k++] = kind_decl_at(kind_table[t], st, i)->address;
	near = names ? vx_suggest(address, names, k) : NULL;
	if (near)
		rc = vx_err_set(err, VX_EINVAL, "import: %s is not declared in the stack (did you mean "
				"\"%s\"?); import adopts a resource into a declared address", address, near);
	else
		rc = vx_err_set(err, VX_EINVAL, "import: %s is not declared in the stack; import adopts a "
				"resource into a declared address: declare it first", address);
	free(names);
	return rc;
}

/*
 * Where the other states beside this one are (state/state_scan.h): the
 * repository's branches for git, the bucket for gcs (read through
 * im->store, on the provider's storage client), none for a state file.
 */
static int others_of(struct state_scan_place *out, struct importing *im, struct vx_err *err)
{
	struct workspace *ws = &im->ws;
	const struct stack *st = ws->st;
	struct storage_client sc;

	memset(out, 0, sizeof(*out));
	if (st->state.backend == STACK_BACKEND_GIT) {
		out->stack_dir = ws->dir;
		out->branch = st->state.branch;
	} else if (st->state.backend == STACK_BACKEND_GCS) {
		if (gcp_provider_storage(ws->prov, &sc, err) < 0 || storage_blob_store(&im->store, &sc, err) < 0)
			return vx_err_wrap(err, "state backend gcs");
		im->prefix = st->state.path ? vx_strdup(st->state.path) : vx_asprintf("vx/state/%s", st->name);
		if (!im->prefix)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		out->bucket = st->state.bucket;
		out->prefix = im->prefix;
		out->store = im->store;
	}
	return 0;
}

int importing_run(struct importing *im, struct vx_ctx *ctx, const char *dir, const char *address,
		  const char *resource, int check, const struct ci *ci, const struct workspace_events *ev,
		  struct vx_err *err)
{
	struct workspace *ws = &im->ws;
	struct state_lock_opts lo;
	struct import_request req;
	struct state_scan_place others;
	int rc;

	memset(im, 0, sizeof(*im));
	if ((rc = workspace_open(ws, ctx, dir, ev, err)) < 0)
		return rc;
	if (!stack_find_decl(ws->st, address))
		return not_declared(ws->st, address, err);
	/* The lease first, as apply does: what is read and checked is then what gets written. */
	memset(&lo, 0, sizeof(lo));
	lo.operation = "import";
	if (!check && (rc = state_lock_acquire(ws->backend, &lo, err)) < 0)
		return vx_err_wrap(err, "import");
	if ((rc = workspace_load_state(ws, err)) < 0 || (rc = workspace_salt(ws, NULL, err)) < 0 ||
	    (rc = workspace_provider(ws, err)) < 0 || (rc = others_of(&others, im, err)) < 0 ||
	    (rc = state_audit(ws->backend, ci->actor, ci->pr_url, ci->run_url, err)) < 0)
		return vx_err_wrap(err, "import");
	/* Who imports is recorded as apply records who launches. */
	memset(&req, 0, sizeof(req));
	req.address = address;
	req.resource = resource;
	req.config_commit = ws->config_commit;
	req.launched_by = ci->actor;
	req.now_ms = vx_now_ms(ctx);
	req.others = &others;
	if ((rc = import_resource(&im->out, &ws->state, ws->prov, ws->st, &req, check, err)) < 0)
		return vx_err_wrap(err, "import");
	if (check)
		return 0;
	im->message = vx_asprintf("vx import: %s <- %s\n", address, im->out.resource);
	if (!im->message || (rc = state_write(ws->backend, &ws->state, im->message, err)) < 0) {
		if (!err->code)
			vx_err_set(err, VX_ENOMEM, "out of memory");
		return vx_err_wrap(err, "import: writing the state");
	}
	return 0;
}

void importing_close(struct importing *im)
{
	free(im->message);
	free(im->prefix);
	blob_store_free(im->store);
	import_outcome_release(&im->out);
	workspace_close(&im->ws);
	memset(im, 0, sizeof(*im));
}
