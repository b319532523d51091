/*
 * The job kind: Vertex AI CustomJobs (job.NAME). How they are read (one
 * filtered list per place a declared job or a current run lives in), the
 * three-way diff of reconcile/plan.h (declaration x state x live, pure over
 * plain structs so every rule is unit-tested; planner_plan_jobs feeds it),
 * and how its actions are carried out: cancels, forgets and updates, then
 * adoptions and creates in batches, each create's intent journaled and
 * persisted before it is sent, uncertain creates resolved by listing, an
 * earlier apply's intents settled, every request fenced by the lease.
 */
#include "reconcile/kind.h"
#include "reconcile/import.h"
#include "reconcile/kind_job_parts.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/failure.h"
#include "reconcile/machines.h"
#include "reconcile/sweep.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/spec.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/pool.h"
#include "util/text.h"
#include "util/banned.h"

/* ---- plan: the three-way diff ------------------------------------------- */

/* The backoff after a refused create: at least a minute, at most 15. */
#define REFUSAL_MIN_WAIT_MS (60 * 1000)
#define REFUSAL_MAX_WAIT_MS (15 * 60 * 1000)

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* "10:02Z", or "2026-11-20 10:02Z" when not today, from epoch milliseconds. */
static void fmt_when(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "an unknown time");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%MZ", &tm);
}

/*
 * Indexes built once per plan, so every lookup is a binary search: a plan
 * over 10,000 jobs would otherwise spend seconds in nested scans.
 */
struct builder {
	struct plan *p;
	const struct plan_input *in;
	int oom;
	const struct live_job **by_name;  /* live jobs sorted by resource name */
	const struct live_job **by_job;   /* live jobs of this stack sorted by their vx-job label */
	size_t nby_name, nby_job;
	const struct plan_record **records; /* sorted by address */
	const struct plan_decl **decls;     /* sorted by address */
	const char **known;                 /* every run the state knows, sorted */
	size_t nknown;
	struct created *created;            /* the jobs this plan creates, sorted by vx-job label */
	size_t ncreated;
	int other_lineage;                  /* check_other_lineage refused: no warning repeats it */
};

/* A job this plan creates, by the vx-job label its run will carry (a sweep's
 * run is labelled with a hash of its name, reconcile/sweep.h). */
struct created {
	char label[SWEEP_LABEL_MAX + 1];
	const char *address;
};

/* Whether -replace names address: itself, its sweep or a slice of that. */
static int replaced(const struct builder *b, const char *address)
{
	for (size_t i = 0; i < b->in->nreplaces; i++)
		if (sweep_address_matches(b->in->replaces[i], address))
			return 1;
	return 0;
}

static int cmp_created(const void *a, const void *b)
{
	return strcmp(((const struct created *)a)->label, ((const struct created *)b)->label);
}

/* A live job in the way of a create, and the address it is in the way of. */
struct hit {
	const struct live_job *j;
	const char *address;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	int c = strcmp(x->address, y->address);

	return c ? c : strcmp(x->j->name, y->j->name);
}

static int cmp_live_name(const void *a, const void *b)
{
	return strcmp((*(const struct live_job *const *)a)->name, (*(const struct live_job *const *)b)->name);
}

static const char *vx_job_of(const struct live_job *j)
{
	const char *v = live_job_label(j, "vx-job");

	return v ? v : "";
}

static int cmp_live_job(const void *a, const void *b)
{
	return strcmp(vx_job_of(*(const struct live_job *const *)a), vx_job_of(*(const struct live_job *const *)b));
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int label_is(const struct live_job *j, const char *key, const char *want)
{
	const char *v = live_job_label(j, key);

	return v && !strcmp(v, want);
}

/* Looks up a live job by resource name. */
static const struct live_job *live_by_name(const struct builder *b, const char *name)
{
	size_t lo = 0, hi = b->nby_name;

	if (!name)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->by_name[mid]->name, name);

		if (c == 0)
			return b->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The first index in by_job whose vx-job label is >= name. */
static size_t by_job_lower(const struct builder *b, const char *name)
{
	size_t lo = 0, hi = b->nby_job;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(vx_job_of(b->by_job[mid]), name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int is_known(const struct builder *b, const char *name)
{
	return name && bsearch(&name, b->known, b->nknown, sizeof(*b->known), cmp_cstr) != NULL;
}

/*
 * Whether vx can prove a live job is this stack's: the state knows it by
 * name, or it carries this state's identity (vx-lineage). A job with the
 * stack's name alone may be another repository's that chose the same name.
 */
static int owned(const struct builder *b, const struct live_job *j)
{
	return is_known(b, j->name) ||
	       (b->in->lineage && *b->in->lineage && label_is(j, "vx-lineage", b->in->lineage));
}

/*
 * The newest live job carrying exactly the labels of run (spec, run,
 * attempt) of job name, that is not one of the record's known runs.
 */
static const struct live_job *live_for_run(struct builder *b, const char *name,
					   const char *hash, int64_t run, int64_t attempt,
					   const struct plan_record *rec)
{
	const struct plan_input *in = b->in;
	const struct live_job *best = NULL;
	struct run_id id = { in->stack, in->lineage, name, hash, run, attempt, 0 };
	char label[SWEEP_LABEL_MAX + 1];
	struct vx_label *want = NULL;
	size_t nwant = 0;

	if (!in->live)
		return NULL;
	if (runlabel_build(&want, &nwant, &id, NULL, 0) < 0) {
		b->oom = 1;
		return NULL;
	}
	/* a sweep's run carries a label made from its name (reconcile/sweep.h) */
	sweep_job_label(label, name);
	for (size_t i = by_job_lower(b, label); i < b->nby_job && !strcmp(vx_job_of(b->by_job[i]), label); i++) {
		const struct live_job *j = b->by_job[i];

		/* The lineage is proved by owned(): the state may know the job by name. */
		/* Nor the rung: the attempt names the run, and a job of a vx from
		 * before ladders carries no vx-rung. */
		if (!runlabel_match(j->labels, j->nlabels, want, nwant,
				    RUNLABEL_ALL & ~RUNLABEL_LINEAGE & ~RUNLABEL_RUNG) ||
		    !owned(b, j))
			continue;
		if (rec && rec->current && rec->current->name && j->name &&
		    !strcmp(rec->current->name, j->name))
			continue;
		if (rec && j->name && in_list(j->name, rec->known, rec->nknown))
			continue;
		/* Nor a run another record holds (one moved there by `vx state mv`
		 * still carries its old address's vx-job). */
		if (j->name && is_known(b, j->name))
			continue;
		if (!best || j->create_ms > best->create_ms)
			best = j;
	}
	vx_labels_free(want, nwant);
	return best;
}

/*
 * The highest vx-attempt among the live jobs of this stack (proved ours)
 * carrying the labels of job name's (spec, run) that the state does not
 * know; 0 when none. A state rewound to an older version forgets attempts
 * it made: their jobs still carry their numbers, which the next attempt
 * must not take again (two jobs of one label would each be taken for the
 * other), and which maxAttempts counts. The runs the state knows are its
 * own to number: -replace starts a finished job's count again at 1.
 */
static int64_t live_max_attempt(struct builder *b, const char *name, const char *hash, int64_t run,
				const struct live_job **job)
{
	const struct plan_input *in = b->in;
	struct run_id id = { in->stack, in->lineage, name, hash, run, 1, 0 };
	char label[SWEEP_LABEL_MAX + 1];
	struct vx_label *want = NULL;
	size_t nwant = 0;
	int64_t max = 0;

	*job = NULL;
	if (!in->live)
		return 0;
	if (runlabel_build(&want, &nwant, &id, NULL, 0) < 0) {
		b->oom = 1;
		return 0;
	}
	sweep_job_label(label, name);
	for (size_t i = by_job_lower(b, label); i < b->nby_job && !strcmp(vx_job_of(b->by_job[i]), label); i++) {
		const struct live_job *j = b->by_job[i];
		const char *v = live_job_label(j, "vx-attempt");
		char *end = NULL;
		long long n;

		if (!v || !runlabel_match(j->labels, j->nlabels, want, nwant,
					  RUNLABEL_ALL & ~RUNLABEL_LINEAGE & ~RUNLABEL_RUNG & ~RUNLABEL_ATTEMPT) ||
		    !owned(b, j) || is_known(b, j->name))
			continue;
		n = strtoll(v, &end, 10);
		if (end != v && !*end && n > max && n <= INT32_MAX) {
			max = (int64_t)n;
			*job = j;
		}
	}
	vx_labels_free(want, nwant);
	return max;
}

/*
 * The attempt a new run of d is created as, when no live job was adopted
 * for attempt: attempt, or past the highest a live job of (spec, run)
 * carries (*seen: that job, when it moved the number; else NULL).
 */
static int64_t next_attempt(struct builder *b, const struct plan_decl *d, int64_t attempt,
			    const struct live_job **seen)
{
	int64_t high = live_max_attempt(b, d->name, d->spec_hash, d->run, seen);

	if (high < attempt) {
		*seen = NULL;
		return attempt;
	}
	return high + 1;
}

static struct plan_action *add_action(struct builder *b, enum plan_kind kind, const char *address)
{
	struct plan_action *a = plan_add_action(b->p, kind, &kind_job, address);

	if (!a)
		b->oom = 1;
	return a;
}

static void set_str(struct builder *b, char **dst, const char *src)
{
	free(*dst);
	*dst = NULL;
	if (src && !(*dst = strdup(src)))
		b->oom = 1;
}

static void set_fmt(struct builder *b, char **dst, char *formatted)
{
	free(*dst);
	*dst = formatted;
	if (!formatted)
		b->oom = 1;
}

/*
 * Says in a's reason that its attempt number moved past a live job's
 * (next_attempt): "...; attempt 2 is projects/.../customJobs/9 (failed),
 * which the state does not record". Nothing when seen is NULL.
 */
static void note_seen(struct builder *b, struct plan_action *a, const struct live_job *seen)
{
	if (!seen || !a->reason)
		return;
	set_fmt(b, &a->reason, vx_asprintf("%s; attempt %s is %s (%s), which the state does not record",
					   a->reason, live_job_label(seen, "vx-attempt"), seen->name,
					   job_state_short(seen->state)));
}

static void fill_decl(struct builder *b, struct plan_action *a, const struct plan_decl *d)
{
	a->decl = d;
	a->max_attempts = d->max_attempts;
	set_str(b, &a->shape, d->shape);
	set_str(b, &a->new_hash, d->spec_hash);
	set_str(b, &a->region, d->region);
}

/* The region and shape of rung k of d's ladder (past the last: the last). */
static const char *rung_region(const struct plan_decl *d, int64_t k)
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
static void set_rung(struct builder *b, struct plan_action *a, const struct plan_decl *d, int64_t k)
{
	a->rung = k;
	set_str(b, &a->region, rung_region(d, k));
	set_str(b, &a->shape, rung_shape(d, k));
}

/* Both plan_record and plan_decl start with `const char *address`. */
static int cmp_addr(const void *a, const void *b)
{
	return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

static const struct plan_record *find_record(const struct builder *b, const char *address)
{
	const char *const *key = &address;
	const struct plan_record *const *r = bsearch(&key, b->records, b->in->nrecords,
						     sizeof(*b->records), cmp_addr);

	return r ? *r : NULL;
}

static const struct plan_decl *find_decl(const struct builder *b, const char *address)
{
	const char *const *key = &address;
	const struct plan_decl *const *d = bsearch(&key, b->decls, b->in->ndecls, sizeof(*b->decls), cmp_addr);

	return d ? *d : NULL;
}

static int targeted(const struct plan_input *in, const char *address)
{
	/* a sweep's address or a slice of it names its runs (reconcile/sweep.h) */
	for (size_t i = 0; i < in->ntargets; i++)
		if (sweep_address_matches(in->targets[i], address))
			return 1;
	return in->ntargets == 0;
}

/*
 * A new run is about to be planned (create, rerun, resubmit, replace): if a
 * live job already has its labels, adopt it instead. Returns 1 when adopted.
 */
static int maybe_adopt(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		       int64_t attempt, int64_t rung, const char *why, const char *cancel_name)
{
	const struct live_job *j = live_for_run(b, d->name, d->spec_hash, d->run, attempt, rec);
	struct plan_action *a;

	if (!j)
		return 0;
	a = add_action(b, PLAN_ADOPT, d->address);
	if (!a)
		return 1;
	fill_decl(b, a, d);
	a->record = rec;
	a->run = d->run;
	a->attempt = attempt;
	set_rung(b, a, d, rung);
	set_str(b, &a->adopt_name, j->name);
	set_str(b, &a->live_state, j->state);
	a->adopt_create_ms = j->create_ms;
	set_str(b, &a->cancel_name, cancel_name);
	if (rec && rec->current)
		set_str(b, &a->old_hash, rec->spec_hash);
	set_fmt(b, &a->reason, vx_asprintf("%s; a live job with its labels already exists (%s, %s): "
					   "an earlier apply created it", why, j->name,
					   job_state_short(j->state)));
	return 1;
}

/* Whether class is listed in the declaration's resubmit.on. */
static int resubmits(const struct plan_decl *d, const char *cls)
{
	return cls && in_list(cls, d->resubmit_on, d->nresubmit_on);
}

static void set_error(struct builder *b, struct plan_action *a, int code, const char *msg)
{
	a->error_code = code;
	set_str(b, &a->error_message, msg);
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
static int run_rung(const struct plan_run *cur, const struct plan_decl *d, int64_t *at)
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
static char *rung_words(const struct plan_run *cur)
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
 * rung is on the ladder (it stays) or not (run_rung says so).
 */
static int run_moved(const struct plan_run *cur, const struct plan_decl *d)
{
	const char *region = rung_region(d, cur->rung);

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

/*
 * The failure class of the current run: its state and error, and what the
 * job itself says (its rung's scheduling strategy, whether it ever started,
 * whether vx cancelled it). lj is the live job, NULL when not refreshing or
 * when it vanished.
 */
static const char *run_failure(const struct plan_decl *d, const struct plan_run *cur, int64_t at,
			       const struct live_job *lj, const char *state, int code, const char *msg)
{
	size_t n = d->nrungs > 1 ? d->nrungs : 1;
	size_t k = at < 0 ? 0 : (uint64_t)at >= n ? n - 1 : (size_t)at;
	struct failure_input in = {
		.state = state, .error_code = code, .message = msg,
		.scheduling = cur->rung_id.scheduling ? cur->rung_id.scheduling
			      : d->rung_ids ? d->rung_ids[k].scheduling : NULL,
		.started = (lj ? lj->start_ms : 0) > 0 || cur->started_ms > 0,
		.cancelled_by_vx = cur->cancelled_by_vx,
	};

	return failure_classify(&in);
}

/* "2026-11-20 10:02:07Z", for a backoff's end. */
static void fmt_second(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "an unknown time");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* The backoff after n refused creates in a row: resubmit.delay (at least a
 * minute: a refusal is not over in seconds), doubling, at most 15 minutes. */
static int64_t refusal_wait(const struct plan_decl *d, size_t n)
{
	int64_t wait = d->retry_delay_ms > REFUSAL_MIN_WAIT_MS ? d->retry_delay_ms : REFUSAL_MIN_WAIT_MS;

	for (size_t k = 1; k < n && wait < REFUSAL_MAX_WAIT_MS; k++)
		wait *= 2;
	return wait < REFUSAL_MAX_WAIT_MS ? wait : REFUSAL_MAX_WAIT_MS;
}

/*
 * A create the server refused for the declared spec and run is an attempt
 * (docs/format.md): the next one is planned only when resubmit.on lists its
 * class (refused, quota), the budget allows it and its backoff has passed
 * (vxapply and vx watch plan alike, so neither asks again every time);
 * else a noop that shows the refusal. -replace asks again at once. Returns
 * 1 when it planned that noop. 0 when the new run may be planned: *attempt
 * is then past the refused ones, and *why (owned, NULL when there was no
 * refusal) says so for the plan.
 */
static int refusal_gate(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			int64_t *attempt, char **why)
{
	const struct plan_refusal *r = rec ? &rec->refusal : NULL;
	char when[40], until[40];
	int64_t next, wait, not_before = 0;
	struct plan_action *a;
	char *reason;

	*why = NULL;
	if (!r || !r->n || !vx_text_same(r->spec_hash, d->spec_hash) || r->run != d->run)
		return 0;
	next = r->attempt + 1 > *attempt ? r->attempt + 1 : *attempt;
	fmt_when(when, sizeof(when), r->at_ms);
	wait = refusal_wait(d, r->n);
	if (replaced(b, d->address)) {
		*attempt = next;
		*why = vx_asprintf("attempt %" PRId64 "/%" PRId64 " after the create was refused (%s at %s): "
				   "-replace asks again", next, d->max_attempts, r->cls, when);
		if (!*why)
			b->oom = 1;
		return 0;
	}
	if (!resubmits(d, r->cls)) {
		reason = vx_asprintf("the create was refused (%s at %s, attempt %" PRId64 "); not asked again: "
				     "%s is not in resubmit.on; fix the cause, then vxapply -replace %s",
				     r->cls, when, r->attempt, r->cls, d->address);
	} else if (next > d->max_attempts) {
		reason = vx_asprintf("the create was refused (%s at %s); resubmit budget exhausted "
				     "(%" PRId64 "/%" PRId64 " attempts); vxapply -replace %s asks again",
				     r->cls, when, r->attempt, d->max_attempts, d->address);
	} else if (b->in->now_ms > 0 && b->in->now_ms < r->at_ms + wait) {
		not_before = r->at_ms + wait;
		fmt_second(until, sizeof(until), not_before);
		reason = vx_asprintf("the create was refused (%s at %s, %zu in a row); attempt %" PRId64 "/%" PRId64
				     " not before %s (backoff)", r->cls, when, r->n, next, d->max_attempts, until);
	} else {
		*attempt = next;
		*why = vx_asprintf("attempt %" PRId64 "/%" PRId64 " after the create was refused (%s at %s)",
				   next, d->max_attempts, r->cls, when);
		if (!*why)
			b->oom = 1;
		return 0;
	}
	a = add_action(b, PLAN_NOOP, d->address);
	if (!a) {
		free(reason);
		return 1;
	}
	fill_decl(b, a, d);
	a->record = rec;
	set_str(b, &a->old_hash, rec->spec_hash);
	set_str(b, &a->failure_class, r->cls);
	set_error(b, a, 0, r->message);
	set_fmt(b, &a->reason, reason);
	a->not_before_ms = not_before;
	a->refused = !not_before;
	return 1;
}

/* The current run of the declared spec and run, failed as class cls. */
struct failed {
	const struct live_job *lj;      /* as listed; NULL when not refreshing or vanished */
	const char *state, *msg, *cls;
	int code, vanished;
	int64_t at;                     /* its rung on today's ladder */
};

/*
 * Resubmits a failed run while resubmit.on lists its class and the budget
 * allows, counting the attempts live jobs of (spec, run) carry that the
 * state forgot (a rewound state: live_max_attempt), else a noop that says
 * why. Returns the action, NULL when out of memory or when a refusal's
 * backoff planned it (refusal_gate).
 */
static struct plan_action *plan_failed(struct builder *b, const struct plan_decl *d,
				       const struct plan_record *rec, const struct failed *f)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *seen = NULL;
	int64_t next = cur->attempt + 1, rung = plan_next_rung(f->at, f->cls, d->nrungs);
	struct plan_action *a;
	char when[40], *refused = NULL;

	fmt_when(when, sizeof(when), f->lj && f->lj->end_ms ? f->lj->end_ms : cur->end_ms);
	if (resubmits(d, f->cls) && cur->attempt < d->max_attempts) {
		if (refusal_gate(b, d, rec, &next, &refused))
			return NULL;
		if (maybe_adopt(b, d, rec, next, rung, "resubmit", NULL)) {
			free(refused);
			return NULL;
		}
		next = next_attempt(b, d, next, &seen);
	}
	if (resubmits(d, f->cls) && next <= d->max_attempts) {
		a = add_action(b, PLAN_RESUBMIT, d->address);
		if (!a) {
			free(refused);
			return NULL;
		}
		fill_decl(b, a, d);
		a->record = rec;
		a->run = d->run;
		a->attempt = next;
		set_rung(b, a, d, rung);
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->failure_class, f->cls);
		set_str(b, &a->live_state, f->state);
		set_error(b, a, f->vanished ? 0 : f->code, f->vanished ? NULL : f->msg);
		if (d->nrungs > 1)
			set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " on rung %" PRId64
							   " (region %s) after %s in %s",
							   next, d->max_attempts, rung, rung_region(d, rung), f->cls,
							   cur->region ? cur->region : rung_region(d, f->at)));
		else
			set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " after %s at %s",
							   next, d->max_attempts, f->cls, when));
		if (refused)
			set_fmt(b, &a->reason, refused);
		note_seen(b, a, seen);
		return a;
	}
	free(refused);
	a = add_action(b, PLAN_NOOP, d->address);
	if (!a)
		return NULL;
	fill_decl(b, a, d);
	set_rung(b, a, d, f->at);
	a->record = rec;
	set_str(b, &a->old_hash, rec->spec_hash);
	set_str(b, &a->failure_class, f->cls);
	set_str(b, &a->live_state, f->state);
	set_error(b, a, f->vanished ? 0 : f->code, f->vanished ? NULL : f->msg);
	if (resubmits(d, f->cls))
		set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s); resubmit budget exhausted "
						   "(%" PRId64 "/%" PRId64 " attempts)", f->cls, when,
						   seen ? next - 1 : cur->attempt, d->max_attempts));
	else if (!strcmp(f->cls, "unknown"))
		/* An ambiguous text errs towards not resubmitting, and says so. */
		set_fmt(b, &a->reason, vx_asprintf("failed (unknown at %s); not resubmitted: no rule of vx "
						   "knows this message, so it may fail the same way again "
						   "(list unknown in resubmit.on to resubmit such failures)",
						   when));
	else
		set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s); not resubmitted: %s is not in resubmit.on",
						   f->cls, when, f->cls));
	note_seen(b, a, seen);
	return a;
}

static void plan_declared(struct builder *b, const struct plan_decl *d, const struct plan_record *rec)
{
	const struct plan_run *cur = rec ? rec->current : NULL;
	const struct live_job *lj = NULL, *seen = NULL;
	const char *state = NULL, *msg = NULL, *cls;
	int code = 0, vanished = 0, changed, forced, moved, respec, unrunged;
	int64_t at, attempt;
	struct plan_action *a;

	if (!cur) {
		char *why;

		attempt = 1;
		if (refusal_gate(b, d, rec, &attempt, &why))
			return;
		if (maybe_adopt(b, d, rec, attempt, 0, "new job", NULL)) {
			free(why);
			return;
		}
		attempt = next_attempt(b, d, attempt, &seen);
		a = add_action(b, PLAN_CREATE, d->address);
		if (!a) {
			free(why);
			return;
		}
		fill_decl(b, a, d);
		a->record = rec;
		a->run = d->run;
		a->attempt = attempt;
		if (why)
			set_fmt(b, &a->reason, why);
		else
			set_str(b, &a->reason, rec ? "no current run in state" : "new job");
		note_seen(b, a, seen);
		return;
	}

	/* Where the current run stands: live when refreshing, else as last seen. */
	if (b->in->live) {
		lj = live_by_name(b, cur->name);
		if (lj) {
			state = lj->state;
			code = lj->error_code;
			msg = lj->error_message;
		} else {
			vanished = 1;
		}
	} else {
		state = cur->state;
		code = cur->error_code;
		msg = cur->error_message;
	}

	forced = replaced(b, d->address);
	moved = run_moved(cur, d);
	respec = strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) != 0 || rec->run != d->run;
	/* An active run whose rung is no longer on the ladder is changed like
	 * its spec; one that ended stays where it ran (a failed one's next
	 * attempt goes where the ladder now says). */
	unrunged = !run_rung(cur, d, &at) && state && job_state_is_active(state) &&
		   strcmp(state, "JOB_STATE_CANCELLING") != 0;
	changed = respec || moved || unrunged;
	/* The new run of a job whose rung left the ladder is the next attempt
	 * of the same run: maxAttempts keeps counting. */
	attempt = respec || moved || !unrunged ? 1 : cur->attempt + 1;

	if (vanished) {
		/* A run we launched is gone from the API: deleted outside vx. */
		if (cur->state && !strcmp(cur->state, "JOB_STATE_SUCCEEDED") && !changed && !forced) {
			a = add_action(b, PLAN_NOOP, d->address);
			if (!a)
				return;
			fill_decl(b, a, d);
			a->record = rec;
			set_str(b, &a->old_hash, rec->spec_hash);
			set_fmt(b, &a->drift, vx_asprintf("run %s succeeded and has since been deleted", cur->name));
			b->p->drifts++;
			return;
		}
		state = "JOB_STATE_CANCELLED";
		code = 1;
		msg = "deleted outside vx";
	}

	if (changed || forced) {
		char *why = NULL;

		if (forced && !changed)
			why = vx_asprintf("replacement requested (-replace %s)", d->address);
		else if (moved)
			why = vx_asprintf("moved from %s/%s to %s/%s", cur->project ? cur->project : d->project,
					  cur->region ? cur->region : "?", d->project, d->region);
		else if (unrunged && !respec) {
			char *what = rung_words(cur);

			why = what ? vx_asprintf("its rung (%s) is no longer on the ladder", what) : NULL;
			free(what);
		}
		else if (rec->run != d->run && strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) == 0)
			why = vx_asprintf("run bumped %" PRId64 " -> %" PRId64, rec->run, d->run);
		else if (d->spec_json && rec->spec_json) {
			char *paths = spec_diff_paths(rec->spec_json, d->spec_json);

			why = paths && *paths ? vx_asprintf("spec changed: %s", paths)
					      : vx_asprintf("spec changed");
			free(paths);
		} else
			why = vx_asprintf("spec changed");
		if (!why) {
			b->oom = 1;
			return;
		}
		if (state && job_state_is_active(state) && strcmp(state, "JOB_STATE_CANCELLING") != 0) {
			if (d->on_change != PLAN_ON_CHANGE_REPLACE && !forced) {
				a = add_action(b, PLAN_NOOP, d->address);
				if (a) {
					fill_decl(b, a, d);
					a->record = rec;
					set_str(b, &a->old_hash, rec->spec_hash);
					set_str(b, &a->live_state, state);
					set_fmt(b, &a->reason, vx_asprintf(
						"%s; the current run %s is %s and onChange is %s",
						why, cur->name, job_state_short(state),
						d->on_change == PLAN_ON_CHANGE_IGNORE ? "ignore: the change waits"
						: "after-finish: a new run starts when it ends"));
				}
				free(why);
				return;
			}
			if (d->protect) {
				vx_diags_add(&b->p->errors, NULL, 0, 0,
					     "%s is protected (protect: true): %s would cancel its active run %s; "
					     "set protect: false, or onChange: after-finish",
					     d->address, why, cur->name);
			}
			if (!maybe_adopt(b, d, rec, attempt, 0, why, cur->name)) {
				a = add_action(b, PLAN_REPLACE, d->address);
				if (a) {
					fill_decl(b, a, d);
					a->record = rec;
					a->run = d->run;
					a->attempt = attempt;
					set_str(b, &a->old_hash, rec->spec_hash);
					set_str(b, &a->cancel_name, cur->name);
					set_str(b, &a->live_state, state);
					set_fmt(b, &a->reason, vx_asprintf("%s while %s", why, job_state_short(state)));
				}
			}
			free(why);
			return;
		}
		/* Finished (or cancelling): a new run. */
		{
			char *refused = NULL;
			int64_t first = 1;

			if (!refusal_gate(b, d, rec, &first, &refused) &&
			    !maybe_adopt(b, d, rec, first, 0, why, NULL)) {
				first = next_attempt(b, d, first, &seen);
				a = add_action(b, PLAN_RERUN, d->address);
				if (a) {
					fill_decl(b, a, d);
					a->record = rec;
					a->run = d->run;
					a->attempt = first;
					set_str(b, &a->old_hash, rec->spec_hash);
					set_str(b, &a->live_state, state);
					set_fmt(b, &a->reason, vx_asprintf("%s after the last run %s%s%s", why,
									   vanished ? "vanished" : job_state_short(state),
									   refused ? "; " : "", refused ? refused : ""));
					note_seen(b, a, seen);
				}
			}
			free(refused);
		}
		free(why);
		return;
	}

	/* Same spec and run: active or succeeded is a noop; a failure may resubmit. */
	cls = run_failure(d, cur, at, lj, state, code, msg);
	if (!cls) {
		a = add_action(b, PLAN_NOOP, d->address);
		if (!a)
			return;
		fill_decl(b, a, d);
		/* It runs (or ran) where its rung put it: cost and quota count it there. */
		set_rung(b, a, d, at);
		a->record = rec;
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->live_state, state);
		return;
	}
	{
		struct failed f = { lj, state, msg, cls, code, vanished, at };

		a = plan_failed(b, d, rec, &f);
	}
	if (!a)
		return;
	if (!strcmp(cls, "cancelled-outside")) {
		set_fmt(b, &a->drift, vx_asprintf(vanished ? "run %s was deleted outside vx"
						  : "run %s was cancelled outside vx", cur->name));
		b->p->drifts++;
	}
}

static const char *on_remove_word(enum plan_on_remove v)
{
	return v == PLAN_ON_REMOVE_CANCEL ? "cancel" : v == PLAN_ON_REMOVE_FORGET ? "forget" : "unset";
}

/* Whether the policy d declares is not the one rec records as applied (reconcile/policy.h). */
static int policy_moved(const struct plan_decl *d, const struct plan_record *rec)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc;

	if (!d->policy)
		return 0;
	if (!rec->applied)
		return 1;
	rc = policy_diff(&b, rec->applied, d->policy, 1);
	vx_buf_release(&b);
	return rc != 0;
}

/*
 * Declaration-only settings take effect from the declaration at plan time;
 * the state keeps `protect` and `onRemove` so that a job removed from the
 * declaration stays protected and is removed as it said. The policy the
 * watcher acts on (reconcile/policy.h) is recorded too, so that only an
 * apply changes it. When one differs, an otherwise unchanged job is an
 * update: the apply records the settings and starts no run.
 */
static void settings_update(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    size_t first)
{
	for (size_t i = first; rec && i < b->p->n && !b->oom; i++) {
		struct plan_action *a = &b->p->actions[i];
		struct vx_buf why = VX_BUF_INIT;
		int rc = 0;

		if (a->kind != PLAN_NOOP || !a->decl ||
		    (!rec->protect == !d->protect && rec->on_remove == d->on_remove && !policy_moved(d, rec)))
			continue;
		if (!rec->protect != !d->protect)
			rc = vx_buf_printf(&why, "protect: %s -> %s", rec->protect ? "true" : "false",
					   d->protect ? "true" : "false");
		if (rc == 0 && rec->on_remove != d->on_remove)
			rc = vx_buf_printf(&why, "%sonRemove: %s -> %s", why.len ? "; " : "",
					   on_remove_word(rec->on_remove), on_remove_word(d->on_remove));
		if (rc == 0 && policy_moved(d, rec) && !rec->applied)
			rc = vx_buf_printf(&why, "%srecords the policy applied (resubmit, after:, the sweep's "
					   "limits): the state holds none, it was written by an older vx",
					   why.len ? "; " : "");
		else if (rc == 0 && policy_moved(d, rec) && (rc = vx_buf_adds(&why, why.len ? "; " : "")) == 0)
			rc = policy_diff(&why, rec->applied, d->policy, 1) < 0 ? VX_ENOMEM : 0;
		if (rc == 0 && a->reason)
			rc = vx_buf_printf(&why, "; %s", a->reason);
		set_fmt(b, &a->reason, rc == 0 ? vx_buf_detach(&why) : NULL);
		vx_buf_release(&why);
		b->p->counts[PLAN_NOOP]--;
		b->p->counts[PLAN_UPDATE]++;
		a->kind = PLAN_UPDATE;
	}
}

/*
 * Whether removing rec's declaration forgets its active run rather than
 * cancelling it: a job made by hand and imported without vx's labels is
 * not vx's to stop unless its declaration said onRemove: cancel. A run vx
 * started carries this stack's labels: were it forgotten, the next plan
 * would cancel it as untracked, so it is cancelled whatever onRemove says.
 */
static int removal_forgets(const struct plan_record *rec)
{
	return rec->unlabelled_import && rec->on_remove != PLAN_ON_REMOVE_CANCEL;
}

/* An action for rec, no longer declared, with what each such action shows; NULL on OOM. */
static struct plan_action *removed_action(struct builder *b, enum plan_kind k, const struct plan_record *rec,
					  const char *state)
{
	struct plan_action *a = add_action(b, k, rec->address);

	if (!a)
		return NULL;
	a->record = rec;
	set_str(b, &a->old_hash, rec->spec_hash);
	set_str(b, &a->live_state, state);
	if (rec->current)
		set_str(b, &a->region, rec->current->region);
	return a;
}

static void plan_removed(struct builder *b, const struct plan_record *rec)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *lj = NULL;
	const char *state = cur ? cur->state : NULL;
	struct plan_action *a;
	int running;

	if (cur && b->in->live) {
		lj = live_by_name(b, cur->name);
		state = lj ? lj->state : NULL;
	}
	running = cur && state && job_state_is_active(state) && strcmp(state, "JOB_STATE_CANCELLING") != 0;
	if (running && removal_forgets(rec)) {
		if (!(a = removed_action(b, PLAN_FORGET, rec, state)))
			return;
		set_fmt(b, &a->reason, rec->on_remove == PLAN_ON_REMOVE_FORGET
			? vx_asprintf("no longer declared; run %s is %s: onRemove is forget, so vx forgets it "
				      "and leaves it running", cur->name, job_state_short(state))
			: vx_asprintf("no longer declared; run %s is %s: it was imported (vx import) without "
				      "vx's labels, so vx forgets it and leaves it running (onRemove: cancel "
				      "cancels it)", cur->name, job_state_short(state)));
		return;
	}
	if (running) {
		if (rec->protect)
			vx_diags_add(&b->p->errors, NULL, 0, 0,
				     "%s is protected (protect: true): it is no longer declared but its run %s "
				     "is %s; cancelling it is refused", rec->address, cur->name,
				     job_state_short(state));
		if (!(a = removed_action(b, PLAN_CANCEL, rec, state)))
			return;
		set_str(b, &a->cancel_name, cur->name);
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is %s%s", cur->name,
						   job_state_short(state),
						   rec->on_remove == PLAN_ON_REMOVE_FORGET
						   ? " (onRemove: forget leaves only a job imported without vx's "
						     "labels: this run carries this stack's labels, and vx cancels "
						     "every such job no declaration accounts for)" : ""));
		return;
	}
	if (cur && state && !strcmp(state, "JOB_STATE_CANCELLING")) {
		/* Forgetting it now would lose how it ends: wait until it has. */
		if (!(a = removed_action(b, PLAN_NOOP, rec, state)))
			return;
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is cancelling: forgotten "
						   "once it has ended", cur->name));
		return;
	}
	a = add_action(b, PLAN_FORGET, rec->address);
	if (!a)
		return;
	a->record = rec;
	set_str(b, &a->old_hash, rec->spec_hash);
	set_str(b, &a->live_state, state);
	if (cur)
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; last run %s %s (history stays in git)",
						   cur->name, lj || !b->in->live ? job_state_short(state)
						   : "vanished"));
	else
		set_str(b, &a->reason, "no longer declared (history stays in git)");
}

/* Whether a live job is one vx knows: a current or past run in the state, or adopted now. */
static int live_known(const struct builder *b, const struct live_job *j, const char **adopted,
		      size_t nadopted)
{
	return is_known(b, j->name) ||
	       (nadopted && bsearch(&j->name, adopted, nadopted, sizeof(*adopted), cmp_cstr) != NULL);
}

/*
 * The address ("job.NAME[k=v,...]") a sweep's hashed vx-job label stands
 * for, when a declaration or a record of this state has it; NULL when none
 * does (a label cannot be turned back into its address otherwise).
 */
static const char *label_address(const struct builder *b, const char *label)
{
	char have[SWEEP_LABEL_MAX + 1];

	if (!label || !strstr(label, "--"))
		return NULL;
	for (size_t i = 0; i < b->in->ndecls; i++) {
		const char *a = b->in->decls[i].address;

		if (a && !strncmp(a, "job.", 4) && strchr(a, '[')) {
			sweep_job_label(have, a + 4);
			if (!strcmp(have, label))
				return a;
		}
	}
	for (size_t i = 0; i < b->in->nrecords; i++) {
		const char *a = b->in->records[i].address;

		if (a && !strncmp(a, "job.", 4) && strchr(a, '[')) {
			sweep_job_label(have, a + 4);
			if (!strcmp(have, label))
				return a;
		}
	}
	return NULL;
}

/*
 * An active job with this stack's name that vx cannot prove is its own: its
 * vx-lineage names another state, or it has none (made by another tool, or
 * by a vx older than the label). Never cancelled or adopted; shown, with
 * how to resolve it.
 */
static void warn_foreign(struct builder *b, const struct live_job *j)
{
	const char *lin = live_job_label(j, "vx-lineage");
	const char *job = live_job_label(j, "vx-job");
	const char *addr = label_address(b, job);

	if (vx_diags_add(&b->p->warnings, NULL, 0, 0,
			 "%s%s: live job %s (%s) is labelled vx-stack=%s but %s%s%s; vx leaves it "
			 "alone. If another repository uses the stack name %s, rename one of the two "
			 "stacks; if it is a leftover of this one, cancel it with 'gcloud ai custom-jobs "
			 "cancel %s'", addr ? "" : "job.", addr ? addr : job ? job : "?", j->name, job_state_short(j->state), b->in->stack,
			 lin ? "belongs to another state (vx-lineage=" : "carries no state identity (vx-lineage)",
			 lin ? lin : "", lin ? ")" : "", b->in->stack, j->name) < 0)
		b->oom = 1;
}

/*
 * Whether j, a live job of this stack that this state cannot prove its own,
 * carries the address of a job this plan creates (index: the created
 * addresses, sorted). With a state, only an active one counts (two runs of
 * one job would run side by side); with none loaded, any: a job that has
 * ended is as sure a sign that this stack's state was lost, and creating
 * would run it again.
 */
static const struct created *collides(const struct builder *b, const struct live_job *j)
{
	const char *job = live_job_label(j, "vx-job");
	struct created key;

	if (!b->ncreated || !j->name || !job || !label_is(j, "vx-stack", b->in->stack) || owned(b, j))
		return NULL;
	if (!b->in->state_is_new &&
	    (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING")))
		return NULL;
	if ((size_t)snprintf(key.label, sizeof(key.label), "%s", job) >= sizeof(key.label))
		return NULL;
	return bsearch(&key, b->created, b->ncreated, sizeof(*b->created), cmp_created);
}

/* The first few of n items, then "and N more". */
#define SHOW_FIRST 3

/*
 * Never creates a job beside a live run of it that another state of this
 * stack name launched (its vx-lineage is not this state's). With no state
 * loaded, that is almost always this stack's own state gone missing (CI
 * without state.remote, a clone without the state branch, a deleted
 * object), and creating would run every job twice: a plan error naming
 * the cause and the fix. With a state, another repository may use the
 * name: the same error, with that fix. -allow-other-lineage creates anyway
 * (the jobs are then only warned about, as any foreign job).
 */
static void check_other_lineage(struct builder *b)
{
	const struct plan_input *in = b->in;
	struct vx_buf jobs = VX_BUF_INIT, lins = VX_BUF_INIT;
	struct hit *hit = NULL;
	const char **seen = NULL;
	size_t nhit = 0, nseen = 0;
	int rc = 0;

	if (!in->live || in->allow_other_lineage)
		return;
	b->created = calloc(b->p->n + 1, sizeof(*b->created));
	hit = calloc(in->live->n + 1, sizeof(*hit));
	seen = calloc(in->live->n + 1, sizeof(*seen));
	if (!b->created || !hit || !seen) {
		rc = VX_ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < b->p->n; i++) {
		const struct plan_action *a = &b->p->actions[i];

		if (a->kind != PLAN_CREATE || a->kind_of != &kind_job || strncmp(a->address, "job.", 4))
			continue;
		sweep_job_label(b->created[b->ncreated].label, a->address + 4);
		b->created[b->ncreated++].address = a->address;
	}
	qsort(b->created, b->ncreated, sizeof(*b->created), cmp_created);
	for (size_t i = 0; i < in->live->n; i++) {
		const struct created *c = collides(b, &in->live->items[i]);

		if (c)
			hit[nhit++] = (struct hit){ .j = &in->live->items[i], .address = c->address };
	}
	if (!nhit)
		goto done;
	/* In address order, as the plan lists them (the lists come in any order). */
	qsort(hit, nhit, sizeof(*hit), cmp_hit);
	for (size_t i = 0; i < nhit && rc == 0; i++) {
		const char *lin = live_job_label(hit[i].j, "vx-lineage");
		size_t k = 0;

		if (i < SHOW_FIRST)
			rc = vx_buf_printf(&jobs, "%s%s (%s, %s)", i ? ", " : "", hit[i].address,
					   hit[i].j->name, job_state_short(hit[i].j->state));
		lin = lin ? lin : "none";
		/* Lineages are one or two: a scan is enough. */
		while (k < nseen && strcmp(seen[k], lin) != 0)
			k++;
		if (k == nseen && rc == 0) {
			rc = vx_buf_printf(&lins, "%s%s", nseen ? ", " : "", lin);
			seen[nseen++] = lin;
		}
	}
	if (rc == 0 && nhit > SHOW_FIRST)
		rc = vx_buf_printf(&jobs, " and %zu more", nhit - SHOW_FIRST);
	if (rc == 0 && in->state_is_new)
		rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
			"the state of stack %s was not found (none was loaded: serial 0), but live jobs of "
			"this stack from another state (vx-lineage %s) carry %zu of the addresses this plan "
			"would create: %s. Creating them would run these jobs a second time. %s To create "
			"them anyway (they are not this stack's), re-run with -allow-other-lineage",
			in->stack, lins.data, nhit, jobs.data,
			in->state_lost_hint ? in->state_lost_hint
			: "Likely cause: the state was not read from where it is kept; fix that and plan again.");
	else if (rc == 0)
		rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
			"active jobs of stack %s from another state (vx-lineage %s) run %zu of the jobs this "
			"plan would create: %s. Creating them would run each job twice. If another "
			"repository uses the stack name %s, rename one of the two stacks; if they are "
			"leftovers of this one, cancel them ('gcloud ai custom-jobs cancel NAME'); to create "
			"anyway, re-run with -allow-other-lineage",
			in->stack, lins.data, nhit, jobs.data, in->stack);
	b->other_lineage = 1;
done:
	if (rc < 0)
		b->oom = 1;
	vx_buf_release(&jobs);
	vx_buf_release(&lins);
	free(seen);
	free(hit);
}

/*
 * A job `vx state rm` released while it ran is still this stack's job in
 * Google Cloud, and still declared: the plan would create another of the
 * same address beside it, the two then running at once. Each such create
 * says so, naming the released job and its state: a plan error, or with
 * -allow-released a warning.
 */
static void check_released(struct builder *b)
{
	const struct plan_input *in = b->in;
	char label[SWEEP_LABEL_MAX + 1];

	for (size_t i = 0; in->released && i < b->p->n; i++) {
		const struct plan_action *a = &b->p->actions[i];

		if ((a->kind != PLAN_CREATE && a->kind != PLAN_RERUN && a->kind != PLAN_REPLACE) ||
		    a->kind_of != &kind_job || strncmp(a->address, "job.", 4) != 0)
			continue;
		sweep_job_label(label, a->address + 4);
		for (size_t k = 0; k < in->released->n; k++) {
			const struct live_job *j = &in->released->items[k];
			int rc;

			if (!j->name || !j->state || !job_state_is_active(j->state) ||
			    !label_is(j, "vx-stack", in->stack) || !label_is(j, "vx-job", label))
				continue;
			if (in->allow_released)
				rc = vx_diags_add(&b->p->warnings, NULL, 0, 0,
					"%s: the job released from the state of the same address is still active "
					"(%s, %s); this plan creates another beside it (-allow-released)",
					a->address, j->name, job_state_short(j->state));
			else
				rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
					"%s: the job released from the state of the same address (vx state rm) is "
					"still active (%s, %s); creating %s again would run both. Cancel it "
					"('gcloud ai custom-jobs cancel %s') or wait for it to end; to create "
					"another beside it, re-run with -allow-released",
					a->address, j->name, job_state_short(j->state), a->address, j->name);
			if (rc < 0)
				b->oom = 1;
		}
	}
}

/* Active jobs labelled for this stack and this state that nothing accounts
 * for: a crashed apply's leftovers or duplicates. They cost money: the plan
 * cancels them, and touches no record (the action has none). */
static void plan_untracked(struct builder *b)
{
	const char **adopted = NULL;
	size_t nadopted = 0;

	if (!b->in->live || b->in->ntargets)
		return;
	adopted = calloc(b->p->n + 1, sizeof(*adopted));
	if (!adopted) {
		b->oom = 1;
		return;
	}
	for (size_t i = 0; i < b->p->n; i++)
		if (b->p->actions[i].adopt_name)
			adopted[nadopted++] = b->p->actions[i].adopt_name;
	qsort(adopted, nadopted, sizeof(*adopted), cmp_cstr);
	for (size_t i = 0; i < b->in->live->n && !b->oom; i++) {
		const struct live_job *j = &b->in->live->items[i];
		const char *job = live_job_label(j, "vx-job");
		struct plan_action *a;
		char *addr;

		if (!j->name || !label_is(j, "vx-stack", b->in->stack) || live_known(b, j, adopted, nadopted))
			continue;
		if (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING"))
			continue;
		if (!owned(b, j)) {
			if (!b->other_lineage || !collides(b, j))
				warn_foreign(b, j);
			continue;
		}
		addr = vx_asprintf("job.%s", job ? job : "?");
		if (!addr) {
			b->oom = 1;
			break;
		}
		a = add_action(b, PLAN_CANCEL, addr);
		free(addr);
		if (!a)
			break;
		set_str(b, &a->cancel_name, j->name);
		set_str(b, &a->live_state, j->state);
		set_str(b, &a->region, j->region);
		set_fmt(b, &a->reason, vx_asprintf("untracked live job %s (%s%s%s) carries this stack's labels "
						   "but no state record or declaration accounts for it",
						   j->name, job_state_short(j->state),
						   label_address(b, job) ? ", a run of " : "",
						   label_address(b, job) ? label_address(b, job) : ""));
		set_fmt(b, &a->drift, vx_asprintf("untracked job %s", j->name));
		b->p->drifts++;
	}
	free(adopted);
}

static int build_indexes(struct builder *b)
{
	const struct plan_input *in = b->in;
	size_t nlive = in->live ? in->live->n : 0, nknown = 0;

	for (size_t i = 0; i < in->nrecords; i++)
		nknown += in->records[i].nknown + 1;
	b->by_name = calloc(nlive + 1, sizeof(*b->by_name));
	b->by_job = calloc(nlive + 1, sizeof(*b->by_job));
	b->records = calloc(in->nrecords + 1, sizeof(*b->records));
	b->decls = calloc(in->ndecls + 1, sizeof(*b->decls));
	b->known = calloc(nknown + 1, sizeof(*b->known));
	if (!b->by_name || !b->by_job || !b->records || !b->decls || !b->known)
		return VX_ENOMEM;
	for (size_t i = 0; i < nlive; i++) {
		const struct live_job *j = &in->live->items[i];

		if (j->name)
			b->by_name[b->nby_name++] = j;
		if (live_job_label(j, "vx-job"))
			b->by_job[b->nby_job++] = j;
	}
	qsort(b->by_name, b->nby_name, sizeof(*b->by_name), cmp_live_name);
	qsort(b->by_job, b->nby_job, sizeof(*b->by_job), cmp_live_job);
	for (size_t i = 0; i < in->nrecords; i++) {
		const struct plan_record *r = &in->records[i];

		b->records[i] = r;
		if (r->current && r->current->name)
			b->known[b->nknown++] = r->current->name;
		for (size_t k = 0; k < r->nknown; k++)
			b->known[b->nknown++] = r->known[k];
	}
	for (size_t i = 0; i < in->ndecls; i++)
		b->decls[i] = &in->decls[i];
	qsort(b->records, in->nrecords, sizeof(*b->records), cmp_addr);
	qsort(b->decls, in->ndecls, sizeof(*b->decls), cmp_addr);
	qsort(b->known, b->nknown, sizeof(*b->known), cmp_cstr);
	return 0;
}

static void free_indexes(struct builder *b)
{
	free(b->by_name);
	free(b->by_job);
	free(b->records);
	free(b->decls);
	free(b->known);
	free(b->created);
}

int plan_build(struct plan *out, const struct plan_input *in, struct vx_err *err)
{
	struct builder b;

	memset(&b, 0, sizeof(b));
	b.p = out;
	b.in = in;
	memset(out, 0, sizeof(*out));
	if (build_indexes(&b) < 0)
		b.oom = 1;
	for (size_t i = 0; i < in->ndecls && !b.oom; i++) {
		const struct plan_decl *d = &in->decls[i];

		if (targeted(in, d->address)) {
			const struct plan_record *rec = find_record(&b, d->address);
			size_t first = out->n;

			plan_declared(&b, d, rec);
			settings_update(&b, d, rec, first);
		}
	}
	for (size_t i = 0; i < in->nrecords && !b.oom; i++) {
		const struct plan_record *r = &in->records[i];

		if (!find_decl(&b, r->address) && targeted(in, r->address))
			plan_removed(&b, r);
	}
	if (!b.oom)
		check_other_lineage(&b);
	if (!b.oom)
		check_released(&b);
	if (!b.oom)
		plan_untracked(&b);
	free_indexes(&b);
	if (b.oom) {
		plan_release(out);
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	}
	plan_sort(out);
	return 0;
}


/* ---- plan: from the stack and the state ---------------------------------- */

static enum plan_on_change on_change(enum stack_on_change v)
{
	switch (v) {
	case STACK_ON_CHANGE_AFTER_FINISH: return PLAN_ON_CHANGE_AFTER_FINISH;
	case STACK_ON_CHANGE_IGNORE: return PLAN_ON_CHANGE_IGNORE;
	default: return PLAN_ON_CHANGE_REPLACE;
	}
}

/* Whether a history entry is a create the server refused (record_refused). */
static int is_refusal(const struct state_run *h)
{
	return !h->resource && h->failure && (!strcmp(h->failure, "refused") || !strcmp(h->failure, "quota"));
}

/*
 * The refused creates at the end of r's history (a new run moves the
 * current one to the end of the history), those of the newest one's spec
 * and run, unless a run of that spec and run was made since.
 */
static void note_refusals(struct plan_refusal *out, const struct state_record *r)
{
	const struct state_run *last;

	memset(out, 0, sizeof(*out));
	if (!r->nhistory || !is_refusal(&r->history[r->nhistory - 1]))
		return;
	last = &r->history[r->nhistory - 1];
	/* A run made since (the first create was refused, a later one was not). */
	if (r->current && r->current->resource && vx_text_same(r->current->spec_hash, last->spec_hash) &&
	    r->current->run == last->run && r->current->attempt >= last->attempt)
		return;
	out->spec_hash = last->spec_hash;
	out->run = last->run;
	out->attempt = last->attempt;
	out->at_ms = last->ended_ms ? last->ended_ms : last->created_ms;
	out->cls = last->failure;
	out->message = last->error_message;
	for (size_t h = r->nhistory; h-- > 0;) {
		const struct state_run *x = &r->history[h];

		if (!is_refusal(x) || !vx_text_same(x->spec_hash, last->spec_hash) || x->run != last->run)
			break;
		out->n++;
	}
}

void planner_rung_id(struct plan_rung_id *out, const struct stack_job *j, int64_t k)
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

/*
 * Where the state of st is kept and how a state that was not found is got
 * back, for the plan error of check_other_lineage. Owned by the caller.
 */
static char *state_lost_hint(const struct stack *st)
{
	const struct stack_state_cfg *c = &st->state;
	char *prefix, *hint;

	switch (c->backend) {
	case STACK_BACKEND_GCS:
		/* The object prefix, as the gcs backend defaults it (state/state_gcs.h). */
		prefix = c->path ? vx_strdup(c->path) : vx_asprintf("vx/state/%s", st->name);
		if (!prefix)
			return NULL;
		/* A state.json deleted with its history still there is refused by
		 * the backend itself, with vx state restore: here there is neither. */
		hint = vx_asprintf("Likely cause: state.bucket or state.path changed, or everything under "
				   "gs://%s/%s/ was deleted, its history too. Fix: set the bucket and path "
				   "back, or restore gs://%s/%s/state.json from an earlier version (a "
				   "versioned bucket keeps them: gcloud storage ls --all-versions "
				   "gs://%s/%s/state.json).",
				   c->bucket, prefix, c->bucket, prefix, c->bucket, prefix);
		free(prefix);
		return hint;
	case STACK_BACKEND_FILE:
		return vx_asprintf("Likely cause: the state file %s is missing (not committed, or deleted). "
				   "Fix: restore it, or point state.path at it.",
				   c->path ? c->path : STACK_STATE_FILE_DEFAULT);
	default:
		if (!c->remote)
			return vx_asprintf("Likely cause: the state is kept on the branch %s, which this "
					   "clone does not have, and state.remote is unset, so vx does not fetch "
					   "it (a CI checkout fetches one branch). Fix: set state.remote (e.g. "
					   "remote: origin) in the Stack, or fetch the branch before planning: "
					   "git fetch origin %s:%s.", c->branch, c->branch, c->branch);
		return vx_asprintf("Likely cause: the branch %s was not found on %s (not fetched, or "
				   "deleted). Fix: fetch it (git fetch %s %s:%s), or restore it from a clone "
				   "that has it and push it.", c->branch, c->remote, c->remote, c->branch,
				   c->branch);
	}
}

static const struct live_job *live_lookup(const struct live_job **idx, size_t n, const char *name);

/* Live jobs by name, for live_end. NULL when there are none (or no memory: the state's ends are used). */
static const struct live_job **live_by_names(const struct live_set *live, size_t *n)
{
	const struct live_jobs *js = live ? live->jobs : NULL;
	const struct live_job **idx;

	*n = 0;
	if (!js || !js->n || !(idx = calloc(js->n, sizeof(*idx))))
		return NULL;
	for (size_t i = 0; i < js->n; i++)
		if (js->items[i].name)
			idx[(*n)++] = &js->items[i];
	qsort(idx, *n, sizeof(*idx), cmp_live_name);
	return idx;
}

/* A run's end: the live job's endTime when it is listed with one, else the state's. */
static int64_t live_end(const struct live_job **idx, size_t n, const struct state_run *cur)
{
	const struct live_job *lj = idx ? live_lookup(idx, n, cur->resource) : NULL;

	return lj && lj->end_ms ? lj->end_ms : cur->ended_ms;
}

int planner_plan_jobs(struct planner *out, const struct kind_plan_input *kin, struct vx_err *err)
{
	const struct stack *st = kin->st;
	const struct state *state = kin->state;
	struct plan jobs;
	size_t nknown = 0, ri = 0, ki = 0, nrec = 0, nrungs = 0, nids = 0, nlive;
	const struct live_job **byname;
	int rc;

	for (size_t i = 0; i < state->nrecords; i++) {
		if (!strncmp(state->records[i].address, "job.", 4)) {
			nrec++;
			nknown += state->records[i].nhistory;
		}
	}
	out->decls = calloc(st->njobs + 1, sizeof(*out->decls));
	out->shapes = calloc(st->njobs + 1, sizeof(*out->shapes));
	out->resubmit = calloc(st->njobs * STACK_FAIL_NCLASSES + 1, sizeof(*out->resubmit));
	out->records = calloc(nrec + 1, sizeof(*out->records));
	out->runs = calloc(nrec + 1, sizeof(*out->runs));
	out->known = calloc(nknown + 1, sizeof(*out->known));
	for (size_t i = 0; i < st->njobs; i++)
		nrungs += st->jobs[i].nrungs ? st->jobs[i].nrungs + 1 : 0;
	out->rung_regions = calloc(nrungs + 1, sizeof(*out->rung_regions));
	out->rung_shapes = calloc(nrungs + 1, sizeof(*out->rung_shapes));
	/* Every job's rung 0 has an identity, with a ladder or not. */
	out->rung_ids = calloc(nrungs + st->njobs + 1, sizeof(*out->rung_ids));
	out->policies = calloc(st->njobs + 1, sizeof(*out->policies));
	if (state->serial == 0)
		out->state_lost_hint = state_lost_hint(st);
	if (!out->decls || !out->shapes || !out->resubmit || !out->records || !out->runs || !out->known ||
	    !out->rung_regions || !out->rung_shapes || !out->rung_ids || !out->policies ||
	    (state->serial == 0 && !out->state_lost_hint)) {
		rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < st->njobs; i++) {
		const struct stack_job *j = &st->jobs[i];
		struct plan_decl *d = &out->decls[i];

		d->address = j->d.address;
		d->name = j->d.name;
		d->project = st->project;
		d->region = j->region;
		d->spec_hash = j->spec.hash;
		d->spec_json = j->spec.redacted_json;
		out->shapes[i] = job_spec_shape(&j->spec);
		d->shape = out->shapes[i];
		d->run = j->run;
		d->resubmit_on = &out->resubmit[ri];
		for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
			if (j->resubmit_on & (1u << c))
				out->resubmit[ri++] = stack_fail_names[c];
		d->nresubmit_on = (size_t)(&out->resubmit[ri] - d->resubmit_on);
		d->max_attempts = j->max_attempts;
		if (j->nrungs) {
			size_t base = out->nrung_shapes;

			d->rung_regions = &out->rung_regions[base];
			d->rung_shapes = (const char *const *)&out->rung_shapes[base];
			d->nrungs = j->nrungs + 1;
			for (size_t k = 0; k <= j->nrungs; k++) {
				out->rung_regions[base + k] = stack_job_rung_region(j, (int64_t)k);
				out->rung_shapes[base + k] = job_spec_shape(stack_job_rung_spec(j, (int64_t)k));
				out->nrung_shapes++;
				if (!out->rung_shapes[base + k]) {
					rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
					goto fail;
				}
			}
		}
		d->rung_ids = &out->rung_ids[nids];
		for (size_t k = 0; k <= j->nrungs; k++)
			planner_rung_id(&out->rung_ids[nids++], j, (int64_t)k);
		d->on_change = on_change(j->on_change);
		d->protect = j->protect;
		d->on_remove = (enum plan_on_remove)j->on_remove;
		d->retry_delay_ms = j->resubmit_delay_ms;
		if (policy_of_job(&out->policies[i], st, j) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
			goto fail;
		}
		out->npolicies = i + 1;
		d->policy = &out->policies[i];
		d->user = j;
	}
	byname = live_by_names(kin->live, &nlive);
	for (size_t i = 0, n = 0; i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];
		struct plan_record *pr;

		if (strncmp(r->address, "job.", 4) != 0)
			continue;
		pr = &out->records[n];
		pr->address = r->address;
		pr->spec_hash = r->spec_hash;
		pr->spec_json = r->spec_json;
		pr->run = r->run;
		pr->protect = r->protect;
		pr->on_remove = (enum plan_on_remove)r->on_remove;
		pr->applied = r->applied;
		pr->unlabelled_import = r->current && r->current->action &&
					!strcmp(r->current->action, "import") &&
					!vx_labels_get(r->current->labels, r->current->nlabels, "vx-stack");
		pr->user = r;
		if (r->current) {
			struct plan_run *run = &out->runs[n];

			run->name = r->current->resource;
			run->project = r->current->project;
			run->region = r->current->region;
			run->state = r->current->state;
			run->error_code = (int)r->current->error_code;
			run->error_message = r->current->error_message;
			run->attempt = r->current->attempt;
			run->rung = r->current->rung;
			run->rung_id.region = r->current->region;
			run->rung_id.scheduling = r->current->rung_scheduling;
			run->rung_id.machine = r->current->rung_machine;
			run->rung_id.reservation = r->current->rung_reservation;
			run->end_ms = live_end(byname, nlive, r->current);
			run->created_ms = r->current->created_ms;
			run->started_ms = r->current->started_ms;
			run->cancelled_by_vx = r->current->cancelled_by_vx;
			/* A create that never answered has no resource: the plan treats it as
			 * no current run, and adoption by labels finds the job if it exists. */
			if (run->name)
				pr->current = run;
		}
		pr->known = &out->known[ki];
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource)
				out->known[ki++] = r->history[h].resource;
		pr->nknown = (size_t)(&out->known[ki] - pr->known);
		note_refusals(&pr->refusal, r);
		n++;
	}
	free(byname);
	out->in.stack = st->name;
	out->in.lineage = out->lineage;
	out->in.decls = out->decls;
	out->in.ndecls = st->njobs;
	out->in.records = out->records;
	out->in.nrecords = nrec;
	out->in.live = kin->live ? kin->live->jobs : NULL;
	out->in.released = kin->live ? kin->live->released : NULL;
	out->in.targets = kin->targets;
	out->in.ntargets = kin->ntargets;
	out->in.replaces = kin->replaces;
	out->in.nreplaces = kin->nreplaces;
	out->in.state_is_new = state->serial == 0;
	out->in.state_lost_hint = out->state_lost_hint;
	out->in.now_ms = kin->now_ms;
	rc = plan_build(&jobs, &out->in, err);
	if (rc < 0)
		return rc;
	rc = plan_merge(&out->plan, &jobs);
	plan_release(&jobs);
	return rc < 0 ? vx_err_set(err, rc, "planning: out of memory") : 0;
fail:
	return rc;
}

static int add_place(struct planner_place **arr, size_t *n, const char *project, const char *region)
{
	struct planner_place *p;

	if (!region || !project)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].region, region) && !strcmp((*arr)[i].project, project))
			return 0;
	p = realloc(*arr, (*n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	*arr = p;
	p[*n].project = project;
	p[*n].region = region;
	(*n)++;
	return 0;
}

static int cmp_place(const void *a, const void *b)
{
	const struct planner_place *x = a, *y = b;
	int c = strcmp(x->project, y->project);

	return c ? c : strcmp(x->region, y->region);
}

int planner_places(const struct stack *st, const struct state *state, struct planner_place **out,
		   size_t *n)
{
	struct planner_place *arr = NULL;
	size_t cnt = 0;

	/* Every region a ladder can reach: an attempt left by a crash on any
	 * rung is found (and adopted) by its labels wherever it runs. */
	for (size_t i = 0; i < st->njobs; i++)
		for (size_t k = 0; k <= st->jobs[i].nrungs; k++)
			if (add_place(&arr, &cnt, st->project, stack_job_rung_region(&st->jobs[i], (int64_t)k)) < 0)
				goto oom;
	for (size_t i = 0; state && i < state->nrecords; i++) {
		const struct state_run *cur = state->records[i].current;

		/* Only jobs' runs: a reservation's zone or a quota preference's
		 * "global" is no Vertex region. */
		if (kind_of_address(state->records[i].address) != &kind_job)
			continue;
		if (cur && add_place(&arr, &cnt, cur->project ? cur->project : st->project, cur->region) < 0)
			goto oom;
	}
	if (cnt > 1)
		qsort(arr, cnt, sizeof(*arr), cmp_place);
	*out = arr;
	*n = cnt;
	return 0;
oom:
	free(arr);
	return VX_ENOMEM;
}


/* ---- apply ---------------------------------------------------------------- */

/* One unit of API work run on a worker thread. */
struct task {
	struct provider *prov;
	int is_cancel;
	const char *cancel_name;
	const struct provider_fence *fence; /* for cancels; creates carry it in req */
	struct provider_job_request req;
	struct live_job created;
	struct vx_err err;
	int rc;
};

static void task_one(void *ud, size_t i)
{
	struct task *t = (struct task *)ud + i;

	if (t->is_cancel)
		t->rc = t->prov->cancel_job(t->prov, t->cancel_name, t->fence, &t->err);
	else
		t->rc = t->prov->create_job(t->prov, &t->req, &t->created, &t->err);
}

/* Runs tasks all at once, each on its own worker (n == count here: callers batch). */
static void run_tasks(struct task *tasks, size_t n)
{
	vx_pool_run(n, n, task_one, tasks);
}


static const struct stack_job *decl_job(const struct plan_action *pa)
{
	return pa->decl ? (const struct stack_job *)pa->decl->user : NULL;
}

/* Marks the record's current run as cancelled by vx (so it is never "cancelled outside"). */
static void mark_cancelled(struct state *state, const char *address, const char *resource)
{
	struct state_record *r = state_find(state, address);

	if (r && r->current && r->current->resource && !strcmp(r->current->resource, resource)) {
		r->current->cancelled_by_vx = 1;
		free(r->current->state);
		r->current->state = strdup("JOB_STATE_CANCELLING");
	}
}

static int do_cancels(struct applier *a, struct vx_err *err)
{
	size_t n = 0, par = (size_t)(a->opts->parallelism > 0 ? a->opts->parallelism : 8);
	const struct plan_action **acts = calloc(a->plan->n + 1, sizeof(*acts));
	struct task *tasks = NULL;
	int rc = 0;

	if (!acts)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	for (size_t i = 0; i < a->plan->n; i++)
		if (a->plan->actions[i].cancel_name)
			acts[n++] = &a->plan->actions[i];
	for (size_t off = 0; off < n && rc == 0; off += par) {
		size_t k = n - off < par ? n - off : par;

		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			break;
		}
		tasks = calloc(k, sizeof(*tasks));
		if (!tasks) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			break;
		}
		for (size_t i = 0; i < k; i++) {
			tasks[i].prov = a->prov;
			tasks[i].is_cancel = 1;
			tasks[i].cancel_name = acts[off + i]->cancel_name;
			tasks[i].fence = applier_fence(a);
		}
		/* Renewed if due, so the batch starts with most of the lease ahead. */
		rc = applier_heartbeat(a, err);
		if (rc == 0)
			run_tasks(tasks, k);
		if (rc == 0 && a->fenced)
			rc = applier_fence_stop(a, err);
		for (size_t i = 0; i < k && rc == 0; i++) {
			const struct plan_action *pa = acts[off + i];

			if (tasks[i].rc < 0 && tasks[i].rc != VX_ENOTFOUND) {
				applier_fail(a, pa->address, "cancel", &tasks[i].err);
			} else {
				/*
				 * Only the record whose current run this is learns of the
				 * cancel (an untracked job's action has no record), and the
				 * record stays: the next plan forgets it once the run has
				 * ended, so its last state is recorded.
				 */
				if (pa->record)
					mark_cancelled(a->state, pa->address, pa->cancel_name);
				if (pa->kind == PLAN_CANCEL)
					a->res->ok++;
				applier_progress(a, "- %s cancel %s%s", pa->address, pa->cancel_name,
					 pa->record ? "" : " (untracked)");
			}
		}
		for (size_t i = 0; i < k; i++)
			vx_err_release(&tasks[i].err);
		free(tasks);
		tasks = NULL;
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	free(acts);
	return rc;
}

/* Records what j declares as r's applied policy, unless the apply keeps the policy as it is. */
static void record_policy(struct applier *a, struct state_record *r, const struct stack_job *j)
{
	if (!a->opts->keep_policy && policy_record(r, a->st, j) < 0)
		a->oom = 1;
}

/* Jobs whose protect, onRemove or policy changed: recorded, no run started. */
static void do_updates(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		struct state_record *r;

		if (pa->kind_of != &kind_job || pa->kind != PLAN_UPDATE || !decl_job(pa))
			continue;
		if ((r = state_find(a->state, pa->address))) {
			r->protect = decl_job(pa)->protect;
			r->on_remove = decl_job(pa)->on_remove;
			record_policy(a, r, decl_job(pa));
			a->res->ok++;
			applier_progress(a, "~ %s update %s", pa->address, pa->reason ? pa->reason : "");
		}
	}
}

static void do_forgets(struct applier *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_job || pa->kind != PLAN_FORGET)
			continue;
		if (state_find(a->state, pa->address))
			(void)state_remove_record(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "- %s forget", pa->address);
	}
}

static int is_create(enum plan_kind k)
{
	return k == PLAN_CREATE || k == PLAN_REPLACE || k == PLAN_RERUN || k == PLAN_RESUBMIT;
}

/* Everything one create needs, kept for the batch. */
struct create {
	const struct plan_action *pa;
	const struct stack_job *job;
	struct vx_label *labels;
	size_t nlabels;
	int done;  /* settled without a create (adopted) */
	size_t region_ix; /* its region's place among the regions, by first appearance */
	size_t rank;      /* how many creates of its region come before it in the plan */
};

static int make_labels(struct applier *a, struct create *c)
{
	const struct stack_job *j = c->job;
	/* The identity is the declared spec's hash on every rung: moving down
	 * the ladder is another attempt of the same run, not a new spec. */
	struct run_id id = { a->st->name, a->state->lineage, j->d.name, j->spec.hash, c->pa->run,
			     c->pa->attempt, c->pa->rung };

	return runlabel_build(&c->labels, &c->nlabels, &id, j->labels.items, j->labels.n);
}

/* Makes sure the record exists and matches the declaration; returns it. */
static struct state_record *record_for(struct applier *a, const struct stack_job *j, struct vx_err *err)
{
	struct state_record *r = state_find(a->state, j->d.address);

	if (!r && state_add_record(a->state, j->d.address, "CustomJob", &r, err) < 0)
		return NULL;
	record_policy(a, r, j);
	return r;
}

/*
 * Records on run what it is created with (machine type, GPUs, replicas,
 * strategy, reservation), so vx report and vx log can price it after the
 * declaration changes. The machine type is the accelerator pools' (else the
 * first pool's); replicas and GPUs are totals over the pools. 0, or VX_ENOMEM.
 */
static int run_machines(struct state_run *run, const struct job_spec *spec)
{
	const char *first = NULL, *gpu_machine = NULL, *gpu = NULL;
	int64_t replicas = 0, gpus = 0;

	for (size_t i = 0; i < spec->npools; i++) {
		const struct spec_pool *p = &spec->pools[i];
		const char *vertex = p->accelerator_type;
		int64_t each = p->accelerator_count, n = p->replica_count > 0 ? p->replica_count : 1;

		if (!p->machine_type)
			continue;
		if (!first)
			first = p->machine_type;
		replicas += n;
		if (!vertex)
			(void)machines_fixed_gpus(p->machine_type, &vertex, &each);
		if (!vertex)
			continue;
		if (each <= 0 && !machines_fixed_gpus(p->machine_type, NULL, &each))
			each = 1;
		gpus += n * each;
		if (!gpu) {
			gpu = vertex;
			gpu_machine = p->machine_type;
		}
	}
	if (!first)
		return 0;
	run->machine_type = vx_strdup(gpu_machine ? gpu_machine : first);
	run->accelerator_type = gpu ? vx_strdup(gpu) : NULL;
	run->accelerator_count = gpus;
	run->replicas = replicas;
	run->strategy = vx_strdup(spec->strategy ? spec->strategy : "STANDARD");
	run->reservation = spec->reservation ? vx_strdup(spec->reservation) : NULL;
	if (!run->machine_type || !run->strategy || (gpu && !run->accelerator_type) ||
	    (spec->reservation && !run->reservation))
		return VX_ENOMEM;
	return 0;
}

/* Records a new current run (created or adopted) for a job. */
static int start_run(struct applier *a, const struct plan_action *pa, const struct stack_job *j,
		     const struct live_job *lj, const struct vx_label *labels, size_t nlabels,
		     const char *action, struct vx_err *err)
{
	struct state_record *r = record_for(a, j, err);
	struct state_run run;
	int new_key;

	if (!r)
		return err->code ? err->code : VX_ENOMEM;
	memset(&run, 0, sizeof(run));
	new_key = !r->spec_hash || strcmp(r->spec_hash, j->spec.hash) != 0 || r->run != j->run;
	free(r->spec_hash);
	r->spec_hash = strdup(j->spec.hash);
	free(r->spec_json);
	r->spec_json = j->spec.redacted_json ? strdup(j->spec.redacted_json) : NULL;
	r->run = j->run;
	r->protect = j->protect;
	r->on_remove = j->on_remove;
	r->attempts = new_key ? 1 : pa->attempt;
	run.resource = vx_strdup(lj->name);
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(lj->region ? lj->region : stack_job_rung_region(j, pa->rung));
	run.action = vx_strdup(action);
	run.spec_hash = vx_strdup(j->spec.hash);
	run.run = pa->run;
	run.attempt = pa->attempt;
	run.rung = pa->rung;
	/* What the rung is, so a later edit of the ladder finds the run on it
	 * wherever the rung moved (kind_job's run_rung). Jobs without a ladder
	 * record none: their records keep their bytes. */
	if (j->nrungs) {
		struct plan_rung_id id;

		planner_rung_id(&id, j, pa->rung);
		run.rung_scheduling = vx_strdup(id.scheduling);
		run.rung_machine = vx_strdup(id.machine);
		run.rung_reservation = vx_strdup(id.reservation);
	}
	if (run_machines(&run, stack_job_rung_spec(j, pa->rung)) < 0) {
		state_run_release(&run);
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	run.state = vx_strdup(lj->state ? lj->state : "JOB_STATE_QUEUED");
	run.created_ms = lj->create_ms ? lj->create_ms : vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	run.config_dirty = a->opts->config_dirty;
	run.decl_hash = a->opts->config_dirty ? vx_strdup(a->opts->decl_hash) : NULL;
	applier_stamp_run(a, &run);
	for (size_t i = 0; i < nlabels; i++)
		if (vx_labels_set(&run.labels, &run.nlabels, labels[i].key, labels[i].value) < 0) {
			state_run_release(&run);
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		}
	/* after: which run of each dependency this run follows (sweep_plan.c) */
	if (j->nafter && sweep_follows(a->state, j, &run.follows, &run.nfollows) < 0) {
		state_run_release(&run);
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	}
	return state_record_start_run(r, &run, err);
}

/*
 * Whether a failed create was the server refusing this job (a permission, an
 * argument, a precondition, quota), the only failure that counts as an
 * attempt. Not the caller's credentials (401), an interrupt, a local error:
 * they say nothing of the job, and the next apply must simply try.
 */
static int server_refused(int rc)
{
	return rc != VX_EAUTH && rc != VX_ECANCELED && rc != VX_EIO && rc != VX_ENOMEM;
}

/*
 * A create the server refused (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, ...)
 * made no job, but it was an attempt: a past run with no resource, its
 * attempt, time, class (failure_classify_refusal) and message. The plan
 * reads it back (note_refusals, refusal_gate): the next try waits for
 * resubmit.on, maxAttempts and a backoff, never every apply.
 */
static void record_refused(struct applier *a, const struct create *c, const char *verb,
			   const struct vx_err *why)
{
	struct vx_err e2 = VX_ERR_INIT;
	struct state_record *r = record_for(a, c->job, &e2);
	const char *msg = vx_err_msg(why);
	const char *cls = failure_classify_refusal(msg);
	struct state_run run;

	memset(&run, 0, sizeof(run));
	if (!r) {
		vx_err_release(&e2);
		a->oom = 1;
		return;
	}
	run.project = vx_strdup(a->opts->project);
	run.region = vx_strdup(stack_job_rung_region(c->job, c->pa->rung));
	run.action = vx_strdup(verb);
	run.spec_hash = vx_strdup(c->job->spec.hash);
	run.run = c->pa->run;
	run.attempt = c->pa->attempt;
	run.rung = c->pa->rung;
	run.failure = vx_strdup(cls);
	run.error_message = vx_strdup(msg);
	if (run_machines(&run, stack_job_rung_spec(c->job, c->pa->rung)) < 0)
		a->oom = 1;
	run.created_ms = run.ended_ms = vx_now_ms(a->ctx);
	run.config_commit = vx_strdup(a->opts->config_commit);
	applier_stamp_run(a, &run);
	for (size_t i = 0; i < c->nlabels; i++)
		if (vx_labels_set(&run.labels, &run.nlabels, c->labels[i].key, c->labels[i].value) < 0)
			a->oom = 1;
	if (state_record_add_history(r, &run, &e2) < 0)
		a->oom = 1;
	vx_err_release(&e2);
}

static int record_created(struct applier *a, const char *name, const char *region)
{
	char **n1 = realloc(a->res->created, (a->res->ncreated + 1) * sizeof(*n1));
	char **n2;

	if (!n1)
		return VX_ENOMEM;
	a->res->created = n1;
	n2 = realloc(a->res->created_regions, (a->res->ncreated + 1) * sizeof(*n2));
	if (!n2)
		return VX_ENOMEM;
	a->res->created_regions = n2;
	n1[a->res->ncreated] = vx_strdup(name);
	n2[a->res->ncreated] = vx_strdup(region);
	a->res->ncreated++;
	return 0;
}


/*
 * After an uncertain create: list the region and look for the job by its
 * labels. 1 = found (copied to *out), 0 = certainly absent, < 0 = could not list.
 */
static int find_by_labels(struct applier *a, const struct create *c, struct live_job *out,
			  struct vx_err *err)
{
	struct live_jobs js = { 0 };
	const char *region = stack_job_rung_region(c->job, c->pa->rung);
	const char *job = vx_labels_get(c->labels, c->nlabels, "vx-job");
	/* Only this job's runs: settling waits, listing again, and a region may
	 * hold thousands of the stack's jobs. */
	int rc = job && a->prov->list_job_runs
			 ? a->prov->list_job_runs(a->prov, a->opts->project, region, a->st->name, job, &js, err)
			 : a->prov->list_jobs(a->prov, a->opts->project, region, a->st->name, &js, err);

	if (rc < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < js.n && rc == 0; i++) {
		if (runlabel_match(js.items[i].labels, js.items[i].nlabels, c->labels, c->nlabels,
				   RUNLABEL_ALL)) {
			rc = live_job_copy(out, &js.items[i]) < 0 ? VX_ENOMEM : 1;
		}
	}
	live_jobs_release(&js);
	return rc;
}

static void fill_request(struct applier *a, struct task *t, const struct create *c)
{
	t->prov = a->prov;
	t->req.project = a->opts->project;
	/* A rung's own region and spec; baseOutputDirectory is the job's on
	 * every rung (a rung cannot set it), so training resumes from its checkpoints. */
	t->req.region = stack_job_rung_region(c->job, c->pa->rung);
	t->req.display_name = c->job->display_name;
	t->req.labels = c->labels;
	t->req.nlabels = c->nlabels;
	t->req.spec_json = stack_job_rung_spec(c->job, c->pa->rung)->canonical_json;
	t->req.fence = applier_fence(a);
}

/* Resolves an uncertain create; the job may exist. Returns 0 when settled. */
static int resolve_uncertain(struct applier *a, struct create *c, struct task *t)
{
	struct vx_err e2 = VX_ERR_INIT;
	int tries, resent = 0;

	if (vx_interrupted(a->ctx)) {
		/* Asked to stop: no listing now; the next apply settles the intent. */
		vx_err_set(&t->err, VX_EUNCERTAIN, "%s; the intent stays journaled and the next "
			   "apply adopts the job if it was made", vx_err_msg(&t->err));
		return t->rc;
	}
	for (tries = 0; tries < 2; tries++) {
		struct live_job found;
		int rc;

		memset(&found, 0, sizeof(found));
		rc = find_by_labels(a, c, &found, &e2);
		if (rc == 1) {
			live_job_release(&t->created);
			t->created = found;
			t->rc = 0;
			vx_log(a->ctx, VX_LOG_INFO, "%s: the uncertain create did create %s; adopted",
			       c->pa->address, found.name);
			break;
		}
		if (rc < 0) {
			/* Cannot tell: leave the intent in the journal for the next run. */
			vx_err_set(&t->err, VX_EUNCERTAIN, "the create's outcome is unknown and listing "
				   "failed (%s); the intent stays journaled and the next plan will "
				   "adopt the job if it exists", vx_err_msg(&e2));
			break;
		}
		if (tries == 1 || vx_interrupted(a->ctx))
			break;
		/* Certainly not created: try once more. */
		vx_err_release(&t->err);
		t->rc = a->prov->create_job(a->prov, &t->req, &t->created, &t->err);
		resent = 1;
		if (t->rc != VX_EUNCERTAIN)
			break;
	}
	if (resent && t->rc < 0) {
		/* The HTTP layer's "not sent again" speaks of its own tries: say that
		 * apply itself sent the create a second time. */
		char *last = vx_strdup(vx_err_msg(&t->err));

		vx_err_set(&t->err, t->rc, "sent twice: the first create's outcome was unknown and no job "
			   "carried its labels, so it was sent once more; that one: %s",
			   last ? last : "out of memory");
		free(last);
	}
	vx_err_release(&e2);
	return t->rc;
}

static int do_adopts(struct applier *a, struct vx_err *err)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];
		const struct stack_job *j = decl_job(pa);
		struct create c = { pa, j, NULL, 0, 0, 0, 0 };
		struct live_job lj;
		int rc;

		if (pa->kind != PLAN_ADOPT || !j)
			continue;
		memset(&lj, 0, sizeof(lj));
		lj.name = pa->adopt_name;
		lj.region = pa->region;
		lj.state = pa->live_state;
		lj.create_ms = pa->adopt_create_ms;
		if (make_labels(a, &c) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		rc = start_run(a, pa, j, &lj, c.labels, c.nlabels, "adopt", err);
		vx_labels_free(c.labels, c.nlabels);
		if (rc < 0)
			return rc;
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		if (record_created(a, pa->adopt_name, pa->region) < 0)
			return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		applier_progress(a, "~ %s adopt %s", pa->address, pa->adopt_name);
	}
	return 0;
}

/* The journaled intent of an earlier apply for exactly this run (same labels), or NULL. */
static const struct state_intent *pending_intent(const struct applier *a, const struct create *c)
{
	for (size_t i = 0; i < a->state->njournal; i++) {
		const struct state_intent *in = &a->state->journal[i];

		if (!strcmp(in->address, c->pa->address) &&
		    runlabel_match(in->labels, in->nlabels, c->labels, c->nlabels,
				   RUNLABEL_SPEC | RUNLABEL_RUN | RUNLABEL_ATTEMPT))
			return in;
	}
	return NULL;
}

/*
 * An earlier apply journaled this very create and died before recording the
 * result: its request may still land. Wait (listing by labels) until the
 * intent is older than the in-flight window. Returns 1 and fills *found when
 * the job appeared, 0 when it is safe to create, 2 when interrupted first (the
 * intent must stay), < 0 on error.
 */
static int settle_intent(struct applier *a, const struct create *c, struct live_job *found,
			 struct vx_err *err)
{
	const struct state_intent *in = pending_intent(a, c);
	int64_t window = a->opts->inflight_ms > 0 ? a->opts->inflight_ms : 65000;
	int64_t poll = a->opts->poll_ms > 0 ? a->opts->poll_ms : 2000;
	int64_t started, now;
	int said = 0;

	if (!in)
		return 0;
	started = in->started_ms;
	for (;;) {
		int rc = find_by_labels(a, c, found, err);

		if (rc == VX_ECANCELED) {
			vx_err_release(err);
			return 2;
		}
		if (rc != 0)
			return rc;
		now = vx_now_ms(a->ctx);
		if (now - started >= window)
			return 0;
		if (vx_interrupted(a->ctx))
			return 2;
		/* The wait may outlast a short lease: keep it. */
		rc = applier_heartbeat(a, err);
		if (rc < 0)
			return rc;
		if (!said++ && a->hooks->progress) {
			char *line = vx_asprintf("  %s: an earlier apply's create of this run is unconfirmed "
						 "(%.1f s ago); waiting up to %.0f s for it to appear before "
						 "creating it again", c->pa->address, (double)(now - started) / 1000,
						 (double)(window - (now - started)) / 1000);

			if (line)
				a->hooks->progress(a->hooks->ud, line);
			free(line);
		}
		vx_sleep_ms(a->ctx, poll < window - (now - started) ? poll : window - (now - started));
	}
}

/*
 * A job on a declared reservation is created only once that reservation
 * exists: when its create or replace failed in this apply, the job's
 * create is not sent (it would fail on a missing reservation) and says why.
 */
static int needs_failed_reservation(struct applier *a, const struct plan_action *pa)
{
	const char *name = decl_job(pa)->spec.reservation;
	struct vx_err e = VX_ERR_INIT;
	char *addr;
	int failed;

	if (!name)
		return 0;
	if (!(addr = vx_asprintf("reservation.%s", name))) {
		a->oom = 1;
		return 1;
	}
	failed = applier_has_failed(a, addr);
	if (failed) {
		vx_err_set(&e, VX_EINVAL, "not sent: it runs on %s, which was not created", addr);
		applier_fail(a, pa->address, plan_kind_name(pa->kind), &e);
		vx_err_release(&e);
	}
	free(addr);
	return failed;
}

static int cmp_round_robin(const void *x, const void *y)
{
	const struct create *c = x, *d = y;

	if (c->rank != d->rank)
		return c->rank < d->rank ? -1 : 1;
	return c->region_ix < d->region_ix ? -1 : c->region_ix > d->region_ix;
}

/*
 * Orders the creates round-robin over their regions: the first of each
 * region (regions in the order they first appear), then the second of each,
 * and so on; within a region, plan (name) order. Google limits creates per
 * region (60 a minute), and the HTTP layer keeps one token bucket per
 * region, so a batch of -parallelism creates that all fall in one region
 * waits on that region's bucket while the others' buckets sit full. With
 * the batches interleaved, every batch draws on every region's bucket, the
 * buckets run side by side and N regions go N times as fast. The batches
 * and the crash-safety protocol around each (settle, journal and persist
 * the intents, create, record and persist the results) are unchanged: only
 * which creates share a batch changes. Why batches stay rather than a pool
 * of workers: docs/design-notes.md ("Apply across regions").
 */
static int order_round_robin(struct create *cs, size_t n)
{
	const char **regions = calloc(n + 1, sizeof(*regions));
	size_t *counts = calloc(n + 1, sizeof(*counts));
	size_t nregions = 0;

	if (!regions || !counts) {
		free(regions);
		free(counts);
		return VX_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		size_t r = 0;

		/* Regions are few (tens at most): a scan is cheaper than a table. */
		while (r < nregions && strcmp(regions[r], stack_job_rung_region(cs[i].job, cs[i].pa->rung)))
			r++;
		if (r == nregions)
			regions[nregions++] = stack_job_rung_region(cs[i].job, cs[i].pa->rung);
		cs[i].region_ix = r;
		cs[i].rank = counts[r]++;
	}
	if (nregions > 1)
		qsort(cs, n, sizeof(*cs), cmp_round_robin);
	free(regions);
	free(counts);
	return 0;
}

static int do_creates(struct applier *a, struct vx_err *err)
{
	size_t n = 0, par = (size_t)(a->opts->parallelism > 0 ? a->opts->parallelism : 8);
	struct create *cs = calloc(a->plan->n + 1, sizeof(*cs));
	struct task *tasks = NULL;
	int rc = 0;

	if (!cs)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (!is_create(pa->kind) || !decl_job(pa))
			continue;
		if (needs_failed_reservation(a, pa))
			continue;
		/* A replace whose cancel failed must not start a second run. */
		if (pa->kind == PLAN_REPLACE) {
			const struct state_record *r = state_find(a->state, pa->address);

			if (!r || !r->current || !r->current->cancelled_by_vx) {
				a->res->skipped++;
				continue;
			}
		}
		cs[n].pa = pa;
		cs[n].job = decl_job(pa);
		if (make_labels(a, &cs[n]) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			goto done;
		}
		n++;
	}
	if (order_round_robin(cs, n) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
		goto done;
	}
	for (size_t off = 0; off < n && rc == 0; off += par) {
		size_t k = n - off < par ? n - off : par;

		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped += n - off;
			break;
		}
		/* 0. Runs an apply that died may still be creating: settle them first. */
		for (size_t i = 0; i < k && rc == 0; i++) {
			struct create *c = &cs[off + i];
			struct live_job found;
			int st;

			memset(&found, 0, sizeof(found));
			st = settle_intent(a, c, &found, err);
			if (st < 0) {
				rc = st;
				break;
			}
			if (st == 2) {
				/* Still unconfirmed: its intent stays for the next apply. */
				a->res->interrupted = 1;
				a->res->skipped++;
				c->done = 1;
			}
			if (st == 1) {
				rc = start_run(a, c->pa, c->job, &found, c->labels, c->nlabels, "adopt", err);
				if (rc == 0) {
					(void)state_journal_remove(a->state, c->pa->address);
					a->res->ok++;
					if (record_created(a, found.name, stack_job_rung_region(c->job, c->pa->rung)) < 0)
						a->oom = 1;
					applier_progress(a, "~ %s adopt %s (created by an earlier apply)", c->pa->address,
						 found.name);
				}
				c->done = 1;
			}
			live_job_release(&found);
		}
		/* 1. Journal the intents, durably, before any create is sent. */
		for (size_t i = 0; i < k && rc == 0; i++)
			if (!cs[off + i].done)
				rc = applier_journal(a, cs[off + i].pa->address, plan_kind_name(cs[off + i].pa->kind),
						     cs[off + i].labels, cs[off + i].nlabels, err);
		if (rc == 0)
			rc = applier_persist(a, "vx: apply: intents", err);
		/* Renewed if due, so the batch starts with most of the lease ahead. */
		if (rc == 0)
			rc = applier_heartbeat(a, err);
		if (rc < 0)
			break;
		/* 2. Create, in parallel. */
		tasks = calloc(k, sizeof(*tasks));
		if (!tasks) {
			rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
			break;
		}
		{
			size_t m = 0;
			struct task *todo = tasks;

			/* Settled creates are left out of the batch. */
			for (size_t i = 0; i < k; i++)
				if (!cs[off + i].done)
					fill_request(a, &tasks[m++], &cs[off + i]);
			run_tasks(todo, m);
			for (size_t i = k, j = m; i-- > 0;) {
				/* Spread results back to their creates' slots. */
				if (!cs[off + i].done) {
					j--;
					if (j != i) {
						tasks[i] = tasks[j];
						memset(&tasks[j], 0, sizeof(tasks[j]));
					}
				}
			}
		}
		/*
		 * 3. Results. Not after the fence refused: the lease may be another
		 * apply's, which adopts by labels whatever this batch made.
		 */
		if (a->fenced)
			rc = applier_fence_stop(a, err);
		for (size_t i = 0; i < k && rc == 0; i++) {
			struct create *c = &cs[off + i];
			struct task *t = &tasks[i];
			const char *verb = plan_kind_name(c->pa->kind);

			if (c->done)
				continue;
			if (t->rc == VX_EUNCERTAIN)
				resolve_uncertain(a, c, t);
			if (a->fenced) {
				rc = applier_fence_stop(a, err);
				break;
			}
			if (t->rc == 0) {
				rc = start_run(a, c->pa, c->job, &t->created, c->labels, c->nlabels, verb, err);
				if (rc == 0) {
					(void)state_journal_remove(a->state, c->pa->address);
					a->res->ok++;
					if (record_created(a, t->created.name, stack_job_rung_region(c->job, c->pa->rung)) < 0)
						a->oom = 1;
					applier_progress(a, "+ %s %s %s", c->pa->address, verb, t->created.name);
				}
			} else {
				if (t->rc != VX_EUNCERTAIN) {
					(void)state_journal_remove(a->state, c->pa->address);
					if (server_refused(t->rc))
						record_refused(a, c, verb, &t->err);
				}
				applier_fail(a, c->pa->address, verb, &t->err);
			}
		}
		for (size_t i = 0; i < k; i++) {
			live_job_release(&tasks[i].created);
			vx_err_release(&tasks[i].err);
		}
		free(tasks);
		tasks = NULL;
		/*
		 * The results are saved with the next batch's intents, one commit
		 * for both (half the saves of a large apply, each of which costs
		 * every record's bytes): in between they are in memory only, and
		 * a crash there leaves their intents journaled, which the next
		 * apply settles by labels (it adopts the jobs), as after a crash
		 * during the create itself. The last batch is saved below.
		 */
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	/* The last batch's results; after an interrupt, the batches run so far.
	 * Not after the fence refused: the lease may be another apply's. */
	if (!a->fenced) {
		struct vx_err later = VX_ERR_INIT;
		int prc;

		if (n && a->msg.len == 0 && vx_buf_adds(&a->msg, "(no job created)\n") < 0)
			a->oom = 1;
		prc = applier_persist(a, "vx: apply: creates", rc == 0 ? err : &later);
		if (rc == 0)
			rc = prc;
		vx_err_release(&later);
	}
done:
	for (size_t i = 0; i < n; i++)
		vx_labels_free(cs[i].labels, cs[i].nlabels);
	free(cs);
	return rc;
}

int apply_job_removals(struct applier *a, struct vx_err *err)
{
	int rc = do_cancels(a, err);

	if (rc == 0)
		do_forgets(a);
	return rc;
}

int apply_job_changes(struct applier *a, struct vx_err *err)
{
	int rc;

	do_updates(a);
	rc = sweep_apply_waits(a, err);
	if (rc == 0)
		rc = do_adopts(a, err);
	if (rc == 0)
		rc = applier_persist(a, "vx: apply: updates and adoptions", err);
	if (rc == 0)
		rc = do_creates(a, err);
	return rc;
}

static int set_if_changed(char **dst, const char *src, int *changed)
{
	if ((!*dst && !src) || (*dst && src && !strcmp(*dst, src)))
		return 0;
	free(*dst);
	*dst = src ? strdup(src) : NULL;
	*changed = 1;
	return (src && !*dst) ? VX_ENOMEM : 0;
}

static const struct live_job *live_lookup(const struct live_job **idx, size_t n, const char *name)
{
	struct live_job key;
	const struct live_job *kp = &key, *const *hit;

	if (!name)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = (char *)(uintptr_t)name; /* only compared, never written */
	hit = bsearch(&kp, idx, n, sizeof(*idx), cmp_live_name);
	return hit ? *hit : NULL;
}

/*
 * Copies what lj says about run into it. Returns 1 when something changed,
 * 0 when not, < 0 when out of memory (run is left half-updated but valid).
 */
static int refresh_run(struct state_run *run, const struct live_job *lj, const struct state_record *r)
{
	struct failure_input in = {
		.state = lj->state, .error_code = lj->error_code, .message = lj->error_message,
		.cancelled_by_vx = run->cancelled_by_vx,
	};
	const char *cls;
	int changed = 0;

	if (set_if_changed(&run->state, lj->state, &changed) < 0 ||
	    set_if_changed(&run->error_message, lj->error_message, &changed) < 0)
		return VX_ENOMEM;
	if (run->error_code != lj->error_code) {
		run->error_code = lj->error_code;
		changed = 1;
	}
	if (lj->end_ms && run->ended_ms != lj->end_ms) {
		run->ended_ms = lj->end_ms;
		changed = 1;
	}
	/* When it started (first RUNNING): queue time and running time, for status and cost. */
	if (lj->start_ms && run->started_ms != lj->start_ms) {
		run->started_ms = lj->start_ms;
		changed = 1;
	}
	/* Its rung's strategy, else the record's spec's when the run is of that spec. */
	in.scheduling = run->rung_scheduling;
	if (!in.scheduling && r && vx_text_same(run->spec_hash, r->spec_hash))
		in.scheduling = failure_spec_strategy(r->spec_json);
	in.started = run->started_ms > 0;
	cls = failure_classify(&in);
	if (set_if_changed(&run->failure, cls, &changed) < 0)
		return VX_ENOMEM;
	return changed;
}

/* Refreshes run from the index; appends a summary line naming it when it changed. */
static size_t refresh_one(struct state_run *run, const struct live_job **idx, size_t n,
		       const struct state_record *r, int earlier, struct vx_buf *b)
{
	const struct live_job *lj = live_lookup(idx, n, run->resource);
	char *old_state;
	int changed;

	if (!lj)
		return 0;
	old_state = vx_strdup(run->state);
	changed = refresh_run(run, lj, r);
	if (changed > 0 &&
	    vx_buf_printf(b, "%s%s%s%s: %s -> %s%s%s%s\n", r->address, earlier ? " (earlier run " : "",
			  earlier ? run->resource : "", earlier ? ")" : "", job_state_short(old_state),
			  job_state_short(run->state), run->failure ? " (" : "",
			  run->failure ? run->failure : "", run->failure ? ")" : "") < 0)
		vx_buf_reset(b);
	free(old_state);
	return changed > 0;
}

size_t apply_refresh_state(struct state *state, const struct live_jobs *live, char **summary)
{
	struct vx_buf b = VX_BUF_INIT;
	const struct live_job **idx = NULL;
	size_t changed = 0, n = 0;

	if (summary)
		*summary = NULL;
	if (!live || !live->n)
		return 0;
	/* An index, so refreshing every run of 10,000 records is not 10,000 scans of the listing. */
	idx = calloc(live->n, sizeof(*idx));
	if (!idx)
		return 0;
	for (size_t k = 0; k < live->n; k++)
		if (live->items[k].name)
			idx[n++] = &live->items[k];
	qsort(idx, n, sizeof(*idx), cmp_live_name);
	for (size_t i = 0; i < state->nrecords; i++) {
		struct state_record *r = &state->records[i];

		/*
		 * Earlier runs too, until they are seen ending: a replaced run is
		 * moved to history while it is still cancelling, and its end would
		 * otherwise never be recorded.
		 */
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource && !job_state_is_terminal(r->history[h].state))
				changed += refresh_one(&r->history[h], idx, n, r, 1, &b);
		if (r->current && r->current->resource)
			changed += refresh_one(r->current, idx, n, r, 0, &b);
	}
	free(idx);
	if (summary)
		*summary = b.len ? vx_buf_detach(&b) : NULL;
	vx_buf_release(&b);
	return changed;
}


/* ---- the row of the table ------------------------------------------------ */

/* How many places are listed at once: regions are few, and Google's read
 * quota is per region, so more threads would only wait. */
#define JOB_LIST_THREADS 8

/* One place's list, filled by whichever thread takes it. */
struct job_list_slot {
	const struct planner_place *place;
	struct live_jobs js;
	struct vx_err err;
	int rc;
};

struct job_list_pool {
	struct provider *p;
	const char *stack;
	struct job_list_slot *slots;
};

static void job_list_one(void *ud, size_t i)
{
	struct job_list_pool *pool = ud;
	struct job_list_slot *s = &pool->slots[i];

	s->rc = pool->p->list_jobs(pool->p, s->place->project, s->place->region, pool->stack, &s->js,
				   &s->err);
}

/*
 * One filtered list per place a declared job or a current run lives in.
 * The places are listed side by side, on up to JOB_LIST_THREADS threads
 * (the calling thread is one; providers are thread-safe, provider.h), so
 * N regions cost the round trips of the largest, not their sum. The
 * results are merged in place order, so the live set and the plan header
 * are as if listed one after another; the first failure in place order
 * is the one reported, naming its place.
 */
static int job_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err)
{
	struct planner_place *places = NULL;
	struct job_list_pool pool;
	size_t n = 0;
	int rc = planner_places(st, state, &places, &n);

	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	memset(&pool, 0, sizeof(pool));
	pool.p = p;
	pool.stack = st->name;
		pool.slots = calloc(n ? n : 1, sizeof(*pool.slots));
	if (!pool.slots) {
		free(places);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		pool.slots[i].place = &places[i];
	vx_pool_run(n, JOB_LIST_THREADS, job_list_one, &pool);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct job_list_slot *s = &pool.slots[i];
		char *where = strcmp(places[i].project, st->project)
			? vx_asprintf("%s/%s", places[i].project, places[i].region)
			: vx_strdup(places[i].region);

		if (!where || live_store_note(out, 1, where) < 0) {
			free(where);
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		if (s->rc < 0) {
			rc = vx_err_wrap(&s->err, "reading live jobs in %s", where);
			rc = vx_err_set(err, rc, "%s", vx_err_msg(&s->err));
		}
		for (size_t k = 0; k < s->js.n && rc == 0; k++)
			if (live_jobs_push(&out->jobs, &s->js.items[k]) < 0)
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		free(where);
	}
	for (size_t i = 0; i < n; i++) {
		live_jobs_release(&pool.slots[i].js);
		vx_err_release(&pool.slots[i].err);
	}
	free(pool.slots);
	free(places);
	/* An imported job may carry no vx labels: no list above finds it. */
	if (rc == 0)
		rc = import_refresh_jobs(&out->jobs, p, state, err);
	return rc;
}

static int job_apply(struct applier *a, int removals, struct vx_err *err)
{
	return removals ? apply_job_removals(a, err) : apply_job_changes(a, err);
}

static const struct stack_decl *job_find_decl(const struct stack *st, const char *name)
{
	const struct stack_job *x = stack_find_job(st, name);

	return x ? &x->d : NULL;
}

const struct kind kind_job = {
	.name = "CustomJob",
	.prefix = "job",
	.phase = 2,
	.find_decl = job_find_decl,
	.refresh = job_refresh,
	.plan = planner_plan_jobs,
	.apply = job_apply,
	.import = kind_job_import,
	.decl_at = kind_job_decl_at,
	.status_rows = kind_job_status_rows,
};
