#include "util/digest.h"

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

int vx_digest_sha256_hex(char out[VX_SHA256_HEX_LEN + 1], const void *data, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return VX_EIO;
	vx_digest_hex(out, md, mdlen);
	return 0;
}
