/*
 * The checker's output tree and its canonical JSON (see spec.c for the
 * canonical form): the tree, its rendering with sensitive values as they are
 * or as HMACs keyed with the state's salt, and the hash over that rendering.
 */
#include "reconcile/load/spec.h"
#include "reconcile/load/spec_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/digest.h"
#include "util/banned.h"

/* ---- the output tree ------------------------------------------------------ */

void jv_free(struct jv *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		free(v->m[i].owned);
		jv_free(v->m[i].v);
	}
	free(v->m);
	if (v->sensitive && v->str)
		OPENSSL_cleanse(v->str, strlen(v->str));
	free(v);
}

/* The node and its text are one allocation: a spec's tree has a few dozen
 * nodes, every job has one, and each malloc and free showed. */
struct jv *jv_new(enum jv_kind kind, const char *str)
{
	size_t len = str ? strlen(str) + 1 : 0;
	struct jv *v = len > SIZE_MAX - sizeof(*v) ? NULL : calloc(1, sizeof(*v) + len);

	if (!v)
		return NULL;
	v->kind = kind;
	if (str) {
		v->str = (char *)(v + 1);
		memcpy(v->str, str, len);
	}
	return v;
}

static int add_member(struct jv *parent, const char *key, char *owned, struct jv *child)
{
	if (VX_ALLOC_GROW(parent->m, parent->n + 1, parent->alloc) < 0) {
		free(owned);
		jv_free(child);
		return VX_ENOMEM;
	}
	parent->m[parent->n].key = key;
	parent->m[parent->n].owned = owned;
	parent->m[parent->n].v = child;
	parent->n++;
	return 0;
}

/* Adds child (taking it, also on failure) under a copy of key (NULL in arrays). */
int jv_add(struct jv *parent, const char *key, struct jv *child)
{
	char *k = NULL;

	if (!child)
		return VX_ENOMEM;
	if (key && !(k = vx_strdup(key))) {
		jv_free(child);
		return VX_ENOMEM;
	}
	return add_member(parent, k, k, child);
}

int jv_add_static(struct jv *parent, const char *key, struct jv *child)
{
	if (!child)
		return VX_ENOMEM;
	return add_member(parent, key, NULL, child);
}

struct jv *jv_get(const struct jv *obj, const char *key)
{
	size_t i;

	for (i = 0; obj && obj->kind == JV_OBJ && i < obj->n; i++)
		if (!strcmp(obj->m[i].key, key))
			return obj->m[i].v;
	return NULL;
}

static int member_cmp(const void *a, const void *b)
{
	const struct jv_member *x = a, *y = b;

	return strcmp(x->key, y->key);
}

void jv_sort(struct jv *v)
{
	size_t i;

	if (v->kind == JV_OBJ && v->n > 1)
		qsort(v->m, v->n, sizeof(v->m[0]), member_cmp);
	for (i = 0; i < v->n; i++)
		jv_sort(v->m[i].v);
}

size_t jv_count_sensitive(const struct jv *v)
{
	size_t i, n = v->kind == JV_STR && v->sensitive;

	for (i = 0; i < v->n; i++)
		n += jv_count_sensitive(v->m[i].v);
	return n;
}

#define REDACT_UNSALTED "(sensitive: not yet keyed with the state's salt)"

int spec_json_write(struct vx_buf *b, const struct jv *v, const struct redact *redact)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[65];
	size_t i;
	int rc = 0;

	switch (v->kind) {
	case JV_OBJ:
	case JV_ARR:
		rc = vx_buf_addc(b, v->kind == JV_OBJ ? '{' : '[');
		for (i = 0; rc == 0 && i < v->n; i++) {
			if (i)
				rc = vx_buf_addc(b, ',');
			if (rc == 0 && v->kind == JV_OBJ) {
				rc = vx_buf_add_json_str(b, v->m[i].key);
				if (rc == 0)
					rc = vx_buf_addc(b, ':');
			}
			if (rc == 0)
				rc = spec_json_write(b, v->m[i].v, redact);
		}
		if (rc == 0)
			rc = vx_buf_addc(b, v->kind == JV_OBJ ? '}' : ']');
		break;
	case JV_STR:
		if (redact && v->sensitive && !redact->key) {
			rc = vx_buf_add_json_str(b, REDACT_UNSALTED);
		} else if (redact && v->sensitive) {
			/* HMAC, not a plain hash: without the salt, a guessed value cannot be
			 * checked against what is stored, nor two stacks' values compared. */
			if (!HMAC(EVP_sha256(), redact->key, (int)redact->keylen,
				  (const unsigned char *)v->str, strlen(v->str), md, &mdlen) || mdlen != 32)
				return VX_EIO;
			vx_digest_hex(hex, md, 32);
			rc = vx_buf_printf(b, "\"hmac-sha256:%s\"", hex);
		} else {
			rc = vx_buf_add_json_str(b, v->str);
		}
		break;
	case JV_NUM:
		rc = vx_buf_adds(b, v->str);
		break;
	case JV_BOOL:
		rc = vx_buf_adds(b, v->b ? "true" : "false");
		break;
	}
	return rc;
}

/* Renders tree into out->redacted_json with r, and hashes that into out->hash. */
int spec_json_redact_and_hash(struct job_spec *out, const struct jv *tree, const struct redact *r)
{
	struct vx_buf b = VX_BUF_INIT;
	char *text = NULL;
	int rc = spec_json_write(&b, tree, r);

	if (rc == 0 && !(text = vx_buf_detach(&b)))
		rc = VX_ENOMEM;
	vx_buf_release(&b);
	if (rc != 0) /* not rc < 0: any other result left text NULL */
		return rc == VX_EIO ? VX_EIO : VX_ENOMEM;
	if (vx_digest_sha256_hex(out->hash, text, strlen(text)) < 0) {
		free(text);
		return VX_EIO;
	}
	free(out->redacted_json);
	out->redacted_json = text;
	return 0;
}

int job_spec_rehash(struct job_spec *s, const char *salt, struct vx_err *err)
{
	unsigned char key[32];
	struct redact r = { key, sizeof(key) };
	size_t keylen = 0;
	int rc;

	if (!s->tree)
		return 0;
	/* OpenSSL's decoder; the length check keeps out separators it would accept. */
	if (!salt || strlen(salt) != 64 ||
	    OPENSSL_hexstr2buf_ex(key, sizeof(key), &keylen, salt, '\0') != 1 || keylen != sizeof(key)) {
		ERR_clear_error();
		return vx_err_set(err, VX_EINVAL, "the state's salt is not 64 hex digits");
	}
	rc = spec_json_redact_and_hash(s, s->tree, &r);
	OPENSSL_cleanse(key, sizeof(key));
	if (rc == VX_EIO) {
		ERR_clear_error();
		return vx_err_set(err, rc, "HMAC-SHA-256 of a sensitive value: OpenSSL failed");
	}
	if (rc < 0)
		return vx_err_set(err, rc, "out of memory");
	return 0;
}
