#ifndef RUNNEL_CZLIB_SHIM_H
#define RUNNEL_CZLIB_SHIM_H
/* zlib (Debian's zlib1g-dev): raw deflate and inflate for WebSocket permessage-deflate
   (RFC 7692). deflateInit2 and inflateInit2 are macros, which Swift cannot call: these
   functions pass the version and the stream's size as the macros do. */
#include <zlib.h>

static inline int runnel_deflate_init(z_stream *stream, int level, int window_bits, int mem_level) {
    return deflateInit2(stream, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY);
}

static inline int runnel_inflate_init(z_stream *stream, int window_bits) {
    return inflateInit2(stream, -window_bits);
}
#endif
