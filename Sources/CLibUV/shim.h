#ifndef RUNNEL_CLIBUV_SHIM_H
#define RUNNEL_CLIBUV_SHIM_H
#include <uv.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>

/* Swift cannot do C's struct-prefix casts; these do them for it. */
static inline uv_handle_t *runnel_tcp_as_handle(uv_tcp_t *t) { return (uv_handle_t *)t; }
static inline uv_stream_t *runnel_tcp_as_stream(uv_tcp_t *t) { return (uv_stream_t *)t; }
static inline uv_handle_t *runnel_stream_as_handle(uv_stream_t *s) { return (uv_handle_t *)s; }
static inline uv_tcp_t *runnel_stream_as_tcp(uv_stream_t *s) { return (uv_tcp_t *)s; }
static inline uv_handle_t *runnel_timer_as_handle(uv_timer_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *runnel_async_as_handle(uv_async_t *a) { return (uv_handle_t *)a; }
static inline uv_handle_t *runnel_signal_as_handle(uv_signal_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *runnel_check_as_handle(uv_check_t *c) { return (uv_handle_t *)c; }
static inline uv_handle_t *runnel_prepare_as_handle(uv_prepare_t *p) { return (uv_handle_t *)p; }
static inline const struct sockaddr *runnel_sockaddr_in_as_sockaddr(const struct sockaddr_in *a) { return (const struct sockaddr *)a; }
static inline const struct sockaddr *runnel_sockaddr_in6_as_sockaddr(const struct sockaddr_in6 *a) { return (const struct sockaddr *)a; }
static inline const struct sockaddr *runnel_storage_as_sockaddr(const struct sockaddr_storage *a) { return (const struct sockaddr *)a; }
static inline struct sockaddr *runnel_mutable_storage_as_sockaddr(struct sockaddr_storage *a) { return (struct sockaddr *)a; }
static inline const struct sockaddr_in *runnel_storage_as_in(const struct sockaddr_storage *a) { return (const struct sockaddr_in *)a; }
static inline const struct sockaddr_in6 *runnel_storage_as_in6(const struct sockaddr_storage *a) { return (const struct sockaddr_in6 *)a; }

/* The calling thread's id as an integer, for "am I on the loop thread?" checks. */
static inline unsigned long runnel_thread_self(void) { return (unsigned long)pthread_self(); }

/* Names the calling thread (at most 15 bytes are kept). */
static inline void runnel_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/* The first '\n' in [start, start + length), or NULL. */
static inline const unsigned char *runnel_find_newline(const unsigned char *start, size_t length) {
    return (const unsigned char *)memchr(start, '\n', length);
}

#endif
