#ifndef VX_RECONCILE_KIND_FUTURE_H
#define VX_RECONCILE_KIND_FUTURE_H

/*
 * The future reservation kind's declarations (FutureReservation documents,
 * future_reservation.NAME: a booking of GPU VMs for a window, Dynamic
 * Workload Scheduler's calendar mode or an ordinary future reservation) and
 * their accessors, for the kind's files. They live in the kind's slot of
 * struct stack.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/stack.h"

struct stack_future {
	struct stack_decl d;	 /* address "future_reservation.NAME"; NAME is also compute's name */
	char *zone;		 /* "us-central1-a" */
	int calendar;		 /* mode: 1 calendar (reservationMode CALENDAR), 0 default */
	int64_t start_ms;	 /* window.start */
	int64_t end_ms;		 /* window.start + duration, or window.end */
	int64_t closing_lead_ms; /* window.closingLead: told this long before the end (default 2 h) */
	int64_t total_count;	 /* spec.specificSkuProperties.totalCount: VMs */
	char *machine_type;	 /* ...instanceProperties.machineType */
	char *accelerator;	 /* ...guestAccelerators[0].acceleratorType, or NULL */
	int64_t accelerator_count;
	char *description; /* or NULL */
	int protect;	   /* 1: the plan refuses to cancel or delete it */
};

/* st's future reservations in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_future *stack_futures(const struct stack *st, size_t *n);
/* The future reservation named name; NULL when not declared. */
const struct stack_future *stack_find_future(const struct stack *st, const char *name);

/* kind_future_load.c: the row's loader slots (struct kind). */
struct load_pass;
struct ynode;
int kind_future_load_alloc(struct load_pass *B, size_t n);
int kind_future_load_read(struct load_pass *B, const struct ynode *doc);
int kind_future_decl_hash(struct stack *st);
void kind_future_decl_release(struct stack_kind_decls *slot);

/*
 * A job in f's window (a CustomJob's reservation: NAME; kind_future_window.c):
 * whether it may be created now, as plan p (every kind planned) and the
 * refresh (live, NULL when off) say. 1 with *reservation the full name
 * projects/P/zones/Z/reservations/N of the reservation Google delivered
 * (open to Vertex AI, or opened by p's update of the booking, which apply
 * runs first); 0 with *why what the job waits for, in the plan's words
 * ("window opens Tue 08 Dec 09:00 UTC (in 3d 4h); ..."). Both owned by the
 * caller. now_ms 0: unknown (no "in ..."). VX_ENOMEM.
 */
struct live_set;
struct plan;
int future_window_ready(char **reservation, char **why, const struct stack_future *f, const struct plan *p,
			const struct live_set *live, int64_t now_ms, const char *project) VX_WUR;

/* The kind's row of kind_table (reconcile/kind.h). */
extern const struct kind kind_future;

#endif
