#ifndef VX_RECONCILE_PROVIDER_QUOTA_H
#define VX_RECONCILE_PROVIDER_QUOTA_H

/*
 * The client interface of the quota kind (Cloud Quotas QuotaPreferences,
 * and the quota limits in force the capacity check reads): what the cloud
 * reports, what a create or update carries, the kind's operations and the
 * helpers over them. See reconcile/provider.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"
#include "util/label.h"

/* A Cloud Quotas QuotaPreference as the cloud reports it. */
struct live_quota {
	char *name;              /* projects/P/locations/global/quotaPreferences/ID */
	char *id;                /* ID: also the address's NAME */
	char *service;
	char *quota_id;
	struct vx_label *dimensions; /* sorted by key */
	size_t ndimensions;
	int64_t preferred;       /* quotaConfig.preferredValue (-1: unlimited) */
	int has_granted;
	int64_t granted;         /* quotaConfig.grantedValue */
	int reconciling;
	/* The quota's limit in force (its QuotaInfo), read by the plan's
	 * refresh only when there is no grantedValue and a decrease is asked
	 * for: the value Cloud Quotas' decrease check measures from. */
	int has_limit;
	int64_t limit;
	char *state_detail;      /* quotaConfig.stateDetail, or NULL */
	/* When the value now requested was asked for: updateTime, else
	 * createTime (Unix ms); 0: unknown. */
	int64_t requested_ms;
	char *etag;
	char *contact_email;     /* as returned (Google may omit it), or NULL */
};

struct live_quotas {
	struct live_quota *items;
	size_t n;
};

/*
 * Cloud Quotas' safety checks a create or update may skip (its
 * ignoreSafetyChecks): a decrease of more than 10% (1, so a plain "true"
 * skips the one issue 9 names), and a decrease below current usage.
 */
#define PROVIDER_QUOTA_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH 1
#define PROVIDER_QUOTA_IGNORE_DECREASE_BELOW_USAGE 2

struct provider_quota_request {
	const char *project;
	const char *id;                /* quotaPreferenceId */
	const char *service;
	const char *quota_id;
	const struct vx_label *dimensions;
	size_t ndimensions;
	int64_t preferred;
	const char *contact_email;     /* or NULL */
	const char *justification;     /* or NULL */
	const char *etag;              /* update: the etag last read (compare-and-swap) */
	int ignore_safety_checks;      /* PROVIDER_QUOTA_IGNORE_* bits: the safety checks the YAML asked to skip */
	const struct provider_fence *fence; /* NULL: none */
};

/*
 * One limit in force, from a Cloud Quotas quotaInfo: one entry of its
 * dimensionsInfos for one of its applicableLocations. Cloud Quotas reports
 * limits, not usage (docs/quota-and-cost.md).
 */
struct live_quota_limit {
	char *service;           /* "aiplatform.googleapis.com" */
	char *quota_id;          /* "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion" */
	char *location;          /* a region, a zone or "global" */
	char *dimensions;        /* the entry's dimensions but region and zone, "k=v,k=v" sorted; NULL: none */
	int64_t value;           /* details.value: the limit (-1: unlimited) */
};

struct live_quota_limits {
	struct live_quota_limit *items; /* in the order listed: most specific first per quota */
	size_t n;
};

/*
 * Quota preferences (Cloud Quotas). list: the project's preferences, one
 * paginated list. create: with quotaPreferenceId = req->id. update: a
 * patch of quotaConfig.preferredValue (and contactEmail) with req->etag;
 * VX_ECONFLICT when the etag no longer matches.
 */
struct provider_quota_ops {
	int (*list)(struct provider *p, const char *project, struct live_quotas *out, struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
		      struct vx_err *err);
	int (*update)(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
		      struct vx_err *err);
	/*
	 * Quota limits (Cloud Quotas quotaInfos) of one service: one paginated
	 * list, appended to *out. NULL in providers that cannot read them (the
	 * plan shows such limits as unknown).
	 */
	int (*list_infos)(struct provider *p, const char *project, const char *service,
			  struct live_quota_limits *out, struct vx_err *err);
};

/* The quota kind's interface (struct provider's tables, provider_find, PROVIDER_HAS(p, quota, op)). */
extern const struct provider_kind provider_kind_quota;

/* The operations of provider_quota_ops, called on the provider in p's chain that has each
 * (VX_EINVAL when none). */
int provider_quota_list(struct provider *p, const char *project, struct live_quotas *out, struct vx_err *err);
int provider_quota_create(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
			  struct vx_err *err);
int provider_quota_update(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
			  struct vx_err *err);
int provider_quota_list_infos(struct provider *p, const char *project, const char *service,
			      struct live_quota_limits *out, struct vx_err *err);

/* Deep copy and release helpers for quota preferences and limits. */
int live_quota_copy(struct live_quota *out, const struct live_quota *in) VX_WUR;
void live_quota_release(struct live_quota *q);
void live_quotas_release(struct live_quotas *qs);
int live_quotas_push(struct live_quotas *qs, const struct live_quota *q) VX_WUR;

void live_quota_limits_release(struct live_quota_limits *l);
/* Appends a deep copy of q. VX_ENOMEM. */
int live_quota_limits_push(struct live_quota_limits *l, const struct live_quota_limit *q) VX_WUR;
/* The limit of service's quota_id at location for no other dimension (the
 * first such entry). 0 and *out set, or VX_ENOTFOUND. */
int live_quota_limits_find(const struct live_quota_limits *l, const char *service, const char *quota_id,
			   const char *location, int64_t *out) VX_WUR;

#endif
