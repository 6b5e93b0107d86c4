// libssl (OpenSSL 3) for TURN over TLS: the library's own TLS 1.2 and 1.3 with its secure
// defaults, driven through a BIO pair so the engine stays the only I/O. Nothing here is crypto
// of ours: the helpers below exist only for OpenSSL macros Swift cannot import.
#ifndef MEDIARELAY_CSSL_SHIM_H
#define MEDIARELAY_CSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static inline long mr_ssl_set_min_proto_version(SSL_CTX *context, int version) {
    return SSL_CTX_set_min_proto_version(context, version);
}

static inline long mr_ssl_set_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_mode(context, mode);
}

static inline long mr_ssl_set_max_proto_version(SSL_CTX *context, int version) {
    return SSL_CTX_set_max_proto_version(context, version);
}

// SSL_OP_BIT builds these from a uint64_t cast and a shift, which Swift does not import.
static inline void mr_ssl_disable_renegotiation_and_compression(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
}

static inline long mr_ssl_session_cache_off(SSL_CTX *context) {
    return SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_OFF);
}

static inline long mr_ssl_set_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

// OPENSSL_free passes the caller's file and line to CRYPTO_free.
static inline void mr_openssl_free(void *pointer) {
    OPENSSL_free(pointer);
}

// One line, as `openssl x509 -subject` prints it; XN_FLAG_ONELINE is a macro of macros.
static inline int mr_x509_name_print_oneline(BIO *bio, const X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0, XN_FLAG_ONELINE);
}

static inline size_t mr_bio_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

static inline size_t mr_bio_write_guarantee(BIO *bio) {
    return BIO_ctrl_get_write_guarantee(bio);
}

#endif
