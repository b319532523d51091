/* API base URLs and their overrides. See endpoints.h. */
#include "providers/gcp/endpoints.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

static const char *const default_base[GCP_API_COUNT] = {
	[GCP_API_AIPLATFORM] = "https://{region}-aiplatform.googleapis.com/v1/",
	[GCP_API_COMPUTE] = "https://compute.googleapis.com/compute/v1/",
	[GCP_API_CLOUDQUOTAS] = "https://cloudquotas.googleapis.com/v1/",
	[GCP_API_STORAGE] = "https://storage.googleapis.com/storage/v1/",
	[GCP_API_STORAGE_UPLOAD] = "https://storage.googleapis.com/upload/storage/v1/",
	[GCP_API_CLOUDRESOURCEMANAGER] = "https://cloudresourcemanager.googleapis.com/v3/",
	[GCP_API_SERVICEUSAGE] = "https://serviceusage.googleapis.com/v1/",
	[GCP_API_IAM] = "https://iam.googleapis.com/v1/",
	[GCP_API_LOGGING] = "https://logging.googleapis.com/v2/",
};

static const char *const api_names[GCP_API_COUNT] = {
	[GCP_API_AIPLATFORM] = "aiplatform",
	[GCP_API_COMPUTE] = "compute",
	[GCP_API_CLOUDQUOTAS] = "cloudquotas",
	[GCP_API_STORAGE] = "storage",
	[GCP_API_STORAGE_UPLOAD] = "storage-upload",
	[GCP_API_CLOUDRESOURCEMANAGER] = "cloudresourcemanager",
	[GCP_API_SERVICEUSAGE] = "serviceusage",
	[GCP_API_IAM] = "iam",
	[GCP_API_LOGGING] = "logging",
};

static const char *const override_vars[GCP_API_COUNT] = {
	[GCP_API_AIPLATFORM] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
	[GCP_API_COMPUTE] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
	[GCP_API_CLOUDQUOTAS] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS",
	[GCP_API_STORAGE] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
	[GCP_API_STORAGE_UPLOAD] = NULL,
	[GCP_API_CLOUDRESOURCEMANAGER] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER",
	[GCP_API_SERVICEUSAGE] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",
	[GCP_API_IAM] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM",
	[GCP_API_LOGGING] = "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
};

const char *gcp_api_name(enum gcp_api api)
{
	return (unsigned)api < GCP_API_COUNT ? api_names[api] : "unknown";
}

const char *gcp_api_override_var(enum gcp_api api)
{
	return (unsigned)api < GCP_API_COUNT ? override_vars[api] : NULL;
}

/* Parses a decimal octet 0..255 from [s, end). */
static int parse_octet(const char *s, const char *end)
{
	int v = 0;

	if (s == end || end - s > 3)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= 255 ? v : -1;
}

int gcp_host_is_loopback(const char *host)
{
	const char *p = host, *dot;
	int i, first = -1;

	if (!host)
		return 0;
	if (!strcasecmp(host, "localhost") || !strcasecmp(host, "localhost.") || !strcmp(host, "[::1]"))
		return 1;
	for (i = 0; i < 4; i++) {
		int v;

		dot = strchr(p, '.');
		if (i < 3 && !dot)
			return 0;
		if (i == 3)
			dot = p + strlen(p);
		v = parse_octet(p, dot);
		if (v < 0)
			return 0;
		if (i == 0)
			first = v;
		p = dot + 1;
	}
	return first == 127;
}

/* Length of the "scheme://" prefix (8 or 7), 0 when neither. */
static size_t scheme_len(const char *url, int *is_https)
{
	if (!strncasecmp(url, "https://", 8)) {
		*is_https = 1;
		return 8;
	}
	if (!strncasecmp(url, "http://", 7)) {
		*is_https = 0;
		return 7;
	}
	return 0;
}

int gcp_endpoints_check_url(const char *url, const char *what, struct vx_err *err)
{
	const char *auth, *end, *hend;
	char *host = NULL;
	int is_https = 0, rc = 0;
	size_t sl, i;

	if (!url || !*url)
		return vx_err_set(err, VX_EINVAL, "%s: empty URL", what);
	for (i = 0; url[i]; i++) {
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
			return vx_err_set(err, VX_EINVAL, "%s: URL contains white space or control characters",
					  what);
	}
	sl = scheme_len(url, &is_https);
	if (!sl)
		return vx_err_set(err, VX_EINVAL, "%s: \"%s\" is not an https:// URL", what, url);
	auth = url + sl;
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(end - auth)))
		return vx_err_set(err, VX_EINVAL, "%s: user info in the URL is not supported", what);
	if (strpbrk(auth, "?#"))
		return vx_err_set(err, VX_EINVAL, "%s: the URL must not have a query or fragment", what);
	if (*auth == '[') {
		hend = memchr(auth, ']', (size_t)(end - auth));
		if (!hend)
			return vx_err_set(err, VX_EINVAL, "%s: unterminated IPv6 address in \"%s\"", what, url);
		hend++;
	} else {
		hend = memchr(auth, ':', (size_t)(end - auth));
		if (!hend)
			hend = end;
	}
	if (hend == auth)
		return vx_err_set(err, VX_EINVAL, "%s: no host in \"%s\"", what, url);
	if (is_https)
		return 0;
	host = malloc((size_t)(hend - auth) + 1);
	if (!host)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	memcpy(host, auth, (size_t)(hend - auth));
	host[hend - auth] = '\0';
	if (!gcp_host_is_loopback(host))
		rc = vx_err_set(err, VX_EINVAL,
				"%s: http:// is only allowed for loopback hosts (127.0.0.0/8, localhost, [::1]), "
				"not \"%s\"; use https://",
				what, host);
	free(host);
	return rc;
}

/* value with a '/' appended when missing. */
static char *with_slash(const char *value)
{
	size_t n = strlen(value);

	return n && value[n - 1] == '/' ? vx_strdup(value) : vx_asprintf("%s/", value);
}

/* The storage upload base from the storage base (see endpoints.h). */
static char *upload_base(const char *base)
{
	int is_https = 0;
	size_t sl = scheme_len(base, &is_https);
	const char *path = base + sl + strcspn(base + sl, "/");
	const char *at = strstr(path, "/storage/v1/");

	if (!at)
		at = path;
	return vx_asprintf("%.*s/upload%s", (int)(at - base), base, at);
}

int gcp_endpoints_load(struct gcp_endpoints *e, const struct vx_ctx *ctx, struct vx_err *err)
{
	int rc = 0, i;

	memset(e, 0, sizeof(*e));
	for (i = 0; i < GCP_API_COUNT; i++) {
		const char *var = override_vars[i];
		const char *value = var ? vx_getenv(ctx, var) : NULL;

		if (i == GCP_API_STORAGE_UPLOAD && e->overridden[GCP_API_STORAGE]) {
			e->base[i] = upload_base(e->base[GCP_API_STORAGE]);
			e->overridden[i] = 1;
		} else if (value && *value) {
			rc = gcp_endpoints_check_url(value, var, err);
			if (rc < 0)
				goto done;
			e->base[i] = with_slash(value);
			e->overridden[i] = 1;
		} else {
			e->base[i] = vx_strdup(default_base[i]);
		}
		if (!e->base[i]) {
			rc = vx_err_set(err, VX_ENOMEM, "endpoints: out of memory");
			goto done;
		}
	}
done:
	if (rc < 0)
		gcp_endpoints_release(e);
	return rc;
}

void gcp_endpoints_release(struct gcp_endpoints *e)
{
	int i;

	if (!e)
		return;
	for (i = 0; i < GCP_API_COUNT; i++) {
		free(e->base[i]);
		e->base[i] = NULL;
		e->overridden[i] = 0;
	}
}

static int region_ok(const char *region)
{
	size_t i;

	if (!region || !*region || strlen(region) > 63)
		return 0;
	for (i = 0; region[i]; i++) {
		char c = region[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
	}
	return 1;
}

int gcp_endpoints_url(char **out, const struct gcp_endpoints *e, enum gcp_api api, const char *region,
		      const char *path, struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *base, *p, *mark;
	int rc = 0;

	*out = NULL;
	if ((unsigned)api >= GCP_API_COUNT || !e->base[api])
		return vx_err_set(err, VX_EINVAL, "endpoints: unknown API");
	base = e->base[api];
	if (!path)
		path = "";
	while (*path == '/')
		path++;
	if (api == GCP_API_AIPLATFORM) {
		if (!region_ok(region)) {
			rc = vx_err_set(err, VX_EINVAL, "aiplatform: \"%s\" is not a region name (e.g. us-central1)",
					region ? region : "");
			goto done;
		}
		/* Vertex's global location has no regional host. */
		if (!e->overridden[api] && !strcmp(region, "global"))
			base = "https://aiplatform.googleapis.com/v1/";
		for (p = base; (mark = strstr(p, "{region}")); p = mark + 8) {
			if (vx_buf_add(&b, p, (size_t)(mark - p)) || vx_buf_adds(&b, region))
				goto nomem;
		}
		if (vx_buf_adds(&b, p))
			goto nomem;
	} else if (vx_buf_adds(&b, base)) {
		goto nomem;
	}
	if (vx_buf_adds(&b, path))
		goto nomem;
	*out = vx_buf_detach(&b);
	if (!*out)
		goto nomem;
	goto done;
nomem:
	rc = vx_err_set(err, VX_ENOMEM, "endpoints: out of memory");
done:
	vx_buf_release(&b);
	return rc;
}
