#ifndef VX_GCP_PERMISSIONS_H
#define VX_GCP_PERMISSIONS_H

/*
 * Every Google API method vx calls, the IAM permission it needs and the
 * smallest predefined role that grants it: one table, read by the error
 * hints (gerror.c), by vx doctor (which asks Google which of them the
 * caller holds) and, through tools/check-permissions.py, by
 * docs/permissions.md and the custom role files beside it. A method that
 * needs two permissions (a create that runs as a service account) has two
 * rows.
 *
 * tools/check-permissions.py reads the table from permissions.c: keep its
 * rows designated initialisers of string literals and enum names.
 * A row says which stacks call its method: the kinds whose declarations
 * call it (kinds, by name), or a need no one kind stands for (needs).
 */

#include <stddef.h>

#include "reconcile/provider.h"

/* The commands that call a method. */
enum gcp_perm_cmd {
	GCP_CMD_PLAN = 1 << 0,
	GCP_CMD_APPLY = 1 << 1,
	GCP_CMD_WATCH = 1 << 2,
	GCP_CMD_IMPORT = 1 << 3,
	GCP_CMD_DOCTOR = 1 << 4,
	GCP_CMD_LOGS = 1 << 5,
};

/*
 * What in a stack makes vx call a method, beyond declaring a kind (a row
 * names the kinds it serves in its kinds string): reconcile/provider.h's
 * fixed needs (reconcile/ sits beside providers/ and includes none of its
 * headers).
 */
enum gcp_perm_need {
	GCP_NEED_JOB_SA = PROVIDER_NEED_JOB_SA,
	GCP_NEED_GCS = PROVIDER_NEED_GCS,
	GCP_NEED_ANY = PROVIDER_NEED_ANY,
};

/* Where the role is granted. */
enum gcp_perm_on {
	GCP_ON_PROJECT = 0,     /* the stack's project */
	GCP_ON_BUCKET,          /* the state bucket */
	GCP_ON_SERVICE_ACCOUNT, /* the job's spec.serviceAccount */
};

struct gcp_permission {
	const char *api;        /* as gcp_request.api: "aiplatform", "compute", ... */
	const char *rpc;        /* as gcp_request.rpc: "ListCustomJobs" */
	const char *method;     /* Google's REST method: "projects.locations.customJobs.list" */
	const char *permission; /* "aiplatform.customJobs.list"; NULL when the method needs none */
	const char *role;       /* the smallest role that grants it: "roles/aiplatform.viewer" */
	enum gcp_perm_on on;
	unsigned cmds;          /* enum gcp_perm_cmd bits */
	/*
	 * The kinds whose declaration calls it: their names (struct kind's
	 * name, "CustomJob"), separated by a space; NULL: none. A new kind adds
	 * its name to the rows it calls, and takes no enum value.
	 */
	const char *kinds;
	/* enum gcp_perm_need bits: any one of them calls it too. */
	unsigned needs;
};

/*
 * The custom role that grants only the reservation writes (Compute Engine
 * has no predefined role for them short of roles/compute.admin); its
 * definition is docs/vx-role-apply.yaml.
 */
#define GCP_ROLE_CUSTOM_APPLY "the custom role vxApply (docs/vx-role-apply.yaml)"

/* The whole table; *n gets its length. */
const struct gcp_permission *gcp_permissions(size_t *n);

/*
 * The row for a failed call: of the rows of (api, rpc), the one whose
 * permission the server's message names, else the first. When no row has
 * that rpc, a row whose permission the message names. NULL when none.
 * message may be NULL.
 */
const struct gcp_permission *gcp_permission_for(const char *api, const char *rpc, const char *message);

/* 1 when row r is called for a declaration of the kind named kind ("CustomJob"), else 0. */
int gcp_permission_serves(const struct gcp_permission *r, const char *kind);

/* The row granting permission, NULL when none. */
const struct gcp_permission *gcp_permission_find(const char *permission);

/* "the project", "the state bucket", "the job's service account". */
const char *gcp_permission_on_name(enum gcp_perm_on on);

#endif
