// libcrypto (OpenSSL 3) for STUN/TURN credentials: HMAC through EVP_MAC contexts, digests, the
// constant-time compare, base64 and the system's random bytes. Only the calls that are not
// deprecated in OpenSSL 3 are used (EVP_MAC, EVP_Digest, never MD5() or the HMAC_CTX calls).
#ifndef MEDIARELAY_CCRYPTO_SHIM_H
#define MEDIARELAY_CCRYPTO_SHIM_H

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

// OSSL_PARAM_construct_end returns a struct by value that Swift imports fine; the list of one
// digest name is built here, where the macro and the array are plain C.
static inline EVP_MAC_CTX *mr_hmac_context(EVP_MAC *mac, const char *digest) {
    EVP_MAC_CTX *context = EVP_MAC_CTX_new(mac);
    if (context == NULL) return NULL;
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_MAC_CTX_set_params(context, params) != 1) {
        EVP_MAC_CTX_free(context);
        return NULL;
    }
    return context;
}

#endif
