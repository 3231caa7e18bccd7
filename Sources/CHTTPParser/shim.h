#ifndef RUNNEL_CHTTPPARSER_SHIM_H
#define RUNNEL_CHTTPPARSER_SHIM_H
#include <http_parser.h>

/* http_parser's error, flags and upgrade bit are C bitfields; read them through functions so
   the Swift side does not depend on how they are imported. */
static inline enum http_errno runnel_http_errno(const http_parser *parser) {
    return (enum http_errno)parser->http_errno;
}
static inline int runnel_http_is_chunked(const http_parser *parser) {
    return (parser->flags & F_CHUNKED) != 0;
}
static inline int runnel_http_uses_transfer_encoding(const http_parser *parser) {
    return parser->uses_transfer_encoding;
}
static inline int runnel_http_is_upgrade(const http_parser *parser) { return parser->upgrade; }
static inline unsigned runnel_http_method(const http_parser *parser) { return parser->method; }
#endif
