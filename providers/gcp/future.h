#ifndef VX_GCP_FUTURE_H
#define VX_GCP_FUTURE_H

/*
 * Compute Engine v1 future reservations (projects.zones.futureReservations):
 * insert, get, list, aggregatedList, update, cancel and delete. The calendar
 * mode of Dynamic Workload Scheduler is a future reservation with
 * reservationMode CALENDAR. docs/future-reservations.md holds the API facts
 * this client relies on and the careful readings chosen where Google is
 * silent.
 *
 * It speaks through compute.h's struct compute_client (same host, same
 * fence) and follows every mutation's zone operation to DONE with
 * compute_operation_follow(). Every mutation carries a requestId in its
 * query string (the caller's, or a fresh UUID v4) and is sent with
 * GCP_RETRY_REQUEST_ID: the HTTP layer's retries resend the same URL, and
 * Compute runs a request id once. When the answer is lost after the
 * retries, the outcome is unknown: VX_EUNCERTAIN, and the message names the
 * request id. A caller that must be crash-safe makes the id itself
 * (compute_request_id), records it before the call and passes the same id
 * again when it retries.
 *
 * Responses become our structs at this boundary. The parsers are public for
 * fuzzing and never crash on hostile input: a field of the wrong type is
 * absent, a body that is not a JSON object is VX_EINVAL.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct compute_client;
struct compute_operation;
struct compute_accelerator;

/* A tri-state for the booleans Google may leave out. */
#define FUTURE_UNSET (-1)

/*
 * A future reservation. Owned strings, NULL when absent; times in ms since
 * the epoch, 0 when absent or unparsable; counts 0 when absent.
 */
struct future_reservation {
	char *name;
	char *zone; /* the zone's name (last segment of the zone URL) */
	char *self_link;
	char *description;
	int64_t create_ms; /* creationTimestamp */

	/* The request. Enum values are kept as Google's strings. */
	char *reservation_mode;			      /* CALENDAR | DEFAULT | RESERVATION_MODE_UNSPECIFIED */
	char *planning_status;			      /* DRAFT | SUBMITTED | PLANNING_STATUS_UNSPECIFIED */
	char *deployment_type;			      /* DENSE | DEPLOYMENT_TYPE_UNSPECIFIED */
	char *scheduling_type;			      /* GROUPED | INDEPENDENT | GROUP_MAINTENANCE_TYPE_UNSPECIFIED */
	char *name_prefix;			      /* prefix of the auto-created reservations (at most 20 characters) */
	char *reservation_name;			      /* or: the reservation that receives the capacity */
	int specific_reservation_required;	      /* 0, 1 or FUTURE_UNSET */
	int auto_delete_auto_created_reservations;    /* 0, 1 or FUTURE_UNSET */
	int64_t auto_created_reservations_delete_ms;  /* autoCreatedReservationsDeleteTime */
	int64_t auto_created_reservations_duration_s; /* autoCreatedReservationsDuration.seconds */

	/* timeWindow: startTime and one of endTime, duration. */
	int64_t start_ms;
	int64_t end_ms;
	int64_t duration_s; /* duration.seconds (nanos are dropped) */

	/* specificSkuProperties */
	int64_t total_count;
	char *machine_type;			  /* instanceProperties.machineType */
	struct compute_accelerator *accelerators; /* instanceProperties.guestAccelerators */
	size_t n_accelerators;
	size_t n_local_ssds; /* instanceProperties.localSsds: counted (Vertex AI cannot use them) */
	char *source_instance_template;

	/* status (output only) */
	char *procurement_status; /* see future_status_* below */
	int64_t lock_ms;	  /* status.lockTime: no changes from then on */
	int64_t fulfilled_count;
	char **auto_created; /* status.autoCreatedReservations: full URLs as Google sent them */
	size_t n_auto_created;
	char *amendment_status; /* AMENDMENT_APPROVED | AMENDMENT_DECLINED | AMENDMENT_IN_REVIEW */
	/* status.lastKnownGoodState.procurementStatus: where a declined amendment returns to. */
	char *last_good_status;
	int64_t existing_matching_count; /* status.existingMatchingUsageInfo.count */
};

#define FUTURE_RESERVATION_INIT \
	{ \
		.specific_reservation_required = FUTURE_UNSET, \
		.auto_delete_auto_created_reservations = FUTURE_UNSET \
	}

void future_reservation_release(struct future_reservation *fr);

struct future_reservation_list {
	struct future_reservation *items;
	size_t n;
	size_t alloc;
};

#define FUTURE_RESERVATION_LIST_INIT \
	{ \
		NULL, 0, 0 \
	}

void future_reservation_list_release(struct future_reservation_list *l);

/*
 * What a procurement status means, by the proto's comments. Unknown or NULL
 * statuses are none of these (a status Google adds later is not guessed).
 */
/* DRAFTING, PENDING_APPROVAL, PENDING_AMENDMENT_APPROVAL: Google has not decided yet. */
int future_status_undecided(const char *status);
/* DECLINED, CANCELLED, FAILED, FAILED_PARTIALLY_FULFILLED, FULFILLED, COMMITTED: it will not move again by itself. */
int future_status_final(const char *status);
/* DECLINED, FAILED, FAILED_PARTIALLY_FULFILLED: Google refused or could not deliver (all or part). */
int future_status_failed(const char *status);
/* PROCURING, PROVISIONING, FULFILLED, FAILED_PARTIALLY_FULFILLED, COMMITTED: locked, no modification accepted. */
int future_status_locked(const char *status);

/*
 * The name of the i-th auto-created reservation: the last segment of its
 * URL when the URL is .../projects/P/zones/Z/reservations/NAME with Z equal
 * to fr->zone (when known) and NAME a Compute name
 * (compute_reservation_name_ok); NULL otherwise (borrowed from fr). The
 * URL came from the server: nothing else of it is used.
 */
const char *future_reservation_auto_created_name(const struct future_reservation *fr, size_t i);

/* Parsers (body need not be NUL-terminated; *out is overwritten and, on error, left released). */
int future_reservation_parse_json(const char *body, size_t len, struct future_reservation *out,
				  struct vx_err *err) VX_WUR;
/* One futureReservations.list page: appends items to *l; *next_page_token owned, NULL on the last. */
int future_reservation_list_parse_json(const char *body, size_t len, struct future_reservation_list *l,
				       char **next_page_token, struct vx_err *err) VX_WUR;
/*
 * One aggregatedList page: items is a map "zones/Z" -> {"futureReservations": [...]}
 * or {"warning": ...}; appends every future reservation, zone taken from the
 * key when the item has none. A page naming unreachable zones
 * ("unreachables") is VX_ERETRY: the list is not whole, and a missing
 * booking must never be read as a vanished one.
 */
int future_reservation_aggregated_parse_json(const char *body, size_t len,
					     struct future_reservation_list *l, char **next_page_token,
					     struct vx_err *err) VX_WUR;

/*
 * The insert body for fr: name, description, reservationMode,
 * planningStatus, deploymentType, schedulingType, namePrefix,
 * reservationName, specificReservationRequired and
 * autoDeleteAutoCreatedReservations (when not FUTURE_UNSET),
 * autoCreatedReservationsDeleteTime or autoCreatedReservationsDuration,
 * timeWindow {startTime, endTime or duration {seconds}}, and
 * specificSkuProperties {totalCount, instanceProperties {machineType,
 * guestAccelerators}} or {totalCount, sourceInstanceTemplate}. int64
 * values go out as JSON strings, as Google's clients send them. Output-only
 * fields are never written. VX_EINVAL (with err) when fr sets both members
 * of a pair Google's reference declares exclusive (endTime and duration;
 * the two auto-delete times) or neither end; *out owned by the caller.
 */
int future_reservation_to_json(const struct future_reservation *fr, char **out,
			       struct vx_err *err) VX_WUR;

/*
 * 1 when every comma-separated path of mask is one Google's tools send in
 * updateMask (gcloud's dotted paths and Terraform's top-level names, listed
 * in future.c), else 0 (NULL or empty: 0). Which paths the server accepts
 * in which state is not stated; this only keeps a typo or an output-only
 * field from being sent.
 */
int future_update_mask_ok(const char *mask);

/*
 * The mutations. request_id NULL = a fresh UUID v4. Each sends once (the
 * HTTP layer retries with the same URL), then follows the zone operation
 * to DONE for up to wait_ms (0 = 10 minutes) and fills *op (initialised
 * here) with its last state. Returns 0 when the operation finished without
 * error; the operation's error mapped as compute_operation_wait does
 * (VX_ENOTFOUND, VX_ECONFLICT, VX_EINVAL, VX_EAUTH, VX_EAPI); VX_EINVAL
 * for bad arguments (nothing sent); VX_EUNCERTAIN when it may have been
 * acted on but vx does not know (the answer lost after the retries, an
 * operation not finished in time or not followable): send it again with
 * the same request_id, or read the resource. Fenced before each attempt
 * (c->fence), certain when the fence refuses.
 */
/* POST projects/P/zones/Z/futureReservations?requestId=ID, body fr_json (a FutureReservation). */
int future_reservation_insert(struct compute_client *c, const char *project, const char *zone,
			      const char *fr_json, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err) VX_WUR;
/* PATCH .../futureReservations/NAME?requestId=ID&updateMask=MASK; the mask must pass future_update_mask_ok. */
int future_reservation_update(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *update_mask, const char *fr_json,
			      const char *request_id, int64_t wait_ms, struct compute_operation *op,
			      struct vx_err *err) VX_WUR;
/* POST .../futureReservations/NAME/cancel?requestId=ID, no body. */
int future_reservation_cancel(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err) VX_WUR;
/* DELETE .../futureReservations/NAME?requestId=ID. */
int future_reservation_delete(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err) VX_WUR;

/* GET .../futureReservations/NAME. VX_ENOTFOUND when absent. */
int future_reservation_get(struct compute_client *c, const char *project, const char *zone,
			   const char *name, struct future_reservation *out, struct vx_err *err) VX_WUR;
/* Every page of futureReservations.list in one zone (filter NULL = all), appended to *out
 * (released on failure). */
int future_reservation_list(struct compute_client *c, const char *project, const char *zone,
			    const char *filter, struct future_reservation_list *out,
			    struct vx_err *err) VX_WUR;
/* Every page of aggregatedList across zones (filter NULL = all), appended to *out
 * (released on failure). returnPartialSuccess is not asked for: a zone that
 * cannot be read fails the list. */
int future_reservation_aggregated_list(struct compute_client *c, const char *project,
				       const char *filter, struct future_reservation_list *out,
				       struct vx_err *err) VX_WUR;

#endif
