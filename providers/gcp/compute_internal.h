#ifndef VX_GCP_COMPUTE_INTERNAL_H
#define VX_GCP_COMPUTE_INTERNAL_H

/*
 * What the Compute collections of this folder (reservations in compute.c,
 * futureReservations in future.c) do the same way: one send, a get of one
 * resource, every page of a list, a mutation's Operation, and the zonal
 * URL a mutation goes to. Not a public surface: compute.h and future.h are.
 * Every "what" names the call for errors ("compute: reading ...").
 */

#include <stddef.h>

#include <cjson/cJSON.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/http.h"
#include "util/err.h"

/*
 * Sends one request to Compute for rpc ("GetReservation"). timeout_ms 0: the
 * default. fenced: a mutation, checked against c->fence before each attempt
 * (reads and waits are not). 0 with resp filled on 2xx (gcall_send).
 */
int compute_send(struct compute_client *c, const char *method, const char *url, const char *body,
		 enum gcp_retry retry, const char *rpc, long timeout_ms, int fenced, const char *what,
		 struct gcp_response *resp, struct vx_err *err) VX_WUR;

/* *out = the last path segment of the string o[key] (zone URLs), or the whole string; NULL when absent. */
int compute_dup_last(char **out, const cJSON *o, const char *key) VX_WUR;

/* *out (*n of them) = the objects of the guestAccelerators array accs; others skipped. */
int compute_accelerators_from(const cJSON *accs, struct compute_accelerator **out, size_t *n) VX_WUR;

/* props.guestAccelerators = the n of accs (left out when n is 0). 0 or VX_ENOMEM. */
int compute_accelerators_to_json(cJSON *props, const struct compute_accelerator *accs, size_t n) VX_WUR;

/*
 * rid = request_id when it passes ok (else VX_EINVAL "<what>: request id is
 * not a UUID"), or a fresh one when request_id is NULL.
 */
int compute_take_request_id(const char *request_id, int (*ok)(const char *request_id), char rid[37],
			    const char *what, struct vx_err *err) VX_WUR;

/* Parses one answer into out (a resource); err set on failure. */
typedef int (*compute_parse_fn)(const char *body, size_t len, void *out, struct vx_err *err);

/* Parses one list page, appending to out and setting *next (caller frees). */
typedef int (*compute_page_fn)(const char *body, size_t len, void *out, char **next, struct vx_err *err);

/* GET base_url + path for rpc, parsed by parse into out (errors wrapped with what). */
int compute_get(struct compute_client *c, const char *path, const char *rpc, const char *what,
		compute_parse_fn parse, void *out, struct vx_err *err) VX_WUR;

/*
 * Every page of the list at path (filter: NULL for none), each GET for rpc
 * and appended to out by parse. On failure release(out) runs.
 */
int compute_list_all(struct compute_client *c, const char *path, const char *filter, const char *rpc,
		     const char *what, compute_page_fn parse, void *out, void (*release)(void *),
		     struct vx_err *err) VX_WUR;

/*
 * The URL of projects/P/zones/Z/collection[/name suffix] with requestId=rid
 * and updateMask (left out when NULL). NULL on OOM.
 */
char *compute_zonal_url(const struct compute_client *c, const char *project, const char *zone,
			const char *collection, const char *name, const char *suffix, const char *rid,
			const char *update_mask);

/*
 * Sends a fenced mutation with GCP_RETRY_REQUEST_ID and parses its Operation
 * into op. *answered is 1 once a 2xx answer came (a failure after that is
 * the answer's parse), else 0.
 */
int compute_mutate(struct compute_client *c, const char *method, const char *url, const char *body,
		   const char *rpc, const char *what, struct compute_operation *op, int *answered,
		   struct vx_err *err) VX_WUR;

/* One Compute collection as its lists need it. */
struct compute_collection {
	const char *collection;            /* "reservations": its path segment */
	const char *plural;                /* "reservations": for errors */
	int (*zone_ok)(const char *zone);  /* what a zone must be to go into a path */
	const char *list_rpc;
	compute_page_fn page;              /* one page of a zone's list */
	const char *aggregated_rpc;
	compute_page_fn aggregated_page;   /* one page of the aggregated list */
	void (*release)(void *list);
};

/* Every page of k's list in zone ("compute: listing <plural> in <zone>"). */
int compute_list_zone(struct compute_client *c, const struct compute_collection *k, const char *project,
		      const char *zone, const char *filter, void *out, struct vx_err *err) VX_WUR;

/* Every page of k's aggregated list ("compute: listing <plural> in all zones"). */
int compute_list_aggregated(struct compute_client *c, const struct compute_collection *k, const char *project,
			    const char *filter, void *out, struct vx_err *err) VX_WUR;

#endif
