#ifndef RUNNEL_CLIBCRYPTO_SHIM_H
#define RUNNEL_CLIBCRYPTO_SHIM_H
/* OpenSSL's libcrypto: the digests and Base64 of the WebSocket handshake. */
#include <openssl/evp.h>
#endif
