/* Unit tests for providers/gcp/http against the in-process scripted server (support/httpd). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "tests/unit/support/httpd.h"
#include "util/buf.h"
#include "util/ctx.h"

/* ---- fixture: fake clock, captured log, token source, server ---- */

struct fake_clock {
	int64_t now;
	int64_t slept;
	int sleeps;
};

static int64_t fc_mono(void *ud)
{
	return ((struct fake_clock *)ud)->now;
}

#define WALL_BASE 1700000000000LL /* a whole second: Retry-After dates are exact */

static int64_t fc_now(void *ud)
{
	return WALL_BASE + ((struct fake_clock *)ud)->now;
}

static void fc_sleep(void *ud, int64_t ms)
{
	struct fake_clock *c = ud;

	if (ms > 0) {
		c->now += ms;
		c->slept += ms;
		c->sleeps++;
	}
}

struct tokens {
	int gen;
	int gets;
	int invalidations;
	char prefix[32];
};

static int tok_get(void *ud, char **out, struct vx_err *err)
{
	struct tokens *t = ud;

	(void)err;
	t->gets++;
	*out = vx_asprintf("%s-%d", t->prefix, t->gen);
	return *out ? 0 : VX_ENOMEM;
}

static void tok_invalidate(void *ud)
{
	struct tokens *t = ud;

	t->invalidations++;
	t->gen++;
}

struct fx {
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct vx_buf log;
	struct tokens tok;
	struct gcp_token_source ts;
	struct httpd *srv;
	struct gcp_http *h;
	struct gcp_http_options o;
	char url[256];
};

static void log_sink(void *ud, int level, const char *msg)
{
	struct vx_buf *b = ud;

	(void)level;
	if (vx_buf_adds(b, msg) < 0 || vx_buf_addc(b, '\n') < 0)
		fail();
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	vx_ctx_init(&f->ctx);
	f->fc.now = 1000;
	f->ctx.clock.mono_ms = fc_mono;
	f->ctx.clock.now_ms = fc_now;
	f->ctx.clock.sleep_ms = fc_sleep;
	f->ctx.clock.ud = &f->fc;
	f->ctx.seed = 12345;
	f->ctx.log = log_sink;
	f->ctx.log_ud = &f->log;
	f->ctx.log_level = VX_LOG_DEBUG;
	snprintf(f->tok.prefix, sizeof(f->tok.prefix), "tok");
	f->ts.get = tok_get;
	f->ts.invalidate = tok_invalidate;
	f->ts.ud = &f->tok;
	if (httpd_start(&f->srv) < 0)
		return -1;
	f->o.rate_per_minute = -1;
	f->o.create_rate_per_minute = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	gcp_http_free(f->h);
	httpd_stop(f->srv);
	vx_buf_release(&f->log);
	free(f);
	return 0;
}

/* Creates the layer from f->o (tests adjust f->o first). */
static void open_http(struct fx *f)
{
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(gcp_http_new(&f->h, &f->ctx, &f->o, &f->ts, &err), 0);
	vx_err_release(&err);
}

static const char *url(struct fx *f, const char *path)
{
	snprintf(f->url, sizeof(f->url), "%s%s", httpd_url(f->srv), path);
	return f->url;
}

static struct gcp_request get_req(struct fx *f, const char *path)
{
	struct gcp_request r;

	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.url = url(f, path);
	r.api = "aiplatform";
	r.region = "us-central1";
	return r;
}

static struct gcp_request create_req(struct fx *f, enum gcp_retry retry)
{
	static const char body[] = "{\"displayName\":\"train-1\"}";
	struct gcp_request r = get_req(f, "/v1/projects/p/locations/us-central1/customJobs");

	r.method = "POST";
	r.body = body;
	r.body_len = strlen(body);
	r.retry = retry;
	r.is_create = 1;
	r.rpc = "CreateCustomJob";
	return r;
}

/* ---- tests ---- */

static void test_get_headers_and_body(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/a?x=1");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *got;

	f->o.quota_project = "billing-proj";
	open_http(f);
	httpd_respond(f->srv, 200, "Content-Type: application/json; charset=UTF-8\r\n"
		      "Metadata-Flavor: Google\r\n", "{\"ok\":true}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(resp.uncertain, 0);
	assert_string_equal(resp.body, "{\"ok\":true}");
	assert_int_equal(resp.body_len, 11);
	assert_string_equal(resp.content_type, "application/json; charset=UTF-8");
	assert_string_equal(resp.metadata_flavor, "Google");
	gcp_response_release(&resp);
	assert_null(resp.body);

	assert_int_equal(httpd_request_count(f->srv), 1);
	got = httpd_request(f->srv, 0);
	assert_string_equal(got->method, "GET");
	assert_string_equal(got->target, "/v1/a?x=1");
	assert_string_equal(httpd_header(got, "User-Agent"), "vx/" VX_VERSION);
	assert_string_equal(httpd_header(got, "Authorization"), "Bearer tok-0");
	assert_string_equal(httpd_header(got, "x-goog-user-project"), "billing-proj");
	assert_non_null(strstr(httpd_header(got, "Accept-Encoding"), "gzip"));
	assert_null(httpd_header(got, "Content-Type"));
	assert_null(httpd_header(got, "Expect"));
	assert_non_null(strstr(vx_buf_str(&f->log), "GET http://127.0.0.1:"));
	assert_non_null(strstr(vx_buf_str(&f->log), "/v1/a?x=1 -> 200 (11 bytes, "));
	vx_err_release(&err);
}

static void test_post_body_no_auth_and_methods(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_SAFE);
	static const char *const extra[] = { "X-Test: 1", NULL };
	struct gcp_response resp;
	const struct httpd_request *got;

	open_http(f);
	r.no_auth = 1;
	r.headers = extra;
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	got = httpd_request(f->srv, 0);
	assert_string_equal(got->method, "POST");
	assert_string_equal(got->body, "{\"displayName\":\"train-1\"}");
	assert_string_equal(httpd_header(got, "Content-Type"), "application/json");
	assert_string_equal(httpd_header(got, "X-Test"), "1");
	assert_null(httpd_header(got, "Authorization"));
	assert_int_equal(f->tok.gets, 0);

	/* PATCH with a body, DELETE and a body-less POST. */
	r.method = "PATCH";
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	r.method = "DELETE";
	r.body = NULL;
	r.body_len = 0;
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	r.method = "POST";
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_null(resp.body);
	gcp_response_release(&resp);
	assert_string_equal(httpd_request(f->srv, 1)->method, "PATCH");
	assert_string_equal(httpd_request(f->srv, 1)->body, "{\"displayName\":\"train-1\"}");
	assert_string_equal(httpd_request(f->srv, 2)->method, "DELETE");
	assert_int_equal(httpd_request(f->srv, 2)->body_len, 0);
	assert_string_equal(httpd_request(f->srv, 3)->method, "POST");
	assert_string_equal(httpd_header(httpd_request(f->srv, 3), "Content-Length"), "0");
	assert_null(httpd_header(httpd_request(f->srv, 3), "Content-Type"));
	/* Keep-alive: all on one connection. */
	assert_int_equal(httpd_connection_count(f->srv), 1);
}

static void test_each_retryable_status(void **state)
{
	struct fx *f = *state;
	static const int codes[] = { 408, 429, 500, 502, 503, 504 };
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	size_t i;

	open_http(f);
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		httpd_respond(f->srv, codes[i], NULL, "{}", 0);
		httpd_respond(f->srv, 200, NULL, "{\"n\":1}", 0);
		assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
		assert_int_equal(resp.status, 200);
		assert_int_equal(resp.attempts, 2);
		assert_int_equal(httpd_request_count(f->srv), 2 * (i + 1));
		gcp_response_release(&resp);
	}
	/* Each retry slept a backoff in [0, 1 s] on the fake clock. */
	assert_true(f->fc.slept <= 6 * 1000);
	assert_non_null(strstr(vx_buf_str(&f->log), "retrying in "));
	assert_non_null(strstr(vx_buf_str(&f->log), " after 504 (attempt 2/6)"));
}

static void test_non_retryable_and_exhausted(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	f->o.max_attempts = 4;
	open_http(f);
	httpd_respond(f->srv, 400, NULL, "{\"error\":{\"code\":400}}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(resp.status, 400);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(httpd_request_count(f->srv), 1);
	gcp_response_release(&resp);
	httpd_respond(f->srv, 404, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(httpd_request_count(f->srv), 2);
	gcp_response_release(&resp);
	assert_int_equal(f->fc.slept, 0);

	httpd_respond_n(f->srv, 4, 503, NULL, "{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\"}}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	assert_int_equal(resp.status, 503);
	assert_int_equal(resp.attempts, 4);
	assert_non_null(strstr(resp.body, "UNAVAILABLE"));
	assert_int_equal(httpd_request_count(f->srv), 6);
	assert_non_null(strstr(err.msg, ": giving up after 4 attempts: 503"));
	/* Full jitter bounded by 1 + 2 + 4 s. */
	assert_true(f->fc.slept <= 7000);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_backoff_deterministic(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	int64_t first;

	open_http(f);
	httpd_respond_n(f->srv, 5, 500, NULL, "", 0);
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	first = f->fc.slept;
	assert_true(first <= 1000 + 2000 + 4000 + 8000 + 16000);
	/* The same seed gives the same sleeps. */
	gcp_http_free(f->h);
	f->h = NULL;
	f->fc.slept = 0;
	open_http(f);
	httpd_respond_n(f->srv, 5, 500, NULL, "", 0);
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	assert_int_equal(f->fc.slept, first);
}

static void test_retry_after_seconds_and_date(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	char hdr[128];
	time_t t;
	struct tm tm;

	open_http(f);
	httpd_respond(f->srv, 503, "Retry-After: 7\r\n", "", 0);
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	assert_int_equal(f->fc.slept, 7000);
	assert_non_null(strstr(vx_buf_str(&f->log), "retrying in 7.0 s after 503 (attempt 2/6)"));

	/* An HTTP date 20 s after the (fake) wall clock. */
	t = (time_t)((WALL_BASE + f->fc.now) / 1000 + 20);
	gmtime_r(&t, &tm);
	strftime(hdr, sizeof(hdr), "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
	f->fc.slept = 0;
	httpd_respond(f->srv, 429, hdr, "", 0);
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	assert_true(f->fc.slept >= 19000 && f->fc.slept <= 20000);
}

static void test_retry_info(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;

	open_http(f);
	httpd_respond(f->srv, 429, NULL,
		      "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":"
		      "\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"3.5s\"}]}}", 0);
	httpd_respond(f->srv, 200, NULL, "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.attempts, 2);
	gcp_response_release(&resp);
	assert_int_equal(f->fc.slept, 3500);
}

static void test_deadline_stops_retries(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	f->o.deadline_ms = 5000;
	open_http(f);
	httpd_respond(f->srv, 503, "Retry-After: 10\r\n", "", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(f->fc.slept, 0);
	assert_non_null(strstr(err.msg, "would pass the 5 s deadline"));
	gcp_response_release(&resp);
	vx_err_release(&err);
	/* Given up while the server asked for 10 s: the caller's next try waits as asked. */
	assert_int_equal(gcp_http_retry_after(f->h), WALL_BASE + f->fc.now + 10000);
}

/* Failed requests are counted per api: no answer, 401/403/429/5xx; not another 4xx. */
static void test_errors_per_api(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	const char *names[GCP_HTTP_APIS];
	uint64_t counts[GCP_HTTP_APIS];
	size_t n = 0;

	f->o.max_attempts = 1;
	open_http(f);
	r.api = "aiplatform";
	httpd_respond(f->srv, 404, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	httpd_respond(f->srv, 403, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	httpd_respond(f->srv, 503, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), VX_ERETRY);
	gcp_response_release(&resp);
	r.api = "compute";
	httpd_respond(f->srv, 500, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), VX_ERETRY);
	gcp_response_release(&resp);
	gcp_http_errors(f->h, names, counts, &n);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "aiplatform");
	assert_int_equal(counts[0], 2);
	assert_string_equal(names[1], "compute");
	assert_int_equal(counts[1], 1);
	/* A second layer's counts add up. */
	gcp_http_errors(f->h, names, counts, &n);
	assert_int_equal(n, 2);
	assert_int_equal(counts[0], 4);
	assert_int_equal(gcp_http_retry_after(f->h), 0);
}

static void test_403_rate_limit_vs_permission(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/compute/v1/projects/p/zones/z/reservations");
	struct gcp_response resp;

	r.api = "compute";
	open_http(f);
	httpd_respond(f->srv, 403, NULL,
		      "{\"error\":{\"code\":403,\"message\":\"Rate Limit Exceeded\",\"errors\":[{\"message\":"
		      "\"Rate Limit Exceeded\",\"domain\":\"usageLimits\",\"reason\":\"rateLimitExceeded\"}]}}", 0);
	httpd_respond(f->srv, 403, NULL,
		      "{\"error\":{\"code\":403,\"errors\":[{\"reason\":\"userRateLimitExceeded\"}]}}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 3);
	gcp_response_release(&resp);
	assert_int_equal(httpd_request_count(f->srv), 3);

	httpd_respond(f->srv, 403, NULL,
		      "{\"error\":{\"code\":403,\"message\":\"denied\",\"status\":\"PERMISSION_DENIED\"}}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.status, 403);
	assert_int_equal(resp.attempts, 1);
	gcp_response_release(&resp);
	assert_int_equal(httpd_request_count(f->srv), 4);
}

static void test_never_drop_is_uncertain(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER), g;
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	/* A kept-alive connection first: libcurl must not resend on it by itself. */
	g = get_req(f, "/v1/warm");
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &g, &resp, &err), 0);
	gcp_response_release(&resp);
	httpd_drop(f->srv);
	httpd_respond(f->srv, 200, NULL, "{\"name\":\"second\"}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	assert_int_equal(resp.uncertain, 1);
	assert_int_equal(resp.status, 0);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(httpd_request_count(f->srv), 2);
	assert_string_equal(httpd_request(f->srv, 1)->body, "{\"displayName\":\"train-1\"}");
	assert_int_equal(httpd_pending(f->srv), 1);
	assert_non_null(strstr(err.msg, "the outcome is unknown"));
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_never_503_is_uncertain(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	httpd_respond(f->srv, 503, NULL, "{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\"}}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	assert_int_equal(resp.uncertain, 1);
	assert_int_equal(resp.status, 503);
	assert_int_equal(httpd_request_count(f->srv), 1);
	snprintf(f->url, sizeof(f->url), "POST %s/v1/projects/p/locations/us-central1/customJobs: HTTP 503 "
		 "UNAVAILABLE; the outcome is unknown; not sent again", httpd_url(f->srv));
	assert_string_equal(err.msg, f->url);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

/* Refusals (429) are sent again; the message must count every send, not say "not resent". */
static void test_never_message_counts_the_sends(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char want[256];

	open_http(f);
	httpd_respond_n(f->srv, 2, 429, NULL, "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}", 0);
	httpd_respond(f->srv, 503, NULL, "{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\"}}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	assert_int_equal(resp.uncertain, 1);
	assert_int_equal(httpd_request_count(f->srv), 3);
	snprintf(want, sizeof(want), "POST %s/v1/projects/p/locations/us-central1/customJobs: HTTP 503 "
		 "UNAVAILABLE after 3 tries; the last try's outcome is unknown; not sent again",
		 httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	gcp_response_release(&resp);

	/* A lost reply after a refusal. */
	httpd_respond(f->srv, 429, NULL, "{}", 0);
	httpd_drop(f->srv);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->srv), 5);
	snprintf(want, sizeof(want), "POST %s/v1/projects/p/locations/us-central1/customJobs: Empty reply "
		 "from server after the request was sent after 2 tries; the last try's outcome is unknown; "
		 "not sent again", httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_never_429_retried(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;

	open_http(f);
	httpd_respond(f->srv, 429, NULL, "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}", 0);
	httpd_respond(f->srv, 200, NULL, "{\"name\":\"j\"}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.uncertain, 0);
	assert_int_equal(httpd_request_count(f->srv), 2);
	gcp_response_release(&resp);
}

static void test_never_timeout_is_uncertain(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;

	open_http(f);
	r.timeout_ms = 150;
	httpd_respond(f->srv, 200, NULL, "{}", 600);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), VX_EUNCERTAIN);
	assert_int_equal(resp.uncertain, 1);
	assert_int_equal(httpd_request_count(f->srv), 1);
	gcp_response_release(&resp);
}

/* A fence that lets the first `allow` checks pass and refuses the rest. */
struct fence_count {
	int allow;
	int calls;
};

static int fence_check(void *ud, struct vx_err *err)
{
	struct fence_count *fc = ud;

	if (++fc->calls <= fc->allow)
		return 0;
	return vx_err_set(err, VX_ECONFLICT, "the lease is gone");
}

/* A refusing fence stops a create after the connection is up, before a byte
 * of the request: certainly not sent, so not uncertain. */
static void test_fence_stops_a_create_unsent(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct fence_count fc = { 0, 0 };
	struct gcp_fence fence = { fence_check, &fc };
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char *want;

	open_http(f);
	r.fence = &fence;
	httpd_respond(f->srv, 200, NULL, "{\"name\":\"j\"}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ECONFLICT);
	want = vx_asprintf("POST %s/v1/projects/p/locations/us-central1/customJobs: not sent: "
			   "the lease is gone", httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	assert_int_equal(fc.calls, 1);
	assert_int_equal(resp.uncertain, 0);
	assert_int_equal(resp.attempts, 0);
	assert_int_equal(resp.status, 0);
	/* Nothing arrived (the server may or may not have accepted the connection). */
	assert_int_equal(httpd_request_count(f->srv), 0);
	assert_int_equal(httpd_pending(f->srv), 1);
	/* A request without a fence goes out as before. */
	r.fence = NULL;
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(httpd_request_count(f->srv), 1);
	gcp_response_release(&resp);
	free(want);
	vx_err_release(&err);
}

/* Every attempt is checked: a retry after a 503 is not sent once the fence refuses. */
static void test_fence_checked_before_each_retry(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_SAFE);
	struct fence_count fc = { 1, 0 };
	struct gcp_fence fence = { fence_check, &fc };
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	r.fence = &fence;
	httpd_respond(f->srv, 503, NULL, "{\"error\":{\"code\":503}}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ECONFLICT);
	assert_int_equal(fc.calls, 2);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(resp.uncertain, 0);
	assert_int_equal(httpd_request_count(f->srv), 1);
	assert_non_null(strstr(err.msg, ": not sent: the lease is gone"));
	gcp_response_release(&resp);
	vx_err_release(&err);
}

/* A webhook: one try, whatever happens; any answer is returned as it came. */
static void test_once_is_one_try(void **state)
{
	struct fx *f = *state;
	struct httpd *gone = NULL;
	struct gcp_request r = create_req(f, GCP_RETRY_ONCE);
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char dead[128];

	open_http(f);
	r.no_auth = 1;
	httpd_respond(f->srv, 503, NULL, "{}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(resp.status, 503);
	assert_int_equal(resp.uncertain, 0);
	assert_int_equal(httpd_request_count(f->srv), 1);
	gcp_response_release(&resp);
	assert_int_equal(httpd_start(&gone), 0);
	snprintf(dead, sizeof(dead), "%s/hook", httpd_url(gone));
	httpd_stop(gone);
	r.url = dead;
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	assert_int_equal(resp.attempts, 1);
	assert_non_null(strstr(err.msg, "(not retried)"));
	assert_null(strstr(vx_buf_str(&f->log), "retrying"));
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_connect_refused(void **state)
{
	struct fx *f = *state;
	struct httpd *gone = NULL;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char dead[128], want[256];
	const char *w;

	/* A port nobody listens on any more. */
	assert_int_equal(httpd_start(&gone), 0);
	snprintf(dead, sizeof(dead), "%s/v1/x", httpd_url(gone));
	httpd_stop(gone);
	f->o.max_attempts = 3;
	open_http(f);
	r.url = dead;
	/* Failing to connect at all is safe to retry, even for a create. */
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	assert_int_equal(resp.uncertain, 0);
	assert_int_equal(resp.attempts, 3);
	assert_int_equal(resp.status, 0);
	assert_non_null(strstr(err.msg, "giving up after 3 attempts"));
	gcp_response_release(&resp);
	/* Said once, as a warning, with the bound: backoffs of at most 1 s and 2 s. */
	snprintf(want, sizeof(want), "\ncannot connect to %.*s (connection refused); retrying for up to 3 s\n",
		 (int)(strlen(dead) - strlen("/v1/x")), dead);
	assert_non_null(strstr(vx_buf_str(&f->log), want));
	w = strstr(vx_buf_str(&f->log), "cannot connect");
	assert_null(strstr(w + 1, "cannot connect"));
	/* Not again for the same server. */
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	w = strstr(vx_buf_str(&f->log), "cannot connect");
	assert_null(strstr(w + 1, "cannot connect"));
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_request_id_and_safe_resend_after_drop(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_REQUEST_ID);
	struct gcp_request g = get_req(f, "/v1/y");
	struct gcp_response resp;

	open_http(f);
	httpd_drop(f->srv);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.attempts, 2);
	gcp_response_release(&resp);
	assert_int_equal(httpd_request_count(f->srv), 2);
	assert_string_equal(httpd_request(f->srv, 0)->body, httpd_request(f->srv, 1)->body);

	httpd_close(f->srv);
	httpd_drop(f->srv);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &g, &resp, NULL), 0);
	assert_int_equal(resp.status, 200);
	gcp_response_release(&resp);
	assert_int_equal(httpd_closed_count(f->srv), 1);
	assert_int_equal(httpd_request_count(f->srv), 4);
}

static void test_safe_timeout_retried(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/slow");
	struct gcp_response resp;

	open_http(f);
	r.timeout_ms = 150;
	httpd_respond(f->srv, 200, NULL, "{\"late\":1}", 600);
	httpd_respond(f->srv, 200, NULL, "{\"fast\":1}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_string_equal(resp.body, "{\"fast\":1}");
	assert_int_equal(resp.attempts, 2);
	gcp_response_release(&resp);
}

static void test_401_refreshes_once(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;

	open_http(f);
	httpd_respond(f->srv, 401, NULL, "{\"error\":{\"code\":401,\"status\":\"UNAUTHENTICATED\"}}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.status, 200);
	gcp_response_release(&resp);
	assert_int_equal(f->tok.invalidations, 1);
	assert_string_equal(httpd_header(httpd_request(f->srv, 0), "Authorization"), "Bearer tok-0");
	assert_string_equal(httpd_header(httpd_request(f->srv, 1), "Authorization"), "Bearer tok-1");
	assert_int_equal(f->fc.slept, 0);

	/* A second 401 is returned, not retried again. */
	httpd_respond_n(f->srv, 2, 401, NULL, "{}", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	assert_int_equal(resp.status, 401);
	assert_int_equal(resp.attempts, 2);
	gcp_response_release(&resp);
	assert_int_equal(f->tok.invalidations, 2);
	assert_int_equal(httpd_request_count(f->srv), 4);
}

static void test_no_tokens(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	gcp_http_set_tokens(f->h, NULL);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EAUTH);
	assert_non_null(strstr(err.msg, "GOOGLE_APPLICATION_CREDENTIALS"));
	assert_int_equal(httpd_request_count(f->srv), 0);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_response_cap(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/big");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char body[1001];

	memset(body, 'a', 1000);
	body[1000] = '\0';
	f->o.max_response_bytes = 1000;
	open_http(f);
	httpd_respond(f->srv, 200, NULL, body, 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	assert_int_equal(resp.body_len, 1000);
	gcp_response_release(&resp);
	body[999] = '\0';
	httpd_respond(f->srv, 200, "Content-Type: text/plain\r\n", "x", 0);
	gcp_http_free(f->h);
	f->h = NULL;
	f->o.max_response_bytes = 999;
	open_http(f);
	memset(body, 'b', 1000);
	body[1000] = '\0';
	/* The queued "x" first, then a body over the cap. */
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	gcp_response_release(&resp);
	httpd_respond(f->srv, 200, NULL, body, 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EINVAL);
	assert_non_null(strstr(err.msg, "the response is larger than 999 bytes"));
	assert_int_equal(resp.attempts, 1);
	assert_null(resp.body);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_send_many_bounded(void **state)
{
	struct fx *f = *state;
	struct gcp_request reqs[40];
	struct gcp_response resps[40];
	int rcs[40];
	char urls[40][128];
	size_t i;

	f->o.max_in_flight = 4;
	open_http(f);
	httpd_set_default(f->srv, 200, NULL, "{\"ok\":1}", 40);
	for (i = 0; i < 40; i++) {
		reqs[i] = get_req(f, "/");
		snprintf(urls[i], sizeof(urls[i]), "%s/v1/item/%zu", httpd_url(f->srv), i);
		reqs[i].url = urls[i];
	}
	assert_int_equal(gcp_http_send_many(f->h, 40, reqs, resps, rcs, NULL), 0);
	for (i = 0; i < 40; i++) {
		assert_int_equal(rcs[i], 0);
		assert_int_equal(resps[i].status, 200);
		assert_string_equal(resps[i].body, "{\"ok\":1}");
		gcp_response_release(&resps[i]);
	}
	assert_int_equal(httpd_request_count(f->srv), 40);
	assert_int_equal(httpd_max_concurrent(f->srv), 4);
	/* Connections were reused, never more than max_in_flight of them. */
	assert_true(httpd_connection_count(f->srv) <= 4);
}

static void test_send_many_rate_limited(void **state)
{
	struct fx *f = *state;
	enum { N = 200 };
	struct gcp_request *reqs = calloc(N, sizeof(*reqs));
	struct gcp_response *resps = calloc(N, sizeof(*resps));
	struct vx_err *errs = calloc(N, sizeof(*errs));
	int *rcs = calloc(N, sizeof(*rcs));
	size_t i;
	int64_t t0;

	assert_non_null(reqs);
	assert_non_null(resps);
	assert_non_null(errs);
	assert_non_null(rcs);
	f->o.rate_per_minute = 600; /* burst: a tenth, 60 */
	f->ctx.log_level = VX_LOG_INFO;
	open_http(f);
	httpd_set_default(f->srv, 200, NULL, "{}", 0);
	for (i = 0; i < N; i++)
		reqs[i] = get_req(f, "/v1/projects/p/locations/us-central1/customJobs/1");
	t0 = f->fc.now;
	assert_int_equal(gcp_http_send_many(f->h, N, reqs, resps, rcs, errs), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(rcs[i], 0);
		assert_null(errs[i].msg);
		gcp_response_release(&resps[i]);
	}
	assert_int_equal(httpd_request_count(f->srv), N);
	/* 60 at once, then 140 at 9 a second (the bucket refills at 600 - 60 a minute). */
	assert_int_equal(f->fc.now - t0, 15556);
	free(reqs);
	free(resps);
	free(errs);
	free(rcs);
}

static void test_no_secret_in_log(void **state)
{
	struct fx *f = *state;
	static const char form[] = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
				   "&assertion=SECRET.ASSERTION.SIG";
	struct gcp_request r;
	struct gcp_response resp;
	char expect[256];

	snprintf(f->tok.prefix, sizeof(f->tok.prefix), "ya29.SECRET");
	open_http(f);
	r = get_req(f, "/v1/a?access_token=SECRET1&x=1&refresh_token=SECRET2");
	httpd_respond(f->srv, 503, NULL, "", 0);
	httpd_respond(f->srv, 401, NULL, "", 0);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	memset(&r, 0, sizeof(r));
	r.method = "POST";
	r.url = url(f, "/token");
	r.body = form;
	r.body_len = strlen(form);
	r.content_type = "application/x-www-form-urlencoded";
	r.no_auth = 1;
	r.api = "oauth";
	httpd_respond(f->srv, 400, NULL, "{\"error\":\"invalid_grant\"}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, NULL), 0);
	gcp_response_release(&resp);
	assert_string_equal(httpd_header(httpd_request(f->srv, 3), "Content-Type"),
			    "application/x-www-form-urlencoded");
	assert_string_equal(httpd_request(f->srv, 3)->body, form);
	/* The token really was sent... */
	assert_string_equal(httpd_header(httpd_request(f->srv, 0), "Authorization"), "Bearer ya29.SECRET-0");
	/* ...and never logged. */
	assert_null(strstr(vx_buf_str(&f->log), "SECRET"));
	assert_null(strstr(vx_buf_str(&f->log), "Bearer"));
	snprintf(expect, sizeof(expect), "GET %s/v1/a?access_token=REDACTED&x=1&refresh_token=REDACTED -> 200",
		 httpd_url(f->srv));
	assert_non_null(strstr(vx_buf_str(&f->log), expect));
	snprintf(expect, sizeof(expect), "POST %s/token (body %zu bytes) -> 400 INVALID_ARGUMENT invalid_grant",
		 httpd_url(f->srv), strlen(form));
	assert_non_null(strstr(vx_buf_str(&f->log), expect));
}

/* A webhook's URL is its secret: logs and errors name the request by log_name instead. */
static void test_log_name_hides_the_url(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = create_req(f, GCP_RETRY_NEVER);
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	r.url = url(f, "/services/T0/B0/SECRETPATH");
	r.no_auth = 1;
	r.log_name = "notify[0]";
	httpd_respond(f->srv, 200, NULL, "ok", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), 0);
	gcp_response_release(&resp);
	assert_string_equal(httpd_request(f->srv, 0)->target, "/services/T0/B0/SECRETPATH");
	httpd_drop(f->srv);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	gcp_response_release(&resp);
	assert_null(strstr(vx_err_msg(&err), "SECRETPATH"));
	assert_non_null(strstr(vx_err_msg(&err), "notify[0]"));
	vx_err_release(&err);
	assert_null(strstr(vx_buf_str(&f->log), "SECRETPATH"));
	assert_non_null(strstr(vx_buf_str(&f->log), "POST notify[0] (body"));
}

static volatile sig_atomic_t interrupted;

static void test_interrupted(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;

	open_http(f);
	f->ctx.interrupted = &interrupted;
	interrupted = 1;
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ECANCELED);
	assert_int_equal(httpd_request_count(f->srv), 0);
	interrupted = 0;
	gcp_response_release(&resp);
	vx_err_release(&err);
}

/* Raises the interrupt level once the server has read a request, as a Ctrl-C mid-flight would. */
struct interrupter {
	struct httpd *srv;
	int level;
};

static void *interrupt_when_sent(void *ud)
{
	struct interrupter *in = ud;

	while (httpd_request_count(in->srv) < 1)
		usleep(1000);
	interrupted = in->level;
	return NULL;
}

/* Two creates, one at a time; the interrupt comes while the first is on the wire. */
static void interrupt_mid_flight(struct fx *f, int level, int *rcs, struct gcp_response *resps,
				 struct vx_err *errs)
{
	struct gcp_request rs[2] = { create_req(f, GCP_RETRY_NEVER), create_req(f, GCP_RETRY_NEVER) };
	struct interrupter in = { f->srv, level };
	pthread_t t;

	f->o.max_in_flight = 1;
	open_http(f);
	f->ctx.interrupted = &interrupted;
	interrupted = 0;
	httpd_respond_n(f->srv, 2, 200, NULL, "{\"name\":\"made\"}", 400);
	assert_int_equal(pthread_create(&t, NULL, interrupt_when_sent, &in), 0);
	assert_int_equal(gcp_http_send_many(f->h, 2, rs, resps, rcs, errs), 0);
	pthread_join(t, NULL);
	interrupted = 0;
	/* The second create was never sent. */
	assert_int_equal(rcs[1], VX_ECANCELED);
	assert_int_equal(httpd_request_count(f->srv), 1);
}

static void test_interrupt_lets_the_request_in_flight_finish(void **state)
{
	struct fx *f = *state;
	struct gcp_response resps[2];
	struct vx_err errs[2] = { VX_ERR_INIT, VX_ERR_INIT };
	int rcs[2];

	interrupt_mid_flight(f, 1, rcs, resps, errs);
	/* The first finished: its job is known, not lost. */
	assert_int_equal(rcs[0], 0);
	assert_int_equal(resps[0].status, 200);
	assert_non_null(strstr(resps[0].body, "made"));
	for (int i = 0; i < 2; i++) {
		gcp_response_release(&resps[i]);
		vx_err_release(&errs[i]);
	}
}

static void test_second_interrupt_abandons_a_create_as_uncertain(void **state)
{
	struct fx *f = *state;
	struct gcp_response resps[2];
	struct vx_err errs[2] = { VX_ERR_INIT, VX_ERR_INIT };
	int rcs[2];

	interrupt_mid_flight(f, 2, rcs, resps, errs);
	/* Cut off after it was sent: the job may exist, so never "cancelled". */
	assert_int_equal(rcs[0], VX_EUNCERTAIN);
	assert_int_equal(resps[0].uncertain, 1);
	assert_non_null(strstr(errs[0].msg, "abandoned in flight"));
	for (int i = 0; i < 2; i++) {
		gcp_response_release(&resps[i]);
		vx_err_release(&errs[i]);
	}
}

/* A token source that itself fetches the token through the same layer, as auth.c does. */
struct nested {
	struct fx *f;
	int calls;
};

static int nested_get(void *ud, char **out, struct vx_err *err)
{
	struct nested *n = ud;
	struct gcp_request r;
	struct gcp_response resp;
	int rc;

	n->calls++;
	memset(&r, 0, sizeof(r));
	r.method = "POST";
	r.url = url(n->f, "/token");
	r.body = "grant_type=x";
	r.body_len = 12;
	r.content_type = "application/x-www-form-urlencoded";
	r.no_auth = 1;
	r.api = "oauth";
	rc = gcp_http_send(n->f->h, &r, &resp, err);
	if (rc == 0)
		*out = vx_strdup(resp.body);
	gcp_response_release(&resp);
	return rc;
}

static void test_nested_token_fetch(void **state)
{
	struct fx *f = *state;
	struct nested n = { f, 0 };
	struct gcp_token_source ts = { nested_get, NULL, &n };
	struct gcp_request reqs[3];
	struct gcp_response resps[3];
	int rcs[3];
	char u[3][128];
	int i;

	open_http(f);
	gcp_http_set_tokens(f->h, &ts);
	httpd_set_default(f->srv, 200, NULL, "T", 0);
	for (i = 0; i < 3; i++) {
		reqs[i] = get_req(f, "/");
		snprintf(u[i], sizeof(u[i]), "%s/v1/n/%d", httpd_url(f->srv), i);
		reqs[i].url = u[i];
	}
	assert_int_equal(gcp_http_send_many(f->h, 3, reqs, resps, rcs, NULL), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(rcs[i], 0);
		assert_int_equal(resps[i].status, 200);
		gcp_response_release(&resps[i]);
	}
	assert_int_equal(n.calls, 3);
	assert_int_equal(httpd_request_count(f->srv), 6);
}

/* A token source that hands out what a hostile token endpoint sent. */
static int evil_get(void *ud, char **out, struct vx_err *err)
{
	(void)ud;
	(void)err;
	*out = vx_strdup("abc\r\nX-Injected: yes");
	return *out ? 0 : VX_ENOMEM;
}

static void test_token_with_crlf_not_sent(void **state)
{
	struct fx *f = *state;
	struct gcp_token_source ts = { evil_get, NULL, NULL };
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char want[256];

	open_http(f);
	gcp_http_set_tokens(f->h, &ts);
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EAUTH);
	snprintf(want, sizeof(want), "GET %s/v1/x: the access token has characters a bearer token may not "
		 "hold (RFC 6750); not sent", httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	assert_int_equal(httpd_request_count(f->srv), 0);
	assert_null(strstr(vx_buf_str(&f->log), "abc"));
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_token_charset(void **state)
{
	(void)state;
	assert_true(gcp_http_token_ok("ya29.a0AfH6SM-b_c~d+e/f"));
	assert_true(gcp_http_token_ok("YWJj=="));
	assert_false(gcp_http_token_ok(""));
	assert_false(gcp_http_token_ok(NULL));
	assert_false(gcp_http_token_ok("=="));
	assert_false(gcp_http_token_ok("a=b"));
	assert_false(gcp_http_token_ok("abc\r\nX-Injected: yes"));
	assert_false(gcp_http_token_ok("a b"));
	assert_false(gcp_http_token_ok("a\tb"));
	assert_false(gcp_http_token_ok("tok\xc3\xa9"));
}

static void test_huge_response_header(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/x");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf hdr = VX_BUF_INIT;
	char want[256];
	size_t i;

	open_http(f);
	/* One 1 MiB line, then many small lines adding up past the limit. */
	assert_int_equal(vx_buf_adds(&hdr, "X-Big: "), 0);
	for (i = 0; i < (1u << 20); i++)
		assert_int_equal(vx_buf_addc(&hdr, 'a'), 0);
	assert_int_equal(vx_buf_adds(&hdr, "\r\n"), 0);
	httpd_respond(f->srv, 200, vx_buf_str(&hdr), "{}", 0);
	vx_buf_reset(&hdr);
	for (i = 0; i < 2000; i++)
		assert_int_equal(vx_buf_printf(&hdr, "X-Many-%zu: %064zu\r\n", i, i), 0);
	httpd_respond(f->srv, 200, vx_buf_str(&hdr), "{}", 0);
	snprintf(want, sizeof(want), "GET %s/v1/x: the response header is larger than 102400 bytes",
		 httpd_url(f->srv));
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EINVAL);
	assert_string_equal(err.msg, want);
	gcp_response_release(&resp);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EINVAL);
	assert_string_equal(err.msg, want);
	assert_int_equal(resp.attempts, 1);
	gcp_response_release(&resp);
	/* A create that got such an answer may have been made. */
	vx_buf_reset(&hdr);
	for (i = 0; i < 2000; i++)
		assert_int_equal(vx_buf_printf(&hdr, "X-Many-%zu: %064zu\r\n", i, i), 0);
	httpd_respond(f->srv, 200, vx_buf_str(&hdr), "{}", 0);
	r = create_req(f, GCP_RETRY_NEVER);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_EUNCERTAIN);
	snprintf(want, sizeof(want), "POST %s/v1/projects/p/locations/us-central1/customJobs: the response "
		 "header is larger than 102400 bytes; the outcome is unknown; not sent again", httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	gcp_response_release(&resp);
	vx_buf_release(&hdr);
	vx_err_release(&err);
}

/* A server that drips its answer is cut off by the command's time limit, and the message says so. */
static void test_command_time_limit(void **state)
{
	struct fx *f = *state;
	struct gcp_request r = get_req(f, "/v1/slow");
	struct gcp_response resp;
	struct vx_err err = VX_ERR_INIT;
	char want[256];
	struct timespec t0, t1;

	/* A limit of 1 s of which 0.4 s are left. */
	f->ctx.time_limit_ms = 1000;
	f->ctx.deadline_ms = f->fc.now + 400;
	open_http(f);
	httpd_set_default(f->srv, 200, NULL, "{\"a\":\"0123456789012345678901234567890123456789\"}", 0);
	httpd_drip(f->srv, 200, NULL, "{\"a\":\"0123456789012345678901234567890123456789\"}", 50);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(want, sizeof(want), "GET %s/v1/slow: giving up after 1 attempts: Timeout was reached "
		 "(retrying in 0.6 s would pass the command's time limit of 1 s (VX_TIMEOUT))",
		 httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	/* Cut at the limit (0.4 s of a 2.5 s drip), not at the 60 s per-attempt timeout. */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 2000);
	gcp_response_release(&resp);

	/* Once it has passed, nothing more is sent. */
	f->fc.now += 400;
	assert_int_equal(gcp_http_send(f->h, &r, &resp, &err), VX_ERETRY);
	snprintf(want, sizeof(want), "GET %s/v1/slow: the command's time limit of 1 s (VX_TIMEOUT) passed "
		 "before an answer", httpd_url(f->srv));
	assert_string_equal(err.msg, want);
	assert_int_equal(httpd_request_count(f->srv), 1);
	gcp_response_release(&resp);
	vx_err_release(&err);
}

static void test_url_escape(void **state)
{
	char *s;

	(void)state;
	s = gcp_url_escape("labels.vx-stack=\"a b\"/é~_.");
	assert_string_equal(s, "labels.vx-stack%3D%22a%20b%22%2F%C3%A9~_.");
	free(s);
	s = gcp_url_escape("");
	assert_string_equal(s, "");
	free(s);
	assert_null(gcp_url_escape(NULL));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_get_headers_and_body),
		T(test_post_body_no_auth_and_methods),
		T(test_each_retryable_status),
		T(test_non_retryable_and_exhausted),
		T(test_backoff_deterministic),
		T(test_retry_after_seconds_and_date),
		T(test_retry_info),
		T(test_deadline_stops_retries),
		T(test_403_rate_limit_vs_permission),
		T(test_never_drop_is_uncertain),
		T(test_never_503_is_uncertain),
		T(test_never_429_retried),
		T(test_never_message_counts_the_sends),
		T(test_token_with_crlf_not_sent),
		cmocka_unit_test(test_token_charset),
		T(test_huge_response_header),
		T(test_command_time_limit),
		T(test_never_timeout_is_uncertain),
		T(test_fence_stops_a_create_unsent),
		T(test_fence_checked_before_each_retry),
		T(test_connect_refused),
		T(test_once_is_one_try),
		T(test_request_id_and_safe_resend_after_drop),
		T(test_safe_timeout_retried),
		T(test_401_refreshes_once),
		T(test_no_tokens),
		T(test_response_cap),
		T(test_send_many_bounded),
		T(test_send_many_rate_limited),
		T(test_no_secret_in_log),
		T(test_errors_per_api),
		T(test_log_name_hides_the_url),
		T(test_interrupted),
		T(test_interrupt_lets_the_request_in_flight_finish),
		T(test_second_interrupt_abandons_a_create_as_uncertain),
		T(test_nested_token_fetch),
		cmocka_unit_test(test_url_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
