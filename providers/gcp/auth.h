#ifndef VX_GCP_AUTH_H
#define VX_GCP_AUTH_H

/*
 * Google credentials, found in the order of Application Default Credentials:
 *
 *   1. GOOGLE_OAUTH_ACCESS_TOKEN: a ready token, used as is (never refreshed);
 *   2. GOOGLE_APPLICATION_CREDENTIALS: a JSON file, by its "type":
 *      service_account (RS256 JWT-bearer grant at the file's token_uri),
 *      authorized_user (refresh-token grant), external_account (workload
 *      identity federation: subject token from credential_source file or url,
 *      STS token exchange, then generateAccessToken when
 *      service_account_impersonation_url is set). Set but unreadable or
 *      invalid is an error: there is no falling through to later sources.
 *   3. gcloud's well-known file ($CLOUDSDK_CONFIG or
 *      ~/.config/gcloud/application_default_credentials.json), same types;
 *   4. the metadata server (GCE_METADATA_HOST overrides 169.254.169.254),
 *      tried only when GCE_METADATA_HOST is set, METADATA_SERVER_DETECTION is
 *      assume-present, the BIOS says Google, or a quick probe (500 ms) gets a
 *      "Metadata-Flavor: Google" answer. METADATA_SERVER_DETECTION=none turns
 *      it off; ping-only probes even an overridden host.
 *
 * Tokens live in memory only and are fetched again when within 5 minutes of
 * their expiry (by ctx's clock) or after gcp_auth_invalidate (the HTTP layer
 * calls it on a 401). A credential file readable by group or others is
 * warned about through vx_log. No secret (private key, assertion, token,
 * refresh token, client secret, subject token) is ever logged, put in an
 * error message or in the description.
 *
 * Typical use (auth first, because the HTTP layer wants the quota project):
 *
 *	gcp_auth_new(&auth, ctx, NULL, &err);
 *	opts.quota_project = gcp_auth_quota_project(auth);
 *	gcp_http_new(&http, ctx, &opts, NULL, &err);
 *	gcp_auth_set_http(auth, http);
 *	gcp_http_set_tokens(http, gcp_auth_token_source(auth));
 *
 * Token requests go through gcp_http_send with no_auth = 1 (api "oauth"), so
 * the layer given must allow a send from inside its token source's get, or
 * be a second struct gcp_http used only for auth.
 *
 * Not thread-safe: one struct gcp_auth per thread.
 *
 * Implemented in three files: auth.c (the ADC order, credential files, the
 * token cache), auth_grant.c (OAuth grants), auth_metadata.c (the metadata
 * server); auth_internal.h is what they share.
 */

#include "util/err.h"

struct vx_ctx;
struct gcp_http;
struct gcp_token_source;
struct gcp_auth;

enum gcp_auth_kind {
	GCP_AUTH_ACCESS_TOKEN = 0, /* GOOGLE_OAUTH_ACCESS_TOKEN */
	GCP_AUTH_SERVICE_ACCOUNT,
	GCP_AUTH_AUTHORIZED_USER,
	GCP_AUTH_EXTERNAL_ACCOUNT,
	GCP_AUTH_METADATA,
};

struct gcp_auth_options {
	long probe_timeout_ms; /* metadata server probe; 0 = 500 ms */
};

/*
 * Finds the credentials (reads the environment and the credential file;
 * no network except the metadata probe) and returns them in *out (free
 * with gcp_auth_free). opts may be NULL. ctx is borrowed and must outlive
 * the result. Errors: VX_EAUTH when there are no credentials at all ("no
 * credentials found: tried ...; run 'gcloud auth application-default
 * login' or set GOOGLE_APPLICATION_CREDENTIALS"), VX_EINVAL for an
 * unreadable/invalid credential file or an unsupported credential source
 * (AWS, executable), VX_ENOMEM.
 */
int gcp_auth_new(struct gcp_auth **out, struct vx_ctx *ctx, const struct gcp_auth_options *opts,
		 struct vx_err *err) VX_WUR;
/* NULL-safe; wipes every secret from memory. */
void gcp_auth_free(struct gcp_auth *a);

/* The HTTP layer token requests are sent through (borrowed; must outlive a
 * or be replaced). Needed by every kind except GCP_AUTH_ACCESS_TOKEN. */
void gcp_auth_set_http(struct gcp_auth *a, struct gcp_http *http);

/* A token source for gcp_http_new/gcp_http_set_tokens, backed by a
 * (borrowed: valid while a lives). */
const struct gcp_token_source *gcp_auth_token_source(struct gcp_auth *a);

/*
 * A valid access token in *out (caller frees), fetched when none is cached,
 * it is within 5 minutes of expiry, or after gcp_auth_invalidate. Errors
 * name the source and the endpoint, with OAuth's error and
 * error_description: VX_EAUTH (refused: 400/401/403, or a bad response),
 * VX_ERETRY (transient), VX_EINVAL (no HTTP layer), VX_ENOMEM, or the HTTP
 * layer's code.
 */
int gcp_auth_token(struct gcp_auth *a, char **out, struct vx_err *err) VX_WUR;
/* Forgets the cached token so the next gcp_auth_token fetches a new one
 * (for GOOGLE_OAUTH_ACCESS_TOKEN there is nothing to fetch: a no-op). */
void gcp_auth_invalidate(struct gcp_auth *a);

enum gcp_auth_kind gcp_auth_kind(const struct gcp_auth *a);

/*
 * Where the credentials came from, for `vx doctor`, free of secrets:
 * "service account sa@p.iam.gserviceaccount.com from /path/key.json",
 * "user credentials (authorized_user) from /home/u/.config/gcloud/...",
 * "workload identity federation (audience //iam...) from /path,
 * impersonating sa@p.iam.gserviceaccount.com", "access token from
 * GOOGLE_OAUTH_ACCESS_TOKEN", "metadata server at 169.254.169.254".
 * Borrowed.
 */
const char *gcp_auth_describe(const struct gcp_auth *a);

/* The credential file's path, or NULL (access token, metadata). Borrowed. */
const char *gcp_auth_file(const struct gcp_auth *a);

/* GOOGLE_CLOUD_QUOTA_PROJECT, else the file's quota_project_id, else NULL.
 * Borrowed. For gcp_http_options.quota_project. */
const char *gcp_auth_quota_project(const struct gcp_auth *a);

/*
 * The project id: explicit_project (the Stack's "project") when not NULL or
 * empty, else GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT, the credential
 * file's project_id, the metadata server's project/project-id (when the
 * metadata server is the credential source or is detected). *out is owned;
 * *from (may be NULL) is set to a static text naming the source ("stack",
 * "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "credential file",
 * "metadata server"). a may be NULL (then neither file nor metadata is
 * asked). Errors: VX_ENOTFOUND ("no project: set project in the stack or
 * GOOGLE_CLOUD_PROJECT"), a metadata request's error, VX_ENOMEM.
 */
int gcp_auth_project(struct gcp_auth *a, const char *explicit_project, char **out, const char **from,
		     struct vx_err *err) VX_WUR;

#endif
