#ifndef VX_RECONCILE_STACK_H
#define VX_RECONCILE_STACK_H

/*
 * A stack: the directory of YAML files a team declares, loaded into our own
 * structs and checked. stack_load() reads every *.yaml / *.yml file of a
 * directory (not recursive, sorted by name; names starting with "." are
 * skipped), each file one or more YAML documents, each document a `kind`:
 *
 *	Stack            exactly one: name, project, region, state, labels
 *	(each kind of kind_table)  its declarations, read by the kind's load_* slots
 *
 * A kind's declaration type and its accessors are in the kind's header
 * (reconcile/kind_job.h, kind_reservation.h, kind_quota.h).
 * The format, every field, default and rule is documented in docs/format.md.
 * Every problem found is reported, not only the first: each one is a
 * diagnostic "FILE:LINE:COLUMN: KIND \"NAME\": field.path: message", with
 * the nearest valid word for a misspelt key or enum value. No libyaml or
 * cJSON type leaves the loader.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/kind.h"
#include "util/diag.h"
#include "util/err.h"
#include "util/label.h"

struct vx_diags;
struct ynode_limits;
struct policy_rules;

/*
 * Failure classes of a finished job run (DESIGN.md section 3). The
 * planner derives one from a live job's state and error; `resubmit.on`
 * is a bitmask of them. Bit i is named stack_fail_names[i].
 */
/* A table aligned by hand: clang-format would realign its comments. */
/* clang-format off */
enum stack_fail {
	STACK_FAIL_STOCKOUT = 1u << 0,          /* "stockout": no capacity in the zone/region */
	STACK_FAIL_PREEMPTED = 1u << 1,         /* "preempted": spot VMs taken back */
	STACK_FAIL_WAIT_TIMEOUT = 1u << 2,      /* "wait-timeout": FLEX_START waited past maxWaitDuration */
	STACK_FAIL_QUOTA = 1u << 3,             /* "quota": quota exceeded */
	STACK_FAIL_USER_ERROR = 1u << 4,        /* "user-error": the training code failed */
	STACK_FAIL_INTERNAL = 1u << 5,          /* "internal": a Vertex AI internal error */
	STACK_FAIL_CANCELLED_OUTSIDE = 1u << 6, /* "cancelled-outside": cancelled/deleted behind vx's back */
	STACK_FAIL_CONFIG = 1u << 7,            /* "config": the container image could not be pulled */
	STACK_FAIL_UNKNOWN = 1u << 8,           /* "unknown": a failure no rule knows */
	STACK_FAIL_REFUSED = 1u << 9,           /* "refused": the server refused the create */
	STACK_FAIL_TIMEOUT = 1u << 10,          /* "timeout": cancelled by Vertex at scheduling.timeout */
	STACK_FAIL_QUEUE_TIMEOUT = 1u << 11,    /* "queue-timeout": cancelled by vx after resubmit.maxQueued */
};
/* clang-format on */

#define STACK_FAIL_NCLASSES 12
#define STACK_FAIL_ALL ((1u << STACK_FAIL_NCLASSES) - 1)

/* "stockout", "preempted", "wait-timeout", "quota", "user-error", "internal",
 * "cancelled-outside", "config", "unknown", "refused", "timeout", "queue-timeout":
 * index i names bit 1u << i
 * (new classes go last: the canonical spec lists them by bit). */
extern const char *const stack_fail_names[STACK_FAIL_NCLASSES];

/* The name of one class (a single bit), or NULL when cls is not exactly one known bit. */
const char *stack_fail_name(unsigned cls);
/* The bit for a class name, or 0 when the name is unknown. */
unsigned stack_fail_parse(const char *name);

/* What a spec change (or a `run` bump) does to an active run. */
enum stack_on_change {
	STACK_ON_CHANGE_REPLACE = 1, /* "replace": cancel the active run, create a new one (default) */
	STACK_ON_CHANGE_AFTER_FINISH, /* "after-finish": let it finish, then create the new run */
	STACK_ON_CHANGE_IGNORE,       /* "ignore": keep the active run; rerun only when asked */
};

/* "replace", "after-finish", "ignore"; NULL for an unknown value. */
const char *stack_on_change_name(enum stack_on_change v);

enum stack_backend {
	STACK_BACKEND_GIT = 1, /* "git" (default): branch vx/state/<stack> of the repository */
	STACK_BACKEND_FILE,    /* "file": one JSON file */
	STACK_BACKEND_GCS,     /* "gcs": one object in a bucket */
};

/* "git", "file", "gcs"; NULL for an unknown value. */
const char *stack_backend_name(enum stack_backend b);

/* A label or any other string map entry. Maps are kept sorted by key, keys unique. */
struct stack_labels {
	struct vx_label *items; /* owned, sorted by key */
	size_t n;
};

/* The value for key, or NULL. */
const char *stack_labels_get(const struct stack_labels *l, const char *key);

/* What every declaration has: its name, address and where it was written. */
struct stack_decl {
	char *name;     /* "gemma2-lora" */
	char *address;  /* "job.gemma2-lora", "reservation.h100-pool", "quota.h100-flex", "stack.research" */
	char *file;     /* the file as shown in diagnostics ("DIR/jobs.yaml") */
	unsigned line;  /* 1-based position of the document's first character */
	unsigned col;
	char hash[65];  /* lowercase hex SHA-256 of the declaration's canonical form */
};

/* state: {backend, path, remote, branch, bucket} of the Stack. */
/* The state file of backend file when the Stack gives no path: beside the stack. */
#define STACK_STATE_FILE_DEFAULT "vx-state.json"

struct stack_state_cfg {
	enum stack_backend backend;
	char *path;   /* git: the repository (NULL = found by walking up from the stack);
		       * file: the state file (default STACK_STATE_FILE_DEFAULT);
		       * gcs: object prefix (NULL = "vx/state/<stack>");
		       * relative paths are as written (relative to the stack directory) */
	char *remote; /* git only: remote to fetch and push ("origin"), or NULL for local only */
	char *branch; /* git only: the state branch; default "vx/state/<stack>" (always set for git) */
	char *bucket; /* gcs only: required */
};

/*
 * One `notify:` target of the Stack: where vx tells people about events
 * (reconcile/notify.h). The URL and the secret are read from the
 * environment when an event is sent, never stored.
 */
struct stack_notify {
	char *url;          /* url: as written (no credentials, no query), or NULL */
	char *url_env;      /* urlEnv: the environment variable that holds the URL, or NULL */
	int format;         /* enum notify_format: NOTIFY_FORMAT_JSON (default) or _SLACK */
	char *secret_env;   /* secretEnv: the variable holding a "whsec_..." secret, or NULL */
	unsigned on;        /* NOTIFY_* bits; default STACK_NOTIFY_DEFAULT */
	unsigned line, col; /* where the target is written, for messages */
};

/* The events a target gets when it names none: those a person must act on
 * (gave-up, stuck, quota-denied, watch-error). */
#define STACK_NOTIFY_DEFAULT ((1u << 0) | (1u << 3) | (1u << 5) | (1u << 6))

/*
 * The Stack's `budget:` (docs/budgets.md): the most it may spend per period,
 * estimated at list price from the state's history as vx report does.
 */
#define STACK_BUDGET_MAX_WARN 8
#define STACK_BUDGET_MAX_DAYS 366

struct stack_budget {
	int set;			    /* 0: the Stack has no budget (nothing else here is set) */
	double usd;			    /* usd: > 0, in cents */
	int64_t days;			    /* period: Nd, a rolling window of N days; 0: month (calendar, UTC) */
	int warn_at[STACK_BUDGET_MAX_WARN]; /* warnAt: percents, strictly ascending, 1..100 */
	size_t nwarn;
	unsigned line, col; /* where budget: is written, for messages */
};

/* The period as written: "30d" or "month", into buf (16 bytes are enough); returns buf. */
char *stack_budget_period(const struct stack_budget *b, char *buf, size_t size);

/*
 * One kind's declarations in a stack: owned by the kind, which makes them
 * (its load_* slots) and frees them (its decl_release). A stack built by
 * hand (a test) may set items and n alone.
 */
struct stack_kind_decls {
	void *items; /* an array of n of the kind's declaration type */
	size_t n;
	void *more; /* what else the kind keeps of the stack (the job kind: its sweeps), or NULL */
};

struct stack {
	struct stack_decl d;          /* the Stack document; address "stack.NAME" */
	char *dir;                    /* the directory as given */
	char *name;                   /* == d.name */
	char *project;
	char *region;                 /* default region, or NULL when the Stack sets none */
	struct stack_state_cfg state;
	struct stack_labels labels;   /* the Stack's own labels */
	char *prices;                 /* prices: a price table, relative to dir (docs/prices.md), or NULL */
	int fail_on_quota;            /* failOn: [quota]: a job that does not fit is a plan error */
	struct stack_notify *notify;  /* owned: the Stack's notify targets, in order */
	size_t nnotify;
	struct stack_budget budget; /* budget: (set 0 when the Stack has none) */
	int fail_on_budget;	    /* failOn: [budget]: a plan that would exceed it is a plan error */
	/*
	 * Each kind's declarations, by its place in kind_table (kind_index): an
	 * array of the kind's own declaration type, each beginning with its
	 * struct stack_decl, in declaration order (files by name, then
	 * documents). Only the kind's file and header read them (its accessors:
	 * reconcile/kind_job.h, kind_reservation.h, kind_quota.h); generic code
	 * walks them through the kind's row (count_decls, decl_at).
	 */
	struct stack_kind_decls of[KIND_MAX];
	/* SHA-256 (hex) over the canonical form of every declaration, the Stack
	 * included, independent of file names and order: what a saved plan binds to.
	 * Jobs count by their redacted spec, so with sensitive values it depends on
	 * the state's salt (stack_apply_salt). */
	char decl_hash[65];
	/* What the loader found doubtful but not wrong (a region vx does not
	 * know): "FILE:LINE:COLUMN: message" lines for vx validate and the plan,
	 * never a reason to refuse. Sorted by position. */
	struct vx_diags warnings;
	/* The `kind: Policy` rules the stack is held to (its own Policy and the
	 * repository's .vx/policy.yaml: reconcile/policy_rules.h); NULL: none. */
	struct policy_rules *policy;
};

/* One in-memory file, for stack_load_mem(). */
struct stack_source {
	const char *name; /* file name without directory: "jobs.yaml" */
	const char *data;
	size_t len;
};

/*
 * Loads and checks the stack in directory dir. Problems of the stack go to
 * diags (sorted by file, line and column when this returns), and the result
 * is VX_EINVAL with *out NULL. Failures that are not the stack's fault (the
 * directory cannot be read, out of memory) return VX_EIO / VX_ENOMEM with
 * err set. On success returns 0 and *out owns the stack (stack_free()).
 * limits may be NULL for YNODE_LIMITS_DEFAULT. Positions name files as
 * "DIR/NAME" ("NAME" alone when dir is ".").
 */
int stack_load(struct stack **out, const char *dir, const struct ynode_limits *limits,
	       struct vx_diags *diags, struct vx_err *err) VX_WUR;

/*
 * The Stack document of dir alone, read ahead of the whole stack so a plan
 * can open the state and start its lists while the rest loads
 * (workflow/workspace.c). Only files whose bytes hold "Stack" are parsed, up to
 * the first Stack document. *out has the Stack's own fields and no other
 * declaration: whatever it says must be checked against stack_load's
 * result (stack_same_home) before anything read with it is used. *jobs is
 * 0 when no file's bytes hold "CustomJob" (so the stack declares no job).
 * Never reports: VX_ENOTFOUND when no clean Stack was found (the caller
 * loads as usual), VX_ENOMEM.
 */
int stack_peek(struct stack **out, int *jobs, const char *dir, struct vx_err *err) VX_WUR;

/*
 * The regions the stack's job documents name on a top-level "region: NAME"
 * line, found in the files' bytes without parsing them: hints for the
 * lists a plan starts before the stack is loaded (workflow/workspace.c),
 * never more than that (a region written otherwise is not seen; a file the
 * load would refuse gives none). *out: NAMEs, each and the array to free.
 * VX_ENOMEM, or the directory's read error.
 */
int stack_peek_regions(char ***out, size_t *nout, const char *dir, struct vx_err *err) VX_WUR;

/* Whether a and b name the same stack, project, default region and state. */
int stack_same_home(const struct stack *a, const struct stack *b);

/* The same over in-memory files, taken in the order given (sort them yourself). */
int stack_load_mem(struct stack **out, const char *dir, const struct stack_source *files,
		   size_t nfiles, const struct ynode_limits *limits, struct vx_diags *diags,
		   struct vx_err *err) VX_WUR;
/*
 * The same, held to repo_policy: the text of the repository's .vx/policy.yaml
 * as a commit holds it (vx watch -follow; reconcile/policy_rules.h), its name
 * how messages name it; NULL: none.
 */
int stack_load_mem_policy(struct stack **out, const char *dir, const struct stack_source *files, size_t nfiles,
			  const struct stack_source *repo_policy, const struct ynode_limits *limits,
			  struct vx_diags *diags, struct vx_err *err) VX_WUR;

/*
 * The stack in dir (files NULL, as stack_load) or in files (as
 * stack_load_mem_policy), lenient about its policy: a stack whose only
 * problems are violations of the policy in force loads, with them in
 * st->policy->violations, for the commands that only read it and for the
 * watcher, which holds what they forbid (docs/policy.md). Every other load
 * is strict: a violation is an error like any other.
 */
int stack_load_lenient(struct stack **out, const char *dir, const struct stack_source *files, size_t nfiles,
		       const struct stack_source *repo_policy, struct vx_diags *diags, struct vx_err *err) VX_WUR;

/* NULL-safe. */
void stack_free(struct stack *st);

/*
 * Keys the redaction of every declaration's sensitive values with the
 * state's salt (each kind's decl_salt: the jobs' job_spec_rehash) and
 * recomputes the declaration hashes over the result. Call it once the state
 * is loaded, before planning: until then such jobs carry a placeholder
 * hash. A stack without sensitive values is unchanged. Returns 0 or the
 * error of the kind's decl_salt, naming the declaration.
 */
int stack_apply_salt(struct stack *st, const char *salt, struct vx_err *err) VX_WUR;

/* How many declarations of kind k st holds (0 when k is not in kind_table). */
size_t stack_count(const struct stack *st, const struct kind *k);
/* k's slot of st (NULL when k is not in kind_table): for the kind's own code. */
struct stack_kind_decls *stack_slot(struct stack *st, const struct kind *k);
const struct stack_kind_decls *stack_slot_c(const struct stack *st, const struct kind *k);
/* The declaration of kind k named name, by a linear search of its slot; NULL when none. */
const struct stack_decl *stack_find_in(const struct stack *st, const struct kind *k, const char *name);

/* The declaration at an address ("job.a", "reservation.r", "quota.q", "stack.s"), or NULL. */
const struct stack_decl *stack_find_decl(const struct stack *st, const char *address);

/* Whether s is a valid stack or job name (a label value: [a-z][a-z0-9_-]{0,62}). */
int stack_name_valid(const char *s);

#endif
