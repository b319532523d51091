/*
 * vx log [ADDR] [DIR]: every run of a job, from the state branch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/workspace.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/state.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vx log [ADDR] [DIR] [-debug]\n\n"
		"Prints every run vx launched for ADDR (e.g. job.train), or for every job in the\n"
		"state: when, what started it, the Vertex resource, attempt, who launched it\n"
		"(user@host of the apply), config commit, final\n"
		"state and failure class. Read from the state (the git branch vx/state/<stack>);\n"
		"jobs forgotten since are found in its history.\n\n"
		"DIR is the stack directory (default .; -C DIR also works). An argument of the\n"
		"form job.NAME, reservation.NAME or quota.NAME is the address, any other DIR.\n");
}

static void print_run(const struct state_run *r)
{
	char when[STATE_TIME_MAX];
	char cfg[13];

	state_time_format(r->created_ms, when);
	snprintf(cfg, sizeof(cfg), "%.12s", r->config_commit ? r->config_commit : "-");
	printf("  %-20s  %-8s  %s  attempt %" PRId64 "  run %" PRId64 "  by %s  config %s  %s",
	       r->created_ms ? when : "-", r->action ? r->action : "-",
	       r->resource ? r->resource : "(create never answered)", r->attempt, r->run,
	       r->launched_by ? r->launched_by : "-", cfg, job_state_short(r->state));
	if (r->failure)
		printf(" (%s)", r->failure);
	if (r->cancelled_by_vx)
		printf(" (cancelled by vx)");
	printf("\n");
}

static void print_record(const struct state_record *r, const char *note)
{
	printf("%s%s\n", r->address, note ? note : "");
	for (size_t i = 0; i < r->nhistory; i++)
		print_run(&r->history[i]);
	if (r->current)
		print_run(r->current);
	if (!r->current && !r->nhistory)
		printf("  (no runs)\n");
}

/* A record that is no longer in the state: its last version in the history. */
static int print_forgotten(struct workspace *ws, const char *addr, struct vx_err *err)
{
	struct state_history_entry *h = NULL;
	size_t n = 0;
	int rc = state_history(ws->backend, addr, 0, &h, &n, err);

	if (rc < 0)
		return rc;
	rc = VX_ENOTFOUND;
	for (size_t i = 0; i < n; i++) {
		if (h[i].record) {
			print_record(h[i].record, "  (forgotten: no longer declared)");
			rc = 0;
			break;
		}
	}
	state_history_free(h, n);
	if (rc == VX_ENOTFOUND)
		vx_err_set(err, VX_ENOTFOUND, "%s: no such address in the state or its history", addr);
	return rc;
}

int cmd_log(int argc, char **argv)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = ".", *addr = NULL, *v;
	int rc = VX_EXIT_ERROR, debug = 0, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (int i = 1; i < argc; i++) {
		if (cmd_flag(argv[i], "help", &v) || cmd_flag(argv[i], "h", &v)) {
			usage(stdout);
			return VX_EXIT_OK;
		} else if (workspace_dir_flag(argc, argv, &i, &v)) {
			if (cmd_dir_arg("log", &dir, &dir_given, v) < 0)
				return VX_EXIT_USAGE;
		} else if (cmd_flag(argv[i], "debug", &v)) {
			debug = 1;
		} else if (argv[i][0] == '-') {
			cmd_error("log: unknown option '%s' (see 'vx log -help')", argv[i]);
			return VX_EXIT_USAGE;
		} else if (cmd_is_address(argv[i])) {
			if (addr) {
				cmd_error("log: one address at most");
				return VX_EXIT_USAGE;
			}
			addr = argv[i];
		} else if (!cmd_is_dir(argv[i])) {
			cmd_error("log: '%s' is neither an address (such as job.NAME) nor a directory",
				  argv[i]);
			return VX_EXIT_USAGE;
		} else if (cmd_dir_arg("log", &dir, &dir_given, argv[i]) < 0) {
			return VX_EXIT_USAGE;
		}
	}
	cmd_ctx_init(&ctx, debug);
	if (workspace_open(&ws, &ctx, dir, &err) < 0 || workspace_load_state(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (addr) {
		const struct state_record *r = state_find(&ws.state, addr);

		if (r)
			print_record(r, NULL);
		else if (print_forgotten(&ws, addr, &err) < 0) {
			cmd_report(&err, NULL);
			goto done;
		}
	} else {
		if (!ws.state.nrecords)
			printf("No runs recorded yet for stack %s.\n", ws.st->name);
		for (size_t i = 0; i < ws.state.nrecords; i++)
			print_record(&ws.state.records[i], NULL);
	}
	rc = VX_EXIT_OK;
done:
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}
