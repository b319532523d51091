/*
 * The permission table. See permissions.h. Facts and their sources are in
 * docs/permissions.md ("Where the facts come from"); a change here fails
 * `make check` until that page and the role files say the same.
 */
#include "providers/gcp/permissions.h"

#include <string.h>

#include "util/banned.h"

#define PLAN GCP_CMD_PLAN
#define APPLY GCP_CMD_APPLY
#define WATCH GCP_CMD_WATCH
#define IMPORT GCP_CMD_IMPORT
#define DOCTOR GCP_CMD_DOCTOR
#define LOGS GCP_CMD_LOGS

/* One row a method, its fields on three lines: clang-format would join them. */
/* clang-format off */
static const struct gcp_permission table[] = {
	/* Vertex AI custom jobs (CustomJob). */
	{ .api = "aiplatform", .rpc = "ListCustomJobs", .method = "projects.locations.customJobs.list",
	  .permission = "aiplatform.customJobs.list", .role = "roles/aiplatform.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH, .kinds = "CustomJob" },
	{ .api = "aiplatform", .rpc = "GetCustomJob", .method = "projects.locations.customJobs.get",
	  .permission = "aiplatform.customJobs.get", .role = "roles/aiplatform.viewer",
	  .on = GCP_ON_PROJECT, .cmds = WATCH | IMPORT, .kinds = "CustomJob" },
	{ .api = "logging", .rpc = "ListLogEntries", .method = "entries.list",
	  .permission = "logging.logEntries.list", .role = "roles/logging.viewer",
	  .on = GCP_ON_PROJECT, .cmds = LOGS, .kinds = "CustomJob" },
	{ .api = "aiplatform", .rpc = "CreateCustomJob", .method = "projects.locations.customJobs.create",
	  .permission = "aiplatform.customJobs.create", .role = "roles/aiplatform.user",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "CustomJob" },
	{ .api = "aiplatform", .rpc = "CreateCustomJob", .method = "projects.locations.customJobs.create",
	  .permission = "iam.serviceAccounts.actAs", .role = "roles/iam.serviceAccountUser",
	  .on = GCP_ON_SERVICE_ACCOUNT, .cmds = APPLY | WATCH, .needs = GCP_NEED_JOB_SA },
	{ .api = "aiplatform", .rpc = "CancelCustomJob", .method = "projects.locations.customJobs.cancel",
	  .permission = "aiplatform.customJobs.cancel", .role = "roles/aiplatform.user",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "CustomJob" },

	/* Compute Engine reservations (Reservation). */
	{ .api = "compute", .rpc = "ListReservations", .method = "reservations.list",
	  .permission = "compute.reservations.list", .role = "roles/compute.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH | IMPORT, .kinds = "Reservation FutureReservation" },
	{ .api = "compute", .rpc = "GetReservation", .method = "reservations.get",
	  .permission = "compute.reservations.get", .role = "roles/compute.viewer",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "Reservation" },
	{ .api = "compute", .rpc = "InsertReservation", .method = "reservations.insert",
	  .permission = "compute.reservations.create", .role = GCP_ROLE_CUSTOM_APPLY,
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "Reservation" },
	{ .api = "compute", .rpc = "ResizeReservation", .method = "reservations.resize",
	  .permission = "compute.reservations.resize", .role = GCP_ROLE_CUSTOM_APPLY,
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "Reservation" },
	{ .api = "compute", .rpc = "DeleteReservation", .method = "reservations.delete",
	  .permission = "compute.reservations.delete", .role = GCP_ROLE_CUSTOM_APPLY,
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "Reservation" },
	{ .api = "compute", .rpc = "WaitZoneOperation", .method = "zoneOperations.wait",
	  .permission = "compute.zoneOperations.get", .role = "roles/compute.viewer",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "Reservation FutureReservation" },

	/* Compute Engine future reservations (FutureReservation; docs/future-reservations.md). */
	{ .api = "compute", .rpc = "ListFutureReservations", .method = "futureReservations.list",
	  .permission = "compute.futureReservations.list", .role = "roles/compute.futureReservationUser",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH | IMPORT, .kinds = "FutureReservation" },
	{ .api = "compute", .rpc = "GetFutureReservation", .method = "futureReservations.get",
	  .permission = "compute.futureReservations.get", .role = "roles/compute.futureReservationUser",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "FutureReservation" },
	{ .api = "compute", .rpc = "InsertFutureReservation", .method = "futureReservations.insert",
	  .permission = "compute.futureReservations.create", .role = "roles/compute.futureReservationUser",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "FutureReservation" },
	{ .api = "compute", .rpc = "UpdateReservation", .method = "reservations.update",
	  .permission = "compute.reservations.update", .role = GCP_ROLE_CUSTOM_APPLY,
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "FutureReservation" },
	{ .api = "compute", .rpc = "CancelFutureReservation", .method = "futureReservations.cancel",
	  .permission = "compute.futureReservations.cancel", .role = "roles/compute.futureReservationAdmin",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "FutureReservation" },
	{ .api = "compute", .rpc = "DeleteFutureReservation", .method = "futureReservations.delete",
	  .permission = "compute.futureReservations.delete", .role = "roles/compute.futureReservationAdmin",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "FutureReservation" },

	/* Vertex AI persistent resources (PersistentResource). Named by Vertex's
	 * aiplatform.<collection>.<verb> pattern: the API package names no permission. */
	{ .api = "aiplatform", .rpc = "ListPersistentResources", .method = "projects.locations.persistentResources.list",
	  .permission = "aiplatform.persistentResources.list", .role = "roles/aiplatform.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH | IMPORT, .kinds = "PersistentResource" },
	{ .api = "aiplatform", .rpc = "GetPersistentResource", .method = "projects.locations.persistentResources.get",
	  .permission = "aiplatform.persistentResources.get", .role = "roles/aiplatform.viewer",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "PersistentResource" },
	{ .api = "aiplatform", .rpc = "CreatePersistentResource", .method = "projects.locations.persistentResources.create",
	  .permission = "aiplatform.persistentResources.create", .role = "roles/aiplatform.user",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "PersistentResource" },
	{ .api = "aiplatform", .rpc = "UpdatePersistentResource", .method = "projects.locations.persistentResources.patch",
	  .permission = "aiplatform.persistentResources.update", .role = "roles/aiplatform.user",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "PersistentResource" },
	{ .api = "aiplatform", .rpc = "DeletePersistentResource", .method = "projects.locations.persistentResources.delete",
	  .permission = "aiplatform.persistentResources.delete", .role = "roles/aiplatform.user",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "PersistentResource" },

	/* Cloud Quotas: the limits of the capacity check, and QuotaPreference. */
	{ .api = "cloudquotas", .rpc = "ListQuotaInfos", .method = "projects.locations.services.quotaInfos.list",
	  .permission = "cloudquotas.quotas.get", .role = "roles/cloudquotas.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH,
	  .kinds = "CustomJob Reservation QuotaPreference" },
	{ .api = "cloudquotas", .rpc = "ListQuotaPreferences", .method = "projects.locations.quotaPreferences.list",
	  .permission = "cloudquotas.quotas.get", .role = "roles/cloudquotas.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH | IMPORT, .kinds = "QuotaPreference" },
	/* Cloud Quotas' access control page lists resourcemanager.projects.get
	 * beside cloudquotas.quotas.get for reading quota (roles/cloudquotas.viewer
	 * holds both): a custom role without it is refused. */
	{ .api = "cloudquotas", .rpc = "ListQuotaInfos", .method = "projects.locations.services.quotaInfos.list",
	  .permission = "resourcemanager.projects.get", .role = "roles/cloudquotas.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH,
	  .kinds = "CustomJob Reservation QuotaPreference" },
	{ .api = "cloudquotas", .rpc = "ListQuotaPreferences", .method = "projects.locations.quotaPreferences.list",
	  .permission = "resourcemanager.projects.get", .role = "roles/cloudquotas.viewer",
	  .on = GCP_ON_PROJECT, .cmds = PLAN | APPLY | WATCH | IMPORT, .kinds = "QuotaPreference" },
	{ .api = "cloudquotas", .rpc = "CreateQuotaPreference", .method = "projects.locations.quotaPreferences.create",
	  .permission = "cloudquotas.quotas.update", .role = "roles/cloudquotas.admin",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "QuotaPreference" },
	{ .api = "cloudquotas", .rpc = "UpdateQuotaPreference", .method = "projects.locations.quotaPreferences.patch",
	  .permission = "cloudquotas.quotas.update", .role = "roles/cloudquotas.admin",
	  .on = GCP_ON_PROJECT, .cmds = APPLY | WATCH, .kinds = "QuotaPreference" },

	/* Cloud Storage: the state bucket of the gcs backend. */
	{ .api = "storage", .rpc = "GetObject", .method = "objects.get",
	  .permission = "storage.objects.get", .role = "roles/storage.objectViewer",
	  .on = GCP_ON_BUCKET, .cmds = PLAN | APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	{ .api = "storage", .rpc = "GetObjectMedia", .method = "objects.get (media)",
	  .permission = "storage.objects.get", .role = "roles/storage.objectViewer",
	  .on = GCP_ON_BUCKET, .cmds = PLAN | APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	{ .api = "storage", .rpc = "ListObjects", .method = "objects.list",
	  .permission = "storage.objects.list", .role = "roles/storage.objectViewer",
	  .on = GCP_ON_BUCKET, .cmds = PLAN | APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	{ .api = "storage", .rpc = "InsertObject", .method = "objects.insert",
	  .permission = "storage.objects.create", .role = "roles/storage.objectUser",
	  .on = GCP_ON_BUCKET, .cmds = APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	/* Writing over an object also deletes the old generation. */
	{ .api = "storage", .rpc = "InsertObject", .method = "objects.insert",
	  .permission = "storage.objects.delete", .role = "roles/storage.objectUser",
	  .on = GCP_ON_BUCKET, .cmds = APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	/* The history object is composed on the server from a small head,
	 * state.json and a fixed tail: create on the new object, get on its parts. */
	{ .api = "storage", .rpc = "ComposeObject", .method = "objects.compose",
	  .permission = "storage.objects.create", .role = "roles/storage.objectUser",
	  .on = GCP_ON_BUCKET, .cmds = APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	{ .api = "storage", .rpc = "ComposeObject", .method = "objects.compose",
	  .permission = "storage.objects.get", .role = "roles/storage.objectUser",
	  .on = GCP_ON_BUCKET, .cmds = APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },
	{ .api = "storage", .rpc = "DeleteObject", .method = "objects.delete",
	  .permission = "storage.objects.delete", .role = "roles/storage.objectUser",
	  .on = GCP_ON_BUCKET, .cmds = APPLY | WATCH | IMPORT, .needs = GCP_NEED_GCS },

	/* vx doctor: asking Google which of the above the caller holds needs
	 * no permission; reading whether an API is enabled does. */
	{ .api = "cloudresourcemanager", .rpc = "TestProjectIamPermissions",
	  .method = "projects.testIamPermissions", .permission = NULL, .role = NULL,
	  .on = GCP_ON_PROJECT, .cmds = DOCTOR, .needs = GCP_NEED_ANY },
	{ .api = "storage", .rpc = "TestBucketIamPermissions", .method = "buckets.testIamPermissions",
	  .permission = NULL, .role = NULL,
	  .on = GCP_ON_BUCKET, .cmds = DOCTOR, .needs = GCP_NEED_GCS },
	{ .api = "iam", .rpc = "TestServiceAccountIamPermissions",
	  .method = "projects.serviceAccounts.testIamPermissions", .permission = NULL, .role = NULL,
	  .on = GCP_ON_SERVICE_ACCOUNT, .cmds = DOCTOR, .needs = GCP_NEED_JOB_SA },
	{ .api = "serviceusage", .rpc = "GetService", .method = "services.get",
	  .permission = "serviceusage.services.get", .role = "roles/serviceusage.serviceUsageViewer",
	  .on = GCP_ON_PROJECT, .cmds = DOCTOR, .needs = GCP_NEED_ANY },
};
/* clang-format on */

const struct gcp_permission *gcp_permissions(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

/* 1 when message names permission as a word of its own ("'x.y.z'", "x.y.z access"). */
static int names(const char *message, const char *permission)
{
	size_t n = strlen(permission);
	const char *p;

	for (p = message ? strstr(message, permission) : NULL; p; p = strstr(p + 1, permission)) {
		char before = p == message ? ' ' : p[-1], after = p[n];

		if (before != '.' && before != '_' && !(before >= 'a' && before <= 'z') &&
		    after != '.' && after != '_' && !(after >= 'a' && after <= 'z') &&
		    !(after >= 'A' && after <= 'Z'))
			return 1;
	}
	return 0;
}

const struct gcp_permission *gcp_permission_for(const char *api, const char *rpc, const char *message)
{
	const struct gcp_permission *first = NULL;
	size_t i;

	for (i = 0; api && rpc && i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].api, api) || strcmp(table[i].rpc, rpc))
			continue;
		if (!first)
			first = &table[i];
		if (table[i].permission && names(message, table[i].permission))
			return &table[i];
	}
	if (first)
		return first;
	for (i = 0; message && i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].permission && names(message, table[i].permission))
			return &table[i];
	return NULL;
}

int gcp_permission_serves(const struct gcp_permission *r, const char *kind)
{
	size_t n = kind ? strlen(kind) : 0;

	for (const char *p = r->kinds; p && n && (p = strstr(p, kind)); p += n)
		if ((p == r->kinds || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

const struct gcp_permission *gcp_permission_find(const char *permission)
{
	for (size_t i = 0; permission && i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].permission && !strcmp(table[i].permission, permission))
			return &table[i];
	return NULL;
}

const char *gcp_permission_on_name(enum gcp_perm_on on)
{
	switch (on) {
	case GCP_ON_BUCKET: return "the state bucket";
	case GCP_ON_SERVICE_ACCOUNT: return "the job's service account";
	case GCP_ON_PROJECT: break;
	}
	return "the project";
}
