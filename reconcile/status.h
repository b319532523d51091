#ifndef VX_RECONCILE_STATUS_H
#define VX_RECONCILE_STATUS_H

/*
 * vx status: what runs now, without planning or writing anything. From the
 * stack, the state (read only), what one list per place in use returned
 * and a price table, one row per address: its live state, attempt of
 * maximum, rung and region, time queued and time running, cost so far,
 * and for a run that failed whether an apply will resubmit it or vx gave
 * up (its failure class and the first line of its error).
 *
 * Pure: plain structs in, rows out, so every rule is unit-tested without a
 * cloud (tests/unit/test_status.c). docs/status.md is the user's side.
 *
 * Where the state of a run comes from: the live job when the list returned
 * it (listed = 1), else the state's last seen (listed = 0; its times are
 * then unknown but the creation). Unknown is never zero: a run whose price
 * the table lacks, or that vx has no recorded spec for, costs "unknown".
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct live_set;
struct prices;
struct stack;
struct state;
struct vx_buf;

enum status_tracking {
	STATUS_TRACKED = 0,    /* the state knows it */
	STATUS_NOT_APPLIED,    /* declared, never applied (no run, no reservation, no preference) */
	STATUS_UNTRACKED,      /* a live job labelled with this stack and this state's identity that
				* the state does not know (an apply that died before recording it) */
	STATUS_FOREIGN,        /* labelled with this stack's name but another state's identity, or none */
};

/* "tracked", "not applied", "untracked", "foreign". */
const char *status_tracking_name(enum status_tracking t);

/*
 * How a kind names its rows' two values, in the note and in the JSON
 * (reservations: count and in use; quota preferences: preferred and
 * granted). Static, set by the kind on each of its rows.
 */
struct status_values {
	const char *name, *name2; /* the note's: "count", "in use" */
	const char *key, *key2;	  /* the JSON's: "count", "in_use" */
};

/* One per-class resubmit budget of a job (resubmit.on's map form). */
struct status_budget {
	const char *cls; /* the failure class (static: stack_fail_names) */
	int64_t allowed; /* resubmissions a failure of it may have */
	int64_t used;	 /* how many the run has had */
};

#define STATUS_MAX_BUDGETS 16

struct status_row {
	char *address;           /* "job.train"; an untracked job: job.<its vx-job label, or display name> */
	const char *kind;        /* "job", "reservation", "quota" (static) */
	enum status_tracking tracking;
	int declared;            /* declared in the stack now */
	char *state;             /* "RUNNING", "FAILED" (JobState without its prefix), a reservation's
				  * status, a preference's GRANTED / PENDING / RECONCILING; NULL: none */
	int listed;              /* 1: state and times from this listing; 0: as the state last saw it */
	char *resource;          /* the Vertex job, reservation or preference name; NULL: none */
	char *region;            /* region, a reservation's zone, "global"; NULL: unknown */
	/* Jobs. */
	int64_t attempt;         /* 0: no run */
	int64_t max_attempts;    /* 0: unknown (no longer declared, untracked) */
	int64_t rung;
	int64_t create_ms, start_ms, end_ms; /* 0: unknown or not yet */
	int64_t queued_ms;       /* create -> start (-> end or now while not started); -1: unknown */
	int64_t running_ms;      /* start -> end or now; 0: never ran; -1: unknown */
	int cost_known;
	double cost;             /* rate x running hours (replicas included), in the table's currency */
	char *failure;           /* class of a failed run (failure.h), or NULL */
	int resubmits;           /* failed, and the next apply resubmits it (class in resubmit.on,
				  * attempts left) */
	int gave_up;             /* failed, and no apply will resubmit it */
	/* When it resubmits: the most the resubmission can cost (its rung's rate x
	 * timeout x attempts left, as the plan's at most); -1: unknown. */
	double resubmit_at_most;
	/* The budget applied holds that resubmission: "held: budget, $0.90 left"
	 * (set by the caller: cmd/status.c), or NULL. */
	char *held;
	int refused;             /* the last create was refused by the server: no run was made */
	char *message;           /* the failure's first line: cleaned, at most RENDER_ERROR_LINE_MAX characters */
	/* A job whose resubmit.on is a map: its budgets, in vx's order of the
	 * classes; nbudgets 0: none ("budgets" only when set). */
	struct status_budget budgets[STATUS_MAX_BUDGETS];
	size_t nbudgets;
	/* Reservations: count and in use; quota preferences: preferred and granted. */
	int has_value;
	int64_t value;
	int has_value2;
	int64_t value2;
	/* Set by the kind: its addresses have runs (jobs), whose attempt, rung,
	 * times and cost the row shows; else values names value and value2
	 * (NULL: no values). */
	int runs;
	const struct status_values *values;
};

struct status_input {
	const struct stack *st;
	const struct state *state;       /* NULL: no state yet */
	const struct live_set *live;     /* what the refresh listed (NULL members: not listed) */
	const char *const *listed;       /* where jobs were listed, for the header */
	size_t nlisted;
	const struct prices *prices;     /* NULL: every cost unknown */
	int64_t now_ms;                  /* "as of" */
};

struct status_report {
	char *stack;
	char *project;
	uint64_t serial;
	int64_t now_ms;
	char *currency;                  /* the price table's, or NULL */
	char **listed;
	size_t nlisted;
	struct status_row *rows;         /* jobs, reservations, quota preferences; each by address */
	size_t n;
	size_t cap;                      /* rows allocated */
};

/* Builds the report (*out overwritten). VX_ENOMEM. */
int status_build(struct status_report *out, const struct status_input *in, struct vx_err *err) VX_WUR;
void status_release(struct status_report *r);


/* ---- for the kinds' status_rows slots (reconcile/kind.h) ------------------ */

/*
 * A new zeroed row at the end of r for address (copied, cleaned of control
 * characters), of the kind whose prefix is kind (static: "job"), its
 * times unknown (-1); NULL when out of memory.
 */
struct status_row *status_row_add(struct status_report *r, const char *kind, const char *address);
/* The cleaned first line of a server's message: never a control character, never a URL's password. NULL: none. */
char *status_clean_message(const char *msg);
/* A declared address the listing did not return: tracked when the state has its record, else not applied. */
enum status_tracking status_declared_tracking(const struct status_input *in, const char *address);


/* "35s", "14m05s", "2h05m", "3d04h": a duration as the table shows it; "-" for < 0. */
void status_duration(char out[24], int64_t ms);

#endif
