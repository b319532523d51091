/* vx report's workflow (workflow/report.h). */
#include "workflow/report.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reconcile/stack.h"
#include "state/backend.h"
#include "util/buf.h"
#include "workflow/budget.h"
#include "workflow/workspace.h"
#include "util/banned.h"

#define REPORT_DEFAULT_SINCE "30d"
#define REPORT_SCAN_DEPTH 3
#define REPORT_MAX_STACKS 1000

/* Whether name ends in .yaml or .yml. */
static int is_yaml(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

/* Whether dir holds a YAML file with a "kind: Stack" line: a stack directory. */
static int holds_stack(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && !found && (e = readdir(d))) {
		struct vx_buf text = VX_BUF_INIT;
		struct vx_err err = VX_ERR_INIT;
		char *path;

		if (e->d_name[0] == '.' || !is_yaml(e->d_name) || !(path = vx_asprintf("%s/%s", dir, e->d_name)))
			continue;
		if (vx_buf_read_file(&text, path, (size_t)4 << 20, &err) == 0)
			for (const char *p = vx_buf_str(&text); p && !found; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
				found = !strncmp(p, "kind: Stack", 11) &&
					(p[11] == '\n' || p[11] == '\r' || p[11] == ' ' || p[11] == '\0');
		vx_buf_release(&text);
		vx_err_release(&err);
		free(path);
	}
	if (d)
		closedir(d);
	return found;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the stack directories under dir (depth levels down, hidden ones skipped) to *out. */
static int find_stacks(const char *dir, int depth, char ***out, size_t *n)
{
	DIR *d;
	struct dirent *e;
	char **subs = NULL;
	size_t nsubs = 0;
	int rc = 0;

	if (holds_stack(dir)) {
		char **p = realloc(*out, (*n + 1) * sizeof(*p));

		if (!p || !(p[*n] = vx_strdup(dir)))
			return (*out = p ? p : *out), VX_ENOMEM;
		*out = p;
		(*n)++;
		return 0;
	}
	if (depth <= 0 || !(d = opendir(dir)))
		return 0;
	while (rc == 0 && (e = readdir(d))) {
		struct stat sb;
		char *path, **p;

		if (e->d_name[0] == '.' || !(path = vx_asprintf("%s/%s", dir, e->d_name))) {
			rc = e->d_name[0] == '.' ? 0 : VX_ENOMEM;
			continue;
		}
		if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode) || !(p = realloc(subs, (nsubs + 1) * sizeof(*p)))) {
			free(path);
			continue;
		}
		subs = p;
		subs[nsubs++] = path;
	}
	closedir(d);
	if (nsubs > 1) /* qsort's base must not be NULL, even for none */
		qsort(subs, nsubs, sizeof(*subs), cmp_str);
	for (size_t i = 0; i < nsubs; i++) {
		if (rc == 0 && *n < REPORT_MAX_STACKS)
			rc = find_stacks(subs[i], depth - 1, out, n);
		free(subs[i]);
	}
	free(subs);
	return rc;
}

/* The budget of ws's stack over its own period ending at now_ms, when it sets one: into s. */
static int add_budget(struct report_session *s, const struct workspace *ws, const char *name, const struct prices *p,
		      int64_t now_ms)
{
	struct budget *b = &s->budgets[s->nbudgets];
	struct report_budget *rb = &s->rbudgets[s->nbudgets];

	if (!ws->st->budget.set)
		return 0;
	if (budget_build_report(b, ws, p, now_ms) < 0)
		return VX_ENOMEM;
	s->nbudgets++;
	rb->stack = name; /* the report_stack's: the workspace is closed after this */
	rb->period = b->r.period;
	rb->limit = b->r.limit;
	rb->spent_known = b->r.spent_known;
	rb->spent = b->r.spent;
	rb->line = b->r.line;
	return 0;
}

/* Reads one stack's history into st, and its budget into s. */
static int read_stack(struct report_stack *rs, struct report_session *s, struct vx_ctx *ctx, const char *dir,
		      const struct workspace_events *ev, int want_prices, int64_t now_ms, struct vx_err *err)
{
	struct prices *prices = &s->prices;
	struct workspace ws;
	int rc;

	memset(&ws, 0, sizeof(ws));
	if ((rc = workspace_open_lenient(&ws, ctx, dir, ev, err)) < 0)
		goto done;
	if (!(rs->name = vx_strdup(ws.st->name)) || !(rs->dir = vx_strdup(dir))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = state_history(ws.backend, NULL, 0, &rs->h, &rs->n, &rs->skips, err)) < 0)
		goto done;
	/* The first stack's table (its prices:, or VX_PRICES, or the built-in one). */
	if (want_prices)
		rc = prices_load(prices, ws.st, NULL, err);
	if (rc == 0 && add_budget(s, &ws, rs->name, prices, now_ms) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	workspace_close(&ws);
	return rc;
}

int report_session_run(struct report_session *s, struct vx_ctx *ctx, const struct report_opts *o,
		       const struct workspace_events *ev, struct vx_err *err)
{
	char **dirs = NULL;
	size_t ndirs = 0;
	int64_t since, until = o->now_ms;
	int rc;

	if ((rc = report_parse_when("since", o->since ? o->since : REPORT_DEFAULT_SINCE, o->now_ms, &since, err)) < 0 ||
	    (o->until && (rc = report_parse_when("until", o->until, o->now_ms, &until, err)) < 0))
		return rc;
	if (until <= since)
		return vx_err_set(err, VX_EINVAL, "-until must be after -since (the window is empty)");
	if ((rc = find_stacks(o->dir, REPORT_SCAN_DEPTH, &dirs, &ndirs)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	if (!ndirs) {
		rc = vx_err_set(err, VX_ENOTFOUND,
				"%s: no stack here or below (a stack is a directory with a \"kind: Stack\" document)",
				o->dir);
		goto done;
	}
	if (!(s->stacks = calloc(ndirs, sizeof(*s->stacks))) || !(s->budgets = calloc(ndirs, sizeof(*s->budgets))) ||
	    !(s->rbudgets = calloc(ndirs, sizeof(*s->rbudgets)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ndirs; i++) {
		struct report_stack *rs = &s->stacks[s->nstacks++];

		if (i == 0 && o->prices_file && *o->prices_file)
			rc = prices_load(&s->prices, NULL, o->prices_file, err);
		if (rc == 0)
			rc = read_stack(rs, s, ctx, dirs[i], ev, i == 0 && !(o->prices_file && *o->prices_file),
					o->now_ms, err);
		if (rc < 0)
			goto done;
		if ((rc = report_input_add_history(&s->in, rs->name, rs->h, rs->n)) < 0) {
			rc = vx_err_set(err, rc, "out of memory");
			goto done;
		}
	}
	rc = report_build(&s->report, &s->in, &s->prices, since, until, o->now_ms, err);
	s->report.budgets = s->rbudgets;
	s->report.nbudgets = s->nbudgets;
done:
	for (size_t i = 0; i < ndirs; i++)
		free(dirs[i]);
	free(dirs);
	return rc;
}

void report_session_release(struct report_session *s)
{
	report_release(&s->report);
	report_input_release(&s->in);
	for (size_t i = 0; i < s->nstacks; i++) {
		free(s->stacks[i].name);
		free(s->stacks[i].dir);
		state_history_free(s->stacks[i].h, s->stacks[i].n);
		state_history_skips_release(&s->stacks[i].skips);
	}
	free(s->stacks);
	for (size_t i = 0; i < s->nbudgets; i++)
		budget_release(&s->budgets[i]);
	free(s->budgets);
	free(s->rbudgets);
	prices_release(&s->prices);
	memset(s, 0, sizeof(*s));
}

int report_recent_spend(const struct workspace *ws, const struct prices *p, int64_t now_ms, double *usd,
			double *preempted_share, struct vx_err *err)
{
	return report_spend_window(ws, p, now_ms - (int64_t)30 * 86400000, now_ms, usd, preempted_share, err);
}

int report_spend_window(const struct workspace *ws, const struct prices *p, int64_t since_ms, int64_t now_ms,
			double *usd, double *preempted_share, struct vx_err *err)
{
	struct state_history_entry *h = NULL;
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	size_t n = 0;
	int rc;

	memset(&r, 0, sizeof(r));
	*usd = *preempted_share = 0;
	/* A spend figure: versions the history cannot read are left out unsaid
	 * (vx report and vx log name them). */
	if ((rc = state_history(ws->backend, NULL, 0, &h, &n, NULL, err)) < 0)
		goto done;
	if ((rc = report_input_add_history(&in, ws->st->name, h, n)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	if ((rc = report_build(&r, &in, p, since_ms, now_ms, now_ms, err)) < 0)
		goto done;
	*usd = r.usd;
	for (size_t i = 0; i < r.nruns; i++)
		if (r.usd > 0 && r.runs[i].priced && !strcmp(r.runs[i].outcome, "preempted"))
			*preempted_share += r.runs[i].usd / r.usd;
done:
	report_release(&r);
	report_input_release(&in);
	state_history_free(h, n);
	return rc;
}

/* Whole dollars from $100 up ("$1,240", "$312"); cents below, so a small sum does not read as $0. */
static int money(struct vx_buf *b, double usd)
{
	return capacity_money(b, "USD", usd, usd >= 100 ? 0 : 2);
}

int report_spend_line(char **out, const struct workspace *ws, const struct prices *p,
		      const struct capacity_report *cap, int64_t now_ms)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct prices own;
	double usd = 0, share = 0;
	int rc, r = 0;

	*out = NULL;
	memset(&own, 0, sizeof(own));
	/* A plan without GPUs loads no table: the history's runs still cost. */
	if (!p || !p->n) {
		r = prices_load(&own, ws->st, vx_getenv(ws->ctx, "VX_PRICES"), &err);
		p = &own;
	}
	rc = vx_buf_adds(&b, "last 30 days: ");
	if (rc == 0 && (r < 0 || report_recent_spend(ws, p, now_ms, &usd, &share, &err) < 0)) {
		if (err.code == VX_ENOMEM)
			rc = VX_ENOMEM;
		else
			rc = vx_buf_printf(&b, "spend unknown (%s: %s)", r < 0 ? "reading the price table"
									 : "reading the state's history",
					   vx_err_msg(&err));
	} else if (rc == 0) {
		rc = money(&b, usd);
		if (rc == 0 && usd > 0)
			rc = vx_buf_printf(&b, " (%.0f%% on preempted runs)", share * 100.0);
	}
	if (rc == 0)
		rc = vx_buf_adds(&b, " · this plan: ");
	if (rc == 0 && (!cap || !cap->any))
		rc = vx_buf_adds(&b, "no GPU job or reservation to price");
	else if (rc == 0 && !cap->delta_known)
		rc = vx_buf_adds(&b, "at most unknown (a price is not in the table)");
	else if (rc == 0) {
		/* The bookings it makes are paid for their whole windows, used or not. */
		rc = vx_buf_adds(&b, "at most ");
		if (rc == 0)
			rc = money(&b, cap->max_total + cap->bookings_total);
	}
	vx_err_release(&err);
	prices_release(&own);
	if (rc < 0) {
		vx_buf_release(&b);
		return VX_ENOMEM;
	}
	*out = vx_buf_detach(&b);
	return *out ? 0 : VX_ENOMEM;
}
