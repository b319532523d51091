#ifndef VX_RECONCILE_PROVIDER_FUTURE_H
#define VX_RECONCILE_PROVIDER_FUTURE_H

/*
 * The client interface of the future reservation kind (Compute Engine
 * future reservations; calendar mode is one with reservationMode
 * CALENDAR): what the cloud reports of one, what an insert carries, the
 * kind's operations and the helpers over them. See reconcile/provider.h and
 * docs/future-reservations.md.
 */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"

/*
 * A future reservation as the cloud reports it. Like reservations it has no
 * labels: vx marks its own in the description (reconcile/kind_future.c).
 * Every string is cleaned server text.
 */
struct live_future {
	char *name;    /* compute name (also the address's NAME) */
	char *project; /* the project id it was listed in */
	char *zone;
	char *description;	  /* NULL when none */
	char *mode;		  /* reservationMode: CALENDAR, DEFAULT, ... */
	char *procurement_status; /* status.procurementStatus: PENDING_APPROVAL, APPROVED, ... */
	int64_t start_ms, end_ms; /* timeWindow (end from duration when given so) */
	int64_t total_count;	  /* specificSkuProperties.totalCount */
	char *machine_type;
	char *accelerator_type; /* the first guestAccelerator's name, or NULL */
	int64_t accelerator_count;
	int64_t fulfilled_count;
	char **auto_created; /* the delivered reservations' names (checked), n_auto_created */
	size_t n_auto_created;
	int64_t create_ms;
	/* Every delivered reservation lets Vertex AI use it (serviceShareType ALLOW_ALL), as the
	 * zone's reservations list says; 0 when one does not or none was listed. */
	int vertex_open;
	/* None of the delivered reservations is in the zone's list any more:
	 * Google deleted them (at the end of the window), nothing to open. */
	int delivered_gone;
};

struct live_futures {
	struct live_future *items;
	size_t n;
};

struct provider_future_request {
	const char *project;
	const char *zone;
	const char *name;
	const char *description; /* with vx's ownership marker */
	int calendar;		 /* 1: reservationMode CALENDAR, else DEFAULT */
	int64_t start_ms, end_ms;
	int64_t total_count;
	const char *machine_type;
	const char *accelerator_type; /* compute's name, or NULL */
	int64_t accelerator_count;
	/* Compute's requestId (a UUID), journaled before the call: a retried
	 * insert with the same id is not a second booking. */
	const char *request_id;
	const struct provider_fence *fence; /* NULL: none */
};

/*
 * Future reservations (Compute Engine, one zone). list: one paginated list
 * per zone. create submits the request (planningStatus SUBMITTED) and reads
 * it back into *out; cancel and del send and follow the zone operation
 * (VX_EUNCERTAIN when the outcome is unknown: list before trying again).
 */
struct provider_future_ops {
	int (*list)(struct provider *p, const char *project, const char *zone, struct live_futures *out,
		    struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_future_request *req, struct live_future *out,
		      struct vx_err *err);
	int (*cancel)(struct provider *p, const char *project, const char *zone, const char *name,
		      const struct provider_fence *fence, struct vx_err *err);
	int (*del)(struct provider *p, const char *project, const char *zone, const char *name,
		   const struct provider_fence *fence, struct vx_err *err);
	/* Opens the delivered reservation to Vertex AI: reservations.update of
	 * reservationSharingPolicy.serviceShareType to ALLOW_ALL, followed to its end. */
	int (*open_to_vertex)(struct provider *p, const char *project, const char *zone, const char *reservation,
			      const struct provider_fence *fence, struct vx_err *err);
};

/* The kind's interface (struct provider's tables, PROVIDER_HAS(p, future, op)). */
extern const struct provider_kind provider_kind_future;

int provider_future_list(struct provider *p, const char *project, const char *zone, struct live_futures *out,
			 struct vx_err *err);
int provider_future_create(struct provider *p, const struct provider_future_request *req,
			   struct live_future *out, struct vx_err *err);
int provider_future_cancel(struct provider *p, const char *project, const char *zone, const char *name,
			   const struct provider_fence *fence, struct vx_err *err);
int provider_future_del(struct provider *p, const char *project, const char *zone, const char *name,
			const struct provider_fence *fence, struct vx_err *err);

int provider_future_open_to_vertex(struct provider *p, const char *project, const char *zone,
				   const char *reservation, const struct provider_fence *fence, struct vx_err *err);

int live_future_copy(struct live_future *out, const struct live_future *in) VX_WUR;
void live_future_release(struct live_future *f);
void live_futures_release(struct live_futures *fs);
int live_futures_push(struct live_futures *fs, const struct live_future *f) VX_WUR;

#endif
