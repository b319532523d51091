#ifndef VX_RECONCILE_RENDER_H
#define VX_RECONCILE_RENDER_H

/*
 * A plan as people and programs read it: the human form (colour only when
 * the caller says so), markdown for CI comments, and the versioned JSON
 * documented in docs/plan-json.md (format_version 1), which is also the
 * saved-plan file written by `vxplan -out FILE`. Library code: it fills
 * buffers, cmd/ prints them.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/errtext.h"
#include "util/err.h"

struct plan;
struct vx_buf;
struct capacity_report;
struct policy_rules;

#define PLAN_FORMAT_VERSION 1

/*
 * The Stack's budget against this plan (workflow/budget.h, docs/budgets.md):
 * the one line every form of the plan shows, and its figures for the JSON
 * plan's "budget".
 */
struct render_budget {
	const char *line;   /* "budget: $12,400 of $20,000 spent (30 d); this plan at most $9,100: ..." */
	const char *period; /* "30d" or "month" */
	double limit;
	int spent_known; /* 0: the history could not be read (line says why) */
	double spent;
	int at_most_known; /* 0: a price is not in the table */
	double at_most;
	int would_exceed; /* spent + at most is over the limit (known) */
	double exceed_by; /* by how much, when would_exceed */
};

struct render_header {
	const char *stack;
	const char *project;
	const char *dir;            /* absolute path of the stack directory */
	const char *dir_in_repo;    /* the same, relative to its git work tree's root; or NULL */
	const char *backend;        /* "git", "file" */
	const char *state_ref;      /* "refs/heads/vx/state/research" or the file path */
	const char *state_commit;   /* commit id of the state the plan was made against, or NULL */
	uint64_t state_serial;
	const char *state_lineage;
	const char *state_salt;     /* the salt the plan hashed sensitive values with, when the
				     * state has none committed yet; NULL: not written. Set it
				     * only for a saved plan (see docs/design-notes.md) */
	const char *config_commit;  /* HEAD of the stack's repository, or NULL */
	int config_dirty;           /* the stack has uncommitted changes: config_commit's tree is
				     * not what is planned (decl_hash identifies it) */
	const char *decl_hash;      /* stack declaration hash */
	int refresh;                /* 0: planned from state alone */
	const char *const *regions; /* regions whose live jobs were read */
	size_t nregions;
	const char *const *also;    /* what else was read: "reservations in us-central1-a", "quota preferences" */
	size_t nalso;
	const char *const *targets; /* -target addresses the plan was limited to */
	size_t ntargets;
	int allow_other_lineage;    /* -allow-other-lineage: "allow_other_lineage": true */
	int allow_released;         /* -allow-released: "allow_released": true */
	int verbose;                /* -verbose: a sweep's runs listed, not one block */
	const struct capacity_report *capacity; /* quota and cost (reconcile/capacity.h), or NULL */
	/* Who planned, for a saved plan only ("planned_by"): the actor and the
	 * pull request (0 and NULL when not in one). NULL: not written. */
	const char *planned_by;
	int64_t pr_number;
	const char *pr_url;
	/* The markdown plan's spend line ("last 30 days: $1,240 (18% on preempted
	 * runs) · this plan: at most $312"), or NULL: none (workflow/report.h). */
	const char *spend_line;
	/* The Stack's budget line and figures, or NULL: the Stack has no budget (no line, no key). */
	const struct render_budget *budget;
	/* A saved plan only ("rendered"): the plan as vxplan printed it
	 * without colour, and as markdown, so `vx show FILE` prints it again
	 * without the cloud. NULL: not written. */
	const char *rendered_human;
	const char *rendered_markdown;
	/* The `kind: Policy` rules the stack was held to (reconcile/policy_rules.h):
	 * the plan lists the rules that held. NULL: no policy, no line. */
	const struct policy_rules *policy;
};


int render_plan_human(struct vx_buf *out, const struct plan *p, const struct render_header *h,
		      int color) VX_WUR;
int render_plan_markdown(struct vx_buf *out, const struct plan *p, const struct render_header *h) VX_WUR;
int render_plan_json(struct vx_buf *out, const struct plan *p, const struct render_header *h) VX_WUR;

/* One action of a saved plan, as needed to carry it out. */
struct saved_action {
	char *address;
	char *action;       /* plan_op_name */
	char *cancel_name;  /* or NULL */
	char *adopt_name;   /* or NULL */
	char *region;       /* or NULL */
	char *spec_hash;    /* the declared spec hash, or NULL */
	int64_t run;
	int64_t attempt;
	int has_rung;       /* after.rung was given: the action starts or adopts a job's run */
	int64_t rung;       /* after.rung */
};

struct saved_plan {
	int64_t format_version;
	char *stack;
	char *dir;           /* absolute, where it was planned */
	char *dir_in_repo;   /* relative to the root of its git work tree, or NULL (older plans,
			      * stacks outside git) */
	char *state_commit;  /* or NULL */
	uint64_t state_serial;
	char *state_lineage; /* or NULL */
	char *state_salt;    /* or NULL (see render_header) */
	char *decl_hash;
	char *planned_by;    /* the planning actor, or NULL (not saved, or older plans) */
	int64_t pr_number;   /* the pull request it was planned in, 0: none */
	char *pr_url;        /* or NULL */
	int refresh;
	char **targets;      /* -target addresses, ntargets of them */
	size_t ntargets;
	int allow_other_lineage; /* planned with -allow-other-lineage: applied with it too */
	int allow_released;      /* planned with -allow-released: applied with it too */
	struct saved_action *actions;
	size_t n;
};

/* Parses a saved plan (strict: unknown format_version refused). */
int saved_plan_parse(struct saved_plan *out, const char *json, size_t len, struct vx_err *err) VX_WUR;
/* Whether a plan made now has the same actions on the same addresses as the
 * saved one (vxapply PLANFILE applies exactly what was reviewed): 0, or
 * VX_ECONFLICT with a message that says what moved and to run vxplan again. */
int saved_plan_matches(const struct saved_plan *sp, const struct plan *p, struct vx_err *err) VX_WUR;
void saved_plan_release(struct saved_plan *sp);

/*
 * `vx show FILE`: the saved plan json[0..len) as vxplan printed it, in
 * format "human" or "markdown" (the texts it saved under "rendered"), or
 * "json" (the plan as `vxplan -format json` printed it: what only a saved
 * plan holds, "rendered", "planned_by" and "state.salt", left out; the
 * salt is a secret). Appended to out. VX_EINVAL when json is no saved plan,
 * or was saved by a vx that kept no text (then only json is shown).
 */
int saved_plan_text(struct vx_buf *out, const char *json, size_t len, const char *format,
		    struct vx_err *err) VX_WUR;

#endif
