/*
 * The job kind's price limits (docs/budgets.md): a CustomJob's maxHourlyUsd
 * (on a sweep, every run's) against the rate of each of its rungs in the
 * price table in force, for vx validate and the plan (its check_prices slot).
 */
#include "reconcile/kind_job.h"

#include <stdint.h>
#include <stdlib.h>

#include "reconcile/capacity.h"
#include "reconcile/kind_job_load.h"
#include "reconcile/load/spec.h"
#include "reconcile/policy_rules.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

/* Which rung runs at the rate: "the declared job" or "rung 2 (resubmit.fallback[1])". */
static int rung_name(struct vx_buf *b, int64_t rung)
{
	if (rung == 0)
		return vx_buf_adds(b, "the declared job");
	return vx_buf_printf(b, "rung %lld (resubmit.fallback[%lld])", (long long)rung, (long long)(rung - 1));
}

/*
 * The problem of job j on rung r against its maxHourlyUsd, into out: "...:
 * maxHourlyUsd: $52.35/h on the declared job is over $40.00/h (SHAPE in
 * REGION; prices: SOURCE, DATE)". An unknown rate is a problem too: unknown
 * is never under a limit. 0, or VX_ENOMEM.
 */
static int check_rung(const struct stack_job *j, int64_t r, const struct prices *p, struct vx_diags *out)
{
	const struct job_spec *spec = stack_job_rung_spec(j, r);
	const char *region = stack_job_rung_region(j, r), *missing = NULL;
	struct vx_buf b = VX_BUF_INIT;
	char *shape = NULL;
	double rate = prices_job_rate(p, region, spec, NULL, NULL, &missing);
	int rc;

	if (rate >= 0 && rate <= j->max_hourly_usd)
		return 0;
	if (!(shape = job_spec_shape(spec)))
		return VX_ENOMEM;
	rc = vx_buf_printf(&b, "CustomJob \"%s\": maxHourlyUsd: ", j->d.name);
	if (rc == 0 && rate < 0)
		rc = vx_buf_adds(&b, "the rate of ");
	else if (rc == 0 && (rc = capacity_money(&b, "USD", rate, 2)) == 0)
		rc = vx_buf_adds(&b, "/h on ");
	if (rc == 0)
		rc = rung_name(&b, r);
	if (rc == 0 && rate < 0)
		rc = vx_buf_printf(&b, " is unknown (no published price for %s in %s), so it cannot be held to ",
				   missing ? missing : "its machines", region);
	else if (rc == 0)
		rc = vx_buf_adds(&b, " is over ");
	if (rc == 0)
		rc = capacity_money(&b, "USD", j->max_hourly_usd, 2);
	if (rc == 0)
		rc = vx_buf_printf(&b, "/h (%s in %s; prices: %s, %s)", shape, region, p->source ? p->source : "?",
				   p->date ? p->date : "undated");
	if (rc == 0)
		rc = vx_diags_add(out, j->d.file, j->max_hourly_line, j->max_hourly_col, "%s", vx_buf_str(&b));
	free(shape);
	vx_buf_release(&b);
	return rc < 0 ? VX_ENOMEM : 0;
}

/* Capacity failures move a run down its ladder (plan_next_rung), and so does
 * maxQueued (a queue-timeout needs no entry in `on`); no other class does. */
#define LADDER_MOVES (STACK_FAIL_STOCKOUT | STACK_FAIL_PREEMPTED | STACK_FAIL_WAIT_TIMEOUT)

/*
 * What one attempt on rung r of j costs at most: the rung's rate x its
 * timeout (7 days when unset). -1 when a price is unknown, with why (owned)
 * naming what the table lacks.
 */
static double rung_most(const struct stack_job *j, int64_t r, const struct prices *p, char **why)
{
	const struct job_spec *spec = stack_job_rung_spec(j, r);
	const char *region = stack_job_rung_region(j, r), *missing = NULL;
	double rate = prices_job_rate(p, region, spec, NULL, NULL, &missing);
	int64_t timeout_s = spec->timeout_s > 0 ? spec->timeout_s : CAPACITY_DEFAULT_TIMEOUT_S;

	if (rate >= 0)
		return rate * (double)timeout_s / 3600.0;
	if (why && !*why && missing)
		*why = vx_asprintf("no published price for %s in %s (rung %lld of the fallback ladder)", missing,
				   region, (long long)r);
	return -1;
}

double kind_job_attempts_most(const struct stack_job *j, int64_t rung, int first_moves, int64_t attempts,
			      const struct prices *p, char **why)
{
	int64_t last = (int64_t)j->nrungs;
	int moves = j->nrungs && ((j->resubmit_on & LADDER_MOVES) || j->max_queued_ms > 0);
	int returns = moves && j->return_after_ms > 0;
	double most[STACK_MAX_RUNGS + 1], total = 0;

	if (rung < 0)
		rung = 0;
	if (rung > last)
		rung = last;
	/* The rung the first attempt goes to (one down after a capacity failure). */
	if (first_moves && moves && rung < last)
		rung++;
	for (int64_t r = 0; r <= last; r++)
		most[r] = -2; /* not priced yet: only the rungs a run may reach are */
	for (int64_t i = 0; i < attempts; i++) {
		/* Attempt i after the first may be i rungs further down (each capacity failure
		 * moves one), or, with returnAfter, back at any rung from 0 on. */
		int64_t reach = moves ? i : 0;
		int64_t lo = returns && (reach > 0 || first_moves) ? 0 : rung;
		int64_t hi = rung + reach > last ? last : rung + reach;
		double top = 0;

		for (int64_t r = lo; r <= hi; r++) {
			if (most[r] == -2)
				most[r] = rung_most(j, r, p, why);
			if (most[r] < 0)
				return -1;
			if (most[r] > top)
				top = most[r];
		}
		total += top;
	}
	return total;
}

int kind_job_check_prices(const struct stack *st, const struct prices *p, struct vx_diags *out)
{
	size_t n = 0;
	const struct stack_job *jobs = stack_jobs(st, &n);
	int rc = 0, policy = st->policy && st->policy->in_force[POLICY_MAX_HOURLY_USD];
	struct policy_rules *held;

	for (size_t i = 0; i < n; i++) {
		if (jobs[i].max_hourly_usd <= 0)
			continue;
		if (!p)
			return 1;
		for (int64_t r = 0; r <= (int64_t)jobs[i].nrungs && rc == 0; r++)
			rc = check_rung(&jobs[i], r, p, out);
		if (rc < 0)
			return rc;
	}
	/* The policy's rule in force, on every job and rung (reconcile/kind_job_policy.c). A stack
	 * loaded leniently (the watcher's) keeps what breaks it as violations of its own, found once
	 * however many plans are made of it: the watcher holds those jobs rather than failing. */
	if (!p || !policy)
		return p ? 0 : policy;
	held = st->policy->lenient ? st->policy : NULL;
	if (held && held->rates_held)
		return 0;
	rc = kind_job_policy_rates(st, p, out, held);
	if (rc == 0 && held)
		held->rates_held = 1;
	return rc;
}
