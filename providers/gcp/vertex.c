#include "providers/gcp/vertex.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/vertex_internal.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "util/timefmt.h"

#include "util/banned.h"

#define LIST_MASK "name,displayName,state,labels,createTime,startTime,endTime,updateTime,error"
#define POLL_FIRST_MS 1000
#define POLL_MAX_MS 60000
#define DELETE_TIMEOUT_MS (30 * 60 * 1000)

static const char *const state_names[] = {
	"JOB_STATE_UNSPECIFIED", "JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING",
	"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED",
	"JOB_STATE_PAUSED", "JOB_STATE_EXPIRED", "JOB_STATE_UPDATING",
	"JOB_STATE_PARTIALLY_SUCCEEDED", "JOB_STATE_UNKNOWN",
};

const char *vertex_job_state_name(enum vertex_job_state s)
{
	if ((int)s < 0 || (int)s > VERTEX_JOB_STATE_UNKNOWN)
		return "JOB_STATE_UNKNOWN";
	return state_names[s];
}

enum vertex_job_state vertex_job_state_parse(const char *s)
{
	char *end = NULL;
	long v;
	int i;

	if (!s || !*s)
		return VERTEX_JOB_STATE_UNKNOWN;
	for (i = 0; i < VERTEX_JOB_STATE_UNKNOWN; i++)
		if (!strcmp(s, state_names[i]))
			return (enum vertex_job_state)i;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v >= VERTEX_JOB_STATE_UNKNOWN)
		return VERTEX_JOB_STATE_UNKNOWN;
	return (enum vertex_job_state)v;
}

/* One copy of the sets: the provider interface's, by the state's name. */
int vertex_job_state_is_terminal(enum vertex_job_state s)
{
	return job_state_is_terminal(vertex_job_state_name(s));
}

int vertex_job_state_is_active(enum vertex_job_state s)
{
	return job_state_is_active(vertex_job_state_name(s));
}

void vertex_job_release(struct vertex_job *job)
{
	if (!job)
		return;
	free(job->name);
	free(job->display_name);
	free(job->state_name);
	vx_labels_free(job->labels, job->n_labels);
	free(job->error_message);
	free(job->job_spec_json);
	memset(job, 0, sizeof(*job));
}

const char *vertex_job_label(const struct vertex_job *job, const char *key)
{
	return job && key ? vx_labels_get(job->labels, job->n_labels, key) : NULL;
}

void vertex_job_list_release(struct vertex_job_list *list)
{
	size_t i;

	if (!list)
		return;
	for (i = 0; i < list->n; i++)
		vertex_job_release(&list->items[i]);
	free(list->items);
	list->items = NULL;
	list->n = list->alloc = 0;
}

void vertex_operation_release(struct vertex_operation *op)
{
	if (!op)
		return;
	free(op->name);
	free(op->error_message);
	memset(op, 0, sizeof(*op));
}

/* ---- names and URLs ---- */

/*
 * A resource name goes into the URL path as it is, so it must be made of
 * non-empty URL-safe segments ("projects/p/locations/r/..."), never "." or
 * "..", at least 4 segments long, starting with projects/P/locations/R.
 */
static int name_ok(const char *name)
{
	const char *p, *seg;
	size_t nseg = 0;

	if (!name || strncmp(name, "projects/", 9))
		return 0;
	for (p = seg = name;; p++) {
		if (*p == '/' || *p == '\0') {
			size_t n = (size_t)(p - seg);

			if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && !strncmp(seg, "..", 2)))
				return 0;
			nseg++;
			if (*p == '\0')
				break;
			seg = p + 1;
			continue;
		}
		if (!gcall_unreserved(*p))
			return 0;
	}
	seg = strchr(name + 9, '/');
	return nseg >= 4 && seg && !strncmp(seg, "/locations/", 11);
}

/* Reads the segment at *p up to the next '/' or the end; it must be what (when not NULL),
 * else pass ok (a segment with neither is refused). */
static int name_segment(const char **p, const char *what, int (*ok)(const char *, size_t))
{
	size_t n = strcspn(*p, "/");

	if (n == 0 || (what && (strlen(what) != n || strncmp(*p, what, n))) || (!what && (!ok || !ok(*p, n))))
		return 0;
	*p += n;
	return 1;
}

static int digits_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 20)
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int project_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 2 && !strncmp(s, "..", 2))
		return 0;
	for (i = 0; i < n; i++)
		if (!gcall_unreserved(s[i]) && s[i] != ':')
			return 0;
	return n > 0 && !(n == 1 && s[0] == '.');
}

static int region_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return n > 0;
}

/*
 * name is exactly projects/{P}/locations/{R}/{collection}/{id}, id decimal.
 * P is project, or a project number (Google names resources by number even
 * when asked by id, and vx cannot tell which number is the project's without
 * another API); with project NULL any project segment. R is region, or any
 * [a-z0-9-]+ with region NULL.
 */
static int name_check(const char *name, const char *project, const char *region,
		      const char *collection)
{
	const char *p = name, *seg;
	size_t n;

	if (!name || strncmp(p, "projects/", 9))
		return 0;
	seg = p += 9;
	if (!name_segment(&p, NULL, project_ok))
		return 0;
	n = (size_t)(p - seg);
	if (project && !(n == strlen(project) && !strncmp(seg, project, n)) && !digits_ok(seg, n))
		return 0;
	if (strncmp(p, "/locations/", 11))
		return 0;
	p += 11;
	if (!name_segment(&p, region, region_ok) || *p++ != '/' || !name_segment(&p, collection, NULL) ||
	    *p++ != '/' || !name_segment(&p, NULL, digits_ok))
		return 0;
	return *p == '\0';
}

int vertex_job_name_check(const char *name, const char *project, const char *region)
{
	return name_check(name, project, region, "customJobs");
}

int vertex_job_name_region(const char *name, char **out)
{
	const char *r, *e;

	*out = NULL;
	if (!name || !name_ok(name))
		return VX_EINVAL;
	r = strchr(name + 9, '/');
	if (!r)
		return VX_EINVAL;
	r += 11;
	e = strchr(r, '/');
	if (!e)
		e = r + strlen(r);
	*out = strndup(r, (size_t)(e - r));
	return *out ? 0 : VX_ENOMEM;
}

int vertex_send(struct gcp_http *http, const struct gcp_fence *fence, const char *method, const char *url,
		const char *body, const char *region, int is_create, enum gcp_retry retry, const char *rpc,
		const char *what, struct gcp_response *resp, struct vx_err *err)
{
	struct gcp_request req;

	gcall_request_init(&req, "aiplatform", method, url, body, retry, rpc);
	req.region = region;
	req.is_create = is_create;
	if (strcmp(method, "GET") != 0)
		req.fence = fence;
	return gcall_send(http, &req, "vertex", what, resp, err);
}

int vertex_read(struct gcp_http *http, const char *url, const char *region, const char *rpc, const char *what,
		vertex_parse_fn parse, void *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	rc = vertex_send(http, NULL, "GET", url, NULL, region, 0, GCP_RETRY_SAFE, rpc, what, &resp, err);
	if (rc == 0 && (rc = parse(resp.body, resp.body_len, out, err)) < 0)
		gcall_wrap(err, "vertex", what);
	gcp_response_release(&resp);
	return rc;
}

/* One request of this client (vertex_send). */
static int call(struct vertex_client *c, const char *method, const char *url, const char *body,
		const char *region, int is_create, enum gcp_retry retry, const char *rpc,
		const char *what, struct gcp_response *resp, struct vx_err *err)
{
	return vertex_send(c->http, c->fence, method, url, body, region, is_create, retry, rpc, what, resp,
			   err);
}

/* ---- time ---- */

/* Google writes any RFC 3339 form: offsets, nanoseconds, lower-case t. */
int vertex_time_parse(const char *s, int64_t *out_ms)
{
	return vx_time_parse(out_ms, s, 0);
}

void vertex_js_time(const cJSON *o, const char *key, int64_t *out)
{
	int64_t v;

	*out = 0;
	if (vertex_time_parse(gjson_str(o, key), &v) == 0)
		*out = v;
}

/* ---- parsers ---- */

int vertex_dup_text(char **out, const cJSON *o, const char *key)
{
	const char *s = gjson_str(o, key);

	*out = NULL;
	if (!s)
		return 0;
	*out = vx_text_clean(s);
	return *out ? 0 : VX_ENOMEM;
}

int vertex_parse_status(const cJSON *st, int *code, char **message)
{
	int64_t v;

	*code = 0;
	*message = NULL;
	if (!cJSON_IsObject(st))
		return 0;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(st, "code"), INT_MIN, INT_MAX, &v) == 0)
		*code = (int)v;
	return vertex_dup_text(message, st, "message");
}

static int job_from(const cJSON *o, void *dst)
{
	struct vertex_job *job = dst;
	const cJSON *it, *labels, *state;
	size_t n = 0;
	int rc;

	if ((rc = gjson_dup(&job->name, o, "name")) < 0 ||
	    (rc = vertex_dup_text(&job->display_name, o, "displayName")) < 0)
		return rc;
	state = cJSON_GetObjectItemCaseSensitive(o, "state");
	if (cJSON_IsString(state)) {
		job->state = vertex_job_state_parse(state->valuestring);
		if (!(job->state_name = vx_text_clean(state->valuestring)))
			return VX_ENOMEM;
	} else if (cJSON_IsNumber(state)) {
		int64_t v;

		if (gjson_int(state, 0, INT_MAX, &v) == 0 && v < VERTEX_JOB_STATE_UNKNOWN)
			job->state = (enum vertex_job_state)v;
		else
			job->state = VERTEX_JOB_STATE_UNKNOWN;
		if (!(job->state_name = strdup(vertex_job_state_name(job->state))))
			return VX_ENOMEM;
	}
	labels = cJSON_GetObjectItemCaseSensitive(o, "labels");
	if (cJSON_IsObject(labels)) {
		cJSON_ArrayForEach(it, labels)
			if (cJSON_IsString(it) && it->string)
				n++;
		if (n) {
			job->labels = calloc(n, sizeof(*job->labels));
			if (!job->labels)
				return VX_ENOMEM;
			cJSON_ArrayForEach(it, labels) {
				struct vx_label *l;

				if (!cJSON_IsString(it) || !it->string)
					continue;
				l = &job->labels[job->n_labels++];
				l->key = strdup(it->string);
				l->value = strdup(it->valuestring);
				if (!l->key || !l->value)
					return VX_ENOMEM;
			}
		}
	}
	vertex_js_time(o, "createTime", &job->create_time_ms);
	vertex_js_time(o, "startTime", &job->start_time_ms);
	vertex_js_time(o, "endTime", &job->end_time_ms);
	vertex_js_time(o, "updateTime", &job->update_time_ms);
	if ((rc = vertex_parse_status(cJSON_GetObjectItemCaseSensitive(o, "error"), &job->error_code,
			       &job->error_message)) < 0)
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(o, "jobSpec");
	if (cJSON_IsObject(it) && !(job->job_spec_json = cJSON_PrintUnformatted(it)))
		return VX_ENOMEM;
	return 0;
}

static void job_rel(void *job)
{
	vertex_job_release(job);
}

int vertex_job_parse_json(const char *body, size_t len, struct vertex_job *out, struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), job_from, job_rel, "vertex: reading job",
			       err);
}

int vertex_list_parse_json(const char *body, size_t len, struct vertex_job_list *list,
			   char **next_page_token, struct vx_err *err)
{
	void *items = list->items;
	int rc;

	rc = gjson_parse_page(body, len, "customJobs", &items, &list->n, &list->alloc,
			      sizeof(*list->items), job_from, job_rel, next_page_token,
			      "vertex: reading job list", err);
	list->items = items;
	return rc;
}

int vertex_operation_parse_json(const char *body, size_t len, struct vertex_operation *out,
				struct vx_err *err)
{
	cJSON *root = NULL;
	const cJSON *done;
	int rc;

	memset(out, 0, sizeof(*out));
	root = gjson_parse_object(body, len, "vertex: reading operation", err);
	if (!root)
		return VX_EINVAL;
	done = cJSON_GetObjectItemCaseSensitive(root, "done");
	out->done = cJSON_IsTrue(done);
	rc = gjson_dup(&out->name, root, "name");
	if (rc == 0)
		rc = vertex_parse_status(cJSON_GetObjectItemCaseSensitive(root, "error"), &out->error_code,
				  &out->error_message);
	/* An error says it is finished even if "done" is missing. */
	if (rc == 0 && (out->error_code != 0 || out->error_message))
		out->done = 1;
	cJSON_Delete(root);
	if (rc < 0) {
		vertex_operation_release(out);
		return vx_err_set(err, rc, "vertex: reading operation: out of memory");
	}
	return 0;
}

/* ---- filters ---- */

static int label_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

int vertex_filter_labels(char **out, const struct vx_label *labels, size_t n,
			 struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	size_t i;
	int rc = 0;

	*out = NULL;
	for (i = 0; i < n && rc == 0; i++) {
		const char *k = labels[i].key, *v = labels[i].value, *p;
		int bare = 1;

		if (!k || !*k || !v) {
			rc = vx_err_set(err, VX_EINVAL, "vertex: label filter: empty label key or value");
			break;
		}
		for (p = k; *p; p++)
			if (!label_char(*p)) {
				rc = vx_err_set(err, VX_EINVAL,
						"vertex: label filter: label key \"%s\" has a character "
						"other than [a-z0-9_-]", k);
				break;
			}
		if (rc < 0)
			break;
		for (p = v; *p; p++)
			if (!label_char(*p))
				bare = 0;
		if (!*v)
			bare = 0;
		rc = vx_buf_printf(&b, "%slabels.%s=", i ? " AND " : "", k);
		if (rc == 0 && bare)
			rc = vx_buf_adds(&b, v);
		else if (rc == 0) {
			rc = vx_buf_addc(&b, '"');
			for (p = v; *p && rc == 0; p++) {
				if (*p == '"' || *p == '\\')
					rc = vx_buf_addc(&b, '\\');
				if (rc == 0)
					rc = vx_buf_addc(&b, *p);
			}
			if (rc == 0)
				rc = vx_buf_addc(&b, '"');
		}
		if (rc < 0 && rc != VX_EINVAL)
			vx_err_set(err, rc, "vertex: label filter: out of memory");
		else if (rc < 0)
			vx_err_set(err, rc, "vertex: label filter: too long");
	}
	if (rc == 0 && !(*out = vx_buf_detach(&b)))
		rc = vx_err_set(err, VX_ENOMEM, "vertex: label filter: out of memory");
	vx_buf_release(&b);
	return rc;
}

/* ---- calls ---- */

int vertex_create_job(struct vertex_client *c, const char *project, const char *region,
		      const char *display_name, const struct vx_label *label_list, size_t n_labels,
		      const char *job_spec_json, struct vertex_job *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	cJSON *spec = NULL, *root = NULL, *labels = NULL;
	char *what = NULL, *url = NULL, *path = NULL, *body = NULL;
	size_t i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	what = vx_asprintf("vertex: creating job \"%s\" in %s", display_name ? display_name : "",
			   region ? region : "");
	if (!what)
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(region, NULL) || !display_name || !*display_name) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, region or display name", what);
		goto done;
	}
	spec = job_spec_json ? cJSON_Parse(job_spec_json) : NULL;
	if (!cJSON_IsObject(spec)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: the job spec is not a JSON object", what);
		goto done;
	}
	if (!(root = cJSON_CreateObject()) || !cJSON_AddStringToObject(root, "displayName", display_name) ||
	    !cJSON_AddRawToObject(root, "jobSpec", job_spec_json))
		goto oom;
	if (n_labels) {
		if (!(labels = cJSON_AddObjectToObject(root, "labels")))
			goto oom;
		for (i = 0; i < n_labels; i++) {
			if (!label_list[i].key || !label_list[i].value) {
				rc = vx_err_set(err, VX_EINVAL, "%s: a label has no key or value", what);
				goto done;
			}
			if (!cJSON_AddStringToObject(labels, label_list[i].key, label_list[i].value))
				goto oom;
		}
	}
	if (!(body = cJSON_PrintUnformatted(root)) ||
	    !(path = vx_asprintf("projects/%s/locations/%s/customJobs", project, region)) ||
	    !(url = gcall_region_url(c->base_url, region, path)))
		goto oom;
	rc = call(c, "POST", url, body, region, 1, GCP_RETRY_NEVER, "CreateCustomJob", what, &resp, err);
	if (rc < 0)
		goto done;
	if ((rc = vertex_job_parse_json(resp.body, resp.body_len, out, err)) < 0) {
		/* The server said yes but not what it made: the job may well exist. */
		gcall_wrap(err, "vertex", what);
		if (rc != VX_ENOMEM)
			rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome is unknown", vx_err_msg(err));
		goto done;
	}
	if (!vertex_job_name_check(out->name, project, region)) {
		char *shown = vx_text_clean(out->name);

		rc = vx_err_set(err, VX_EUNCERTAIN, "%s: the answer %s%s%s; the outcome is unknown", what,
				out->name ? "names no job of this project and region: \"" :
				"has no job name", shown ? shown : "", out->name ? "\"" : "");
		free(shown);
		vertex_job_release(out);
	}
	goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	gcp_response_release(&resp);
	cJSON_Delete(spec);
	cJSON_Delete(root);
	free(body);
	free(path);
	free(url);
	free(what);
	return rc;
}

/*
 * What get, cancel and delete of one job share: the description for errors
 * ("vertex: VERB job NAME"), the region out of the name, and the URL of
 * NAME followed by suffix (":cancel" or ""). The caller frees all three.
 */
static int job_call_setup(struct vertex_client *c, const char *verb, const char *name,
			  const char *suffix, char **what, char **region, char **url,
			  struct vx_err *err)
{
	char *path = NULL, *shown = vx_text_clean(name ? name : "");
	int rc = 0;

	*region = *url = NULL;
	*what = shown ? vx_asprintf("vertex: %s job %s", verb, shown) : NULL;
	free(shown);
	if (!*what)
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!vertex_job_name_check(name, NULL, NULL) || (rc = vertex_job_name_region(name, region)) < 0)
		return vx_err_set(err, rc < 0 ? rc : VX_EINVAL, "%s: not a job resource name", *what);
	if (!(path = vx_asprintf("%s%s", name, suffix)) || !(*url = gcall_region_url(c->base_url, *region, path)))
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", *what);
	free(path);
	return rc;
}

static int job_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return vertex_job_parse_json(body, len, out, err);
}

static int op_parse(const char *body, size_t len, void *out, struct vx_err *err)
{
	return vertex_operation_parse_json(body, len, out, err);
}

int vertex_get_job(struct vertex_client *c, const char *name, struct vertex_job *out,
		   struct vx_err *err)
{
	char *what = NULL, *url = NULL, *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = job_call_setup(c, "reading", name, "", &what, &region, &url, err)) == 0)
		rc = vertex_read(c->http, url, region, "GetCustomJob", what, job_parse, out, err);
	free(region);
	free(url);
	free(what);
	return rc;
}

/*
 * Pages are parsed on a thread of their own while the next one is fetched:
 * the next request needs only the page token, which a scan finds
 * (gjson_scan_page_token), so a list of N pages costs N round trips and
 * not N round trips plus N parses. The parser takes the pages in order and
 * must find the same token; a page the scan is unsure of is parsed in line
 * once the parser has caught up. The first failure stops the fetching.
 */
#define LIST_QUEUE 4

struct list_body {
	char *body, *token;
	size_t len;
};

/* What each page of vertex_list_jobs needs. */
struct list_pages {
	struct vertex_client *c;
	const char *base, *region, *filter, *page_size, *read_mask, *what;
	struct vertex_job_list *out;
	int threaded;                 /* the parser thread runs */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct list_body q[LIST_QUEUE];
	size_t head, count;
	int busy;                     /* the parser holds a page */
	int ending;                   /* no page will come */
	int rc;                       /* the parser's first failure, in err */
	struct vx_err err;
};

static void *list_parser(void *arg)
{
	struct list_pages *p = arg;

	for (;;) {
		struct list_body lb;
		char *token = NULL;
		int rc;

		pthread_mutex_lock(&p->lock);
		while (!p->count && !p->ending)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->count) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		lb = p->q[p->head];
		p->head = (p->head + 1) % LIST_QUEUE;
		p->count--;
		p->busy = 1;
		rc = p->rc;
		pthread_mutex_unlock(&p->lock);
		if (rc == 0) {
			rc = vertex_list_parse_json(lb.body, lb.len, p->out, &token, &p->err);
			if (rc < 0)
				gcall_wrap(&p->err, "vertex", p->what);
			else if (!vx_text_same(token, lb.token))
				rc = vx_err_set(&p->err, VX_EAPI, "%s: the page token read ahead differs "
						"from the page's", p->what);
		}
		free(token);
		free(lb.body);
		free(lb.token);
		pthread_mutex_lock(&p->lock);
		if (rc < 0 && p->rc == 0)
			p->rc = rc;
		p->busy = 0;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
}

/* Waits until the parser has room (idle: has taken every page). Returns its failure, if any. */
static int parser_wait(struct list_pages *p, int idle, struct vx_err *err)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	while (p->rc == 0 && (idle ? p->count || p->busy : p->count == LIST_QUEUE))
		pthread_cond_wait(&p->cond, &p->lock);
	rc = p->rc;
	pthread_mutex_unlock(&p->lock);
	if (rc < 0)
		vx_err_set(err, rc, "%s", vx_err_msg(&p->err));
	return rc;
}

static int list_page(void *ud, const char *token, char **next, struct vx_err *err)
{
	struct list_pages *p = ud;
	struct gcp_response resp = { 0 };
	struct vx_buf url = VX_BUF_INIT;
	char *ahead = NULL;
	int rc;

	rc = vx_buf_adds(&url, p->base);
	if (rc == 0 && p->filter && *p->filter)
		rc = gcall_add_query(&url, "filter", p->filter);
	if (rc == 0 && p->page_size)
		rc = gcall_add_query(&url, "pageSize", p->page_size);
	if (rc == 0 && token)
		rc = gcall_add_query(&url, "pageToken", token);
	if (rc == 0)
		rc = gcall_add_query(&url, "readMask", p->read_mask);
	if (rc < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
		goto done;
	}
	if (p->threaded && (rc = parser_wait(p, 0, err)) < 0)
		goto done;
	rc = call(p->c, "GET", vx_buf_str(&url), NULL, p->region, 0, GCP_RETRY_SAFE, "ListCustomJobs",
		  p->what, &resp, err);
	if (rc < 0)
		goto done;
	if (p->threaded && (rc = gjson_scan_page_token(resp.body, resp.body_len, &ahead)) == 1) {
		char *copy = ahead ? strdup(ahead) : NULL;

		if (ahead && !copy) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
			goto done;
		}
		pthread_mutex_lock(&p->lock);
		p->q[(p->head + p->count) % LIST_QUEUE] = (struct list_body){ resp.body, copy, resp.body_len };
		p->count++;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		resp.body = NULL;
		*next = ahead;
		ahead = NULL;
		rc = 0;
		goto done;
	}
	if (rc < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
		goto done;
	}
	/* Parsed here, after the pages before it. */
	if (p->threaded && (rc = parser_wait(p, 1, err)) < 0)
		goto done;
	if ((rc = vertex_list_parse_json(resp.body, resp.body_len, p->out, next, err)) < 0)
		gcall_wrap(err, "vertex", p->what);
done:
	free(ahead);
	gcp_response_release(&resp);
	vx_buf_release(&url);
	return rc;
}

void vertex_drop_bad_names(const struct vx_ctx *ctx, const struct vertex_listed *k, void *items, size_t *n,
			   const char *project, const char *region, const char *what)
{
	char *base = items;
	size_t i, kept = 0;

	for (i = 0; i < *n; i++) {
		char *item = base + i * k->elem, *shown;
		const char *name;

		memcpy(&name, item + k->name_off, sizeof(name));
		if (k->name_check(name, project, region)) {
			if (kept != i)
				memcpy(base + kept * k->elem, item, k->elem);
			kept++;
			continue;
		}
		shown = vx_text_clean(name ? name : "");
		vx_log(ctx, VX_LOG_WARN, "%s: ignored a %s listed with an invalid name \"%s\" "
		       "(not projects/%s/locations/%s/%s/ID); it is neither adopted nor %s",
		       what, k->noun, shown ? shown : "", project, region, k->collection, k->not_done);
		free(shown);
		k->release(item);
	}
	*n = kept;
}

static void job_release(void *job)
{
	vertex_job_release(job);
}

/*
 * A listed job whose name is not a customJobs name of this project and
 * region is nobody's to act on: vx would cancel or adopt whatever the name
 * points at (another job, another path). It is left out, with a warning.
 */
static const struct vertex_listed listed_jobs = {
	sizeof(struct vertex_job), offsetof(struct vertex_job, name), vertex_job_name_check, job_release,
	"job", "customJobs", "cancelled",
};

int vertex_list_jobs(struct vertex_client *c, const char *project, const char *region,
		     const char *filter, int page_size, unsigned flags, struct vertex_job_list *out,
		     struct vx_err *err)
{
	struct list_pages p;
	char *what = NULL, *base = NULL, *path = NULL;
	char size_text[32];
	int rc = 0;

	memset(&p, 0, sizeof(p));
	p.c = c;
	p.region = region;
	p.filter = filter;
	p.out = out;
	if (!(what = vx_asprintf("vertex: listing jobs in %s", region ? region : "")))
		return vx_err_set(err, VX_ENOMEM, "vertex: out of memory");
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(region, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or region", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/%s/customJobs", project, region)) ||
	    !(base = gcall_region_url(c->base_url, region, path))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	snprintf(size_text, sizeof(size_text), "%d", page_size);
	p.base = base;
	p.page_size = page_size > 0 ? size_text : NULL;
	p.read_mask = (flags & VERTEX_LIST_WITH_SPEC) ? LIST_MASK ",jobSpec" : LIST_MASK;
	p.what = what;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	p.threaded = pthread_create(&p.thread, NULL, list_parser, &p) == 0;
	rc = gcall_pages(list_page, &p, what, err);
	if (p.threaded) {
		pthread_mutex_lock(&p.lock);
		p.ending = 1;
		pthread_cond_broadcast(&p.cond);
		pthread_mutex_unlock(&p.lock);
		pthread_join(p.thread, NULL);
		/* A page's parse failed first when the fetching went on past it. */
		if (p.rc < 0) {
			vx_err_release(err);
			rc = vx_err_set(err, p.rc, "%s", vx_err_msg(&p.err));
		}
	}
	vx_err_release(&p.err);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	if (rc == 0)
		vertex_drop_bad_names(c->ctx, &listed_jobs, out->items, &out->n, project, region, what);
done:
	if (rc < 0)
		vertex_job_list_release(out);
	free(base);
	free(path);
	free(what);
	return rc;
}

int vertex_cancel_job(struct vertex_client *c, const char *name, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *url = NULL, *region = NULL;
	int rc;

	if ((rc = job_call_setup(c, "cancelling", name, ":cancel", &what, &region, &url, err)) < 0)
		goto done;
	rc = call(c, "POST", url, "{}", region, 0, GCP_RETRY_SAFE, "CancelCustomJob", what, &resp, err);
done:
	gcp_response_release(&resp);
	free(region);
	free(url);
	free(what);
	return rc;
}

static int op_result(const struct vertex_operation *op, const char *what, struct vx_err *err)
{
	const char *status = op->error_code == 5 ? "NOT_FOUND" : NULL;

	if (!op->error_code && !op->error_message)
		return 0;
	if (status)
		return vx_err_set(err, VX_ENOTFOUND, "%s: %s: %s", what, status,
				  op->error_message ? op->error_message : "");
	return vx_err_set(err, VX_EAPI, "%s: operation failed with code %d: %s", what, op->error_code,
			  op->error_message ? op->error_message : "(no message)");
}

int vertex_delete_job(struct vertex_client *c, const char *name, int64_t timeout_ms,
		      struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct vertex_operation op = VERTEX_OPERATION_INIT;
	char *what = NULL, *url = NULL, *region = NULL, *op_url = NULL, *op_name = NULL;
	int64_t deadline, delay = POLL_FIRST_MS;
	int rc;

	if ((rc = job_call_setup(c, "deleting", name, "", &what, &region, &url, err)) < 0)
		goto done;
	deadline = vx_mono_ms(c->ctx) + (timeout_ms > 0 ? timeout_ms : DELETE_TIMEOUT_MS);
	rc = call(c, "DELETE", url, NULL, region, 0, GCP_RETRY_SAFE, "DeleteCustomJob", what, &resp, err);
	if (rc == 0 && (rc = vertex_operation_parse_json(resp.body, resp.body_len, &op, err)) < 0)
		gcall_wrap(err, "vertex", what);
	gcp_response_release(&resp);
	if (rc < 0)
		goto done;
	if (!op.done) {
		if (!op.name || !name_check(op.name, NULL, region, "operations")) {
			rc = vx_err_set(err, VX_EAPI, "%s: the operation has no usable name", what);
			goto done;
		}
		if (!(op_name = strdup(op.name)) || !(op_url = gcall_region_url(c->base_url, region, op.name))) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
	}
	while (!op.done) {
		int64_t left = deadline - vx_mono_ms(c->ctx);

		if (vx_interrupted(c->ctx)) {
			rc = vx_err_set(err, VX_ECANCELED, "%s: interrupted while waiting for %s", what,
					op_name);
			goto done;
		}
		if (left <= 0) {
			rc = vx_err_set(err, VX_ERETRY, "%s: operation %s not done in time", what, op_name);
			goto done;
		}
		vx_log(c->ctx, VX_LOG_DEBUG, "vertex: operation %s not done; polling again in %lld ms",
		       op_name, (long long)(delay < left ? delay : left));
		vx_sleep_ms(c->ctx, delay < left ? delay : left);
		delay = delay * 13 / 10;
		if (delay > POLL_MAX_MS)
			delay = POLL_MAX_MS;
		vertex_operation_release(&op);
		if ((rc = vertex_read(c->http, op_url, region, "GetOperation", what, op_parse, &op, err)) < 0)
			goto done;
	}
	rc = op_result(&op, what, err);
done:
	vertex_operation_release(&op);
	free(op_name);
	free(op_url);
	free(region);
	free(url);
	free(what);
	return rc;
}
