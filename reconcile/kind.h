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
 * layer (below this one) names no kind: it files a record by its address
 * alone (PREFIX.NAME, in the folder PREFIXs/, state/state.h) and keeps a
 * record of any well-formed prefix, so a kind needs no change there. Which
 * prefixes are kinds is this layer's business (kind_of_address): a record
 * of a prefix no kind has (a newer vx's kind) is planned as nothing and
 * carried through the state's saves as it is. docs/design-notes.md
 * ("Adding a kind: what it touches today") lists what else a new kind
 * still touches.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"

struct plan;
struct plan_action;
struct planner;
struct planner_options;
struct policy_rules;
struct provider;
struct stack;
struct stack_decl;
struct state;
struct state_record;
struct state_run;
struct prices;
struct vx_diags;
struct status_input;
struct status_report;
struct applier;
struct import_outcome;
struct import_request;
struct live_jobs;
struct vx_buf;
struct load_pass;
struct stack_kind_decls;
struct ynode;
struct vx_diags;

/* At most this many kinds (kind.c asserts it), for fixed arrays over the table. */
#define KIND_MAX 16

/*
 * What the refresh read: one slot per kind, in kind_table's order, each of
 * the kind's own type (struct live_reservations, ...), which only the kind
 * reads (kind_live); NULL: not read (-refresh=false).
 */
struct live_set {
	const void *of[KIND_MAX];
};

/* What the refresh read, owned: each kind's refresh fills its slot (kind_live_slot). */
struct live_store {
	void *of[KIND_MAX]; /* a kind's live_size bytes, released by its live_release */
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
struct kind;
/* k's slot of ls (what its refresh read), or NULL when ls is NULL or k's was not read. */
const void *kind_live(const struct live_set *ls, const struct kind *k);
/* k's slot of ls, made (k->live_size bytes, zeroed) the first time; NULL when out of memory. */
void *kind_live_slot(struct live_store *ls, const struct kind *k);

/*
 * Reads the live cloud for every kind (each kind's refresh), into *out
 * (released first). The reads of one kind are one list per place it uses.
 */
int kind_refresh_all(struct live_store *out, struct provider *p, const struct stack *st,
		     const struct state *state, struct vx_err *err) VX_WUR;

/*
 * A kind whose live resources are listed one place (zone or region) at a
 * time: which places its declarations and records are in, and the list of
 * one place. kind_refresh_places does the rest: each (project, place) once,
 * noted in the plan header as "NOUN in PLACE", an error wrapped as
 * "reading NOUN in PLACE".
 */
struct kind_places {
	const char *noun; /* "reservations" */
	/* The place of st's declaration i of the kind, or NULL. */
	const char *(*decl_place)(const struct stack *st, size_t i);
	/* The project and place of one of the kind's records. */
	void (*record_place)(const struct state_record *r, const struct stack *st, const char **project,
			     const char **place);
	/* Lists one place into the kind's slot of out (kind_live_slot). */
	int (*list)(struct live_store *out, struct provider *p, const char *project, const char *place,
		    struct vx_err *err);
	/* More places of the stack's project to list: the i-th of n_also(st), or NULL to skip
	 * it (the regions of jobs on resources the stack does not declare). NULL: none. */
	size_t (*n_also)(const struct stack *st);
	const char *(*also_place)(const struct stack *st, size_t i);
};

int kind_refresh_places(const struct kind *k, const struct kind_places *how, struct live_store *out,
			struct provider *p, const struct stack *st, const struct state *state,
			struct vx_err *err) VX_WUR;

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
	int allow_other_lineage;            /* -allow-other-lineage (planner_options) */
	int allow_released;                 /* -allow-released (planner_options) */
	/*
	 * This kind's slot of the planner (struct planner's scratch, one per
	 * kind in table order): what its plan allocates for the plan's
	 * actions to borrow goes there, and its plan_release frees it with
	 * the planner. NULL until the plan sets it.
	 */
	void **scratch;
};

/*
 * How a kind's resources cost, for the plan's cost line (reconcile/out/render.c)
 * and vx report (reconcile/out/report.c).
 */
enum kind_cost {
	KIND_COST_NONE = 0, /* nothing billed by vx's figures (a quota preference) */
	/* A run bills while it runs, and its timeout bounds it: the plan shows
	 * "at most" (rate x timeout x attempts left). */
	KIND_COST_RUN,
	/* Bills by the hour while it exists, used or not, until deleted: its
	 * state runs' values are the VMs held, which vx report prices. */
	KIND_COST_HELD,
};

struct job_spec;

/* What machines one plan action holds or asks for (reconcile/capacity.c). */
struct kind_capacity {
	/* A run the action starts or keeps: the machines of the rung it runs
	 * on, their region, and the attempts its job may make; NULL: none. */
	const struct job_spec *run;
	const char *region;
	int64_t max_attempts;
	/* VMs it holds (made, resized or deleted by the action, old_value to
	 * new_value): 1 with what is known of them (NULL: unknown), else 0. */
	int holds;
	const char *zone;
	const char *machine_type;
	const char *accelerator;   /* the Compute Engine GPU name (Vertex AI's when vertex_rates), or NULL */
	int64_t accelerator_count; /* GPUs per VM */
	/*
	 * What holds VMs in more than one shape (a persistent resource's
	 * pools): part is which one the caller asks for (0 first), nparts how
	 * many there are (0: one, the fields above). A part's VMs before and
	 * after the action are old_count and new_count when has_counts, else
	 * the action's old_value and new_value.
	 */
	size_t part;
	size_t nparts;
	int has_counts;
	int64_t old_count, new_count;
	/* Regional VMs (zone NULL): they count against region's on-demand
	 * training quota (draws_quota), priced at Vertex AI training rates
	 * (vertex_rates) as a job's machines are. */
	int draws_quota;
	int vertex_rates;
	/* Held only in [window_start_ms, window_end_ms) (a booking); 0: from
	 * its create until deleted. */
	int64_t window_start_ms, window_end_ms;
	/*
	 * The most attempts attempts of the run may cost when a later attempt
	 * may run on other machines than run (a job's fallback ladder): per
	 * attempt, the priciest rung it may still run on. NULL: every attempt
	 * runs as run. -1 when a price is unknown, *why (owned, may stay NULL)
	 * saying which.
	 */
	double (*attempts_most)(const struct plan_action *a, const struct prices *p, int64_t attempts, char **why);
};

/* One declaration that holds machines, as the capacity check sees it (struct kind's held). */
struct kind_held {
	const char *address; /* "reservation.pool" */
	const char *name;    /* what a job spec names it by (its reservationAffinity) */
	const char *zone;
	const char *machine_type;
	const char *accelerator;   /* the Compute Engine GPU name (Vertex AI's when vertex_rates), or NULL */
	int64_t accelerator_count; /* GPUs per VM */
	int64_t count;		   /* VMs held: the live count when listed, else the declared one */
	int64_t in_use;		   /* VMs in use (0 when not listed) */
	/*
	 * A declaration holding VMs in more than one shape (a persistent
	 * resource's pools): part is the one asked for (set by the caller, 0
	 * first), nparts how many it has (0: one).
	 */
	size_t part;
	size_t nparts;
	/*
	 * Regional VMs (zone NULL, region set): not a reservation jobs draw on
	 * by name, but machines that count against region's on-demand training
	 * quota (draws_quota) from create to delete, priced at Vertex AI
	 * training rates (vertex_rates). listed: the refresh found it, and
	 * listed_max VMs of it (the most it may grow to) count as in use now.
	 * count_min and count_max: the range autoscaling moves the declared
	 * VMs in (both count without it); the quota counts count_max.
	 */
	const char *region;
	int draws_quota;
	int vertex_rates;
	int listed;
	int64_t listed_max;
	int64_t count_min, count_max;
	/* Held only in [window_start_ms, window_end_ms) (a booking's window); 0: while it exists. */
	int64_t window_start_ms, window_end_ms;
	/* What a job's spec names it by (its persistentResourceId), or NULL: such
	 * a job runs on these VMs and draws no quota of its own. */
	const char *job_ref;
};

/*
 * What a state record of a kind that holds VMs recorded of them, for vx
 * report (struct kind's held_record): the VMs' shape for the report's row,
 * the rate of one VM (the mean over its parts, weighted by their VMs) and
 * a booking's window.
 */
struct kind_held_shape {
	char machine_type[64];	   /* "" when not known */
	char accelerator[64];	   /* Vertex AI's name (NVIDIA_L4), "" for none */
	int64_t accelerator_count; /* per VM */
	double vm_rate;		   /* USD per VM-hour; < 0: unknown */
	int estimate;
	int64_t window_start_ms, window_end_ms; /* 0: held while it exists */
	int holds_nothing;			/* its state says no VM was delivered (declined, cancelled, failed) */
	char job_ref[64];			/* what a job's spec names it by (persistentResourceId), "" for none */
};

/* A declared request for a quota limit, and how the cloud stands on it (struct kind's limit_request). */
struct kind_limit_request {
	const char *address; /* "quota.h100" */
	int64_t requested;   /* the value declared */
	int listed;	     /* the refresh listed it: the fields below are set */
	int reconciling;     /* the cloud is still deciding */
	int64_t preferred;   /* the value it was asked */
	int has_granted;
	int64_t granted;
};

/* How a request the cloud decides over time stands (struct kind's decision). */
struct kind_decision {
	int pending;     /* still being decided */
	int granted;     /* decided: all it asked for (else less: denied) */
	int has_got;
	int64_t asked;   /* what it asked for */
	int64_t got;     /* what it got so far (has_got) */
};

/*
 * The window of a booking that ends the runs on a reservation it
 * delivered (kind.window_of). name is the booking's (its address's NAME),
 * borrowed from the live set.
 */
struct kind_window {
	const char *name;
	int64_t start_ms, end_ms;
};

struct notify_list;
struct notify_event_kind;

struct kind {
	const char *name;       /* the YAML document's kind and the state record's kind: "Reservation" */
	/*
	 * The address prefix: "reservation" (address "reservation.NAME"), of
	 * lowercase letters, digits and '_' (a letter first, at most
	 * STATE_MAX_PREFIX). The state directory is the prefix and an "s"
	 * ("reservations/"), a rule of state/state.h; test_kind checks both.
	 */
	const char *prefix;
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
	 * Frees what this kind's plan left in its scratch slot
	 * (kind_plan_input.scratch; NULL when the plan never ran). NULL: the
	 * kind's plan leaves nothing there.
	 */
	void (*plan_release)(void *scratch);
	/*
	 * Brings this kind's records written by an older vx to today's forms, in
	 * memory, without a change the planner would act on
	 * (planner_migrate_legacy). *migrated: how many records changed. 0 or
	 * VX_ENOMEM (then partly done). NULL: nothing to migrate.
	 */
	int (*migrate)(struct state *state, const struct stack *st, size_t *migrated);
	/* How its resources cost (the plan's cost line, vx report's sections). */
	enum kind_cost cost;
	/*
	 * What machines action a of this kind holds or asks for, into *out
	 * (zeroed by the caller): the capacity check and the change of spend
	 * read actions only through it. NULL: the kind holds no machines.
	 */
	void (*capacity)(const struct plan_action *a, struct kind_capacity *out);
	/*
	 * 1: the rest of this kind's update line ("~ ADDR ...") says why it is
	 * updated (a job's changed fields), too long for the apply summary's
	 * subject, which names the address alone; 0: it ends with what moved
	 * ("A -> B": a count, a preferredValue), which the subject shows.
	 */
	int update_says_why;
	/*
	 * 1: NAME of the address is not the live resource's name in Google
	 * Cloud but a label on it (Vertex AI names a job's runs itself; the
	 * vx-job label carries NAME). `vx state rm` then lets the record's runs
	 * go (state->released: no plan adopts or cancels them again) and `vx
	 * state mv` may give the record another address of the kind. 0: NAME
	 * is the resource's own name, which cannot be renamed: rm leaves it for
	 * a plan that declares it to adopt again, and mv refuses.
	 */
	int name_in_label;
	/* 1: its runs write lines to Cloud Logging, which `vx logs ADDR` reads. */
	int has_logs;
	/* The kind in prose, one and many ("quota preference", "quota preferences"). */
	const char *noun;
	const char *noun_plural;
	/* How many declarations of this kind st holds (st loaded). */
	size_t (*count_decls)(const struct stack *st);
	/* The i-th of them, in declaration order; NULL when i >= count_decls(st). */
	const struct stack_decl *(*decl_at)(const struct stack *st, size_t i);
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
	 * vx status (reconcile/status.h): adds this kind's rows to out, each
	 * made by status_row_add with the kind's prefix: one per declared
	 * address, and those the kind also shows (a record no longer
	 * declared, a live resource of this stack the state does not know).
	 * Reads only in (the stack, the state, what the refresh listed),
	 * never the network. status_build sorts the rows. Returns 0 or
	 * VX_ENOMEM. NULL: the kind has no rows.
	 */
	int (*status_rows)(struct status_report *out, const struct status_input *in);
	/*
	 * What its refresh keeps in a live store: live_size bytes (zeroed when
	 * made, kind_live_slot), whose insides live_release frees (the store
	 * frees the slot itself). 0 and NULL: it keeps nothing.
	 */
	size_t live_size;
	void (*live_release)(void *live);
	/*
	 * 1: vx watch follows this kind's runs unreviewed, as the applied policy
	 * says (a resubmission, a sweep's next runs, a run stuck in the queue);
	 * 0: the watcher only plans it and tells what changed.
	 */
	int watch_runs;
	/*
	 * Whether action a asks the cloud for something it decides over time
	 * (a quota preference while Cloud Quotas reconciles it), and how that
	 * stands: 1 with *out set, else 0. vx watch tells a decision once, when
	 * it is made. NULL: the kind asks for nothing such.
	 */
	int (*decision)(const struct plan_action *a, struct kind_decision *out);
	/*
	 * The stack loader (reconcile/stack.c; what a kind's reader may use:
	 * reconcile/stack_loader.h): how this kind's documents become its slot
	 * of struct stack (st->of[kind_index]). The loader reads the Stack
	 * document, then each kind in kind_table's order (what a later kind
	 * names of an earlier one is read first: a job's reservationAffinity
	 * names a declared reservation). load_alloc makes room for n documents'
	 * declarations before any pass reads; load_prepare runs before the
	 * kind's pass reads (it sets B->order when not file order); load_read
	 * reads one document; load_finish checks what holds once all are read.
	 * All but load_read may be NULL; those returning int return -1 on an
	 * allocation failure (recorded), which ends the passes.
	 */
	int (*load_alloc)(struct load_pass *B, size_t n);
	int (*load_prepare)(struct load_pass *B);
	int (*load_read)(struct load_pass *B, const struct ynode *doc);
	void (*load_finish)(struct load_pass *B);
	/*
	 * Once the stack is valid (and again after stack_apply_salt): each of
	 * the kind's declarations' d.hash, the SHA-256 of its canonical form
	 * (stack_decl_hash), which the stack's decl_hash is made of. 0 or VX_ENOMEM.
	 */
	int (*decl_hash)(struct stack *st);
	/* Once the stack is valid: what the kind indexes (the jobs by name). 0 or VX_ENOMEM. NULL: nothing. */
	int (*load_index)(struct stack *st);
	/*
	 * stack_apply_salt: keys the redaction of the kind's sensitive values
	 * with the state's salt, *nsalted += how many declarations changed.
	 * 0 or an error naming the declaration. NULL: the kind has none.
	 */
	int (*decl_salt)(struct stack *st, const char *salt, size_t *nsalted, struct vx_err *err);
	/* Frees what the kind's slot of a stack holds (stack_free). */
	void (*decl_release)(struct stack_kind_decls *slot);
	/*
	 * The service whose quota limits (Cloud Quotas quotaInfos) the capacity
	 * check reads for this kind ("compute.googleapis.com"): always when
	 * limits_always, else when the stack declares one of the kind
	 * (capacity_limit_services). NULL: none.
	 */
	const char *limits_service;
	int limits_always;
	/*
	 * The i-th declaration of this kind (i < count_decls) as the machines it
	 * holds, into *out (zeroed by the caller), with what the refresh listed
	 * of it in live (NULL: not read): the capacity check's rows of what is
	 * held and their cost. NULL: the kind's declarations hold no machines.
	 */
	void (*held)(const struct stack *st, const struct live_set *live, size_t i,
		     struct kind_held *out);
	/*
	 * The declaration of this kind that asks for the limit of service's
	 * quota_id in region (a quota preference), with what the refresh
	 * listed of it (live may be NULL): 1 with *out set (zeroed by the
	 * caller), else 0. The capacity check shows the request and waits on
	 * an undecided one. NULL: the kind asks for no limits.
	 */
	int (*limit_request)(const struct stack *st, const struct live_set *live, const char *service,
			     const char *quota_id, const char *region, struct kind_limit_request *out);
	/*
	 * The kind's own fields of each of its plan actions (plan_action.payload):
	 * action_size bytes made zeroed by plan_add_action, whose insides
	 * action_release frees (the plan frees the payload itself). 0 and NULL:
	 * the kind's actions have only the generic fields.
	 */
	size_t action_size;
	void (*action_release)(void *payload);
	/*
	 * 1: `vx validate`'s summary ("stack s: 1 job, 0 reservations, ...")
	 * counts this kind only when the stack declares some, so a kind added
	 * later does not change what every other stack's summary says; 0: always.
	 */
	int summary_if_declared;
	/*
	 * The form of the cloud's name for a resource of this kind, as `vx
	 * import`'s usage lists it ("projects/P/zones/ZONE/reservations/NAME").
	 */
	const char *import_form;
	/*
	 * sizeof the kind's declaration type, whose first member is its struct
	 * stack_decl: with it the row may leave count_decls, decl_at and
	 * find_decl NULL, and its declarations are found in its slot of the
	 * stack (kind_count_decls, kind_decl_at, kind_find_decl).
	 */
	size_t decl_size;
	/*
	 * Once every kind planned (planner_run, in phase order, before the
	 * sweeps' limits): holds back this kind's actions that wait on what
	 * another kind's actions in the same plan do (a job in a booking's
	 * window waits until the capacity is delivered and open to Vertex AI,
	 * which the booking's own update, applied first by phase order, may
	 * do). 0 or VX_ENOMEM. NULL: nothing waits so.
	 */
	int (*plan_after)(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err);
	/*
	 * The booking of this kind, as live lists it, that delivered the
	 * reservation projects/P/zones/Z/reservations/NAME and ends the VMs on
	 * it when its window closes (calendar mode): 1 with *out set, else 0.
	 * A job's run that ended then is classed window-ended
	 * (reconcile/failure.h). NULL: the kind delivers no such reservation.
	 */
	int (*window_of)(const struct live_set *live, const char *reservation, struct kind_window *out);
	/*
	 * The notifications action a of this kind stands for now (a window
	 * opening or closing, a resource in ERROR), appended to out with
	 * notify_list_add (strings borrowed from the action, or made for the
	 * event: notify_event.owned): only those that happened at since_ms or
	 * later, with an id that is the same each time the same event is seen
	 * (reconcile/notify.h), so each is told once. 0 or VX_ENOMEM. NULL: none.
	 */
	int (*notify)(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
		      int64_t since_ms);
	/*
	 * vx report (reconcile/out/report.c): what a record of this kind that
	 * holds VMs (a run with a value) recorded of them, priced in p (NULL:
	 * none), into *out (zeroed by the caller). NULL: the recorded spec's
	 * top-level machineType, acceleratorType and acceleratorCount on
	 * Compute Engine's on-demand rate in the run's zone (a reservation's).
	 */
	void (*held_record)(const struct state_record *rec, const struct state_run *run, const struct prices *p,
			    struct kind_held_shape *out);
	/*
	 * Whether vx watch without -sync may carry out action a unreviewed
	 * although the kind's runs are not its to follow (watch_runs 0): a is
	 * what the reviewed declaration asked for, and that declaration is the
	 * one applied (a booking as applied, whose delivered reservation is
	 * opened to Vertex AI). 1: it may; 0: as any action not applied. NULL: never.
	 */
	int (*watch_may)(const struct plan_action *a);
	/*
	 * Once vx watch held back what it may not do: the address of the held
	 * action of p that action a of this kind relies on (a job in a
	 * booking's window on the booking's opening), so that a is held too; or
	 * NULL. Borrowed from p. NULL: the kind's actions rely on none such.
	 */
	const char *(*watch_relies)(const struct plan *p, const struct plan_action *a);
	/*
	 * The notification events of this kind's own (reconcile/notify.h: a
	 * booking's window, a resource in ERROR), nevents of them, each with
	 * a bit of its own that never changes (it is in applied targets'
	 * digests) and its name in `notify: on:`. NULL: none but every
	 * stack's.
	 */
	const struct notify_event_kind *events;
	size_t nevents;
	/*
	 * The CustomJobSpec field by which a job runs on what one of this
	 * kind's declarations holds ("persistentResourceId"): such a job's
	 * machines are the held VMs, so it draws no quota and costs nothing of
	 * its own, and the value is the held thing's job_ref. NULL: none.
	 */
	const char *job_ref_field;
	/*
	 * The rule of a `kind: Policy` that may refuse declaring this kind with
	 * {allow: false} (reconcile/policy_rules.h): "reservations" for every
	 * kind that holds paid capacity, "quotaPreferences". Kinds with the
	 * same key share the rule. NULL: no policy rule refuses the kind.
	 */
	const char *policy_allow;
	/*
	 * vx validate and the plan: the kind's declarations in st checked against
	 * the price table p: the limits they set (a job's maxHourlyUsd against the
	 * rate of every run and rung) and the policy's in force (rules.maxHourlyUsd,
	 * st->policy), each problem into out at its field's "FILE:LINE:COLUMN".
	 * p NULL: 1 when some limit applies (so the caller loads the table), else
	 * 0. 0 or VX_ENOMEM. NULL: no limit on prices applies to the kind.
	 */
	int (*check_prices)(const struct stack *st, const struct prices *p, struct vx_diags *out);
	/*
	 * The Stack's budget (docs/budgets.md): 1 when action a starts spending
	 * no reviewer approved in this plan, which vxplan and vxapply hold past
	 * the budget as the watcher does (a resubmission; a start of a
	 * declaration applied earlier: a sweep run that waited for maxParallel,
	 * an after: dependent whose dependencies succeeded); 0: a start the
	 * reviewed declaration asks for. NULL: the kind starts nothing unreviewed.
	 */
	int (*budget_unreviewed)(const struct plan_action *a);
	/* Makes such an action a wait, with why (owned, taken): 0, or VX_ENOMEM when why is NULL. */
	int (*budget_hold)(struct plan *p, struct plan_action *a, char *why);
	/*
	 * vx watch, for action a whose address the policy in force (pol) has
	 * violations about: when each is about one rung of a's fallback ladder
	 * (policy_violation.rung), the run a starts goes on the first rung from
	 * its own down that none is about, and its reason says which it skipped
	 * and why. 1: a may go as it is; 2: a was moved to another rung; 0: a
	 * violation is about the declaration itself, or no allowed rung remains
	 * (hold a); VX_ENOMEM. NULL: every violation holds the whole address.
	 */
	int (*policy_rung)(struct plan_action *a, const struct policy_rules *pol);
};

/*
 * Every kind, in phase order: the rows are each kind's own (`extern const
 * struct kind kind_NAME` in its reconcile/kind_NAME.h), listed in kind.c.
 */
extern const struct kind *const kind_table[];
extern const size_t kind_count;
/* k's place in kind_table (KIND_MAX when k is not there). */
size_t kind_index(const struct kind *k);
/* The kind of an address ("reservation.pool"), or NULL. */
const struct kind *kind_of_address(const char *address);
/* The kind of a state record's or YAML kind name ("Reservation"), or NULL. */
const struct kind *kind_by_name(const char *name);
/* NAME of address ("pool" of "reservation.pool") when it is an address of kind k, else NULL. */
const char *kind_address_name(const struct kind *k, const char *address);

/* Whether key (a CustomJobSpec field) is a kind row's job_ref_field. */
int kind_is_job_ref_field(const char *key);
/* What a job's spec (a CustomJobSpec as cJSON) names held VMs by (the value of a row's
 * job_ref_field, borrowed from spec), or NULL: it runs on VMs of its own. */
struct cJSON;
const char *kind_spec_held_ref(const struct cJSON *spec);

/*
 * The kinds as help and error texts list them, jobs first (kind_table in
 * reverse phase order, as the docs list them), appended to out. Addresses:
 * each kind's prefix then suffix, ", " between them and " or " before the
 * last (suffix ".NAME": "job.NAME, reservation.NAME or quota.NAME").
 * Names: the kinds' names, ", " between them ("CustomJob, Reservation,
 * QuotaPreference"). 0 or VX_ENOMEM.
 */
int kind_list_addresses(struct vx_buf *out, const char *suffix) VX_WUR;
int kind_list_names(struct vx_buf *out) VX_WUR;

/*
 * The plan of a kind whose declarations are planned one at a time: each
 * targeted declaration (declared: the kind's own type), then each targeted
 * record of the kind whose declaration is gone (removed), then the shape
 * line of each of the kind's actions that has none (describe, when set).
 * ud is the kind's. An error of a step is "planning NOUN: out of memory".
 */
struct kind_plan_steps {
	const char *noun; /* "reservations" */
	int (*declared)(struct plan *p, const struct kind_plan_input *in, const void *d, void *ud);
	int (*removed)(struct plan *p, const struct kind_plan_input *in, const struct state_record *r, void *ud);
	char *(*describe)(const struct plan_action *a);
};

int kind_plan_each(const struct kind *k, const struct kind_plan_steps *how, struct plan *p,
		   const struct kind_plan_input *in, void *ud, struct vx_err *err) VX_WUR;

/* k's declarations in st: its own slots when the row has them, else its slot of st. */
size_t kind_count_decls(const struct kind *k, const struct stack *st);
/* The i-th of them in declaration order, NULL when i >= kind_count_decls. */
const struct stack_decl *kind_decl_at(const struct kind *k, const struct stack *st, size_t i);
/* The one named name, or NULL. */
const struct stack_decl *kind_find_decl(const struct kind *k, const struct stack *st, const char *name);

/*
 * Every kind's check_prices: 1 when st sets a price limit (p NULL), else
 * the problems found into out; 0 or VX_ENOMEM.
 */
int kind_check_prices(const struct stack *st, const struct prices *p, struct vx_diags *out) VX_WUR;

/* Whether address is one of the -target addresses (all, when there are none). */
int kind_targeted(const struct kind_plan_input *in, const char *address);
/* Whether address is one of the -replace addresses. */
int kind_replaced(const struct kind_plan_input *in, const char *address);

#endif
