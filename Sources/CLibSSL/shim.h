#ifndef RUNNEL_CLIBSSL_SHIM_H
#define RUNNEL_CLIBSSL_SHIM_H
/* OpenSSL's libssl: TLS for the listeners (memory BIOs) and the runnel CLI (a socket). */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

/* Swift cannot call OpenSSL's function-like macros; these call them for it. */
static inline int runnel_ssl_ctx_set_min_version(SSL_CTX *c, int version) {
    return (int)SSL_CTX_set_min_proto_version(c, version);
}
static inline int runnel_ssl_ctx_set_max_version(SSL_CTX *c, int version) {
    return (int)SSL_CTX_set_max_proto_version(c, version);
}
static inline long runnel_ssl_ctx_set_mode(SSL_CTX *c, long mode) { return SSL_CTX_set_mode(c, mode); }
static inline int runnel_ssl_set_host_name(SSL *s, const char *name) { return (int)SSL_set_tlsext_host_name(s, name); }
/* The version constants are macros of macros, which Swift imports only sometimes. */
static const int runnel_tls1_2_version = TLS1_2_VERSION;
static const int runnel_tls1_3_version = TLS1_3_VERSION;
static const int runnel_ssl_filetype_pem = SSL_FILETYPE_PEM;
static const uint64_t runnel_ssl_op_no_renegotiation = SSL_OP_NO_RENEGOTIATION;
static const uint64_t runnel_ssl_op_ignore_unexpected_eof = SSL_OP_IGNORE_UNEXPECTED_EOF;
#endif
