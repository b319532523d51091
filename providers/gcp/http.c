#include "providers/gcp/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "providers/gcp/backoff.h"
#include "providers/gcp/gerror.h"
#include "providers/gcp/ratelimit.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

#define HTTP_POLL_MAX_MS 250
/* libcurl refuses a header line longer than this; vx holds all of a response's headers to it too. */
#define HTTP_MAX_HEADER_BYTES CURL_MAX_HTTP_HEADER

struct gcp_http {
	struct vx_ctx *ctx;
	struct gcp_http_options o;  /* defaults applied; strings below owned */
	char *user_agent;
	char *quota_project;
	char *cainfo;               /* CURL_CA_BUNDLE or SSL_CERT_FILE, NULL = system store */
	const struct gcp_token_source *tokens;
	CURLM *multi;               /* kept across calls: its connection cache is the reuse */
	CURLSH *share;              /* DNS and TLS sessions, also for nested batches */
	struct gcp_ratelimit *rl;
	uint64_t rng;
	int depth;                  /* > 0 while a batch runs (a token fetch may nest one) */
	int global_init;
	char *warned_host;          /* the last host whose refused connections were reported */
};

enum xfer_state { X_WAIT, X_RUN, X_DONE };

struct xfer {
	struct gcp_http *h;
	const struct gcp_request *req;
	struct gcp_response *resp;
	struct vx_err *err;
	int rc;
	enum xfer_state state;
	int admitted;          /* holds a rate-limit token for its next attempt */
	int64_t ready_at;      /* mono ms: not before (backoff, rate limit) */
	int64_t deadline_at;
	int deadline_is_cmd;   /* deadline_at is the command's time limit (ctx), not the call's */
	int sends;             /* attempts that may have reached the server */
	struct gcp_backoff bo;
	int auth_retried;
	char *log_url;         /* redacted */
	/* One attempt: */
	CURL *easy;
	struct curl_slist *hdrs;
	size_t body_off;
	int body_read;         /* curl asked for the body: it may reach the server */
	int too_big;
	int header_too_big;
	size_t header_bytes;
	int fenced;            /* the fence stopped this attempt before it was sent */
	struct vx_err fence_err;
	struct vx_buf rbody;
	char *ctype, *mflavor, *retry_after;
	char errbuf[CURL_ERROR_SIZE];
};

/* ---- small helpers ---- */

char *gcp_url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct vx_buf b = VX_BUF_INIT;
	const unsigned char *p;
	int rc = 0;

	if (!s)
		return NULL;
	for (p = (const unsigned char *)s; *p && rc == 0; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			rc = vx_buf_addc(&b, (char)*p);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			rc = vx_buf_add(&b, e, 3);
		}
	}
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

int gcp_http_token_ok(const char *t)
{
	size_t i = 0;

	if (!t)
		return 0;
	while ((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
	       t[i] == '-' || t[i] == '.' || t[i] == '_' || t[i] == '~' || t[i] == '+' || t[i] == '/')
		i++;
	if (i == 0)
		return 0;
	while (t[i] == '=')
		i++;
	return t[i] == '\0';
}

static int secret_param(const char *name, size_t len)
{
	static const char *const names[] = {
		"access_token", "assertion", "refresh_token", "client_secret", "subject_token",
		"id_token", "code",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && !strncasecmp(name, names[i], len))
			return 1;
	return 0;
}

/* The URL for logs and errors: values of secret query parameters replaced,
 * any user:password@ and #fragment dropped. NULL on OOM. */
static char *redact_url(const char *url)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *q = strchr(url, '?'), *hash = strchr(url, '#'), *p, *end, *amp, *eq;
	const char *scheme = strstr(url, "://"), *at, *host_end;
	int rc = 0;

	if (hash && q && hash < q)
		q = NULL;
	end = hash ? hash : url + strlen(url);
	p = url;
	if (scheme) {
		host_end = scheme + 3 + strcspn(scheme + 3, "/?#");
		at = memchr(scheme + 3, '@', (size_t)(host_end - scheme - 3));
		if (at) {
			rc = vx_buf_add(&b, url, (size_t)(scheme + 3 - url));
			p = at + 1;
		}
	}
	if (rc == 0)
		rc = vx_buf_add(&b, p, (size_t)((q ? q + 1 : end) - p));
	for (p = q ? q + 1 : end; rc == 0 && p < end; p = amp + 1) {
		amp = memchr(p, '&', (size_t)(end - p));
		if (!amp)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq && secret_param(p, (size_t)(eq - p)))
			rc = vx_buf_add(&b, p, (size_t)(eq + 1 - p)) < 0 ? -1 : vx_buf_adds(&b, "REDACTED");
		else
			rc = vx_buf_add(&b, p, (size_t)(amp - p));
		if (rc == 0 && amp < end)
			rc = vx_buf_addc(&b, '&');
		if (amp == end)
			break;
	}
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

static const char *req_method(const struct gcp_request *r)
{
	return r->method ? r->method : "GET";
}

static void resp_clear_body(struct gcp_response *resp)
{
	free(resp->body);
	free(resp->content_type);
	free(resp->metadata_flavor);
	resp->body = resp->content_type = resp->metadata_flavor = NULL;
	resp->body_len = 0;
}

void gcp_response_release(struct gcp_response *resp)
{
	if (!resp)
		return;
	resp_clear_body(resp);
	memset(resp, 0, sizeof(*resp));
}

/* ---- lifecycle ---- */

void gcp_http_free(struct gcp_http *h)
{
	if (!h)
		return;
	if (h->multi)
		curl_multi_cleanup(h->multi);
	if (h->share)
		curl_share_cleanup(h->share);
	if (!h->o.shared_limiter)
		gcp_ratelimit_free(h->rl);
	free(h->user_agent);
	free(h->quota_project);
	free(h->cainfo);
	free(h->warned_host);
	if (h->global_init)
		curl_global_cleanup();
	free(h);
}

void gcp_http_set_tokens(struct gcp_http *h, const struct gcp_token_source *tokens)
{
	h->tokens = tokens;
}

static CURLM *multi_new(void)
{
	CURLM *m = curl_multi_init();

	if (m && curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX) != CURLM_OK) {
		curl_multi_cleanup(m);
		m = NULL;
	}
	return m;
}

int gcp_http_new(struct gcp_http **out, struct vx_ctx *ctx, const struct gcp_http_options *opts,
		 const struct gcp_token_source *tokens, struct vx_err *err)
{
	struct gcp_http *h = NULL;
	struct gcp_ratelimit_options ro;
	const char *ca;
	int rc = 0;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return vx_err_set(err, VX_ENOMEM, "http: out of memory");
	h->ctx = ctx;
	h->tokens = tokens;
	if (opts)
		h->o = *opts;
	if (h->o.max_in_flight <= 0)
		h->o.max_in_flight = 16;
	if (h->o.timeout_ms <= 0)
		h->o.timeout_ms = 60000;
	if (h->o.deadline_ms <= 0)
		h->o.deadline_ms = 600000;
	if (h->o.max_response_bytes == 0)
		h->o.max_response_bytes = (size_t)64 << 20;
	if (h->o.max_attempts <= 0)
		h->o.max_attempts = 6;
	if (h->o.backoff_initial_ms <= 0)
		h->o.backoff_initial_ms = 1000;
	if (h->o.backoff_max_ms <= 0)
		h->o.backoff_max_ms = 32000;
	h->user_agent = vx_strdup(h->o.user_agent ? h->o.user_agent : "vx/" VX_VERSION);
	h->quota_project = h->o.quota_project && *h->o.quota_project ? vx_strdup(h->o.quota_project) : NULL;
	ca = getenv("CURL_CA_BUNDLE");
	if (!ca || !*ca)
		ca = getenv("SSL_CERT_FILE");
	h->cainfo = ca && *ca ? vx_strdup(ca) : NULL;
	h->o.user_agent = h->user_agent;
	h->o.quota_project = h->quota_project;
	if (!h->user_agent || (h->o.quota_project && !h->quota_project) || (ca && *ca && !h->cainfo)) {
		rc = vx_err_set(err, VX_ENOMEM, "http: out of memory");
		goto done;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = vx_err_set(err, VX_EIO, "http: initialising libcurl failed");
		goto done;
	}
	h->global_init = 1;
	h->multi = multi_new();
	h->share = curl_share_init();
	if (!h->multi || !h->share ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
		rc = vx_err_set(err, VX_EIO, "http: creating libcurl handles failed");
		goto done;
	}
	memset(&ro, 0, sizeof(ro));
	ro.rate_per_minute = h->o.rate_per_minute;
	ro.create_rate_per_minute = h->o.create_rate_per_minute;
	ro.burst = h->o.rate_burst;
	if (h->o.shared_limiter)
		h->rl = h->o.shared_limiter;
	else if ((rc = gcp_ratelimit_new(&h->rl, ctx, &ro, err)) < 0)
		goto done;
	h->rng = gcp_rand_seed(ctx);
	*out = h;
	h = NULL;
done:
	gcp_http_free(h);
	return rc;
}

/* ---- libcurl callbacks ---- */

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	if (vx_buf_add(&x->rbody, data, n) < 0) {
		x->too_big = 1;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t room = size * nmemb, left = x->req->body_len - x->body_off;
	size_t n = left < room ? left : room;

	x->body_read = 1;
	memcpy(dst, x->req->body + x->body_off, n);
	x->body_off += n;
	return n;
}

static int on_seek(void *ud, curl_off_t off, int origin)
{
	struct xfer *x = ud;

	if (origin != SEEK_SET || off < 0 || (size_t)off > x->req->body_len)
		return CURL_SEEKFUNC_FAIL;
	x->body_off = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

static int keep_header(char **dst, const char *name, const char *line, size_t len)
{
	size_t nl = strlen(name), s, e;

	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return 0;
	for (s = nl + 1; s < len && (line[s] == ' ' || line[s] == '\t'); s++)
		;
	for (e = len; e > s && (line[e - 1] == '\r' || line[e - 1] == '\n' || line[e - 1] == ' '); e--)
		;
	free(*dst);
	*dst = vx_asprintf("%.*s", (int)(e - s), line + s);
	return 1;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	/* Counted over every response of the attempt (a 100 Continue's too). */
	x->header_bytes += n;
	if (x->header_bytes > HTTP_MAX_HEADER_BYTES) {
		x->header_too_big = 1;
		return 0; /* aborts the transfer */
	}
	if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new response (after a 100 Continue, say): forget the last one's headers. */
		free(x->ctype);
		free(x->mflavor);
		free(x->retry_after);
		x->ctype = x->mflavor = x->retry_after = NULL;
		return n;
	}
	if (!keep_header(&x->ctype, "Content-Type", line, n) &&
	    !keep_header(&x->mflavor, "Metadata-Flavor", line, n))
		keep_header(&x->retry_after, "Retry-After", line, n);
	return n;
}

/*
 * libcurl calls this once the connection is up, right before it writes the
 * request: the last moment at which "not sent" is certain. Older libcurl
 * has no such hook; attempt_start() checks the fence instead.
 */
#if LIBCURL_VERSION_NUM >= 0x075000
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
	struct xfer *x = ud;
	const struct gcp_fence *f = x->req->fence;

	(void)primary_ip;
	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	vx_err_release(&x->fence_err);
	if (f->check(f->ud, &x->fence_err) == 0)
		return CURL_PREREQFUNC_OK;
	x->fenced = 1;
	return CURL_PREREQFUNC_ABORT;
}
#endif

/* ---- one attempt ---- */

static void attempt_cleanup(struct xfer *x, CURLM *multi)
{
	if (x->easy) {
		curl_multi_remove_handle(multi, x->easy);
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
	}
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
	free(x->ctype);
	free(x->mflavor);
	free(x->retry_after);
	x->ctype = x->mflavor = x->retry_after = NULL;
	vx_buf_release(&x->rbody);
	vx_err_release(&x->fence_err);
	x->fenced = 0;
}

static void finish(struct xfer *x, int rc)
{
	x->rc = rc;
	x->state = X_DONE;
}

/* Ends x unsent because its fence refused: a certain outcome, not a retry. */
static void fence_stop(struct xfer *x)
{
	int code = x->fence_err.code < 0 ? x->fence_err.code : VX_ECONFLICT;

	finish(x, vx_err_set(x->err, code, "%s %s: not sent: %s", req_method(x->req), x->log_url,
			     vx_err_msg(&x->fence_err)));
}

static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *n = curl_slist_append(*list, line);

	if (!n)
		return VX_ENOMEM;
	*list = n;
	return 0;
}

/* Which bound deadline_at is, for messages. */
static void deadline_text(const struct xfer *x, char *buf, size_t n)
{
	if (x->deadline_is_cmd)
		snprintf(buf, n, "the command's time limit of %lld s (VX_TIMEOUT)",
			 (long long)(x->h->ctx->time_limit_ms / 1000));
	else
		snprintf(buf, n, "the %ld s deadline", x->h->o.deadline_ms / 1000);
}

#define SETOPT(opt, val) do { if (curl_easy_setopt(e, opt, val) != CURLE_OK) goto setopt_failed; } while (0)

/* Builds and adds the easy handle for the next attempt. On failure the
 * xfer is finished with the error. */
static void attempt_start(struct xfer *x, CURLM *multi, int64_t now)
{
	struct gcp_http *h = x->h;
	const struct gcp_request *r = x->req;
	const char *method = req_method(r);
	const char *const *hp;
	struct vx_err terr = VX_ERR_INIT;
	char *token = NULL, *line = NULL;
	long timeout = r->timeout_ms > 0 ? r->timeout_ms : h->o.timeout_ms;
	int has_body = r->body && r->body_len > 0;
	int rc = 0;
	CURL *e = NULL;
	char bound[96];

	if (now >= x->deadline_at) {
		deadline_text(x, bound, sizeof(bound));
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: %s passed before an answer", method,
				     x->log_url, bound));
		return;
	}
	if (x->deadline_at - now < timeout)
		timeout = (long)(x->deadline_at - now);
#if LIBCURL_VERSION_NUM < 0x075000
	/* No pre-request hook to check it later: check the fence now. */
	if (r->fence && r->fence->check(r->fence->ud, &x->fence_err) != 0) {
		fence_stop(x);
		vx_err_release(&x->fence_err);
		return;
	}
#endif
	if (!r->no_auth) {
		if (!h->tokens) {
			finish(x, vx_err_set(x->err, VX_EAUTH, "%s %s: no credentials (run 'gcloud auth "
					     "application-default login' or set "
					     "GOOGLE_APPLICATION_CREDENTIALS)", method, x->log_url));
			return;
		}
		rc = h->tokens->get(h->tokens->ud, &token, &terr);
		if (rc < 0 || !token) {
			finish(x, vx_err_set(x->err, rc < 0 ? rc : VX_EAUTH, "%s %s: %s", method,
					     x->log_url, vx_err_msg(&terr)));
			vx_err_release(&terr);
			goto done;
		}
		/* A token with CR or LF in it would add headers of the server's
		 * choosing; never print it, it may be a real token. */
		if (!gcp_http_token_ok(token)) {
			finish(x, vx_err_set(x->err, VX_EAUTH, "%s %s: the access token has characters a "
					     "bearer token may not hold (RFC 6750); not sent", method,
					     x->log_url));
			goto done;
		}
	}
	vx_buf_release(&x->rbody);
	x->rbody.cap = h->o.max_response_bytes;
	x->body_off = 0;
	x->body_read = 0;
	x->too_big = 0;
	x->header_too_big = 0;
	x->header_bytes = 0;
	x->errbuf[0] = '\0';
	e = x->easy = curl_easy_init();
	if (!e)
		goto oom;
	if (token) {
		line = vx_asprintf("Authorization: Bearer %s", token);
		if (!line || add_header(&x->hdrs, line) < 0)
			goto oom;
	}
	if (h->quota_project) {
		free(line);
		line = vx_asprintf("x-goog-user-project: %s", h->quota_project);
		if (!line || add_header(&x->hdrs, line) < 0)
			goto oom;
	}
	free(line);
	line = NULL;
	if (has_body)
		line = vx_asprintf("Content-Type: %s", r->content_type ? r->content_type : "application/json");
	else
		line = vx_strdup("Content-Type:"); /* no default form type on a body-less POST */
	if (!line || add_header(&x->hdrs, line) < 0 || add_header(&x->hdrs, "Expect:") < 0)
		goto oom;
	for (hp = r->headers; hp && *hp; hp++)
		if (add_header(&x->hdrs, *hp) < 0)
			goto oom;

	SETOPT(CURLOPT_URL, r->url);
	SETOPT(CURLOPT_PRIVATE, (void *)x);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_SHARE, h->share);
	SETOPT(CURLOPT_USERAGENT, h->user_agent);
	SETOPT(CURLOPT_HTTPHEADER, x->hdrs);
	SETOPT(CURLOPT_ACCEPT_ENCODING, "");
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->cainfo)
		SETOPT(CURLOPT_CAINFO, h->cainfo);
	SETOPT(CURLOPT_TIMEOUT_MS, timeout);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, timeout < 20000 ? timeout : 20000L);
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->o.max_response_bytes);
	SETOPT(CURLOPT_WRITEFUNCTION, on_write);
	SETOPT(CURLOPT_WRITEDATA, (void *)x);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, (void *)x);
	SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075000
	if (r->fence) {
		SETOPT(CURLOPT_PREREQFUNCTION, on_prereq);
		SETOPT(CURLOPT_PREREQDATA, (void *)x);
	}
#endif
	/* HTTP/2 is a preference: a libcurl without nghttp2 refuses it, and HTTP/1.1 is fine. */
	(void)curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (r->retry == GCP_RETRY_NEVER) {
		/* libcurl silently resends a request whose reused connection turns out
		 * dead; on a fresh connection it cannot, so a create goes out once. */
		SETOPT(CURLOPT_FRESH_CONNECT, 1L);
	}
	if (has_body) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_READFUNCTION, on_read);
		SETOPT(CURLOPT_READDATA, (void *)x);
		SETOPT(CURLOPT_SEEKFUNCTION, on_seek);
		SETOPT(CURLOPT_SEEKDATA, (void *)x);
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		if (strcmp(method, "POST"))
			SETOPT(CURLOPT_CUSTOMREQUEST, method);
	} else if (!strcmp(method, "GET")) {
		SETOPT(CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(method, "HEAD")) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		SETOPT(CURLOPT_POSTFIELDS, "");
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
		if (strcmp(method, "POST"))
			SETOPT(CURLOPT_CUSTOMREQUEST, method);
	} else {
		SETOPT(CURLOPT_CUSTOMREQUEST, method);
	}
	if (curl_multi_add_handle(multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		x->easy = NULL;
		finish(x, vx_err_set(x->err, VX_EIO, "%s %s: libcurl refused the transfer", method,
				     x->log_url));
		goto done;
	}
	x->resp->attempts++;
	x->state = X_RUN;
	goto done;
setopt_failed:
	finish(x, vx_err_set(x->err, VX_EIO, "%s %s: setting up the transfer failed", method,
			     x->log_url));
	attempt_cleanup(x, multi);
	goto done;
oom:
	finish(x, vx_err_set(x->err, VX_ENOMEM, "%s %s: out of memory", method, x->log_url));
	attempt_cleanup(x, multi);
done:
	if (line) {
		memset(line, 0, strlen(line));
		free(line);
	}
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
}

/* Retry-After: delta seconds or an HTTP date; -1 when absent or unreadable. */
static int64_t retry_after_ms(const struct vx_ctx *ctx, const char *v)
{
	char *end;
	long long secs;
	time_t t;

	if (!v || !*v)
		return -1;
	errno = 0;
	secs = strtoll(v, &end, 10);
	if (end != v && !*end && !errno && secs >= 0)
		return secs > 86400 ? 86400000 : (int64_t)secs * 1000;
	t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	secs = (long long)t * 1000 - vx_now_ms(ctx);
	return secs > 0 ? (int64_t)secs : 0;
}

static int retryable_status(long s)
{
	return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

/* Schedules another attempt after a retryable failure, or gives up. */
static void retry_later(struct xfer *x, int64_t now, const char *why, int64_t server_ms)
{
	struct gcp_http *h = x->h;
	const char *method = req_method(x->req);
	int64_t delay;

	if (x->resp->attempts >= h->o.max_attempts) {
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: giving up after %d attempts: %s",
				     method, x->log_url, x->resp->attempts, why));
		return;
	}
	delay = gcp_backoff_next(&x->bo, &h->rng);
	if (server_ms > delay)
		delay = server_ms;
	if (now + delay >= x->deadline_at) {
		char bound[96];

		deadline_text(x, bound, sizeof(bound));
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: giving up after %d attempts: %s "
				     "(retrying in %.1f s would pass %s)", method, x->log_url,
				     x->resp->attempts, why, (double)delay / 1000.0, bound));
		return;
	}
	vx_log(h->ctx, VX_LOG_DEBUG, "%s %s: retrying in %.1f s after %s (attempt %d/%d)", method,
	       x->log_url, (double)delay / 1000.0, why, x->resp->attempts + 1, h->o.max_attempts);
	x->state = X_WAIT;
	x->ready_at = now + delay;
}

static int curl_connect_failed(CURLcode c)
{
	return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY ||
	       c == CURLE_COULDNT_CONNECT;
}

static int curl_transient(CURLcode c)
{
	return curl_connect_failed(c) || c == CURLE_OPERATION_TIMEDOUT || c == CURLE_SEND_ERROR ||
	       c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
	       c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM || c == CURLE_SSL_CONNECT_ERROR;
}

static const char *version_name(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0: return "HTTP/1.0";
	case CURL_HTTP_VERSION_1_1: return "HTTP/1.1";
	case CURL_HTTP_VERSION_2_0: return "HTTP/2";
#ifdef CURL_HTTP_VERSION_3
	case CURL_HTTP_VERSION_3: return "HTTP/3";
#endif
	default: return "HTTP";
	}
}

/*
 * Ends a GCP_RETRY_NEVER request whose last send may have been acted on:
 * uncertain, and the message says how often it went out, because earlier
 * sends may have been refused (429) and sent again.
 */
static void finish_uncertain(struct xfer *x, const char *cause)
{
	const char *method = req_method(x->req);

	x->resp->uncertain = 1;
	if (x->sends <= 1)
		finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: %s; the outcome is unknown; not "
				     "sent again", method, x->log_url, cause));
	else
		finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: %s after %d tries; the last try's "
				     "outcome is unknown; not sent again", method, x->log_url, cause,
				     x->sends));
}

/* "http://host:port" of url, for saying which server is unreachable. */
static char *url_origin(const char *url)
{
	const char *p = strstr(url, "://");
	size_t n = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strcspn(url, "/?#");

	return vx_asprintf("%.*s", (int)n, url);
}

static const char *connect_cause(CURLcode res, long os_errno)
{
	if (res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY)
		return "the host name does not resolve";
	switch (os_errno) {
	case ECONNREFUSED: return "connection refused";
	case ETIMEDOUT: return "timed out";
	case EHOSTUNREACH: return "host unreachable";
	case ENETUNREACH: return "network unreachable";
	default: return curl_easy_strerror(res);
	}
}

/*
 * Says once on the log (stderr at the default level) that a server cannot be
 * reached and how long vx keeps trying, instead of a silent wait: the most
 * the remaining backoffs can add up to, within the deadline.
 */
static void warn_connect(struct xfer *x, CURLcode res, int64_t now)
{
	struct gcp_http *h = x->h;
	struct gcp_backoff bo = x->bo;
	char *origin = url_origin(x->log_url);
	int64_t most = 0;
	long os_errno = 0;
	int i;

	if (!origin || (h->warned_host && !strcmp(h->warned_host, origin))) {
		free(origin);
		return;
	}
	for (i = x->resp->attempts; i < h->o.max_attempts; i++) {
		most += bo.ceiling_ms;
		bo.ceiling_ms = bo.ceiling_ms * 2 > bo.max_ms ? bo.max_ms : bo.ceiling_ms * 2;
	}
	if (now + most > x->deadline_at)
		most = x->deadline_at - now;
	curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &os_errno);
	vx_log(h->ctx, VX_LOG_WARN, "cannot connect to %s (%s); retrying for up to %lld s", origin,
	       connect_cause(res, os_errno), (long long)((most + 999) / 1000));
	free(h->warned_host);
	h->warned_host = origin;
}

/* Handles the end of an attempt: fills resp, then finishes or schedules a retry. */
static void attempt_done(struct xfer *x, CURLM *multi, CURLcode res)
{
	struct gcp_http *h = x->h;
	const struct gcp_request *r = x->req;
	struct gcp_response *resp = x->resp;
	const char *method = req_method(r);
	struct gcp_error ge = GCP_ERROR_INIT;
	long status = 0, version = 0;
	curl_off_t total_us = 0, pre_us = 0;
	int64_t now = vx_mono_ms(h->ctx), server_ms;
	int rate_limited = 0, sent;
	char why[96];
	char body_note[48] = "";

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &total_us);
	curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	if (r->body && r->body_len)
		snprintf(body_note, sizeof(body_note), " (body %zu bytes)", r->body_len);
	resp_clear_body(resp);
	resp->status = 0;

	if (x->fenced) {
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> not sent: %s", method, x->log_url, body_note,
		       vx_err_msg(&x->fence_err));
		resp->attempts--; /* counted when handed to libcurl, but never sent */
		fence_stop(x);
		goto done;
	}
	if (res != CURLE_OK) {
		const char *cerr = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);

		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> failed: %s (%lld ms)", method, x->log_url,
		       body_note, cerr, (long long)(total_us / 1000));
		/* libcurl says "out of memory" for a header line past its own limit. */
		if (x->header_too_big || res == CURLE_OUT_OF_MEMORY) {
			snprintf(why, sizeof(why), "the response header is larger than %d bytes",
				 HTTP_MAX_HEADER_BYTES);
			x->sends++;
		} else if (x->too_big || res == CURLE_FILESIZE_EXCEEDED) {
			snprintf(why, sizeof(why), "the response is larger than %zu bytes",
				 h->o.max_response_bytes);
			x->sends++;
		}
		if (x->header_too_big || res == CURLE_OUT_OF_MEMORY || x->too_big ||
		    res == CURLE_FILESIZE_EXCEEDED) {
			/* The server answered, so a create reached it: no knowing what it did. */
			if (r->retry == GCP_RETRY_NEVER)
				finish_uncertain(x, why);
			else
				finish(x, vx_err_set(x->err, VX_EINVAL, "%s %s: %s", method, x->log_url, why));
			goto done;
		}
		if (!curl_transient(res)) {
			finish(x, vx_err_set(x->err, VX_EIO, "%s %s: %s", method, x->log_url, cerr));
			goto done;
		}
		/* Could the server have acted on it? Not if the connection never
		 * came up, nor if libcurl never asked for the body it had to send. */
		sent = !(curl_connect_failed(res) || res == CURLE_SSL_CONNECT_ERROR ||
			 (res == CURLE_OPERATION_TIMEDOUT && pre_us == 0) ||
			 (r->body && r->body_len && !x->body_read));
		x->sends += sent;
		if (r->retry == GCP_RETRY_NEVER && sent) {
			char cause[CURL_ERROR_SIZE + 48];

			snprintf(cause, sizeof(cause), "%s after the request was sent", cerr);
			finish_uncertain(x, cause);
			goto done;
		}
		if (curl_connect_failed(res))
			warn_connect(x, res, now);
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(res));
		retry_later(x, now, why, -1);
		goto done;
	}

	resp->status = status;
	x->sends++;
	if (x->rbody.len) {
		resp->body_len = x->rbody.len;
		resp->body = vx_buf_detach(&x->rbody);
	}
	resp->content_type = x->ctype;
	resp->metadata_flavor = x->mflavor;
	x->ctype = x->mflavor = NULL;
	if (status >= 400 && gcp_error_parse(&ge, status, resp->body, resp->body_len) < 0) {
		finish(x, vx_err_set(x->err, VX_ENOMEM, "%s %s: out of memory", method, x->log_url));
		goto done;
	}
	curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &version);
	if (status >= 400)
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> %ld %s%s%s (%zu bytes, %lld ms, %s)", method,
		       x->log_url, body_note, status, ge.status ? ge.status : "",
		       ge.reason ? " " : "", ge.reason ? ge.reason : "", resp->body_len,
		       (long long)(total_us / 1000), version_name(version));
	else
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> %ld (%zu bytes, %lld ms, %s)", method,
		       x->log_url, body_note, status, resp->body_len, (long long)(total_us / 1000),
		       version_name(version));

	if (status == 401 && !r->no_auth && h->tokens && !x->auth_retried) {
		x->auth_retried = 1;
		if (h->tokens->invalidate)
			h->tokens->invalidate(h->tokens->ud);
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s: 401, retrying once with a fresh token", method,
		       x->log_url);
		x->state = X_WAIT;
		x->ready_at = now;
		goto done;
	}
	rate_limited = status == 429 ||
		       (status == 403 && ge.reason && (!strcmp(ge.reason, "rateLimitExceeded") ||
						      !strcmp(ge.reason, "userRateLimitExceeded") ||
						      !strcmp(ge.reason, "RATE_LIMIT_EXCEEDED")));
	if (!retryable_status(status) && !rate_limited) {
		finish(x, 0);
		goto done;
	}
	if (r->retry == GCP_RETRY_NEVER && !rate_limited) {
		/* A 5xx or 408 after sending: the job may exist. 429 and rate-limit
		 * 403s are refusals, safe to send again. */
		char cause[96];

		snprintf(cause, sizeof(cause), "HTTP %ld%s%s", status, ge.status ? " " : "",
			 ge.status ? ge.status : "");
		finish_uncertain(x, cause);
		goto done;
	}
	server_ms = retry_after_ms(h->ctx, x->retry_after);
	if (ge.retry_delay_ms > server_ms)
		server_ms = ge.retry_delay_ms;
	if (ge.reason && status == 403)
		snprintf(why, sizeof(why), "403 %s", ge.reason);
	else
		snprintf(why, sizeof(why), "%ld", status);
	retry_later(x, now, why, server_ms);
done:
	gcp_error_release(&ge);
	attempt_cleanup(x, multi);
}

/* ---- the batch loop ---- */

/* When the next waiting transfer becomes due: one holding a rate-limit token,
 * or one sleeping a backoff. Those merely waiting for a slot do not count:
 * they are due when a slot frees. -1 when none. */
static int64_t next_ready(struct xfer *xs, size_t n, int64_t now)
{
	int64_t t = -1;
	size_t i;

	for (i = 0; i < n; i++)
		if (xs[i].state == X_WAIT && (xs[i].admitted || xs[i].ready_at > now) &&
		    (t < 0 || xs[i].ready_at < t))
			t = xs[i].ready_at;
	return t;
}

/*
 * On an interrupt: transfers not yet on the wire end as cancelled; transfers
 * in flight keep going, so their outcome is known, unless abandon is set.
 * An abandoned request that may have reached the server and must not be
 * resent (a create) ends uncertain, never cancelled: the job may exist.
 * Returns 1 when nothing is left in flight.
 */
static int interrupt_batch(struct xfer *xs, size_t n, CURLM *multi, int abandon, size_t *running,
			   size_t *admitted)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct xfer *x = &xs[i];
		const char *method = req_method(x->req);

		if (x->state == X_WAIT) {
			finish(x, vx_err_set(x->err, VX_ECANCELED, "%s %s: interrupted before it was sent",
					     method, x->log_url));
		} else if (x->state == X_RUN && abandon) {
			int sent = !(x->req->body && x->req->body_len && !x->body_read);

			attempt_cleanup(x, multi);
			(*running)--;
			if (x->req->retry == GCP_RETRY_NEVER && sent) {
				x->resp->uncertain = 1;
				finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: abandoned in flight; "
						     "the outcome is unknown", method, x->log_url));
			} else {
				finish(x, vx_err_set(x->err, VX_ECANCELED, "%s %s: abandoned in flight",
						     method, x->log_url));
			}
		}
	}
	*admitted = 0;
	return *running == 0;
}

static void run_batch(struct gcp_http *h, CURLM *multi, struct xfer *xs, size_t n)
{
	struct vx_ctx *ctx = h->ctx;
	size_t i, running = 0, admitted = 0;
	int64_t now, t, wait;
	int still, left, progressed;
	CURLMsg *msg;

	for (;;) {
		if (vx_interrupted(ctx)) {
			/* Nothing new starts; what was sent finishes unless abandoned. */
			if (interrupt_batch(xs, n, multi, vx_abandoning(ctx), &running, &admitted))
				return;
		}
		now = vx_mono_ms(ctx);
		/* Admit (take rate-limit tokens) and start, in order, within max_in_flight. */
		for (i = 0; i < n && running < (size_t)h->o.max_in_flight; i++) {
			struct xfer *x = &xs[i];

			if (x->state != X_WAIT)
				continue;
			if (!x->admitted) {
				if (x->ready_at > now)
					continue;
				if (running + admitted >= (size_t)h->o.max_in_flight)
					break;
				if (gcp_ratelimit_reserve(h->rl, x->req->api, x->req->region,
							  x->req->is_create, &wait) < 0) {
					finish(x, vx_err_set(x->err, VX_ENOMEM, "rate limiter: out of memory"));
					continue;
				}
				if (wait > 0)
					vx_log(ctx, VX_LOG_DEBUG, "%s %s: rate limit (%s%s%s), waiting %.1f s",
					       req_method(x->req), x->log_url, x->req->api,
					       x->req->region ? " " : "",
					       x->req->region ? x->req->region : "", (double)wait / 1000.0);
				x->admitted = 1;
				admitted++;
				x->ready_at = now + wait;
			}
			if (x->ready_at > now)
				continue;
			x->admitted = 0;
			admitted--;
			attempt_start(x, multi, now);
			if (x->state == X_RUN)
				running++;
		}
		t = next_ready(xs, n, now);
		if (running == 0) {
			if (t < 0)
				return;
			if (t > now)
				vx_sleep_ms(ctx, t - now);
			continue;
		}
		if (curl_multi_perform(multi, &still) != CURLM_OK) {
			/* Cannot drive transfers any more: fail what is left. */
			for (i = 0; i < n; i++) {
				if (xs[i].state == X_DONE)
					continue;
				attempt_cleanup(&xs[i], multi);
				finish(&xs[i], vx_err_set(xs[i].err, VX_EIO, "%s %s: libcurl failed",
							  req_method(xs[i].req), xs[i].log_url));
			}
			return;
		}
		progressed = 0;
		while ((msg = curl_multi_info_read(multi, &left))) {
			struct xfer *x = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			if (!x)
				continue;
			running--;
			progressed = 1;
			attempt_done(x, multi, msg->data.result);
		}
		if (progressed)
			continue;
		wait = HTTP_POLL_MAX_MS;
		if (t >= 0 && running < (size_t)h->o.max_in_flight && t - now < wait)
			wait = t > now ? t - now : 0;
		if (curl_multi_poll(multi, NULL, 0, (int)wait, NULL) != CURLM_OK)
			vx_sleep_ms(ctx, 1);
	}
}

int gcp_http_send_many(struct gcp_http *h, size_t n, const struct gcp_request *reqs,
		       struct gcp_response *resps, int *rcs, struct vx_err *errs)
{
	struct xfer *xs = NULL;
	CURLM *multi = NULL;
	int64_t start;
	size_t i;
	int rc = 0;

	if (n == 0)
		return 0;
	xs = calloc(n, sizeof(*xs));
	if (!xs)
		return VX_ENOMEM;
	if (h->depth == 0) {
		multi = h->multi;
	} else if (!(multi = multi_new())) {
		rc = VX_EIO;
		goto done;
	}
	h->depth++;
	start = vx_mono_ms(h->ctx);
	for (i = 0; i < n; i++) {
		struct xfer *x = &xs[i];

		memset(&resps[i], 0, sizeof(resps[i]));
		x->h = h;
		x->req = &reqs[i];
		x->resp = &resps[i];
		x->err = errs ? &errs[i] : NULL;
		x->state = X_WAIT;
		x->ready_at = start;
		x->deadline_at = start + h->o.deadline_ms;
		if (h->ctx && h->ctx->deadline_ms > 0 && h->ctx->deadline_ms < x->deadline_at) {
			x->deadline_at = h->ctx->deadline_ms;
			x->deadline_is_cmd = 1;
		}
		gcp_backoff_init(&x->bo, h->o.backoff_initial_ms, h->o.backoff_max_ms);
		x->log_url = redact_url(reqs[i].url ? reqs[i].url : "");
		if (!reqs[i].url || !x->log_url)
			finish(x, vx_err_set(x->err, reqs[i].url ? VX_ENOMEM : VX_EINVAL,
					     "http: %s", reqs[i].url ? "out of memory" : "no URL"));
	}
	run_batch(h, multi, xs, n);
	h->depth--;
	for (i = 0; i < n; i++) {
		if (rcs)
			rcs[i] = xs[i].rc;
		free(xs[i].log_url);
	}
done:
	if (multi && multi != h->multi)
		curl_multi_cleanup(multi);
	free(xs);
	return rc;
}

int gcp_http_send(struct gcp_http *h, const struct gcp_request *req, struct gcp_response *resp,
		  struct vx_err *err)
{
	int one = 0;
	int rc = gcp_http_send_many(h, 1, req, resp, &one, err);

	if (rc < 0)
		return vx_err_set(err, rc, "http: %s", rc == VX_ENOMEM ? "out of memory" :
				  "cannot start a transfer");
	return one;
}
