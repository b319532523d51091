/*
 * vx logs ADDR [DIR] [-f]: a job's log lines from Cloud Logging, so the
 * reason a job failed is one command away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/kind_job.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "workflow/logs.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx logs ADDR [DIR] [-f] [-debug]\n\n"
	"Prints the log lines of ADDR's current run (job.NAME, or a sweep's run\n"
	"job.NAME[k=v]) from Cloud Logging, oldest first, as 'gcloud ai custom-jobs\n"
	"stream-logs' reads them: TIME  SEVERITY  TEXT, times in UTC. Terminal escape\n"
	"sequences and control characters in the lines are removed.\n\n"
	"options:\n"
	"  -f, -follow   keep reading new lines until the job ends (then print the rest\n"
	"                and exit 0) or an interrupt\n\n"
	"Needs logging.logEntries.list on the project (roles/logging.viewer).\n"
	"DIR is the stack directory (default .; -C DIR and -chdir=DIR also work).\n"
	"-debug logs every request to stderr (tokens redacted).\n";

enum { LOGS_OPT_FOLLOW = 2 };

static const struct cmd_opt logs_opts[] = {
	{ .name = "f", .arg = CMD_ARG_NONE, .id = LOGS_OPT_FOLLOW },
	{ .name = "follow", .arg = CMD_ARG_NONE, .id = LOGS_OPT_FOLLOW },
	{ .name = NULL },
};

/* One entry, a row per line of its text, each made safe for a terminal. */
static void print_line(void *ud, const struct live_log_entry *e)
{
	struct vx_buf sev = VX_BUF_INIT, line = VX_BUF_INIT;
	char when[STATE_TIME_MAX];
	const char *t = e->text ? e->text : "";

	(void)ud;
	state_time_format(e->time_ms, when);
	if (vx_text_add_terminal_safe(&sev, e->severity ? e->severity : "DEFAULT",
				      strlen(e->severity ? e->severity : "DEFAULT")) < 0)
		vx_buf_reset(&sev);
	do {
		size_t n = strcspn(t, "\n");

		vx_buf_reset(&line);
		if (vx_text_add_terminal_safe(&line, t, n > 0 && t[n - 1] == '\r' ? n - 1 : n) < 0)
			vx_buf_reset(&line);
		printf("%s  %-8.16s  %s\n", when, vx_buf_str(&sev), vx_buf_str(&line));
		t += n + (t[n] != 0);
	} while (*t);
	fflush(stdout);
	vx_buf_release(&sev);
	vx_buf_release(&line);
}

static void print_ended(void *ud, const char *resource, const char *state)
{
	(void)ud;
	fprintf(stderr, "vx: logs: %s %s\n", resource, job_state_short(state));
}

/* The most job addresses the message for a missing address lists. */
#define LOGS_LIST_MAX 12

/* vx logs without an address: says so, naming the stack's jobs when it loads. */
static int no_address(const char *dir)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf list = VX_BUF_INIT;
	struct stack *st = NULL;
	int rc = 0;

	if (stack_load_lenient(&st, dir, NULL, 0, NULL, &diags, &err) == 0) {
		size_t njobs;
		const struct stack_job *jobs = stack_jobs(st, &njobs);

		for (size_t i = 0; i < njobs && i < LOGS_LIST_MAX && rc == 0; i++)
			rc = vx_buf_printf(&list, "%s%s", i ? ", " : "", jobs[i].d.address);
		if (rc == 0 && njobs > LOGS_LIST_MAX)
			rc = vx_buf_printf(&list, ", ... (%zu in all)", njobs);
	}
	if (rc == 0 && list.len)
		cmd_error("logs: which job? An address is required: vx logs ADDR [DIR]; the jobs of %s: %s",
			  dir, vx_buf_str(&list));
	else
		cmd_error("logs: which job? An address is required: vx logs ADDR [DIR], ADDR a job.NAME or "
			  "a sweep's run job.NAME[k=v] ('vx logs -help' says more)");
	stack_free(st);
	vx_diags_release(&diags);
	vx_err_release(&err);
	vx_buf_release(&list);
	return VX_EXIT_USAGE;
}

static int logs_exec(const struct cmd_args *args)
{
	struct logs_events ev = { print_line, print_ended, NULL };
	struct logs_opts o = { 0, 0 };
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = NULL, *addr = NULL, *poll = getenv("VX_WAIT_POLL_MS");
	int rc = VX_EXIT_ERROR, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (size_t i = 0; i < args->nopts; i++)
		if (args->opts[i].id == LOGS_OPT_FOLLOW)
			o.follow = 1;
	for (size_t i = 0; i < args->npos; i++) {
		if (cmd_is_address(args->pos[i]) && !addr)
			addr = args->pos[i];
		else if (cmd_is_address(args->pos[i]) || cmd_dir_arg("logs", &dir, &dir_given, args->pos[i]) < 0) {
			fputs(usage, stderr);
			return VX_EXIT_USAGE;
		}
	}
	if (cmd_stack_dir(args, dir, &dir) < 0)
		return VX_EXIT_USAGE;
	if (!addr)
		return no_address(dir);
	o.poll_ms = poll ? strtol(poll, NULL, 10) : 0;
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open_lenient(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0 ||
	    logs_read(&ws, addr, &o, &ev, &err) < 0)
		cmd_report(&err, "logs");
	else
		rc = VX_EXIT_OK;
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.summary = "a job's log lines from Cloud Logging (logs ADDR [-f])",
	.usage = usage,
	.opts = logs_opts,
	.exec = logs_exec,
	.stack_dir = 1,
};
