/* RS256 JWTs for Google's JWT-bearer grant. See jwt.h. */
#include "providers/gcp/jwt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "util/buf.h"
#include "util/banned.h"

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *gcp_base64url_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t n = len / 3 * 4 + 4 + 1, i, o = 0;
	char *out = malloc(n);

	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = b64url_alphabet[v >> 18 & 63];
		out[o++] = b64url_alphabet[v >> 12 & 63];
		out[o++] = b64url_alphabet[v >> 6 & 63];
		out[o++] = b64url_alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		out[o++] = b64url_alphabet[v >> 18 & 63];
		out[o++] = b64url_alphabet[v >> 12 & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		out[o++] = b64url_alphabet[v >> 18 & 63];
		out[o++] = b64url_alphabet[v >> 12 & 63];
		out[o++] = b64url_alphabet[v >> 6 & 63];
	}
	out[o] = '\0';
	return out;
}

static int b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

int gcp_base64url_decode(unsigned char **out, size_t *out_len, const char *s, size_t len)
{
	unsigned char *buf = NULL;
	uint32_t acc = 0;
	size_t i, o = 0;
	int bits = 0, rc = 0;

	*out = NULL;
	*out_len = 0;
	while (len > 0 && s[len - 1] == '=')
		len--;
	if (len % 4 == 1)
		return VX_EINVAL;
	buf = malloc(len / 4 * 3 + 3 + 1);
	if (!buf)
		return VX_ENOMEM;
	for (i = 0; i < len; i++) {
		int v = b64url_value(s[i]);

		if (v < 0) {
			rc = VX_EINVAL;
			goto done;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits & 0xff);
		}
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	buf = NULL;
done:
	free(buf);
	return rc;
}

/* Appends "name":"value" to a cJSON object, or does nothing for NULL. */
static int add_string(cJSON *obj, const char *name, const char *value)
{
	if (!value)
		return 0;
	return cJSON_AddStringToObject(obj, name, value) ? 0 : VX_ENOMEM;
}

static int add_int(cJSON *obj, const char *name, int64_t value)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, value);
	/* Raw, so large integers print exactly (cJSON keeps numbers as doubles). */
	return cJSON_AddRawToObject(obj, name, num) ? 0 : VX_ENOMEM;
}

/* base64url of a cJSON object's compact text. */
static int encode_json(char **out, const cJSON *obj)
{
	char *text = cJSON_PrintUnformatted(obj);
	int rc = 0;

	*out = NULL;
	if (!text)
		return VX_ENOMEM;
	*out = gcp_base64url_encode(text, strlen(text));
	if (!*out)
		rc = VX_ENOMEM;
	cJSON_free(text);
	return rc;
}

static int sign_rs256(unsigned char **sig, size_t *sig_len, const char *pem, const char *input,
		      struct vx_err *err)
{
	BIO *bio = NULL;
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = 0;

	*sig = NULL;
	*sig_len = 0;
	bio = BIO_new_mem_buf(pem, -1);
	if (!bio) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	if (!key) {
		/* OpenSSL's reason would add nothing useful and the key must not be quoted. */
		rc = vx_err_set(err, VX_EINVAL,
				"private_key is not a PEM private key (expected \"-----BEGIN PRIVATE KEY-----\")");
		goto done;
	}
	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		rc = vx_err_set(err, VX_EINVAL, "private_key is not an RSA key (RS256 needs one)");
		goto done;
	}
	md = EVP_MD_CTX_new();
	if (!md) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &len, (const unsigned char *)input, strlen(input)) != 1) {
		rc = vx_err_set(err, VX_EIO, "signing JWT: OpenSSL could not start an RS256 signature");
		goto done;
	}
	buf = malloc(len);
	if (!buf) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	if (EVP_DigestSign(md, buf, &len, (const unsigned char *)input, strlen(input)) != 1) {
		rc = vx_err_set(err, VX_EIO, "signing JWT: OpenSSL signature failed");
		goto done;
	}
	*sig = buf;
	*sig_len = len;
	buf = NULL;
done:
	ERR_clear_error();
	free(buf);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	BIO_free(bio);
	return rc;
}

int gcp_jwt_sign(char **out, const char *pem_private_key, const char *kid,
		 const struct gcp_jwt_claims *claims, struct vx_err *err)
{
	cJSON *header = NULL, *body = NULL;
	char *h64 = NULL, *c64 = NULL, *s64 = NULL, *input = NULL;
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	int rc = 0;

	*out = NULL;
	if (!claims || !claims->iss || !pem_private_key) {
		rc = vx_err_set(err, VX_EINVAL, "signing JWT: issuer and private key are required");
		goto done;
	}
	header = cJSON_CreateObject();
	body = cJSON_CreateObject();
	if (!header || !body || add_string(header, "alg", "RS256") || add_string(header, "typ", "JWT") ||
	    add_string(header, "kid", kid) || add_string(body, "iss", claims->iss) ||
	    add_string(body, "sub", claims->sub) || add_string(body, "scope", claims->scope) ||
	    add_string(body, "aud", claims->aud) || add_int(body, "iat", claims->iat) ||
	    add_int(body, "exp", claims->exp ? claims->exp : claims->iat + 3600)) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	if (encode_json(&h64, header) || encode_json(&c64, body)) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	input = vx_asprintf("%s.%s", h64, c64);
	if (!input) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	rc = sign_rs256(&sig, &sig_len, pem_private_key, input, err);
	if (rc < 0)
		goto done;
	s64 = gcp_base64url_encode(sig, sig_len);
	if (!s64) {
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
		goto done;
	}
	*out = vx_asprintf("%s.%s", input, s64);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "signing JWT: out of memory");
done:
	cJSON_Delete(header);
	cJSON_Delete(body);
	free(h64);
	free(c64);
	free(s64);
	free(sig);
	free(input);
	return rc;
}
