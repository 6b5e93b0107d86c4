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

static inline size_t mr_bio_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

static inline size_t mr_bio_write_guarantee(BIO *bio) {
    return BIO_ctrl_get_write_guarantee(bio);
}

#endif
