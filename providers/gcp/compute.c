#include "providers/gcp/compute.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/compute_internal.h"
#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/vertex.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"

#include "util/rand.h"
#include "util/banned.h"

#define WAIT_TIMEOUT_MS (30 * 60 * 1000)
/* zoneOperations.wait holds the request up to about 2 minutes. */
#define WAIT_CALL_TIMEOUT_MS 150000

void compute_reservation_release(struct compute_reservation *r)
{
	size_t i;

	if (!r)
		return;
	free(r->name);
	free(r->zone);
	free(r->status);
	free(r->description);
	free(r->self_link);
	free(r->machine_type);
	for (i = 0; i < r->n_accelerators; i++)
		free(r->accelerators[i].type);
	free(r->accelerators);
	free(r->service_share_type);
	memset(r, 0, sizeof(*r));
}

void compute_reservation_list_release(struct compute_reservation_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		compute_reservation_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void compute_operation_release(struct compute_operation *op)
{
	size_t i;

	if (!op)
		return;
	free(op->name);
	free(op->zone);
	free(op->status);
	free(op->operation_type);
	free(op->target_link);
	free(op->client_operation_id);
	free(op->http_error_message);
	for (i = 0; i < op->n_errors; i++) {
		free(op->errors[i].code);
		free(op->errors[i].reason);
		free(op->errors[i].message);
	}
	free(op->errors);
	memset(op, 0, sizeof(*op));
}

int compute_operation_done(const struct compute_operation *op)
{
	return op && op->status && !strcmp(op->status, "DONE");
}

int compute_dup_last(char **out, const cJSON *o, const char *key)
{
	const char *s = gjson_str(o, key), *slash;

	*out = NULL;
	if (!s)
		return 0;
	slash = strrchr(s, '/');
	*out = strdup(slash ? slash + 1 : s);
	return *out ? 0 : VX_ENOMEM;
}

/* ---- parsers ---- */

static int reservation_from(const cJSON *o, void *dst)
{
	struct compute_reservation *r = dst;
	const cJSON *spec, *props, *pol;
	int64_t v;
	int rc;

	if ((rc = gjson_dup(&r->name, o, "name")) < 0 || (rc = compute_dup_last(&r->zone, o, "zone")) < 0 ||
	    (rc = gjson_dup(&r->status, o, "status")) < 0 ||
	    (rc = gjson_dup(&r->description, o, "description")) < 0 ||
	    (rc = gjson_dup(&r->self_link, o, "selfLink")) < 0)
		return rc;
	if (vertex_time_parse(gjson_str(o, "creationTimestamp"), &v) == 0)
		r->create_ms = v;
	r->specific_reservation_required =
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "specificReservationRequired"));
	pol = cJSON_GetObjectItemCaseSensitive(o, "reservationSharingPolicy");
	if ((rc = gjson_dup(&r->service_share_type, pol, "serviceShareType")) < 0)
		return rc;
	spec = cJSON_GetObjectItemCaseSensitive(o, "specificReservation");
	if (!cJSON_IsObject(spec))
		return 0;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(spec, "count"), 0, INT64_MAX, &v) == 0)
		r->count = v;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(spec, "inUseCount"), 0, INT64_MAX, &v) == 0)
		r->in_use_count = v;
	props = cJSON_GetObjectItemCaseSensitive(spec, "instanceProperties");
	if (!cJSON_IsObject(props))
		return 0;
	if ((rc = gjson_dup(&r->machine_type, props, "machineType")) < 0)
		return rc;
	return compute_accelerators_from(cJSON_GetObjectItemCaseSensitive(props, "guestAccelerators"),
					 &r->accelerators, &r->n_accelerators);
}

int compute_accelerators_from(const cJSON *accs, struct compute_accelerator **out, size_t *n_out)
{
	const cJSON *it;
	int64_t v;
	size_t n = 0;
	int rc;

	if (!cJSON_IsArray(accs))
		return 0;
	cJSON_ArrayForEach(it, accs)
		if (cJSON_IsObject(it))
			n++;
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, accs) {
		struct compute_accelerator *a;

		if (!cJSON_IsObject(it))
			continue;
		a = &(*out)[(*n_out)++];
		if ((rc = gjson_dup(&a->type, it, "acceleratorType")) < 0)
			return rc;
		if (gjson_int(cJSON_GetObjectItemCaseSensitive(it, "acceleratorCount"), 0, INT32_MAX, &v) == 0)
			a->count = v;
	}
	return 0;
}

static void reservation_rel(void *r)
{
	compute_reservation_release(r);
}

int compute_reservation_parse_json(const char *body, size_t len, struct compute_reservation *out,
				   struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), reservation_from, reservation_rel,
			       "compute: reading reservation", err);
}

static int reservation_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return compute_reservation_parse_json(body, len, out, err);
}

static int list_reserve(struct compute_reservation_list *l, size_t more)
{
	if (more > SIZE_MAX - l->n)
		return VX_ENOMEM;
	return VX_ALLOC_GROW(l->items, l->n + more, l->alloc);
}

/* Appends the objects of array arr; zone_key ("zones/Z") fills a missing zone. */
static int append_array(struct compute_reservation_list *l, const cJSON *arr, const char *zone_key)
{
	const cJSON *it;
	size_t n = 0;
	int rc;

	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsObject(it))
			n++;
	if ((rc = list_reserve(l, n)) < 0)
		return rc;
	cJSON_ArrayForEach(it, arr) {
		struct compute_reservation *r;

		if (!cJSON_IsObject(it))
			continue;
		r = &l->items[l->n++];
		memset(r, 0, sizeof(*r));
		if ((rc = reservation_from(it, r)) < 0)
			return rc;
		if (!r->zone && zone_key && !strncmp(zone_key, "zones/", 6) &&
		    !(r->zone = strdup(zone_key + 6)))
			return VX_ENOMEM;
	}
	return 0;
}

static int list_parse(const char *body, size_t len, struct compute_reservation_list *l,
		      char **next_page_token, int aggregated, struct vx_err *err)
{
	const char *what = aggregated ? "compute: reading aggregated reservation list"
				      : "compute: reading reservation list";
	const cJSON *items, *scope;
	cJSON *root;
	size_t start = l->n, i;
	int rc = 0;

	*next_page_token = NULL;
	if (!(root = gjson_parse_object(body, len, what, err)))
		return VX_EINVAL;
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (items && !cJSON_IsNull(items) && (aggregated ? !cJSON_IsObject(items) : !cJSON_IsArray(items))) {
		rc = vx_err_set(err, VX_EINVAL, "%s: items is not %s", what, aggregated ? "an object" : "an array");
		goto done;
	}
	if (!aggregated) {
		rc = append_array(l, items, NULL);
	} else {
		cJSON_ArrayForEach(scope, items) {
			const cJSON *arr = cJSON_GetObjectItemCaseSensitive(scope, "reservations");

			if (!cJSON_IsArray(arr))
				continue; /* a warning such as NO_RESULTS_ON_PAGE */
			if ((rc = append_array(l, arr, scope->string)) < 0)
				break;
		}
	}
	if (rc == 0)
		rc = gjson_next_page_token(next_page_token, root);
	if (rc < 0)
		vx_err_set(err, rc, "%s: out of memory", what);
done:
	if (rc < 0) {
		for (i = start; i < l->n; i++)
			compute_reservation_release(&l->items[i]);
		l->n = start;
		free(*next_page_token);
		*next_page_token = NULL;
	}
	cJSON_Delete(root);
	return rc;
}

int compute_reservation_list_parse_json(const char *body, size_t len, struct compute_reservation_list *l,
					char **next_page_token, struct vx_err *err)
{
	return list_parse(body, len, l, next_page_token, 0, err);
}

int compute_reservation_aggregated_parse_json(const char *body, size_t len,
					      struct compute_reservation_list *l, char **next_page_token,
					      struct vx_err *err)
{
	return list_parse(body, len, l, next_page_token, 1, err);
}

static int op_from(const cJSON *o, void *dst)
{
	struct compute_operation *op = dst;
	const cJSON *errs, *it;
	int64_t v;
	size_t n = 0;
	int rc;

	if ((rc = gjson_dup(&op->name, o, "name")) < 0 || (rc = compute_dup_last(&op->zone, o, "zone")) < 0 ||
	    (rc = gjson_dup(&op->status, o, "status")) < 0 ||
	    (rc = gjson_dup(&op->operation_type, o, "operationType")) < 0 ||
	    (rc = gjson_dup(&op->target_link, o, "targetLink")) < 0 ||
	    (rc = gjson_dup(&op->client_operation_id, o, "clientOperationId")) < 0 ||
	    (rc = gjson_dup(&op->http_error_message, o, "httpErrorMessage")) < 0)
		return rc;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(o, "httpErrorStatusCode"), 0, 999, &v) == 0)
		op->http_error_status_code = (long)v;
	errs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "errors");
	if (!cJSON_IsArray(errs))
		return 0;
	cJSON_ArrayForEach(it, errs)
		if (cJSON_IsObject(it))
			n++;
	if (!n)
		return 0;
	if (!(op->errors = calloc(n, sizeof(*op->errors))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, errs) {
		struct compute_operation_error *e;
		const cJSON *d;

		if (!cJSON_IsObject(it))
			continue;
		e = &op->errors[op->n_errors++];
		if ((rc = gjson_dup(&e->code, it, "code")) < 0 || (rc = gjson_dup(&e->message, it, "message")) < 0)
			return rc;
		cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(it, "errorDetails")) {
			const cJSON *info = cJSON_GetObjectItemCaseSensitive(d, "errorInfo");

			if (gjson_str(info, "reason")) {
				if ((rc = gjson_dup(&e->reason, info, "reason")) < 0)
					return rc;
				break;
			}
		}
	}
	return 0;
}

static void op_rel(void *op)
{
	compute_operation_release(op);
}

int compute_operation_parse_json(const char *body, size_t len, struct compute_operation *out,
				 struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), op_from, op_rel,
			       "compute: reading operation", err);
}

int compute_reservation_to_json(const struct compute_reservation *r, char **out)
{
	cJSON *root = NULL, *spec, *props, *pol;
	char num[32];
	int rc = VX_ENOMEM;

	*out = NULL;
	if (!(root = cJSON_CreateObject()))
		goto done;
	if (r->name && !cJSON_AddStringToObject(root, "name", r->name))
		goto done;
	if (r->description && !cJSON_AddStringToObject(root, "description", r->description))
		goto done;
	if (!(spec = cJSON_AddObjectToObject(root, "specificReservation")))
		goto done;
	snprintf(num, sizeof(num), "%" PRId64, r->count);
	if (!cJSON_AddStringToObject(spec, "count", num) ||
	    !(props = cJSON_AddObjectToObject(spec, "instanceProperties")))
		goto done;
	if (r->machine_type && !cJSON_AddStringToObject(props, "machineType", r->machine_type))
		goto done;
	if (compute_accelerators_to_json(props, r->accelerators, r->n_accelerators) < 0)
		goto done;
	if (!cJSON_AddBoolToObject(root, "specificReservationRequired", r->specific_reservation_required))
		goto done;
	if (r->service_share_type) {
		if (!(pol = cJSON_AddObjectToObject(root, "reservationSharingPolicy")) ||
		    !cJSON_AddStringToObject(pol, "serviceShareType", r->service_share_type))
			goto done;
	}
	if ((*out = cJSON_PrintUnformatted(root)))
		rc = 0;
done:
	cJSON_Delete(root);
	return rc;
}

int compute_accelerators_to_json(cJSON *props, const struct compute_accelerator *accs, size_t n)
{
	cJSON *arr, *a;
	size_t i;

	if (!n)
		return 0;
	if (!(arr = cJSON_AddArrayToObject(props, "guestAccelerators")))
		return VX_ENOMEM;
	for (i = 0; i < n; i++) {
		if (!(a = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, a)) {
			cJSON_Delete(a);
			return VX_ENOMEM;
		}
		if (!cJSON_AddStringToObject(a, "acceleratorType", accs[i].type ? accs[i].type : "") ||
		    !cJSON_AddNumberToObject(a, "acceleratorCount", (double)accs[i].count))
			return VX_ENOMEM;
	}
	return 0;
}

/* [a-z]([-a-z0-9]{0,61}[a-z0-9])?: gcall_label_ok. */
int compute_reservation_name_ok(const char *s)
{
	return gcall_label_ok(s);
}

/* A name as above, or a numeric id [1-9][0-9]{0,19}. */
int compute_operation_name_ok(const char *s)
{
	size_t n, i;

	if (compute_reservation_name_ok(s))
		return 1;
	if (!s || !(n = strlen(s)) || n > 20 || s[0] < '1' || s[0] > '9')
		return 0;
	for (i = 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int compute_request_id(char out[37])
{
	unsigned char b[16];

	/* Never from a test's seed: two creates must not share a request id. */
	if (vx_rand_bytes(NULL, NULL, b, sizeof(b), NULL) < 0)
		return VX_EIO;
	vx_uuid_format(out, b);
	return 0;
}

/* ---- calls ---- */

int compute_send(struct compute_client *c, const char *method, const char *url, const char *body,
		 enum gcp_retry retry, const char *rpc, long timeout_ms, int fenced, const char *what,
		 struct gcp_response *resp, struct vx_err *err)
{
	struct gcp_request req;

	gcall_request_init(&req, "compute", method, url, body, retry, rpc);
	req.timeout_ms = timeout_ms;
	if (fenced)
		req.fence = c->fence;
	return gcall_send(c->http, &req, "compute", what, resp, err);
}

int compute_mutate(struct compute_client *c, const char *method, const char *url, const char *body,
		   const char *rpc, const char *what, struct compute_operation *op, int *answered,
		   struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	*answered = 0;
	rc = compute_send(c, method, url, body, GCP_RETRY_REQUEST_ID, rpc, 0, 1, what, &resp, err);
	if (rc == 0) {
		*answered = 1;
		if ((rc = compute_operation_parse_json(resp.body, resp.body_len, op, err)) < 0)
			gcall_wrap(err, "compute", what);
	}
	gcp_response_release(&resp);
	return rc;
}

/* A mutation of a reservation: sends it and parses the Operation. */
static int mutate(struct compute_client *c, const char *method, const char *url, const char *body,
		  const char *rpc, const char *what, struct compute_operation *op, struct vx_err *err)
{
	int answered;

	return compute_mutate(c, method, url, body, rpc, what, op, &answered, err);
}

char *compute_zonal_url(const struct compute_client *c, const char *project, const char *zone,
			const char *collection, const char *name, const char *suffix, const char *rid,
			const char *update_mask)
{
	char *path, *url;

	path = name ? vx_asprintf("projects/%s/zones/%s/%s/%s%s", project, zone, collection, name, suffix)
		    : vx_asprintf("projects/%s/zones/%s/%s", project, zone, collection);
	url = path ? gcall_url(c->base_url, path, "requestId", rid, "updateMask", update_mask,
			       (const char *)NULL)
		   : NULL;
	free(path);
	return url;
}

int compute_take_request_id(const char *request_id, int (*ok)(const char *request_id), char rid[37],
			    const char *what, struct vx_err *err)
{
	if (request_id) {
		if (!ok(request_id))
			return vx_err_set(err, VX_EINVAL, "%s: request id is not a UUID", what);
		memcpy(rid, request_id, 37);
		return 0;
	}
	if (compute_request_id(rid) < 0)
		return vx_err_set(err, VX_EIO, "%s: no random bytes for a request id", what);
	return 0;
}

/* A caller's request id as reservations take it: 36 characters that can go into a URL. */
static int request_id_ok(const char *request_id)
{
	return strlen(request_id) == 36 && gcall_segment_ok(request_id, ":");
}

/* Common argument checks and the request id. */
static int prepare(const char *project, const char *zone, const char *name, const char *request_id,
		   char rid[37], const char *what, struct vx_err *err)
{
	if (!gcall_segment_ok(project, ":") || !gcall_segment_ok(zone, ":") || (name && !gcall_segment_ok(name, ":")))
		return vx_err_set(err, VX_EINVAL, "%s: invalid project, zone or reservation name", what);
	return compute_take_request_id(request_id, request_id_ok, rid, what, err);
}

int compute_reservation_insert(struct compute_client *c, const char *project, const char *zone,
			       const char *reservation_json, const char *request_id,
			       struct compute_operation *op, struct vx_err *err)
{
	cJSON *parsed = NULL;
	char *what = NULL, *url = NULL, rid[37];
	int rc;

	memset(op, 0, sizeof(*op));
	parsed = reservation_json ? cJSON_Parse(reservation_json) : NULL;
	what = vx_asprintf("compute: creating reservation \"%s\" in %s",
			   gjson_str(parsed, "name") ? gjson_str(parsed, "name") : "", zone ? zone : "");
	if (!what) {
		rc = vx_err_set(err, VX_ENOMEM, "compute: out of memory");
		goto done;
	}
	if (!cJSON_IsObject(parsed)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: the reservation is not a JSON object", what);
		goto done;
	}
	if ((rc = prepare(project, zone, NULL, request_id, rid, what, err)) < 0)
		goto done;
	if (!(url = compute_zonal_url(c, project, zone, "reservations", NULL, NULL, rid, NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = mutate(c, "POST", url, reservation_json, "InsertReservation", what, op, err);
done:
	cJSON_Delete(parsed);
	free(url);
	free(what);
	return rc;
}

/* Builds the URL of reservations/NAME[suffix] with its query and runs the mutation. */
static int mutate_named(struct compute_client *c, const char *method, const char *project,
			const char *zone, const char *name, const char *suffix, const char *update_mask,
			const char *body, const char *request_id, const char *rpc, const char *what,
			struct compute_operation *op, struct vx_err *err)
{
	char *url = NULL, rid[37];
	int rc;

	memset(op, 0, sizeof(*op));
	if ((rc = prepare(project, zone, name, request_id, rid, what, err)) < 0)
		return rc;
	if (!(url = compute_zonal_url(c, project, zone, "reservations", name, suffix, rid, update_mask)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = mutate(c, method, url, body, rpc, what, op, err);
	free(url);
	return rc;
}

int compute_reservation_resize(struct compute_client *c, const char *project, const char *zone,
			       const char *name, int64_t count, const char *request_id,
			       struct compute_operation *op, struct vx_err *err)
{
	char *what, body[64];
	int rc;

	memset(op, 0, sizeof(*op));
	if (!(what = vx_asprintf("compute: resizing reservation \"%s\" in %s to %" PRId64,
				 name ? name : "", zone ? zone : "", count)))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (count < 0) {
		rc = vx_err_set(err, VX_EINVAL, "%s: negative count", what);
		goto done;
	}
	snprintf(body, sizeof(body), "{\"specificSkuCount\":\"%" PRId64 "\"}", count);
	rc = mutate_named(c, "POST", project, zone, name, "/resize", NULL, body, request_id,
			  "ResizeReservation", what, op, err);
done:
	free(what);
	return rc;
}

int compute_reservation_update(struct compute_client *c, const char *project, const char *zone,
			       const char *name, const char *update_mask, const char *reservation_json,
			       const char *request_id, struct compute_operation *op,
			       struct vx_err *err)
{
	cJSON *parsed = NULL;
	char *what;
	int rc;

	memset(op, 0, sizeof(*op));
	if (!(what = vx_asprintf("compute: updating reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	parsed = reservation_json ? cJSON_Parse(reservation_json) : NULL;
	if (!cJSON_IsObject(parsed)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: the reservation is not a JSON object", what);
		goto done;
	}
	rc = mutate_named(c, "PATCH", project, zone, name, "", update_mask, reservation_json, request_id,
			  "UpdateReservation", what, op, err);
done:
	cJSON_Delete(parsed);
	free(what);
	return rc;
}

int compute_reservation_delete(struct compute_client *c, const char *project, const char *zone,
			       const char *name, const char *request_id, struct compute_operation *op,
			       struct vx_err *err)
{
	char *what;
	int rc;

	memset(op, 0, sizeof(*op));
	if (!(what = vx_asprintf("compute: deleting reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	rc = mutate_named(c, "DELETE", project, zone, name, "", NULL, NULL, request_id,
			  "DeleteReservation", what, op, err);
	free(what);
	return rc;
}

int compute_reservation_get(struct compute_client *c, const char *project, const char *zone,
			    const char *name, struct compute_reservation *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("compute: reading reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (!gcall_segment_ok(project, ":") || !gcall_segment_ok(zone, ":") || !gcall_segment_ok(name, ":"))
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, zone or reservation name", what);
	else if (!(path = vx_asprintf("projects/%s/zones/%s/reservations/%s", project, zone, name)))
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	else
		rc = compute_get(c, path, "GetReservation", what, reservation_parse, out, err);
	free(path);
	free(what);
	return rc;
}

int compute_get(struct compute_client *c, const char *path, const char *rpc, const char *what,
		compute_parse_fn parse, void *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *url = gcall_url(c->base_url, path, (const char *)NULL);
	int rc;

	if (!url)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = compute_send(c, "GET", url, NULL, GCP_RETRY_SAFE, rpc, 0, 0, what, &resp, err);
	if (rc == 0 && (rc = parse(resp.body, resp.body_len, out, err)) < 0)
		gcall_wrap(err, "compute", what);
	gcp_response_release(&resp);
	free(url);
	return rc;
}

/* What each page of compute_list_all needs. */
struct list_pages {
	struct compute_client *c;
	const char *path, *filter, *rpc, *what;
	compute_page_fn parse;
	void *out;
};

static int list_page(void *ud, const char *token, char **next, struct vx_err *err)
{
	struct list_pages *p = ud;
	struct gcp_response resp = { 0 };
	char *url = gcall_url(p->c->base_url, p->path, "filter", p->filter, "pageToken", token,
			      (const char *)NULL);
	int rc;

	if (!url)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
	rc = compute_send(p->c, "GET", url, NULL, GCP_RETRY_SAFE, p->rpc, 0, 0, p->what, &resp, err);
	free(url);
	if (rc == 0 && (rc = p->parse(resp.body, resp.body_len, p->out, next, err)) < 0)
		gcall_wrap(err, "compute", p->what);
	gcp_response_release(&resp);
	return rc;
}

int compute_list_all(struct compute_client *c, const char *path, const char *filter, const char *rpc,
		     const char *what, compute_page_fn parse, void *out, void (*release)(void *),
		     struct vx_err *err)
{
	struct list_pages p = { c, path, filter, rpc, what, parse, out };
	int rc = gcall_pages(list_page, &p, what, err);

	if (rc < 0)
		release(out);
	return rc;
}

static int zonal_page(const char *body, size_t len, void *out, char **next, struct vx_err *err)
{
	return list_parse(body, len, out, next, 0, err);
}

static int aggregated_page(const char *body, size_t len, void *out, char **next, struct vx_err *err)
{
	return list_parse(body, len, out, next, 1, err);
}

static void list_rel(void *l)
{
	compute_reservation_list_release(l);
}

int compute_list_zone(struct compute_client *c, const struct compute_collection *k, const char *project,
		      const char *zone, const char *filter, void *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL;
	int rc;

	if (!(what = vx_asprintf("compute: listing %s in %s", k->plural, zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (!gcall_segment_ok(project, ":") || !k->zone_ok(zone)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or zone", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/zones/%s/%s", project, zone, k->collection))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = compute_list_all(c, path, filter, k->list_rpc, what, k->page, out, k->release, err);
done:
	free(path);
	free(what);
	return rc;
}

int compute_list_aggregated(struct compute_client *c, const struct compute_collection *k, const char *project,
			    const char *filter, void *out, struct vx_err *err)
{
	char *path = NULL, *what;
	int rc;

	if (!(what = vx_asprintf("compute: listing %s in all zones", k->plural)))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (!gcall_segment_ok(project, ":"))
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project", what);
	else if (!(path = vx_asprintf("projects/%s/aggregated/%s", project, k->collection)))
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	else
		rc = compute_list_all(c, path, filter, k->aggregated_rpc, what, k->aggregated_page, out, k->release,
				      err);
	free(path);
	free(what);
	return rc;
}

static int zone_segment_ok(const char *zone)
{
	return gcall_segment_ok(zone, ":");
}

static const struct compute_collection reservations = {
	"reservations", "reservations", zone_segment_ok, "ListReservations", zonal_page,
	"AggregatedListReservations", aggregated_page, list_rel,
};

int compute_reservation_list(struct compute_client *c, const char *project, const char *zone,
			     const char *filter, struct compute_reservation_list *out,
			     struct vx_err *err)
{
	return compute_list_zone(c, &reservations, project, zone, filter, out, err);
}

int compute_reservation_aggregated_list(struct compute_client *c, const char *project,
					const char *filter, struct compute_reservation_list *out,
					struct vx_err *err)
{
	return compute_list_aggregated(c, &reservations, project, filter, out, err);
}

/* 1 when code is one of set. */
static int code_in(const char *code, const char *const *set)
{
	for (; code && *set; set++)
		if (!strcmp(code, *set))
			return 1;
	return 0;
}

/* The VX_E* for a finished operation's error (see compute_operation_wait). */
static int op_code(long st, const char *code)
{
	static const char *const missing[] = { "RESOURCE_NOT_FOUND", "NOT_FOUND", NULL };
	static const char *const taken[] = { "ALREADY_EXISTS", "RESOURCE_ALREADY_EXISTS", "CONDITION_NOT_MET",
					     "PRECONDITION_FAILED", NULL };
	static const char *const scarce[] = { "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED",
					      "ZONE_RESOURCE_POOL_EXHAUSTED",
					      "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", NULL };

	if (st == 404 || code_in(code, missing))
		return VX_ENOTFOUND;
	if (st == 409 || st == 412 || code_in(code, taken))
		return VX_ECONFLICT;
	if (code_in(code, scarce))
		return VX_EAPI;
	if (st == 400 || (code && !strncmp(code, "INVALID", 7)))
		return VX_EINVAL;
	if (st == 401 || st == 403)
		return VX_EAUTH;
	return VX_EAPI;
}

static int op_failure(const struct compute_operation *op, const char *what, struct vx_err *err)
{
	long st = op->http_error_status_code;
	const struct compute_operation_error *e = op->n_errors ? &op->errors[0] : NULL;
	char *code = NULL, *msg = NULL;
	int rc;

	if (!e && st < 400)
		return 0;
	/* Everything below came from the server and ends up on a terminal. */
	code = vx_text_clean(e && e->code ? e->code : "ERROR");
	msg = vx_text_clean(e && e->message ? e->message :
			    (op->http_error_message ? op->http_error_message : ""));
	if (!code || !msg)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	else if (e)
		rc = vx_err_set(err, op_code(st, e->code), "%s: %s: %s", what, code, msg);
	else
		rc = vx_err_set(err, op_code(st, NULL), "%s: HTTP %ld %s", what, st, msg);
	free(code);
	free(msg);
	return rc;
}

int compute_operation_wait(struct compute_client *c, const char *project,
			   struct compute_operation *op, int64_t timeout_ms, const char *what,
			   struct vx_err *err)
{
	char *path = NULL, *url = NULL, *ctx_what = NULL;
	int64_t deadline, pause = 1000;
	int rc = 0;

	if (!what) {
		ctx_what = vx_asprintf("compute: waiting for operation %s", op->name ? op->name : "");
		if (!ctx_what)
			return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
		what = ctx_what;
	}
	deadline = vx_mono_ms(c->ctx) + (timeout_ms > 0 ? timeout_ms : WAIT_TIMEOUT_MS);
	if (!compute_operation_done(op)) {
		/* Both come from the server: only Compute's own name shapes go into the URL. */
		if (!gcall_segment_ok(project, ":") || !compute_reservation_name_ok(op->zone) ||
		    !compute_operation_name_ok(op->name)) {
			rc = vx_err_set(err, VX_EAPI, "%s: the operation has no usable name or zone", what);
			goto done;
		}
		if (!(path = vx_asprintf("projects/%s/zones/%s/operations/%s/wait", project, op->zone,
					  op->name)) ||
		    !(url = gcall_url(c->base_url, path, (const char *)NULL))) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
	}
	while (!compute_operation_done(op)) {
		struct gcp_response resp = { 0 };
		struct compute_operation next = COMPUTE_OPERATION_INIT;
		int64_t started = vx_mono_ms(c->ctx);

		if (vx_interrupted(c->ctx)) {
			rc = vx_err_set(err, VX_ECANCELED, "%s: interrupted while waiting for %s", what,
					op->name);
			goto done;
		}
		if (started >= deadline) {
			rc = vx_err_set(err, VX_ERETRY, "%s: operation %s not done in time", what, op->name);
			goto done;
		}
		vx_log(c->ctx, VX_LOG_DEBUG, "compute: waiting for operation %s (status %s)", op->name,
		       op->status ? op->status : "unknown");
		rc = compute_send(c, "POST", url, NULL, GCP_RETRY_SAFE, "WaitZoneOperation", WAIT_CALL_TIMEOUT_MS,
				  0, what, &resp, err);
		if (rc == 0 && (rc = compute_operation_parse_json(resp.body, resp.body_len, &next, err)) < 0)
			gcall_wrap(err, "compute", what);
		gcp_response_release(&resp);
		if (rc < 0)
			goto done;
		/* Keep what the first answer knew when a later one omits it. */
		if (!next.name) {
			next.name = op->name;
			op->name = NULL;
		}
		if (!next.zone) {
			next.zone = op->zone;
			op->zone = NULL;
		}
		compute_operation_release(op);
		*op = next;
		/* wait is best effort and may answer at once: do not spin. */
		if (!compute_operation_done(op) && vx_mono_ms(c->ctx) - started < 1000) {
			vx_sleep_ms(c->ctx, pause);
			pause = pause * 2 > 30000 ? 30000 : pause * 2;
		}
	}
	rc = op_failure(op, what, err);
done:
	free(path);
	free(url);
	free(ctx_what);
	return rc;
}

int compute_operation_follow(struct compute_client *c, const char *project, const char *zone,
			     struct compute_operation *op, int64_t timeout_ms, const char *what,
			     const char *hint, struct vx_err *err)
{
	char *name = NULL, *cause = NULL;
	int rc;

	if (compute_operation_done(op))
		return compute_operation_wait(c, project, op, timeout_ms, what, err);
	if (!compute_operation_name_ok(op->name) || !compute_reservation_name_ok(zone) ||
	    (op->zone && strcmp(op->zone, zone) != 0)) {
		char *shown = vx_text_clean(op->name ? op->name : "");
		char *shown_zone = vx_text_clean(op->zone ? op->zone : (zone ? zone : ""));

		rc = vx_err_set(err, VX_EUNCERTAIN, "%s: the reply names operation \"%s\" in zone \"%s\", which vx will not follow; the outcome is unknown (%s)",
				what, shown ? shown : "", shown_zone ? shown_zone : "", hint);
		free(shown);
		free(shown_zone);
		return rc;
	}
	if (!op->zone && !(op->zone = strdup(zone)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	if (!(name = strdup(op->name)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = compute_operation_wait(c, project, op, timeout_ms, what, err);
	if (rc < 0 && !compute_operation_done(op)) {
		cause = vx_strdup(vx_err_msg(err));
		rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome of operation %s is unknown (%s)",
				cause ? cause : what, name, hint);
	}
	free(cause);
	free(name);
	return rc;
}
