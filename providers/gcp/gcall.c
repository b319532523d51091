#include "providers/gcp/gcall.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gerror.h"
#include "util/buf.h"

#include "util/banned.h"

int gcall_unreserved(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

int gcall_segment_ok(const char *s, const char *also)
{
	if (!s || !*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; *s; s++)
		if (!gcall_unreserved(*s) && !(also && strchr(also, *s)))
			return 0;
	return 1;
}

/* [a-z]([-a-z0-9]{0,61}[a-z0-9])? */
int gcall_label_ok(const char *s)
{
	size_t n, i;

	if (!s || !(n = strlen(s)) || n > 63 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '-')
		return 0;
	for (i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

char *gcall_url(const char *base, const char *path, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *key;
	va_list ap;
	int rc, first = 1;

	rc = vx_buf_adds(&b, base);
	if (rc == 0 && (b.len == 0 || b.data[b.len - 1] != '/'))
		rc = vx_buf_addc(&b, '/');
	if (rc == 0)
		rc = vx_buf_adds(&b, path);
	va_start(ap, path);
	while (rc == 0 && (key = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		char *esc;

		if (!value)
			continue;
		if (!(esc = gcp_url_escape(value))) {
			rc = VX_ENOMEM;
			break;
		}
		rc = vx_buf_printf(&b, "%c%s=%s", first ? '?' : '&', key, esc);
		first = 0;
		free(esc);
	}
	va_end(ap);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

char *gcall_region_url(const char *base, const char *region, const char *path)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *p = base;
	int rc = 0;

	while (rc == 0 && *p) {
		if (!strncmp(p, "{region}", 8)) {
			rc = vx_buf_adds(&b, region ? region : "");
			p += 8;
		} else {
			rc = vx_buf_addc(&b, *p++);
		}
	}
	if (rc == 0 && (b.len == 0 || b.data[b.len - 1] != '/'))
		rc = vx_buf_addc(&b, '/');
	if (rc == 0)
		rc = vx_buf_adds(&b, path[0] == '/' ? path + 1 : path);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

int gcall_add_query(struct vx_buf *b, const char *key, const char *value)
{
	char *esc = gcp_url_escape(value);
	int rc;

	if (!esc)
		return VX_ENOMEM;
	rc = vx_buf_printf(b, "%c%s=%s", strchr(vx_buf_str(b), '?') ? '&' : '?', key, esc);
	free(esc);
	return rc;
}

int gcall_wrap(struct vx_err *err, const char *client, const char *what)
{
	size_t n = strlen(client);

	if (err && err->msg && !strncmp(err->msg, client, n) && err->msg[n] == ':' &&
	    err->msg[n + 1] == ' ')
		memmove(err->msg, err->msg + n + 2, strlen(err->msg + n + 2) + 1);
	return vx_err_wrap(err, "%s", what);
}

void gcall_request_init(struct gcp_request *req, const char *api, const char *method,
			const char *url, const char *json_body, enum gcp_retry retry, const char *rpc)
{
	memset(req, 0, sizeof(*req));
	req->method = method;
	req->url = url;
	req->body = json_body;
	req->body_len = json_body ? strlen(json_body) : 0;
	req->content_type = json_body ? "application/json" : NULL;
	req->api = api;
	req->retry = retry;
	req->rpc = rpc;
}

int gcall_send(struct gcp_http *http, const struct gcp_request *req, const char *client,
	       const char *what, struct gcp_response *resp, struct vx_err *err)
{
	int rc = gcp_http_send(http, req, resp, err);

	if (rc == 0) {
		if (resp->status >= 200 && resp->status < 300)
			return 0;
		return gcp_error_set_call(err, resp, what, req->api, req->rpc);
	}
	if (rc == VX_ERETRY && resp->status != 0)
		return gcp_error_set_call(err, resp, what, req->api, req->rpc);
	gcall_wrap(err, client, what);
	return rc;
}

int gcall_pages(gcall_page_fn page, void *ud, const char *what, struct vx_err *err)
{
	char **seen = NULL, *next = NULL;
	size_t nseen = 0, i;
	int rc, pages = 0;

	/* Every token so far is kept: a server cycling through a few tokens
	 * loops as surely as one repeating the last. */
	if (!(seen = calloc(GCALL_MAX_PAGES, sizeof(*seen))))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	for (;;) {
		rc = page(ud, nseen ? seen[nseen - 1] : NULL, &next, err);
		if (rc < 0 || !next)
			break;
		if (++pages >= GCALL_MAX_PAGES) {
			rc = vx_err_set(err, VX_EAPI, "%s: more than %d pages; stopped (the server kept "
					"sending nextPageToken)", what, GCALL_MAX_PAGES);
			break;
		}
		for (i = 0; i < nseen && strcmp(seen[i], next); i++)
			;
		if (i < nseen) {
			rc = vx_err_set(err, VX_EAPI, "%s: page %d repeats the page token of page %zu; "
					"stopped (the server's pages loop)", what, pages + 1, i + 2);
			break;
		}
		seen[nseen++] = next;
		next = NULL;
	}
	for (i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	free(next);
	return rc;
}
