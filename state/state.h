#ifndef VX_STATE_STATE_H
#define VX_STATE_STATE_H

/*
 * The state model: what vx remembers about a stack between applies, and
 * its JSON form (schema "version": 1).
 *
 * A state holds the stack's name, a serial (+1 on every write of records,
 * so a saved plan can be bound to it), a lineage (a random UUID made when
 * the state is first created: two states with different lineages are
 * different histories and never overwrite each other), one record per
 * address, the journal of pending intents, and the lock (lease) if any.
 *
 * An address is PREFIX.NAME ("job.train", "reservation.pool"), one record
 * per address (kind tells the kinds apart, spec_json holds the redacted
 * declaration). NAME is 1-128 of [A-Za-z0-9_.-] not starting with '.', so
 * it can name a file (jobs/NAME.json in the git backend); PREFIX's rule is
 * state_address_split's below.
 *
 * Nothing secret is ever stored: spec_json is the REDACTED spec the caller
 * got from job_spec.redacted_json (reconcile/load/spec.h), where sensitive values
 * are HMACs keyed with the state's salt. The salt is in the state too: it
 * defeats precomputed tables and comparisons across stacks, not a guess by
 * someone who can read the state.
 *
 * JSON is written with a fixed key order (so identical states give
 * identical bytes and git diffs stay small) and parsed strictly: unknown
 * or duplicate keys, wrong types, out-of-range numbers, invalid UTF-8,
 * trailing garbage, sizes over the caps below and any "version" but 1 are
 * errors naming the path ("records[2].current.attempt: expected an
 * integer"). The parsers never crash on hostile input (fuzzed by
 * tests/fuzz/fuzz_state.c).
 *
 * Times are milliseconds since the Unix epoch (int64), written as RFC 3339
 * UTC ("2026-11-22T10:02:00Z", with ".123" when the milliseconds are not 0).
 * 0 means "unset" and is written as null.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

struct vx_ctx;

#define STATE_VERSION 1
#define STATE_MAX_JSON ((size_t)64 << 20)     /* a whole state (file backend) */
#define STATE_MAX_FILE ((size_t)4 << 20)      /* one record or stack.json (git backend) */
#define STATE_MAX_STRING ((size_t)64 << 10)   /* any string but the spec */
#define STATE_MAX_RECORDS 100000
#define STATE_MAX_HISTORY 10000               /* past runs of one record */
#define STATE_MAX_LABELS 128
#define STATE_MAX_JOURNAL 10000
#define STATE_MAX_NAME 128
#define STATE_TIME_MAX 48                     /* room for a formatted time + NUL */

/* One run of a job (a Vertex CustomJob vx created or adopted). */
struct state_run {
	char *resource;       /* projects/P/locations/R/customJobs/ID; NULL if the create never answered */
	char *project;        /* the project id it was created in; NULL in older states (the Stack's) */
	char *region;         /* us-central1 */
	char *action;         /* what started it: create, adopt, replace, rerun, resubmit */
	char *spec_hash;      /* the spec hash it was created with */
	int64_t run;          /* the declaration's `run` it was created for */
	int64_t attempt;      /* 1 for the first attempt of this (spec, run) */
	int64_t rung;         /* the rung of the job's fallback ladder it ran on; 0: the declared job */
	/* What that rung is (with region above), for a job with a ladder, so an
	 * edit of the ladder finds the run's rung wherever it moved; NULL in
	 * older states and for jobs without a ladder (rung_machine may be NULL
	 * for a spec without pools; rung_scheduling is then still set). */
	char *rung_scheduling; /* STANDARD, SPOT, FLEX_START */
	char *rung_machine;   /* the accelerator pools' machine type, else the first pool's */
	char *rung_reservation; /* the reservation the rung uses, or NULL */
	struct vx_label *labels; /* sorted by key, unique; nlabels entries */
	size_t nlabels;
	/* after: the run of each dependency this run followed: key the
	 * dependency's address (job.train, job.sweep[lr=1]), value that run's
	 * resource name; sorted, unique. Empty (NULL) for a job without after:
	 * and in runs written before it was recorded ("follows", only when set). */
	struct vx_label *follows;
	size_t nfollows;
	char *state;          /* last seen Vertex JobState name (JOB_STATE_RUNNING); NULL = never seen */
	char *failure;        /* failure class (stockout, preempted, ...) or NULL */
	int64_t error_code;   /* the job's error.code (google.rpc.Code), 0 if none */
	char *error_message;  /* the job's error.message, or NULL */
	int cancelled_by_vx;  /* 1 when vx cancelled it (so it is not "cancelled outside") */
	int64_t created_ms;   /* 0 = unknown */
	int64_t ended_ms;     /* 0 = not ended (or not seen ending) */
	int64_t started_ms;   /* the job's startTime (first RUNNING), 0 = not seen started */
	/* The replica's exit status Google's sentence gives ("... exited with a
	 * non-zero status of 137"), 0 = none; "exitCode", written only when set. */
	int64_t exit_code;
	char *config_commit;  /* HEAD of the stack's repository when it was created, or NULL */
	int config_dirty;     /* 1: the stack had uncommitted changes then, so config_commit's
			       * tree does not hold what was applied (decl_hash does identify it) */
	char *decl_hash;      /* the stack's declaration hash, recorded when config_dirty; or NULL */
	char *policy_commit;  /* the commit of the `kind: Policy` in force when it was created, or NULL */
	char *launched_by;    /* who applied: the CI actor (workflow/ci.h) or "user@host", or NULL */
	char *planned_by;     /* who made the saved plan applied, when it was saved by another
			       * actor (or with a pull request); NULL otherwise */
	int64_t pr_number;    /* the pull (merge) request it was planned or applied in; 0: none */
	char *pr_url;         /* its URL, or NULL */
	/* Reservations and quota preferences: the count (VMs reserved) or the
	 * preferredValue the action left; has_value 0 for jobs. */
	int has_value;
	int64_t value;
	/* What the run was created with, so its cost is computable from the state
	 * alone after the declaration changes (vx report, vx log): the machine
	 * type of the accelerator pools (else of the first pool), their Vertex
	 * accelerator enum name, the replicas over all worker pools, the GPUs over
	 * all of them (replicas x GPUs each, fixed-GPU machine types included),
	 * the scheduling strategy (STANDARD, SPOT, FLEX_START) and the declared
	 * reservation it draws on. NULL / 0 in runs written before they were
	 * recorded ("machineType" and the rest, written only when machine_type
	 * is set). */
	char *machine_type;
	char *accelerator_type;
	int64_t accelerator_count;
	int64_t replicas;
	char *strategy;
	char *reservation;
	/* The scheduling.timeout it was created with (its rung's, which may set
	 * its own), so a run Vertex ended at it is told from one cancelled
	 * outside; 0: unset (7 days) or not recorded (older states). "timeoutMs",
	 * written only when set. */
	int64_t timeout_ms;
};

/* What a job's removal from the declaration does (`onRemove`). */
enum {
	STATE_ON_REMOVE_DEFAULT = 0, /* unset: cancel a job vx started, forget one imported without
				      * vx's labels */
	STATE_ON_REMOVE_CANCEL,
	STATE_ON_REMOVE_FORGET,
};

/*
 * What the apply that last wrote a job's record applied of what decides the
 * watcher's actions for it (docs/watch.md): the resubmit policy and ladder,
 * its after: list and, for a sweep's run, the sweep's limits. vx watch acts
 * from this, never from the files: a declaration that differs is declared
 * but not applied. A record written before it was recorded has none (NULL).
 */
struct state_policy {
	char **resubmit_on;   /* resubmit.on: failure class names, in vx's order of them */
	size_t nresubmit_on;
	int64_t max_attempts; /* resubmit.maxAttempts, >= 1 */
	int64_t delay_ms;     /* resubmit.delay */
	int64_t fallback_rungs; /* resubmit.fallback: its rungs, 0: no ladder */
	char *fallback_hash;  /* SHA-256 (hex) of the ladder: each rung's region and spec hash; NULL: none */
	char **after;         /* after: as declared */
	size_t nafter;
	int64_t max_parallel; /* the sweep's maxParallel, 0: none (or not a sweep's run) */
	int64_t max_failed;   /* the sweep's maxFailed, 0: none */
	/* resubmit.onExitCodes: bit c of on_exit_codes[c / 64] for exit status c
	 * (1..255); "onExitCodes", written only when one is set. */
	uint64_t on_exit_codes[4];
	/* resubmit.on written as a map ({stockout: 6}): resubmit_budgets[i] is
	 * how many resubmissions may follow a failure of class resubmit_on[i];
	 * NULL for the list form. "resubmitBudgets", written only when set. */
	int64_t *resubmit_budgets;
	/* resubmit.within: no new attempt after the run's first create + this;
	 * 0: none. "withinMs", written only when set. */
	int64_t within_ms;
	/* resubmit.returnAfter: a run that left rung 0 this long ago goes back to
	 * it at its next capacity failure; 0: never. "returnAfterMs", written
	 * only when set. */
	int64_t return_after_ms;
	/* resubmit.maxQueued: a run queued or pending this long without starting
	 * is cancelled and the next attempt made; 0: never. "maxQueuedMs",
	 * written only when set. */
	int64_t max_queued_ms;
};

#define STATE_MAX_POLICY_LIST 1000

/* One address. */
struct state_record {
	char *address;        /* "job.NAME" */
	char *kind;           /* "CustomJob" (later "Reservation", "QuotaPreference") */
	char *spec_hash;      /* hash of the declaration the current run was made from */
	char *spec_json;      /* the redacted spec as compact JSON text, or NULL */
	int64_t run;          /* the declaration's `run` */
	int64_t attempts;     /* attempts made for (spec_hash, run); resets on a new spec or run */
	int protect;          /* the declaration's `protect`, kept so a removed job stays protected */
	int on_remove;        /* the declaration's `onRemove`, kept so a removed job's policy is
			       * known: STATE_ON_REMOVE_* ("onRemove", written only when set) */
	struct state_run *current; /* owned; NULL when there is no current run */
	struct state_run *history; /* past runs, oldest first; nhistory entries */
	size_t nhistory;
	/* Jobs: the policy applied (above); owned, NULL when not recorded
	 * ("applied", written only when set, so older records keep their bytes). */
	struct state_policy *applied;
	/*
	 * 1: changed since the state was loaded or last saved, so the next save
	 * writes it; 0: as the backend stored it, so a save skips it without
	 * looking at it (docs/state.md, "What a save writes"). Set by the
	 * mutators below (state_edit, state_add_record, state_record_start_run,
	 * state_record_add_history, state_record_copy) and by
	 * state_record_mark; cleared by the backend that saved it. Never
	 * written to JSON.
	 */
	int mark;
};

/*
 * A journal entry: written BEFORE a create, so a crash between the create
 * and the write of its result is found by the next apply, which lists by
 * these labels and adopts the job or plans it again. Removed (state_journal_remove)
 * when the result is recorded.
 */
struct state_intent {
	char *address;
	char *op;             /* create, replace, rerun, resubmit */
	struct vx_label *labels; /* the labels the create carries (sorted, unique) */
	size_t nlabels;
	int64_t started_ms;
};

/* The lease: who holds the right to mutate, until when. */
struct state_lock {
	char *id;             /* 32 lowercase hex characters */
	char *user;
	char *host;
	int64_t pid;
	char *operation;      /* apply, unlock, ... */
	int64_t started_ms;
	int64_t expires_ms;
};

struct state {
	char *stack;
	uint64_t serial;      /* 0 for a state never written */
	char *lineage;        /* UUID */
	char *salt;           /* 64 lowercase hex (32 random bytes): the HMAC key of sensitive
			       * values (reconcile/load/spec.h); NULL in a state written before salts
			       * existed until state_ensure_salt() gives it one */
	struct state_record *records; /* sorted by address, unique; nrecords entries */
	size_t nrecords;
	struct state_intent *journal;
	size_t njournal;
	struct state_lock *lock; /* NULL when unlocked (informational on load) */
	/*
	 * git: where the lease lives ("refs/vx/lease/NAME"), written with every
	 * state commit. A vx from before the lease ref refuses a header key it
	 * does not know, so it stops at such a state instead of taking it for
	 * unlocked (docs/leases.md). NULL: none recorded (file, gcs, older states).
	 */
	char *lease_ref;
	/*
	 * The notifications delivered (reconcile/notify.h), by delivery key,
	 * oldest first: what no watcher or apply of the stack sends again.
	 * Kept for STATE_NOTIFIED_KEEP_MS, at most STATE_MAX_NOTIFIED. Written
	 * only when not empty, so a stack without notifications keeps the
	 * header older versions read.
	 */
	struct state_notified *notified;
	size_t nnotified;
	/*
	 * The live jobs vx let go of (`vx state rm`): their resource names
	 * (projects/P/locations/R/customJobs/ID), sorted, unique. A Vertex
	 * job's labels cannot be changed once it is created, so a released
	 * job still carries this stack's and this state's labels: the refresh
	 * leaves the jobs named here out, so no plan adopts, cancels or counts
	 * them again. Written ("released") only when not empty.
	 */
	char **released;
	size_t nreleased;
	/*
	 * The Stack's notify targets as last applied (by vxapply, or a watcher
	 * with -sync): each target's digest (reconcile/notify.h,
	 * notify_target_digest), sorted, unique. A watcher sends only to
	 * declared targets whose digest is here, so a commit not applied cannot
	 * point notifications elsewhere. Written ("notifyTargets") only when
	 * not empty: absent and empty mean no target applied.
	 */
	char **notify_targets;
	size_t nnotify_targets;
	/*
	 * The Stack's budget as last applied (by vxapply, or a watcher with
	 * -sync): what a watcher holds the runs it would start to, so a commit
	 * not applied cannot raise it (docs/budgets.md). budget_cents 0: none
	 * applied. budget_days: the rolling window in days, 0 the calendar month.
	 * Written ("budget") only when set, so older states keep their bytes.
	 */
	int64_t budget_cents;
	int64_t budget_days;
	int budget_warn_at[8]; /* its warnAt percents, ascending; written ("warnAt") when some */
	size_t nbudget_warn_at;
	/*
	 * What the unmarked records match: the backend (its address, as a
	 * token) that loaded or last saved this state, and that backend's
	 * count of loads and saves then. A backend writes only the marked
	 * records of a state whose base is its own latest; any other state
	 * (NULL: made by state_new, parsed from JSON, a record removed, ...)
	 * it writes whole. Never written to JSON.
	 */
	const void *base;
	uint64_t base_epoch;
};

struct state_notified {
	char *key;            /* "evt_<32 hex>:<8 hex>" */
	int64_t at_ms;        /* when it was delivered (or given up) */
	/* Kept until then at least, however old (an event that must not repeat
	 * for longer than STATE_NOTIFIED_KEEP_MS: a budget's threshold, once per
	 * period); 0: none. Written ("until") only when set. */
	int64_t until_ms;
};

#define STATE_MAX_NOTIFIED 10000
#define STATE_NOTIFIED_KEEP_MS ((int64_t)7 * 24 * 3600 * 1000)

#define STATE_INIT \
	{ \
		NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, 0, 0, { 0 }, 0, \
			NULL, 0 \
	}

/* Whether key is among st's delivered notifications. */
int state_notified_has(const struct state *st, const char *key);
/*
 * Records key as delivered at at_ms, forgetting those delivered before
 * at_ms - STATE_NOTIFIED_KEEP_MS and the oldest past STATE_MAX_NOTIFIED.
 * 0, VX_EINVAL for a key that is not one, or VX_ENOMEM.
 */
int state_notified_add(struct state *st, const char *key, int64_t at_ms) VX_WUR;
/* The same, kept at least until until_ms (0: as state_notified_add); a key
 * recorded already keeps the later of its until and until_ms. */
int state_notified_add_until(struct state *st, const char *key, int64_t at_ms, int64_t until_ms) VX_WUR;

#define STATE_MAX_NOTIFY_TARGETS 64

/* Whether digest is among st's applied notify targets. */
int state_notify_target_has(const struct state *st, const char *digest);
/*
 * Replaces st's applied notify targets with the n digests given (32
 * lowercase hex each, any order; kept sorted and unique). *changed: 1 when
 * the set differs from what st held. 0, VX_EINVAL (a digest that is none,
 * or more than STATE_MAX_NOTIFY_TARGETS), VX_ENOMEM.
 */
int state_notify_targets_set(struct state *st, const char *const *digests, size_t n, int *changed) VX_WUR;

#define STATE_MAX_RELEASED 10000

/* Whether name is among st's released jobs. */
int state_released_has(const struct state *st, const char *name);
/* Adds name to st's released jobs (nothing when it is there). VX_EINVAL past
 * STATE_MAX_RELEASED or for an empty name, VX_ENOMEM. */
int state_released_add(struct state *st, const char *name) VX_WUR;

/* Lifecycle. *_release frees the contents and zeroes the struct; NULL-safe. */
void state_release(struct state *st);
void state_record_release(struct state_record *r);
void state_run_release(struct state_run *r);
void state_intent_release(struct state_intent *in);
void state_lock_release(struct state_lock *l);
void state_policy_release(struct state_policy *p);
/* Frees a heap policy and its contents; NULL-safe. */
void state_policy_free(struct state_policy *p);
/* Frees a heap lock and its contents; NULL-safe. */
void state_lock_free(struct state_lock *l);

/* Deep copies into *out (which is overwritten, not released). VX_ENOMEM on failure. */
int state_run_copy(struct state_run *out, const struct state_run *in) VX_WUR;
int state_record_copy(struct state_record *out, const struct state_record *in) VX_WUR;
int state_lock_copy(struct state_lock *out, const struct state_lock *in) VX_WUR;
int state_policy_copy(struct state_policy *out, const struct state_policy *in) VX_WUR;

/*
 * Makes a new, empty state for stack: serial 0, a fresh random lineage and
 * salt (deterministic when ctx->seed is not 0). VX_EINVAL for a bad stack name.
 */
int state_new(struct state *out, const char *stack, const struct vx_ctx *ctx,
	      struct vx_err *err) VX_WUR;

/*
 * Gives st a fresh random salt when it has none (a state written before
 * salts existed: the next write stores it). Returns 1 when it made one,
 * 0 when st had one, or VX_EIO / VX_ENOMEM.
 */
int state_ensure_salt(struct state *st, const struct vx_ctx *ctx, struct vx_err *err) VX_WUR;

/* Whether s is a salt as stored: 64 lowercase hex digits. */
int state_salt_ok(const char *s);

/* The record for address, or NULL. Borrowed; to change it, state_edit. */
const struct state_record *state_find(const struct state *st, const char *address);
/*
 * The record for address, to change (NULL when absent): it is marked, so
 * the next save writes it. A pointer kept across a save must be marked
 * again (state_record_mark) before the next change, which that save
 * cleared. Valid until the next add/remove.
 */
struct state_record *state_edit(struct state *st, const char *address);
/* Marks r changed (see state_record.mark); for a record reached other than by state_edit. */
void state_record_mark(struct state_record *r);
/*
 * Called by a backend once st is stored: every mark cleared, and base,
 * epoch recorded as what the records now match (NULL: nothing).
 */
void state_saved(struct state *st, const void *base, uint64_t epoch);

/*
 * Adds an empty record of kind (its name, "CustomJob": required, copied)
 * for a new address, keeping records sorted; *out (optional) borrows it.
 * The returned pointer is valid until the next add/remove. VX_EINVAL for a
 * bad address or no kind, VX_ECONFLICT if it exists.
 */
int state_add_record(struct state *st, const char *address, const char *kind,
		     struct state_record **out, struct vx_err *err) VX_WUR;

/* Removes (forgets) a record. VX_ENOTFOUND if absent. The next save of st
 * writes it whole (its base is dropped). */
int state_remove_record(struct state *st, const char *address);

/*
 * Starts a new run: the current run (if any) moves to the end of history
 * and *run becomes current. Takes ownership of run's contents (run is
 * zeroed) on success and on failure alike. VX_EINVAL past STATE_MAX_HISTORY.
 */
int state_record_start_run(struct state_record *r, struct state_run *run,
			   struct vx_err *err) VX_WUR;

/*
 * Appends *run to the history without touching the current run: a create
 * the server refused is recorded so (it never became a run). Takes
 * ownership of run's contents on success and failure alike.
 */
int state_record_add_history(struct state_record *r, struct state_run *run,
			     struct vx_err *err) VX_WUR;


/* Adds a copy of in to the journal (replacing an entry for the same address). */
int state_journal_add(struct state *st, const struct state_intent *in, struct vx_err *err) VX_WUR;
/* Removes the entry for address. VX_ENOTFOUND if none. */
int state_journal_remove(struct state *st, const char *address);

/*
 * Addresses, one rule for every kind: PREFIX.NAME, PREFIX 1 to
 * STATE_MAX_PREFIX lowercase letters, digits or '_', a letter first (a
 * kind's prefix, reconcile/kind.h: "job", "reservation"), NAME as above.
 * A record's folder (the git backend's) is its PREFIX and an "s": job.NAME
 * is jobs/NAME.json. The state layer names no kind: which prefixes are
 * kinds is the reconcile layer's business (kind_of_address). A record of
 * any well-formed prefix is read, kept and written as it is, so one a
 * newer vx wrote, of a kind this vx does not know, survives its saves.
 */
#define STATE_MAX_PREFIX 32
#define STATE_DIR_SIZE (STATE_MAX_PREFIX + 2) /* a folder's name and its NUL */

/* Whether the n bytes at s are a well-formed address prefix. */
int state_prefix_ok(const char *s, size_t n);
/* The length of the prefix whose records' folder is named dir ("jobs": 3),
 * or 0 when dir is no such folder (no "s" at its end, or a bad prefix). */
size_t state_dir_prefix(const char *dir);

/* Validates an address; fills kind_dir (STATE_DIR_SIZE bytes) with its
 * folder and *name with a pointer into address (each optional). VX_EINVAL
 * with a message otherwise. */
int state_address_split(const char *address, char *kind_dir, const char **name,
			struct vx_err *err) VX_WUR;

/*
 * JSON.
 * state_to_json: the whole state (records included) as the file backend
 * stores it; state_header_to_json: everything but the records (the git
 * backend's stack.json); state_record_to_json: one record (jobs/NAME.json);
 * state_lock_to_json: one lock (the file backend's FILE.lock).
 * *out is owned by the caller (free()), ends with a newline.
 *
 * The *_from_json parsers take len bytes (need not be NUL-terminated),
 * fill *out (released and zeroed first; released again on failure) and
 * return VX_EINVAL with a message naming the path of the problem.
 * state_header_from_json leaves records empty; a "records" key is refused.
 */
int state_to_json(const struct state *st, char **out, struct vx_err *err) VX_WUR;
int state_header_to_json(const struct state *st, char **out, struct vx_err *err) VX_WUR;
int state_record_to_json(const struct state_record *r, char **out, struct vx_err *err) VX_WUR;
int state_lock_to_json(const struct state_lock *l, char **out, struct vx_err *err) VX_WUR;

/*
 * For a backend whose state is one document (gcs): state_record_to_doc_json
 * prints a record as state_to_json's "records" holds it (no "version", two
 * levels deeper, no newline at the end), and state_to_json_from prints the
 * document from those texts (texts[i]: st->records[i]'s), the same bytes as
 * state_to_json, so a backend that keeps each unchanged record's text need
 * not print it again.
 */
int state_record_to_doc_json(const struct state_record *r, char **out, struct vx_err *err) VX_WUR;
int state_to_json_from(const struct state *st, char *const *texts, char **out, struct vx_err *err) VX_WUR;

/*
 * A record's fingerprint: bytes such that two records with equal
 * fingerprints have equal state_record_to_json texts (the converse need
 * not hold). Far cheaper than the JSON (no allocation per field, no
 * number printing, no spec parse). Saves no longer use it (they write
 * the marked records); kept for comparing records cheaply.
 * out is reset first.
 */
struct vx_buf;
int state_record_fingerprint(const struct state_record *r, struct vx_buf *out,
			     struct vx_err *err) VX_WUR;

int state_from_json(struct state *out, const char *text, size_t len, struct vx_err *err) VX_WUR;
int state_header_from_json(struct state *out, const char *text, size_t len,
			   struct vx_err *err) VX_WUR;
int state_record_from_json(struct state_record *out, const char *text, size_t len,
			   struct vx_err *err) VX_WUR;
int state_lock_from_json(struct state_lock *out, const char *text, size_t len,
			 struct vx_err *err) VX_WUR;

/* "2026-11-22T10:02:00Z" (".123" added when ms % 1000 != 0). out has STATE_TIME_MAX bytes. */
void state_time_format(int64_t ms, char *out);
/* Parses that form (fraction of 1-3 digits optional). VX_EINVAL on anything else. */
int state_time_parse(const char *s, int64_t *ms) VX_WUR;

/*
 * Random ids: 32 lowercase hex characters (out has 33 bytes), or a v4 UUID
 * (out has 37 bytes). From the OS, or, when ctx->seed is not 0, derived
 * from the seed, the clock and salt so tests get the same ids every run.
 */
int state_random_hex(const struct vx_ctx *ctx, const char *salt, char *out,
		     struct vx_err *err) VX_WUR;
int state_random_uuid(const struct vx_ctx *ctx, const char *salt, char *out,
		      struct vx_err *err) VX_WUR;

#endif
