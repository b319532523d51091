#include "workflow/version.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <git2.h>
#include <openssl/crypto.h>
#include <yaml.h>

#include "util/buf.h"
#include "util/banned.h"

/* The Makefile passes VX_COMMIT for this file only (a stamp rebuilds it when HEAD moves). */
#ifndef VX_COMMIT
#define VX_COMMIT "unknown"
#endif

/* A library that answers NULL is shown as unknown rather than crash a bug report. */
static const char *or_unknown(const char *s)
{
	return s && *s ? s : "unknown";
}

void version_info_get(struct version_info *out)
{
	const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
	int major = 0, minor = 0, rev = 0;

	memset(out, 0, sizeof(*out));
	out->vx = VX_VERSION;
	out->commit = VX_COMMIT[0] ? VX_COMMIT : "unknown";
	out->libcurl = or_unknown(curl ? curl->version : NULL);
	out->libyaml = or_unknown(yaml_get_version_string());
	out->cjson = or_unknown(cJSON_Version());
#if OPENSSL_VERSION_MAJOR >= 3
	out->openssl = or_unknown(OpenSSL_version(OPENSSL_VERSION_STRING));
#else
	out->openssl = or_unknown(OpenSSL_version(OPENSSL_VERSION));
#endif
	if (git_libgit2_version(&major, &minor, &rev) == 0)
		snprintf(out->libgit2, sizeof(out->libgit2), "%d.%d.%d", major, minor, rev);
	else
		snprintf(out->libgit2, sizeof(out->libgit2), "unknown");
}

/* Name and value of each line after vx's, in the order shown. */
static void rows(const struct version_info *v, const char *names[5], const char *values[5], int json)
{
	names[0] = "libcurl", values[0] = v->libcurl;
	names[1] = "libyaml", values[1] = v->libyaml;
	names[2] = json ? "cjson" : "cJSON", values[2] = v->cjson;
	names[3] = json ? "openssl" : "OpenSSL", values[3] = v->openssl;
	names[4] = "libgit2", values[4] = v->libgit2;
}

int version_render_human(struct vx_buf *b, const struct version_info *v)
{
	const char *names[5], *values[5];
	int rc;

	rows(v, names, values, 0);
	rc = vx_buf_printf(b, "vx %s\ncommit  %s\n", v->vx, v->commit);
	for (int i = 0; rc == 0 && i < 5; i++)
		rc = vx_buf_printf(b, "%-7s %s\n", names[i], values[i]);
	return rc;
}

int version_render_json(struct vx_buf *b, const struct version_info *v)
{
	const char *names[5], *values[5];
	int rc;

	rows(v, names, values, 1);
	rc = vx_buf_adds(b, "{\"version\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, v->vx);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"commit\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, v->commit);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"libraries\":{");
	for (int i = 0; rc == 0 && i < 5; i++) {
		rc = vx_buf_printf(b, "%s\"%s\":", i ? "," : "", names[i]);
		if (rc == 0)
			rc = vx_buf_add_json_str(b, values[i]);
	}
	return rc == 0 ? vx_buf_adds(b, "}}") : rc;
}
