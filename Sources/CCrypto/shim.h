// libcrypto (OpenSSL 3) for STUN/TURN credentials: one-shot HMAC and digests, the
// constant-time compare, base64 and the system's random bytes. Only the calls that are not
// deprecated in OpenSSL 3 are used (HMAC(), EVP_Digest, never MD5() or the HMAC_CTX calls).
#ifndef MEDIARELAY_CCRYPTO_SHIM_H
#define MEDIARELAY_CCRYPTO_SHIM_H

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#endif
