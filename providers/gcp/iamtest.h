#ifndef VX_GCP_IAMTEST_H
#define VX_GCP_IAMTEST_H

/*
 * Asking Google, without changing anything, what the caller may do and which
 * APIs are on: the testIamPermissions methods of Resource Manager (a
 * project), Cloud Storage (a bucket) and IAM (a service account), and
 * Service Usage's services.get. For vx doctor.
 *
 * Every answer is untrusted: a permission counts as held only when it was
 * asked for and comes back; anything else in the answer is ignored.
 */

#include <stddef.h>

#include "util/err.h"

struct gcp_http;
struct gcp_endpoints;
struct vx_ctx;

struct iamtest_client {
	struct gcp_http *http;        /* borrowed */
	struct vx_ctx *ctx;           /* borrowed */
	const struct gcp_endpoints *ep; /* borrowed */
};

/* What to test iam permissions on. */
enum iamtest_on {
	IAMTEST_PROJECT,         /* name: a project id */
	IAMTEST_BUCKET,          /* name: a bucket */
	IAMTEST_SERVICE_ACCOUNT, /* name: a service account's email */
};

/*
 * Sets held[i] to 1 when the caller holds perms[i] on name, else 0 (n at
 * most 100, Google's limit per call). Returns 0, or a VX_E* with err set
 * ("doctor: testing permissions on project p: ..."), held untouched.
 */
int iamtest_permissions(const struct iamtest_client *c, enum iamtest_on on, const char *name,
			const char *const *perms, size_t n, int *held, struct vx_err *err) VX_WUR;

/*
 * *enabled = 1 when service ("aiplatform.googleapis.com") is ENABLED in
 * project, 0 when DISABLED. Returns 0, or a VX_E* with err set (also
 * VX_EAPI for an answer with another state).
 */
int iamtest_service_enabled(const struct iamtest_client *c, const char *project, const char *service,
			    int *enabled, struct vx_err *err) VX_WUR;

#endif
