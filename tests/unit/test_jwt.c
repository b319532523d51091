/* Unit tests for providers/gcp/jwt: base64url, claims, and an RS256
 * signature that verifies with the public key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "providers/gcp/jwt.h"
#include "util/err.h"

/* A fresh RSA key as PKCS#8 PEM (what Google's key files carry), and the key. */
static char *make_key_pem(EVP_PKEY **keyp, int pkcs1)
{
	EVP_PKEY *key = EVP_RSA_gen(2048);
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL, *pem;
	long n;

	assert_non_null(key);
	assert_non_null(bio);
	if (pkcs1)
		assert_int_equal(PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL), 1);
	else
		assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &data);
	assert_true(n > 0);
	pem = malloc((size_t)n + 1);
	assert_non_null(pem);
	memcpy(pem, data, (size_t)n);
	pem[n] = '\0';
	BIO_free(bio);
	*keyp = key;
	return pem;
}

static char *decode_part(const char *s, size_t len)
{
	unsigned char *out = NULL;
	size_t out_len = 0;

	assert_int_equal(gcp_base64url_decode(&out, &out_len, s, len), 0);
	return (char *)out;
}

static void test_base64url(void **state)
{
	static const unsigned char bin[] = { 0xfb, 0xff, 0xfe, 0x00, 0x3e };
	unsigned char *dec = NULL;
	size_t dec_len = 0;
	char *s;

	(void)state;
	s = gcp_base64url_encode("", 0);
	assert_string_equal(s, "");
	free(s);
	s = gcp_base64url_encode("f", 1);
	assert_string_equal(s, "Zg");
	free(s);
	s = gcp_base64url_encode("fo", 2);
	assert_string_equal(s, "Zm8");
	free(s);
	s = gcp_base64url_encode("foo", 3);
	assert_string_equal(s, "Zm9v");
	free(s);
	/* '+' and '/' of standard base64 become '-' and '_', no padding. */
	s = gcp_base64url_encode(bin, sizeof(bin));
	assert_string_equal(s, "-__-AD4");
	assert_int_equal(gcp_base64url_decode(&dec, &dec_len, s, strlen(s)), 0);
	assert_int_equal(dec_len, sizeof(bin));
	assert_memory_equal(dec, bin, sizeof(bin));
	free(dec);
	free(s);
	assert_int_equal(gcp_base64url_decode(&dec, &dec_len, "Zg==", 4), 0);
	assert_string_equal((char *)dec, "f");
	free(dec);
	assert_int_equal(gcp_base64url_decode(&dec, &dec_len, "a+b/", 4), VX_EINVAL);
	assert_null(dec);
	assert_int_equal(gcp_base64url_decode(&dec, &dec_len, "abcde", 5), VX_EINVAL);
}

static void check_token(const char *jwt, EVP_PKEY *key, const char *want_header, const char *want_claims)
{
	const char *dot1 = strchr(jwt, '.'), *dot2;
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	EVP_MD_CTX *md;
	char *header, *claims;

	assert_non_null(dot1);
	dot2 = strchr(dot1 + 1, '.');
	assert_non_null(dot2);
	assert_null(strchr(dot2 + 1, '.'));
	assert_null(strchr(jwt, '='));
	assert_null(strchr(jwt, '+'));
	assert_null(strchr(jwt, '/'));
	header = decode_part(jwt, (size_t)(dot1 - jwt));
	claims = decode_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
	assert_string_equal(header, want_header);
	assert_string_equal(claims, want_claims);
	assert_int_equal(gcp_base64url_decode(&sig, &sig_len, dot2 + 1, strlen(dot2 + 1)), 0);
	assert_int_equal(sig_len, 256);

	md = EVP_MD_CTX_new();
	assert_non_null(md);
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
	assert_int_equal(EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)jwt, (size_t)(dot2 - jwt)), 1);
	/* A changed signing input must not verify. */
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
	assert_int_not_equal(EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)jwt, (size_t)(dot2 - jwt) - 1),
			     1);
	EVP_MD_CTX_free(md);
	free(sig);
	free(header);
	free(claims);
}

static void test_sign_and_verify(void **state)
{
	struct gcp_jwt_claims c = { 0 };
	struct vx_err err = VX_ERR_INIT;
	EVP_PKEY *key = NULL;
	char *pem = make_key_pem(&key, 0), *jwt = NULL;

	(void)state;
	c.iss = "sa@p.iam.gserviceaccount.com";
	c.scope = "https://www.googleapis.com/auth/cloud-platform";
	c.aud = "https://oauth2.googleapis.com/token";
	c.iat = 1795341926;
	assert_int_equal(gcp_jwt_sign(&jwt, pem, NULL, &c, &err), 0);
	check_token(jwt, key, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}",
		    "{\"iss\":\"sa@p.iam.gserviceaccount.com\","
		    "\"scope\":\"https://www.googleapis.com/auth/cloud-platform\","
		    "\"aud\":\"https://oauth2.googleapis.com/token\",\"iat\":1795341926,\"exp\":1795345526}");
	free(jwt);

	/* kid when known; an explicit exp wins; sub when set. */
	c.sub = "u@example.com";
	c.exp = 1795341999;
	assert_int_equal(gcp_jwt_sign(&jwt, pem, "abc123", &c, &err), 0);
	check_token(jwt, key, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"abc123\"}",
		    "{\"iss\":\"sa@p.iam.gserviceaccount.com\",\"sub\":\"u@example.com\","
		    "\"scope\":\"https://www.googleapis.com/auth/cloud-platform\","
		    "\"aud\":\"https://oauth2.googleapis.com/token\",\"iat\":1795341926,\"exp\":1795341999}");
	free(jwt);
	EVP_PKEY_free(key);
	free(pem);
	vx_err_release(&err);
}

static void test_pkcs1_key(void **state)
{
	struct gcp_jwt_claims c = { 0 };
	struct vx_err err = VX_ERR_INIT;
	EVP_PKEY *key = NULL;
	char *pem = make_key_pem(&key, 1), *jwt = NULL;

	(void)state;
	assert_non_null(strstr(pem, "BEGIN RSA PRIVATE KEY"));
	c.iss = "a@b";
	c.iat = 10;
	assert_int_equal(gcp_jwt_sign(&jwt, pem, NULL, &c, &err), 0);
	check_token(jwt, key, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", "{\"iss\":\"a@b\",\"iat\":10,\"exp\":3610}");
	free(jwt);
	EVP_PKEY_free(key);
	free(pem);
}

static void test_bad_keys(void **state)
{
	static const char garbage[] = "-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n-----END PRIVATE KEY-----\n";
	struct gcp_jwt_claims c = { 0 };
	struct vx_err err = VX_ERR_INIT;
	EVP_PKEY *ec = EVP_EC_gen("P-256");
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL, *pem, *jwt = NULL;
	long n;

	(void)state;
	c.iss = "a@b";
	c.iat = 10;
	assert_int_equal(gcp_jwt_sign(&jwt, garbage, NULL, &c, &err), VX_EINVAL);
	assert_null(jwt);
	assert_string_equal(err.msg,
			    "private_key is not a PEM private key (expected \"-----BEGIN PRIVATE KEY-----\")");
	assert_null(strstr(err.msg, "SECRETSTUFF"));

	/* An EC key is a valid PEM key, but not RS256 material. */
	assert_non_null(ec);
	assert_int_equal(PEM_write_bio_PrivateKey(bio, ec, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	assert_int_equal(gcp_jwt_sign(&jwt, pem, NULL, &c, &err), VX_EINVAL);
	assert_string_equal(err.msg, "private_key is not an RSA key (RS256 needs one)");
	c.iss = NULL;
	assert_int_equal(gcp_jwt_sign(&jwt, pem, NULL, &c, &err), VX_EINVAL);
	free(pem);
	BIO_free(bio);
	EVP_PKEY_free(ec);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64url),
		cmocka_unit_test(test_sign_and_verify),
		cmocka_unit_test(test_pkcs1_key),
		cmocka_unit_test(test_bad_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
