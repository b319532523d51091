#ifndef VX_RECONCILE_PROVIDER_RESERVATION_H
#define VX_RECONCILE_PROVIDER_RESERVATION_H

/*
 * The client interface of the reservation kind (Compute Engine
 * reservations): what the cloud reports of one, what a create carries, the
 * kind's operations and the helpers over them. See reconcile/provider.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"
#include "util/label.h"

/*
 * A Compute Engine reservation as the cloud reports it. Compute reservations
 * have no labels (v1): vx marks its own in the description (see
 * reconcile/kind_reservation.c), and proves ownership by that marker or by
 * the state knowing the reservation.
 */
struct live_reservation {
	char *name;              /* compute name (also the address's NAME) */
	char *project;           /* the project id it was listed in */
	char *zone;              /* "us-central1-a" */
	char *status;            /* CREATING, READY, DELETING, UPDATING, INVALID */
	char *description;       /* NULL when none */
	char *machine_type;      /* "a3-highgpu-8g" */
	char *accelerator_type;  /* "nvidia-h100-80gb" (a name, not a URL), NULL when none */
	int64_t accelerator_count; /* per VM */
	int64_t count;           /* specificReservation.count */
	int64_t in_use;          /* specificReservation.inUseCount */
	int specific_required;   /* specificReservationRequired */
	char *share_type;        /* reservationSharingPolicy.serviceShareType, or NULL */
	int64_t create_ms;       /* creationTimestamp, 0 when unknown */
};

struct live_reservations {
	struct live_reservation *items;
	size_t n;
};

struct provider_reservation_request {
	const char *project;
	const char *zone;
	const char *name;
	const char *description;       /* with vx's ownership marker */
	const char *machine_type;
	const char *accelerator_type;  /* compute's name, or NULL */
	int64_t accelerator_count;
	int64_t count;                 /* 1..1000 */
	int specific_required;
	/* Compute's requestId (a UUID): a retried insert with the same id within
	 * Compute's window is not a second reservation. */
	const char *request_id;
	const struct provider_fence *fence; /* NULL: none */
};

/*
 * Reservations (Compute Engine, one zone). list: one paginated list call
 * per zone, never a get per reservation. create/resize/delete send the
 * request and wait for its zone operation (bounded; VX_EUNCERTAIN when
 * the outcome is unknown: the caller lists before trying again). A
 * create is an insert with request_id; *out (create) is the reservation
 * as read after the operation.
 */
struct provider_reservation_ops {
	int (*list)(struct provider *p, const char *project, const char *zone,
		    struct live_reservations *out, struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_reservation_request *req,
		      struct live_reservation *out, struct vx_err *err);
	int (*resize)(struct provider *p, const char *project, const char *zone, const char *name,
		      int64_t count, const struct provider_fence *fence, struct vx_err *err);
	/* del, not delete: clang-format takes delete for C++'s keyword
	 * (libgit2's backends say del too). */
	int (*del)(struct provider *p, const char *project, const char *zone, const char *name,
		   const struct provider_fence *fence, struct vx_err *err);
};

/* The reservation kind's interface (struct provider's tables, provider_find, PROVIDER_HAS(p, reservation, op)). */
extern const struct provider_kind provider_kind_reservation;

/* The operations of provider_reservation_ops, called on the provider in p's chain that has
 * each (VX_EINVAL when none). */
int provider_reservation_list(struct provider *p, const char *project, const char *zone,
			      struct live_reservations *out, struct vx_err *err);
int provider_reservation_create(struct provider *p, const struct provider_reservation_request *req,
				struct live_reservation *out, struct vx_err *err);
int provider_reservation_resize(struct provider *p, const char *project, const char *zone, const char *name,
				int64_t count, const struct provider_fence *fence, struct vx_err *err);
int provider_reservation_del(struct provider *p, const char *project, const char *zone, const char *name,
			     const struct provider_fence *fence, struct vx_err *err);

/* Deep copy and release helpers. */
int live_reservation_copy(struct live_reservation *out, const struct live_reservation *in) VX_WUR;
void live_reservation_release(struct live_reservation *r);
void live_reservations_release(struct live_reservations *rs);
int live_reservations_push(struct live_reservations *rs, const struct live_reservation *r) VX_WUR;

#endif
