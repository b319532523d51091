/*
 * The fallback ladder of a job (docs/format.md): the region and shape of
 * each rung, where the current run stands on today's ladder (known by what
 * its rung is, not by its position), whether it moved, and what a rung is
 * (job_rung_id), as the state records it.
 */
#include "reconcile/kind_job_internal.h"

#include <stdint.h>
#include <string.h>

#include "reconcile/kind_job.h"
#include "reconcile/load/spec.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

int64_t plan_next_rung(int64_t rung, const char *cls, size_t nrungs)
{
	int64_t last = nrungs > 1 ? (int64_t)nrungs - 1 : 0;

	if (rung < 0)
		rung = 0;
	if (rung > last)
		rung = last;
	/* Only "no capacity here" moves: the same code fails the same way on
	 * another rung after user-error, quota or internal. A run that waited
	 * out resubmit.maxQueued found none either. */
	if (cls &&
	    (!strcmp(cls, "stockout") || !strcmp(cls, "wait-timeout") || !strcmp(cls, "preempted") ||
	     !strcmp(cls, "queue-timeout")) &&
	    rung < last)
		rung++;
	return rung;
}

/* The region and shape of rung k of d's ladder (past the last: the last). */
const char *job_rung_region(const struct plan_decl *d, int64_t k)
{
	if (k <= 0 || d->nrungs < 2 || !d->rung_regions)
		return d->region;
	return d->rung_regions[(uint64_t)k >= d->nrungs ? d->nrungs - 1 : (size_t)k];
}

static const char *rung_shape(const struct plan_decl *d, int64_t k)
{
	if (k <= 0 || d->nrungs < 2 || !d->rung_shapes)
		return d->shape;
	return d->rung_shapes[(uint64_t)k >= d->nrungs ? d->nrungs - 1 : (size_t)k];
}

/* A new run goes on rung k: its region and shape are the rung's. */
void job_set_rung(struct builder *b, struct plan_action *a, const struct plan_decl *d, int64_t k)
{
	job_action_mut(a)->rung = k;
	job_set_str(b, &a->region, job_rung_region(d, k));
	job_set_str(b, &a->shape, rung_shape(d, k));
}

static int rung_id_is(const struct plan_rung_id *x, const struct plan_rung_id *y)
{
	return vx_text_same(x->region, y->region) && vx_text_same(x->scheduling, y->scheduling) &&
	       vx_text_same(x->machine, y->machine) && vx_text_same(x->reservation, y->reservation);
}

/*
 * Where the current run stands on today's ladder. A run whose rung's
 * identity is recorded is known by what its rung is (region, scheduling,
 * machine, reservation), not by position: removing or reordering other
 * rungs leaves it on its rung, now at *at. Returns 1 when found (or when
 * the run's rung is known by position alone, a state from before the
 * identity was recorded), 0 when its rung is no longer on the ladder (*at
 * is then the position it had, clamped to the ladder).
 */
int job_run_rung(const struct plan_run *cur, const struct plan_decl *d, int64_t *at)
{
	size_t n = d->nrungs > 1 ? d->nrungs : 1;
	struct plan_rung_id id = cur->rung_id;

	*at = cur->rung < 0 ? 0 : cur->rung;
	if (!cur->rung_id.scheduling || !d->rung_ids)
		return 1;
	if ((uint64_t)*at >= n)
		*at = (int64_t)n - 1;
	id.region = cur->region;
	/* The same rung may be on the ladder twice: its own position first. */
	if ((uint64_t)cur->rung < n && rung_id_is(&d->rung_ids[cur->rung], &id))
		return 1;
	for (size_t k = 0; k < n; k++)
		if (rung_id_is(&d->rung_ids[k], &id)) {
			*at = (int64_t)k;
			return 1;
		}
	return 0;
}

/* "SPOT g2-standard-4 in us-east5 (reservation r)", for the plan's reason. */
char *job_rung_words(const struct plan_run *cur)
{
	return vx_asprintf("%s %s in %s%s%s%s", cur->rung_id.scheduling,
			   cur->rung_id.machine ? cur->rung_id.machine : "?", cur->region ? cur->region : "?",
			   cur->rung_id.reservation ? " (reservation " : "",
			   cur->rung_id.reservation ? cur->rung_id.reservation : "",
			   cur->rung_id.reservation ? ")" : "");
}

/*
 * Whether the current run lives somewhere other than where the job is now
 * declared: the Stack's project or the job's region changed. A run of an
 * older state has no project recorded; it is taken to be in the declared one.
 * A run whose rung is known by identity is never "moved" by its region: its
 * rung is on the ladder (it stays) or not (job_run_rung says so).
 */
int job_run_moved(const struct plan_run *cur, const struct plan_decl *d)
{
	const char *region = job_rung_region(d, cur->rung);

	if (cur->project && d->project && strcmp(cur->project, d->project) != 0)
		return 1;
	if (cur->rung_id.scheduling && d->rung_ids)
		return 0;
	/* A run on a rung of the ladder lives in that rung's region. A rung the
	 * ladder no longer has moves no run: editing the ladder is no reason to
	 * run a finished job again (or cancel a running one). */
	if (cur->rung > 0 && (d->nrungs < 2 || (uint64_t)cur->rung >= d->nrungs))
		return 0;
	return cur->region && region && strcmp(cur->region, region) != 0;
}

void job_rung_id(struct plan_rung_id *out, const struct stack_job *j, int64_t k)
{
	const struct job_spec *spec = stack_job_rung_spec(j, k);

	memset(out, 0, sizeof(*out));
	out->region = stack_job_rung_region(j, k);
	out->scheduling = spec->strategy ? spec->strategy : "STANDARD";
	out->reservation = spec->reservation;
	/* The pools a rung's machineSpec replaces: those with accelerators. */
	for (size_t i = 0; i < spec->npools && !out->machine; i++)
		if (spec->pools[i].machine_type && spec->pools[i].accelerator_type)
			out->machine = spec->pools[i].machine_type;
	for (size_t i = 0; i < spec->npools && !out->machine; i++)
		out->machine = spec->pools[i].machine_type;
}
