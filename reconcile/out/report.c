/*
 * vx report's model (reconcile/out/report.h): runs from the state history,
 * priced, summed and grouped. No I/O.
 */
#include "reconcile/out/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/capacity.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/load/machines.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

#define MS_HOUR INT64_C(3600000)
#define MS_DAY (24 * MS_HOUR)

/* qsort, but for an empty array too (qsort's pointer must not be NULL even then). */
static void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- input ---- */

static int input_add(struct report_input *in, const char *stack, const char *address,
		     const struct state_record *rec, const struct state_run *run, int64_t gone_ms)
{
	if (VX_ALLOC_GROW(in->runs, in->n + 1, in->cap) < 0)
		return VX_ENOMEM;
	in->runs[in->n++] = (struct report_source){
		.stack = stack,
		.address = address,
		.record = rec,
		.run = run,
		.gone_ms = run->ended_ms ? 0 : gone_ms,
		.current = gone_ms == 0,
	};
	return 0;
}

static int input_add_stack(struct report_input *in, const char *stack)
{
	const char **p;

	for (size_t i = 0; i < in->nstacks; i++)
		if (!strcmp(in->stacks[i], stack))
			return 0;
	if (!(p = realloc(in->stacks, (in->nstacks + 1) * sizeof(*p))))
		return VX_ENOMEM;
	in->stacks = p;
	in->stacks[in->nstacks++] = stack;
	return 0;
}

static int input_add_record(struct report_input *in, const char *stack, const struct state_record *rec,
			    int64_t gone_ms)
{
	for (size_t i = 0; i < rec->nhistory; i++)
		if (input_add(in, stack, rec->address, rec, &rec->history[i], gone_ms) < 0)
			return VX_ENOMEM;
	return rec->current ? input_add(in, stack, rec->address, rec, rec->current, gone_ms) : 0;
}

struct ordered {
	const struct state_history_entry *e;
	size_t pos;
};

static int cmp_ordered(const void *a, const void *b)
{
	const struct ordered *x = a, *y = b;
	int c = strcmp(x->e->address, y->e->address);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

int report_input_add_history(struct report_input *in, const char *stack, const struct state_history_entry *h,
			     size_t n)
{
	struct ordered *o;
	int rc = 0;

	if (input_add_stack(in, stack) < 0)
		return VX_ENOMEM;
	if (!n)
		return 0;
	if (!(o = calloc(n, sizeof(*o))))
		return VX_ENOMEM;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct ordered){ .e = &h[i], .pos = i };
	sort_n(o, n, sizeof(*o), cmp_ordered);
	/* Within an address, newest first: a version with a record is the last
	 * of its lifetime when the next newer one removed it, or there is none. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct state_history_entry *e = o[i].e, *newer;

		if (!e->record)
			continue;
		newer = i > 0 && !strcmp(o[i - 1].e->address, e->address) ? o[i - 1].e : NULL;
		if (newer && newer->record)
			continue;
		rc = input_add_record(in, stack, e->record, newer ? newer->time_ms : 0);
	}
	free(o);
	return rc;
}

int report_input_add_state(struct report_input *in, const struct state *st)
{
	if (input_add_stack(in, st->stack) < 0)
		return VX_ENOMEM;
	for (size_t i = 0; i < st->nrecords; i++)
		if (input_add_record(in, st->stack, &st->records[i], 0) < 0)
			return VX_ENOMEM;
	return 0;
}

void report_input_release(struct report_input *in)
{
	free(in->runs);
	free(in->stacks);
	memset(in, 0, sizeof(*in));
}

/* ---- pricing ---- */

static double round_cents(double x)
{
	return round(x * 100.0) / 100.0;
}

static enum prices_class price_class(const char *strategy)
{
	if (strategy && !strcmp(strategy, "SPOT"))
		return PRICES_SPOT;
	if (strategy && !strcmp(strategy, "FLEX_START"))
		return PRICES_FLEX_START;
	return PRICES_ON_DEMAND;
}

/*
 * The last rates looked up: a price table is searched linearly, and the runs
 * of a history share a few shapes, so 10,000 runs cost a few searches.
 */
struct rate_memo {
	const struct prices *p;
	const char *region, *machine, *accel, *strategy;
	int64_t replicas, gpus;
	double rate;
	int estimate, upper;
	const char *missing;
};

#define RATE_MEMO 16

/* The memo of one report_build: its strings are the input's, alive while it builds. */
struct rate_memos {
	struct rate_memo m[RATE_MEMO];
	size_t next;
};

static int memo_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The rate per hour of a run from what it recorded: replicas x the machine,
 * plus its GPUs unless the machine type bundles them; -1 with *missing the
 * name the table has no figure for.
 */
static double recorded_rate_uncached(const struct prices *p, const struct state_run *run, const char *strategy,
				     int *estimate, int *upper, const char **missing);

static double recorded_rate(struct rate_memos *memo, const struct prices *p, const struct state_run *run,
			    const char *strategy, int *estimate, int *upper, const char **missing)
{
	struct rate_memo *m;

	for (size_t i = 0; i < RATE_MEMO; i++) {
		m = &memo->m[i];
		if (m->p == p && m->p && m->replicas == run->replicas && m->gpus == run->accelerator_count &&
		    memo_same(m->region, run->region) && memo_same(m->machine, run->machine_type) &&
		    memo_same(m->accel, run->accelerator_type) && memo_same(m->strategy, strategy)) {
			*estimate |= m->estimate;
			*upper |= m->upper;
			*missing = m->missing;
			return m->rate;
		}
	}
	m = &memo->m[memo->next++ % RATE_MEMO];
	*m = (struct rate_memo){ .p = p, .region = run->region, .machine = run->machine_type,
				 .accel = run->accelerator_type, .strategy = strategy, .replicas = run->replicas,
				 .gpus = run->accelerator_count };
	m->rate = recorded_rate_uncached(p, run, strategy, &m->estimate, &m->upper, &m->missing);
	*estimate |= m->estimate;
	*upper |= m->upper;
	*missing = m->missing;
	return m->rate;
}

static double recorded_rate_uncached(const struct prices *p, const struct state_run *run, const char *strategy,
				     int *estimate, int *upper, const char **missing)
{
	enum prices_class c = price_class(strategy);
	double m, g;

	*missing = run->machine_type;
	m = prices_rate(p, run->region, run->machine_type, 0, 1, c, upper, estimate);
	if (m < 0)
		return -1;
	m *= (double)run->replicas;
	if (!run->accelerator_type || run->accelerator_count <= 0 ||
	    machines_fixed_gpus(run->machine_type, NULL, NULL))
		return m;
	*missing = run->accelerator_type;
	g = prices_rate(p, run->region, run->accelerator_type, 1, 1, c, upper, estimate);
	return g < 0 ? -1 : m + g * (double)run->accelerator_count;
}

/* Whether the record's spec is the one run was created with. */
static int spec_is_runs(const struct state_record *rec, const struct state_run *run)
{
	return rec && rec->spec_json && run->spec_hash && rec->spec_hash && !strcmp(run->spec_hash, rec->spec_hash);
}

static const char *run_strategy(const struct state_record *rec, const struct state_run *run)
{
	if (run->reservation || run->rung_reservation)
		return "RESERVATION";
	if (run->strategy)
		return run->strategy;
	if (run->rung_scheduling)
		return run->rung_scheduling;
	if (spec_is_runs(rec, run)) {
		if (strstr(rec->spec_json, "SPECIFIC_RESERVATION"))
			return "RESERVATION";
		return failure_spec_strategy(rec->spec_json) ? failure_spec_strategy(rec->spec_json) : "STANDARD";
	}
	return NULL;
}

/* The rate of a run; -1 with *why (owned) when unknown, *note (owned) how it was found. */
static double run_rate(struct rate_memos *memo, const struct prices *p, const struct state_record *rec,
		       const struct state_run *run, const char *strategy, int *estimate, char **why, char **note)
{
	const char *missing = NULL;
	int upper = 0;
	double rate;

	*why = *note = NULL;
	if (strategy && !strcmp(strategy, "RESERVATION")) {
		*note = vx_strdup("on a reservation: the reservation's VM-hours are its cost");
		return *note ? 0 : -2;
	}
	if (!p) {
		*why = vx_strdup("no price table");
		return *why ? -1 : -2;
	}
	if (run->machine_type) {
		rate = recorded_rate(memo, p, run, strategy, estimate, &upper, &missing);
		if (rate < 0)
			*why = vx_asprintf("no published %s price for %s in %s",
					   strategy ? strategy : "STANDARD", missing ? missing : "?",
					   run->region ? run->region : "?");
	} else if (spec_is_runs(rec, run)) {
		rate = prices_spec_rate(p, run->region, rec->spec_json, &upper, estimate);
		if (rate < 0)
			*why = vx_asprintf("no published price for the job's machines in %s",
					   run->region ? run->region : "?");
		else if (!(*note = vx_strdup("priced from the job's recorded spec (the run predates vx "
					     "recording its machines)")))
			return -2;
	} else {
		*why = vx_strdup("the run predates vx recording its machines, and its spec is no longer recorded");
		return *why ? -1 : -2;
	}
	if (rate >= 0 && upper && !*note &&
	    !(*note = vx_strdup("no published FLEX_START price: priced at the on-demand rate, an upper bound")))
		return -2;
	if (rate < 0 && !*why)
		return -2;
	return rate;
}

/* ---- runs ---- */

static int is_terminal(const char *state)
{
	return state && (!strcmp(state, "JOB_STATE_SUCCEEDED") || !strcmp(state, "JOB_STATE_FAILED") ||
			 !strcmp(state, "JOB_STATE_CANCELLED") || !strcmp(state, "JOB_STATE_EXPIRED") ||
			 !strcmp(state, "JOB_STATE_PARTIALLY_SUCCEEDED"));
}

static const char *run_outcome(const struct state_run *run, int refused, int started)
{
	const char *st = run->state, *c = run->failure;

	if (refused)
		return "refused";
	if (st && !strcmp(st, "JOB_STATE_SUCCEEDED"))
		return "succeeded";
	if (c && !strcmp(c, "preempted"))
		return "preempted";
	if (c && (!strcmp(c, "stockout") || !strcmp(c, "wait-timeout")))
		return "stockout";
	if (c && !strcmp(c, "user-error"))
		return "user-error";
	if (run->cancelled_by_vx || (c && !strcmp(c, "cancelled-outside")) ||
	    (st && (!strcmp(st, "JOB_STATE_CANCELLED") || !strcmp(st, "JOB_STATE_CANCELLING"))))
		return "cancelled";
	if (c || is_terminal(st))
		return "failed";
	return started ? "running" : "queued";
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The first line of message, cleaned of control characters, at most 300 bytes; NULL for none. */
static char *first_line(const char *message)
{
	size_t n;
	char *s, *clean;

	if (!message || !*message)
		return NULL;
	n = strcspn(message, "\r\n");
	if (n > 300)
		n = 300;
	if (!(s = malloc(n + 1)))
		return NULL;
	memcpy(s, message, n);
	s[n] = '\0';
	clean = vx_text_clean(s);
	free(s);
	return clean;
}

static char *group_of(const char *address)
{
	const char *b = strchr(address, '[');

	return b ? vx_asprintf("%.*s", (int)(b - address), address) : vx_strdup(address);
}

/* What held VMs a spec runs on (its persistentResourceId: kind_spec_held_ref; owned into *out),
 * or NULL: 0, or VX_ENOMEM. */
static int spec_held_ref(char **out, const char *spec_json)
{
	cJSON *spec = spec_json ? cJSON_Parse(spec_json) : NULL;
	const char *id = kind_spec_held_ref(spec);
	int rc = 0;

	*out = NULL;
	if (id && !(*out = vx_strdup(id)))
		rc = VX_ENOMEM;
	cJSON_Delete(spec);
	return rc;
}

/* Fills rr from src; returns 1 when it is in the window, 0 when not, VX_ENOMEM. */
static int run_fill(struct report_run *rr, const struct report_source *src, const struct prices *p,
		    struct rate_memos *memo, int64_t since, int64_t until)
{
	const struct state_run *run = src->run;
	int64_t end, start = run->started_ms, in_from, in_to;
	int refused = !run->resource && run->failure != NULL;
	double rate;

	memset(rr, 0, sizeof(*rr));
	if (run->has_value || run->created_ms <= 0)
		return 0;
	end = run->ended_ms ? run->ended_ms : src->gone_ms ? src->gone_ms : until;
	if (end < run->created_ms)
		end = run->created_ms;
	if (run->created_ms >= until || (end <= since && run->created_ms < since))
		return 0;
	if (start > end)
		start = end;
	rr->stack = src->stack;
	rr->address = src->address;
	rr->attempt = run->attempt;
	rr->rung = run->rung;
	rr->region = run->region;
	rr->strategy = run_strategy(src->record, run);
	rr->machine_type = run->machine_type;
	rr->accelerator_type = run->accelerator_type;
	rr->accelerator_count = run->accelerator_count;
	rr->replicas = run->replicas;
	rr->state = run->state;
	rr->cls = run->failure;
	rr->outcome = run_outcome(run, refused, start > 0);
	rr->created_ms = run->created_ms;
	rr->started_ms = start;
	rr->ended_ms = run->ended_ms ? run->ended_ms : src->gone_ms;
	rr->queued_s = ((start > 0 ? start : end) - run->created_ms) / 1000;
	if (start > 0) {
		in_from = max64(start, since);
		in_to = min64(end, until);
		rr->running_s = in_to > in_from ? (in_to - in_from) / 1000 : 0;
	}
	rr->resource = run->resource;
	rr->reservation = run->reservation ? run->reservation : run->rung_reservation;
	if (!(rr->group = group_of(src->address)))
		return VX_ENOMEM;
	if (run->error_message && !(rr->message = first_line(run->error_message)))
		return VX_ENOMEM;
	if (refused || start <= 0) {
		/* Never ran: nothing to pay for. */
		rr->priced = 1;
		return 1;
	}
	if (spec_is_runs(src->record, run) && spec_held_ref(&rr->held_ref, src->record->spec_json) < 0)
		return VX_ENOMEM;
	if (rr->held_ref) {
		/* Its machines are the resource's, whose row counts them (as a reservation's). */
		rr->priced = 1;
		rr->note = vx_strdup("on a persistent resource: the resource's VM-hours are its cost");
		return rr->note ? 1 : VX_ENOMEM;
	}
	rate = run_rate(memo, p, src->record, run, rr->strategy, &rr->estimate, &rr->unpriced_reason, &rr->note);
	if (rate == -2)
		return VX_ENOMEM;
	if (rate >= 0) {
		rr->priced = 1;
		rr->usd = round_cents(rate * (double)rr->running_s / 3600.0);
		rr->estimate = 1;
	} else {
		rr->estimate = 0;
	}
	rr->wasted = rr->running_s > 0 && strcmp(rr->outcome, "succeeded") && strcmp(rr->outcome, "running") &&
		     strcmp(rr->outcome, "queued");
	return 1;
}

static void run_release(struct report_run *rr)
{
	free(rr->held_ref);
	free(rr->group);
	free(rr->unpriced_reason);
	free(rr->note);
	free(rr->message);
}

static int cmp_run(const void *a, const void *b)
{
	const struct report_run *x = a, *y = b;
	int c;

	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? -1 : 1;
	if ((c = strcmp(x->address, y->address)))
		return c;
	if ((c = strcmp(x->stack, y->stack)))
		return c;
	return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

/* ---- reservations ---- */

static int cmp_source(const void *a, const void *b)
{
	const struct report_source *x = a, *y = b;
	int c = strcmp(x->stack, y->stack);

	if (c || (c = strcmp(x->address, y->address)))
		return c;
	return (x->run->created_ms > y->run->created_ms) - (x->run->created_ms < y->run->created_ms);
}

static const char *json_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * What the record of s (its last run) holds: through its kind's held_record
 * slot, else the recorded spec's top-level machineType, acceleratorType
 * and acceleratorCount at Compute Engine's on-demand rate in its zone (a
 * reservation's).
 */
static void held_shape(const struct report_source *s, const struct prices *p, struct kind_held_shape *out)
{
	const struct kind *k = kind_of_address(s->address);
	const struct machines_gpu *gpu;
	cJSON *spec;
	const char *mt, *at;
	const cJSON *ac;

	memset(out, 0, sizeof(*out));
	out->vm_rate = -1;
	if (k && k->held_record) {
		k->held_record(s->record, s->run, p, out);
		return;
	}
	spec = s->record && s->record->spec_json ? cJSON_Parse(s->record->spec_json) : NULL;
	mt = json_str(spec, "machineType");
	at = json_str(spec, "acceleratorType");
	ac = cJSON_GetObjectItemCaseSensitive(spec, "acceleratorCount");
	out->accelerator_count = cJSON_IsNumber(ac) ? (int64_t)ac->valuedouble : 0;
	snprintf(out->machine_type, sizeof(out->machine_type), "%s", mt ? mt : "");
	/* The report names GPUs as Vertex AI does. */
	gpu = at ? machines_gpu_by_compute(at) : NULL;
	if (at)
		snprintf(out->accelerator, sizeof(out->accelerator), "%s", gpu ? gpu->vertex : at);
	if (spec && p)
		out->vm_rate = prices_vm_rate(p, s->run->region, mt, at, out->accelerator_count, &out->estimate);
	cJSON_Delete(spec);
}

/*
 * One held thing's VM-hours in the report's window from its runs s[0..n)
 * (oldest first): each run's count from its create to the next one's (or
 * the record's end, or until), inside the held shape's window when it has
 * one (a booking holds its VMs only then), none when it delivered nothing.
 */
static int reservation_fill(struct report_reservation *rv, const struct report_source *s, size_t n,
			    const struct prices *p, int64_t since, int64_t until)
{
	struct kind_held_shape shape;
	double vm_ms = 0;

	memset(rv, 0, sizeof(*rv));
	held_shape(&s[n - 1], p, &shape);
	rv->stack = s[0].stack;
	rv->address = s[0].address;
	rv->zone = s[n - 1].run->region;
	if (shape.window_end_ms) {
		since = max64(since, shape.window_start_ms);
		until = min64(until, shape.window_end_ms);
	}
	for (size_t i = 0; i < n && !shape.holds_nothing; i++) {
		const struct state_run *r = s[i].run;
		int64_t from = r->created_ms, to = i + 1 < n ? s[i + 1].run->created_ms
							    : s[i].gone_ms ? s[i].gone_ms : until;
		int64_t count = r->action && !strcmp(r->action, "delete") ? 0 : r->value;

		from = max64(from, since);
		to = min64(to, until);
		if (to <= from || count <= 0)
			continue;
		if (!rv->from_ms || from < rv->from_ms)
			rv->from_ms = from;
		rv->to_ms = max64(rv->to_ms, to);
		vm_ms += (double)count * (double)(to - from);
		rv->count = count;
	}
	rv->vm_hours = vm_ms / (double)MS_HOUR;
	snprintf(rv->job_ref, sizeof(rv->job_ref), "%s", shape.job_ref);
	rv->estimate = shape.estimate;
	if ((*shape.accelerator && !(rv->accelerator_type = vx_strdup(shape.accelerator))) ||
	    (*shape.machine_type && !(rv->machine_type = vx_strdup(shape.machine_type))))
		return VX_ENOMEM;
	if (shape.vm_rate >= 0) {
		rv->priced = 1;
		rv->estimate = 1;
		rv->usd = round_cents(shape.vm_rate * rv->vm_hours);
	}
	return 0;
}

/*
 * Whether a run of the state is a reservation's, in the report's sense: its
 * value is the VMs its kind holds, billed while held (the kind's cost rule).
 */
static int holds_vms(const struct report_source *s)
{
	const struct kind *k = kind_of_address(s->address);

	return s->run->has_value && k && k->cost == KIND_COST_HELD;
}

/* Whether a record of the state now, in rv's stack, is a job whose spec names rv (its job_ref). */
static int held_named(const struct report_reservation *rv, const struct report_input *in)
{
	const struct state_record *seen = NULL;

	for (size_t i = 0; i < in->n; i++) {
		const struct report_source *s = &in->runs[i];
		char *id = NULL;
		int named;

		if (!s->current || !s->record || s->record == seen || strcmp(s->stack, rv->stack) != 0)
			continue;
		seen = s->record;
		if (spec_held_ref(&id, s->record->spec_json) < 0)
			return 1; /* out of memory: not flagged */
		named = id && !strcmp(id, rv->job_ref);
		free(id);
		if (named)
			return 1;
	}
	return 0;
}

/*
 * What rv's idle VM-hours cost (those no run of the stack used: waste), and
 * whether no job of the state names it (for what jobs name by a job_ref).
 */
static void held_idle(struct report_reservation *rv, const struct report_input *in)
{
	double idle = rv->vm_hours - rv->used_vm_hours;

	if (rv->priced && rv->vm_hours > 0 && idle > 0)
		rv->usd_idle = round_cents(rv->usd * idle / rv->vm_hours);
	rv->unused = *rv->job_ref && !held_named(rv, in);
}

static int build_reservations(struct report *out, const struct report_input *in, const struct prices *p)
{
	struct report_source *s = NULL;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < in->n; i++)
		n += holds_vms(&in->runs[i]);
	if (!n)
		return 0;
	if (!(s = malloc(n * sizeof(*s))) || !(out->reservations = calloc(n, sizeof(*out->reservations)))) {
		free(s);
		return VX_ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < in->n; i++)
		if (holds_vms(&in->runs[i]))
			s[n++] = in->runs[i];
	sort_n(s, n, sizeof(*s), cmp_source);
	for (size_t i = 0, start = 0; rc == 0 && i < n; i++) {
		struct report_reservation *rv;

		if (i + 1 < n && !strcmp(s[i + 1].stack, s[i].stack) && !strcmp(s[i + 1].address, s[i].address))
			continue;
		rv = &out->reservations[out->nreservations];
		rc = reservation_fill(rv, &s[start], i - start + 1, p, out->since_ms, out->until_ms);
		if (rc == 0 && rv->vm_hours > 0)
			out->nreservations++;
		else
		{
			free(rv->accelerator_type);
			free(rv->machine_type);
			memset(rv, 0, sizeof(*rv));
		}
		start = i + 1;
	}
	free(s);
	/* Each reservation's use: the running VM-hours of the runs drawing on it. */
	for (size_t i = 0; i < out->nreservations; i++) {
		struct report_reservation *rv = &out->reservations[i];
		/* The name alone: a run names its reservation by name or address. rv->address
		 * is set: nreservations counts only those reservation_fill filled.
		 * NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
		const char *dot = strchr(rv->address, '.'), *name = dot ? dot + 1 : rv->address;

		for (size_t k = 0; k < out->nruns; k++) {
			const struct report_run *rr = &out->runs[k];

			/* nreservations counts only those reservation_fill filled (their stack set).
			 * NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
			if (!strcmp(rr->stack, rv->stack) &&
			    ((rr->reservation && (!strcmp(rr->reservation, name) || !strcmp(rr->reservation, rv->address))) ||
			     (*rv->job_ref && rr->held_ref && !strcmp(rr->held_ref, rv->job_ref))))
				rv->used_vm_hours += (double)rr->running_s / 3600.0 *
						     (double)(rr->replicas > 0 ? rr->replicas : 1);
		}
		held_idle(rv, in);
	}
	return rc;
}

/* ---- sums ---- */

_Static_assert(STACK_FAIL_NCLASSES + 1 <= REPORT_MAX_CLASSES, "a count per failure class");

const char *report_class_name(size_t i)
{
	if (i < STACK_FAIL_NCLASSES)
		return stack_fail_names[i];
	return i == STACK_FAIL_NCLASSES ? "window-ended" : NULL;
}

/* Counts run rr's failure class (none: nothing) in row's classes. */
static void count_class(struct report_sum *row, const struct report_run *rr)
{
	const char *name;

	for (size_t i = 0; rr->cls && (name = report_class_name(i)); i++)
		if (!strcmp(name, rr->cls)) {
			row->classes[i]++;
			return;
		}
}

static struct report_sum *sum_get(struct report_sum **rows, size_t *n, const char *key)
{
	struct report_sum *p;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*rows)[i].key, key))
			return &(*rows)[i];
	if (!(p = realloc(*rows, (*n + 1) * sizeof(*p))))
		return NULL;
	*rows = p;
	p = &p[(*n)++];
	memset(p, 0, sizeof(*p));
	if (!(p->key = vx_strdup(key))) {
		(*n)--;
		return NULL;
	}
	return p;
}

static int sum_add(struct report_sum **rows, size_t *n, const char *key, double usd, double wasted, int64_t runs)
{
	struct report_sum *s = sum_get(rows, n, key);

	if (!s)
		return VX_ENOMEM;
	s->usd = round_cents(s->usd + usd);
	s->usd_wasted = round_cents(s->usd_wasted + wasted);
	s->runs += runs;
	return 0;
}

static int cmp_sum(const void *a, const void *b)
{
	const struct report_sum *x = a, *y = b;

	if (x->usd != y->usd)
		return x->usd > y->usd ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* "2026-11-16": the Monday of the ISO week holding ms (UTC). */
static void week_of(int64_t ms, char out[16])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(out, 16, "unknown");
		return;
	}
	t -= (time_t)(((tm.tm_wday + 6) % 7) * 86400);
	if (!gmtime_r(&t, &tm) || !strftime(out, 16, "%Y-%m-%d", &tm))
		snprintf(out, 16, "unknown");
}

static int cmp_group(const void *a, const void *b)
{
	const struct report_run *x = *(const struct report_run *const *)a, *y = *(const struct report_run *const *)b;

	return strcmp(x->group, y->group);
}

/* by_job: the runs in group order, one row per group (a row per run looked up would be quadratic). */
static int sum_jobs(struct report *out)
{
	const struct report_run **v = malloc((out->nruns ? out->nruns : 1) * sizeof(*v));
	struct report_sum *row = NULL;

	if (!v)
		return VX_ENOMEM;
	for (size_t i = 0; i < out->nruns; i++)
		v[i] = &out->runs[i];
	sort_n(v, out->nruns, sizeof(*v), cmp_group);
	for (size_t i = 0; i < out->nruns; i++) {
		const struct report_run *rr = v[i];

		if ((!row || strcmp(row->key, rr->group)) && !(row = sum_get(&out->by_job, &out->nby_job, rr->group))) {
			free(v);
			return VX_ENOMEM;
		}
		row->usd = round_cents(row->usd + (rr->priced ? rr->usd : 0));
		row->usd_wasted = round_cents(row->usd_wasted + (rr->wasted && rr->priced ? rr->usd : 0));
		row->runs++;
		count_class(row, rr);
	}
	free(v);
	return 0;
}

static int build_sums(struct report *out)
{
	if (sum_jobs(out) < 0)
		return VX_ENOMEM;
	for (size_t i = 0; i < out->nruns; i++) {
		const struct report_run *rr = &out->runs[i];
		double usd = rr->priced ? rr->usd : 0, w = rr->wasted && rr->priced ? rr->usd : 0;
		const char *accel = rr->accelerator_type ? rr->accelerator_type : rr->machine_type ? "none" : "unknown";
		char week[16];

		week_of(max64(rr->started_ms ? rr->started_ms : rr->created_ms, out->since_ms), week);
		out->usd = round_cents(out->usd + usd);
		out->usd_wasted = round_cents(out->usd_wasted + w);
		if (sum_add(&out->by_week, &out->nby_week, week, usd, w, 1) < 0 ||
		    sum_add(&out->by_accelerator, &out->nby_accelerator, accel, usd, w, 1) < 0 ||
		    sum_add(&out->by_strategy, &out->nby_strategy, rr->strategy ? rr->strategy : "unknown", usd, w,
			    1) < 0)
			return VX_ENOMEM;
	}
	for (size_t i = 0; i < out->nreservations; i++) {
		const struct report_reservation *rv = &out->reservations[i];
		double usd = rv->priced ? rv->usd : 0;

		out->usd = round_cents(out->usd + usd);
		out->usd_wasted = round_cents(out->usd_wasted + rv->usd_idle);
		if (sum_add(&out->by_strategy, &out->nby_strategy, "RESERVATION", usd, rv->usd_idle, 0) < 0 ||
		    sum_add(&out->by_accelerator, &out->nby_accelerator,
			    rv->accelerator_type ? rv->accelerator_type : "none", usd, rv->usd_idle, 0) < 0)
			return VX_ENOMEM;
	}
	sort_n(out->by_job, out->nby_job, sizeof(*out->by_job), cmp_sum);
	sort_n(out->by_week, out->nby_week, sizeof(*out->by_week), cmp_sum);
	sort_n(out->by_accelerator, out->nby_accelerator, sizeof(*out->by_accelerator), cmp_sum);
	sort_n(out->by_strategy, out->nby_strategy, sizeof(*out->by_strategy), cmp_sum);
	return 0;
}

/* ---- waiting ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least pct% of the values at or below it. */
static int64_t nearest_rank(const int64_t *v, size_t n, int pct)
{
	size_t rank = ((size_t)pct * n + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

static const char *nz(const char *s, const char *def)
{
	return s ? s : def;
}

static int build_waiting(struct report *out)
{
	int64_t *v = malloc((out->nruns ? out->nruns : 1) * sizeof(*v));
	char *done = calloc(out->nruns ? out->nruns : 1, 1);
	int rc = 0;

	if (!v || !done) {
		rc = VX_ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < out->nruns; i++) {
		const struct report_run *a = &out->runs[i];
		struct report_wait *w;
		size_t n = 0;

		if (done[i] || !a->started_ms)
			continue;
		for (size_t k = i; k < out->nruns; k++) {
			const struct report_run *b = &out->runs[k];

			if (!done[k] && b->started_ms && !strcmp(nz(a->strategy, "unknown"), nz(b->strategy, "unknown")) &&
			    !strcmp(nz(a->region, "unknown"), nz(b->region, "unknown"))) {
				v[n++] = b->queued_s;
				done[k] = 1;
			}
		}
		sort_n(v, n, sizeof(*v), cmp_i64);
		if (!(w = realloc(out->waiting, (out->nwaiting + 1) * sizeof(*w)))) {
			rc = VX_ENOMEM;
			goto done;
		}
		out->waiting = w;
		out->waiting[out->nwaiting++] = (struct report_wait){
			.strategy = nz(a->strategy, "unknown"), .region = nz(a->region, "unknown"), .runs = (int64_t)n,
			.median_s = nearest_rank(v, n, 50), .p90_s = nearest_rank(v, n, 90),
		};
	}
done:
	free(v);
	free(done);
	return rc;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct report_wait *x = a, *y = b;
	int c = strcmp(x->strategy, y->strategy);

	return c ? c : strcmp(x->region, y->region);
}

/* ---- failures ---- */

static int cmp_str_p(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int message_add(struct report_failure *f, const struct report_run *rr)
{
	struct report_message *m = NULL;
	const char **a;

	for (size_t i = 0; i < f->nmessages; i++)
		if (vx_text_same(f->messages[i].message, rr->message)) {
			m = &f->messages[i];
			break;
		}
	if (!m) {
		if (!(m = realloc(f->messages, (f->nmessages + 1) * sizeof(*m))))
			return VX_ENOMEM;
		f->messages = m;
		m = &m[f->nmessages++];
		memset(m, 0, sizeof(*m));
		m->message = rr->message;
	}
	m->runs++;
	/* Sorted and made unique once, at the end (build_failures): sorting here
	 * made 10,000 runs of one message quadratic. */
	if (m->naddresses && !strcmp(m->addresses[m->naddresses - 1], rr->address))
		return 0;
	if (!(a = realloc(m->addresses, (m->naddresses + 1) * sizeof(*a))))
		return VX_ENOMEM;
	m->addresses = a;
	m->addresses[m->naddresses++] = rr->address;
	return 0;
}

/* Sorts m's addresses and drops the repeated ones. */
static void addresses_unique(struct report_message *m)
{
	size_t k = 0;

	sort_n(m->addresses, m->naddresses, sizeof(*m->addresses), cmp_str_p);
	for (size_t i = 0; i < m->naddresses; i++)
		if (!k || strcmp(m->addresses[k - 1], m->addresses[i]))
			m->addresses[k++] = m->addresses[i];
	m->naddresses = k;
}

static int cmp_message(const void *a, const void *b)
{
	const struct report_message *x = a, *y = b;

	if (x->runs != y->runs)
		return x->runs > y->runs ? -1 : 1;
	if (!x->message || !y->message)
		return (x->message != NULL) - (y->message != NULL);
	return strcmp(x->message, y->message);
}

static int cmp_failure(const void *a, const void *b)
{
	const struct report_failure *x = a, *y = b;

	if (x->runs != y->runs)
		return x->runs > y->runs ? -1 : 1;
	return strcmp(x->cls, y->cls);
}

static int build_failures(struct report *out)
{
	for (size_t i = 0; i < out->nruns; i++) {
		const struct report_run *rr = &out->runs[i];
		struct report_failure *f = NULL;

		if (!rr->cls)
			continue;
		for (size_t k = 0; k < out->nfailures; k++)
			if (!strcmp(out->failures[k].cls, rr->cls))
				f = &out->failures[k];
		if (!f) {
			if (!(f = realloc(out->failures, (out->nfailures + 1) * sizeof(*f))))
				return VX_ENOMEM;
			out->failures = f;
			f = &f[out->nfailures++];
			memset(f, 0, sizeof(*f));
			f->cls = rr->cls;
		}
		f->runs++;
		if (message_add(f, rr) < 0)
			return VX_ENOMEM;
	}
	for (size_t k = 0; k < out->nfailures; k++) {
		for (size_t i = 0; i < out->failures[k].nmessages; i++)
			addresses_unique(&out->failures[k].messages[i]);
		sort_n(out->failures[k].messages, out->failures[k].nmessages, sizeof(struct report_message),
		      cmp_message);
	}
	sort_n(out->failures, out->nfailures, sizeof(*out->failures), cmp_failure);
	return 0;
}

/* ---- build ---- */

int report_build(struct report *out, const struct report_input *in, const struct prices *p, int64_t since_ms,
		 int64_t until_ms, int64_t now_ms, struct vx_err *err)
{
	struct rate_memos *memo = calloc(1, sizeof(*memo));
	int rc = 0;

	report_release(out);
	if (!memo) {
		rc = VX_ENOMEM;
		goto done;
	}
	out->generated_ms = now_ms;
	out->since_ms = since_ms;
	out->until_ms = until_ms;
	out->stacks = in->stacks;
	out->nstacks = in->nstacks;
	out->price_source = p ? p->source : NULL;
	out->price_date = p ? p->date : NULL;
	if (in->n && !(out->runs = calloc(in->n, sizeof(*out->runs)))) {
		rc = VX_ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < in->n; i++) {
		struct report_run *rr = &out->runs[out->nruns];
		int in_window = run_fill(rr, &in->runs[i], p, memo, since_ms, until_ms);

		if (in_window < 0) {
			run_release(rr);
			rc = in_window;
			goto done;
		}
		if (in_window)
			out->nruns++;
		else
			run_release(rr);
	}
	sort_n(out->runs, out->nruns, sizeof(*out->runs), cmp_run);
	if ((rc = build_reservations(out, in, p)) < 0 || (rc = build_sums(out)) < 0 ||
	    (rc = build_waiting(out)) < 0 || (rc = build_failures(out)) < 0)
		goto done;
	sort_n(out->waiting, out->nwaiting, sizeof(*out->waiting), cmp_wait);
done:
	free(memo);
	if (rc < 0) {
		report_release(out);
		return vx_err_set(err, rc, "report: out of memory");
	}
	return 0;
}

static void sums_free(struct report_sum *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].key);
	free(s);
}

void report_release(struct report *r)
{
	for (size_t i = 0; i < r->nruns; i++)
		run_release(&r->runs[i]);
	free(r->runs);
	for (size_t i = 0; i < r->nreservations; i++) {
		free(r->reservations[i].accelerator_type);
		free(r->reservations[i].machine_type);
	}
	free(r->reservations);
	sums_free(r->by_job, r->nby_job);
	sums_free(r->by_week, r->nby_week);
	sums_free(r->by_accelerator, r->nby_accelerator);
	sums_free(r->by_strategy, r->nby_strategy);
	free(r->waiting);
	for (size_t i = 0; i < r->nfailures; i++) {
		for (size_t k = 0; k < r->failures[i].nmessages; k++)
			free(r->failures[i].messages[k].addresses);
		free(r->failures[i].messages);
	}
	free(r->failures);
	memset(r, 0, sizeof(*r));
}
