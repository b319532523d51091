#ifndef VX_GCP_COMPUTE_H
#define VX_GCP_COMPUTE_H

/*
 * Compute Engine v1 reservations: insert, get, list, aggregatedList, resize,
 * update, delete, and zoneOperations.wait in a loop.
 *
 * Every mutation carries a requestId (a random UUID v4, or the caller's) in
 * its query string and is sent with GCP_RETRY_REQUEST_ID, so a retry after a
 * lost reply reuses the same id and Compute runs it once. Mutations return
 * compute's Operation; compute_operation_wait() follows it to DONE and turns
 * its error into err.
 *
 * Responses become our structs at this boundary; the parsers are public for
 * fuzzing and never crash on hostile input (wrong types are ignored as
 * absent; a body that is not a JSON object is VX_EINVAL).
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct gcp_http;
struct gcp_fence;
struct vx_ctx;

/* base_url: "https://compute.googleapis.com/compute/v1/". All members borrowed. */
struct compute_client {
	struct gcp_http *http;
	const struct vx_ctx *ctx;
	const char *base_url;
	/* Checked before each attempt of a mutation (insert, resize, update,
	 * delete) is sent, never before a read or an operation wait (gcp_fence
	 * in http.h); NULL: none. */
	const struct gcp_fence *fence;
};

struct compute_accelerator {
	char *type;      /* as sent/received: a name ("nvidia-h100-80gb") or a URL */
	int64_t count;
};

/* A reservation. Owned strings, NULL when absent. */
struct compute_reservation {
	char *name;
	char *zone;                 /* the zone's name (last segment of the URL Compute returns) */
	char *status;               /* CREATING, READY, DELETING, UPDATING, INVALID */
	char *description;
	char *self_link;
	int64_t count;              /* specificReservation.count */
	int64_t in_use_count;       /* specificReservation.inUseCount */
	char *machine_type;         /* specificReservation.instanceProperties.machineType */
	struct compute_accelerator *accelerators;
	size_t n_accelerators;
	int specific_reservation_required;
	char *service_share_type;   /* reservationSharingPolicy.serviceShareType (ALLOW_ALL lets Vertex AI use it) */
	int64_t create_ms;          /* creationTimestamp, ms since the epoch; 0 when absent or unparsable */
};

#define COMPUTE_RESERVATION_INIT { 0 }

void compute_reservation_release(struct compute_reservation *r);

struct compute_reservation_list {
	struct compute_reservation *items;
	size_t n;
	size_t alloc;
};

#define COMPUTE_RESERVATION_LIST_INIT { NULL, 0, 0 }

void compute_reservation_list_release(struct compute_reservation_list *l);

struct compute_operation_error {
	char *code;     /* errors[].code, e.g. "ZONE_RESOURCE_POOL_EXHAUSTED" */
	char *reason;   /* errors[].errorDetails[].errorInfo.reason, when present */
	char *message;
};

/* compute's own Operation. */
struct compute_operation {
	char *name;
	char *zone;                 /* zone name (last segment of the zone URL) */
	char *status;               /* PENDING, RUNNING, DONE */
	char *operation_type;
	char *target_link;
	char *client_operation_id;  /* the requestId sent */
	long http_error_status_code;/* 0 when absent */
	char *http_error_message;
	struct compute_operation_error *errors;
	size_t n_errors;
};

#define COMPUTE_OPERATION_INIT { 0 }

void compute_operation_release(struct compute_operation *op);
/* status is DONE. */
int compute_operation_done(const struct compute_operation *op);

/* Parsers (body need not be NUL-terminated; *out is overwritten and, on error, left released). */
int compute_reservation_parse_json(const char *body, size_t len, struct compute_reservation *out,
				   struct vx_err *err) VX_WUR;
/* reservations.list page: appends items to *l; *next_page_token owned, NULL on the last page. */
int compute_reservation_list_parse_json(const char *body, size_t len, struct compute_reservation_list *l,
					char **next_page_token, struct vx_err *err) VX_WUR;
/* aggregatedList page: items is a map "zones/Z" -> {"reservations": [...]} or {"warning": ...};
 * appends every reservation, with zone taken from the key when the item has none. */
int compute_reservation_aggregated_parse_json(const char *body, size_t len,
					      struct compute_reservation_list *l, char **next_page_token,
					      struct vx_err *err) VX_WUR;
int compute_operation_parse_json(const char *body, size_t len, struct compute_operation *out,
				 struct vx_err *err) VX_WUR;

/*
 * The insert body for r: name, description, specificReservation {count
 * (int64 as a string), instanceProperties {machineType, guestAccelerators}},
 * specificReservationRequired, reservationSharingPolicy when
 * service_share_type is set. *out is owned by the caller.
 */
int compute_reservation_to_json(const struct compute_reservation *r, char **out) VX_WUR;

/*
 * Compute's name rules, from its discovery document's path parameters:
 * a reservation name is RFC 1035, [a-z]([-a-z0-9]{0,61}[a-z0-9])?; an
 * operation is named that way or by its numeric id, [1-9][0-9]{0,19}. A
 * name read from Compute goes into a URL (or into an action) only when it
 * passes. 1 when s matches, else 0 (NULL: 0).
 */
int compute_reservation_name_ok(const char *s);
int compute_operation_name_ok(const char *s);

/* A random UUID v4 (OpenSSL RAND_bytes), 36 characters + NUL. VX_EIO when no randomness. */
int compute_request_id(char out[37]) VX_WUR;

/*
 * The mutations. request_id NULL = a fresh UUID. Each fills *op (initialised)
 * with the Operation as first returned (usually PENDING or RUNNING): follow
 * it with compute_operation_wait().
 */
/* POST projects/P/zones/Z/reservations?requestId=ID, body reservation_json (a Reservation). */
int compute_reservation_insert(struct compute_client *c, const char *project, const char *zone,
			       const char *reservation_json, const char *request_id,
			       struct compute_operation *op, struct vx_err *err) VX_WUR;
/* POST .../reservations/NAME/resize?requestId=ID, body {"specificSkuCount":"N"}. */
int compute_reservation_resize(struct compute_client *c, const char *project, const char *zone,
			       const char *name, int64_t count, const char *request_id,
			       struct compute_operation *op, struct vx_err *err) VX_WUR;
/* PATCH .../reservations/NAME?requestId=ID&updateMask=MASK, body reservation_json. */
int compute_reservation_update(struct compute_client *c, const char *project, const char *zone,
			       const char *name, const char *update_mask, const char *reservation_json,
			       const char *request_id, struct compute_operation *op,
			       struct vx_err *err) VX_WUR;
/* DELETE .../reservations/NAME?requestId=ID. */
int compute_reservation_delete(struct compute_client *c, const char *project, const char *zone,
			       const char *name, const char *request_id, struct compute_operation *op,
			       struct vx_err *err) VX_WUR;

/* GET .../reservations/NAME. VX_ENOTFOUND when absent. */
int compute_reservation_get(struct compute_client *c, const char *project, const char *zone,
			    const char *name, struct compute_reservation *out, struct vx_err *err) VX_WUR;
/* Every page of reservations.list in one zone (filter NULL = all), appended to *out. */
int compute_reservation_list(struct compute_client *c, const char *project, const char *zone,
			     const char *filter, struct compute_reservation_list *out,
			     struct vx_err *err) VX_WUR;
/* Every page of aggregatedList across zones (filter NULL = all), appended to *out. */
int compute_reservation_aggregated_list(struct compute_client *c, const char *project,
					const char *filter, struct compute_reservation_list *out,
					struct vx_err *err) VX_WUR;

/*
 * Loops POST projects/P/zones/Z/operations/OP/wait (which returns after about
 * two minutes even when not done) until op->status is DONE, at most
 * timeout_ms (0 = 30 minutes); updates *op each time. Then a failed
 * operation becomes err: "<what>: <code>: <message>" from error.errors[], or
 * the httpErrorStatusCode/httpErrorMessage, stripped of control characters
 * (vx_text_clean); the code is VX_ENOTFOUND (404, RESOURCE_NOT_FOUND),
 * VX_ECONFLICT (409, 412, ALREADY_EXISTS, RESOURCE_ALREADY_EXISTS),
 * VX_EINVAL (400 and INVALID_* codes: the request was refused as it was),
 * VX_EAPI for quota and capacity (QUOTA_EXCEEDED, ZONE_RESOURCE_POOL_EXHAUSTED*,
 * whose codes the message keeps), VX_EAUTH (other 401, 403), VX_EAPI
 * otherwise. An operation name that is not compute_operation_name_ok is
 * never put in a URL (VX_EAPI). what is the
 * context ("compute: resizing reservation \"r1\" in us-central1-a"); NULL
 * gives a default. VX_ERETRY when time runs out, VX_ECANCELED on interrupt.
 */
int compute_operation_wait(struct compute_client *c, const char *project,
			   struct compute_operation *op, int64_t timeout_ms, const char *what,
			   struct vx_err *err) VX_WUR;

/*
 * A mutation's operation, as its first answer gave it, followed to its end
 * in zone (the zone the mutation named): compute_operation_wait for up to
 * timeout_ms (0 = 30 minutes). The operation's name and zone come from the
 * server and go into the wait URL, so they must be Compute's shapes and the
 * zone the one asked for; a missing zone is taken to be zone. Only a
 * finished operation gives a certain answer (0 or its error, as
 * compute_operation_wait maps it); anything else (not done in time,
 * interrupted, the wait call failing, a name or zone vx will not follow)
 * leaves the mutation's outcome unknown: VX_EUNCERTAIN, "<what>: ...; the
 * outcome of operation OP is unknown (<hint>)", hint saying what to do
 * ("list the future reservations before trying again").
 */
int compute_operation_follow(struct compute_client *c, const char *project, const char *zone,
			     struct compute_operation *op, int64_t timeout_ms, const char *what,
			     const char *hint, struct vx_err *err) VX_WUR;

#endif
