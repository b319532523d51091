/*
 * vx state list [DIR] | vx state show ADDR [DIR]: what the state holds.
 * vx state restore [-serial N] [DIR]: put a deleted state back from its history.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/provider.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "workflow/workspace.h"

static const char usage[] =
	"usage: vx state list [DIR] [-debug]\n"
	"       vx state show ADDR [DIR] [-debug]\n"
	"       vx state restore [-serial N] [DIR] [-debug]\n\n"
	"list: every address in the state with its current run and last seen state.\n"
	"show: one record as stored (JSON; secrets are never stored).\n"
	"restore: when the state was deleted (gcs: state.json is gone; git: the state\n"
	"  branch is gone) but its history is still there, plan and apply refuse to\n"
	"  start a new state (that would create every job again) and name the newest\n"
	"  version. restore puts that version (or serial N's) back as it was: same\n"
	"  lineage, serial and records, under the state lease. gcs: state.json from\n"
	"  history/N.json; git: the branch at the commit its remote-tracking ref or\n"
	"  its reflog names. It refuses when a state exists.\n"
	"DIR is the stack directory (default .; -C DIR and -chdir=DIR also work).\n"
	"-debug logs every request to stderr (tokens redacted).\n";

enum { STATE_OPT_SERIAL = 2 };

static const struct cmd_opt state_opts[] = {
	{ .name = "serial", .arg = CMD_ARG_REQUIRED, .id = STATE_OPT_SERIAL },
	{ .name = NULL },
};

/* vx state restore: the lease, the backend's restore, what it did. */
static int state_restore_exec(struct workspace *ws, uint64_t serial)
{
	struct state_lock_opts lo;
	struct vx_err err = VX_ERR_INIT;
	char *what = NULL;
	int rc = VX_EXIT_ERROR;

	memset(&lo, 0, sizeof(lo));
	lo.operation = "restore";
	if (state_lock_acquire(ws->backend, &lo, &err) < 0) {
		cmd_report(&err, "state restore");
		return rc;
	}
	if (state_restore(ws->backend, serial, &what, &err) < 0)
		cmd_report(&err, NULL);
	else
		rc = VX_EXIT_OK;
	if (state_lock_drop(ws->backend, &err) < 0) {
		cmd_report(&err, "state restore: releasing the lease");
		rc = VX_EXIT_ERROR;
	}
	if (what)
		printf("%s\n", what);
	free(what);
	return rc;
}

/* -serial N: a positive decimal number. */
static int parse_serial(const char *v, uint64_t *out)
{
	char *end = NULL;
	unsigned long long n;

	errno = 0;
	n = v && *v >= '1' && *v <= '9' ? strtoull(v, &end, 10) : 0;
	if (!n || errno || *end) {
		cmd_error("state restore: -serial wants a serial number (1 or more), not '%s'",
			  v ? v : "");
		return -1;
	}
	*out = n;
	return 0;
}

/* vx state list: one line per record, then the pending intents. */
static void print_list(const struct state *st)
{
	for (size_t i = 0; i < st->nrecords; i++) {
		const struct state_record *r = &st->records[i];

		printf("%-32s %s %s\n", r->address,
		       r->current && r->current->resource ? r->current->resource : "-",
		       !r->current ? "" : r->current->has_value && r->current->state
		       ? r->current->state : job_state_short(r->current->state));
	}
	for (size_t i = 0; i < st->njournal; i++)
		printf("%-32s (pending intent: %s not confirmed)\n", st->journal[i].address,
		       st->journal[i].op);
}

static int state_exec(const struct cmd_args *args)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = NULL, *verb = NULL, *addr = NULL;
	char *json = NULL;
	int rc = VX_EXIT_ERROR, dir_given = 0;
	uint64_t serial = 0;

	memset(&ws, 0, sizeof(ws));
	for (size_t i = 0; i < args->nopts; i++)
		if (args->opts[i].id == STATE_OPT_SERIAL && parse_serial(args->opts[i].value, &serial) < 0)
			return VX_EXIT_USAGE;
	for (size_t i = 0; i < args->npos; i++) {
		const char *a = args->pos[i];

		if (!verb) {
			verb = a;
		} else if (!addr && !strcmp(verb, "show")) {
			/* show's first argument is the address, whatever it looks like. */
			addr = a;
		} else if (cmd_is_address(a)) {
			fputs(usage, stderr);
			return VX_EXIT_USAGE;
		} else if (cmd_dir_arg("state", &dir, &dir_given, a) < 0) {
			return VX_EXIT_USAGE;
		}
	}
	if (!verb || (strcmp(verb, "list") && strcmp(verb, "show") && strcmp(verb, "restore")) ||
	    (!strcmp(verb, "show") && !addr) || (strcmp(verb, "show") && addr) ||
	    (serial && strcmp(verb, "restore"))) {
		fputs(usage, stderr);
		return VX_EXIT_USAGE;
	}
	if (cmd_stack_dir(args, dir, &dir) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	if (!strcmp(verb, "restore")) {
		if (workspace_open(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0)
			cmd_report(&err, NULL);
		else
			rc = state_restore_exec(&ws, serial);
		workspace_close(&ws);
		return rc;
	}
	if (workspace_open(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0 ||
	    workspace_load_state(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!strcmp(verb, "list")) {
		print_list(&ws.state);
	} else {
		const struct state_record *r = state_find(&ws.state, addr);

		if (!r) {
			cmd_error("state show: %s is not in the state", addr);
			goto done;
		}
		if (state_record_to_json(r, &json, &err) < 0) {
			cmd_report(&err, NULL);
			goto done;
		}
		fputs(json, stdout);
	}
	rc = VX_EXIT_OK;
done:
	free(json);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_state_entry = {
	.name = "state",
	.summary = "list or show state records, or restore a deleted state "
		   "(state list | state show ADDR | state restore)",
	.usage = usage,
	.opts = state_opts,
	.exec = state_exec,
	.stack_dir = 1,
	.subcommands = (const char *const[]){ "list", "show", "restore", NULL },
};
