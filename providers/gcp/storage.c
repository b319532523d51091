#include "providers/gcp/storage.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "state/blobstore.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/ctx.h"

#include "util/rand.h"
#include "util/banned.h"

/* How many times a read starts over when the object changes under it. */
#define READ_TRIES 4

void storage_object_release(struct storage_object *o)
{
	if (!o)
		return;
	free(o->name);
	free(o->bucket);
	free(o->content_type);
	free(o->md5_hash);
	free(o->crc32c);
	free(o->etag);
	memset(o, 0, sizeof(*o));
}

/* A non-negative int64 sent as a decimal string (or a number). -1 when absent or invalid. */
static int js_i64(const cJSON *o, const char *key, int64_t *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(it) && it->valuestring[0] >= '0' && it->valuestring[0] <= '9') {
		char *end = NULL;
		long long v;

		errno = 0;
		v = strtoll(it->valuestring, &end, 10);
		if (errno || *end)
			return -1;
		*out = v;
		return 0;
	}
	if (cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble < 9007199254740992.0 &&
	    it->valuedouble == (double)(int64_t)it->valuedouble) {
		*out = (int64_t)it->valuedouble;
		return 0;
	}
	return -1;
}

int storage_object_parse_json(const char *body, size_t len, struct storage_object *out,
			      struct vx_err *err)
{
	cJSON *root = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	root = body ? gjson_parse(body, len) : NULL;
	if (!cJSON_IsObject(root)) {
		rc = vx_err_set(err, VX_EINVAL, "storage: reading object metadata: not a JSON object");
		goto done;
	}
	if (js_i64(root, "generation", &out->generation) < 0 || out->generation <= 0) {
		rc = vx_err_set(err, VX_EINVAL, "storage: reading object metadata: no valid generation");
		goto done;
	}
	if (js_i64(root, "metageneration", &out->metageneration) < 0)
		out->metageneration = 0;
	if (js_i64(root, "size", &out->size) < 0)
		out->size = 0;
	if ((rc = gjson_dup(&out->name, root, "name")) < 0 ||
	    (rc = gjson_dup(&out->bucket, root, "bucket")) < 0 ||
	    (rc = gjson_dup(&out->content_type, root, "contentType")) < 0 ||
	    (rc = gjson_dup(&out->md5_hash, root, "md5Hash")) < 0 ||
	    (rc = gjson_dup(&out->crc32c, root, "crc32c")) < 0 ||
	    (rc = gjson_dup(&out->etag, root, "etag")) < 0)
		vx_err_set(err, rc, "storage: reading object metadata: out of memory");
done:
	if (rc < 0)
		storage_object_release(out);
	cJSON_Delete(root);
	return rc;
}

/* ---- calls ---- */

static int bucket_ok(const char *b)
{
	size_t n = b ? strlen(b) : 0;

	if (n < 3 || n > 222)
		return 0;
	for (; *b; b++)
		if (!((*b >= 'a' && *b <= 'z') || (*b >= '0' && *b <= '9') || *b == '-' || *b == '_' ||
		      *b == '.'))
			return 0;
	return 1;
}

static int object_ok(const char *o)
{
	size_t n = o ? strlen(o) : 0;

	return n > 0 && n <= 1024 && strcmp(o, ".") && strcmp(o, "..") && !strchr(o, '\n') &&
	       !strchr(o, '\r');
}

/*
 * in_path: base + "b/B/o/<escaped object>[?query]"; otherwise (uploads)
 * base + "b/B/o?uploadType=multipart&name=<escaped object>[&query]".
 */
static char *object_url(const char *base, const char *bucket, const char *object, int in_path,
			const char *query)
{
	char *esc = gcp_url_escape(object), *url = NULL;
	size_t n = strlen(base);

	if (!esc)
		return NULL;
	if (in_path)
		url = vx_asprintf("%s%sb/%s/o/%s%s%s", base, n && base[n - 1] == '/' ? "" : "/", bucket,
				  esc, query ? "?" : "", query ? query : "");
	else
		url = vx_asprintf("%s%sb/%s/o?uploadType=multipart&name=%s%s%s", base,
				  n && base[n - 1] == '/' ? "" : "/", bucket, esc, query ? "&" : "",
				  query ? query : "");
	free(esc);
	return url;
}

static int call(struct storage_client *c, const char *method, const char *url, const char *body,
		size_t body_len, const char *content_type, enum gcp_retry retry, const char *rpc,
		const char *what, struct gcp_response *resp, struct vx_err *err)
{
	struct gcp_request req;
	static const char *const no_cache[] = { "Cache-Control: no-store", NULL };

	/* Bodies here are multipart, not JSON: set after the JSON defaults. */
	gcall_request_init(&req, "storage", method, url, NULL, retry, rpc);
	req.body = body;
	req.body_len = body_len;
	req.content_type = content_type;
	if (!strcmp(method, "GET"))
		req.headers = no_cache;
	return gcall_send(c->http, &req, "storage", what, resp, err);
}

static int stat_what(struct storage_client *c, const char *bucket, const char *object,
		     const char *what, struct storage_object *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *url = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(url = object_url(c->base_url, bucket, object, 1, NULL)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = call(c, "GET", url, NULL, 0, NULL, GCP_RETRY_SAFE, "GetObject", what, &resp, err);
	if (rc == 0 && (rc = storage_object_parse_json(resp.body, resp.body_len, out, err)) < 0)
		gcall_wrap(err, "storage", what);
	gcp_response_release(&resp);
	free(url);
	return rc;
}

int storage_object_stat(struct storage_client *c, const char *bucket, const char *object,
			struct storage_object *out, struct vx_err *err)
{
	char *what;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("storage: reading gs://%s/%s", bucket ? bucket : "",
				 object ? object : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	if (!bucket_ok(bucket) || !object_ok(object))
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket or object name", what);
	else
		rc = stat_what(c, bucket, object, what, out, err);
	free(what);
	return rc;
}

int storage_object_read(struct storage_client *c, const char *bucket, const char *object,
			char **data, size_t *len, int64_t *generation, struct vx_err *err)
{
	struct storage_object meta = STORAGE_OBJECT_INIT;
	char *what, *url = NULL, query[64];
	int rc = 0, tries;

	*data = NULL;
	*len = 0;
	*generation = 0;
	if (!(what = vx_asprintf("storage: reading gs://%s/%s", bucket ? bucket : "",
				 object ? object : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	if (!bucket_ok(bucket) || !object_ok(object)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket or object name", what);
		goto done;
	}
	for (tries = 0; tries < READ_TRIES; tries++) {
		struct gcp_response resp = { 0 };

		storage_object_release(&meta);
		if ((rc = stat_what(c, bucket, object, what, &meta, err)) < 0)
			goto done;
		snprintf(query, sizeof(query), "alt=media&ifGenerationMatch=%" PRId64, meta.generation);
		free(url);
		if (!(url = object_url(c->base_url, bucket, object, 1, query))) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
		rc = call(c, "GET", url, NULL, 0, NULL, GCP_RETRY_SAFE, "GetObjectMedia", what, &resp, err);
		if (rc == 0) {
			/* Hand the body over; an empty object has none. */
			*len = resp.body ? resp.body_len : 0;
			*data = resp.body ? resp.body : strdup("");
			resp.body = NULL;
			*generation = meta.generation;
			gcp_response_release(&resp);
			if (!*data)
				rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
		gcp_response_release(&resp);
		/* 412: replaced between the two calls; look again. */
		if (rc != VX_ECONFLICT)
			goto done;
	}
done:
	storage_object_release(&meta);
	free(url);
	free(what);
	return rc;
}

static int contains(const void *hay, size_t n, const char *needle)
{
	const char *h = hay;
	size_t m = strlen(needle), i;

	for (i = 0; m <= n && i <= n - m; i++)
		if (h[i] == needle[0] && !memcmp(h + i, needle, m))
			return 1;
	return 0;
}

/* A boundary that does not occur in the data. */
static int make_boundary(char out[40], const void *data, size_t len)
{
	unsigned char r[16];
	int tries;

	for (tries = 0; tries < 8; tries++) {
		if (vx_rand_bytes(NULL, NULL, r, sizeof(r), NULL) < 0)
			return VX_EIO;
		memcpy(out, "vx-", 3);
		vx_rand_hex(out + 3, r, sizeof(r));
		if (!len || !contains(data, len, out))
			return 0;
	}
	return VX_EIO;
}

int storage_object_write(struct storage_client *c, const char *bucket, const char *object,
			 const void *data, size_t len, const char *content_type,
			 int64_t if_generation_match, int64_t *new_generation,
			 struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct storage_object meta = STORAGE_OBJECT_INIT;
	struct vx_buf body = VX_BUF_INIT;
	cJSON *md = NULL;
	char *what = NULL, *url = NULL, *md_text = NULL, *ct = NULL, boundary[40], query[80] = "";
	int rc;

	if (new_generation)
		*new_generation = 0;
	if (!content_type)
		content_type = "application/json";
	if (!(what = vx_asprintf("storage: writing gs://%s/%s", bucket ? bucket : "",
				 object ? object : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	if (!bucket_ok(bucket) || !object_ok(object) || (!data && len) ||
	    strchr(content_type, '\r') || strchr(content_type, '\n')) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket, object name or content type", what);
		goto done;
	}
	if ((rc = make_boundary(boundary, data, len)) < 0) {
		vx_err_set(err, rc, "%s: no random bytes for a multipart boundary", what);
		goto done;
	}
	if (if_generation_match >= 0)
		snprintf(query, sizeof(query), "ifGenerationMatch=%" PRId64, if_generation_match);
	if (!(md = cJSON_CreateObject()) || !cJSON_AddStringToObject(md, "contentType", content_type) ||
	    !(md_text = cJSON_PrintUnformatted(md)) ||
	    !(url = object_url(c->upload_url, bucket, object, 0,
				  if_generation_match >= 0 ? query : NULL)) ||
	    !(ct = vx_asprintf("multipart/related; boundary=%s", boundary)))
		goto oom;
	if (vx_buf_printf(&body, "--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n"
			  "--%s\r\nContent-Type: %s\r\n\r\n", boundary, md_text, boundary, content_type) < 0 ||
	    (len && vx_buf_add(&body, data, len) < 0) ||
	    vx_buf_printf(&body, "\r\n--%s--\r\n", boundary) < 0)
		goto oom;
	rc = call(c, "POST", url, body.data, body.len, ct,
		  if_generation_match >= 0 ? GCP_RETRY_SAFE : GCP_RETRY_NEVER, "InsertObject", what, &resp,
		  err);
	if (rc == 0 && (rc = storage_object_parse_json(resp.body, resp.body_len, &meta, err)) < 0)
		gcall_wrap(err, "storage", what);
	if (rc == 0 && new_generation)
		*new_generation = meta.generation;
	goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	gcp_response_release(&resp);
	storage_object_release(&meta);
	vx_buf_release(&body);
	cJSON_Delete(md);
	free(md_text);
	free(ct);
	free(url);
	free(what);
	return rc;
}

/* The compose request's body: {"sourceObjects": [...], "destination": {"contentType"}}. */
static char *compose_body(const struct storage_compose_source *src, size_t n, const char *content_type)
{
	cJSON *root = cJSON_CreateObject(), *list = NULL, *dst = NULL;
	char *out = NULL;

	if (!root || !(list = cJSON_AddArrayToObject(root, "sourceObjects")))
		goto done;
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char gen[24];

		if (!o || !cJSON_AddItemToArray(list, o) || !cJSON_AddStringToObject(o, "name", src[i].name))
			goto done;
		snprintf(gen, sizeof(gen), "%" PRId64, src[i].generation);
		if (src[i].generation > 0 && !cJSON_AddStringToObject(o, "generation", gen))
			goto done;
	}
	if (!(dst = cJSON_AddObjectToObject(root, "destination")) ||
	    !cJSON_AddStringToObject(dst, "contentType", content_type))
		goto done;
	out = cJSON_PrintUnformatted(root);
done:
	cJSON_Delete(root);
	return out;
}

int storage_object_compose(struct storage_client *c, const char *bucket, const char *object,
			   const struct storage_compose_source *src, size_t n,
			   const char *content_type, int64_t if_generation_match,
			   int64_t *new_generation, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct storage_object meta = STORAGE_OBJECT_INIT;
	char *what = NULL, *base = NULL, *url = NULL, *body = NULL, query[80] = "";
	int rc = 0;

	if (new_generation)
		*new_generation = 0;
	if (!content_type)
		content_type = "application/json";
	if (!(what = vx_asprintf("storage: composing gs://%s/%s", bucket ? bucket : "",
				 object ? object : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	if (!bucket_ok(bucket) || !object_ok(object) || n == 0 || n > 32) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket, object name or number of sources", what);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		if (!object_ok(src[i].name)) {
			rc = vx_err_set(err, VX_EINVAL, "%s: invalid source object name", what);
			goto done;
		}
	if (if_generation_match >= 0)
		snprintf(query, sizeof(query), "?ifGenerationMatch=%" PRId64, if_generation_match);
	if (!(base = object_url(c->base_url, bucket, object, 1, NULL)) ||
	    !(url = vx_asprintf("%s/compose%s", base, query)) ||
	    !(body = compose_body(src, n, content_type))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "POST", url, body, strlen(body), "application/json",
		  if_generation_match >= 0 ? GCP_RETRY_SAFE : GCP_RETRY_NEVER, "ComposeObject", what,
		  &resp, err);
	if (rc == 0 && (rc = storage_object_parse_json(resp.body, resp.body_len, &meta, err)) < 0)
		gcall_wrap(err, "storage", what);
	if (rc == 0 && new_generation)
		*new_generation = meta.generation;
done:
	gcp_response_release(&resp);
	storage_object_release(&meta);
	cJSON_free(body);
	free(url);
	free(base);
	free(what);
	return rc;
}

int storage_object_delete(struct storage_client *c, const char *bucket, const char *object,
			  int64_t if_generation_match, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *url = NULL, query[64] = "";
	int rc;

	if (!(what = vx_asprintf("storage: deleting gs://%s/%s", bucket ? bucket : "",
				 object ? object : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	if (!bucket_ok(bucket) || !object_ok(object)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket or object name", what);
		goto done;
	}
	if (if_generation_match >= 0)
		snprintf(query, sizeof(query), "ifGenerationMatch=%" PRId64, if_generation_match);
	if (!(url = object_url(c->base_url, bucket, object, 1, if_generation_match >= 0 ? query : NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "DELETE", url, NULL, 0, NULL,
		  if_generation_match >= 0 ? GCP_RETRY_SAFE : GCP_RETRY_NEVER, "DeleteObject", what, &resp,
		  err);
done:
	gcp_response_release(&resp);
	free(url);
	free(what);
	return rc;
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Adds the names of one page's items to *v (*n of them, room for *cap). */
static int list_page(const cJSON *root, const char *prefix, char ***v, size_t *n, size_t *cap,
		     const char *what, struct vx_err *err)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(root, "items"), *it;

	if (items && !cJSON_IsArray(items))
		return vx_err_set(err, VX_EINVAL, "%s: \"items\" is not a list", what);
	cJSON_ArrayForEach(it, items) {
		const char *name = gjson_str(it, "name");

		if (!name || !object_ok(name) || strncmp(name, prefix, strlen(prefix)) != 0)
			return vx_err_set(err, VX_EINVAL, "%s: an item has no name under the prefix",
					  what);
		if (VX_ALLOC_GROW(*v, *n + 1, *cap) < 0)
			return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		if (!((*v)[*n] = strdup(name)))
			return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		(*n)++;
	}
	return 0;
}

int storage_object_list(struct storage_client *c, const char *bucket, const char *prefix,
			char ***out, size_t *n, struct vx_err *err)
{
	char **v = NULL, *what = NULL, *url = NULL, *esc = NULL, *tok = NULL, *tesc = NULL;
	size_t nv = 0, cap = 0, base_len;
	int rc = 0, page;

	*out = NULL;
	*n = 0;
	if (!(what = vx_asprintf("storage: listing gs://%s/%s", bucket ? bucket : "",
				 prefix ? prefix : "")))
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	/* "" lists the whole bucket. */
	if (!bucket_ok(bucket) || !prefix || (*prefix && !object_ok(prefix))) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid bucket or prefix", what);
		goto done;
	}
	if (!(esc = gcp_url_escape(prefix)))
		goto oom;
	base_len = strlen(c->base_url);
	for (page = 0;; page++) {
		struct gcp_response resp = { 0 };
		cJSON *root = NULL;
		char *next = NULL;

		if (page == STORAGE_LIST_MAX_PAGES) {
			rc = vx_err_set(err, VX_EINVAL, "%s: more than %d pages", what,
					STORAGE_LIST_MAX_PAGES);
			goto done;
		}
		free(url);
		url = vx_asprintf("%s%sb/%s/o?prefix=%s%s%s", c->base_url,
				  base_len && c->base_url[base_len - 1] == '/' ? "" : "/", bucket, esc,
				  tesc ? "&pageToken=" : "", tesc ? tesc : "");
		if (!url)
			goto oom;
		rc = call(c, "GET", url, NULL, 0, NULL, GCP_RETRY_SAFE, "ListObjects", what, &resp, err);
		if (rc == 0 && !(root = gjson_parse_object(resp.body, resp.body_len, what, err)))
			rc = err->code ? err->code : VX_EINVAL;
		if (rc == 0)
			rc = list_page(root, prefix, &v, &nv, &cap, what, err);
		if (rc == 0 && gjson_next_page_token(&next, root) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		cJSON_Delete(root);
		gcp_response_release(&resp);
		if (rc < 0)
			goto done;
		if (next && tok && !strcmp(next, tok)) {
			free(next);
			rc = vx_err_set(err, VX_EINVAL, "%s: the page token did not move", what);
			goto done;
		}
		free(tok);
		free(tesc);
		tesc = NULL;
		tok = next;
		if (!tok)
			break;
		if (!(tesc = gcp_url_escape(tok)))
			goto oom;
	}
	*out = v;
	*n = nv;
	v = NULL;
	nv = 0;
	goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	names_free(v, nv);
	free(tok);
	free(tesc);
	free(esc);
	free(url);
	free(what);
	return rc;
}

/* The blob store of state/blobstore.h on a storage client: each operation is the call above. */
struct storage_blob {
	struct blob_store base; /* first */
	struct storage_client c;
};

static struct storage_client *blob_client(struct blob_store *s)
{
	return &((struct storage_blob *)s)->c;
}

static int blob_read_op(struct blob_store *s, const char *bucket, const char *name, char **data,
			size_t *len, int64_t *generation, struct vx_err *err)
{
	return storage_object_read(blob_client(s), bucket, name, data, len, generation, err);
}

static int blob_stat_op(struct blob_store *s, const char *bucket, const char *name, int64_t *generation,
			struct vx_err *err)
{
	struct storage_object meta = STORAGE_OBJECT_INIT;
	int rc = storage_object_stat(blob_client(s), bucket, name, &meta, err);

	*generation = rc == 0 ? meta.generation : 0;
	storage_object_release(&meta);
	return rc;
}

static int blob_write_op(struct blob_store *s, const char *bucket, const char *name, const void *data,
			 size_t len, int64_t if_generation_match, int64_t *new_generation,
			 struct vx_err *err)
{
	return storage_object_write(blob_client(s), bucket, name, data, len, NULL, if_generation_match,
				    new_generation, err);
}

static int blob_compose_op(struct blob_store *s, const char *bucket, const char *name,
			   const struct blob_source *src, size_t n, int64_t if_generation_match,
			   int64_t *new_generation, struct vx_err *err)
{
	struct storage_compose_source *cs = n ? calloc(n, sizeof(*cs)) : NULL;
	int rc;

	if (n && !cs)
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	for (size_t i = 0; i < n; i++) {
		cs[i].name = src[i].name;
		cs[i].generation = src[i].generation;
	}
	rc = storage_object_compose(blob_client(s), bucket, name, cs, n, NULL, if_generation_match,
				    new_generation, err);
	free(cs);
	return rc;
}

static int blob_list_op(struct blob_store *s, const char *bucket, const char *prefix, char ***out,
			size_t *n, struct vx_err *err)
{
	return storage_object_list(blob_client(s), bucket, prefix, out, n, err);
}

static int blob_remove_op(struct blob_store *s, const char *bucket, const char *name,
			  int64_t if_generation_match, struct vx_err *err)
{
	return storage_object_delete(blob_client(s), bucket, name, if_generation_match, err);
}

static void blob_free_op(struct blob_store *s)
{
	free(s);
}

static const struct blob_store_ops storage_blob_ops = {
	.read = blob_read_op,
	.stat = blob_stat_op,
	.write = blob_write_op,
	.compose = blob_compose_op,
	.list = blob_list_op,
	.remove = blob_remove_op,
	.free = blob_free_op,
};

int storage_blob_store(struct blob_store **out, const struct storage_client *c, struct vx_err *err)
{
	struct storage_blob *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return vx_err_set(err, VX_ENOMEM, "storage: out of memory");
	b->base.ops = &storage_blob_ops;
	b->c = *c;
	*out = &b->base;
	return 0;
}
