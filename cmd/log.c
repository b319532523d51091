/*
 * vx log [ADDR] [DIR]: one row per action vx took on a job, from the state branch.
 *
 * The rows are read from the history of each record (git: every commit that
 * changed jobs/NAME.json), oldest first. A record lives from its first run
 * until it is forgotten (the file removed); its runs only ever grow, so the
 * last version of a lifetime holds every run of it with the state last
 * observed, and each earlier version says when something happened:
 *
 *	a run first appears        its start: create, adopt, replace, rerun, resubmit
 *	cancelledByVx turns true   cancel (the commit's time)
 *	the file is removed        forget, or cancel when that commit cancelled it
 *	                           (states written before cancels kept the record)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/capacity.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/out/render.h"
#include "reconcile/out/report.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/backend.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage_head[] =
	"usage: vx log [ADDR] [DIR] [-debug]\n\n"
	"Prints one row per action vx took for ADDR (e.g. job.train), or for every job the\n"
	"state ever held, forgotten ones included: when, what (create, adopt, replace,\n"
	"rerun, resubmit, cancel, forget), the Vertex resource, attempt, who launched it\n"
	"(the CI's actor or user@host; 'bob (PR #7 by alice)': bob applied alice's plan\n"
	"of pull request 7), the config commit (+dirty: applied from uncommitted\n"
	"changes), the run's estimated cost (list price x running hours x replicas, as\n"
	"vx report counts it; for a run still running, its rate per hour; see\n"
	"docs/report.md), and its final state as last observed, with its error. A run\n"
	"started past the Stack's budget (vxapply -allow-over-budget) has a budget row:\n"
	"by how much, and who allowed it. Times are UTC. Read from the state's history\n"
	"(the git branch vx/state/<stack>).\n\n"
	"DIR is the stack directory (default .; -C DIR and -chdir=DIR also work). An argument of the\n"
	"form ";
/* ... the kinds' addresses (kind_table), then: */
static const char usage_tail[] =
	" is the address, any other DIR.\n\n"
	"Environment: VX_PRICES (a price table, as for vxplan).\n";

/* -help: the usage with the addresses of every kind. */
static int usage_build(struct vx_buf *out)
{
	if (vx_buf_adds(out, usage_head) < 0 || kind_list_addresses(out, ".NAME") < 0 || vx_buf_adds(out, usage_tail) < 0)
		return VX_ENOMEM;
	return 0;
}

/* "2026-11-23T10:02:05Z": every time vx log shows, in one format; "-" when unknown. */
static void log_time(int64_t ms, char out[32])
{
	if (ms <= 0)
		snprintf(out, 32, "-");
	else
		vx_time_format(out, 32, ms, VX_TIME_SECONDS);
}

/* Whether any run of r ran on a rung of a fallback ladder past the declared
 * job: then every run of it shows its rung, rung 0 included. */
static int has_rungs(const struct state_record *r)
{
	for (size_t i = 0; r && i < r->nhistory; i++)
		if (r->history[i].rung)
			return 1;
	return r && r->current && r->current->rung;
}

/*
 * Who: "alice"; "bob (planned by alice)" when bob applied alice's saved plan;
 * "bob (PR #7 by alice)" when the plan was made (or the apply ran) in pull
 * request 7, and "bob (PR #7)" when no one else planned it.
 */
static int who(struct vx_buf *b, const struct state_run *r)
{
	const char *by = r->launched_by ? r->launched_by : "-";
	const char *planner = r->planned_by && strcmp(r->planned_by, by) ? r->planned_by : NULL;

	if (vx_buf_adds(b, by) < 0)
		return VX_ENOMEM;
	if (r->pr_number)
		return vx_buf_printf(b, " (PR #%" PRId64 "%s%s)", r->pr_number, r->planned_by ? " by " : "",
				     r->planned_by ? r->planned_by : "");
	return planner ? vx_buf_printf(b, " (planned by %s)", planner) : 0;
}

/*
 * " (user-error: exit code 137)" for a run whose replica exited with a
 * status Google's sentence gives, " (timeout: hit its 2h timeout)" for a
 * run Vertex cancelled at its
 * scheduling.timeout, " (CLASS)" for another failure. The timeout is the
 * record's spec's when the run is of that spec, else the time it ran.
 */
static int add_class(struct vx_buf *b, const struct state_record *rec, const struct state_run *r)
{
	char t[32];
	int64_t ms = 0;

	if (!r->failure)
		return 0;
	if (r->exit_code && !strcmp(r->failure, "user-error"))
		return vx_buf_printf(b, " (user-error: exit code %" PRId64 ")", r->exit_code);
	if (strcmp(r->failure, "timeout") != 0)
		return vx_buf_printf(b, " (%s)", r->failure);
	if (r->spec_hash && rec->spec_hash && !strcmp(r->spec_hash, rec->spec_hash))
		ms = failure_spec_timeout_ms(rec->spec_json);
	else if (r->started_ms > 0 && r->ended_ms > r->started_ms)
		ms = (r->ended_ms - r->started_ms) / 1000 * 1000;
	failure_timeout_words(t, sizeof(t), ms);
	return vx_buf_printf(b, " (timeout: hit its %s timeout)", t);
}

static void print_start(const struct state_record *rec, const struct state_run *r, int64_t fallback_ms,
			int show_rung, const struct prices *prices)
{
	struct vx_buf end = VX_BUF_INIT, by = VX_BUF_INIT, cost = VX_BUF_INIT;
	char when[32], ended[32], rung[96] = "", policy[32] = "";
	int refused;

	log_time(r->created_ms ? r->created_ms : fallback_ms, when);
	log_time(r->ended_ms, ended);
	/* A create the server refused made no job: it has a class but no resource. */
	refused = !r->resource && r->failure && !r->has_value;
	if (who(&by, r) < 0)
		vx_buf_reset(&by);
	/* Only under a policy, so every other log reads as before. */
	if (r->policy_commit)
		snprintf(policy, sizeof(policy), "  policy %.12s", r->policy_commit);
	if (vx_buf_adds(&end, refused ? "refused" : job_state_short(r->state)) < 0 ||
	    add_class(&end, rec, r) < 0 ||
	    (r->cancelled_by_vx && vx_buf_adds(&end, " (cancelled by vx)") < 0) ||
	    (r->ended_ms && vx_buf_printf(&end, ", ended %s", ended) < 0) ||
	    ((r->error_code || r->error_message) &&
	     (vx_buf_adds(&end, ": ") < 0 || render_error(&end, (int)r->error_code, r->error_message) < 0)))
		vx_buf_reset(&end);
	if (r->has_value) {
		/* A reservation's or quota preference's action: the value it left, and
		 * the state as Compute or Cloud Quotas reported it. */
		vx_buf_reset(&end);
		if (vx_buf_adds(&end, r->state ? r->state : "-") < 0 ||
		    (r->error_message && (vx_buf_adds(&end, ": ") < 0 ||
					  render_error(&end, 0, r->error_message) < 0)))
			vx_buf_reset(&end);
		printf("  %-20s  %-8s  %s  %s %" PRId64 "  by %s  config %.12s%s%s  %s\n", when,
		       r->action ? r->action : "-", r->resource ? r->resource : "-",
		       r->region && !strcmp(r->region, "global") ? "preferredValue" : "count", r->value,
		       vx_buf_str(&by), r->config_commit ? r->config_commit : "none",
		       r->config_dirty ? "+dirty" : "", policy, vx_buf_str(&end));
		vx_buf_release(&end);
		vx_buf_release(&by);
		return;
	}
	if (show_rung)
		snprintf(rung, sizeof(rung), "  rung %" PRId64 " (%.64s)", r->rung, r->region ? r->region : "-");
	if (report_run_cost(&cost, rec, r, prices) < 0)
		vx_buf_reset(&cost);
	printf("  %-20s  %-8s  %s  attempt %" PRId64 "  run %" PRId64 "%s  by %s  config %.12s%s%s  cost %s  %s\n",
	       when, r->action ? r->action : "-",
	       r->resource ? r->resource : refused ? "(no job made)"
						   : "(create never answered)",
	       r->attempt, r->run, rung,
	       vx_buf_str(&by), r->config_commit ? r->config_commit : "none",
	       r->config_dirty ? "+dirty" : "", policy, cost.len ? vx_buf_str(&cost) : "unknown", vx_buf_str(&end));
	vx_buf_release(&end);
	vx_buf_release(&by);
	vx_buf_release(&cost);
}

static void print_event(int64_t ms, const char *what, const char *resource)
{
	char when[32];

	log_time(ms, when);
	if (resource)
		printf("  %-20s  %-8s  %s\n", when, what, resource);
	else
		printf("  %-20s  %s\n", when, what);
}

static size_t nruns(const struct state_record *r)
{
	return r ? r->nhistory + (r->current != NULL) : 0;
}

static const struct state_run *run_at(const struct state_record *r, size_t i)
{
	return i < r->nhistory ? &r->history[i] : r->current;
}

/* Whether commit message cancelled address (a "- ADDR cancel NAME" line). */
static int message_cancels(const char *message, const char *address)
{
	size_t n = strlen(address);

	for (const char *p = message; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, "- ", 2) && !strncmp(p + 2, address, n) && !strncmp(p + 2 + n, " cancel ", 8))
			return 1;
	return 0;
}

/* The rest of the line of message that starts with key ("Vx-Actor: "), cleaned; NULL if none. */
static char *message_line(const char *message, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = message; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n)) {
			char *line = vx_asprintf("%.*s", (int)strcspn(p + n, "\n"), p + n);
			char *clean = line ? vx_text_clean(line) : NULL;

			free(line);
			return clean;
		}
	return NULL;
}

/*
 * A `vx state rm` or `vx state mv` commit (workflow/stateedit.h) as a row:
 * "state rm  by alice: why", "state mv  to job.b by alice: why". 0 when
 * message is neither.
 */
static int print_edit(const struct state_history_entry *e, int arrived)
{
	const char *m = e->message;
	char *actor, *reason, *other = NULL, *what;
	int mv = m && !strncmp(m, "vx state mv: ", 13);

	if (!m || (!mv && strncmp(m, "vx state rm:", 12)))
		return 0;
	if (mv) {
		/* "vx state mv: OLD -> NEW": the other address. */
		const char *arrow = strstr(m, " -> ");
		size_t nold = arrow ? (size_t)(arrow - (m + 13)) : 0;

		if (!arrow)
			return 0;
		other = arrived ? vx_asprintf("from %.*s ", (int)nold, m + 13)
				: vx_asprintf("to %.*s ", (int)strcspn(arrow + 4, "\n"), arrow + 4);
	}
	actor = message_line(m, "Vx-Actor: ");
	reason = message_line(m, "Reason: ");
	what = vx_asprintf("%sby %s%s%s", other ? other : "", actor ? actor : "-", reason ? ": " : "",
			   reason ? reason : "");
	if (what) {
		char *clean = vx_text_clean(what);

		print_event(e->time_ms, mv ? "state mv" : "state rm", clean ? clean : "");
		free(clean);
	}
	free(what);
	free(other);
	free(actor);
	free(reason);
	return 1;
}

/*
 * A run started by an apply allowed past the Stack's budget (its commit's
 * "Vx-Allow-Over-Budget: by $1,500"): "budget  over by $1,500, allowed by
 * alice (-allow-over-budget)", at the run's start (when_ms). 1 when printed, else 0.
 */
static int print_over_budget(const struct state_history_entry *e, int64_t when_ms)
{
	char *by = message_line(e->message, "Vx-Allow-Over-Budget: "), *actor, *what;

	if (!by)
		return 0;
	actor = message_line(e->message, "Vx-Actor: ");
	what = vx_asprintf("over %s, allowed by %s (-allow-over-budget)", by, actor ? actor : "-");
	if (what)
		print_event(when_ms, "budget", what);
	free(what);
	free(actor);
	free(by);
	return 1;
}

/*
 * The rows of one lifetime: versions v[0..n) oldest first, all with a
 * record, then (optionally) the entry that removed it.
 */
static int print_lifetime(struct state_history_entry *const *v, size_t n,
			  const struct state_history_entry *removed, const struct prices *prices)
{
	const struct state_record *last = n ? v[n - 1]->record : NULL, *prev = NULL;
	int rows = 0;

	/* Moved here by `vx state mv`: said before its runs. */
	if (n)
		rows += print_edit(v[0], 1);
	for (size_t k = 0; k < n; k++) {
		const struct state_record *r = v[k]->record;

		for (size_t i = 0; i < nruns(r) && i < nruns(last); i++) {
			const struct state_run *now = run_at(r, i), *fin = run_at(last, i);
			int had = i < nruns(prev), was_cancelled = had && run_at(prev, i)->cancelled_by_vx;

			if (!had) {
				print_start(last, fin, v[k]->time_ms, has_rungs(last), prices);
				rows++;
				rows += print_over_budget(v[k], fin->created_ms ? fin->created_ms : v[k]->time_ms);
			}
			if (now->cancelled_by_vx && !was_cancelled) {
				print_event(v[k]->time_ms, "cancel", now->resource);
				rows++;
			}
		}
		prev = r;
	}
	if (removed) {
		const struct state_run *cur = prev && prev->current ? prev->current : NULL;

		/* An older vx forgot a record in the same commit that cancelled its run. */
		if (print_edit(removed, 0))
			rows++;
		else if (cur && !cur->cancelled_by_vx && message_cancels(removed->message, removed->address))
			rows++, print_event(removed->time_ms, "cancel", cur->resource);
		else
			rows++, print_event(removed->time_ms, "forget", NULL);
	}
	return rows;
}

/*
 * The heading of an address from its newest entry e: its name, and when
 * that entry removed its record, what became of it: moved by `vx state mv`
 * ("vx state mv: OLD -> NEW"), else forgotten.
 */
static void print_heading(const struct state_history_entry *e)
{
	const char *m = e->message, *arrow = m ? strstr(m, " -> ") : NULL;
	char *to = NULL, *clean = NULL;

	if (!e->record && arrow && !strncmp(m, "vx state mv: ", 13) &&
	    (to = vx_asprintf("%.*s", (int)strcspn(arrow + 4, "\n"), arrow + 4)))
		clean = vx_text_clean(to);
	if (e->record)
		printf("%s\n", e->address);
	else if (clean)
		printf("%s  (moved to %s)\n", e->address, clean);
	else
		printf("%s  (forgotten: no longer declared)\n", e->address);
	free(clean);
	free(to);
}

/* Every row of one address: its entries g[0..n), newest first. */
static void print_address(struct state_history_entry *const *g, size_t n, const struct prices *prices)
{
	struct state_history_entry **life = calloc(n + 1, sizeof(*life));
	size_t nlife = 0;
	int rows = 0;

	print_heading(g[0]);
	if (!life) {
		printf("  (out of memory)\n");
		return;
	}
	for (size_t k = n; k-- > 0;) {
		if (g[k]->record) {
			life[nlife++] = g[k];
			continue;
		}
		rows += print_lifetime(life, nlife, g[k], prices);
		nlife = 0;
	}
	if (nlife)
		rows += print_lifetime(life, nlife, NULL, prices);
	if (!rows)
		printf("  (no runs)\n");
	free(life);
}

/* Entries grouped by address; within an address, their order (newest first) is kept. */
struct ordered {
	struct state_history_entry *e;
	size_t pos;
};

static int cmp_ordered(const void *a, const void *b)
{
	const struct ordered *x = a, *y = b;
	int c = strcmp(x->e->address, y->e->address);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static int print_log(struct workspace *ws, const char *addr, const struct prices *prices, struct vx_err *err)
{
	struct state_history_entry *h = NULL, **group = NULL;
	struct state_history_skips skips = STATE_HISTORY_SKIPS_INIT;
	struct ordered *o = NULL;
	size_t n = 0;
	int rc = state_history(ws->backend, addr, 0, &h, &n, &skips, err);

	/* A sweep (job.lr-sweep) or a slice of it (job.lr-sweep[seed=2]): its runs' logs. */
	if (rc == 0 && !n && addr) {
		state_history_free(h, n);
		h = NULL;
		rc = state_history(ws->backend, NULL, 0, &h, &n, &skips, err);
		if (rc == 0)
			n = sweep_history_keep(h, n, addr);
	}
	if (rc < 0)
		return rc;
	cmd_warn_skips(NULL, &skips);
	state_history_skips_release(&skips);
	if (!n) {
		if (addr)
			rc = vx_err_set(err, VX_ENOTFOUND, "%s: no such address in the state or its history",
					addr);
		else
			printf("No runs recorded yet for stack %s.\n", ws->st->name);
		goto done;
	}
	o = calloc(n, sizeof(*o));
	group = calloc(n, sizeof(*group));
	if (!o || !group) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		o[i].e = &h[i];
		o[i].pos = i;
	}
	qsort(o, n, sizeof(*o), cmp_ordered);
	for (size_t i = 0, start = 0; i < n; i++) {
		group[i - start] = o[i].e;
		if (i + 1 < n && !strcmp(o[i + 1].e->address, o[i].e->address))
			continue;
		print_address(group, i - start + 1, prices);
		start = i + 1;
	}
done:
	free(group);
	free(o);
	state_history_free(h, n);
	return rc;
}

static int log_exec(const struct cmd_args *args)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = NULL, *addr = NULL;
	struct prices prices;
	int rc = VX_EXIT_ERROR, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	memset(&prices, 0, sizeof(prices));
	for (size_t i = 0; i < args->npos; i++) {
		const char *a = args->pos[i];

		if (cmd_is_address(a)) {
			if (addr) {
				cmd_error("log: one address at most");
				return VX_EXIT_USAGE;
			}
			addr = a;
		} else if (!cmd_is_dir(a)) {
			cmd_error("log: '%s' is neither an address (such as job.NAME) nor a directory", a);
			return VX_EXIT_USAGE;
		} else if (cmd_dir_arg("log", &dir, &dir_given, a) < 0) {
			return VX_EXIT_USAGE;
		}
	}
	if (cmd_stack_dir(args, dir, &dir) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open_lenient(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	/* A price table that cannot be read costs the figures ("unknown"), not the log. */
	if (prices_load(&prices, ws.st, getenv("VX_PRICES"), &err) < 0) {
		fprintf(stderr, "vx: warning: costs not shown: %s\n", vx_err_msg(&err));
		vx_err_release(&err);
		memset(&prices, 0, sizeof(prices));
	}
	if (print_log(&ws, addr, &prices, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	rc = VX_EXIT_OK;
done:
	prices_release(&prices);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_log_entry = {
	.name = "log",
	.summary = "every action vx took, from the state's history",
	.usage_build = usage_build,
	.exec = log_exec,
	.stack_dir = 1,
};
