#ifndef VX_GCP_ENDPOINTS_H
#define VX_GCP_ENDPOINTS_H

/*
 * Where each Google API lives. Real hosts by default; each one can be
 * overridden with gcloud's CLOUDSDK_API_ENDPOINT_OVERRIDES_<API> variable,
 * whose value is the URL the API's resource paths are appended to, version
 * included:
 *
 *	AIPLATFORM   https://{region}-aiplatform.googleapis.com/v1/  ({region} replaced)
 *	COMPUTE      https://compute.googleapis.com/compute/v1/
 *	CLOUDQUOTAS  https://cloudquotas.googleapis.com/v1/
 *	STORAGE      https://storage.googleapis.com/storage/v1/
 *	             (uploads: https://storage.googleapis.com/upload/storage/v1/, derived
 *	             from an override by inserting "/upload" before "/storage/v1/", or
 *	             before the path when the override has no "/storage/v1/")
 *	CLOUDRESOURCEMANAGER  https://cloudresourcemanager.googleapis.com/v3/
 *	SERVICEUSAGE https://serviceusage.googleapis.com/v1/
 *	IAM          https://iam.googleapis.com/v1/
 *	             (these three only for vx doctor's permission and API checks)
 *	LOGGING      https://logging.googleapis.com/v2/  (vx logs only)
 *
 * A trailing '/' is added when missing. https:// is always accepted;
 * http:// only for loopback hosts (127.0.0.0/8, localhost, [::1]), so a
 * stray override can never send a token in clear text over a network.
 */

#include "util/err.h"

struct vx_ctx;

enum gcp_api {
	GCP_API_AIPLATFORM = 0,
	GCP_API_COMPUTE,
	GCP_API_CLOUDQUOTAS,
	GCP_API_STORAGE,
	GCP_API_STORAGE_UPLOAD, /* the media upload base of Cloud Storage */
	GCP_API_CLOUDRESOURCEMANAGER,
	GCP_API_SERVICEUSAGE,
	GCP_API_IAM,
	GCP_API_LOGGING,
	GCP_API_COUNT
};

struct gcp_endpoints {
	/* Owned base URLs ending in '/', indexed by enum gcp_api; the
	 * aiplatform one may hold "{region}". */
	char *base[GCP_API_COUNT];
	/* 1 where the base came from an override variable. */
	int overridden[GCP_API_COUNT];
};

#define GCP_ENDPOINTS_INIT { { 0 }, { 0 } }

/*
 * Fills e from the environment. Returns 0, or VX_EINVAL with a message
 * naming the variable ("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE: http:// is
 * only allowed for loopback hosts ..."), or VX_ENOMEM. On failure e is
 * left released.
 */
int gcp_endpoints_load(struct gcp_endpoints *e, const struct vx_ctx *ctx, struct vx_err *err) VX_WUR;
void gcp_endpoints_release(struct gcp_endpoints *e);

/*
 * The full URL for a resource path of an API: base + path (a leading '/'
 * of path is dropped). region is required for aiplatform (a Google region
 * name: lower-case letters, digits and '-'), ignored otherwise. *out is
 * owned by the caller. Returns 0, VX_EINVAL (bad or missing region) or
 * VX_ENOMEM.
 */
int gcp_endpoints_url(char **out, const struct gcp_endpoints *e, enum gcp_api api, const char *region,
		      const char *path, struct vx_err *err) VX_WUR;

/* Lower-case API name ("aiplatform", "compute", "cloudquotas", "storage",
 * "storage-upload", "cloudresourcemanager", "serviceusage", "iam", "logging"), as used
 * for rate-limit buckets and doctor output. */
const char *gcp_api_name(enum gcp_api api);

/* The override variable of an API ("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE"),
 * or NULL for the storage upload base (derived from STORAGE). */
const char *gcp_api_override_var(enum gcp_api api);

/*
 * Checks a base URL: https://, or http:// with a loopback host; a host is
 * present; no user info. Returns 0 or VX_EINVAL with "<what>: <cause>".
 */
int gcp_endpoints_check_url(const char *url, const char *what, struct vx_err *err) VX_WUR;

/* 1 when host (as in a URL authority, without port: "127.0.0.1",
 * "localhost", "[::1]") is a loopback address. */
int gcp_host_is_loopback(const char *host);

#endif
