/*
 * vxplan / vx plan: what apply would do, never changing anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/ci.h"
#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/planning.h"
#include "cmd/workspace.h"
#include "reconcile/render.h"
#include "state/lock.h"
#include "util/buf.h"

static const char usage[] =
	"usage: vxplan [DIR] [options]     (also: vx plan)\n\n"
	"Compares the stack in DIR (default .) with its state and the live jobs and\n"
	"shows what vxapply would create, cancel, resubmit or change. Changes nothing.\n\n"
	"options:\n"
	"  -out FILE            save the plan; 'vxapply FILE' applies exactly it, also\n"
	"                       in another checkout of the same commit\n"
	"  -format FMT          human (default), json (docs/plan-json.md) or markdown\n"
	"  -detailed-exitcode   exit 0: no changes, 1: error, 2: changes\n"
	"  -target ADDR         plan only this address (repeatable), e.g. job.train; an\n"
	"                       address neither declared nor in the state is an error\n"
	"  -replace ADDR        start a new run of ADDR even if unchanged (repeatable)\n"
	"  -refresh=false       plan from the state alone, without reading live jobs\n"
	"  -fail-on=quota       a job that would not fit its GPU quota or reservation is\n"
	"                       a plan error (exit 1), not a warning; the Stack's\n"
	"                       failOn: [quota] does the same\n"
	"  -allow-other-lineage create jobs even where live jobs of this stack name from\n"
	"                       another state run them (by default a plan error: with\n"
	"                       no state found, that is this stack's own state lost)\n"		"  -no-color            no colour (also: NO_COLOR set, or not a terminal)\n"
	"  -debug               log every request to stderr (tokens redacted)\n";

enum {
	PLAN_OPT_OUT = 1,
	PLAN_OPT_FORMAT,
	PLAN_OPT_DETAILED_EXITCODE,
	PLAN_OPT_NO_COLOR,
};

static const struct cmd_opt plan_opts[] = {
	{ "out", CMD_ARG_REQUIRED, PLAN_OPT_OUT },
	{ "format", CMD_ARG_REQUIRED, PLAN_OPT_FORMAT },
	{ "detailed-exitcode", CMD_ARG_NONE, PLAN_OPT_DETAILED_EXITCODE },
	{ "no-color", CMD_ARG_NONE, PLAN_OPT_NO_COLOR },
	PLANNING_OPTS,
	{ NULL, CMD_ARG_NONE, 0 },
};

static int plan_exec(const struct cmd_args *args)
{
	struct planning_opts po;
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	struct planning pl;
	struct vx_buf out = VX_BUF_INIT;
	struct cmd_ci ci = { NULL, 0, NULL, NULL };
	const char *dir = ".", *outfile = NULL, *format = "human";
	int detailed = 0, no_color = 0, rc = VX_EXIT_ERROR, r;

	memset(&po, 0, sizeof(po));
	po.refresh = 1;
	memset(&ws, 0, sizeof(ws));
	memset(&pl, 0, sizeof(pl));
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case PLAN_OPT_OUT:
			outfile = v;
			break;
		case PLAN_OPT_FORMAT:
			format = v;
			break;
		case PLAN_OPT_DETAILED_EXITCODE:
			detailed = 1;
			break;
		case PLAN_OPT_NO_COLOR:
			no_color = 1;
			break;
		default:
			if (planning_opt(&po, args->opts[i].id, v, &err) && err.code) {
				cmd_report(&err, NULL);
				rc = VX_EXIT_USAGE;
				goto done;
			}
		}
	}
	for (size_t i = 0; i < args->npos; i++)
		dir = args->pos[i];
	if (!format || (strcmp(format, "human") && strcmp(format, "json") && strcmp(format, "markdown"))) {
		cmd_error("plan: -format must be human, json or markdown");
		rc = VX_EXIT_USAGE;
		goto done;
	}
	cmd_ctx_init(&ctx, args->debug);
	if ((po.refresh ? workspace_open_ahead(&ws, &ctx, dir, &err) : workspace_open(&ws, &ctx, dir, &err)) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (po.refresh)
		workspace_prefetch(&ws);
	if (workspace_load_state(&ws, &err) < 0 ||
	    planning_run(&pl, &ws, &po, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!strcmp(format, "json"))
		r = render_plan_json(&out, &pl.planner.plan, &pl.header);
	else if (!strcmp(format, "markdown"))
		r = render_plan_markdown(&out, &pl.planner.plan, &pl.header);
	else
		r = render_plan_human(&out, &pl.planner.plan, &pl.header, cmd_use_color(1, no_color));
	if (r < 0) {
		cmd_error("plan: out of memory");
		goto done;
	}
	fputs(vx_buf_str(&out), stdout);
	if (outfile) {
		struct vx_buf js = VX_BUF_INIT;
		FILE *f = NULL;

		/* A state that has not stored its salt yet would get another one when
		 * vxapply loads it: the saved plan carries the one its hashes used
		 * (only then, and never on stdout). */
		pl.header.state_salt = ws.salt_fresh ? ws.state.salt : NULL;
		/* Who planned, so the runs applied from it say so (cmd/ci.h). */
		if (cmd_ci_read(&ci) < 0)
			goto done;
		pl.header.planned_by = ci.actor;
		pl.header.pr_number = ci.pr;
		pl.header.pr_url = ci.pr_url;
		if (render_plan_json(&js, &pl.planner.plan, &pl.header) < 0 || !(f = fopen(outfile, "w")) ||
		    fputs(vx_buf_str(&js), f) < 0 || fclose(f) != 0) {
			cmd_error("plan: cannot write %s", outfile);
			vx_buf_release(&js);
			goto done;
		}
		vx_buf_release(&js);
		if (!strcmp(format, "human"))
			printf("\nSaved the plan to %s. Apply exactly it with: vxapply %s\n", outfile, outfile);
	}
	if (pl.planner.plan.errors.n) {
		rc = VX_EXIT_ERROR;
		goto done;
	}
	rc = detailed && planning_has_changes(&pl) ? VX_EXIT_CHANGES : VX_EXIT_OK;
	/* Every thread is joined (the refresh took the lists) and a plan holds no lease. */
	if (!ws.backend || !state_lock_held(ws.backend))
		cmd_done(rc);
done:
	cmd_ci_release(&ci);
	vx_buf_release(&out);
	planning_release(&pl);
	planning_opts_release(&po);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_plan_entry = {
	.name = "plan",
	.alias = "vxplan",
	.summary = "show what apply would create, cancel, resubmit or change",
	.usage = usage,
	.opts = plan_opts,
	.exec = plan_exec,
};
