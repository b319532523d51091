#ifndef VX_GCP_AUTH_INTERNAL_H
#define VX_GCP_AUTH_INTERNAL_H

/*
 * What the three parts of the credentials module share (not a public
 * surface: auth.h is). auth.c finds the credentials (environment, credential
 * files, the ADC order) and caches tokens; auth_grant.c fetches tokens from
 * OAuth endpoints (JWT bearer, refresh token, STS exchange, impersonation);
 * auth_metadata.c talks to the metadata server.
 */

#include <stdint.h>

#include <cJSON.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/http.h"

#define MAX_CRED_FILE (1024 * 1024)

struct gcp_auth {
	struct vx_ctx *ctx;
	struct gcp_http *http;
	struct gcp_token_source source;
	enum gcp_auth_kind kind;
	long probe_timeout_ms;

	char *path;          /* credential file, or NULL */
	char *description;
	char *project_id;    /* from the file */
	char *quota_project;

	/* service_account */
	char *client_email;
	char *private_key;   /* secret */
	char *private_key_id;
	char *token_uri;     /* also authorized_user's and STS's endpoint */

	/* authorized_user */
	char *client_id;
	char *client_secret; /* secret (also STS client auth) */
	char *refresh_token; /* secret */

	/* external_account */
	char *audience;
	char *subject_token_type;
	char *impersonation_url;
	char *cs_file;
	char *cs_url;
	char **cs_headers;   /* "Name: value", NULL-terminated */
	char *cs_field;      /* json format: subject_token_field_name; NULL = text */

	/* metadata */
	char *metadata_base; /* "http://host" */
	int metadata_detected; /* -1 unknown, 0 no, 1 yes */

	/* cache */
	char *token;         /* secret */
	int64_t expiry_ms;   /* 0 = unknown */
};


/* ---- auth.c ---- */

/* Wipes s, then frees it. NULL-safe. */
void gcp_auth_free_secret(char *s);
/* Wipes every string of a parsed JSON document (tokens, keys), then frees it. NULL-safe. */
void gcp_auth_json_free_secret(cJSON *j);
/* The environment variable name as a's context shows it (vx_getenv); "" counts as unset. */
const char *gcp_auth_env(const struct gcp_auth *a, const char *name);
/* Replaces every secret a holds (and extra1, extra2) in err's message by "[redacted]". */
void gcp_auth_scrub_all(const struct gcp_auth *a, struct vx_err *err, const char *extra1,
			const char *extra2);
/* "<secret-free what>" context for errors and logs. Borrowed. */
const char *gcp_auth_what(const struct gcp_auth *a);
/* Drops trailing white space in place. */
void gcp_auth_trim_right(char *s);
/* obj's string member name, or NULL. Borrowed. */
const char *gcp_auth_jstr(const cJSON *obj, const char *name);

/* ---- auth_grant.c: token grants; each sets a new token in *token (owned)
 * and its expiry (ctx wall clock ms, 0 = unknown) ---- */

/* Sends a no_auth request and checks it got a 200; extra_secret is scrubbed from any error. */
int gcp_auth_grant_send(struct gcp_response *resp, struct gcp_auth *a, const struct gcp_request *req,
			const char *extra_secret, struct vx_err *err) VX_WUR;
/* Reads an OAuth token answer ({"access_token", "expires_in"}) of url. */
int gcp_auth_grant_parse(char **token, int64_t *expiry_ms, const struct gcp_auth *a,
			 const struct gcp_response *resp, const char *url, struct vx_err *err) VX_WUR;
/* RS256 JWT-bearer grant at the file's token_uri. */
int gcp_auth_grant_service_account(char **token, int64_t *expiry_ms, struct gcp_auth *a,
				   struct vx_err *err) VX_WUR;
/* Refresh-token grant. */
int gcp_auth_grant_authorized_user(char **token, int64_t *expiry_ms, struct gcp_auth *a,
				   struct vx_err *err) VX_WUR;
/* Subject token, STS exchange, then impersonation when configured. */
int gcp_auth_grant_external_account(char **token, int64_t *expiry_ms, struct gcp_auth *a,
				    struct vx_err *err) VX_WUR;

/* ---- auth_metadata.c ---- */

/* Sets a->metadata_base from GCE_METADATA_HOST / GCE_METADATA_IP or the default. */
int gcp_auth_metadata_base(struct gcp_auth *a, struct vx_err *err) VX_WUR;
/* Whether to use the metadata server (cached in a); *why: a short text for messages. */
int gcp_auth_metadata_detect(const char **why, struct gcp_auth *a);
/* The default service account's token from the metadata server. */
int gcp_auth_metadata_token(char **token, int64_t *expiry_ms, struct gcp_auth *a,
			    struct vx_err *err) VX_WUR;
/* The metadata server's project id (owned). */
int gcp_auth_metadata_project(char **out, struct gcp_auth *a, struct vx_err *err) VX_WUR;

#endif
