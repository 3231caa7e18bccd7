#ifndef RUNNEL_FUZZ_ZLIB_SHIM_H
#define RUNNEL_FUZZ_ZLIB_SHIM_H
/* zlib for WebSocketInflateFuzzer's client side: raw deflate, as a permessage-deflate client
   compresses. deflateInit2 is a macro, which Swift cannot call. */
#include <zlib.h>

static inline int fuzz_deflate_init(z_stream *stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, -window_bits, 8, Z_DEFAULT_STRATEGY);
}
#endif
