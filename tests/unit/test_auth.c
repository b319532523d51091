/*
 * Unit tests for providers/gcp/auth: every credential type end to end
 * against the scripted test server (exact token request bodies, expiry and
 * refresh on a fake clock, invalidate, error bodies), the ADC order, the
 * group-readable warning, and that no secret reaches a log line, an error
 * message or the description.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/http.h"
#include "providers/gcp/jwt.h"
#include "tests/unit/support/httpd.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/err.h"

#define T0_MS INT64_C(1795341926000)

static const char *const env_vars[] = {
	"GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "google_application_credentials",
	"CLOUDSDK_CONFIG", "GCE_METADATA_HOST", "GCE_METADATA_IP", "METADATA_SERVER_DETECTION",
	"GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_QUOTA_PROJECT", "http_proxy",
};

struct fx {
	struct vx_ctx ctx;
	int64_t now;
	struct vx_buf log;
	struct httpd *srv;
	struct gcp_http *http;
	struct gcp_auth *auth;
	char dir[64];
	EVP_PKEY *key;
	char *pem;
};

static int64_t fake_now(void *ud)
{
	return ((struct fx *)ud)->now;
}

static void capture_log(void *ud, int level, const char *msg)
{
	struct fx *f = ud;

	assert_int_equal(vx_buf_printf(&f->log, "%d %s\n", level, msg), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct gcp_http_options opts;
	struct vx_err err = VX_ERR_INIT;
	size_t i;

	assert_non_null(f);
	for (i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
	vx_ctx_init(&f->ctx);
	f->now = T0_MS;
	f->ctx.clock.now_ms = fake_now;
	f->ctx.clock.ud = f;
	f->ctx.log = capture_log;
	f->ctx.log_ud = f;
	f->ctx.log_level = VX_LOG_DEBUG;
	f->ctx.seed = 1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/vx-auth-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	/* No gcloud file, no metadata server unless a test asks. */
	setenv("HOME", f->dir, 1);
	setenv("METADATA_SERVER_DETECTION", "none", 1);
	assert_int_equal(httpd_start(&f->srv), 0);
	memset(&opts, 0, sizeof(opts));
	opts.max_attempts = 1;
	opts.backoff_initial_ms = 1;
	opts.backoff_max_ms = 2;
	opts.timeout_ms = 5000;
	opts.rate_per_minute = -1;
	assert_int_equal(gcp_http_new(&f->http, &f->ctx, &opts, NULL, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	gcp_auth_free(f->auth);
	gcp_http_free(f->http);
	httpd_stop(f->srv);
	EVP_PKEY_free(f->key);
	free(f->pem);
	vx_buf_release(&f->log);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static char *write_file(struct fx *f, const char *name, const char *content, mode_t mode)
{
	char *path = vx_asprintf("%s/%s", f->dir, name);
	FILE *fp;

	assert_non_null(path);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fputs(content, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static char *url_of(struct fx *f, const char *path)
{
	char *u = vx_asprintf("%s%s", httpd_url(f->srv), path);

	assert_non_null(u);
	return u;
}

/* A new auth from the current environment, wired to the HTTP layer. */
static int new_auth(struct fx *f, struct vx_err *err)
{
	int rc = gcp_auth_new(&f->auth, &f->ctx, NULL, err);

	if (rc == 0) {
		gcp_auth_set_http(f->auth, f->http);
		gcp_http_set_tokens(f->http, gcp_auth_token_source(f->auth));
	}
	return rc;
}

static void expect_token(struct fx *f, const char *want)
{
	struct vx_err err = VX_ERR_INIT;
	const struct gcp_token_source *src = gcp_auth_token_source(f->auth);
	char *tok = NULL;

	assert_int_equal(src->get(src->ud, &tok, &err), 0);
	assert_string_equal(tok, want);
	free(tok);
	vx_err_release(&err);
}

static void assert_not_in(const char *hay, const char *secret)
{
	if (hay && secret && strstr(hay, secret))
		fail_msg("secret \"%.12s...\" found in \"%s\"", secret, hay);
}

static void assert_log_clean(struct fx *f, const char *const *secrets, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		assert_not_in(vx_buf_str(&f->log), secrets[i]);
		if (f->auth)
			assert_not_in(gcp_auth_describe(f->auth), secrets[i]);
	}
}

/* ---- service account ----------------------------------------------------- */

static char *make_sa_file(struct fx *f, const char *token_uri, mode_t mode)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL, *text, *path;
	cJSON *j = cJSON_CreateObject();
	long n;

	f->key = EVP_RSA_gen(2048);
	assert_non_null(f->key);
	assert_int_equal(PEM_write_bio_PrivateKey(bio, f->key, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &data);
	f->pem = strndup(data, (size_t)n);
	BIO_free(bio);
	cJSON_AddStringToObject(j, "type", "service_account");
	cJSON_AddStringToObject(j, "project_id", "key-proj");
	cJSON_AddStringToObject(j, "private_key_id", "kid-1");
	cJSON_AddStringToObject(j, "private_key", f->pem);
	cJSON_AddStringToObject(j, "client_email", "sa@key-proj.iam.gserviceaccount.com");
	cJSON_AddStringToObject(j, "quota_project_id", "billing-proj");
	if (token_uri)
		cJSON_AddStringToObject(j, "token_uri", token_uri);
	text = cJSON_Print(j);
	path = write_file(f, "key.json", text, mode);
	cJSON_free(text);
	cJSON_Delete(j);
	return path;
}

/* Checks a JWT-bearer request and returns its assertion (owned). */
static char *check_jwt_request(struct fx *f, const struct httpd_request *r, const char *aud, int64_t iat)
{
	static const char prefix[] = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";
	const char *jwt, *dot1, *dot2;
	unsigned char *hdr = NULL, *claims = NULL, *sig = NULL;
	size_t hl, cl, sl;
	char want[512];
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/token");
	assert_string_equal(httpd_header(r, "Content-Type"), "application/x-www-form-urlencoded");
	assert_null(httpd_header(r, "Authorization"));
	assert_int_equal(strncmp(r->body, prefix, strlen(prefix)), 0);
	jwt = r->body + strlen(prefix);
	dot1 = strchr(jwt, '.');
	assert_non_null(dot1);
	dot2 = strchr(dot1 + 1, '.');
	assert_non_null(dot2);
	assert_int_equal(gcp_base64url_decode(&hdr, &hl, jwt, (size_t)(dot1 - jwt)), 0);
	assert_int_equal(gcp_base64url_decode(&claims, &cl, dot1 + 1, (size_t)(dot2 - dot1 - 1)), 0);
	assert_int_equal(gcp_base64url_decode(&sig, &sl, dot2 + 1, strlen(dot2 + 1)), 0);
	assert_string_equal((char *)hdr, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"kid-1\"}");
	snprintf(want, sizeof(want),
		 "{\"iss\":\"sa@key-proj.iam.gserviceaccount.com\","
		 "\"scope\":\"https://www.googleapis.com/auth/cloud-platform\",\"aud\":\"%s\","
		 "\"iat\":%lld,\"exp\":%lld}",
		 aud, (long long)iat, (long long)(iat + 3600));
	assert_string_equal((char *)claims, want);
	assert_non_null(md);
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, f->key), 1);
	assert_int_equal(EVP_DigestVerify(md, sig, sl, (const unsigned char *)jwt, (size_t)(dot2 - jwt)), 1);
	EVP_MD_CTX_free(md);
	free(hdr);
	free(claims);
	free(sig);
	return strdup(jwt);
}

static void test_service_account(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *token_uri = url_of(f, "/token"), *path = make_sa_file(f, token_uri, 0600);
	char *assertion1, *assertion2, *assertion3, *want, *proj = NULL;
	const char *from = NULL;
	const char *pem_body;

	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_SERVICE_ACCOUNT);
	want = vx_asprintf("service account sa@key-proj.iam.gserviceaccount.com from %s", path);
	assert_string_equal(gcp_auth_describe(f->auth), want);
	assert_string_equal(gcp_auth_file(f->auth), path);
	assert_string_equal(gcp_auth_quota_project(f->auth), "billing-proj");
	assert_int_equal(gcp_auth_project(f->auth, NULL, &proj, &from, &err), 0);
	assert_string_equal(proj, "key-proj");
	assert_string_equal(from, "credential file");
	free(proj);
	assert_int_equal(httpd_request_count(f->srv), 0);

	httpd_respond(f->srv, 200, "Content-Type: application/json\r\n",
		      "{\"access_token\":\"ya29.first-token\",\"expires_in\":3599,\"token_type\":\"Bearer\"}", 0);
	expect_token(f, "ya29.first-token");
	assert_int_equal(httpd_request_count(f->srv), 1);
	assertion1 = check_jwt_request(f, httpd_request(f->srv, 0), token_uri, T0_MS / 1000);

	/* Cached until 5 minutes before expiry. */
	f->now = T0_MS + (3599 - 300) * INT64_C(1000) - 1;
	expect_token(f, "ya29.first-token");
	assert_int_equal(httpd_request_count(f->srv), 1);
	f->now += 1;
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.second-token\",\"expires_in\":3599}", 0);
	expect_token(f, "ya29.second-token");
	assert_int_equal(httpd_request_count(f->srv), 2);
	assertion2 = check_jwt_request(f, httpd_request(f->srv, 1), token_uri, f->now / 1000);

	/* invalidate (what the HTTP layer does on a 401) forces a new one. */
	gcp_auth_token_source(f->auth)->invalidate(gcp_auth_token_source(f->auth)->ud);
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.third-token\",\"expires_in\":3599}", 0);
	expect_token(f, "ya29.third-token");
	assert_int_equal(httpd_request_count(f->srv), 3);
	assertion3 = check_jwt_request(f, httpd_request(f->srv, 2), token_uri, f->now / 1000);

	/* No secret in logs or the description. */
	pem_body = strstr(f->pem, "\n") + 1;
	{
		char pem_line[65];
		const char *secrets[7];

		snprintf(pem_line, sizeof(pem_line), "%.64s", pem_body);
		secrets[0] = "ya29.first-token";
		secrets[1] = "ya29.second-token";
		secrets[2] = "ya29.third-token";
		secrets[3] = assertion1;
		secrets[4] = assertion2;
		secrets[5] = assertion3;
		secrets[6] = pem_line;
		assert_log_clean(f, secrets, 7);
	}
	assert_non_null(strstr(vx_buf_str(&f->log), "auth: new token from service account"));
	free(assertion1);
	free(assertion2);
	free(assertion3);
	free(want);
	free(path);
	free(token_uri);
	vx_err_release(&err);
}

static void test_service_account_errors(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *token_uri = url_of(f, "/token"), *path = make_sa_file(f, token_uri, 0600), *want, *tok = NULL;
	char *assertion, *echo;

	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	httpd_respond(f->srv, 400, "Content-Type: application/json\r\n",
		      "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assert_null(tok);
	want = vx_asprintf("service account sa@key-proj.iam.gserviceaccount.com from %s: token request to %s "
			   "failed: HTTP 400: invalid_grant: Invalid JWT Signature. (the key may have been deleted "
			   "or disabled, or this machine's clock is wrong)",
			   path, token_uri);
	assert_string_equal(err.msg, want);
	free(want);

	/* A server echoing the request must not get the assertion into our message. */
	assertion = check_jwt_request(f, httpd_request(f->srv, 0), token_uri, T0_MS / 1000);
	echo = vx_asprintf("{\"error\":\"invalid_request\",\"error_description\":\"bad assertion %s\"}", assertion);
	free(assertion);
	httpd_respond(f->srv, 400, NULL, echo, 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assertion = check_jwt_request(f, httpd_request(f->srv, 1), token_uri, T0_MS / 1000);
	assert_not_in(err.msg, assertion);
	assert_non_null(strstr(err.msg, "invalid_request: bad assertion [redacted]"));
	free(assertion);
	free(echo);

	/* 200 without a token. */
	httpd_respond(f->srv, 200, NULL, "{\"token_type\":\"Bearer\"}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	want = vx_asprintf("service account sa@key-proj.iam.gserviceaccount.com from %s: the answer of %s has "
			   "no access_token",
			   path, token_uri);
	assert_string_equal(err.msg, want);
	free(want);

	/* A token that would add a header is refused, and never printed. */
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"abc\\r\\nX-Injected: yes\",\"expires_in\":3600}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assert_null(tok);
	want = vx_asprintf("service account sa@key-proj.iam.gserviceaccount.com from %s: the access_token in the "
			   "answer of %s has characters a bearer token may not hold (RFC 6750); refused",
			   path, token_uri);
	assert_string_equal(err.msg, want);
	free(want);
	/* Cut at a NUL, the rest would look like a clean token: refused as well. */
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"abc\\u0000\\r\\nX: y\",\"expires_in\":3600}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assert_null(tok);
	free(path);
	free(token_uri);
	vx_err_release(&err);
}

static void test_service_account_bad_files(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *path, *want;

	path = write_file(f, "k1.json",
			  "{\"type\":\"service_account\",\"client_email\":\"a@b\",\"private_key\":\"-----BEGIN "
			  "PRIVATE KEY-----\\nTOPSECRET\\n-----END PRIVATE KEY-----\\n\","
			  "\"token_uri\":\"http://oauth.example.com/token\"}",
			  0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("credential file %s: token_uri: http:// is only allowed for loopback hosts "
			   "(127.0.0.0/8, localhost, [::1]), not \"oauth.example.com\"; use https://",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);

	path = write_file(f, "k2.json",
			  "{\"type\":\"service_account\",\"client_email\":\"a@b\",\"private_key\":\"-----BEGIN "
			  "PRIVATE KEY-----\\nTOPSECRET\\n-----END PRIVATE KEY-----\\n\"}",
			  0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	{
		char *tok = NULL;

		assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EINVAL);
		want = vx_asprintf("service account a@b from %s: private_key is not a PEM private key (expected "
				   "\"-----BEGIN PRIVATE KEY-----\")",
				   path);
		assert_string_equal(err.msg, want);
		free(want);
	}
	assert_int_equal(httpd_request_count(f->srv), 0);
	gcp_auth_free(f->auth);
	f->auth = NULL;
	free(path);

	path = write_file(f, "k3.json", "{\"type\":\"service_account\",\"private_key\":\"TOPSECRET\"}", 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("service account key %s: missing \"client_email\"", path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);

	path = write_file(f, "k4.json", "not json TOPSECRET", 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("reading credentials from GOOGLE_APPLICATION_CREDENTIALS: %s is not a JSON credential "
			   "file",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);

	path = write_file(f, "k5.json", "{\"type\":\"impersonated_service_account\"}", 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("reading credentials from GOOGLE_APPLICATION_CREDENTIALS: %s has type "
			   "\"impersonated_service_account\", which vx does not support (service_account, "
			   "authorized_user, external_account)",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);
	assert_null(strstr(vx_buf_str(&f->log), "TOPSECRET"));
	vx_err_release(&err);
}

/* ---- authorized_user, the well-known file, the group-readable warning ---- */

static void test_authorized_user_well_known(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *token_uri = url_of(f, "/token"), *gdir, *path, *content, *want, *tok = NULL;

	gdir = vx_asprintf("%s/.config/gcloud", f->dir);
	want = vx_asprintf("mkdir -p '%s'", gdir);
	assert_int_equal(system(want), 0);
	free(want);
	content = vx_asprintf("{\"type\":\"authorized_user\",\"client_id\":\"cid.apps.googleusercontent.com\","
			      "\"client_secret\":\"csecret-XYZ\",\"refresh_token\":\"1//rt-SECRET\","
			      "\"quota_project_id\":\"qp\",\"token_uri\":\"%s\"}",
			      token_uri);
	path = write_file(f, ".config/gcloud/application_default_credentials.json", content, 0644);
	free(content);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_AUTHORIZED_USER);
	want = vx_asprintf("user credentials (authorized_user) from %s", path);
	assert_string_equal(gcp_auth_describe(f->auth), want);
	free(want);
	want = vx_asprintf("1 credential file %s is readable by group or others (mode 644); restrict it with "
			   "'chmod 600 %s'\n",
			   path, path);
	assert_non_null(strstr(vx_buf_str(&f->log), want));
	free(want);
	/* GOOGLE_CLOUD_QUOTA_PROJECT beats the file's quota_project_id. */
	assert_string_equal(gcp_auth_quota_project(f->auth), "qp");

	httpd_respond(f->srv, 200, NULL,
		      "{\"access_token\":\"ya29.user-token\",\"expires_in\":3599,\"token_type\":\"Bearer\","
		      "\"scope\":\"openid\"}",
		      0);
	expect_token(f, "ya29.user-token");
	assert_string_equal(httpd_request(f->srv, 0)->target, "/token");
	assert_string_equal(httpd_request(f->srv, 0)->body,
			    "refresh_token=1%2F%2Frt-SECRET&client_id=cid.apps.googleusercontent.com&"
			    "client_secret=csecret-XYZ&grant_type=refresh_token");

	f->now += 3600 * 1000;
	httpd_respond(f->srv, 400, NULL,
		      "{\"error\":\"invalid_grant\",\"error_description\":\"reauth related error (invalid_rapt)\"}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	want = vx_asprintf("user credentials (authorized_user) from %s: token request to %s failed: HTTP 400: "
			   "invalid_grant: reauth related error (invalid_rapt) (the login has expired or was revoked: "
			   "run 'gcloud auth application-default login')",
			   path, token_uri);
	assert_string_equal(err.msg, want);
	free(want);
	{
		const char *secrets[] = { "ya29.user-token", "rt-SECRET", "csecret-XYZ" };

		assert_log_clean(f, secrets, 3);
		assert_not_in(err.msg, "rt-SECRET");
		assert_not_in(err.msg, "csecret-XYZ");
	}
	gcp_auth_free(f->auth);
	f->auth = NULL;

	/* CLOUDSDK_CONFIG moves the well-known file; the quota project env wins. */
	setenv("CLOUDSDK_CONFIG", gdir, 1);
	setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "env-qp", 1);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_AUTHORIZED_USER);
	assert_string_equal(gcp_auth_quota_project(f->auth), "env-qp");
	gcp_auth_free(f->auth);
	f->auth = NULL;

	/* Group-readable is enough for the warning; 0600 earns none. */
	assert_int_equal(chmod(path, 0640), 0);
	vx_buf_reset(&f->log);
	assert_int_equal(new_auth(f, &err), 0);
	assert_non_null(strstr(vx_buf_str(&f->log), "is readable by group or others (mode 640)"));
	gcp_auth_free(f->auth);
	f->auth = NULL;
	assert_int_equal(chmod(path, 0600), 0);
	vx_buf_reset(&f->log);
	assert_int_equal(new_auth(f, &err), 0);
	assert_null(strstr(vx_buf_str(&f->log), "readable by group"));
	free(gdir);
	free(path);
	free(token_uri);
	vx_err_release(&err);
}

/* ---- external_account ---------------------------------------------------- */

static void test_external_file_impersonation(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *sts = url_of(f, "/v1/token"), *imp = url_of(f, "/v1/projects/-/serviceAccounts/"
							     "ci@p.iam.gserviceaccount.com:generateAccessToken");
	char *subj, *content, *path, *want;
	const struct httpd_request *r;

	subj = write_file(f, "oidc-token", "eyJhbGciOiJSUzI1NiJ9.SUBJECT-SECRET.sig\n", 0600);
	content = vx_asprintf("{\"type\":\"external_account\",\"audience\":\"//iam.googleapis.com/projects/123/"
			      "locations/global/workloadIdentityPools/gh/providers/gh\","
			      "\"subject_token_type\":\"urn:ietf:params:oauth:token-type:jwt\","
			      "\"token_url\":\"%s\",\"service_account_impersonation_url\":\"%s\","
			      "\"credential_source\":{\"file\":\"%s\",\"format\":{\"type\":\"text\"}}}",
			      sts, imp, subj);
	path = write_file(f, "wif.json", content, 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_EXTERNAL_ACCOUNT);
	want = vx_asprintf("workload identity federation (audience //iam.googleapis.com/projects/123/locations/"
			   "global/workloadIdentityPools/gh/providers/gh) from %s, impersonating "
			   "ci@p.iam.gserviceaccount.com",
			   path);
	assert_string_equal(gcp_auth_describe(f->auth), want);
	free(want);

	httpd_respond(f->srv, 200, NULL,
		      "{\"access_token\":\"sts-SECRET-token\",\"issued_token_type\":\"urn:ietf:params:oauth:"
		      "token-type:access_token\",\"token_type\":\"Bearer\",\"expires_in\":3600}",
		      0);
	httpd_respond(f->srv, 200, NULL, "{\"accessToken\":\"ya29.impersonated\",\"expireTime\":\"2026-11-22T11:05:26Z\"}",
		      0);
	expect_token(f, "ya29.impersonated");
	assert_int_equal(httpd_request_count(f->srv), 2);
	r = httpd_request(f->srv, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/v1/token");
	assert_string_equal(httpd_header(r, "Content-Type"), "application/x-www-form-urlencoded");
	assert_string_equal(r->body,
			    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&audience=%2F%2F"
			    "iam.googleapis.com%2Fprojects%2F123%2Flocations%2Fglobal%2FworkloadIdentityPools%2Fgh%2F"
			    "providers%2Fgh&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform&"
			    "requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&"
			    "subject_token=eyJhbGciOiJSUzI1NiJ9.SUBJECT-SECRET.sig&subject_token_type=urn%3Aietf%3A"
			    "params%3Aoauth%3Atoken-type%3Ajwt");
	r = httpd_request(f->srv, 1);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/v1/projects/-/serviceAccounts/ci@p.iam.gserviceaccount.com:"
				       "generateAccessToken");
	assert_string_equal(httpd_header(r, "Authorization"), "Bearer sts-SECRET-token");
	assert_string_equal(httpd_header(r, "Content-Type"), "application/json");
	assert_string_equal(r->body,
			    "{\"scope\":[\"https://www.googleapis.com/auth/cloud-platform\"],\"lifetime\":\"3600s\"}");

	/* Expiry comes from expireTime (2026-11-22T11:05:26Z = T0 + 3600 s). */
	f->now = T0_MS + 3300 * 1000 - 1;
	expect_token(f, "ya29.impersonated");
	assert_int_equal(httpd_request_count(f->srv), 2);
	f->now += 1;
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"sts-SECRET-2\",\"expires_in\":3600}", 0);
	httpd_respond(f->srv, 403, "Content-Type: application/json\r\n",
		      "{\"error\":{\"code\":403,\"message\":\"Permission 'iam.serviceAccounts.getAccessToken' "
		      "denied\",\"status\":\"PERMISSION_DENIED\"}}",
		      0);
	assert_int_equal(gcp_auth_token(f->auth, &want, &err), VX_EAUTH);
	assert_non_null(strstr(err.msg, ": token request to "));
	assert_non_null(strstr(err.msg, "failed: HTTP 403: PERMISSION_DENIED: Permission "
					"'iam.serviceAccounts.getAccessToken' denied (the federated identity needs "
					"roles/iam.workloadIdentityUser or roles/iam.serviceAccountTokenCreator on the "
					"service account)"));
	{
		const char *secrets[] = { "SUBJECT-SECRET", "sts-SECRET", "ya29.impersonated" };

		assert_log_clean(f, secrets, 3);
		assert_not_in(err.msg, "SUBJECT-SECRET");
		assert_not_in(err.msg, "sts-SECRET");
	}
	free(subj);
	free(content);
	free(path);
	free(sts);
	free(imp);
	vx_err_release(&err);
}

static void test_external_url_json(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *sts = url_of(f, "/sts"), *src = url_of(f, "/oidc?audience=x"), *content, *path, *tok = NULL;
	const struct httpd_request *r;

	content = vx_asprintf("{\"type\":\"external_account\",\"audience\":\"aud\","
			      "\"subject_token_type\":\"urn:ietf:params:oauth:token-type:id_token\","
			      "\"token_url\":\"%s\",\"client_id\":\"cl\",\"client_secret\":\"cs\","
			      "\"credential_source\":{\"url\":\"%s\",\"headers\":{\"Authorization\":\"bearer "
			      "REQ-SECRET\"},\"format\":{\"type\":\"json\",\"subject_token_field_name\":\"value\"}}}",
			      sts, src);
	path = write_file(f, "wif.json", content, 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	httpd_respond(f->srv, 200, NULL, "{\"count\":1,\"value\":\"ID-TOKEN-SECRET\"}", 0);
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.federated\",\"expires_in\":3600}", 0);
	expect_token(f, "ya29.federated");
	r = httpd_request(f->srv, 0);
	assert_string_equal(r->method, "GET");
	assert_string_equal(r->target, "/oidc?audience=x");
	assert_string_equal(httpd_header(r, "Authorization"), "bearer REQ-SECRET");
	r = httpd_request(f->srv, 1);
	assert_string_equal(r->target, "/sts");
	/* client_id:client_secret as HTTP Basic = "cl:cs". */
	assert_string_equal(httpd_header(r, "Authorization"), "Basic Y2w6Y3M=");
	assert_string_equal(r->body,
			    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&audience=aud&scope="
			    "https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform&requested_token_type=urn%3Aietf"
			    "%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&subject_token=ID-TOKEN-SECRET&"
			    "subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aid_token");

	/* A subject token answer without the field. */
	gcp_auth_invalidate(f->auth);
	httpd_respond(f->srv, 200, NULL, "{\"count\":1}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assert_non_null(strstr(err.msg, "/oidc?audience=x is not JSON with a string \"value\""));
	/* An STS refusal. */
	httpd_respond(f->srv, 200, NULL, "{\"value\":\"ID-TOKEN-SECRET\"}", 0);
	httpd_respond(f->srv, 400, NULL,
		      "{\"error\":\"invalid_grant\",\"error_description\":\"The audience in ID Token [ID-TOKEN-SECRET] "
		      "does not match the expected audience.\"}",
		      0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	assert_non_null(strstr(err.msg, "/sts failed: HTTP 400: invalid_grant: The audience in ID Token [[redacted]] "
					"does not match the expected audience."));
	{
		const char *secrets[] = { "ID-TOKEN-SECRET", "REQ-SECRET", "ya29.federated", "Y2w6Y3M=" };

		assert_log_clean(f, secrets, 4);
	}
	free(content);
	free(path);
	free(sts);
	free(src);
	vx_err_release(&err);
}

static void test_external_unsupported(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *path, *want;

	path = write_file(f, "aws.json",
			  "{\"type\":\"external_account\",\"audience\":\"a\",\"subject_token_type\":\"t\","
			  "\"credential_source\":{\"environment_id\":\"aws1\",\"region_url\":\"http://x\"}}",
			  0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("workload identity credentials %s: AWS credential sources (environment_id \"aws1\") "
			   "are not supported by vx; use a file or url credential source, or a service account key",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);

	path = write_file(f, "exe.json",
			  "{\"type\":\"external_account\",\"audience\":\"a\",\"subject_token_type\":\"t\","
			  "\"credential_source\":{\"executable\":{\"command\":\"/bin/true\"}}}",
			  0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	want = vx_asprintf("workload identity credentials %s: executable credential sources are not supported "
			   "by vx; use a file or url credential source",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);
	vx_err_release(&err);
}

/* ---- metadata server ----------------------------------------------------- */

static void test_metadata(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char host[64], *want, *proj = NULL, *tok = NULL;
	const char *from = NULL;
	const struct httpd_request *r;

	snprintf(host, sizeof(host), "127.0.0.1:%d", httpd_port(f->srv));
	setenv("GCE_METADATA_HOST", host, 1);
	unsetenv("METADATA_SERVER_DETECTION");
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_METADATA);
	want = vx_asprintf("metadata server at %s", host);
	assert_string_equal(gcp_auth_describe(f->auth), want);
	free(want);
	assert_null(gcp_auth_file(f->auth));
	assert_int_equal(httpd_request_count(f->srv), 0); /* an overridden host is not probed */

	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\nContent-Type: application/json\r\n",
		      "{\"access_token\":\"ya29.gce\",\"expires_in\":1000,\"token_type\":\"Bearer\"}", 0);
	expect_token(f, "ya29.gce");
	r = httpd_request(f->srv, 0);
	assert_string_equal(r->method, "GET");
	assert_string_equal(r->target, "/computeMetadata/v1/instance/service-accounts/default/token");
	assert_string_equal(httpd_header(r, "Metadata-Flavor"), "Google");
	assert_null(httpd_header(r, "Authorization"));

	/* Refresh 5 minutes before expires_in runs out. */
	f->now += 700 * 1000;
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.gce2\",\"expires_in\":1000}", 0);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EAUTH);
	want = vx_asprintf("metadata server at %s: the answer of http://%s/computeMetadata/v1/instance/"
			   "service-accounts/default/token lacks \"Metadata-Flavor: Google\"; something other "
			   "than a metadata server is listening there",
			   host, host);
	assert_string_equal(err.msg, want);
	free(want);

	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\n", "my-gce-project\n", 0);
	assert_int_equal(gcp_auth_project(f->auth, NULL, &proj, &from, &err), 0);
	assert_string_equal(proj, "my-gce-project");
	assert_string_equal(from, "metadata server");
	assert_string_equal(httpd_request(f->srv, 2)->target, "/computeMetadata/v1/project/project-id");
	free(proj);
	assert_null(strstr(vx_buf_str(&f->log), "ya29.gce"));
	vx_err_release(&err);
}

static void test_metadata_probe(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char host[64];

	snprintf(host, sizeof(host), "127.0.0.1:%d", httpd_port(f->srv));
	setenv("GCE_METADATA_HOST", host, 1);
	setenv("METADATA_SERVER_DETECTION", "ping-only", 1);
	/* A server that answers without Metadata-Flavor is not a metadata server. */
	httpd_respond(f->srv, 200, NULL, "{}", 0);
	assert_int_equal(new_auth(f, &err), VX_EAUTH);
	assert_string_equal(httpd_request(f->srv, 0)->target, "/computeMetadata/v1/instance");
	assert_string_equal(httpd_header(httpd_request(f->srv, 0), "Metadata-Flavor"), "Google");
	assert_non_null(strstr(err.msg, "metadata server at 127.0.0.1:"));
	assert_non_null(strstr(err.msg, " (no answer); run 'gcloud auth application-default login'"));

	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\n", "{}", 0);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_METADATA);
	vx_err_release(&err);
}

/* The probe goes straight to the metadata server: a proxy named in the
 * environment (here one where nothing listens) is not asked. */
static void test_metadata_probe_no_proxy(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char host[64];

	snprintf(host, sizeof(host), "127.0.0.1:%d", httpd_port(f->srv));
	setenv("GCE_METADATA_HOST", host, 1);
	setenv("METADATA_SERVER_DETECTION", "ping-only", 1);
	setenv("http_proxy", "http://127.0.0.1:1", 1);
	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\n", "{}", 0);
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_METADATA);
	assert_int_equal(httpd_request_count(f->srv), 1);
	assert_string_equal(httpd_request(f->srv, 0)->target, "/computeMetadata/v1/instance");
	unsetenv("http_proxy");
	vx_err_release(&err);
}

/* The token and the project come from the metadata server itself, never through a proxy the
 * environment names (a proxy would see the token; Google's clients go direct too). */
static void test_metadata_token_no_proxy(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char host[64], *proj = NULL;
	const char *from = NULL;

	snprintf(host, sizeof(host), "127.0.0.1:%d", httpd_port(f->srv));
	setenv("GCE_METADATA_HOST", host, 1);
	unsetenv("METADATA_SERVER_DETECTION");
	setenv("http_proxy", "http://127.0.0.1:1", 1);
	assert_int_equal(new_auth(f, &err), 0);
	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\nContent-Type: application/json\r\n",
		      "{\"access_token\":\"ya29.gce\",\"expires_in\":1000,\"token_type\":\"Bearer\"}", 0);
	expect_token(f, "ya29.gce");
	httpd_respond(f->srv, 200, "Metadata-Flavor: Google\r\n", "my-gce-project\n", 0);
	assert_int_equal(gcp_auth_project(f->auth, NULL, &proj, &from, &err), 0);
	assert_string_equal(proj, "my-gce-project");
	assert_int_equal(httpd_request_count(f->srv), 2);
	free(proj);
	unsetenv("http_proxy");
	vx_err_release(&err);
}

/* ---- ADC order and the no-credentials error ------------------------------ */

/* Counts the waits asked of the clock (a backoff between attempts is one). */
static int64_t sleeps_asked;
static void count_sleep(void *ud, int64_t ms)
{
	(void)ud;
	(void)ms;
	sleeps_asked++;
}

static void test_no_credentials(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *want;

	assert_int_equal(new_auth(f, &err), VX_EAUTH);
	want = vx_asprintf("no credentials found: tried GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, "
			   "%s/.config/gcloud/application_default_credentials.json, metadata server at "
			   "169.254.169.254 (detection disabled by METADATA_SERVER_DETECTION=none); run 'gcloud "
			   "auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS",
			   f->dir);
	assert_string_equal(err.msg, want);
	free(want);

	/* A probe of a closed port fails fast: one attempt, no wait for another. */
	setenv("GCE_METADATA_HOST", "127.0.0.1:1", 1);
	setenv("METADATA_SERVER_DETECTION", "ping-only", 1);
	sleeps_asked = 0;
	f->ctx.clock.sleep_ms = count_sleep;
	assert_int_equal(new_auth(f, &err), VX_EAUTH);
	assert_int_equal(sleeps_asked, 0);
	assert_non_null(strstr(err.msg, "metadata server at 127.0.0.1:1 (no answer)"));
	vx_err_release(&err);
}

static void test_adc_order(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *gdir = vx_asprintf("%s/gc", f->dir), *cmd = vx_asprintf("mkdir -p '%s'", gdir), *path, *want;
	char *proj = NULL, *tok = NULL;
	const char *from = NULL;

	assert_int_equal(system(cmd), 0);
	free(cmd);
	path = write_file(f, "gc/application_default_credentials.json",
			  "{\"type\":\"authorized_user\",\"client_id\":\"c\",\"client_secret\":\"s\","
			  "\"refresh_token\":\"r\",\"project_id\":\"wk-proj\"}",
			  0600);
	setenv("CLOUDSDK_CONFIG", gdir, 1);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json", 1);
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.from-env", 1);

	/* 1. The ready token wins over everything. */
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_ACCESS_TOKEN);
	assert_string_equal(gcp_auth_describe(f->auth), "access token from GOOGLE_OAUTH_ACCESS_TOKEN");
	expect_token(f, "ya29.from-env");
	gcp_auth_invalidate(f->auth); /* nothing to refresh it from: still the same */
	f->now += INT64_C(24) * 3600 * 1000;
	expect_token(f, "ya29.from-env");
	assert_int_equal(httpd_request_count(f->srv), 0);
	assert_null(strstr(vx_buf_str(&f->log), "ya29.from-env"));
	gcp_auth_free(f->auth);
	f->auth = NULL;

	/* 2. GOOGLE_APPLICATION_CREDENTIALS set but unreadable: fail, no falling through. */
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	assert_int_equal(new_auth(f, &err), VX_EINVAL);
	assert_string_equal(err.msg, "reading credentials from GOOGLE_APPLICATION_CREDENTIALS: /nonexistent/key.json: "
				     "No such file or directory; run 'gcloud auth application-default login' or set "
				     "GOOGLE_APPLICATION_CREDENTIALS");
	assert_null(f->auth);

	/* 3. Then the well-known file. */
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	assert_int_equal(new_auth(f, &err), 0);
	assert_int_equal(gcp_auth_kind(f->auth), GCP_AUTH_AUTHORIZED_USER);
	assert_string_equal(gcp_auth_file(f->auth), path);

	/* Project: explicit, GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT, the file. */
	setenv("GOOGLE_CLOUD_PROJECT", "gcp-env", 1);
	setenv("CLOUDSDK_CORE_PROJECT", "sdk-env", 1);
	assert_int_equal(gcp_auth_project(f->auth, "stack-proj", &proj, &from, &err), 0);
	assert_string_equal(proj, "stack-proj");
	assert_string_equal(from, "stack");
	free(proj);
	assert_int_equal(gcp_auth_project(f->auth, "", &proj, &from, &err), 0);
	assert_string_equal(proj, "gcp-env");
	assert_string_equal(from, "GOOGLE_CLOUD_PROJECT");
	free(proj);
	unsetenv("GOOGLE_CLOUD_PROJECT");
	assert_int_equal(gcp_auth_project(f->auth, NULL, &proj, &from, &err), 0);
	assert_string_equal(proj, "sdk-env");
	assert_string_equal(from, "CLOUDSDK_CORE_PROJECT");
	free(proj);
	unsetenv("CLOUDSDK_CORE_PROJECT");
	assert_int_equal(gcp_auth_project(f->auth, NULL, &proj, &from, &err), 0);
	assert_string_equal(proj, "wk-proj");
	free(proj);
	assert_int_equal(gcp_auth_project(NULL, NULL, &proj, &from, &err), VX_ENOTFOUND);
	assert_string_equal(err.msg, "no project: set \"project\" in the stack, or GOOGLE_CLOUD_PROJECT");

	/* No HTTP layer: a clear error rather than a crash. */
	gcp_auth_set_http(f->auth, NULL);
	assert_int_equal(gcp_auth_token(f->auth, &tok, &err), VX_EINVAL);
	want = vx_asprintf("user credentials (authorized_user) from %s: no HTTP layer to fetch a token with "
			   "(gcp_auth_set_http)",
			   path);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);
	free(gdir);
	vx_err_release(&err);
}

/* The HTTP layer fetches the token through the same layer (a nested send),
 * and on a 401 invalidates it and retries once with a fresh one. */
static void test_http_layer_401(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	struct gcp_response resp = { 0 };
	struct gcp_request req;
	char *content, *path, *token_uri = url_of(f, "/token"), *api = url_of(f, "/v1/projects/p/things");

	content = vx_asprintf("{\"type\":\"authorized_user\",\"client_id\":\"c\",\"client_secret\":\"s\","
			      "\"refresh_token\":\"r\",\"token_uri\":\"%s\"}",
			      token_uri);
	path = write_file(f, "user.json", content, 0600);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(new_auth(f, &err), 0);
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.old\",\"expires_in\":3600}", 0);
	httpd_respond(f->srv, 401, NULL, "{\"error\":{\"code\":401,\"status\":\"UNAUTHENTICATED\"}}", 0);
	httpd_respond(f->srv, 200, NULL, "{\"access_token\":\"ya29.new\",\"expires_in\":3600}", 0);
	httpd_respond(f->srv, 200, NULL, "{\"things\":[]}", 0);
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = api;
	req.api = "compute";
	assert_int_equal(gcp_http_send(f->http, &req, &resp, &err), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(httpd_request_count(f->srv), 4);
	assert_string_equal(httpd_request(f->srv, 0)->target, "/token");
	assert_string_equal(httpd_header(httpd_request(f->srv, 1), "Authorization"), "Bearer ya29.old");
	assert_string_equal(httpd_request(f->srv, 2)->target, "/token");
	assert_string_equal(httpd_request(f->srv, 3)->target, "/v1/projects/p/things");
	assert_string_equal(httpd_header(httpd_request(f->srv, 3), "Authorization"), "Bearer ya29.new");
	assert_null(strstr(vx_buf_str(&f->log), "ya29.old"));
	assert_null(strstr(vx_buf_str(&f->log), "ya29.new"));
	gcp_response_release(&resp);
	free(content);
	free(path);
	free(token_uri);
	free(api);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_service_account, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service_account_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service_account_bad_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_authorized_user_well_known, setup, teardown),
		cmocka_unit_test_setup_teardown(test_external_file_impersonation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_external_url_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_external_unsupported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_probe_no_proxy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_token_no_proxy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_credentials, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adc_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_layer_401, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
