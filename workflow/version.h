#ifndef VX_WORKFLOW_VERSION_H
#define VX_WORKFLOW_VERSION_H

/*
 * What vx version reports: vx's own version, the git commit it was built
 * from (baked in by the Makefile; "unknown" in a build outside git, such as
 * one from a release tarball) and the versions of the five libraries as they
 * report themselves at run time, which is what a bug report needs: the
 * shared library loaded, not the headers vx was compiled against.
 */

struct vx_buf;

struct version_info {
	const char *vx;       /* "0.1.0" */
	const char *commit;   /* "0aa8a1f3b2c4", "0aa8a1f3b2c4-dirty" or "unknown" */
	const char *libcurl;  /* curl_version_info()->version */
	const char *libyaml;  /* yaml_get_version_string() */
	const char *cjson;    /* cJSON_Version() */
	const char *openssl;  /* OpenSSL_version(OPENSSL_VERSION_STRING): "3.0.19" */
	char libgit2[32];     /* git_libgit2_version() as "1.5.1" */
};

/* Fills *out; the strings are static or the libraries' own. Never fails. */
void version_info_get(struct version_info *out);

/* One "name version" line each, vx's first. 0, or -1 on OOM. */
int version_render_human(struct vx_buf *b, const struct version_info *v) __attribute__((warn_unused_result));
/* {"version":..,"commit":..,"libraries":{"libcurl":..,...}}, no newline. 0, or -1 on OOM. */
int version_render_json(struct vx_buf *b, const struct version_info *v) __attribute__((warn_unused_result));

#endif
