#ifndef VX_RECONCILE_PLAN_H
#define VX_RECONCILE_PLAN_H

/*
 * The three-way diff (DESIGN.md section 3): for every job address, the
 * declaration (D), the state record (S) and the live jobs (L) give one
 * action. This module is pure: it sees plain structs filled by the caller
 * (reconcile/planner.c does that from the stack, the state and the
 * provider), so every rule is unit-tested without a cloud.
 *
 * Runs are identified without the state by their labels (vx-stack, vx-job,
 * vx-spec, vx-run, vx-attempt). Before any create the plan looks for a live
 * job that already carries the labels of the run it would create: if one
 * exists (an apply crashed between "create" and "write state", or a reply
 * was lost), the action is `adopt`, never a second create.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/err.h"

struct live_jobs;

enum plan_kind {
	PLAN_NOOP = 0,
	PLAN_CREATE,
	PLAN_ADOPT,
	PLAN_REPLACE,
	PLAN_RERUN,
	PLAN_RESUBMIT,
	PLAN_CANCEL,
	PLAN_FORGET,
	PLAN_KIND_COUNT
};

enum plan_on_change {
	PLAN_ON_CHANGE_REPLACE = 0,
	PLAN_ON_CHANGE_AFTER_FINISH,
	PLAN_ON_CHANGE_IGNORE,
};

/* A declared job. */
struct plan_decl {
	const char *address;        /* "job.NAME" */
	const char *name;
	const char *region;
	const char *spec_hash;      /* full lowercase hex */
	const char *spec_json;      /* redacted canonical spec, for "spec changed: <paths>"; may be NULL */
	const char *shape;          /* "a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START" */
	int64_t run;                /* >= 1 */
	const char *const *resubmit_on; /* failure class names */
	size_t nresubmit_on;
	int64_t max_attempts;       /* >= 1 */
	enum plan_on_change on_change;
	int protect;
	const void *user;           /* the caller's declaration, handed back in actions */
};

/* A run vx knows about, from the state. */
struct plan_run {
	const char *name;           /* resource name */
	const char *region;
	const char *state;          /* last seen JobState name */
	int error_code;
	const char *error_message;
	int64_t attempt;
	int64_t end_ms;
	int cancelled_by_vx;
};

/* A state record. */
struct plan_record {
	const char *address;
	const char *spec_hash;
	const char *spec_json;      /* redacted spec of the current run; may be NULL */
	int64_t run;
	int protect;
	const struct plan_run *current; /* NULL: no current run */
	const char *const *known;   /* resource names of every earlier run (history) */
	size_t nknown;
	const void *user;
};

struct plan_input {
	const char *stack;
	const struct plan_decl *decls;
	size_t ndecls;
	const struct plan_record *records;
	size_t nrecords;
	/* Every live job labelled vx-stack=<stack> in the regions in use; NULL
	 * when refresh is off (then the state's last seen states are used). */
	const struct live_jobs *live;
	const char *const *targets;  /* only these addresses, when ntargets > 0 */
	size_t ntargets;
	const char *const *replaces; /* force a new run of these */
	size_t nreplaces;
};

struct plan_action {
	enum plan_kind kind;
	char *address;
	char *reason;          /* in words; NULL for a plain noop */
	char *drift;           /* what changed outside vx, or NULL */
	char *shape;
	char *old_hash;        /* spec hash of the current run, or NULL */
	char *new_hash;        /* spec hash declared, or NULL */
	char *failure_class;   /* of the previous run, or NULL */
	char *cancel_name;     /* the live job to cancel (cancel, replace) */
	char *adopt_name;      /* the live job to adopt (adopt) */
	char *region;
	char *live_state;      /* current run's state, or NULL */
	int64_t run;           /* of the run created/adopted */
	int64_t attempt;       /* of the run created/adopted */
	int64_t max_attempts;
	const struct plan_decl *decl;     /* borrowed from the input; NULL when not declared */
	const struct plan_record *record; /* borrowed from the input; NULL when not in state */
	int error_code;        /* the failed run's google.rpc code (resubmit, noop after a failure), or 0 */
	char *error_message;   /* that run's whole error message (untrusted: strip before showing), or NULL */
	int64_t adopt_create_ms; /* the adopted live job's createTime (adopt), or 0 */
};

struct plan {
	struct plan_action *actions;
	size_t n;
	size_t counts[PLAN_KIND_COUNT];
	size_t drifts;
	struct vx_diags errors; /* plan errors (a protected job would be cancelled) */
};

#define PLAN_INIT { NULL, 0, { 0 }, 0, VX_DIAGS_INIT }

/* Builds the plan. Returns 0 (check out->errors.n for plan errors) or VX_ENOMEM. */
int plan_build(struct plan *out, const struct plan_input *in, struct vx_err *err) VX_WUR;
/* Whether anything would change (any action other than noop). */
int plan_has_changes(const struct plan *p);
void plan_release(struct plan *p);

const char *plan_kind_name(enum plan_kind k);   /* "create", "replace", ... */
const char *plan_kind_symbol(enum plan_kind k); /* "+", "-/+", "↻", "~", "-", "" */

/* The first 12 hex digits of a spec hash, the vx-spec label value. */
void plan_short_hash(char out[13], const char *hash);

#endif
