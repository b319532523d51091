#ifndef VX_GCP_QUOTAS_H
#define VX_GCP_QUOTAS_H

/*
 * Cloud Quotas v1: quotaPreferences create, get, list (every page), patch
 * (updateMask, allowMissing, validateOnly, etag), and quotaInfos get and
 * list for a service. Every resource lives under
 * projects/P/locations/global.
 *
 * Retries: reads and patches (an upsert with allowMissing included) use
 * GCP_RETRY_SAFE; create, and a patch carrying an etag (whose resend would
 * fail as a false conflict), use GCP_RETRY_NEVER and return VX_EUNCERTAIN
 * when their outcome is unknown.
 *
 * Responses become our structs here; the parsers are public for fuzzing and
 * never crash on hostile input.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

struct gcp_http;
struct gcp_fence;
struct vx_ctx;

/* base_url: "https://cloudquotas.googleapis.com/v1/". All members borrowed. */
struct quotas_client {
	struct gcp_http *http;
	const struct vx_ctx *ctx;
	const char *base_url;
	/* Checked before each attempt of a create or a patch is sent (not a
	 * validateOnly patch, not a read; gcp_fence in http.h); NULL: none. */
	const struct gcp_fence *fence;
};

/* Cloud Quotas' QuotaSafetyCheck values to skip, for quota_preference.ignore_safety_checks. */
enum {
	QUOTAS_IGNORE_DECREASE_BELOW_USAGE = 1 << 0,        /* QUOTA_DECREASE_BELOW_USAGE */
	QUOTAS_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH = 1 << 1, /* QUOTA_DECREASE_PERCENTAGE_TOO_HIGH (> 10%) */
};

/* A QuotaPreference. Owned strings, NULL when absent. */
struct quota_preference {
	char *name;             /* projects/P/locations/global/quotaPreferences/ID */
	char *service;          /* "aiplatform.googleapis.com" */
	char *quota_id;
	struct vx_label *dimensions;
	size_t n_dimensions;
	int64_t preferred_value;      /* quotaConfig.preferredValue; -1 = unlimited */
	int has_granted_value;        /* quotaConfig.grantedValue is present */
	int64_t granted_value;
	char *trace_id;
	char *request_origin;   /* name ("CLOUD_CONSOLE") or number as text */
	char *state_detail;
	char *etag;
	int reconciling;
	/* createTime and updateTime (Unix ms); 0 when absent or not a time. */
	int64_t create_ms;
	int64_t update_ms;
	char *contact_email;    /* input only: never returned by the API */
	char *justification;
	/* Input only, sent as the repeated ignoreSafetyChecks query parameter of
	 * create and patch (never in the body): QUOTAS_IGNORE_* bits. */
	unsigned ignore_safety_checks;
};

#define QUOTA_PREFERENCE_INIT { 0 }

void quota_preference_release(struct quota_preference *p);
/* The value of a dimension, or NULL. Borrowed. */
const char *quota_preference_dimension(const struct quota_preference *p, const char *key);

struct quota_preference_list {
	struct quota_preference *items;
	size_t n;
	size_t alloc;
};

#define QUOTA_PREFERENCE_LIST_INIT { NULL, 0, 0 }

void quota_preference_list_release(struct quota_preference_list *l);

struct quota_dimensions_info {
	struct vx_label *dimensions;
	size_t n_dimensions;
	int has_value;
	int64_t value;                 /* details.value: the limit in force */
	char **applicable_locations;
	size_t n_applicable_locations;
};

struct quota_info {
	char *name;
	char *quota_id;
	char *metric;
	char *service;
	int is_fixed;
	int is_precise;
	char **dimensions;             /* dimension names */
	size_t n_dimensions;
	struct quota_dimensions_info *infos;
	size_t n_infos;
};

#define QUOTA_INFO_INIT { 0 }

void quota_info_release(struct quota_info *q);
/* The limit for location (a region or zone): the first dimensionsInfos entry whose
 * applicableLocations contains it (or "global"). 0 and *out set, or VX_ENOTFOUND. */
int quota_info_limit_for(const struct quota_info *q, const char *location, int64_t *out) VX_WUR;

struct quota_info_list {
	struct quota_info *items;
	size_t n;
	size_t alloc;
};

#define QUOTA_INFO_LIST_INIT { NULL, 0, 0 }

void quota_info_list_release(struct quota_info_list *l);

/* Parsers (body need not be NUL-terminated; *out is overwritten and, on error, left released). */
int quota_preference_parse_json(const char *body, size_t len, struct quota_preference *out,
				struct vx_err *err) VX_WUR;
int quota_preference_list_parse_json(const char *body, size_t len, struct quota_preference_list *l,
				     char **next_page_token, struct vx_err *err) VX_WUR;
int quota_info_parse_json(const char *body, size_t len, struct quota_info *out, struct vx_err *err) VX_WUR;
int quota_info_list_parse_json(const char *body, size_t len, struct quota_info_list *l,
			       char **next_page_token, struct vx_err *err) VX_WUR;

/*
 * The request body for p: {"service","quotaId","dimensions","quotaConfig":
 * {"preferredValue":"N"},"etag"?,"justification"?,"contactEmail"?}. No name
 * (it travels in the path). *out owned by the caller.
 */
int quota_preference_to_json(const struct quota_preference *p, char **out) VX_WUR;

/* POST projects/P/locations/global/quotaPreferences?quotaPreferenceId=ID
 * [&ignoreSafetyChecks=...] (never resent). */
int quotas_create_preference(struct quotas_client *c, const char *project, const char *id,
			     const struct quota_preference *p, struct quota_preference *out,
			     struct vx_err *err) VX_WUR;
/* GET projects/P/locations/global/quotaPreferences/ID. VX_ENOTFOUND when absent. */
int quotas_get_preference(struct quotas_client *c, const char *project, const char *id,
			  struct quota_preference *out, struct vx_err *err) VX_WUR;
/* Every page of quotaPreferences.list (filter NULL = all), appended to *out. */
int quotas_list_preferences(struct quotas_client *c, const char *project, const char *filter,
			    struct quota_preference_list *out, struct vx_err *err) VX_WUR;

enum {
	QUOTAS_ALLOW_MISSING = 1 << 0, /* create when absent (upsert) */
	QUOTAS_VALIDATE_ONLY = 1 << 1, /* check only, change nothing */
};

/*
 * PATCH projects/P/locations/global/quotaPreferences/ID?updateMask=M
 * [&allowMissing=true][&validateOnly=true][&ignoreSafetyChecks=...] with quota_preference_to_json(p)
 * (p->etag, when set, makes a stale write VX_ECONFLICT). update_mask NULL =
 * no mask (the server overwrites every field).
 */
int quotas_patch_preference(struct quotas_client *c, const char *project, const char *id,
			    const struct quota_preference *p, const char *update_mask, unsigned flags,
			    struct quota_preference *out, struct vx_err *err) VX_WUR;

/* GET projects/P/locations/global/services/S/quotaInfos/ID. */
int quotas_get_info(struct quotas_client *c, const char *project, const char *service,
		    const char *quota_id, struct quota_info *out, struct vx_err *err) VX_WUR;
/* Every page of projects/P/locations/global/services/S/quotaInfos, appended to *out. */
int quotas_list_infos(struct quotas_client *c, const char *project, const char *service,
		      struct quota_info_list *out, struct vx_err *err) VX_WUR;

#endif
