#ifndef VX_RECONCILE_KIND_H
#define VX_RECONCILE_KIND_H

/*
 * The kinds of thing vx manages, as a table (DESIGN.md section 3; the shape
 * of Redis's dictType and tmux's cmd_entry): one entry per kind, each one
 * file of reconcile/ (kind_job.c, kind_reservation.c, kind_quota.c) that
 * says how the kind is read from the live cloud, how its addresses are
 * planned from declaration x state x live, how its actions are carried out
 * and how they are described. The planner (planner.c), the apply executor
 * (apply.c), targeting, journaling, rendering and the state history are
 * written once and go through this table.
 *
 * Apply runs in phases: changes in phase order (quota preferences, then
 * reservations, then jobs, so a job's reservation exists before the job is
 * created), removals in the reverse order (jobs are cancelled before the
 * reservation they run on is deleted).
 *
 * kind_table is the one list of the kinds: the stack loader, the address
 * parsers of cmd/ and workflow/ and the planner go through it. The state
 * layer (below this one) derives a kind's directory from its address
 * prefix and keeps the prefixes it accepts in state/state.c, which a unit
 * test (test_kind) holds equal to this table. docs/design-notes.md
 * ("Adding a kind: what it touches today") lists what else a new kind
 * still touches.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"

struct plan;
struct planner;
struct planner_options;
struct provider;
struct stack;
struct stack_decl;
struct state;
struct status_input;
struct status_report;
struct applier;
struct import_outcome;
struct import_request;
struct vx_buf;

/* What the refresh read, per kind; NULL members were not read (-refresh=false). */
struct live_set {
	const struct live_jobs *jobs;
	const struct live_reservations *reservations;
	const struct live_quotas *quotas;
	/* The listed jobs `vx state rm` let go of (state->released), kept out of
	 * jobs: the planner only warns of them (NULL: none known). */
	const struct live_jobs *released;
};

/* What the refresh read, owned: each kind's refresh fills its part. */
struct live_store {
	struct live_jobs jobs;
	struct live_jobs released;  /* the state's released jobs that were listed */
	struct live_reservations reservations;
	struct live_quotas quotas;
	char **read;        /* where jobs were listed, for the plan header ("us-central1", "p2/us-central1") */
	size_t nread;
	char **also;        /* what else was listed ("reservations in us-central1-a", "quota preferences") */
	size_t nalso;
};

void live_store_release(struct live_store *ls);
/* Notes one place listed (a copy of what): jobs' in read, others' in also. VX_ENOMEM. */
int live_store_note(struct live_store *ls, int jobs, const char *what) VX_WUR;
/* The borrowed view of ls the planner takes. */
struct live_set live_store_view(const struct live_store *ls);

/*
 * Reads the live cloud for every kind (each kind's refresh), into *out
 * (released first). The reads of one kind are one list per place it uses.
 */
int kind_refresh_all(struct live_store *out, struct provider *p, const struct stack *st,
		     const struct state *state, struct vx_err *err) VX_WUR;

/* What a kind's plan function sees. */
struct kind_plan_input {
	const struct stack *st;
	const struct state *state;
	const struct live_set *live;        /* NULL: refresh off */
	const char *lineage;                /* this state's vx-lineage (plan_lineage_label) */
	const char *const *targets;         /* -target, when ntargets > 0 */
	size_t ntargets;
	const char *const *replaces;        /* -replace */
	size_t nreplaces;
	int64_t now_ms;                     /* the plan's clock (planner_options); 0: unknown */
};

struct kind {
	const char *name;       /* the YAML document's kind and the state record's kind: "Reservation" */
	/*
	 * The address prefix: "reservation" (address "reservation.NAME"). The
	 * state directory is the prefix and an "s" ("reservations/"), a rule of
	 * state/state.c.
	 */
	const char *prefix;
	int phase;              /* apply order of changes; removals run in reverse */
	/*
	 * Names are RFC 1035 labels (Compute Engine and Cloud Quotas resource
	 * names: lowercase, digits, '-'), else stack names (stack_name_valid).
	 */
	int rfc1035_names;
	/* The declaration of this kind named name ("pool" of "reservation.pool") in st, or NULL. */
	const struct stack_decl *(*find_decl)(const struct stack *st, const char *name);
	/*
	 * Lists what this kind needs from the live cloud into out (one list per
	 * zone, region or project it uses, never a get per resource), noting
	 * each place listed. state may be NULL (not loaded).
	 */
	int (*refresh)(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err);
	/*
	 * Plans every address of this kind (declared, recorded, or live and
	 * owned) into pl->plan, through plan_add_action. pl also holds what
	 * the actions borrow for as long as the plan lives. Returns 0 or
	 * VX_ENOMEM. Plan errors and warnings go to pl->plan.errors / .warnings.
	 */
	int (*plan)(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err);
	/*
	 * Carries out this kind's actions of one step: the removals (delete,
	 * cancel, forget, abandon) when removals is 1, else the rest. Returns 0
	 * when the step ran (failures are counted in the result), or a negative
	 * code when apply cannot go on (the state could not be written).
	 */
	int (*apply)(struct applier *a, int removals, struct vx_err *err);
	/*
	 * vx import (reconcile/import.h): reads req->resource, checks that it
	 * can be the declared address req->address (its name's form, project,
	 * place and name; tracked by no address of state and no state beside
	 * it; not another stack's or state's by its labels or marker), says
	 * what it found in *out (resource, status, differences live ->
	 * declared and what the next plan does about them, a warning) and,
	 * unless check_only, records it in state: the address's record, whose
	 * new current run is the resource with action "import". Called by
	 * import_resource once the address is known declared and without a
	 * current run. Refusals are VX_EINVAL, VX_ENOTFOUND and VX_ECONFLICT
	 * with a message to show as is; provider errors pass through; state is
	 * unchanged on error (out is released by the caller).
	 */
	int (*import)(struct import_outcome *out, struct state *state, struct provider *p,
		      const struct stack *st, const struct import_request *req, int check_only,
		      struct vx_err *err);
	/*
	 * The i-th declaration of this kind in st, in declaration order, or
	 * NULL past the last: how generic code goes over a kind's
	 * declarations (vx import's hint of the nearest declared address)
	 * without naming the stack's array of them.
	 */
	const struct stack_decl *(*decl_at)(const struct stack *st, size_t i);
	/*
	 * vx status (reconcile/status.h): adds this kind's rows to out, each
	 * made by status_row_add with the kind's prefix: one per declared
	 * address, and those the kind also shows (a record no longer
	 * declared, a live resource of this stack the state does not know).
	 * Reads only in (the stack, the state, what the refresh listed),
	 * never the network. status_build sorts the rows. Returns 0 or
	 * VX_ENOMEM. NULL: the kind has no rows.
	 */
	int (*status_rows)(struct status_report *out, const struct status_input *in);
};

extern const struct kind kind_job;
extern const struct kind kind_reservation;
extern const struct kind kind_quota;

/* Every kind, in phase order. */
extern const struct kind *const kind_table[];
extern const size_t kind_count;
/* At most this many kinds (kind.c asserts it), for fixed arrays over the table. */
#define KIND_MAX 16

/* The kind of an address ("reservation.pool"), or NULL. */
const struct kind *kind_of_address(const char *address);
/* The kind of a state record's or YAML kind name ("Reservation"), or NULL. */
const struct kind *kind_by_name(const char *name);

/* Whether address is one of the -target addresses (all, when there are none). */
int kind_targeted(const struct kind_plan_input *in, const char *address);
/* Whether address is one of the -replace addresses. */
int kind_replaced(const struct kind_plan_input *in, const char *address);

#endif
