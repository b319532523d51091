#include "util/digest.h"

#include <pthread.h>

#include <openssl/evp.h>

#include "util/banned.h"

void vx_digest_hex(char *out, const unsigned char *bytes, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/*
 * SHA-256 fetched from OpenSSL's provider once per process. EVP_sha256() is
 * looked up by name again on every EVP_Digest call (OpenSSL 3's implicit
 * fetch), which cost more than hashing a small declaration; loading a
 * 10,000-job stack hashes 20,000 of them. Never freed: one per process,
 * and the algorithm is a constant. NULL when the fetch failed: EVP_sha256()
 * is then used as before.
 */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

int vx_digest_sha256_hex(char out[VX_SHA256_HEX_LEN + 1], const void *data, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (pthread_once(&sha256_once, sha256_fetch) != 0)
		return VX_EIO;
	if (EVP_Digest(data, len, md, &mdlen, sha256_md ? sha256_md : EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return VX_EIO;
	vx_digest_hex(out, md, mdlen);
	return 0;
}
