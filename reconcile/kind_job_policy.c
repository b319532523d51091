/*
 * What a `kind: Policy` says of jobs (reconcile/policy_rules.h): each job,
 * each rung of its fallback ladder and each run of a sweep is checked as the
 * loader reads it, at the field that breaks a rule (accelerators, regions,
 * strategies, maxGpusPerJob, maxTimeout, requireLabels); the GPUs active at
 * once once every job is read (maxGpusActive); the rate of each run once a
 * command has a price table (maxHourlyUsd, through the row's check_prices).
 */
#include "reconcile/kind_job_load.h"
#include "reconcile/policy_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/load/machines.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

/* One violation at node at: "PATH: <what> ... policy \"N\" (rules.KEY, FILE:LINE) ...". */
VX_PRINTF(3, 4)
static void violation(struct loader *L, const struct ynode *at, const char *fmt, ...)
{
	struct vx_buf msg = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		stack_oom(L);
	else
		stack_violation(L, at ? at->file : NULL, at ? at->line : 0, at ? at->col : 0, "%s", vx_buf_str(&msg));
	vx_buf_release(&msg);
}

/* "policy \"N\" (rules.KEY, FILE:LINE)" of rule id into b (reset first). */
static const char *where(struct vx_buf *b, const struct policy_rules *p, size_t id)
{
	vx_buf_reset(b);
	return policy_rule_where(b, p, id) < 0 ? "the policy" : vx_buf_str(b);
}

static int listed(const struct policy_rule *r, const char *w)
{
	for (size_t i = 0; i < r->nwords; i++)
		if (!strcmp(r->words[i], w))
			return 1;
	return 0;
}

/* A list rule: value at at (path) must be one of its words. */
static void check_word(struct loader *L, const struct policy_rules *p, size_t id, const struct ynode *at,
		       const char *path, const char *value, const char *note)
{
	struct vx_buf b = VX_BUF_INIT;

	if (p->in_force[id] && !listed(p->in_force[id], value))
		violation(L, at, "%s: %s%s is not allowed by %s", path, value, note, where(&b, p, id));
	vx_buf_release(&b);
}

/* The GPUs of one pool: its accelerators, or those its machine type comes with, per replica. */
static int64_t pool_gpus(const struct spec_pool *pool, const char **type)
{
	const char *fixed = NULL;
	int64_t count = 0;

	*type = pool->accelerator_type;
	if (pool->accelerator_type)
		return pool->accelerator_count * pool->replica_count;
	if (pool->machine_type && machines_fixed_gpus(pool->machine_type, &fixed, &count)) {
		*type = fixed;
		return count * pool->replica_count;
	}
	return 0;
}

/* Every pool's GPUs of a spec (a run's). */
static int64_t spec_gpus(const struct job_spec *s)
{
	const char *type;
	int64_t n = 0;

	for (size_t i = 0; i < s->npools; i++)
		n += pool_gpus(&s->pools[i], &type);
	return n;
}

/* maxGpusPerJob over a run's spec, reported at at (path). */
static void check_gpus(struct loader *L, const struct policy_rules *p, const struct ynode *at, const char *path,
		       const struct job_spec *s)
{
	const struct policy_rule *r = p->in_force[POLICY_MAX_GPUS_PER_JOB];
	struct vx_buf b = VX_BUF_INIT;
	int64_t n = spec_gpus(s);

	if (r && (double)n > r->num)
		violation(L, at, "%s: %lld GPUs is more than %s allows (at most %g)", path,
			  (long long)n, where(&b, p, POLICY_MAX_GPUS_PER_JOB), r->num);
	vx_buf_release(&b);
}

/* maxTimeout: scheduling.timeout set and within it. set_at: the timeout's node, or NULL when unset. */
static void check_timeout(struct loader *L, const struct policy_rules *p, const struct ynode *set_at,
			  const struct ynode *unset_at, const char *path, const struct job_spec *s)
{
	const struct policy_rule *r = p->in_force[POLICY_MAX_TIMEOUT];
	struct vx_buf b = VX_BUF_INIT;
	char max[32], got[32];

	if (!r)
		return;
	if (s->timeout_s < 0)
		violation(L, unset_at, "%s: not set, and %s requires a timeout of at most %s",
			  path, where(&b, p, POLICY_MAX_TIMEOUT), policy_num_text(max, POLICY_MAX_TIMEOUT, r->num));
	else if ((double)s->timeout_s > r->num)
		violation(L, set_at ? set_at : unset_at, "%s: %s is more than %s allows (at most %s)",
			  path, policy_num_text(got, POLICY_MAX_TIMEOUT, (double)s->timeout_s),
			  where(&b, p, POLICY_MAX_TIMEOUT), policy_num_text(max, POLICY_MAX_TIMEOUT, r->num));
	vx_buf_release(&b);
}

/* The node at spec.workerPoolSpecs[i].machineSpec (.key when key is not NULL), or NULL. */
static const struct ynode *pool_node(const struct ynode *spec, size_t i, const char *key)
{
	const struct ynode *pools = ynode_get(spec, "workerPoolSpecs"), *ms;

	if (!pools || pools->kind != YNODE_SEQ || i >= pools->n)
		return NULL;
	ms = ynode_get(pools->items[i], "machineSpec");
	return key ? ynode_get(ms, key) : ms;
}

/* accelerators over each pool of the job's own spec. */
static void check_job_accels(struct loader *L, const struct policy_rules *p, const struct ynode *spec,
			     const struct job_spec *s)
{
	char path[96];

	for (size_t i = 0; p->in_force[POLICY_ACCELERATORS] && i < s->npools; i++) {
		const struct ynode *at = pool_node(spec, i, "acceleratorType");
		const char *type;

		if (!pool_gpus(&s->pools[i], &type) || !type)
			continue;
		if (!at)
			at = pool_node(spec, i, NULL) ? pool_node(spec, i, NULL) : spec;
		snprintf(path, sizeof(path), "spec.workerPoolSpecs[%zu].machineSpec.%s", i,
			 s->pools[i].accelerator_type ? "acceleratorType" : "machineType");
		check_word(L, p, POLICY_ACCELERATORS, at, path, type, "");
	}
}

/* requireLabels over the job's labels (the Stack's and its own). */
static void check_labels(struct loader *L, const struct policy_rules *p, const struct ynode *doc,
			 const struct stack_job *j)
{
	const struct policy_rule *r = p->in_force[POLICY_REQUIRE_LABELS];
	const struct ynode *at = ynode_get(doc, "labels") ? ynode_get(doc, "labels") : doc;
	struct vx_buf b = VX_BUF_INIT;

	for (size_t i = 0; r && i < r->nwords; i++)
		if (!stack_labels_get(&j->labels, r->words[i]))
			violation(L, at, "labels: no \"%s\" label, which %s requires",
				  r->words[i], where(&b, p, POLICY_REQUIRE_LABELS));
	vx_buf_release(&b);
}

/* The job's place in the job kind's slot (its index in stack_jobs). */
static size_t job_index(const struct stack *st, const struct stack_job *j)
{
	const struct stack_kind_decls *s = stack_slot_c(st, &kind_job);

	return (size_t)(j - (const struct stack_job *)s->items);
}

/* The rules over the job's own spec (rung 0), at the fields of doc that set them. */
static void check_job(struct loader *L, const struct stack *st, const struct stack_job *j, const struct ynode *doc)
{
	const struct policy_rules *p = st->policy;
	const struct ynode *spec = ynode_get(doc, "spec"), *sched = ynode_get(spec, "scheduling");
	const struct ynode *pools = ynode_get(spec, "workerPoolSpecs");
	const struct ynode *region = ynode_get(doc, "region");
	const struct ynode *strategy = ynode_get(sched, "strategy");

	check_word(L, p, POLICY_REGIONS, region ? region : doc, "region", j->region,
		   region ? "" : " (the Stack's)");
	check_job_accels(L, p, spec, &j->spec);
	check_word(L, p, POLICY_STRATEGIES, strategy ? strategy : spec, "spec.scheduling.strategy", j->spec.strategy,
		   strategy ? "" : " (not set: on demand)");
	check_gpus(L, p, pools ? pools : spec, "spec.workerPoolSpecs", &j->spec);
	check_timeout(L, p, ynode_get(sched, "timeout"), spec, "spec.scheduling.timeout", &j->spec);
	check_labels(L, p, doc, j);
	(void)policy_rules_add_rate_site(L, (struct stack *)(uintptr_t)st, pools ? pools : spec, "spec.workerPoolSpecs",
					 job_index(st, j), 0);
}

/* The rules over rung k + 1 of the ladder, at what the rung itself writes. */
static void check_rung(struct loader *L, const struct stack *st, const struct stack_job *j, size_t k,
		       const struct ynode *rung)
{
	const struct policy_rules *p = st->policy;
	const struct stack_rung *r = &j->rungs[k];
	const struct ynode *ms = ynode_get(rung, "machineSpec"), *sched = ynode_get(rung, "scheduling");
	const struct ynode *at;
	char path[96];
	const char *type;

	if (!r->spec.canonical_json || !r->region)
		return;
	if ((at = ynode_get(rung, "region")) != NULL) {
		snprintf(path, sizeof(path), "resubmit.fallback[%zu].region", k);
		check_word(L, p, POLICY_REGIONS, at, path, r->region, "");
	}
	for (size_t i = 0; ms && i < r->spec.npools; i++) {
		if (!pool_gpus(&r->spec.pools[i], &type) || !type)
			continue;
		at = ynode_get(ms, "acceleratorType") ? ynode_get(ms, "acceleratorType") : ms;
		snprintf(path, sizeof(path), "resubmit.fallback[%zu].machineSpec.%s", k,
			 r->spec.pools[i].accelerator_type ? "acceleratorType" : "machineType");
		check_word(L, p, POLICY_ACCELERATORS, at, path, type, "");
		break; /* the rung's machineSpec is every accelerator pool's: once */
	}
	snprintf(path, sizeof(path), "resubmit.fallback[%zu].machineSpec", k);
	if (ms)
		check_gpus(L, p, ms, path, &r->spec);
	snprintf(path, sizeof(path), "resubmit.fallback[%zu].scheduling.strategy", k);
	if ((at = ynode_get(sched, "strategy")) != NULL)
		check_word(L, p, POLICY_STRATEGIES, at, path, r->spec.strategy, "");
	snprintf(path, sizeof(path), "resubmit.fallback[%zu].scheduling.timeout", k);
	if ((at = ynode_get(sched, "timeout")) != NULL)
		check_timeout(L, p, at, at, path, &r->spec);
	snprintf(path, sizeof(path), "resubmit.fallback[%zu]", k);
	(void)policy_rules_add_rate_site(L, (struct stack *)(uintptr_t)st, rung, path, job_index(st, j), k + 1);
}

void kind_job_policy_check(struct loader *L, const struct stack *st, const struct stack_job *j,
			   const struct ynode *doc)
{
	const struct ynode *m = ynode_get(doc, "resubmit"), *ladder = ynode_get(m, "fallback");

	if (!st->policy || !j->spec.canonical_json || !j->region)
		return;
	L->about = j->d.address;
	check_job(L, st, j, doc);
	for (size_t k = 0; ladder && ladder->kind == YNODE_SEQ && k < j->nrungs && k < ladder->n; k++) {
		L->about_rung = (int64_t)k + 1;
		check_rung(L, st, j, k, ladder->items[k]);
	}
	L->about_rung = 0;
	L->about = NULL;
}

/*
 * Whether job i would be active at once with the others when all start: a
 * job declared alone always; a sweep's run when it is among the first
 * maxParallel of its sweep.
 */
static int active_at_once(const struct stack *st, const struct stack_job *jobs, size_t i)
{
	const struct stack_sweep *sw;

	if (!jobs[i].sweep)
		return 1;
	sw = &stack_sweeps(st, NULL)[jobs[i].sweep - 1];
	return !sw->max_parallel || i - sw->first < (size_t)sw->max_parallel;
}

void kind_job_policy_active(struct loader *L, const struct stack *st)
{
	const struct policy_rule *r = st->policy ? st->policy->in_force[POLICY_MAX_GPUS_ACTIVE] : NULL;
	struct vx_buf b = VX_BUF_INIT;
	size_t n;
	const struct stack_job *jobs = stack_jobs(st, &n);
	int64_t total = 0, gpus;

	for (size_t i = 0; r && i < n; i++) {
		if (!jobs[i].d.name || !jobs[i].spec.canonical_json || !active_at_once(st, jobs, i))
			continue;
		gpus = spec_gpus(&jobs[i].spec);
		total += gpus;
		if (!gpus || (double)total <= r->num)
			continue;
		snprintf(L->prefix, sizeof(L->prefix), "%s \"%.100s\": ", kind_job.name, jobs[i].d.name);
		/* about the whole stack (L->about NULL): any job's start adds to the GPUs at once */
		stack_violation(L, jobs[i].d.file, jobs[i].d.line, jobs[i].d.col, "spec.workerPoolSpecs: its %lld GPUs "
										  "take the GPUs of the stack's jobs active at once to %lld, more than %s allows (at most %g)",
				(long long)gpus, (long long)total, where(&b, st->policy, POLICY_MAX_GPUS_ACTIVE), r->num);
	}
	vx_buf_release(&b);
}

/* One rate over the rule at site s: a diagnostic, or a violation about the job when held (a lenient load). */
VX_PRINTF(5, 6)
static int rate_over(struct vx_diags *diags, struct policy_rules *held, const struct stack_job *j,
		     const struct policy_rate_site *s, const char *fmt, ...)
{
	struct vx_buf msg = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_printf(&msg, "%s \"%s\": %s: ", kind_job.name, j->d.name, s->prefix);
	if (rc == 0)
		rc = vx_buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc == 0)
		rc = held ? policy_rules_add_violation(held, s->file, s->line, s->col, j->d.address, vx_buf_str(&msg))
			  : vx_diags_add(diags, s->file, s->line, s->col, "%s", vx_buf_str(&msg));
	if (rc == 0 && held)
		held->violations[held->nviolations - 1].rung = (int64_t)s->rung;
	vx_buf_release(&msg);
	return rc < 0 ? VX_ENOMEM : 0;
}

int kind_job_policy_rates(const struct stack *st, const struct prices *prices, struct vx_diags *diags,
			  struct policy_rules *held)
{
	const struct policy_rules *p = st->policy;
	const struct policy_rule *r = p->in_force[POLICY_MAX_HOURLY_USD];
	struct vx_buf b = VX_BUF_INIT;
	size_t n;
	const struct stack_job *jobs = stack_jobs(st, &n);
	int rc = 0;

	for (size_t i = 0; i < p->nsites && rc == 0; i++) {
		const struct policy_rate_site *s = &p->sites[i];
		const struct stack_job *j = s->job < n ? &jobs[s->job] : NULL;
		const struct job_spec *spec = j ? stack_job_rung_spec(j, (int64_t)s->rung) : NULL;
		const char *json = spec ? (spec->redacted_json ? spec->redacted_json : spec->canonical_json) : NULL;
		int upper = 0, estimate = 0;
		double rate;

		if (!json)
			continue;
		rate = prices_spec_rate(prices, stack_job_rung_region(j, (int64_t)s->rung), json, &upper, &estimate);
		if (rate >= 0 && rate <= r->num)
			continue;
		if (rate < 0)
			rc = rate_over(diags, held, j, s, "the price table (%s) has no rate for this run, so %s cannot "
							  "be held",
				       prices->source ? prices->source : "built-in",
				       where(&b, p, POLICY_MAX_HOURLY_USD));
		else
			rc = rate_over(diags, held, j, s, "$%.2f per hour (%s) is more than %s allows (at most $%g)", rate,
				       prices->source ? prices->source : "built-in", where(&b, p, POLICY_MAX_HOURLY_USD),
				       r->num);
	}
	vx_buf_release(&b);
	return rc < 0 ? VX_ENOMEM : 0;
}
