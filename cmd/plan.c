/*
 * vxplan / vx plan: what apply would do, never changing anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/out/render.h"
#include "state/lock.h"
#include "util/buf.h"
#include "workflow/ci.h"
#include "workflow/ghactions.h"
#include "workflow/planning.h"
#include "workflow/report.h"
#include "workflow/workspace.h"
#include "util/banned.h"

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
	"  -replace ADDR        start a new run of ADDR even if unchanged (repeatable); a\n"
	"                       sweep's address or a slice (job.S[seed=2]) names its runs\n"
	"  -refresh=false       plan from the state alone, without reading live jobs\n"
	"  -fail-on=quota       a job that would not fit its GPU quota or reservation is\n"
	"                       a plan error (exit 1), not a warning; the Stack's\n"
	"                       failOn: [quota] does the same\n"
	"  -fail-on=budget      a plan that would take the spend over the Stack's budget\n"
	"                       is a plan error (exit 1); failOn: [budget] does the same\n"
	"  -allow-other-lineage create jobs even where live jobs of this stack name from\n"
	"                       another state run them (by default a plan error: with\n"
	"                       no state found, that is this stack's own state lost)\n"
	"  -allow-released      create a job even beside an active job of the same\n"
	"                       address that vx state rm released (by default a plan error)\n"
	"  -verbose             list every run of a sweep, and the cost line of every run\n"
	"                       that stays, not one block per sweep and one line for many\n"
	"  -no-color            no colour (also: NO_COLOR set, or not a terminal)\n"
	"  -annotations=false   in GitHub Actions, do not also print the stack's problems\n"
	"                       as ::error annotations (the step summary and outputs stay;\n"
	"                       docs/ci.md)\n"
	"  -C DIR               the stack directory, as DIR (also -chdir=DIR)\n"
	"  -debug               log every request to stderr (tokens redacted)\n";

enum {
	PLAN_OPT_OUT = 1,
	PLAN_OPT_FORMAT,
	PLAN_OPT_DETAILED_EXITCODE,
	PLAN_OPT_NO_COLOR,
	PLAN_OPT_ANNOTATIONS,
};

static const struct cmd_opt plan_opts[] = {
	{ .name = "out", .arg = CMD_ARG_REQUIRED, .id = PLAN_OPT_OUT, .value = CMD_VALUE_FILE },
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = PLAN_OPT_FORMAT, .values = cmd_formats_plan },
	{ .name = "detailed-exitcode", .arg = CMD_ARG_NONE, .id = PLAN_OPT_DETAILED_EXITCODE },
	{ .name = "no-color", .arg = CMD_ARG_NONE, .id = PLAN_OPT_NO_COLOR },
	{ .name = "annotations", .arg = CMD_ARG_OPTIONAL, .id = PLAN_OPT_ANNOTATIONS, .values = cmd_bool_values },
	CMD_PLANNING_OPTS,
	{ .name = NULL },
};

/* What plan was asked, from its flags. */
struct plan_args {
	struct planning_opts po;
	const char *dir, *outfile, *format;
	int detailed, no_color;
	int annotate; /* GitHub Actions annotations: in GitHub Actions, unless -annotations=false */
};

/* Parses the flags into *a: 0, or an exit code after saying what is wrong. */
static int plan_flags(struct plan_args *a, const struct cmd_args *args)
{
	struct vx_err err = VX_ERR_INIT;

	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case PLAN_OPT_OUT:
			a->outfile = v;
			break;
		case PLAN_OPT_FORMAT:
			a->format = v;
			break;
		case PLAN_OPT_DETAILED_EXITCODE:
			a->detailed = 1;
			break;
		case PLAN_OPT_NO_COLOR:
			a->no_color = 1;
			break;
		case PLAN_OPT_ANNOTATIONS:
			if (cmd_annotate("plan", v, &a->annotate) < 0)
				return VX_EXIT_USAGE;
			break;
		default:
			if (cmd_planning_opt(&a->po, args->opts[i].id, v, &err) && err.code) {
				cmd_report(&err, NULL);
				return VX_EXIT_USAGE;
			}
		}
	}
	if (cmd_stack_dir(args, args->npos ? args->pos[args->npos - 1] : NULL, &a->dir) < 0)
		return VX_EXIT_USAGE;
	a->annotate = a->annotate && gha_active(NULL);
	if (!a->format || (strcmp(a->format, "human") && strcmp(a->format, "json") &&
			   strcmp(a->format, "markdown"))) {
		cmd_error("plan: -format must be human, json or markdown");
		return VX_EXIT_USAGE;
	}
	return 0;
}

/* Prints the plan in a's format, and saves it with -out: 0, or -1 after saying why not. */
static int plan_print(struct planning *pl, const struct workspace *ws, const struct plan_args *a,
		      struct vx_err *err)
{
	struct vx_buf out = VX_BUF_INIT;
	struct ci ci = { NULL, 0, NULL, NULL };
	int rc = -1, r;

	if (!strcmp(a->format, "json"))
		r = render_plan_json(&out, &pl->planner.plan, &pl->header);
	else if (!strcmp(a->format, "markdown"))
		r = render_plan_markdown(&out, &pl->planner.plan, &pl->header);
	else
		r = render_plan_human(&out, &pl->planner.plan, &pl->header, cmd_use_color(1, a->no_color));
	if (r < 0) {
		cmd_error("plan: out of memory");
		goto done;
	}
	fputs(vx_buf_str(&out), stdout);
	if (a->outfile) {
		if (ci_read(&ci, ws->ctx, cmd_warn, NULL, err) < 0) {
			cmd_report(err, NULL);
			goto done;
		}
		if (planning_save(pl, ws, &ci, a->outfile, err) < 0) {
			cmd_report(err, "plan");
			goto done;
		}
		if (!strcmp(a->format, "human"))
			printf("\nSaved the plan to %s. Apply exactly it with: vxapply %s\n", a->outfile,
			       a->outfile);
	}
	rc = 0;
done:
	ci_release(&ci);
	vx_buf_release(&out);
	return rc;
}

/* In GitHub Actions: the plan's errors as annotations, its markdown to the step
 * summary and its results to the step outputs (workflow/ghactions.h). */
static void plan_github(const struct vx_ctx *ctx, const struct planning *pl, const struct plan_args *a, int rc)
{
	if (!gha_active(ctx))
		return;
	if (pl && a->annotate && pl->planner.plan.errors.n)
		cmd_print_annotations(&pl->planner.plan.errors);
	if (gha_plan_report(ctx, pl, rc, cmd_warn, NULL) < 0)
		cmd_error("plan: GitHub Actions outputs: out of memory");
}

static int plan_exec(const struct cmd_args *args)
{
	struct plan_args a;
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	struct planning pl;
	int rc;

	memset(&a, 0, sizeof(a));
	a.dir = ".";
	a.format = "human";
	a.annotate = 1;
	a.po.refresh = 1;
	memset(&ws, 0, sizeof(ws));
	memset(&pl, 0, sizeof(pl));
	if ((rc = plan_flags(&a, args)) != 0)
		goto done;
	rc = VX_EXIT_ERROR;
	cmd_ctx_init(&ctx, args->debug);
	if (cmd_shown_now(&a.po.now_ms, &ctx, "plan") < 0)
		goto done;
	if (planning_run_dir(&pl, &ws, &ctx, a.dir, &a.po,
			     a.annotate ? &cmd_workspace_events_annotated : &cmd_workspace_events, &err) < 0) {
		cmd_report(&err, NULL);
		plan_github(&ctx, NULL, &a, rc);
		goto done;
	}
	if ((!strcmp(a.format, "markdown") || a.outfile || gha_active(&ctx)) &&
	    planning_spend_line(&pl, &ws, a.po.now_ms) < 0) {
		cmd_error("plan: out of memory");
		goto done;
	}
	if (plan_print(&pl, &ws, &a, &err) < 0) {
		plan_github(&ctx, NULL, &a, rc);
		goto done;
	}
	if (!pl.planner.plan.errors.n)
		rc = a.detailed && planning_has_changes(&pl) ? VX_EXIT_CHANGES : VX_EXIT_OK;
	plan_github(&ctx, &pl, &a, rc);
	if (pl.planner.plan.errors.n)
		goto done;
	/* Every thread is joined (the refresh took the lists) and a plan holds no lease. */
	if (!ws.backend || !state_lock_held(ws.backend))
		cmd_done(rc);
done:
	planning_release(&pl);
	planning_opts_release(&a.po);
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
	.stack_dir = 1,
};
