/*
 * vx state list [DIR] | vx state show ADDR [DIR]: what the state holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/provider.h"
#include "state/state.h"
#include "workflow/workspace.h"

static const char usage[] =
	"usage: vx state list [DIR] [-debug]\n"
	"       vx state show ADDR [DIR] [-debug]\n\n"
	"list: every address in the state with its current run and last seen state.\n"
	"show: one record as stored (JSON; secrets are never stored).\n"
	"DIR is the stack directory (default .; -C DIR also works).\n";

static int state_exec(const struct cmd_args *args)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = ".", *verb = NULL, *addr = NULL;
	char *json = NULL;
	int rc = VX_EXIT_ERROR, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (size_t i = 0; i < args->nopts; i++)
		if (cmd_dir_arg("state", &dir, &dir_given, args->opts[i].value) < 0) /* -C, -chdir */
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
	if (!verb || (strcmp(verb, "list") && strcmp(verb, "show")) || (!strcmp(verb, "show") && !addr) ||
	    (!strcmp(verb, "list") && addr)) {
		fputs(usage, stderr);
		return VX_EXIT_USAGE;
	}
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0 ||
	    workspace_load_state(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!strcmp(verb, "list")) {
		for (size_t i = 0; i < ws.state.nrecords; i++) {
			const struct state_record *r = &ws.state.records[i];

			printf("%-32s %s %s\n", r->address,
			       r->current && r->current->resource ? r->current->resource : "-",
			       !r->current ? "" : r->current->has_value && r->current->state
			       ? r->current->state : job_state_short(r->current->state));
		}
		for (size_t i = 0; i < ws.state.njournal; i++)
			printf("%-32s (pending intent: %s not confirmed)\n", ws.state.journal[i].address,
			       ws.state.journal[i].op);
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
	.summary = "list or show state records (state list | state show ADDR)",
	.usage = usage,
	.opts = cmd_dir_opts,
	.exec = state_exec,
};
