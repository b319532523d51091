#include "providers/gcp/future.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/compute_internal.h"
#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/timefmt.h"

#include "util/banned.h"

/* How long a mutation follows its operation by default: the Node client's per-method timeout (600 s). */
#define FOLLOW_MS (10 * 60 * 1000)
/* What to do when a mutation's outcome is unknown. */
#define UNKNOWN_HINT "read the future reservation, or send it again with the same request id, before trying anything else"

void future_reservation_release(struct future_reservation *fr)
{
	size_t i;

	if (!fr)
		return;
	free(fr->name);
	free(fr->zone);
	free(fr->self_link);
	free(fr->description);
	free(fr->reservation_mode);
	free(fr->planning_status);
	free(fr->deployment_type);
	free(fr->scheduling_type);
	free(fr->name_prefix);
	free(fr->reservation_name);
	free(fr->machine_type);
	for (i = 0; i < fr->n_accelerators; i++)
		free(fr->accelerators[i].type);
	free(fr->accelerators);
	free(fr->source_instance_template);
	free(fr->procurement_status);
	for (i = 0; i < fr->n_auto_created; i++)
		free(fr->auto_created[i]);
	free(fr->auto_created);
	free(fr->amendment_status);
	free(fr->last_good_status);
	memset(fr, 0, sizeof(*fr));
	fr->specific_reservation_required = FUTURE_UNSET;
	fr->auto_delete_auto_created_reservations = FUTURE_UNSET;
}

void future_reservation_list_release(struct future_reservation_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		future_reservation_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* ---- what a status means ---- */

static int status_in(const char *status, const char *const *set)
{
	for (; status && *set; set++)
		if (!strcmp(status, *set))
			return 1;
	return 0;
}

int future_status_undecided(const char *status)
{
	static const char *const set[] = { "DRAFTING", "PENDING_APPROVAL", "PENDING_AMENDMENT_APPROVAL", NULL };

	return status_in(status, set);
}

int future_status_final(const char *status)
{
	static const char *const set[] = { "DECLINED", "CANCELLED", "FAILED", "FAILED_PARTIALLY_FULFILLED",
					   "FULFILLED", "COMMITTED", NULL };

	return status_in(status, set);
}

int future_status_failed(const char *status)
{
	static const char *const set[] = { "DECLINED", "FAILED", "FAILED_PARTIALLY_FULFILLED", NULL };

	return status_in(status, set);
}

int future_status_locked(const char *status)
{
	static const char *const set[] = { "PROCURING", "PROVISIONING", "FULFILLED", "FAILED_PARTIALLY_FULFILLED",
					   "COMMITTED", NULL };

	return status_in(status, set);
}

const char *future_reservation_auto_created_name(const struct future_reservation *fr, size_t i)
{
	const char *url, *p, *seg[6];
	size_t n = 0, len;

	if (!fr || i >= fr->n_auto_created || !(url = fr->auto_created[i]))
		return NULL;
	/* The last six segments: projects/P/zones/Z/reservations/NAME. */
	len = strlen(url);
	p = url + len;
	while (n < 6 && p > url) {
		const char *q = p;

		while (q > url && q[-1] != '/')
			q--;
		seg[5 - n++] = q;
		p = q > url ? q - 1 : q;
	}
	if (n < 6 || strncmp(seg[0], "projects/", 9) != 0 || strncmp(seg[2], "zones/", 6) != 0 ||
	    strncmp(seg[4], "reservations", 12) != 0 || seg[4][12] != '/' || !compute_reservation_name_ok(seg[5]))
		return NULL;
	if (fr->zone && (strncmp(seg[3], fr->zone, strlen(fr->zone)) != 0 || seg[3][strlen(fr->zone)] != '/'))
		return NULL;
	return seg[5];
}

/* ---- parsers ---- */

static cJSON *obj(const cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsObject(v) ? v : NULL;
}

/* *out = ms of the RFC 3339 time at o[key]; left 0 when absent or malformed. */
static void time_at(int64_t *out, const cJSON *o, const char *key)
{
	int64_t v;

	if (vx_time_parse(&v, gjson_str(o, key), 0) == 0)
		*out = v;
}

/* *out = o[key] as an integer in [0, hi]; left as it was when absent or of another shape. */
static void count_at(int64_t *out, const cJSON *o, const char *key, int64_t hi)
{
	int64_t v;

	if (gjson_int(cJSON_GetObjectItemCaseSensitive(o, key), 0, hi, &v) == 0)
		*out = v;
}

/* A boolean field: 0, 1, or FUTURE_UNSET when absent or not a boolean. */
static int flag_at(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : FUTURE_UNSET;
}

static int request_from(const cJSON *o, struct future_reservation *fr)
{
	int rc;

	if ((rc = gjson_dup(&fr->name, o, "name")) < 0 || (rc = compute_dup_last(&fr->zone, o, "zone")) < 0 ||
	    (rc = gjson_dup(&fr->self_link, o, "selfLink")) < 0 ||
	    (rc = gjson_dup(&fr->description, o, "description")) < 0 ||
	    (rc = gjson_dup(&fr->reservation_mode, o, "reservationMode")) < 0 ||
	    (rc = gjson_dup(&fr->planning_status, o, "planningStatus")) < 0 ||
	    (rc = gjson_dup(&fr->deployment_type, o, "deploymentType")) < 0 ||
	    (rc = gjson_dup(&fr->scheduling_type, o, "schedulingType")) < 0 ||
	    (rc = gjson_dup(&fr->name_prefix, o, "namePrefix")) < 0 ||
	    (rc = gjson_dup(&fr->reservation_name, o, "reservationName")) < 0)
		return rc;
	time_at(&fr->create_ms, o, "creationTimestamp");
	fr->specific_reservation_required = flag_at(o, "specificReservationRequired");
	fr->auto_delete_auto_created_reservations = flag_at(o, "autoDeleteAutoCreatedReservations");
	time_at(&fr->auto_created_reservations_delete_ms, o, "autoCreatedReservationsDeleteTime");
	count_at(&fr->auto_created_reservations_duration_s, obj(o, "autoCreatedReservationsDuration"), "seconds",
		 INT64_MAX);
	time_at(&fr->start_ms, obj(o, "timeWindow"), "startTime");
	time_at(&fr->end_ms, obj(o, "timeWindow"), "endTime");
	count_at(&fr->duration_s, obj(obj(o, "timeWindow"), "duration"), "seconds", INT64_MAX);
	return 0;
}

/* The objects of arr (others skipped), counted. */
static size_t count_objects(const cJSON *arr)
{
	const cJSON *it;
	size_t n = 0;

	if (!cJSON_IsArray(arr))
		return 0;
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsObject(it))
			n++;
	return n;
}

static int sku_from(const cJSON *o, struct future_reservation *fr)
{
	const cJSON *sku = obj(o, "specificSkuProperties"), *props = obj(sku, "instanceProperties");
	int rc;

	count_at(&fr->total_count, sku, "totalCount", INT64_MAX);
	if ((rc = gjson_dup(&fr->source_instance_template, sku, "sourceInstanceTemplate")) < 0 ||
	    (rc = gjson_dup(&fr->machine_type, props, "machineType")) < 0)
		return rc;
	fr->n_local_ssds = count_objects(cJSON_GetObjectItemCaseSensitive(props, "localSsds"));
	return compute_accelerators_from(cJSON_GetObjectItemCaseSensitive(props, "guestAccelerators"),
					 &fr->accelerators, &fr->n_accelerators);
}

static int status_from(const cJSON *o, struct future_reservation *fr)
{
	const cJSON *st = obj(o, "status"), *urls = cJSON_GetObjectItemCaseSensitive(st, "autoCreatedReservations");
	const cJSON *it;
	size_t n = 0;
	int rc;

	if ((rc = gjson_dup(&fr->procurement_status, st, "procurementStatus")) < 0 ||
	    (rc = gjson_dup(&fr->amendment_status, st, "amendmentStatus")) < 0 ||
	    (rc = gjson_dup(&fr->last_good_status, obj(st, "lastKnownGoodState"), "procurementStatus")) < 0)
		return rc;
	time_at(&fr->lock_ms, st, "lockTime");
	count_at(&fr->fulfilled_count, st, "fulfilledCount", INT64_MAX);
	count_at(&fr->existing_matching_count, obj(st, "existingMatchingUsageInfo"), "count", INT64_MAX);
	if (!cJSON_IsArray(urls))
		return 0;
	cJSON_ArrayForEach(it, urls)
		if (cJSON_IsString(it))
			n++;
	if (!n)
		return 0;
	if (!(fr->auto_created = calloc(n, sizeof(*fr->auto_created))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, urls) {
		if (!cJSON_IsString(it))
			continue;
		if (!(fr->auto_created[fr->n_auto_created] = strdup(it->valuestring)))
			return VX_ENOMEM;
		fr->n_auto_created++;
	}
	return 0;
}

static int fr_from(const cJSON *o, void *dst)
{
	struct future_reservation *fr = dst;
	int rc;

	fr->specific_reservation_required = FUTURE_UNSET;
	fr->auto_delete_auto_created_reservations = FUTURE_UNSET;
	if ((rc = request_from(o, fr)) < 0 || (rc = sku_from(o, fr)) < 0)
		return rc;
	return status_from(o, fr);
}

static void fr_rel(void *fr)
{
	future_reservation_release(fr);
}

int future_reservation_parse_json(const char *body, size_t len, struct future_reservation *out,
				  struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), fr_from, fr_rel,
			       "compute: reading future reservation", err);
}

static int fr_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return future_reservation_parse_json(body, len, out, err);
}

int future_reservation_list_parse_json(const char *body, size_t len, struct future_reservation_list *l,
				       char **next_page_token, struct vx_err *err)
{
	return gjson_parse_page(body, len, "items", (void **)&l->items, &l->n, &l->alloc, sizeof(*l->items),
				fr_from, fr_rel, next_page_token, "compute: reading future reservation list",
				err);
}

/* Appends the future reservations of one aggregated scope; "zones/Z" fills a missing zone. */
static int append_scope(struct future_reservation_list *l, const cJSON *scope)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(scope, "futureReservations"), *it;
	size_t n = count_objects(arr);
	int rc;

	if (!n)
		return 0;
	if (n > SIZE_MAX - l->n || VX_ALLOC_GROW(l->items, l->n + n, l->alloc) < 0)
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, arr) {
		struct future_reservation *fr;

		if (!cJSON_IsObject(it))
			continue;
		fr = &l->items[l->n++];
		memset(fr, 0, sizeof(*fr));
		if ((rc = fr_from(it, fr)) < 0)
			return rc;
		if (!fr->zone && scope->string && !strncmp(scope->string, "zones/", 6) &&
		    !(fr->zone = strdup(scope->string + 6)))
			return VX_ENOMEM;
	}
	return 0;
}

int future_reservation_aggregated_parse_json(const char *body, size_t len,
					     struct future_reservation_list *l, char **next_page_token,
					     struct vx_err *err)
{
	static const char what[] = "compute: reading aggregated future reservation list";
	const cJSON *items, *scope, *unreach;
	cJSON *root;
	size_t start = l->n, i;
	int rc = 0;

	*next_page_token = NULL;
	if (!(root = gjson_parse_object(body, len, what, err)))
		return VX_EINVAL;
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	unreach = cJSON_GetObjectItemCaseSensitive(root, "unreachables");
	if (items && !cJSON_IsNull(items) && !cJSON_IsObject(items)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: items is not an object", what);
		goto done;
	}
	if (cJSON_GetArraySize(unreach) > 0) {
		rc = vx_err_set(err, VX_ERETRY, "%s: some zones could not be reached; the list is not whole",
				what);
		goto done;
	}
	cJSON_ArrayForEach(scope, items)
		if ((rc = append_scope(l, scope)) < 0)
			break;
	if (rc == 0)
		rc = gjson_next_page_token(next_page_token, root);
	if (rc < 0)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	if (rc < 0) {
		for (i = start; i < l->n; i++)
			future_reservation_release(&l->items[i]);
		l->n = start;
	}
	cJSON_Delete(root);
	return rc;
}

/* ---- the insert body ---- */

static int add_time(cJSON *o, const char *key, int64_t ms)
{
	char t[VX_TIME_MAX];

	vx_time_format(t, sizeof(t), ms, 0);
	return cJSON_AddStringToObject(o, key, t) ? 0 : VX_ENOMEM;
}

/* {"seconds": "N"} under key: int64 as a string, as Google's clients send it. */
static int add_duration(cJSON *o, const char *key, int64_t seconds)
{
	cJSON *d = cJSON_AddObjectToObject(o, key);
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, seconds);
	return d && cJSON_AddStringToObject(d, "seconds", num) ? 0 : VX_ENOMEM;
}

static int add_str(cJSON *o, const char *key, const char *v)
{
	return !v || cJSON_AddStringToObject(o, key, v) ? 0 : VX_ENOMEM;
}

static int add_flag(cJSON *o, const char *key, int v)
{
	return v == FUTURE_UNSET || cJSON_AddBoolToObject(o, key, v != 0) ? 0 : VX_ENOMEM;
}

static int add_window_and_sku(cJSON *root, const struct future_reservation *fr)
{
	cJSON *win, *sku, *props;
	char num[32];
	int rc;

	if (!(win = cJSON_AddObjectToObject(root, "timeWindow")) || (rc = add_time(win, "startTime", fr->start_ms)) < 0)
		return VX_ENOMEM;
	rc = fr->end_ms ? add_time(win, "endTime", fr->end_ms) : add_duration(win, "duration", fr->duration_s);
	if (rc < 0 || !(sku = cJSON_AddObjectToObject(root, "specificSkuProperties")))
		return VX_ENOMEM;
	snprintf(num, sizeof(num), "%" PRId64, fr->total_count);
	if (!cJSON_AddStringToObject(sku, "totalCount", num))
		return VX_ENOMEM;
	if (fr->source_instance_template)
		return add_str(sku, "sourceInstanceTemplate", fr->source_instance_template);
	if (!(props = cJSON_AddObjectToObject(sku, "instanceProperties")) ||
	    (rc = add_str(props, "machineType", fr->machine_type)) < 0)
		return VX_ENOMEM;
	return compute_accelerators_to_json(props, fr->accelerators, fr->n_accelerators);
}

static int add_request(cJSON *root, const struct future_reservation *fr)
{
	int rc;

	if ((rc = add_str(root, "name", fr->name)) < 0 || (rc = add_str(root, "description", fr->description)) < 0 ||
	    (rc = add_str(root, "reservationMode", fr->reservation_mode)) < 0 ||
	    (rc = add_str(root, "planningStatus", fr->planning_status)) < 0 ||
	    (rc = add_str(root, "deploymentType", fr->deployment_type)) < 0 ||
	    (rc = add_str(root, "schedulingType", fr->scheduling_type)) < 0 ||
	    (rc = add_str(root, "namePrefix", fr->name_prefix)) < 0 ||
	    (rc = add_str(root, "reservationName", fr->reservation_name)) < 0 ||
	    (rc = add_flag(root, "specificReservationRequired", fr->specific_reservation_required)) < 0 ||
	    (rc = add_flag(root, "autoDeleteAutoCreatedReservations",
			   fr->auto_delete_auto_created_reservations)) < 0)
		return rc;
	if (fr->auto_created_reservations_delete_ms)
		return add_time(root, "autoCreatedReservationsDeleteTime", fr->auto_created_reservations_delete_ms);
	if (fr->auto_created_reservations_duration_s)
		return add_duration(root, "autoCreatedReservationsDuration", fr->auto_created_reservations_duration_s);
	return 0;
}

int future_reservation_to_json(const struct future_reservation *fr, char **out, struct vx_err *err)
{
	static const char what[] = "compute: writing future reservation";
	cJSON *root = NULL;
	int rc;

	*out = NULL;
	if (fr->end_ms && fr->duration_s)
		return vx_err_set(err, VX_EINVAL, "%s: timeWindow has both endTime and duration (one of them)", what);
	if (!fr->start_ms || (!fr->end_ms && fr->duration_s <= 0))
		return vx_err_set(err, VX_EINVAL, "%s: timeWindow needs startTime and endTime or duration", what);
	if (fr->end_ms && fr->end_ms <= fr->start_ms)
		return vx_err_set(err, VX_EINVAL, "%s: timeWindow ends before it starts", what);
	if (fr->auto_created_reservations_delete_ms && fr->auto_created_reservations_duration_s)
		return vx_err_set(err, VX_EINVAL, "%s: autoCreatedReservationsDeleteTime and autoCreatedReservationsDuration are exclusive",
				  what);
	if (fr->total_count < 0 || fr->duration_s < 0 || fr->auto_created_reservations_duration_s < 0)
		return vx_err_set(err, VX_EINVAL, "%s: a negative count or duration", what);
	if (!(root = cJSON_CreateObject()) || (rc = add_request(root, fr)) < 0 ||
	    (rc = add_window_and_sku(root, fr)) < 0 || !(*out = cJSON_PrintUnformatted(root)))
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	else
		rc = 0;
	cJSON_Delete(root);
	return rc;
}

/* ---- update masks ---- */

/*
 * The paths Google's own tools put in updateMask: gcloud's dotted paths
 * (with its singular guestAccelerator and localSsd) and Terraform's
 * top-level names. Whether the server takes each in each state is not
 * stated; output-only fields (status, creationTimestamp, ...) and name
 * (never changeable) are not among them.
 */
static const char *const mask_paths[] = {
	"planningStatus",
	"description",
	"namePrefix",
	"reservationName",
	"timeWindow",
	"timeWindow.startTime",
	"timeWindow.endTime",
	"timeWindow.duration",
	"shareSettings",
	"specificSkuProperties",
	"specificSkuProperties.totalCount",
	"specificSkuProperties.instanceProperties.minCpuPlatform",
	"specificSkuProperties.instanceProperties.machineType",
	"specificSkuProperties.instanceProperties.guestAccelerator",
	"specificSkuProperties.instanceProperties.localSsd",
	"autoDeleteAutoCreatedReservations",
	"autoCreatedReservationsDeleteTime",
	"autoCreatedReservationsDuration",
	"specificReservationRequired",
	"deploymentType",
	"reservationMode",
	"commitmentInfo",
	"schedulingType",
	"enableEmergentMaintenance",
	NULL,
};

int future_update_mask_ok(const char *mask)
{
	const char *p = mask;

	if (!mask || !*mask)
		return 0;
	while (1) {
		size_t n = strcspn(p, ","), i;
		int found = 0;

		for (i = 0; mask_paths[i] && !found; i++)
			found = strlen(mask_paths[i]) == n && !strncmp(mask_paths[i], p, n);
		if (!found)
			return 0;
		if (!p[n])
			return 1;
		p += n + 1;
	}
}

/* ---- calls ---- */

/* A UUID: 36 of [0-9a-fA-F-]; Compute refuses the all-zero one. */
static int uuid_ok(const char *request_id)
{
	return strlen(request_id) == 36 && strspn(request_id, "0123456789abcdefABCDEF-") == 36 &&
	       strspn(request_id, "0-") != 36;
}

/* Checks what goes into the path, and the request id (the caller's or a fresh one) into rid. */
static int prepare(const char *project, const char *zone, const char *name, const char *request_id,
		   char rid[37], const char *what, struct vx_err *err)
{
	if (!gcall_segment_ok(project, ":") || !compute_reservation_name_ok(zone) ||
	    (name && !compute_reservation_name_ok(name)))
		return vx_err_set(err, VX_EINVAL, "%s: invalid project, zone or future reservation name", what);
	return compute_take_request_id(request_id, uuid_ok, rid, what, err);
}

/* What one mutation is. */
struct mutation {
	const char *method, *suffix, *update_mask, *body, *rpc;
};

/*
 * Sends m to .../futureReservations[/NAME[suffix]] with its request id and
 * follows the operation. A send that ran out of retries (VX_ERETRY: no
 * answer, or 5xx after the retries) may have been acted on: uncertain.
 */
static int mutate(struct compute_client *c, const char *project, const char *zone, const char *name,
		  const struct mutation *m, const char *request_id, int64_t wait_ms, const char *what,
		  struct compute_operation *op, struct vx_err *err)
{
	char *url = NULL, rid[37];
	int rc, answered;

	if ((rc = prepare(project, zone, name, request_id, rid, what, err)) < 0)
		return rc;
	if (!(url = compute_zonal_url(c, project, zone, "futureReservations", name, m->suffix, rid,
				      m->update_mask)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = compute_mutate(c, m->method, url, m->body, m->rpc, what, op, &answered, err);
	if (rc == VX_ERETRY && !answered) {
		char *cause = vx_strdup(vx_err_msg(err));

		rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome is unknown (request id %s: %s)",
				cause ? cause : what, rid, UNKNOWN_HINT);
		free(cause);
	}
	if (rc < 0 && answered) /* An answer vx cannot read: the request was taken, what it did is unknown. */
		rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome is unknown (request id %s)", vx_err_msg(err), rid);
	if (rc == 0)
		rc = compute_operation_follow(c, project, zone, op, wait_ms > 0 ? wait_ms : FOLLOW_MS, what,
					      UNKNOWN_HINT, err);
	free(url);
	return rc;
}

/* Runs mutation m on NAME (NULL: the collection) with what = "compute: <verb> future reservation ...". */
static int mutate_verb(struct compute_client *c, const char *verb, const char *project, const char *zone,
		       const char *name, const struct mutation *m, const char *request_id, int64_t wait_ms,
		       struct compute_operation *op, struct vx_err *err)
{
	char *what;
	int rc;

	memset(op, 0, sizeof(*op));
	if (!(what = vx_asprintf("compute: %s future reservation \"%s\" in %s", verb, name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	rc = mutate(c, project, zone, name, m, request_id, wait_ms, what, op, err);
	free(what);
	return rc;
}

/* 1 when body is a JSON object (parsed through gjson, as every body is). */
static int json_object(const char *body)
{
	cJSON *parsed = body ? gjson_parse(body, strlen(body)) : NULL;
	int ok = cJSON_IsObject(parsed);

	cJSON_Delete(parsed);
	return ok;
}

int future_reservation_insert(struct compute_client *c, const char *project, const char *zone,
			      const char *fr_json, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err)
{
	struct mutation m = { "POST", "", NULL, fr_json, "InsertFutureReservation" };
	cJSON *parsed = fr_json ? gjson_parse(fr_json, strlen(fr_json)) : NULL;
	const char *name = gjson_str(parsed, "name");
	char *what = NULL;
	int rc;

	memset(op, 0, sizeof(*op));
	if (!(what = vx_asprintf("compute: creating future reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : ""))) {
		rc = vx_err_set(err, VX_ENOMEM, "compute: out of memory");
		goto done;
	}
	if (!cJSON_IsObject(parsed) || !compute_reservation_name_ok(name))
		rc = vx_err_set(err, VX_EINVAL, "%s: the future reservation is not a JSON object with a Compute name", what);
	else
		rc = mutate(c, project, zone, NULL, &m, request_id, wait_ms, what, op, err);
done:
	cJSON_Delete(parsed);
	free(what);
	return rc;
}

int future_reservation_update(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *update_mask, const char *fr_json,
			      const char *request_id, int64_t wait_ms, struct compute_operation *op,
			      struct vx_err *err)
{
	struct mutation m = { "PATCH", "", update_mask, fr_json, "UpdateFutureReservation" };

	if (!future_update_mask_ok(update_mask) || !json_object(fr_json)) {
		memset(op, 0, sizeof(*op));
		return vx_err_set(err, VX_EINVAL, "compute: updating future reservation \"%s\" in %s: the update mask names a field Google's tools do not update, or the body is not a JSON object",
				  compute_reservation_name_ok(name) ? name : "", compute_reservation_name_ok(zone) ? zone : "");
	}
	return mutate_verb(c, "updating", project, zone, name, &m, request_id, wait_ms, op, err);
}

int future_reservation_cancel(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err)
{
	struct mutation m = { "POST", "/cancel", NULL, NULL, "CancelFutureReservation" };

	return mutate_verb(c, "cancelling", project, zone, name, &m, request_id, wait_ms, op, err);
}

int future_reservation_delete(struct compute_client *c, const char *project, const char *zone,
			      const char *name, const char *request_id, int64_t wait_ms,
			      struct compute_operation *op, struct vx_err *err)
{
	struct mutation m = { "DELETE", "", NULL, NULL, "DeleteFutureReservation" };

	return mutate_verb(c, "deleting", project, zone, name, &m, request_id, wait_ms, op, err);
}

int future_reservation_get(struct compute_client *c, const char *project, const char *zone,
			   const char *name, struct future_reservation *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->specific_reservation_required = out->auto_delete_auto_created_reservations = FUTURE_UNSET;
	if (!(what = vx_asprintf("compute: reading future reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (!gcall_segment_ok(project, ":") || !compute_reservation_name_ok(zone) ||
	    !compute_reservation_name_ok(name))
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, zone or future reservation name", what);
	else if (!(path = vx_asprintf("projects/%s/zones/%s/futureReservations/%s", project, zone, name)))
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	else
		rc = compute_get(c, path, "GetFutureReservation", what, fr_parse, out, err);
	free(path);
	free(what);
	return rc;
}

static int zonal_page(const char *body, size_t len, void *out, char **next, struct vx_err *err)
{
	return future_reservation_list_parse_json(body, len, out, next, err);
}

static int aggregated_page(const char *body, size_t len, void *out, char **next, struct vx_err *err)
{
	return future_reservation_aggregated_parse_json(body, len, out, next, err);
}

static void list_rel(void *l)
{
	future_reservation_list_release(l);
}

static const struct compute_collection future_reservations = {
	"futureReservations", "future reservations", compute_reservation_name_ok, "ListFutureReservations",
	zonal_page, "AggregatedListFutureReservations", aggregated_page, list_rel,
};

int future_reservation_list(struct compute_client *c, const char *project, const char *zone,
			    const char *filter, struct future_reservation_list *out,
			    struct vx_err *err)
{
	return compute_list_zone(c, &future_reservations, project, zone, filter, out, err);
}

int future_reservation_aggregated_list(struct compute_client *c, const char *project,
				       const char *filter, struct future_reservation_list *out,
				       struct vx_err *err)
{
	return compute_list_aggregated(c, &future_reservations, project, filter, out, err);
}
