#ifndef RUNNEL_CLIBUV_SHIM_H
#define RUNNEL_CLIBUV_SHIM_H
#include <uv.h>

/* Swift cannot do C's struct-prefix casts; these do them for it. */
static inline uv_handle_t *runnel_tcp_as_handle(uv_tcp_t *t) { return (uv_handle_t *)t; }
static inline uv_stream_t *runnel_tcp_as_stream(uv_tcp_t *t) { return (uv_stream_t *)t; }
static inline uv_handle_t *runnel_stream_as_handle(uv_stream_t *s) { return (uv_handle_t *)s; }
static inline uv_tcp_t *runnel_stream_as_tcp(uv_stream_t *s) { return (uv_tcp_t *)s; }
static inline uv_handle_t *runnel_timer_as_handle(uv_timer_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *runnel_async_as_handle(uv_async_t *a) { return (uv_handle_t *)a; }
static inline uv_handle_t *runnel_signal_as_handle(uv_signal_t *s) { return (uv_handle_t *)s; }
static inline const struct sockaddr *runnel_sockaddr_in_as_sockaddr(const struct sockaddr_in *a) { return (const struct sockaddr *)a; }
static inline const struct sockaddr *runnel_sockaddr_in6_as_sockaddr(const struct sockaddr_in6 *a) { return (const struct sockaddr *)a; }

#endif
