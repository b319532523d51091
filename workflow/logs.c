#include "workflow/logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/suggest.h"
#include "workflow/workspace.h"

#include "util/banned.h"

#define LOGS_MAX_PAGES 1000

/*
 * What a follow has shown, for the lines a read may see again: the newest time,
 * and the insertIds of the lines shown within LOGS_LAG_MS of it (older ones are
 * outside every later read's filter, so they are forgotten; at most
 * LOGS_SEEN_MAX are kept, the oldest dropped first).
 */
struct seen_line {
	char *id;
	int64_t ms;
};

struct seen {
	int64_t max_ms;
	struct seen_line *items;    /* in the order shown */
	size_t n, cap;
};

static void seen_release(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i].id);
	free(s->items);
	memset(s, 0, sizeof(*s));
}

/* The lower bound of the next read's filter: a few seconds behind the newest line
 * shown, so a line that reaches Cloud Logging late (from another replica) is read. */
static int64_t seen_since(const struct seen *s)
{
	return s->max_ms > LOGS_LAG_MS ? s->max_ms - LOGS_LAG_MS : 0;
}

/* Forgets the lines no read can return again, and the oldest past LOGS_SEEN_MAX - 1. */
static void seen_prune(struct seen *s)
{
	int64_t since = seen_since(s);
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (s->items[i].ms >= since && s->n - i < LOGS_SEEN_MAX) {
			s->items[k++] = s->items[i];
			continue;
		}
		free(s->items[i].id);
	}
	s->n = k;
}

/* Whether e is new; records it when it is. -1 on OOM. */
static int seen_add(struct seen *s, const struct live_log_entry *e)
{
	/* Older than what the filter asks for: shown already, or too late to show in order. */
	if (s->max_ms && e->time_ms < seen_since(s))
		return 0;
	/* Only a line no newer than the newest shown can have been shown. */
	for (size_t i = 0; e->time_ms <= s->max_ms && i < s->n; i++)
		if (s->items[i].ms == e->time_ms && !strcmp(s->items[i].id, e->insert_id))
			return 0;
	if (VX_ALLOC_GROW(s->items, s->n + 1, s->cap) < 0)
		return -1;
	if (!(s->items[s->n].id = strdup(e->insert_id)))
		return -1;
	s->items[s->n++].ms = e->time_ms;
	if (e->time_ms > s->max_ms)
		s->max_ms = e->time_ms;
	if (s->n >= LOGS_SEEN_MAX || s->items[0].ms < seen_since(s))
		seen_prune(s);
	return 1;
}

/* "job.lr[lr=...,seed=...]": the address form of run's sweep, its axes from run's address. */
static int run_form(struct vx_buf *b, const char *run)
{
	int rc = 0, in_value = 0;

	for (const char *p = run; *p && rc == 0; p++) {
		if (*p == '=' && !in_value)
			rc = vx_buf_adds(b, "=...");
		else if (*p == ',' || *p == ']')
			rc = vx_buf_addc(b, *p);
		if (*p == '=' || *p == ',' || *p == ']')
			in_value = *p == '=';
		else if (!in_value)
			rc = rc ? rc : vx_buf_addc(b, *p);
	}
	return rc;
}

/*
 * address (its NAME: name) has no record: 0 when it is a declared job (it
 * has not run yet), else the error that says what it is: a sweep or a slice
 * of one (whose runs each have their own lines), or no job of the stack at
 * all.
 */
static int not_a_job(struct workspace *ws, const char *address, const char *name, struct vx_err *err)
{
	const struct stack *st = ws->st;
	struct vx_buf runs = VX_BUF_INIT, form = VX_BUF_INIT;
	const char **names = NULL, *near, *first = NULL;
	const struct stack_job *jobs;
	const struct stack_sweep *sw;
	size_t n = 0, k = 0, njobs, nsw;
	int rc = 0;

	if (!st || stack_find_job(st, name))
		return 0;
	jobs = stack_jobs(st, &njobs);
	sw = stack_sweeps(st, &nsw);
	for (size_t i = 0; i < nsw && rc == 0; i++)
		for (size_t j = sw[i].first; j < sw[i].first + sw[i].n && rc == 0; j++)
			if (sweep_address_matches(address, jobs[j].d.address)) {
				first = first ? first : jobs[j].d.address;
				if (n++ < 4)
					rc = vx_buf_printf(&runs, "%s%s", n > 1 ? ", " : "", jobs[j].d.address);
			}
	if (rc == 0 && first && (rc = run_form(&form, first)) == 0)
		rc = vx_err_set(err, VX_EINVAL, "%s is %s: vx logs reads the lines of one of its %zu run%s, "
				"%s: %s%s", address, strchr(address, '[') ? "a slice of a sweep" : "a sweep", n,
				n == 1 ? "" : "s", vx_buf_str(&form), vx_buf_str(&runs), n > 4 ? ", ..." : "");
	if (rc == 0 && !first) {
		if (!(names = calloc(njobs + nsw + ws->state.nrecords + 1, sizeof(*names))))
			rc = VX_ENOMEM;
		for (size_t i = 0; names && i < njobs; i++)
			names[k++] = jobs[i].d.address;
		for (size_t i = 0; names && i < ws->state.nrecords; i++)
			names[k++] = ws->state.records[i].address;
		near = names ? vx_suggest(address, names, k) : NULL;
		if (names)
			rc = vx_err_set(err, VX_ENOTFOUND, "%s: no such job is declared in the stack%s%s%s", address,
					near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
	}
	free(names);
	vx_buf_release(&runs);
	vx_buf_release(&form);
	return rc == VX_ENOMEM ? vx_err_set(err, VX_ENOMEM, "out of memory") : rc;
}

/* The run whose lines are read: address's current one, with a resource name. */
static int logs_run(struct workspace *ws, const char *address, const struct state_run **out,
		    struct vx_err *err)
{
	const struct state_record *r = state_find(&ws->state, address);
	const struct kind *k = kind_of_address(address);
	int rc;

	/* Only a kind whose runs write to Cloud Logging (has_logs: a job) has lines. */
	if (!k || !k->has_logs)
		return vx_err_set(err, VX_EINVAL, "%s: vx logs reads the lines of a job (job.NAME, or a sweep's "
				  "run job.NAME[k=v])", address);
	if (!r && (rc = not_a_job(ws, address, kind_address_name(k, address), err)) < 0)
		return rc;
	if (!r)
		return vx_err_set(err, VX_ENOTFOUND, "%s has no run in the state yet: vxapply starts it, then "
				  "vx logs %s shows its lines ('vx state list' lists the addresses that have "
				  "runs; a sweep's lines are its runs', job.NAME[k=v])", address, address);
	if (!r->current || !r->current->resource)
		return vx_err_set(err, VX_ENOTFOUND, "%s has no job to read lines from: %s", address,
				  r->current ? "its last create never answered (vxplan finds the job or plans it "
				  "again)" : "no current run (vx log shows its history)");
	*out = r->current;
	return 0;
}

/* "projects/P/locations/R/customJobs/ID": P and ID (borrowed into bufs). -1 when not that form. */
static int split_name(const char *name, char *project, size_t np, char *id, size_t nid)
{
	const char *p = name + 9, *slash, *jobs;

	if (strncmp(name, "projects/", 9) || !(slash = strchr(p, '/')) || !(jobs = strstr(slash, "/customJobs/")))
		return -1;
	jobs += 12;
	if ((size_t)(slash - p) >= np || strlen(jobs) >= nid || !*jobs || strspn(jobs, "0123456789") != strlen(jobs))
		return -1;
	snprintf(project, np, "%.*s", (int)(slash - p), p);
	snprintf(id, nid, "%s", jobs);
	return 0;
}

/* Every page of filter's lines: the new ones to ev. *got: how many were new. */
static int read_all(struct workspace *ws, const char *project, const char *filter, struct seen *seen,
		    const struct logs_events *ev, size_t *got, struct vx_err *err)
{
	struct live_log_page pg;
	char *token = NULL;
	int rc = 0;

	*got = 0;
	for (int page = 0; page < LOGS_MAX_PAGES; page++) {
		rc = ws->prov->list_log_entries(ws->prov, project, filter, token, &pg, err);
		free(token);
		token = NULL;
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < pg.n && rc == 0; i++) {
			int fresh = seen_add(seen, &pg.items[i]);

			if (fresh < 0)
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			else if (fresh && ev->line) {
				ev->line(ev->ud, &pg.items[i]);
				(*got)++;
			}
		}
		token = pg.next_token;
		pg.next_token = NULL;
		live_log_page_release(&pg);
		if (rc < 0 || !token)
			break;
	}
	free(token);
	return rc;
}

/* -f: whether the job has ended (its state into *state, owned). */
static int ended(struct workspace *ws, const char *resource, char **state, struct vx_err *err)
{
	struct live_job lj;
	int rc;

	*state = NULL;
	if (!PROVIDER_HAS(ws->prov, job, get))
		return 0;
	if ((rc = provider_job_get(ws->prov, resource, &lj, NULL, err)) < 0)
		return rc;
	rc = job_state_is_terminal(lj.state);
	if (rc && !(*state = strdup(lj.state)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	live_job_release(&lj);
	return rc;
}

int logs_read(struct workspace *ws, const char *address, const struct logs_opts *o,
	      const struct logs_events *ev, struct vx_err *err)
{
	const struct state_run *run = NULL;
	struct seen seen = { 0, NULL, 0, 0 };
	char project[128], id[32], since[STATE_TIME_MAX], *filter = NULL, *state = NULL;
	int64_t wait = o->poll_ms > 0 ? o->poll_ms : 2000;
	size_t got;
	int rc, done = 0;

	if ((rc = workspace_load_state(ws, err)) < 0 || (rc = logs_run(ws, address, &run, err)) < 0)
		return rc;
	if (split_name(run->resource, project, sizeof(project), id, sizeof(id)) < 0)
		return vx_err_set(err, VX_EINVAL, "%s: the state names no job resource (%.200s)", address,
				  run->resource);
	if (run->project && strlen(run->project) < sizeof(project))
		snprintf(project, sizeof(project), "%s", run->project);
	if ((rc = workspace_provider(ws, err)) < 0)
		return rc;
	if (!ws->prov->list_log_entries)
		return vx_err_set(err, VX_EINVAL, "this provider cannot read logs");
	for (;;) {
		free(filter);
		state_time_format(seen_since(&seen), since);
		filter = seen.max_ms ? vx_asprintf("resource.type=\"ml_job\" AND resource.labels.job_id=\"%s\" AND "
						   "timestamp>=\"%s\"", id, since)
				     : vx_asprintf("resource.type=\"ml_job\" AND resource.labels.job_id=\"%s\"", id);
		if (!filter) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		if ((rc = read_all(ws, project, filter, &seen, ev, &got, err)) < 0 || !o->follow || done)
			break;
		/* Ended: one more read for the lines written meanwhile, then stop. */
		if ((rc = ended(ws, run->resource, &state, err)) < 0)
			break;
		if (rc > 0) {
			done = 1;
			continue;
		}
		wait = got ? (o->poll_ms > 0 ? o->poll_ms : 2000) : wait * 3 / 2;
		if (wait > LOGS_POLL_MAX_MS)
			wait = LOGS_POLL_MAX_MS;
		if (vx_interrupted(ws->ctx))
			break;
		vx_sleep_ms(ws->ctx, wait);
		if (vx_interrupted(ws->ctx))
			break;
	}
	if (rc >= 0 && done && ev->ended)
		ev->ended(ev->ud, run->resource, state);
	free(state);
	free(filter);
	seen_release(&seen);
	return rc < 0 ? rc : 0;
}
