/* vx import's workflow: see workflow/importing.h. */
#include "workflow/importing.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/lock.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/suggest.h"

/* "not declared", with the nearest declared address of the same kind as a hint. */
static int not_declared(const struct stack *st, const char *address, struct vx_err *err)
{
	size_t n = st->njobs + st->nreservations + st->nquotas, k = 0;
	const char **names = calloc(n + 1, sizeof(*names));
	const char *near;
	int rc;

	for (size_t i = 0; names && i < st->njobs; i++)
		names[k++] = st->jobs[i].d.address;
	for (size_t i = 0; names && i < st->nreservations; i++)
		names[k++] = st->reservations[i].d.address;
	for (size_t i = 0; names && i < st->nquotas; i++)
		names[k++] = st->quotas[i].d.address;
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

int importing_run(struct importing *im, struct vx_ctx *ctx, const char *dir, const char *address,
		  const char *resource, int check, const struct workspace_events *ev, struct vx_err *err)
{
	struct workspace *ws = &im->ws;
	struct state_lock_opts lo;
	struct import_request req;
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
	    (rc = workspace_provider(ws, err)) < 0)
		return vx_err_wrap(err, "import");
	if (state_lock_held(ws->backend)) {
		const struct state_lock *l = state_lock_held(ws->backend);

		im->launched_by = vx_asprintf("%s@%s", l->user, l->host);
	}
	memset(&req, 0, sizeof(req));
	req.address = address;
	req.resource = resource;
	req.config_commit = ws->config_commit;
	req.launched_by = im->launched_by;
	req.now_ms = vx_now_ms(ctx);
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
	free(im->launched_by);
	import_outcome_release(&im->out);
	workspace_close(&im->ws);
	memset(im, 0, sizeof(*im));
}
