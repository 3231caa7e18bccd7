#ifndef RUNNEL_CLIBCRYPTO_SHIM_H
#define RUNNEL_CLIBCRYPTO_SHIM_H
/* OpenSSL's libcrypto: the digests and Base64 of the WebSocket handshake, token digests, and
   the JWT signatures (HMAC-SHA256, RSA PKCS#1 v1.5 SHA-256, ECDSA P-256 SHA-256). */
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* What kind of public key a key is, for the JWS algorithm it may serve. */
enum { runnel_pkey_other = 0, runnel_pkey_rsa = 1, runnel_pkey_ec_p256 = 2 };

static inline int runnel_pkey_kind(EVP_PKEY *key) {
    if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) return runnel_pkey_rsa;
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return runnel_pkey_other;
    char group[64];
    size_t length = 0;
    if (EVP_PKEY_get_group_name(key, group, sizeof group, &length) != 1) return runnel_pkey_other;
    return strcmp(group, "prime256v1") == 0 ? runnel_pkey_ec_p256 : runnel_pkey_other;
}

/* The first public key of a PEM text (SubjectPublicKeyInfo); NULL when there is none. */
static inline EVP_PKEY *runnel_pkey_from_pem(const void *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return key;
}

/* A key from OSSL_PARAMs built by `build` (an RSA or EC public key from a JWK), checked. */
static inline EVP_PKEY *runnel_pkey_from_params(const char *type, OSSL_PARAM_BLD *build) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(build);
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (params != NULL && context != NULL && EVP_PKEY_fromdata_init(context) == 1)
        EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    if (key == NULL) return NULL;
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    int valid = check != NULL && EVP_PKEY_public_check(check) == 1;
    EVP_PKEY_CTX_free(check);
    if (!valid) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

/* An RSA public key from its modulus and exponent (big-endian bytes). */
static inline EVP_PKEY *runnel_pkey_rsa_from(const unsigned char *n, int n_length, const unsigned char *e,
                                             int e_length) {
    BIGNUM *modulus = BN_bin2bn(n, n_length, NULL), *exponent = BN_bin2bn(e, e_length, NULL);
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    EVP_PKEY *key = NULL;
    if (modulus != NULL && exponent != NULL && build != NULL
        && OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_N, modulus) == 1
        && OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_E, exponent) == 1)
        key = runnel_pkey_from_params("RSA", build);
    OSSL_PARAM_BLD_free(build);
    BN_free(modulus);
    BN_free(exponent);
    return key;
}

/* A P-256 public key from its point's coordinates (32 big-endian bytes each). */
static inline EVP_PKEY *runnel_pkey_p256_from(const unsigned char *x, const unsigned char *y) {
    unsigned char point[65];
    point[0] = 4; /* uncompressed */
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    EVP_PKEY *key = NULL;
    if (build != NULL && OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1
        && OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point) == 1)
        key = runnel_pkey_from_params("EC", build);
    OSSL_PARAM_BLD_free(build);
    return key;
}

/* The key's SubjectPublicKeyInfo, DER, into `out` (at most `capacity` bytes); its length, or
   -1 when it does not fit. */
static inline int runnel_pkey_der(EVP_PKEY *key, unsigned char *out, int capacity) {
    int length = i2d_PUBKEY(key, NULL);
    if (length <= 0 || length > capacity) return -1;
    unsigned char *cursor = out;
    return i2d_PUBKEY(key, &cursor);
}

/* Whether `signature` is the SHA-256 signature of `data` by `key` (RSA PKCS#1 v1.5, or ECDSA
   with a DER signature). */
static inline int runnel_verify_sha256(EVP_PKEY *key, const unsigned char *signature, size_t signature_length,
                                       const unsigned char *data, size_t data_length) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int verified = context != NULL && EVP_DigestVerifyInit(context, NULL, EVP_sha256(), NULL, key) == 1
                   && EVP_DigestVerify(context, signature, signature_length, data, data_length) == 1;
    EVP_MD_CTX_free(context);
    return verified;
}

/* Whether the JWS ES256 signature `raw` (r then s, 32 big-endian bytes each) is the
   signature of `data` by `key`: turned into DER ECDSA-Sig-Value, as libcrypto reads it. */
static inline int runnel_verify_es256(EVP_PKEY *key, const unsigned char *raw, const unsigned char *data,
                                      size_t data_length) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        ECDSA_SIG_free(sig);
        BN_free(r);
        BN_free(s);
        return 0;
    }
    unsigned char *der = NULL;
    int der_length = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (der_length <= 0) return 0;
    int verified = runnel_verify_sha256(key, der, (size_t)der_length, data, data_length);
    OPENSSL_free(der);
    return verified;
}

/* Whether `mac` (32 bytes) is HMAC-SHA256 of `data` under `secret`, compared in constant time. */
static inline int runnel_verify_hs256(const unsigned char *secret, int secret_length, const unsigned char *mac,
                                      const unsigned char *data, size_t data_length) {
    unsigned char expected[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), secret, secret_length, data, data_length, expected, &length) == NULL || length != 32)
        return 0;
    return CRYPTO_memcmp(expected, mac, 32) == 0;
}
#endif
