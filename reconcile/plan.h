#ifndef VX_RECONCILE_PLAN_H
#define VX_RECONCILE_PLAN_H

/*
 * A plan: one action per address of every kind (reconcile/kind.h), each
 * made by its kind's plan function through plan_add_action, with the fields
 * every kind has (op, address, reason, drift, what and where it is, the
 * kind's declaration, live resource and record, the values it moves) and
 * the kind's own fields in its payload (a job's: reconcile/kind_job.h).
 * The renderer, the applier, the watcher and the notices read actions
 * through this and the kind's row.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/err.h"

struct kind;
struct state_record;

enum plan_op {
	PLAN_NOOP = 0,
	PLAN_CREATE,
	PLAN_ADOPT,
	PLAN_REPLACE,
	PLAN_RERUN,
	PLAN_RESUBMIT,
	PLAN_CANCEL,
	PLAN_FORGET,
	PLAN_UPDATE,     /* jobs: protect changed (recorded, no new run); reservations: resized
			  * in place; quota preferences: preferredValue patched */
	PLAN_DELETE,     /* a reservation no longer declared */
	PLAN_PENDING,    /* a quota preference granted less than preferred: shown, no change */
	PLAN_ABANDON,    /* a quota preference no longer declared: vx stops managing it */
	PLAN_WAIT,       /* a sweep's run held back (maxParallel, maxFailed): shown, no change */
	PLAN_OP_COUNT
};

struct plan_action {
	enum plan_op op;
	char *address;
	char *reason;          /* in words; NULL for a plain noop */
	char *drift;           /* what changed outside vx, or NULL */
	/* What the resource is, in a few words ("a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START"),
	 * shown after the address; NULL: nothing to say. */
	char *shape;
	char *region; /* where it is (a region, a reservation's zone), or NULL */
	int held;     /* a noop the watcher held back (its delay, a policy not applied): a
			       * run has not ended for good, so nothing announces it as given up */

	/* The kind of the address (reconcile/kind.h) and what the action is of: */
	const struct kind *kind_of;
	const void *kdecl;     /* the kind's declaration (struct stack_reservation ...), or NULL */
	const void *klive;     /* the live resource (struct live_reservation ...), or NULL */
	const struct state_record *krecord; /* the state record, or NULL */
	int has_values;
	int64_t old_value;     /* reservation count / quota preferredValue before, -2: none */
	int64_t new_value;     /* and after the action */
	/*
	 * The kind's own fields of the action (a job's: struct job_action,
	 * reconcile/kind_job.h), or NULL: kind_of->action_size bytes made zeroed by
	 * plan_add_action, whose insides kind_of->action_release frees with the plan.
	 */
	void *payload;
};

/* A sweep as the plan shows it: one block with counts (reconcile/sweep.h). */
struct plan_sweep {
	char *address;           /* "job.lr-sweep" */
	size_t runs;             /* declared runs (in the plan's targets) */
	size_t creates, waiting, running, finished, failed;
	size_t now;              /* runs active once the plan is applied */
	int64_t max_parallel, max_failed; /* 0: none */
	char *held;              /* why waiting runs are held back, or NULL */
};

struct plan {
	struct plan_action *actions;
	size_t n;
	size_t counts[PLAN_OP_COUNT];
	size_t drifts;
	struct vx_diags errors; /* plan errors (a protected job would be cancelled) */
	/* Things a reviewer must see that are not actions: live jobs that carry
	 * this stack's name but not its state's identity (foreign), left alone. */
	struct vx_diags warnings;
	struct plan_sweep *sweeps; /* owned: the stack's sweeps, in declaration order */
	size_t nsweeps;
	/* What a reviewer may want to know that is neither an action nor a
	 * warning (how many of a persistent resource's replicas its jobs use):
	 * shown after the unchanged addresses, in JSON only when there are some. */
	struct vx_diags notes;
};

#define PLAN_INIT \
	{ \
		NULL, 0, { 0 }, 0, VX_DIAGS_INIT, VX_DIAGS_INIT, NULL, 0, VX_DIAGS_INIT \
	}

/* Appends an action op of kind k for address to p, zeroed but for
 * op, kind, address and the counts; NULL when out of memory. For the kinds'
 * plan functions (reconcile/kind_*.c). */
struct plan_action *plan_add_action(struct plan *p, enum plan_op op, const struct kind *k,
				    const char *address);
/* The same, with the kind's own declaration, live resource and record (each may be NULL). */
struct plan_action *plan_add_kind_action(struct plan *p, enum plan_op op, const struct kind *k, const char *address,
					 const void *decl, const void *live, const struct state_record *record);
/* Sets a's reason to text (owned; NULL: out of memory, VX_ENOMEM). */
int plan_action_reason(struct plan_action *a, char *text) VX_WUR;
/* Sets what changed outside vx on a to text (owned) and counts it in p (NULL: VX_ENOMEM). */
int plan_action_drift(struct plan *p, struct plan_action *a, char *text) VX_WUR;
/* Moves from's actions, counts, drifts, errors and warnings into into (from
 * keeps its diags: release it). 0 or VX_ENOMEM. */
int plan_merge(struct plan *into, struct plan *from) VX_WUR;
/* Orders the actions by address (then plan kind), as the plan shows them. */
void plan_sort(struct plan *p);

/* Whether anything would change (any action other than noop). */
int plan_has_changes(const struct plan *p);
void plan_release(struct plan *p);

const char *plan_op_name(enum plan_op k);   /* "create", "replace", ... */
const char *plan_op_symbol(enum plan_op k); /* "+", "-/+", "↻", "~", "-", "" */

/* The first 12 hex digits of a spec hash, the vx-spec label value. */
void plan_short_hash(char out[13], const char *hash);
/* The vx-lineage label value: the first 12 hex digits of the state's lineage
 * (a UUID; its dashes skipped). */
void plan_lineage_label(char out[13], const char *lineage);

/* The project id and region of a Vertex resource name
 * (projects/P/locations/R/...), into out buffers of len bytes; 0, or -1 when
 * name has another form. */
int plan_resource_place(const char *name, char *project, char *region, size_t len);

#endif
