/*
 * vxapply / vx apply: make the cloud match the declaration.
 *
 * Like Terraform, apply takes the state lock first, then reads the state
 * and the live jobs, plans, shows the plan, asks (on a terminal), and
 * carries it out, writing state (a git commit) after each step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/apply.h"
#include "reconcile/notify.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/out/render.h"
#include "reconcile/load/spec.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "workflow/applying.h"
#include "workflow/ci.h"
#include "workflow/ghactions.h"
#include "workflow/planning.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vxapply [DIR | PLANFILE] [options]     (also: vx apply)\n\n"
	"Plans the stack in DIR (default .) and carries the plan out, or applies a plan\n"
	"saved by 'vxplan -out PLANFILE' exactly, refusing if the state or the declaration\n"
	"moved since. Every step is recorded in the state (a commit on vx/state/<stack>).\n"
	"A saved plan's stack is looked for at the same place in the git checkout of the\n"
	"current directory, then in that of PLANFILE, then where it was planned, so a plan\n"
	"made in one checkout applies in another of the same commit.\n\n"
	"options:\n"
	"  -auto-approve        do not ask; required when there is no terminal\n"
	"  -parallelism N       at most N API calls at once (default 8)\n"
	"  -wait[=running|done] follow the created jobs until RUNNING (default) or finished\n"
	"  -lock-timeout DUR    wait up to DUR (e.g. 5m) for a state lock held by another apply\n"
	"                       (saying on stderr whose lock it waits for); without it a held\n"
	"                       lock fails at once, naming the 'vx unlock' command to clear it\n"
	"  -target ADDR         apply only this address (repeatable); an address neither\n"
	"                       declared nor in the state is an error\n"
	"  -replace ADDR        start a new run of ADDR even if unchanged (repeatable); a\n"
	"                       sweep's address or a slice (job.S[seed=2]) names its runs\n"
	"  -refresh=false       plan from the state alone\n"
	"  -fail-on=quota       a job that would not fit its GPU quota or reservation is\n"
	"                       a plan error (exit 1), not a warning; the Stack's\n"
	"                       failOn: [quota] does the same\n"
	"  -fail-on=budget      a plan that would take the spend over the Stack's budget\n"
	"                       is a plan error (exit 1); failOn: [budget] does the same\n"
	"  -allow-over-budget   apply a plan that would exceed the Stack's budget (by\n"
	"                       default refused); recorded in the state commit\n"
	"  -allow-other-lineage create jobs even where live jobs of this stack name from\n"
	"                       another state run them (by default a plan error: with\n"
	"                       no state found, that is this stack's own state lost)\n"
	"  -allow-released      create a job even beside an active job of the same\n"
	"                       address that vx state rm released (by default a plan error)\n"
	"  -verbose             list every run of a sweep, and the cost line of every run\n"
	"                       that stays, not one block per sweep and one line for many\n"
	"  -no-color            no colour\n"
	"  -annotations=false   in GitHub Actions, do not also print the stack's problems\n"
	"                       as ::error annotations (docs/ci.md)\n"
	"  -C DIR               the stack directory, as DIR (also -chdir=DIR)\n"
	"  -debug               log every request to stderr (tokens redacted)\n\n"
	"Ctrl-C stops starting new actions, lets the requests in flight finish, writes\n"
	"the state and releases the lock. A second Ctrl-C abandons the requests in\n"
	"flight: a create cut off stays journaled as unconfirmed, and the next apply\n"
	"adopts its job if it was made. A third ends vx at once.\n";

static int confirm(int auto_approve)
{
	char line[64];

	if (auto_approve)
		return 1;
	if (!isatty(0)) {
		cmd_error("apply: refusing to apply without -auto-approve: there is no terminal to ask on");
		return 0;
	}
	printf("\nDo you want to apply this plan? Only 'yes' will be accepted: ");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	line[strcspn(line, "\r\n")] = '\0';
	if (strcmp(line, "yes") != 0) {
		printf("Apply cancelled.\n");
		return 0;
	}
	return 1;
}

/*
 * The stack directory as the "vx unlock ID" hint should name it for a user
 * in the current directory: as they typed it, or (from a saved plan) relative
 * to here when below here; NULL when it is here. Shell-quoted; caller frees.
 */
static char *unlock_args(const char *typed, const char *abs_dir)
{
	char cwd[4096];
	size_t n;

	if (typed)
		return strcmp(typed, ".") && strcmp(typed, "./") ? cmd_shell_quote(typed) : NULL;
	if (!getcwd(cwd, sizeof(cwd)))
		return cmd_shell_quote(abs_dir);
	n = strlen(cwd);
	if (!strcmp(cwd, abs_dir))
		return NULL;
	if (!strncmp(cwd, abs_dir, n) && abs_dir[n] == '/')
		return cmd_shell_quote(abs_dir + n + 1);
	return cmd_shell_quote(abs_dir);
}

static int is_plan_file(const char *path)
{
	size_t n = strlen(path);

	return access(path, R_OK) == 0 && n > 0 && path[n - 1] != '/' && !cmd_is_dir(path);
}

/* What apply's events print with: how -wait and -lock-timeout were given. */
struct printer {
	const char *lock_timeout_arg;
	int tty;
	int until_done;
};

static void print_progress(void *ud, const char *line)
{
	(void)ud;
	printf("%s\n", line);
	fflush(stdout);
}

/* Said once, on stderr, when apply starts waiting for another's lock. */
static void print_lock_wait(void *ud, const struct state_lock *l, int64_t timeout_ms)
{
	const struct printer *pr = ud;
	char since[STATE_TIME_MAX];

	(void)timeout_ms;
	state_time_format(l->started_ms, since);
	fprintf(stderr, "vx: waiting for the state lock held by %s@%s (%s, pid %lld, since %s); up to %s\n",
		l->user, l->host, l->operation, (long long)l->pid, since, pr->lock_timeout_arg);
}

static void print_job_changed(void *ud, const char *name, const struct live_job *lj, const char *state,
			      int64_t secs)
{
	const struct printer *pr = ud;
	struct vx_buf why = VX_BUF_INIT;

	if (pr->tty)
		fputs("\r\033[K", stdout);
	/* Why it failed, in the job's own words (whole, cleaned and redacted). */
	if (lj && job_state_is_terminal(state) && (lj->error_code || lj->error_message) &&
	    (vx_buf_adds(&why, ": ") < 0 || render_error(&why, lj->error_code, lj->error_message) < 0))
		vx_buf_reset(&why);
	printf("  %s: %s (after %llds)%s\n", name, job_state_short(state), (long long)secs,
	       vx_buf_str(&why));
	vx_buf_release(&why);
	fflush(stdout);
}

static void print_waiting(void *ud, size_t pending, size_t running, size_t done, int64_t secs)
{
	const struct printer *pr = ud;

	if (!pr->tty)
		return;
	printf("\r\033[K  waiting: %zu not yet %s, %zu running, %zu finished (%llds)", pending,
	       pr->until_done ? "finished" : "running", running, done, (long long)secs);
	fflush(stdout);
}

/* Follows created jobs until they run (or finish). Returns 0, or 1 when one failed. */
static int follow_jobs(struct applying *ap, const struct applying_opts *opts, struct printer *pr,
		       int until_done)
{
	const char *poll_env = getenv("VX_WAIT_POLL_MS");
	long poll = poll_env ? strtol(poll_env, NULL, 10) : 10000;
	struct vx_err err = VX_ERR_INIT;
	int rc;

	pr->tty = isatty(1);
	pr->until_done = until_done;
	rc = applying_wait(ap, until_done, poll > 0 ? poll : 10000, opts, &err);
	if (pr->tty)
		fputs("\r\033[K", stdout);
	fflush(stdout);
	if (rc < 0)
		cmd_report(&err, NULL);
	vx_err_release(&err);
	return rc != 0;
}

enum {
	APPLY_OPT_AUTO_APPROVE = 1,
	APPLY_OPT_NO_COLOR,
	APPLY_OPT_WAIT,
	APPLY_OPT_PARALLELISM,
	APPLY_OPT_LOCK_TIMEOUT,
	APPLY_OPT_ANNOTATIONS,
	APPLY_OPT_ALLOW_OVER_BUDGET,
};

static const char *const apply_wait_values[] = { "running", "done", NULL };

static const struct cmd_opt apply_opts[] = {
	{ .name = "auto-approve", .arg = CMD_ARG_NONE, .id = APPLY_OPT_AUTO_APPROVE },
	{ .name = "no-color", .arg = CMD_ARG_NONE, .id = APPLY_OPT_NO_COLOR },
	{ .name = "wait", .arg = CMD_ARG_OPTIONAL, .id = APPLY_OPT_WAIT, .values = apply_wait_values },
	{ .name = "parallelism", .arg = CMD_ARG_REQUIRED, .id = APPLY_OPT_PARALLELISM },
	{ .name = "lock-timeout", .arg = CMD_ARG_REQUIRED, .id = APPLY_OPT_LOCK_TIMEOUT },
	{ .name = "annotations", .arg = CMD_ARG_OPTIONAL, .id = APPLY_OPT_ANNOTATIONS, .values = cmd_bool_values },
	{ .name = "allow-over-budget", .arg = CMD_ARG_NONE, .id = APPLY_OPT_ALLOW_OVER_BUDGET },
	CMD_PLANNING_OPTS,
	{ .name = NULL },
};

/* What apply was asked, from its flags and the environment. */
struct apply_args {
	const char *target;
	int auto_approve, no_color, wait, parallelism;
	int annotate;  /* GitHub Actions annotations: in GitHub Actions, unless -annotations=false */
	int planned;   /* apply_prepare planned: ap->pl holds the plan */
	int64_t lock_timeout;
	struct planning_opts po;
	struct applying_opts ao;
	struct applying_events ev;
	struct printer pr;
	struct ci ci;
	char *hint;
};

/* Parses the flags into *a: 0, or an exit code after saying what is wrong. */
static int apply_flags(struct apply_args *a, const struct cmd_args *args)
{
	struct vx_err err = VX_ERR_INIT;

	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case APPLY_OPT_AUTO_APPROVE:
			a->auto_approve = 1;
			break;
		case APPLY_OPT_NO_COLOR:
			a->no_color = 1;
			break;
		case APPLY_OPT_ALLOW_OVER_BUDGET:
			a->ao.allow_over_budget = 1;
			break;
		case APPLY_OPT_ANNOTATIONS:
			if (cmd_annotate("apply", v, &a->annotate) < 0)
				return VX_EXIT_USAGE;
			break;
		case APPLY_OPT_WAIT:
			if (!v || !strcmp(v, "running"))
				a->wait = 1;
			else if (!strcmp(v, "done"))
				a->wait = 2;
			else {
				cmd_error("apply: -wait takes running or done, not '%s'", v);
				return VX_EXIT_USAGE;
			}
			break;
		case APPLY_OPT_PARALLELISM: {
			char *end = NULL;
			long n = strtol(v, &end, 10);

			if (!*v || *end || n < 1 || n > 256) {
				cmd_error("apply: -parallelism takes a number from 1 to 256, not '%s'", v);
				return VX_EXIT_USAGE;
			}
			a->parallelism = (int)n;
			break;
		}
		case APPLY_OPT_LOCK_TIMEOUT:
			a->pr.lock_timeout_arg = v;
			if (spec_parse_duration(v, &a->lock_timeout) < 0) {
				cmd_error("apply: -lock-timeout takes a duration such as 30s or 5m, not '%s'", v);
				return VX_EXIT_USAGE;
			}
			break;
		default:
			if (cmd_planning_opt(&a->po, args->opts[i].id, v, &err) && err.code) {
				cmd_report(&err, NULL);
				return VX_EXIT_USAGE;
			}
		}
	}
	if (cmd_stack_dir(args, args->npos ? args->pos[args->npos - 1] : NULL, &a->target) < 0)
		return VX_EXIT_USAGE;
	a->annotate = a->annotate && gha_active(NULL);
	return 0;
}

/* The environment apply reads: its lease, who runs it, the test pause. -1 after saying why not. */
static int apply_env(struct apply_args *a)
{
	struct vx_err err = VX_ERR_INIT;
	const char *pause, *ci;

	if (cmd_lease_from_env("apply", &a->ao.lease_ms) < 0)
		return -1;
	if (ci_read(&a->ci, NULL, cmd_warn, NULL, &err) < 0) {
		cmd_report(&err, NULL);
		return -1;
	}
	/* The test hooks' points (util/testhook.h): the library stops at them. */
	pause = getenv("VX_TEST_PAUSE");
	if (pause && strcmp(pause, "before-send") != 0 && strcmp(pause, "ref-update") != 0) {
		cmd_error("apply: VX_TEST_PAUSE takes before-send or ref-update, not '%s'", pause);
		return -1;
	}
	ci = getenv("CI");
	a->ao.committed_only = ci && *ci;
	return 0;
}

/*
 * Opens the stack or the saved plan, takes the lease, plans and shows the
 * plan: 0 when it may go on, -1 after saying why not.
 */
static int apply_prepare(struct applying *ap, struct apply_args *a, struct vx_ctx *ctx, struct vx_err *err)
{
	const struct workspace_events *wev = a->annotate ? &cmd_workspace_events_annotated
							 : &cmd_workspace_events;
	struct vx_buf out = VX_BUF_INIT;
	int rc = -1;

	if (is_plan_file(a->target)) {
		if (applying_open_saved(ap, ctx, a->target, &a->po, wev, err) < 0) {
			cmd_report(err, NULL);
			if (ap->not_a_plan)
				fprintf(stderr, "vx: vxapply takes a stack directory, or a plan saved by "
					"'vxplan -out FILE'\n");
			goto done;
		}
	} else if (applying_open(ap, ctx, a->target, wev, err) < 0) {
		cmd_report(err, NULL);
		goto done;
	}
	a->hint = unlock_args(ap->from_file ? NULL : a->target, ap->ws.dir);
	a->ao.unlock_args = a->hint;
	if (applying_lock(ap, &a->ao, &a->po, err) < 0) {
		cmd_report(err, NULL);
		goto done;
	}
	cmd_ctx_time_limit(ctx); /* the wait for the lock does not count */
	if (applying_plan(ap, &a->ao, &a->po, err) < 0) {
		cmd_report(err, NULL);
		goto done;
	}
	a->planned = 1;
	if (!ap->from_file) {
		if (render_plan_human(&out, &ap->pl.planner.plan, &ap->pl.header,
				      cmd_use_color(1, a->no_color)) < 0) {
			cmd_error("apply: out of memory");
			goto done;
		}
		fputs(vx_buf_str(&out), stdout);
	}
	if (ap->pl.planner.plan.errors.n) {
		if (a->annotate)
			cmd_print_annotations(&ap->pl.planner.plan.errors);
		cmd_error("apply: the plan has errors; nothing was changed");
		goto done;
	}
	/* Reviewed or not, spending past the budget takes a person's explicit word. */
	if (planning_over_budget(&ap->pl) && !a->ao.allow_over_budget) {
		cmd_error("apply: refusing a plan that would exceed the Stack's budget (%s); nothing was changed. "
			  "Apply it anyway with -allow-over-budget, recorded in the state's history",
			  ap->pl.budget.r.line);
		goto done;
	}
	rc = 0;
done:
	vx_buf_release(&out);
	return rc;
}

/* Notifications wait at most this long per apply: a dead receiver costs one try. */
#define APPLY_NOTIFY_BUDGET_MS 30000

/*
 * The Stack's notify: targets, recorded as applied, hear what this apply saw
 * and did, once each. The lease is given back before the first request (a
 * slow receiver holds up no other apply); each delivery is recorded under
 * the lease taken for that write alone.
 */
static void apply_notify(struct applying *ap, struct vx_ctx *ctx)
{
	struct notify_outbox *ob = NULL;
	struct notify_list events = { NULL, 0 };
	struct notify_report rep;
	struct vx_err err = VX_ERR_INIT;

	memset(&rep, 0, sizeof(rep));
	if (applying_targets(ap, &err) < 0) {
		cmd_report(&err, NULL);
		vx_err_release(&err);
	}
	if (!ap->ws.st->nnotify)
		return;
	if (notify_outbox_new(&ob) < 0 || applying_events(ap, vx_now_ms(ctx) - NOTIFY_LOOKBACK_MS, &events) < 0 ||
	    applying_budget_events(ap, &events) < 0)
		cmd_error("apply: notifications: out of memory");
	else if (applying_notify(ap, NULL, ob, &events, 20, APPLY_NOTIFY_BUDGET_MS, &rep, &err) < 0)
		cmd_report(&err, NULL);
	for (size_t i = 0; i < rep.n; i++) {
		const struct notify_outcome *o = &rep.items[i];

		printf("notify: %s %s to notify[%zu]: %s%s%s\n", o->address ? o->address : "", o->event, o->target,
		       o->sent ? "delivered" : o->dropped ? "dropped: " : "not delivered: ",
		       o->sent && o->why ? "; " : "", o->why ? o->why : "");
	}
	notify_report_release(&rep);
	notify_list_release(&events);
	notify_outbox_free(ob);
	vx_err_release(&err);
}

/* Carries the plan out and follows the jobs: the exit code. */
static int apply_carry_out(struct applying *ap, struct apply_args *a, struct vx_ctx *ctx, struct vx_err *err)
{
	const struct apply_result *res = &ap->res;

	if (applying_record(ap, &a->po, err) < 0) {
		cmd_report(err, NULL);
		return VX_EXIT_ERROR;
	}
	/* The plan shown counted the spend as last recorded; what ended since may leave less. */
	if (ap->budget_held)
		printf("\nbudget: with the runs that just ended counted, %zu start%s no one reviewed held past the "
		       "budget (vx status says why)\n",
		       ap->budget_held, ap->budget_held == 1 ? "" : "s");
	if (!planning_has_changes(&ap->pl)) {
		/* What waits is recorded as applied (nothing is sent): the watcher starts it later. */
		if (planning_has_waits(&ap->pl) && applying_run(ap, &a->ao, err) < 0) {
			cmd_report(err, NULL);
			return VX_EXIT_ERROR;
		}
		printf("\nNo changes. The cloud matches the declaration.\n");
		apply_notify(ap, ctx);
		return VX_EXIT_OK;
	}
	if (!ap->from_file && !confirm(a->auto_approve))
		return VX_EXIT_ERROR;
	cmd_ctx_time_limit(ctx); /* nor the time a person took to answer */
	if (cmd_inflight_from_env("apply", &a->ao.inflight_ms) < 0)
		return VX_EXIT_ERROR;
	printf("\n");
	if (applying_run(ap, &a->ao, err) < 0) {
		cmd_report(err, NULL);
		return VX_EXIT_ERROR;
	}
	printf("\nApply %s: %zu done, %zu failed%s.\n", res->interrupted ? "interrupted" : "complete",
	       res->ok, res->failed, res->skipped ? ", some not started" : "");
	for (size_t i = 0; i < res->failures.n; i++)
		fprintf(stderr, "vx: failed: %s\n", res->failures.items[i].msg);
	apply_notify(ap, ctx);
	if (res->failed || res->interrupted)
		return VX_EXIT_ERROR;
	if (a->wait && res->ncreated) {
		printf("\nWaiting for %zu job%s to %s:\n", res->ncreated, res->ncreated == 1 ? "" : "s",
		       a->wait == 2 ? "finish" : "run");
		if (follow_jobs(ap, &a->ao, &a->pr, a->wait == 2))
			return VX_EXIT_ERROR;
	}
	return VX_EXIT_OK;
}

/* In GitHub Actions: the plan and apply's result to the step summary, the exit
 * code to the step outputs (workflow/ghactions.h). */
static void apply_github(struct applying *ap, const struct apply_args *a, int rc)
{
	struct planning *pl = a->planned ? &ap->pl : NULL;

	if (!gha_active(ap->ws.ctx))
		return;
	/* The plan in the summary is the pull request's: with its spend line. */
	if (pl && planning_spend_line(pl, &ap->ws, a->po.now_ms) < 0)
		cmd_error("apply: GitHub Actions outputs: out of memory");
	if (gha_apply_report(ap->ws.ctx, pl, pl && planning_has_changes(pl) ? &ap->res : NULL, rc, cmd_warn, NULL) < 0)
		cmd_error("apply: GitHub Actions outputs: out of memory");
}

static int apply_exec(const struct cmd_args *args)
{
	struct apply_args a;
	struct applying ap;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	int rc;

	memset(&a, 0, sizeof(a));
	a.target = ".";
	a.parallelism = 8;
	a.po.refresh = 1;
	a.annotate = 1;
	a.ev.progress = print_progress;
	a.ev.lock_wait = print_lock_wait;
	a.ev.job_changed = print_job_changed;
	a.ev.waiting = print_waiting;
	a.ev.ud = &a.pr;
	applying_init(&ap);
	if ((rc = apply_flags(&a, args)) != 0)
		goto done;
	rc = VX_EXIT_ERROR;
	cmd_ctx_init(&ctx, args->debug);
	if (apply_env(&a) < 0 || cmd_shown_now(&a.po.now_ms, &ctx, "apply") < 0)
		goto done;
	a.ao.ev = &a.ev;
	a.ao.ci = &a.ci;
	a.ao.parallelism = a.parallelism;
	a.ao.lock_timeout_ms = a.lock_timeout;
	a.ao.getenv = cmd_getenv;
	a.ao.notify_loopback = cmd_notify_loopback();
	if (apply_prepare(&ap, &a, &ctx, &err) < 0)
		goto done;
	rc = apply_carry_out(&ap, &a, &ctx, &err);
done:
	if (rc != VX_EXIT_USAGE)
		apply_github(&ap, &a, rc);
	applying_close(&ap);
	ci_release(&a.ci);
	free(a.hint);
	planning_opts_release(&a.po);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_apply_entry = {
	.name = "apply",
	.alias = "vxapply",
	.summary = "make the cloud match the declaration, recording it in git",
	.usage = usage,
	.opts = apply_opts,
	.exec = apply_exec,
	.stack_dir = 1,
};
