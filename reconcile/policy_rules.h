#ifndef VX_RECONCILE_POLICY_RULES_H
#define VX_RECONCILE_POLICY_RULES_H

/*
 * `kind: Policy`: the rules a team sets on what its stacks may declare
 * (docs/policy.md). Not a cloud kind (nothing of it is refreshed, planned or
 * applied, so it is not in kind_table), and not reconcile/policy.h (a job's
 * applied resubmit policy).
 *
 * A Policy comes from two places: .vx/policy.yaml at the root of the git
 * repository that holds the stack (binding every stack below it), and at
 * most one Policy document among the stack's own files, which may only
 * tighten the repository's. The rule in force is the stack's where it
 * writes one, else the repository's: the loader refuses a stack rule that
 * loosens the repository's, so that is always the tighter of both.
 *
 * The stack loader reads both (policy_rules_read, in the Policy pass) and
 * checks every declaration against the rules in force as it reads it (the
 * job kind's rules: reconcile/kind_job_policy.c; a kind refused by
 * {allow: false}: policy_rules_check_kinds). The rate rule needs a price
 * table the loader does not have: the commands check it after loading,
 * through the kinds' check_prices (kind_check_prices, reconcile/kind.h).
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct loader;
struct load_pass;
struct prices;
struct stack;
struct vx_buf;
struct vx_diags;
struct ynode;

/* The rules of a Policy document, in the order docs/policy.md lists them. */
enum policy_rule_id {
	POLICY_ACCELERATORS,	 /* accelerators: the acceleratorTypes a job may use */
	POLICY_REGIONS,		 /* regions: where a job (or a rung) may run */
	POLICY_STRATEGIES,	 /* strategies: scheduling.strategy (unset: STANDARD) */
	POLICY_MAX_GPUS_PER_JOB, /* maxGpusPerJob: GPUs of one run, every pool's replicas */
	POLICY_MAX_GPUS_ACTIVE,	 /* maxGpusActive: GPUs of the stack's runs at once */
	POLICY_MAX_HOURLY_USD,	 /* maxHourlyUsd: one run's rate in the price table */
	POLICY_MAX_TIMEOUT,	 /* maxTimeout: scheduling.timeout, which must be set */
	POLICY_REQUIRE_LABELS,	 /* requireLabels: label keys every job carries */
	POLICY_NJOB_RULES,
	/* Then one {allow: BOOL} rule per distinct policy_allow of kind_table's rows. */
};

/* The most rules a Policy may have: the job rules and one per kind. */
#define POLICY_MAX_RULES (POLICY_NJOB_RULES + 8)

/* One rule as a Policy document writes it. */
struct policy_rule {
	int set;	    /* 0: the document does not write it */
	unsigned line, col; /* where its key is written */
	char **words;	    /* list rules: owned, nwords of them */
	size_t nwords;
	double num;		       /* number rules: GPUs, USD per hour, timeout in seconds; allow: 0 or 1 */
	const struct policy_doc *from; /* the document that writes it */
};

/* One Policy document. */
struct policy_doc {
	char *name;	    /* "ml-platform" */
	char *file;	    /* as diagnostics and the plan name it (the repository's: ".vx/policy.yaml") */
	unsigned line, col; /* where the document starts */
	int repo;	    /* 1: the repository's .vx/policy.yaml */
	struct policy_rule rules[POLICY_MAX_RULES];
	char hash[65]; /* SHA-256 of its canonical form (the stack's decl_hash takes it) */
};

/*
 * One place whose rate the maxHourlyUsd rule checks once prices are known:
 * a job's spec (rung 0) or a rung's, at the field that sets its machines.
 */
struct policy_rate_site {
	char *file;
	unsigned line, col;
	char *prefix; /* "CustomJob \"train\": spec.workerPoolSpecs" */
	size_t job;   /* index in the stack's jobs */
	size_t rung;  /* 0: the job's spec; k: resubmit.fallback[k - 1] */
};

/*
 * One place where the stack breaks the rules in force. A command that only
 * reads the stack (vx status, vx report ...) or the watcher, which holds
 * what it forbids, loads such a stack with its violations here; validate,
 * plan, apply and import refuse it (docs/policy.md).
 */
struct policy_violation {
	char *file; /* where, as a diagnostic names it */
	unsigned line, col;
	char *msg;     /* the message after "FILE:LINE:COL: ", with its declaration: "CustomJob \"a\": region: ..." */
	char *address; /* the declaration it is about ("job.a"), or NULL: the whole stack (maxGpusActive) */
	int repeat;    /* the same as an earlier one (another run of a sweep): held too, said once */
	/* The rung of address's fallback ladder it is about (k + 1 for resubmit.fallback[k]): the
	 * watcher skips that rung; 0: the declaration itself (every rung), which holds the address. */
	int64_t rung;
};

/* What a stack is held to: st->policy, NULL when no Policy applies. */
struct policy_rules {
	struct policy_doc *repo; /* owned: .vx/policy.yaml, or NULL */
	char *root;		 /* owned: the work tree holding repo's file, or NULL */
	struct policy_doc *own;	 /* owned: the stack's Policy document, or NULL */
	/* The rule in force for each id: own's when it writes it, else repo's; NULL: none. */
	const struct policy_rule *in_force[POLICY_MAX_RULES];
	size_t nrules;			/* how many ids there are (the job rules and the allow rules) */
	struct policy_rate_site *sites; /* owned: what maxHourlyUsd checks once prices are known */
	size_t nsites, asites;
	/* Owned: the violations found, in the order found, when the stack was
	 * loaded leniently (stack_load_lenient); none otherwise, as they fail the load. */
	struct policy_violation *violations;
	size_t nviolations;
	int lenient;	/* loaded by stack_load_lenient: maxHourlyUsd adds violations too */
	int rates_held; /* the rate rule's violations were added (once: kind_job_check_prices) */
};

/* Appends a violation to p (copies). 0 or VX_ENOMEM. */
int policy_rules_add_violation(struct policy_rules *p, const char *file, unsigned line, unsigned col,
			       const char *address, const char *msg) VX_WUR;

/* Frees p's violations (and only them), leaving none. */
void policy_rules_violations_release(struct policy_rules *p);

/*
 * The first violation about address, else the first stack-wide one (each
 * address breaks those), or NULL: what may not start or change there.
 */
const struct policy_violation *policy_rules_violation_of(const struct policy_rules *p, const char *address);

/* The key of rule id in a Policy's rules ("accelerators", "reservations"), or NULL past the last. */
const char *policy_rule_key(size_t id);

/*
 * Appends "policy \"NAME\" (rules.KEY, FILE:LINE)" for the rule in force
 * of id to b. 0 or VX_ENOMEM.
 */
int policy_rule_where(struct vx_buf *b, const struct policy_rules *p, size_t id) VX_WUR;

/* A number rule's value as people write it: "16", "200", a timeout in hours when whole ("72h", "90m"). Returns out. */
const char *policy_num_text(char out[32], size_t id, double num);

/* How many rules hold (are in force), for the plan's policy line. */
size_t policy_rules_count(const struct policy_rules *p);

/*
 * Appends what the plan says of the policy to b: "ml-platform
 * (.vx/policy.yaml): 7 rules held: accelerators, regions, ..." (both
 * documents when the stack has its own: "NAME (FILE), NAME (FILE): ...").
 * 0 or VX_ENOMEM.
 */
int policy_rules_summary(struct vx_buf *b, const struct policy_rules *p) VX_WUR;

/* NULL-safe. */
void policy_rules_free(struct policy_rules *p);

/* ---- for the stack loader (reconcile/stack.c) ---- */

/* The repository's policy file, relative to its work tree's root. */
#define POLICY_REPO_FILE ".vx/policy.yaml"

/* The Policy document's kind for the loader: not one of kind_table's. */
extern const struct kind policy_doc_kind;

/*
 * Reads the repository's .vx/policy.yaml into the loader's stack
 * (st->policy->repo), as the first part of the Policy pass: B->policy_src
 * when set (a commit's, vx watch -follow), else root's file if there is
 * one; root is the work tree of the git repository holding the stack
 * (NULL: none, nothing read). Problems of the file are the stack's. -1 on
 * an allocation failure (recorded).
 */
int policy_rules_read_repo(struct load_pass *B, const char *root);

/* The Policy pass's slots: one document (at most one per stack), then the merge. */
int policy_rules_load_read(struct load_pass *B, const struct ynode *doc);
void policy_rules_load_finish(struct load_pass *B);

/*
 * Once every kind is read: each declaration of a kind whose policy_allow
 * rule in force says {allow: false} is an error at its document.
 */
void policy_rules_check_kinds(struct loader *L, const struct stack *st);

/* The stack's decl_hash line of its Policy documents, "policy HASH\n", nothing when none. */
int policy_rules_hash_line(struct vx_buf *b, const struct policy_rules *p) VX_WUR;

/* Records a site (the job kind's policy check calls it). -1 on OOM (recorded in L). */
int policy_rules_add_rate_site(struct loader *L, struct stack *st, const struct ynode *at, const char *prefix,
			       size_t job, size_t rung);

#endif
