#ifndef VX_RECONCILE_REPORT_H
#define VX_RECONCILE_REPORT_H

/*
 * What ran and what it cost (vx report): from the runs a state's history
 * holds, one row per attempt with its queue and running time in a window,
 * its estimated cost (list price x running hours x replicas, from the
 * price table in force), and the sums by job, week, accelerator and
 * strategy; the reservations' VM-hours and their use; queue times per
 * strategy and region (median and p90, nearest rank); failures by class
 * and message. docs/report.md describes every figure.
 *
 * Pure: it sees plain structs and does no I/O, so every figure is
 * unit-tested (tests/unit/test_report.c). The report borrows strings from
 * its input (the history entries and states added): keep them alive until
 * report_release().
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct cJSON;
struct prices;
struct state;
struct state_history_entry;
struct state_record;
struct state_run;
struct vx_buf;

/* One run found in a state (input). */
struct report_source {
	const char *stack;
	const char *address;
	const struct state_record *record; /* the version holding run (its spec is the fallback) */
	const struct state_run *run;
	int64_t gone_ms;                   /* the record was forgotten then, this run not seen ending; 0 */
	int current;			   /* the record is in the state now (not forgotten) */
};

struct report_input {
	struct report_source *runs;
	size_t n, cap;
	const char **stacks;               /* borrowed names, in order added */
	size_t nstacks;
};

#define REPORT_INPUT_INIT { NULL, 0, 0, NULL, 0 }

/*
 * Adds the runs of stack's history h[0..n) (state_history(b, NULL, ...),
 * newest first, forgotten records included): the runs of the last version
 * of each record's lifetime, each once. Borrows h. VX_ENOMEM.
 */
int report_input_add_history(struct report_input *in, const char *stack,
			     const struct state_history_entry *h, size_t n) VX_WUR;
/* Adds the runs of a state without history (the file backend). Borrows st. */
int report_input_add_state(struct report_input *in, const struct state *st) VX_WUR;
void report_input_release(struct report_input *in);

/* One attempt. Strings are borrowed from the input unless said. */
struct report_run {
	const char *stack;
	const char *address;
	char *group;                 /* owned: the job or sweep address (job.sweep) */
	int64_t attempt, rung;
	const char *region;
	const char *strategy;        /* STANDARD, SPOT, FLEX_START, RESERVATION, or NULL */
	const char *machine_type, *accelerator_type; /* NULL when not known */
	int64_t accelerator_count, replicas;
	const char *state;           /* the last Vertex state seen, or NULL */
	const char *cls;             /* failure class or NULL */
	const char *outcome;         /* static: succeeded, preempted, ... */
	int64_t created_ms, started_ms, ended_ms; /* 0: unknown / not yet */
	int64_t queued_s;            /* created -> started (-> ended or until if it never started) */
	int64_t running_s;           /* the running time inside the window */
	int priced;                  /* 0: usd unknown, unpriced_reason says why */
	double usd;                  /* rounded to cents */
	int estimate;
	int wasted;                  /* ran and did not succeed */
	char *unpriced_reason;       /* owned, or NULL */
	char *note;                  /* owned, or NULL: how it was priced when not from its own record */
	const char *resource;
	char *message;               /* owned: the first line of the error, cleaned, or NULL */
	const char *reservation;     /* the reservation it drew on, or NULL */
	char *held_ref;		     /* owned: the held VMs it ran on (its spec's
				      * persistentResourceId: kind_spec_held_ref), or NULL */
};

struct report_reservation {
	const char *stack, *address, *zone;
	char *machine_type;          /* owned, or NULL */
	char *accelerator_type;      /* owned: the Vertex name, or NULL */
	int64_t count;               /* the count last recorded */
	int64_t from_ms, to_ms;      /* held within the window */
	double vm_hours, used_vm_hours;
	int priced, estimate;
	double usd;
	/* What its idle VM-hours cost (usd x the share of vm_hours no run of the
	 * stack used): counted as waste. */
	double usd_idle;
	/* What a job's spec names it by (a persistent resource's id), "" for a
	 * reservation; unused: no job record in the state names it. */
	char job_ref[64];
	int unused;
};

/* The most failure classes a by_job row counts (report_class_name). */
#define REPORT_MAX_CLASSES 16

/* A row of a breakdown: by job, week, accelerator or strategy. */
struct report_sum {
	char *key;
	double usd, usd_wasted;
	int64_t runs;
	/* by_job only: its attempts that ended with failure class
	 * report_class_name(i), in classes[i] (the JSON's attempts_by_class). */
	int64_t classes[REPORT_MAX_CLASSES];
};

/* The failure class a by_job row counts at index i (vx's classes, in their
 * order, then window-ended), or NULL past the last. */
const char *report_class_name(size_t i);

struct report_wait {
	const char *strategy, *region;
	int64_t runs, median_s, p90_s;
};

struct report_message {
	const char *message;         /* borrowed from a run's message, or NULL */
	int64_t runs;
	const char **addresses;      /* sorted, unique; borrowed */
	size_t naddresses;
};

struct report_failure {
	const char *cls;
	int64_t runs;
	struct report_message *messages;
	size_t nmessages;
};

struct report {
	int64_t generated_ms, since_ms, until_ms;
	const char *const *stacks;   /* borrowed from the input */
	size_t nstacks;
	const char *price_source, *price_date; /* borrowed from the prices */
	struct report_run *runs;     /* by created, then address, then attempt */
	size_t nruns;
	struct report_reservation *reservations;
	size_t nreservations;
	double usd, usd_wasted;
	struct report_sum *by_job, *by_week, *by_accelerator, *by_strategy;
	size_t nby_job, nby_week, nby_accelerator, nby_strategy;
	struct report_wait *waiting;
	size_t nwaiting;
	struct report_failure *failures;
	size_t nfailures;
	/* The budgets of the stacks that set one (workflow/budget.h), borrowed from
	 * the caller (report_build leaves them alone); "budgets" only when there are some. */
	const struct report_budget *budgets;
	size_t nbudgets;
};

/* A stack's budget over its own period (not the report's window), ending at now. */
struct report_budget {
	const char *stack;
	const char *period; /* "30d", "month" */
	double limit;
	int spent_known;
	double spent;
	const char *line; /* "budget: $3.00 of $20.00 spent (30 d): $17.00 left" */
};

/*
 * Builds the report of the runs of in whose interval (created to ended,
 * or to until when not ended) overlaps [since_ms, until_ms), priced from
 * p (NULL: every run unpriced). out is released first.
 */
int report_build(struct report *out, const struct report_input *in, const struct prices *p, int64_t since_ms,
		 int64_t until_ms, int64_t now_ms, struct vx_err *err) VX_WUR;
void report_release(struct report *r);

/* The report as the JSON document of docs/report.md (owned by the caller: cJSON_Delete). */
int report_to_json(const struct report *r, struct cJSON **out, struct vx_err *err) VX_WUR;
/* The runs as CSV (RFC 4180, one header line), appended to out. */
int report_to_csv(const struct report *r, struct vx_buf *out, struct vx_err *err) VX_WUR;

/*
 * Parses a -since / -until value: a duration before now ("30d", "12h",
 * "2w", "90m"), a date ("2026-11-01", midnight UTC) or an RFC 3339 time.
 * VX_EINVAL with a message naming flag otherwise.
 */
int report_parse_when(const char *flag, const char *s, int64_t now_ms, int64_t *out, struct vx_err *err) VX_WUR;

/*
 * The cost of one run for vx log: over its whole running time when it ended
 * ("$12.34"; "$0.00" when it never ran), its rate while it runs ("$0.71/h":
 * a figure that does not move with the clock), or "unknown". VX_ENOMEM.
 */
int report_run_cost(struct vx_buf *out, const struct state_record *rec, const struct state_run *run,
		    const struct prices *p) VX_WUR;

#endif
