#ifndef VX_RECONCILE_KIND_RESERVATION_H
#define VX_RECONCILE_KIND_RESERVATION_H

/*
 * The reservation kind's declarations (Reservation documents,
 * reservation.NAME) and their accessors, for the kind's files and the code
 * that truly works on reservations. They live in the kind's slot of
 * struct stack.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/stack.h"

struct stack_accelerator {
	char *type;    /* compute's name: "nvidia-h100-80gb" */
	int64_t count; /* per VM, >= 1 */
};

struct stack_reservation {
	struct stack_decl d;			/* address "reservation.NAME"; NAME is also compute's name */
	char *zone;				/* "us-central1-a" */
	char *machine_type;			/* "a3-highgpu-8g" */
	struct stack_accelerator *accelerators; /* owned; 0 or 1 entries */
	size_t naccelerators;
	int64_t count;	       /* VMs reserved, 1..1000 */
	int specific_required; /* specificReservationRequired, default 1 */
	char *description;     /* or NULL */
	int protect;	       /* 1: the plan refuses to delete it */
};

/* st's reservations in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_reservation *stack_reservations(const struct stack *st, size_t *n);
/* The reservation named name; NULL when not declared. */
const struct stack_reservation *stack_find_reservation(const struct stack *st, const char *name);

/* kind_reservation_load.c: the row's loader slots (struct kind), for kind_reservation.c's row. */
struct load_pass;
struct ynode;
int kind_reservation_load_alloc(struct load_pass *B, size_t n);
int kind_reservation_load_read(struct load_pass *B, const struct ynode *doc);
int kind_reservation_decl_hash(struct stack *st);
void kind_reservation_decl_release(struct stack_kind_decls *slot);

/* The kind's row of kind_table (reconcile/kind.h). */
extern const struct kind kind_reservation;

#endif
