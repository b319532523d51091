/*
 * vx state list [DIR] | vx state show ADDR [DIR]: what the state holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/workspace.h"
#include "reconcile/provider.h"
#include "state/state.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vx state list [DIR] [-debug]\n"
		"       vx state show ADDR [DIR] [-debug]\n\n"
		"list: every address in the state with its current run and last seen state.\n"
		"show: one record as stored (JSON; secrets are never stored).\n"
		"DIR is the stack directory (default .; -C DIR also works).\n");
}

int cmd_state(int argc, char **argv)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = ".", *verb = NULL, *addr = NULL, *v;
	char *json = NULL;
	int rc = VX_EXIT_ERROR, debug = 0, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (int i = 1; i < argc; i++) {
		if (cmd_flag(argv[i], "help", &v) || cmd_flag(argv[i], "h", &v)) {
			usage(stdout);
			return VX_EXIT_OK;
		} else if (workspace_dir_flag(argc, argv, &i, &v)) {
			if (cmd_dir_arg("state", &dir, &dir_given, v) < 0)
				return VX_EXIT_USAGE;
		} else if (cmd_flag(argv[i], "debug", &v)) {
			debug = 1;
		} else if (argv[i][0] == '-') {
			cmd_error("state: unknown option '%s' (see 'vx state -help')", argv[i]);
			return VX_EXIT_USAGE;
		} else if (!verb) {
			verb = argv[i];
		} else if (!addr && !strcmp(verb, "show")) {
			/* show's first argument is the address, whatever it looks like. */
			addr = argv[i];
		} else if (cmd_is_address(argv[i])) {
			usage(stderr);
			return VX_EXIT_USAGE;
		} else if (cmd_dir_arg("state", &dir, &dir_given, argv[i]) < 0) {
			return VX_EXIT_USAGE;
		}
	}
	if (!verb || (strcmp(verb, "list") && strcmp(verb, "show")) || (!strcmp(verb, "show") && !addr) ||
	    (!strcmp(verb, "list") && addr)) {
		usage(stderr);
		return VX_EXIT_USAGE;
	}
	cmd_ctx_init(&ctx, debug);
	if (workspace_open(&ws, &ctx, dir, &err) < 0 || workspace_load_state(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!strcmp(verb, "list")) {
		for (size_t i = 0; i < ws.state.nrecords; i++) {
			const struct state_record *r = &ws.state.records[i];

			printf("%-32s %s %s\n", r->address,
			       r->current && r->current->resource ? r->current->resource : "-",
			       r->current ? job_state_short(r->current->state) : "");
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
