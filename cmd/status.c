/*
 * vx status [DIR]: what runs now, without planning or writing anything.
 * Loads the stack and the state (no lease, no write), lists each place in
 * use once (the refresh a plan does) and prints reconcile/status.c's rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/policy_rules.h"
#include "reconcile/stack.h"
#include "util/diag.h"
#include "reconcile/status.h"
#include "reconcile/out/status_render.h"
#include "util/buf.h"
#include "workflow/budget.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx status [DIR] [options]\n\n"
	"Shows what runs now, without planning or writing anything: per address its\n"
	"live state, attempt of maximum, rung and region, time queued and running,\n"
	"cost so far, and for a run that failed its failure class and whether the next\n"
	"apply resubmits it or vx gave up. Declared jobs never applied show as 'not\n"
	"applied'; live jobs of this stack the state does not know as 'untracked' (or\n"
	"'foreign': another state's). One list call per region in use, no lease, no\n"
	"state write. See docs/status.md.\n\n"
	"options:\n"
	"  -format FMT     human (default) or json (docs/status.md)\n"
	"  -no-color       no colour (also: NO_COLOR set, or not a terminal)\n"
	"  -C DIR          the stack directory (default .; also -chdir=DIR)\n"
	"  -debug          log every request to stderr (tokens redacted)\n\n"
	"Environment: VX_PRICES (a price table, as for vxplan); VX_NOW (an RFC 3339\n"
	"time: show the times as of then, for reproducible output).\n";

enum { STATUS_OPT_FORMAT = 2, STATUS_OPT_NO_COLOR };

static const struct cmd_opt status_opts[] = {
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = STATUS_OPT_FORMAT, .values = cmd_formats_status },
	{ .name = "no-color", .arg = CMD_ARG_NONE, .id = STATUS_OPT_NO_COLOR },
	{ .name = NULL },
};

struct status_flags {
	const char *dir;
	const char *format;
	int no_color;
};

static int parse_flags(struct status_flags *f, const struct cmd_args *args)
{
	int dir_given = 0;

	f->dir = NULL;
	f->format = "human";
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		if (args->opts[i].id == STATUS_OPT_FORMAT)
			f->format = v;
		else if (args->opts[i].id == STATUS_OPT_NO_COLOR)
			f->no_color = 1;
	}
	for (size_t i = 0; i < args->npos; i++)
		if (cmd_dir_arg("status", &f->dir, &dir_given, args->pos[i]) < 0)
			return -1;
	if (cmd_stack_dir(args, f->dir, &f->dir) < 0)
		return -1;
	if (!f->format || (strcmp(f->format, "human") && strcmp(f->format, "json"))) {
		cmd_error("status: -format must be human or json");
		return -1;
	}
	return 0;
}

/*
 * The budget applied (the state's) against the resubmissions the rows show,
 * in order, as vx watch holds them: each whose at most would take the
 * period's spend past it is "held: budget, $X left" (docs/budgets.md).
 * A refused create is not a run: it is not counted. VX_ENOMEM or 0.
 */
static int budget_rows(struct workspace *ws, struct status_report *rep, const struct prices *p, int64_t now)
{
	const struct state *s = &ws->state;
	struct stack_budget b = { .set = 1 };
	struct vx_buf left_text = VX_BUF_INIT;
	double spent = 0, left, adds = 0;
	int rc = 0;

	if (!ws->state_loaded || s->budget_cents <= 0)
		return 0;
	b.usd = (double)s->budget_cents / 100.0;
	b.days = s->budget_days;
	if ((rc = budget_spent(&spent, ws, &b, p, now)) == VX_ENOMEM)
		return rc;
	left = rc ? -1 : round((b.usd - spent) * 100.0) / 100.0;
	rc = 0;
	for (size_t i = 0; i < rep->n && rc == 0; i++) {
		struct status_row *r = &rep->rows[i];
		double need = r->resubmit_at_most;

		if (!r->resubmits || r->refused)
			continue;
		if (left >= 0 && need >= 0 && adds + need <= left) {
			adds += need;
			continue;
		}
		vx_buf_reset(&left_text);
		if (left < 0)
			r->held = vx_strdup("held: budget, the period's spend is unknown");
		else if ((rc = budget_money(&left_text, left - adds > 0 ? left - adds : 0)) == 0)
			r->held = vx_asprintf("held: budget, %s left", vx_buf_str(&left_text));
		rc = rc || !r->held ? VX_ENOMEM : 0;
	}
	vx_buf_release(&left_text);
	return rc;
}

/*
 * What the stack breaks of its policy, said as every command that only
 * reads a stack says it (cmd_workspace_events' violations), once the price
 * table is read: the loader's violations, and those only prices show (a
 * rate over rules.maxHourlyUsd: the prices or the policy changed since the
 * run was applied, and vx watch holds it). A job's own maxHourlyUsd the
 * rate is now over is a warning of its own. 0, or VX_ENOMEM.
 */
static int policy_warnings(const struct workspace *ws, const struct prices *p)
{
	const struct policy_rules *pol = ws->st->policy;
	struct vx_diags own = { NULL, 0, 0, 10000, 0 }, all = { NULL, 0, 0, 10000, 0 };
	int rc = kind_check_prices(ws->st, p, &own);

	for (size_t i = 0; pol && i < pol->nviolations && rc == 0; i++)
		if (!pol->violations[i].repeat)
			rc = vx_diags_add(&all, pol->violations[i].file, pol->violations[i].line, pol->violations[i].col,
					  "%s", pol->violations[i].msg);
	if (rc == 0 && all.n) {
		vx_diags_sort(&all);
		cmd_workspace_events.violations(NULL, ws->dir, &all);
	}
	if (rc == 0 && own.n) {
		vx_diags_sort(&own);
		cmd_print_warnings(&own);
	}
	vx_diags_release(&own);
	vx_diags_release(&all);
	return rc < 0 ? VX_ENOMEM : 0;
}

static int report(struct workspace *ws, struct status_report *rep, int64_t now, struct vx_err *err)
{
	struct status_input in;
	struct live_set live;
	struct prices prices;
	int rc;

	memset(&prices, 0, sizeof(prices));
	/* The prices first: the policy's warnings come before anything may fail. */
	if ((rc = prices_load(&prices, ws->st, getenv("VX_PRICES"), err)) < 0)
		goto done;
	if ((rc = policy_warnings(ws, &prices)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	if ((rc = workspace_load_state(ws, err)) < 0 || (rc = workspace_refresh(ws, err)) < 0)
		goto done;
	live = live_store_view(&ws->store);
	memset(&in, 0, sizeof(in));
	in.st = ws->st;
	in.state = ws->state_loaded ? &ws->state : NULL;
	in.live = &live;
	in.listed = (const char *const *)ws->store.read;
	in.nlisted = ws->store.nread;
	in.prices = &prices;
	in.now_ms = now;
	rc = status_build(rep, &in, err);
	if (rc == 0 && budget_rows(ws, rep, &prices, now) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	prices_release(&prices);
	return rc;
}

static int status_exec(const struct cmd_args *args)
{
	struct status_flags f;
	struct vx_ctx ctx;
	struct workspace ws;
	struct status_report rep;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf out = VX_BUF_INIT;
	/* The policy's violations are said once the prices are read (policy_warnings), all together. */
	struct workspace_events events = cmd_workspace_events;
	int64_t now = 0;
	int rc = VX_EXIT_ERROR, r;

	events.violations = NULL;
	memset(&f, 0, sizeof(f));
	memset(&ws, 0, sizeof(ws));
	memset(&rep, 0, sizeof(rep));
	if (parse_flags(&f, args) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	if (cmd_shown_now(&now, &ctx, "status") < 0)
		return VX_EXIT_USAGE;
	if (workspace_open_lenient(&ws, &ctx, f.dir, &events, &err) < 0 || report(&ws, &rep, now, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (!strcmp(f.format, "json"))
		r = status_render_json(&out, &rep);
	else
		r = status_render_human(&out, &rep, cmd_use_color(1, f.no_color));
	if (r < 0 || (!strcmp(f.format, "json") && vx_buf_addc(&out, '\n') < 0)) {
		cmd_error("status: out of memory");
		goto done;
	}
	fputs(vx_buf_str(&out), stdout);
	rc = fflush(stdout) == 0 ? VX_EXIT_OK : VX_EXIT_ERROR;
done:
	vx_buf_release(&out);
	status_release(&rep);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.summary = "what runs now: live state, times, cost so far (no plan, no write)",
	.usage = usage,
	.opts = status_opts,
	.exec = status_exec,
	.stack_dir = 1,
};
