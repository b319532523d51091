#include "providers/gcp/persistent.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/vertex_internal.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "util/timefmt.h"

#include "util/banned.h"

#define POLL_FIRST_MS 1000
#define POLL_MAX_MS 60000
/* Provisioning GPU machines takes minutes; how long is not stated. */
#define WAIT_TIMEOUT_MS (60 * 60 * 1000)
#define COLLECTION "persistentResources"

/* ---- states ---- */

static const char *const state_names[] = {
	"STATE_UNSPECIFIED",
	"PROVISIONING",
	NULL,
	"RUNNING",
	"STOPPING",
	"ERROR",
	"REBOOTING",
	"UPDATING",
};
#define N_STATES (sizeof(state_names) / sizeof(state_names[0]))

const char *persistent_state_name(enum persistent_state s)
{
	if ((int)s < 0 || (size_t)s >= N_STATES || !state_names[s])
		return "STATE_UNKNOWN";
	return state_names[s];
}

enum persistent_state persistent_state_parse(const char *s)
{
	char *end = NULL;
	long v;
	size_t i;

	if (!s || !*s)
		return PERSISTENT_STATE_UNKNOWN;
	for (i = 0; i < N_STATES; i++)
		if (state_names[i] && !strcmp(s, state_names[i]))
			return (enum persistent_state)i;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || (size_t)v >= N_STATES || !state_names[v])
		return PERSISTENT_STATE_UNKNOWN;
	return (enum persistent_state)v;
}

/* ---- release ---- */

static void pool_release(struct persistent_pool *p)
{
	free(p->id);
	free(p->machine_type);
	free(p->accelerator_type);
	free(p->boot_disk_type);
	memset(p, 0, sizeof(*p));
}

void persistent_resource_release(struct persistent_resource *r)
{
	size_t i;

	if (!r)
		return;
	free(r->name);
	free(r->id);
	free(r->display_name);
	free(r->state_name);
	free(r->error_message);
	vx_labels_free(r->labels, r->n_labels);
	for (i = 0; i < r->n_pools; i++)
		pool_release(&r->pools[i]);
	free(r->pools);
	free(r->network);
	free(r->kms_key_name);
	free(r->json);
	memset(r, 0, sizeof(*r));
}

const char *persistent_resource_label(const struct persistent_resource *r, const char *key)
{
	return r && key ? vx_labels_get(r->labels, r->n_labels, key) : NULL;
}

const struct persistent_pool *persistent_resource_pool(const struct persistent_resource *r, const char *id)
{
	size_t i;

	for (i = 0; r && id && i < r->n_pools; i++)
		if (r->pools[i].id && !strcmp(r->pools[i].id, id))
			return &r->pools[i];
	return NULL;
}

void persistent_list_release(struct persistent_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		persistent_resource_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void persistent_operation_release(struct persistent_operation *op)
{
	if (!op)
		return;
	free(op->name);
	free(op->error_message);
	free(op->progress_message);
	persistent_resource_release(&op->resource);
	memset(op, 0, sizeof(*op));
}

/* ---- names ---- */

int persistent_id_ok(const char *s)
{
	return gcall_label_ok(s);
}

/* The segment at *p (up to '/' or the end), copied into seg (cap bytes); 0 when empty or too long. */
static int next_segment(const char **p, char *seg, size_t cap)
{
	size_t n = strcspn(*p, "/");

	if (n == 0 || n >= cap)
		return 0;
	memcpy(seg, *p, n);
	seg[n] = '\0';
	*p += n;
	return 1;
}

static int digits_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 20 && strspn(s, "0123456789") == n;
}

static int region_ok(const char *s)
{
	return *s && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

/*
 * Reads "projects/P/locations/R" at the start of name, checking P against
 * project (or a number) and R against region as persistent_name_check says;
 * leaves *rest after R. 1 when it matches.
 */
static int parent_check(const char *name, const char *project, const char *region, const char **rest)
{
	const char *p = name;
	char seg[128];

	if (!name || strncmp(p, "projects/", 9))
		return 0;
	p += 9;
	if (!next_segment(&p, seg, sizeof(seg)) || !gcall_segment_ok(seg, ":"))
		return 0;
	if (project && strcmp(seg, project) && !digits_ok(seg))
		return 0;
	if (strncmp(p, "/locations/", 11))
		return 0;
	p += 11;
	if (!next_segment(&p, seg, sizeof(seg)) || !region_ok(seg) || (region && strcmp(seg, region)))
		return 0;
	*rest = p;
	return 1;
}

/* At *p: "/persistentResources/ID"; moves *p past it. */
static int resource_part(const char **p)
{
	char seg[80];

	if (strncmp(*p, "/" COLLECTION "/", sizeof(COLLECTION) + 1))
		return 0;
	*p += sizeof(COLLECTION) + 1;
	return next_segment(p, seg, sizeof(seg)) && persistent_id_ok(seg);
}

int persistent_name_check(const char *name, const char *project, const char *region)
{
	const char *p;

	return parent_check(name, project, region, &p) && resource_part(&p) && *p == '\0';
}

int persistent_operation_name_check(const char *name, const char *project, const char *region)
{
	const char *p;
	char seg[128];

	if (!parent_check(name, project, region, &p))
		return 0;
	if (!strncmp(p, "/" COLLECTION "/", sizeof(COLLECTION) + 1) && !resource_part(&p))
		return 0;
	if (strncmp(p, "/operations/", 12))
		return 0;
	p += 12;
	return next_segment(&p, seg, sizeof(seg)) && gcall_segment_ok(seg, NULL) && *p == '\0';
}

/* The region of a name that passed parent_check, copied. */
static char *name_region(const char *name)
{
	const char *r = strstr(name, "/locations/") + 11;

	return strndup(r, strcspn(r, "/"));
}

/* ---- parsers ---- */

/* o[key] as a whole number in [0, INT64_MAX]; 1 when present and valid. */
static int js_count(const cJSON *o, const char *key, int64_t *out)
{
	int64_t v;

	if (gjson_int(cJSON_GetObjectItemCaseSensitive(o, key), 0, INT64_MAX, &v) < 0)
		return 0;
	*out = v;
	return 1;
}

static int pool_from(const cJSON *o, struct persistent_pool *p)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "machineSpec");
	const cJSON *as = cJSON_GetObjectItemCaseSensitive(o, "autoscalingSpec");
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(o, "diskSpec");
	int rc;

	if ((rc = gjson_dup(&p->id, o, "id")) < 0 || (rc = gjson_dup(&p->machine_type, ms, "machineType")) < 0 ||
	    (rc = gjson_dup(&p->accelerator_type, ms, "acceleratorType")) < 0 ||
	    (rc = gjson_dup(&p->boot_disk_type, ds, "bootDiskType")) < 0)
		return rc;
	(void)js_count(ms, "acceleratorCount", &p->accelerator_count);
	p->has_replica_count = js_count(o, "replicaCount", &p->replica_count);
	(void)js_count(o, "usedReplicaCount", &p->used_replica_count);
	(void)js_count(ds, "bootDiskSizeGb", &p->boot_disk_size_gb);
	if (cJSON_IsObject(as)) {
		p->has_autoscaling = 1;
		(void)js_count(as, "minReplicaCount", &p->min_replica_count);
		(void)js_count(as, "maxReplicaCount", &p->max_replica_count);
	}
	return 0;
}

static int pools_from(const cJSON *arr, struct persistent_resource *r)
{
	const cJSON *it;
	size_t n = 0;
	int rc;

	if (!cJSON_IsArray(arr))
		return 0;
	for (it = arr->child; it; it = it->next)
		n += cJSON_IsObject(it);
	if (!n)
		return 0;
	if (!(r->pools = calloc(n, sizeof(*r->pools))))
		return VX_ENOMEM;
	for (it = arr->child; it; it = it->next) {
		if (!cJSON_IsObject(it))
			continue;
		if ((rc = pool_from(it, &r->pools[r->n_pools++])) < 0)
			return rc;
	}
	return 0;
}

static int labels_from(const cJSON *labels, struct persistent_resource *r)
{
	const cJSON *it;
	size_t n = 0;

	if (!cJSON_IsObject(labels))
		return 0;
	for (it = labels->child; it; it = it->next)
		n += cJSON_IsString(it) && it->string;
	if (!n)
		return 0;
	if (!(r->labels = calloc(n, sizeof(*r->labels))))
		return VX_ENOMEM;
	for (it = labels->child; it; it = it->next) {
		struct vx_label *l;

		if (!cJSON_IsString(it) || !it->string)
			continue;
		l = &r->labels[r->n_labels++];
		if (!(l->key = strdup(it->string)) || !(l->value = strdup(it->valuestring)))
			return VX_ENOMEM;
	}
	return 0;
}

static int state_from(const cJSON *state, struct persistent_resource *r)
{
	int64_t v;

	if (cJSON_IsString(state)) {
		r->state = persistent_state_parse(state->valuestring);
		r->state_name = vx_text_clean(state->valuestring);
	} else if (cJSON_IsNumber(state)) {
		r->state = PERSISTENT_STATE_UNKNOWN;
		if (gjson_int(state, 0, INT_MAX, &v) == 0 && (size_t)v < N_STATES && state_names[v])
			r->state = (enum persistent_state)v;
		r->state_name = strdup(persistent_state_name(r->state));
	} else {
		return 0;
	}
	return r->state_name ? 0 : VX_ENOMEM;
}

static int resource_from(const cJSON *o, void *dst)
{
	struct persistent_resource *r = dst;
	int rc;

	if ((rc = gjson_dup(&r->name, o, "name")) < 0 || (rc = vertex_dup_text(&r->display_name, o, "displayName")) < 0 ||
	    (rc = state_from(cJSON_GetObjectItemCaseSensitive(o, "state"), r)) < 0 ||
	    (rc = labels_from(cJSON_GetObjectItemCaseSensitive(o, "labels"), r)) < 0 ||
	    (rc = pools_from(cJSON_GetObjectItemCaseSensitive(o, "resourcePools"), r)) < 0 ||
	    (rc = gjson_dup(&r->network, o, "network")) < 0 ||
	    (rc = gjson_dup(&r->kms_key_name, cJSON_GetObjectItemCaseSensitive(o, "encryptionSpec"),
			    "kmsKeyName")) < 0 ||
	    (rc = vertex_parse_status(cJSON_GetObjectItemCaseSensitive(o, "error"), &r->error_code,
			       &r->error_message)) < 0)
		return rc;
	if (persistent_name_check(r->name, NULL, NULL) && !(r->id = strdup(strrchr(r->name, '/') + 1)))
		return VX_ENOMEM;
	vertex_js_time(o, "createTime", &r->create_time_ms);
	vertex_js_time(o, "startTime", &r->start_time_ms);
	vertex_js_time(o, "updateTime", &r->update_time_ms);
	if (!(r->json = cJSON_PrintUnformatted(o)))
		return VX_ENOMEM;
	return 0;
}

static void resource_rel(void *r)
{
	persistent_resource_release(r);
}

int persistent_resource_parse_json(const char *body, size_t len, struct persistent_resource *out,
				   struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), resource_from, resource_rel,
			       "vertex: reading persistent resource", err);
}

int persistent_list_parse_json(const char *body, size_t len, struct persistent_list *l, char **next_page_token,
			       struct vx_err *err)
{
	void *items = l->items;
	int rc;

	rc = gjson_parse_page(body, len, COLLECTION, &items, &l->n, &l->alloc, sizeof(*l->items), resource_from,
			      resource_rel, next_page_token, "vertex: reading persistent resource list", err);
	l->items = items;
	return rc;
}

static int operation_from(const cJSON *o, void *dst)
{
	struct persistent_operation *op = dst;
	const cJSON *resp = cJSON_GetObjectItemCaseSensitive(o, "response");
	const char *type = gjson_str(resp, "@type");
	int rc;

	op->done = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "done"));
	if ((rc = gjson_dup(&op->name, o, "name")) < 0 ||
	    (rc = vertex_dup_text(&op->progress_message, cJSON_GetObjectItemCaseSensitive(o, "metadata"),
			   "progressMessage")) < 0 ||
	    (rc = vertex_parse_status(cJSON_GetObjectItemCaseSensitive(o, "error"), &op->error_code,
			       &op->error_message)) < 0)
		return rc;
	/* An error says it is finished even if "done" is missing. */
	if (op->error_code != 0 || op->error_message)
		op->done = 1;
	if (op->done && !op->error_code && type &&
	    !strcmp(type, "type.googleapis.com/google.cloud.aiplatform.v1.PersistentResource")) {
		op->has_resource = 1;
		return resource_from(resp, &op->resource);
	}
	return 0;
}

static void operation_rel(void *op)
{
	persistent_operation_release(op);
}

int persistent_operation_parse_json(const char *body, size_t len, struct persistent_operation *out,
				    struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), operation_from, operation_rel,
			       "vertex: reading operation", err);
}

/* ---- request body ---- */

int persistent_body(char **out, const char *spec_json, const struct vx_label *labels, size_t n_labels,
		    struct vx_err *err)
{
	cJSON *root = spec_json ? cJSON_Parse(spec_json) : NULL, *l;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (!cJSON_IsObject(root)) {
		rc = vx_err_set(err, VX_EINVAL, "vertex: the persistent resource spec is not a JSON object");
		goto done;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
	l = cJSON_GetObjectItemCaseSensitive(root, "labels");
	if (l && !cJSON_IsObject(l)) {
		rc = vx_err_set(err, VX_EINVAL, "vertex: the persistent resource spec's labels is not an object");
		goto done;
	}
	if (!l && n_labels && !(l = cJSON_AddObjectToObject(root, "labels")))
		goto oom;
	for (i = 0; i < n_labels; i++) {
		if (!labels[i].key || !*labels[i].key || !labels[i].value) {
			rc = vx_err_set(err, VX_EINVAL, "vertex: a persistent resource label has no key or value");
			goto done;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(l, labels[i].key);
		if (!cJSON_AddStringToObject(l, labels[i].key, labels[i].value))
			goto oom;
	}
	if ((*out = cJSON_PrintUnformatted(root)))
		goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
done:
	cJSON_Delete(root);
	return rc;
}

/* ---- calls ---- */

/* The URL of path on region's host, with key=value (escaped) when key is not NULL. NULL on OOM. */
static char *region_url(struct persistent_client *c, const char *region, const char *path, const char *key,
			const char *value)
{
	struct vx_buf b = VX_BUF_INIT;
	char *base = gcall_region_url(c->base_url, region, path);
	int rc = base ? vx_buf_adds(&b, base) : VX_ENOMEM;

	if (rc == 0 && key)
		rc = gcall_add_query(&b, key, value);
	free(base);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

/* Sends one request of this service (vertex_send); a mutation (not GET) is fenced. */
static int call(struct persistent_client *c, const char *method, const char *url, const char *body,
		const char *region, enum gcp_retry retry, const char *rpc, const char *what,
		struct gcp_response *resp, struct vx_err *err)
{
	return vertex_send(c->http, c->fence, method, url, body, region, 0, retry, rpc, what, resp, err);
}

/*
 * A mutation's answer, the first Operation: its name must be an operation
 * of this project and region (it is polled next). An answer that is not is
 * no knowing what the server did: VX_EUNCERTAIN for a create or update.
 */
static int first_operation(const struct gcp_response *resp, const char *project, const char *region,
			   int uncertain, const char *what, struct persistent_operation *op, struct vx_err *err)
{
	int rc = persistent_operation_parse_json(resp->body, resp->body_len, op, err);
	char *shown;

	if (rc < 0) {
		gcall_wrap(err, "vertex", what);
		if (uncertain && rc != VX_ENOMEM)
			rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome is unknown", vx_err_msg(err));
		return rc;
	}
	if (op->done || persistent_operation_name_check(op->name, project, region))
		return 0;
	shown = vx_text_clean(op->name ? op->name : "");
	rc = vx_err_set(err, uncertain ? VX_EUNCERTAIN : VX_EAPI, "%s: the answer %s%s%s%s", what,
			op->name ? "names no operation of this project and region: \"" : "has no operation name",
			shown ? shown : "", op->name ? "\"" : "", uncertain ? "; the outcome is unknown" : "");
	free(shown);
	persistent_operation_release(op);
	return rc;
}

int persistent_create(struct persistent_client *c, const char *project, const char *region, const char *id,
		      const char *spec_json, const struct vx_label *labels, size_t n_labels,
		      struct persistent_operation *op, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *path = NULL, *url = NULL, *body = NULL, *shown = vx_text_clean(id ? id : "");
	int rc;

	memset(op, 0, sizeof(*op));
	what = shown ? vx_asprintf("vertex: creating persistent resource \"%s\" in %s", shown,
				   region ? region : "")
		     : NULL;
	free(shown);
	if (!what)
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!gcall_segment_ok(project, ":") || !region || !region_ok(region) || !persistent_id_ok(id)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, region or id (an id is 1-63 of [a-z0-9-], "
						"starting with a letter, not ending with '-')",
				what);
		goto done;
	}
	if ((rc = persistent_body(&body, spec_json, labels, n_labels, err)) < 0) {
		gcall_wrap(err, "vertex", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/%s/" COLLECTION, project, region)) ||
	    !(url = region_url(c, region, path, "persistentResourceId", id))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "POST", url, body, region, GCP_RETRY_NEVER, "CreatePersistentResource", what, &resp, err);
	if (rc == VX_ECONFLICT)
		rc = vx_err_set(err, VX_ECONFLICT, "%s; it may be ours, made by an earlier create whose answer "
						   "was lost: read it and check its labels",
				vx_err_msg(err));
	if (rc == 0)
		rc = first_operation(&resp, project, region, 1, what, op, err);
done:
	gcp_response_release(&resp);
	free(body);
	free(path);
	free(url);
	free(what);
	return rc;
}

/*
 * What get, update and delete of one resource share: the description for
 * errors ("vertex: VERB persistent resource NAME"), the project and region
 * out of the name, and the URL of NAME with key=value. The caller frees all.
 */
static int named_setup(struct persistent_client *c, const char *verb, const char *name, const char *key,
		       const char *value, char **what, char **region, char **url, struct vx_err *err)
{
	char *shown = vx_text_clean(name ? name : "");

	*region = *url = NULL;
	*what = shown ? vx_asprintf("vertex: %s persistent resource %s", verb, shown) : NULL;
	free(shown);
	if (!*what)
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!persistent_name_check(name, NULL, NULL))
		return vx_err_set(err, VX_EINVAL, "%s: not a persistent resource name "
						  "(projects/P/locations/R/" COLLECTION "/ID)",
				  *what);
	if (!(*region = name_region(name)) || !(*url = region_url(c, *region, name, key, value)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", *what);
	return 0;
}

/* The project segment of a checked name, copied. */
static char *name_project(const char *name)
{
	return strndup(name + 9, strcspn(name + 9, "/"));
}

static int resource_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return persistent_resource_parse_json(body, len, out, err);
}

int persistent_get(struct persistent_client *c, const char *name, struct persistent_resource *out,
		   struct vx_err *err)
{
	char *what = NULL, *url = NULL, *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = named_setup(c, "reading", name, NULL, NULL, &what, &region, &url, err)) == 0)
		rc = vertex_read(c->http, url, region, "GetPersistentResource", what, resource_parse, out, err);
	free(region);
	free(url);
	free(what);
	return rc;
}

/* What each page of persistent_list needs. */
struct list_pages {
	struct persistent_client *c;
	const char *base, *region, *page_size, *what;
	struct persistent_list *out;
};

static int list_page(void *ud, const char *token, char **next, struct vx_err *err)
{
	struct list_pages *p = ud;
	struct gcp_response resp = { 0 };
	struct vx_buf url = VX_BUF_INIT;
	int rc;

	rc = vx_buf_adds(&url, p->base);
	if (rc == 0 && p->page_size)
		rc = gcall_add_query(&url, "pageSize", p->page_size);
	if (rc == 0 && token)
		rc = gcall_add_query(&url, "pageToken", token);
	if (rc < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
		goto done;
	}
	rc = call(p->c, "GET", vx_buf_str(&url), NULL, p->region, GCP_RETRY_SAFE, "ListPersistentResources",
		  p->what, &resp, err);
	if (rc == 0 && (rc = persistent_list_parse_json(resp.body, resp.body_len, p->out, next, err)) < 0)
		gcall_wrap(err, "vertex", p->what);
done:
	gcp_response_release(&resp);
	vx_buf_release(&url);
	return rc;
}

static void listed_rel(void *r)
{
	persistent_resource_release(r);
}

/*
 * A listed resource whose name is not a persistentResources name of this
 * project and region is nobody's to act on: vx would adopt, patch or delete
 * whatever the name points at. It is left out, with a warning.
 */
static const struct vertex_listed listed_resources = {
	sizeof(struct persistent_resource), offsetof(struct persistent_resource, name), persistent_name_check,
	listed_rel, "resource", COLLECTION, "changed",
};

int persistent_list(struct persistent_client *c, const char *project, const char *region, int page_size,
		    struct persistent_list *out, struct vx_err *err)
{
	struct list_pages p = { c, NULL, region, NULL, NULL, out };
	char *what = NULL, *base = NULL, *path = NULL, size_text[32];
	int rc = 0;

	if (!(what = vx_asprintf("vertex: listing persistent resources in %s", region ? region : "")))
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!gcall_segment_ok(project, ":") || !region || !region_ok(region)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or region", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/%s/" COLLECTION, project, region)) ||
	    !(base = region_url(c, region, path, NULL, NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	snprintf(size_text, sizeof(size_text), "%d", page_size);
	p.base = base;
	p.page_size = page_size > 0 ? size_text : NULL;
	p.what = what;
	if ((rc = gcall_pages(list_page, &p, what, err)) == 0)
		vertex_drop_bad_names(c->ctx, &listed_resources, out->items, &out->n, project, region, what);
done:
	if (rc < 0)
		persistent_list_release(out);
	free(base);
	free(path);
	free(what);
	return rc;
}

/* "resourcePools,labels" for mask; NULL when mask is empty or has unknown bits. */
static const char *mask_paths(unsigned mask)
{
	switch (mask) {
	case PERSISTENT_UPDATE_POOLS: return "resourcePools";
	case PERSISTENT_UPDATE_LABELS: return "labels";
	case PERSISTENT_UPDATE_POOLS | PERSISTENT_UPDATE_LABELS: return "resourcePools,labels";
	default: return NULL;
	}
}

int persistent_update(struct persistent_client *c, const char *name, unsigned mask, const char *spec_json,
		      const struct vx_label *labels, size_t n_labels, struct persistent_operation *op,
		      struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *url = NULL, *region = NULL, *body = NULL, *project = NULL;
	const char *paths = mask_paths(mask);
	int rc;

	memset(op, 0, sizeof(*op));
	if ((rc = named_setup(c, "updating", name, "updateMask", paths ? paths : "", &what, &region, &url,
			      err)) < 0)
		goto done;
	if (!paths) {
		rc = vx_err_set(err, VX_EINVAL, "%s: no field to update, or one that cannot be updated in place",
				what);
		goto done;
	}
	if ((rc = persistent_body(&body, spec_json, labels, n_labels, err)) < 0) {
		gcall_wrap(err, "vertex", what);
		goto done;
	}
	if (!(project = name_project(name))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "PATCH", url, body, region, GCP_RETRY_NEVER, "UpdatePersistentResource", what, &resp, err);
	if (rc == 0)
		rc = first_operation(&resp, project, region, 1, what, op, err);
done:
	gcp_response_release(&resp);
	free(project);
	free(body);
	free(region);
	free(url);
	free(what);
	return rc;
}

int persistent_delete(struct persistent_client *c, const char *name, struct persistent_operation *op,
		      struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *url = NULL, *region = NULL, *project = NULL;
	int rc;

	memset(op, 0, sizeof(*op));
	if ((rc = named_setup(c, "deleting", name, NULL, NULL, &what, &region, &url, err)) < 0)
		goto done;
	if (!(project = name_project(name))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "DELETE", url, NULL, region, GCP_RETRY_SAFE, "DeletePersistentResource", what, &resp, err);
	if (rc == 0)
		rc = first_operation(&resp, project, region, 0, what, op, err);
done:
	gcp_response_release(&resp);
	free(project);
	free(region);
	free(url);
	free(what);
	return rc;
}

/* ---- operations ---- */

static const char *const code_names[] = {
	"OK",
	"CANCELLED",
	"UNKNOWN",
	"INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED",
	"NOT_FOUND",
	"ALREADY_EXISTS",
	"PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION",
	"ABORTED",
	"OUT_OF_RANGE",
	"UNIMPLEMENTED",
	"INTERNAL",
	"UNAVAILABLE",
	"DATA_LOSS",
	"UNAUTHENTICATED",
};

/* The VX_E* for a failed operation's google.rpc.Code (see persistent_operation_wait). */
static int op_code(int code)
{
	switch (code) {
	case 5: return VX_ENOTFOUND;
	case 6:
	case 10: return VX_ECONFLICT;
	case 7: return VX_EDENIED;
	case 16: return VX_EAUTH;
	case 3:
	case 9:
	case 11: return VX_EINVAL;
	default: return VX_EAPI;
	}
}

static int op_failure(const struct persistent_operation *op, const char *what, struct vx_err *err)
{
	char num[32];
	const char *name = num;

	if (!op->error_code && !op->error_message)
		return 0;
	if (op->error_code >= 0 && (size_t)op->error_code < sizeof(code_names) / sizeof(code_names[0]))
		name = code_names[op->error_code];
	else
		snprintf(num, sizeof(num), "code %d", op->error_code);
	return vx_err_set(err, op_code(op->error_code), "%s: operation %s failed: %s: %s", what, op->name,
			  name, op->error_message ? op->error_message : "(no message)");
}

static int op_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return persistent_operation_parse_json(body, len, out, err);
}

/* One poll: GET url into *op, keeping its name when the answer has none. */
static int poll_once(struct persistent_client *c, const char *url, const char *region, const char *what,
		     struct persistent_operation *op, struct vx_err *err)
{
	struct persistent_operation next = PERSISTENT_OPERATION_INIT;
	int rc;

	if ((rc = vertex_read(c->http, url, region, "GetOperation", what, op_parse, &next, err)) < 0)
		return rc;
	/* The URL was built from the name vx checked: that one stays. */
	free(next.name);
	next.name = op->name;
	op->name = NULL;
	persistent_operation_release(op);
	*op = next;
	return 0;
}

int persistent_operation_wait(struct persistent_client *c, const char *project, const char *region,
			      struct persistent_operation *op, int64_t timeout_ms, const char *what,
			      struct vx_err *err)
{
	char *url = NULL, *own_what = NULL;
	int64_t deadline, delay = POLL_FIRST_MS;
	int rc = 0;

	if (!what) {
		char *shown = vx_text_clean(op->name ? op->name : "");

		what = own_what = shown ? vx_asprintf("vertex: waiting for operation %s", shown) : NULL;
		free(shown);
		if (!what)
			return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	}
	deadline = vx_mono_ms(c->ctx) + (timeout_ms > 0 ? timeout_ms : WAIT_TIMEOUT_MS);
	if (!op->done) {
		/* It came from the server: only this service's own shapes go into a URL. */
		if (!persistent_operation_name_check(op->name, project, region)) {
			rc = vx_err_set(err, VX_EAPI, "%s: the operation has no usable name", what);
			goto done;
		}
		if (!(url = gcall_region_url(c->base_url, region, op->name))) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
	}
	while (!op->done) {
		int64_t left = deadline - vx_mono_ms(c->ctx);

		if (vx_interrupted(c->ctx)) {
			rc = vx_err_set(err, VX_ECANCELED, "%s: interrupted while waiting for %s", what, op->name);
			goto done;
		}
		if (left <= 0) {
			rc = vx_err_set(err, VX_ERETRY, "%s: operation %s not done in time", what, op->name);
			goto done;
		}
		vx_log(c->ctx, VX_LOG_DEBUG, "vertex: operation %s not done%s%s; polling again in %lld ms", op->name,
		       op->progress_message ? ": " : "", op->progress_message ? op->progress_message : "",
		       (long long)(delay < left ? delay : left));
		vx_sleep_ms(c->ctx, delay < left ? delay : left);
		delay = delay * 13 / 10 > POLL_MAX_MS ? POLL_MAX_MS : delay * 13 / 10;
		if ((rc = poll_once(c, url, region, what, op, err)) < 0)
			goto done;
	}
	rc = op_failure(op, what, err);
done:
	free(url);
	free(own_what);
	return rc;
}
