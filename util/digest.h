#ifndef VX_UTIL_DIGEST_H
#define VX_UTIL_DIGEST_H

/*
 * SHA-256 as lowercase hex, the form every hash vx stores or shows takes
 * (declaration and spec hashes, HMACs of sensitive values). OpenSSL does
 * the hashing; this is only the one place that turns bytes into hex.
 */

#include <stddef.h>

#include "util/err.h"

#define VX_SHA256_HEX_LEN 64

/* Writes n bytes as 2n lowercase hex digits and a NUL: out holds 2n+1. */
void vx_digest_hex(char *out, const unsigned char *bytes, size_t n);

/* SHA-256 of data as 64 hex digits and a NUL. 0, or VX_EIO when OpenSSL fails. */
int vx_digest_sha256_hex(char out[VX_SHA256_HEX_LEN + 1], const void *data, size_t len) VX_WUR;

#endif
