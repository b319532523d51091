#ifndef VX_RECONCILE_KIND_PERSISTENT_INTERNAL_H
#define VX_RECONCILE_KIND_PERSISTENT_INTERNAL_H

/* What the persistent resource kind's files share (kind_persistent*.c) and nothing else uses. */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/notify.h"
#include "util/err.h"

struct applier;
struct import_outcome;
struct import_request;
struct kind_capacity;
struct kind_held;
struct live_persistent;
struct live_set;
struct plan_action;
struct provider;
struct stack;
struct stack_persistent;
struct state;
struct state_record;
struct status_input;
struct status_report;
struct vx_buf;

/* kind_persistent.c */
void persistent_record_place(const struct state_record *r, const struct stack *st, const char **project,
			     const char **region);
const struct live_persistent *persistent_live_find(const struct live_set *live, const char *region,
						   const char *id);
/* Whether l's labels name this stack and state (vx-stack, vx-lineage). */
int persistent_is_ours(const struct live_persistent *l, const char *stack, const char *lineage);
/* Whether r was recorded from a declaration with deletionPolicy: abandon. */
int persistent_record_abandons(const struct state_record *r);
int64_t persistent_decl_replicas(const struct stack_persistent *d);
int64_t persistent_used(const struct live_persistent *l);
char *persistent_immutable_change(const struct stack_persistent *d, const struct live_persistent *l);
int persistent_labels_differ(const struct stack_persistent *d, const struct live_persistent *l);
unsigned persistent_mutable_change(const struct stack_persistent *d, const struct live_persistent *l,
				   struct vx_buf *out);

/*
 * kind_persistent_jobs.c: the stack's jobs on its resources, once every
 * kind before it has planned (struct kind_plan_input). Runs that cannot
 * start on their resource now become waits, and each pool used gets a line
 * of the replicas its jobs use. 0 or VX_ENOMEM.
 */
struct kind_plan_input;
struct plan;
int persistent_plan_jobs(struct plan *p, const struct kind_plan_input *in);
/*
 * Whether d (live l, NULL: not listed) may be replaced (how: "-replace",
 * "onError: replace") with the jobs on it: 1 when refused while jobs run on
 * it (a plan error added), 0 when it may be, with *note (owned, or NULL)
 * naming the jobs this plan cancels first, to add to the replace's reason;
 * VX_ENOMEM.
 */
int persistent_replace_in_use(struct plan *p, const struct stack_persistent *d, const struct live_persistent *l,
			      const char *how, char **note);

/* kind_persistent_apply.c: the row's apply slot, and what a record keeps of d (deletionPolicy first). */
char *persistent_record_json(const struct stack_persistent *d);
int persistent_apply(struct applier *a, int removals, struct vx_err *err);
/* kind_persistent_more.c: import and status rows. */
int persistent_import(struct import_outcome *out, struct state *state, struct provider *p,
		      const struct stack *st, const struct import_request *req, int check_only, struct vx_err *err);
int persistent_status_rows(struct status_report *out, const struct status_input *in);
/* The resource's notification event (struct kind's events): its bit is fixed for good, as
 * it is in the digests of applied notify targets. */
#define PERSISTENT_EVENT_ERROR (1u << 12) /* "resource-error": a persistent resource went to ERROR */
extern const struct notify_event_kind persistent_events[1];
/* The row's notify slot: resource-error while a resource is in ERROR. */
struct notify_list;
int persistent_notify(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
		      int64_t since_ms);
/* kind_persistent_cost.c: the row's capacity, held and held_record slots (struct kind). */
struct kind_held_shape;
struct prices;
struct state_run;
void persistent_capacity(const struct plan_action *a, struct kind_capacity *out);
void persistent_held(const struct stack *st, const struct live_set *live, size_t i, struct kind_held *out);
void persistent_held_record(const struct state_record *rec, const struct state_run *run, const struct prices *p,
			    struct kind_held_shape *out);

#endif
