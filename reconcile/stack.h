#ifndef VX_RECONCILE_STACK_H
#define VX_RECONCILE_STACK_H

/*
 * A stack: the directory of YAML files a team declares, loaded into our own
 * structs and checked. stack_load() reads every *.yaml / *.yml file of a
 * directory (not recursive, sorted by name; names starting with "." are
 * skipped), each file one or more YAML documents, each document a `kind`:
 *
 *	Stack            exactly one: name, project, region, state, labels
 *	CustomJob        job.NAME: a Vertex AI custom job (spec checked by spec_check)
 *	Reservation      reservation.NAME: a Compute Engine specific reservation
 *	QuotaPreference  quota.NAME: a Cloud Quotas preference
 *
 * The format, every field, default and rule is documented in docs/format.md.
 * Every problem found is reported, not only the first: each one is a
 * diagnostic "FILE:LINE:COLUMN: KIND \"NAME\": field.path: message", with
 * the nearest valid word for a misspelt key or enum value. No libyaml or
 * cJSON type leaves the loader.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/load/spec.h"
#include "util/diag.h"
#include "util/err.h"
#include "util/label.h"

struct vx_diags;
struct ynode_limits;

/*
 * Failure classes of a finished job run (DESIGN.md section 3). The
 * planner derives one from a live job's state and error; `resubmit.on`
 * is a bitmask of them. Bit i is named stack_fail_names[i].
 */
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
};

#define STACK_FAIL_NCLASSES 10
#define STACK_FAIL_ALL ((1u << STACK_FAIL_NCLASSES) - 1)

/* "stockout", "preempted", "wait-timeout", "quota", "user-error", "internal",
 * "cancelled-outside", "config", "unknown", "refused": index i names bit 1u << i
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
 * One rung of a fallback ladder: resubmit.fallback[i] is rung i + 1, the
 * declared job rung 0. A rung overrides the declared job, not the rung
 * before it: its spec is the job's spec with the rung's scheduling merged
 * over spec.scheduling, its machineSpec replacing that of every worker pool
 * with accelerators, and its reservation set as those pools'
 * reservationAffinity; checked by spec_check like the job's own.
 */
struct stack_rung {
	char *region;                 /* the rung's region, or the job's when it sets none */
	struct job_spec spec;         /* what is sent for an attempt on this rung */
};

struct stack_job {
	struct stack_decl d;          /* address "job.NAME" */
	char *region;                 /* the job's or the Stack's region (always set) */
	char *display_name;           /* displayName, default the name */
	struct stack_labels labels;   /* the Stack's labels overlaid by the job's own (no vx- keys) */
	struct job_spec spec;         /* from spec_check: canonical JSON, hash, pools, strategy... */
	int64_t run;                  /* >= 1, default 1 */
	unsigned resubmit_on;         /* STACK_FAIL_* bits, default 0 */
	int64_t max_attempts;         /* >= 1, default 1 (= never resubmit) */
	struct stack_rung *rungs;     /* owned: resubmit.fallback, rung i + 1 at [i]; NULL when none */
	size_t nrungs;
	enum stack_on_change on_change; /* default STACK_ON_CHANGE_REPLACE */
	int protect;                  /* 1: the plan refuses to cancel this job */
	int on_remove;                /* onRemove: STATE_ON_REMOVE_* (0: unset, the default) */
	/* resubmit.delay: after a stockout, how long the next attempt waits (doubling per
	 * attempt, capped at STACK_MAX_RESUBMIT_DELAY_MS); a preempted run goes again at once. */
	int64_t resubmit_delay_ms;
	int64_t stuck_after_ms;       /* stuckAfter: queued or pending this long is "stuck" */
	/* A run of a `matrix:` sweep: 1 + its index in stack.sweeps, 0 for a job
	 * declared alone. Its name is "SWEEP[k=v,...]" (reconcile/sweep.h). */
	size_t sweep;
	char **after;                 /* after: the addresses it waits for ("job.train", a sweep or a slice) */
	size_t nafter;
	char *output_dir;             /* spec.baseOutputDirectory.outputUriPrefix as sent, or NULL */
};

/*
 * A CustomJob document with `matrix:`: one job per combination, in
 * stack.jobs[first .. first + n) in the order they are started (the
 * matrix's order, then include's new combinations).
 */
struct stack_sweep {
	char *name;                   /* "lr-sweep" */
	char *address;                /* "job.lr-sweep" */
	char *file;                   /* where `matrix:` is written */
	unsigned line, col;
	int64_t max_parallel;         /* maxParallel: most runs active at once; 0: no cap */
	int64_t max_failed;           /* maxFailed: after this many gave up, start no more; 0: no limit */
	char *output_dir;             /* the sweep's outputUriPrefix as written (its runs' parent), or NULL */
	size_t first, n;
};

/* The most runs one matrix may expand to. */
#define STACK_MAX_SWEEP_RUNS 10000

#define STACK_RESUBMIT_DELAY_DEFAULT_MS (60 * 1000)
#define STACK_MAX_RESUBMIT_DELAY_MS (15 * 60 * 1000)
#define STACK_STUCK_AFTER_DEFAULT_MS (6 * 3600 * 1000)
#define STACK_MAX_STUCK_AFTER_MS ((int64_t)30 * 24 * 3600 * 1000)

struct stack_accelerator {
	char *type;    /* compute's name: "nvidia-h100-80gb" */
	int64_t count; /* per VM, >= 1 */
};

struct stack_reservation {
	struct stack_decl d;          /* address "reservation.NAME"; NAME is also compute's name */
	char *zone;                   /* "us-central1-a" */
	char *machine_type;           /* "a3-highgpu-8g" */
	struct stack_accelerator *accelerators; /* owned; 0 or 1 entries */
	size_t naccelerators;
	int64_t count;                /* VMs reserved, 1..1000 */
	int specific_required;        /* specificReservationRequired, default 1 */
	char *description;            /* or NULL */
	int protect;                  /* 1: the plan refuses to delete it */
};

struct stack_quota {
	struct stack_decl d;          /* address "quota.NAME"; NAME is the quotaPreferenceId */
	char *service;                /* "aiplatform.googleapis.com" */
	char *quota_id;               /* "CustomModelTrainingH100GPUsPerProjectPerRegion" */
	struct stack_labels dimensions; /* {"region": "us-central1"}; may be empty */
	int64_t preferred_value;      /* >= -1 (-1 = unlimited) */
	char *contact_email;          /* or NULL */
	char *justification;          /* or NULL */
	int ignore_safety_checks;     /* 1: a decrease past Google's safety checks is meant */
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
	struct stack_job *jobs;       /* owned arrays, in declaration order (files by name, then documents) */
	size_t njobs;
	/* The jobs sorted by name, for stack_find_job (a plan looks every record's
	 * job up); set by the loader, NULL in a stack built by hand (then the
	 * search is linear). Owned; points into jobs. */
	const struct stack_job **jobs_by_name;
	struct stack_sweep *sweeps;   /* owned, in declaration order; their runs are in jobs */
	size_t nsweeps;
	struct stack_reservation *reservations;
	size_t nreservations;
	struct stack_quota *quotas;
	size_t nquotas;
	/* SHA-256 (hex) over the canonical form of every declaration, the Stack
	 * included, independent of file names and order: what a saved plan binds to.
	 * Jobs count by their redacted spec, so with sensitive values it depends on
	 * the state's salt (stack_apply_salt). */
	char decl_hash[65];
	/* What the loader found doubtful but not wrong (a region vx does not
	 * know): "FILE:LINE:COLUMN: message" lines for vx validate and the plan,
	 * never a reason to refuse. Sorted by position. */
	struct vx_diags warnings;
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

/* Whether a and b name the same stack, project, default region and state. */
int stack_same_home(const struct stack *a, const struct stack *b);

/* The same over in-memory files, taken in the order given (sort them yourself). */
int stack_load_mem(struct stack **out, const char *dir, const struct stack_source *files,
		   size_t nfiles, const struct ynode_limits *limits, struct vx_diags *diags,
		   struct vx_err *err) VX_WUR;

/* NULL-safe. */
void stack_free(struct stack *st);

/*
 * Keys the redaction of every job's sensitive values with the state's salt
 * (job_spec_rehash) and recomputes the declaration hashes over the result.
 * Call it once the state is loaded, before planning: until then such jobs
 * carry a placeholder hash. A stack without sensitive values is unchanged.
 * Returns 0 or the error of job_spec_rehash, naming the job.
 */
int stack_apply_salt(struct stack *st, const char *salt, struct vx_err *err) VX_WUR;

/* The most rungs a ladder may have besides the declared job. */
#define STACK_MAX_RUNGS 16

/* The region and spec an attempt on rung (0 = the declared job; past the
 * last rung, the last) uses. Borrowed. */
const char *stack_job_rung_region(const struct stack_job *j, int64_t rung);
const struct job_spec *stack_job_rung_spec(const struct stack_job *j, int64_t rung);

/* Lookups by name; NULL when not declared. Borrowed. */
const struct stack_job *stack_find_job(const struct stack *st, const char *name);
const struct stack_reservation *stack_find_reservation(const struct stack *st, const char *name);
const struct stack_quota *stack_find_quota(const struct stack *st, const char *name);
/* The declaration at an address ("job.a", "reservation.r", "quota.q", "stack.s"), or NULL. */
const struct stack_decl *stack_find_decl(const struct stack *st, const char *address);

/* Whether s is a valid stack or job name (a label value: [a-z][a-z0-9_-]{0,62}). */
int stack_name_valid(const char *s);

#endif
