/*
 * vx import ADDR RESOURCE [DIR]: adopt a resource that exists in the cloud
 * into the state under a declared address (reconcile/import.h says what is
 * checked and recorded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/ci.h"
#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/workspace.h"
#include "reconcile/import.h"
#include "reconcile/kind.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state_scan.h"
#include "providers/gcp/provider_gcp.h"
#include "providers/gcp/storage.h"
#include "util/buf.h"
#include "util/suggest.h"

static const char usage[] =
	"usage: vx import ADDR RESOURCE [DIR] [-check] [-C DIR]\n\n"
	"Adopts a resource that already exists into the state of the stack in DIR\n"
	"(default .), under the declared address ADDR, as Terraform's import does:\n"
	"  job.NAME          projects/P/locations/REGION/customJobs/ID\n"
	"  reservation.NAME  projects/P/zones/ZONE/reservations/NAME\n"
	"  quota.NAME        projects/P/locations/global/quotaPreferences/NAME\n"
	"It must be in the declared project and region or zone, carry the address's\n"
	"name (reservations, quota preferences), be tracked by no address of this\n"
	"state, by no other state beside it (the repository's vx/state/* branches,\n"
	"the bucket's other states) and by no other stack or state (vx labels, a\n"
	"reservation's description marker). A job without vx labels cannot be given\n"
	"them (a warning says so). A job is imported whatever its state; one that\n"
	"has ended is its record's last run. Once imported, vx owns it: a plan may\n"
	"cancel, replace, resize or delete it as it would one it made.\n\n"
	"What differs from the declaration does not stop the import: the resource is\n"
	"recorded as it is, the differences are listed (live -> declared), and the\n"
	"next plan shows what it will do about them. The state gets one commit.\n\n"
	"options:\n"
	"  -check    only read the resource and say what importing would find;\n"
	"            changes nothing, takes no lock\n"
	"  -C DIR    the stack directory (also -chdir=DIR)\n";

enum { IMPORT_OPT_CHECK = 2 };

static const struct cmd_opt import_opts[] = {
	{ "C", CMD_ARG_REQUIRED, CMD_OPT_DIR },
	{ "chdir", CMD_ARG_REQUIRED, CMD_OPT_DIR },
	{ "check", CMD_ARG_NONE, IMPORT_OPT_CHECK },
	{ NULL, CMD_ARG_NONE, 0 },
};

/* "not declared", with the nearest declared address of the same kind as a hint. */
static void not_declared(const struct stack *st, const char *address)
{
	size_t n = st->njobs + st->nreservations + st->nquotas, k = 0;
	const char **names = calloc(n + 1, sizeof(*names));
	const char *near;

	for (size_t i = 0; names && i < st->njobs; i++)
		names[k++] = st->jobs[i].d.address;
	for (size_t i = 0; names && i < st->nreservations; i++)
		names[k++] = st->reservations[i].d.address;
	for (size_t i = 0; names && i < st->nquotas; i++)
		names[k++] = st->quotas[i].d.address;
	near = names ? vx_suggest(address, names, k) : NULL;
	if (near)
		cmd_error("import: %s is not declared in the stack (did you mean \"%s\"?); import adopts a "
			  "resource into a declared address", address, near);
	else
		cmd_error("import: %s is not declared in the stack; import adopts a resource into a declared "
			  "address: declare it first", address);
	free(names);
}

/* The one line that says what was (or would be) imported. */
static void print_outcome(const char *address, const struct import_outcome *out, int check)
{
	if (out->differs)
		printf("%s: %s %s (%s); differs from the declaration: %s; %s\n", address,
		       check ? "would import" : "imported", out->resource, out->status, out->differs, out->next);
	else
		printf("%s: %s %s (%s); it matches the declaration\n", address, check ? "would import" : "imported",
		       out->resource, out->status);
}

/* ADDR RESOURCE [DIR] and the options; VX_EXIT_OK, or VX_EXIT_USAGE after saying why. */
static int import_args(const struct cmd_args *args, const char **address, const char **resource,
		       const char **dir, int *check)
{
	const struct kind *k;
	int dir_given = 0;

	for (size_t i = 0; i < args->nopts; i++) {
		if (args->opts[i].id == IMPORT_OPT_CHECK)
			*check = 1;
		else if (cmd_dir_arg("import", dir, &dir_given, args->opts[i].value) < 0)
			return VX_EXIT_USAGE;
	}
	for (size_t i = 0; i < args->npos; i++) {
		if (!*address)
			*address = args->pos[i];
		else if (!*resource)
			*resource = args->pos[i];
		else if (cmd_dir_arg("import", dir, &dir_given, args->pos[i]) < 0)
			return VX_EXIT_USAGE;
	}
	if (!*resource) {
		cmd_error("import: usage: vx import ADDR RESOURCE [DIR]");
		return VX_EXIT_USAGE;
	}
	k = kind_of_address(*address);
	if (!k || !strchr(*address, '.')[1]) {
		cmd_error("import: ADDR is an address such as job.NAME, reservation.NAME or quota.NAME, not '%s'",
			  *address);
		return VX_EXIT_USAGE;
	}
	return VX_EXIT_OK;
}

/*
 * Where the other states beside this one are (state/state_scan.h): the
 * repository's branches for git, the bucket for gcs (read with the
 * provider's storage client into *sc), none for a state file.
 */
static int others_of(struct state_scan_place *out, struct storage_client *sc, char **prefix,
		     struct workspace *ws, struct vx_err *err)
{
	const struct stack *st = ws->st;

	memset(out, 0, sizeof(*out));
	if (st->state.backend == STACK_BACKEND_GIT) {
		out->stack_dir = ws->dir;
		out->branch = st->state.branch;
	} else if (st->state.backend == STACK_BACKEND_GCS) {
		if (gcp_provider_storage(ws->prov, sc, err) < 0)
			return vx_err_wrap(err, "state backend gcs");
		*prefix = st->state.path ? vx_strdup(st->state.path) : vx_asprintf("vx/state/%s", st->name);
		if (!*prefix)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		out->bucket = st->state.bucket;
		out->prefix = *prefix;
		out->storage = sc;
	}
	return 0;
}

static int import_exec(const struct cmd_args *args)
{
	struct state_lock_opts lo;
	struct import_request req;
	struct import_outcome out;
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = ".", *address = NULL, *resource = NULL;
	struct state_scan_place others;
	struct storage_client sc;
	struct cmd_ci ci = { NULL, 0, NULL, NULL };
	char *message = NULL, *prefix = NULL;
	int rc, check = 0;

	memset(&ws, 0, sizeof(ws));
	memset(&out, 0, sizeof(out));
	if ((rc = import_args(args, &address, &resource, &dir, &check)) != VX_EXIT_OK)
		return rc;
	rc = VX_EXIT_ERROR;
	/* Who imports is recorded as apply records who launches: the same actor and trailers. */
	if (cmd_ci_read(&ci) < 0)
		return VX_EXIT_ERROR;
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open(&ws, &ctx, dir, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!stack_find_decl(ws.st, address)) {
		not_declared(ws.st, address);
		goto done;
	}
	/* The lease first, as apply does: what is read and checked is then what gets written. */
	memset(&lo, 0, sizeof(lo));
	lo.operation = "import";
	if (!check && state_lock_acquire(ws.backend, &lo, &err) < 0) {
		cmd_report(&err, "import");
		goto done;
	}
	if (workspace_load_state(&ws, &err) < 0 || workspace_salt(&ws, NULL, &err) < 0 ||
	    workspace_provider(&ws, &err) < 0 || others_of(&others, &sc, &prefix, &ws, &err) < 0 ||
	    state_audit(ws.backend, ci.actor, ci.pr_url, ci.run_url, &err) < 0) {
		cmd_report(&err, "import");
		goto done;
	}
	memset(&req, 0, sizeof(req));
	req.address = address;
	req.resource = resource;
	req.config_commit = ws.config_commit;
	req.launched_by = ci.actor;
	req.now_ms = vx_now_ms(&ctx);
	req.others = &others;
	if (import_resource(&out, &ws.state, ws.prov, ws.st, &req, check, &err) < 0) {
		cmd_report(&err, "import");
		goto done;
	}
	if (!check) {
		message = vx_asprintf("vx import: %s <- %s\n", address, out.resource);
		if (!message || state_write(ws.backend, &ws.state, message, &err) < 0) {
			if (!err.code)
				vx_err_set(&err, VX_ENOMEM, "out of memory");
			cmd_report(&err, "import: writing the state");
			goto done;
		}
	}
	if (out.warning)
		cmd_error("warning: %s", out.warning);
	print_outcome(address, &out, check);
	rc = VX_EXIT_OK;
done:
	free(message);
	cmd_ci_release(&ci);
	free(prefix);
	import_outcome_release(&out);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_import_entry = {
	.name = "import",
	.summary = "adopt an existing job, reservation or quota preference (import ADDR RESOURCE)",
	.usage = usage,
	.opts = import_opts,
	.exec = import_exec,
};
