#ifndef VX_GCP_JWT_H
#define VX_GCP_JWT_H

/*
 * RS256 JSON Web Tokens, as Google's OAuth JWT-bearer grant wants them:
 * base64url(header) "." base64url(claims) "." base64url(signature), all
 * without padding; the signature is RSASSA-PKCS1-v1_5 over SHA-256, made
 * with OpenSSL from a PEM private key (PKCS#8 or PKCS#1).
 *
 * The results are secrets (a signed assertion is a bearer credential for an
 * hour): callers must never log them, and errors never contain them or the
 * key.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct gcp_jwt_claims {
	const char *iss;   /* client_email; required */
	const char *sub;   /* NULL = omitted */
	const char *scope; /* space-separated scopes; NULL = omitted */
	const char *aud;   /* NULL = omitted */
	int64_t iat;       /* Unix seconds */
	int64_t exp;       /* Unix seconds; 0 = iat + 3600 */
};

/*
 * Signs a JWT. Header {"alg":"RS256","typ":"JWT"} plus "kid" when kid is
 * not NULL; claims in the order iss, sub, scope, aud, iat, exp. *out is
 * owned by the caller (free it after cleansing if you care). Returns 0,
 * VX_EINVAL when the key is not a readable RSA private key (the message
 * never quotes the key), VX_EIO for an OpenSSL failure, VX_ENOMEM.
 */
int gcp_jwt_sign(char **out, const char *pem_private_key, const char *kid,
		 const struct gcp_jwt_claims *claims, struct vx_err *err) VX_WUR;

/* base64url without padding. Returns NULL on allocation failure. Caller frees. */
char *gcp_base64url_encode(const void *data, size_t len);

/*
 * Decodes base64url (padding optional). *out is NUL-terminated for
 * convenience and owned by the caller. Returns 0 or VX_EINVAL on bad input,
 * VX_ENOMEM.
 */
int gcp_base64url_decode(unsigned char **out, size_t *out_len, const char *s, size_t len) VX_WUR;

#endif
