/*
 * loadgen: one publisher thread and one thread for all subscribers, driving runneld, Redis
 * pub/sub or NATS with the same code, so the servers are compared fairly.
 *
 * Every payload carries its send time as a marker "~T<nanoseconds>~" followed by padding to
 * the requested size, so deliveries are counted and timed the same way whatever the protocol
 * wraps around them: the subscriber thread scans its sockets' bytes for markers.
 *
 *   loadgen --proto runnel|redis|nats [--transport tcp|ws|sse] --port P [--host 127.0.0.1]
 *           [--subs K] [--msgs N] [--size B] [--rate R] [--stages JSON] [--timeout S]
 *           [--subject NAME] [--window-bytes W | --no-window] [--watch-pid PID] [--warmup S]
 *           [--path /ws] [--pub-port 7455] [--tls-ca CA.pem] [--sub-ports P1,P2,...]
 *
 * --sub-ports spreads the subscribers over several servers (tcp only): subscriber i connects
 * to the (i mod n)-th port of the list, the publisher to --port. For a cluster, whose nodes
 * are separate servers: the publisher on one node, the subscribers on others
 * (bench/cluster/run.sh).
 *
 * --transport says what carries the protocol (default tcp: the protocol's own socket):
 *   ws   every connection, publisher and subscribers, is a WebSocket (RFC 6455) to --port:
 *        runneld's HTTP front door (GET /ws, default port 7456) or nats-server's websocket
 *        listener (path /). Each request is one masked text frame (for runnel one JSON
 *        request without its newline; for nats the text protocol, CONNECT, SUB, PUB, as on
 *        TCP); no extension (compression) is asked for. --path overrides the request path.
 *   sse  runnel only: each subscriber is GET /events?subject=S on --port (the HTTP front
 *        door, default 7456), a Server-Sent Events stream kept open; the publisher publishes
 *        over TCP to --pub-port (default 7455), since an event stream is one-way.
 * Server frames are taken apart (their headers skipped, pings answered) and only data frames'
 * payload bytes are scanned: a server may split a message over frames (nats does), and a
 * frame header landing inside a marker would otherwise lose it or make up a wrong one. SSE
 * needs no such care: runneld writes the stream without chunked encoding (Connection: close),
 * so the bytes read are the events themselves.
 *
 * All sockets are non-blocking; the subscribers' are driven by epoll(7), and the marker scan
 * skips padding with memchr, so the client spends little of the machine it shares with the
 * server. As fast as possible (no --rate), the publisher keeps at most --window-bytes of payload (default 2 MiB) per subscriber in flight,
 * counted as sent minus delivered: every server is measured at the rate it sustains without
 * piling up buffers, and none trips its slow-consumer limit (Redis drops a pub/sub client past
 * 32 MB, runneld past max_pending_bytes). With --rate R the publisher sends on schedule,
 * stamping each message when it is written: at most one send per 50 us tick, carrying every
 * message due by then, and it sleeps between ticks instead of spinning (this machine has two
 * cores; a spinning client would steal one from the server).
 *
 * --no-window drops the window: the publisher writes its batches as fast as the server reads
 * them, waiting only on its socket, as a producer that knows nothing of its consumers does.
 * Whether the subscribers keep up is then the server's business: it may buffer, push back on
 * the publisher, or drop them. A subscriber socket the server closes (EOF or reset: runneld
 * after a {"ev":"closing",...} line, Redis past a pub/sub client's output limit, NATS after
 * -ERR 'Slow Consumer') counts as a disconnect, is reported on stderr with the last line it
 * got, and leaves the run; the others are still waited for. Nothing in the client paces the
 * publisher: a batch is a prebuilt buffer whose time stamps are rewritten in place, so each
 * message costs it a 20-byte copy, and the subscriber thread reads 256 KiB per recv(2).
 *
 * With --stages (runneld only) each value is an object {"load":0.95,"p":"<payload>"}, so a
 * chain such as filter(.load > 0.9) + map(.p) has a field to read and keeps the marker.
 *
 * --watch-pid samples that process's VmRSS every 10 ms during the run and reports the CPU
 * time it used: on a two-core machine shared with the client, CPU per delivered message is
 * the steadier measure of a server's cost.
 *
 * --tls-ca FILE wraps every connection (tcp or ws) in TLS (OpenSSL), checking the server's
 * certificate against the CA in FILE: runneld's tls_listen or https_listen, Redis's tls-port.
 * The handshake is done while the socket is still blocking; afterwards reads and writes go
 * through SSL_read / SSL_write on the non-blocking socket (io_recv / io_send below), and a
 * subscriber reads every record that has arrived before going back to epoll.
 *
 * A run ends when every subscriber still connected has every message (and the publisher is
 * done), or when neither a delivery nor a publish has happened for --timeout seconds
 * (stalled=1).
 *
 * --read-cost NS makes the subscriber thread spend NS nanoseconds (spinning) on every message
 * it reads, as a client that parses what it receives does: a reader slower than the server, for
 * what a server does when a burst outruns its subscribers (nowindow.sh --read-cost).
 *
 * --warmup S leaves messages sent in the first S seconds out of the latency percentiles (they
 * are still delivered and counted): fresh connections start with small TCP windows and cold
 * buffers, and in a run of a couple of seconds that start-up alone can set the p99.
 *
 * Prints one line of key=value results: delivered, expected, seconds, msgs_per_s, p50_us,
 * p99_us, p999_us, peak_rss_kb, server_cpu_s (the watched process's CPU time during the
 * run, user + system), reader_cpu_s (the subscriber thread's own CPU time: close to `seconds`,
 * it was the load generator, not the server, that set the pace), published (messages the
 * publisher sent), lost (expected minus delivered), disconnects (subscribers the server
 * closed) and stalled. Exit status 0 when every expected delivery arrived, 3 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

enum proto { RUNNEL, REDIS, NATS };
enum transport { TCP, WS, SSE };

static enum proto proto = RUNNEL;
static enum transport transport = TCP;
static const char *host = "127.0.0.1";
static int port = 0;           /* 0: 7455 over TCP, 7456 (runneld's HTTP front door) otherwise */
static int pub_port = 7455;    /* --transport sse: the publisher's TCP port */
static const char *path = NULL; /* --transport ws: the request path (/ws for runnel, / for nats) */
static int subs = 1;
static long msgs = 100000;
static int size = 64;
static double rate = 0; /* msgs/s; 0 = as fast as possible */
static const char *stages = NULL;
static double timeout_s = 30;
static double warmup_s = 0;
static const char *subject = "bench.load";
static long window_bytes = 2 << 20;
static int no_window = 0; /* --no-window: the publisher sends as fast as the server reads */
static uint64_t read_cost_ns = 0; /* --read-cost: the reader's own work per message */
static int watch_pid = 0;
static const char *tls_ca = NULL;
static int sub_ports[64]; /* --sub-ports: the subscribers' ports, round-robin */
static int sub_port_count = 0;
static SSL_CTX *tls_context;
/* Each connection's TLS session, by descriptor (NULL: plaintext). */
static SSL *tls_of_fd[1 << 16];
/* Set when the run is over: the subscriber thread is done, and a publisher waiting on a full
 * socket gives up. */
static atomic_int finished;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_ns(uint64_t ns) {
    struct timespec t = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    nanosleep(&t, NULL);
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static int connect_to(int to_port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (fd >= (int)(sizeof tls_of_fd / sizeof *tls_of_fd)) die("too many descriptors");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)to_port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("inet_pton");
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (tls_context) {
        SSL *ssl = SSL_new(tls_context);
        if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, host) != 1) die("SSL_new");
        if (SSL_connect(ssl) != 1) {
            fprintf(stderr, "loadgen: TLS handshake with %s:%d failed:\n", host, to_port);
            ERR_print_errors_fp(stderr);
            exit(2);
        }
        tls_of_fd[fd] = ssl;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    return fd;
}

/* recv(2) and send(2), through the connection's TLS session when it has one: the same
 * results, with EAGAIN for OpenSSL's "want read/write". (Non-blocking sockets only.) */
static ssize_t io_recv(int fd, void *buf, size_t n) {
    SSL *ssl = tls_of_fd[fd];
    if (!ssl) return recv(fd, buf, n, MSG_DONTWAIT);
    int r = SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0) return r;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    errno = (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) ? EAGAIN : EIO;
    return -1;
}

static ssize_t io_send(int fd, const void *p, size_t n) {
    SSL *ssl = tls_of_fd[fd];
    if (!ssl) return send(fd, p, n, MSG_NOSIGNAL);
    int w = SSL_write(ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
    if (w > 0) return w;
    int e = SSL_get_error(ssl, w);
    errno = (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) ? EAGAIN : EIO;
    return -1;
}

/* A Redis publisher gets a reply per PUBLISH and must read them, or its replies pile up in
 * the server; the other protocols send the publisher nothing worth keeping. */
static void drain_replies(int fd) {
    static char sink[1 << 16];
    while (io_recv(fd, sink, sizeof sink) > 0) {}
}

/* Writes all of `p` to a non-blocking socket, waiting in poll(2) while the kernel's buffer is
 * full and draining replies meanwhile. Gives up, returning 0, when the run is over (a server
 * that stopped reading the publisher must not keep it waiting after the subscriber thread has
 * ended); 1 when all was written. */
static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = io_send(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) die("send");
            if (atomic_load(&finished)) return 0;
            struct pollfd pf = {.fd = fd, .events = POLLOUT | POLLIN};
            poll(&pf, 1, 100);
            if (pf.revents & POLLIN) drain_replies(fd);
            continue;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* Reads until `needle` has been seen (a subscription acknowledgement), with a deadline. */
static void wait_for(int fd, const char *needle) {
    char buf[65536];
    size_t have = 0;
    uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    while (now_ns() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t r = io_recv(fd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) die("recv (subscribe)");
        have += (size_t)r;
        buf[have] = 0;
        if (strstr(buf, needle)) return;
        if (have > sizeof buf / 2) {
            memmove(buf, buf + have - 256, 256);
            have = 256;
        }
    }
    fprintf(stderr, "loadgen: no '%s' from the server within 10 s\n", needle);
    exit(2);
}

/* The subscriber side's marker scanning state, per connection. */
struct scan {
    int state; /* 0 look for '~', 1 expect 'T', 2 digits */
    uint64_t value;
};

/* WebSocket (RFC 6455), the client's side: the handshake, masked frames out, frames in. */

/* Where a connection's reader is in the server's frames. */
struct ws_in {
    uint8_t head[14];      /* the frame header being read: 2 bytes, 2 or 8 of length */
    int have, need;        /* header bytes read, and how many this header has */
    int in_payload;        /* 0: reading a header */
    uint64_t left;         /* payload bytes of the current frame still to come */
    uint8_t opcode;
    uint8_t control[125];  /* a control frame's payload (at most 125 bytes, 5.5) */
    int control_have;
};

/* One connection: its socket, where it is in the server's frames, where in a marker, how
 * many messages it got, and the last bytes read (to say why, when the server closes it). */
struct conn {
    int fd;
    int index;
    struct ws_in ws;
    struct scan scan;
    long got;
    int closed;
    int tail_length;
    char tail[256];
};

/* Masking keys: RFC 6455 wants them unpredictable (against a script in a browser steering the
 * bytes a proxy sees), which a load generator has no use for; xorshift seeded by getrandom(2)
 * gives a fresh key per frame for nothing. One state per thread: the publisher masks its
 * publishes, the subscriber thread its pongs. */
static __thread uint64_t mask_state;

static uint32_t next_mask_key(void) {
    if (!mask_state && (getrandom(&mask_state, sizeof mask_state, 0) != sizeof mask_state || !mask_state))
        mask_state = now_ns() | 1;
    mask_state ^= mask_state << 13;
    mask_state ^= mask_state >> 7;
    mask_state ^= mask_state << 17;
    return (uint32_t)(mask_state >> 16);
}

/* XORs `p` with the 4-byte key as it is on the wire, 8 bytes at a time. */
static void ws_mask(char *p, size_t n, const char *key) {
    uint64_t k8;
    memcpy(&k8, key, 4);
    memcpy((char *)&k8 + 4, key, 4);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        v ^= k8;
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++) p[i] ^= key[i & 3];
}

/* Writes a client frame's header for `n` payload bytes into `out`: FIN (one frame per
 * message, never fragmented), `opcode`, the mask bit (a client MUST mask every frame, 5.3)
 * and a fresh key, which ends the header. Returns its length, 6 to 14. */
static size_t ws_head(char *out, int opcode, size_t n) {
    uint8_t *h = (uint8_t *)out;
    size_t k = 0;
    h[k++] = (uint8_t)(0x80 | opcode);
    if (n < 126) {
        h[k++] = (uint8_t)(0x80 | n);
    } else if (n < 65536) {
        h[k++] = 0x80 | 126;
        h[k++] = (uint8_t)(n >> 8);
        h[k++] = (uint8_t)n;
    } else {
        h[k++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) h[k++] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    uint32_t key = next_mask_key();
    memcpy(h + k, &key, 4);
    return k + 4;
}

/* Sends one masked frame carrying `payload` (small: handshake-time requests and pongs). */
static void ws_send(int fd, int opcode, const char *payload, size_t n) {
    char frame[16384 + 14];
    if (n > 16384) {
        fprintf(stderr, "loadgen: request too long for one frame here\n");
        exit(2);
    }
    size_t k = ws_head(frame, opcode, n);
    memcpy(frame + k, payload, n);
    ws_mask(frame + k, n, frame + k - 4);
    send_all(fd, frame, k + n);
}

/* A control frame has arrived whole: a ping is answered with a pong carrying its payload
 * (5.5.2, 5.5.3); a close is reported (the server closes the socket next). */
static void ws_control(struct conn *c) {
    struct ws_in *w = &c->ws;
    if (w->opcode == 0x9) {
        ws_send(c->fd, 0xA, (const char *)w->control, (size_t)w->control_have);
    } else if (w->opcode == 0x8) {
        int code = w->control_have >= 2 ? w->control[0] << 8 | w->control[1] : 0;
        fprintf(stderr, "loadgen: connection %d: close frame from the server, code %d %.*s\n", c->index, code,
                w->control_have > 2 ? w->control_have - 2 : 0, (const char *)w->control + 2);
    }
}

/* Takes the frame headers in [*p, *p + *n) off and returns the length of the next run of a
 * data frame's payload (*run points at it), moving *p past it; 0 when the bytes are used up.
 * State carries over between calls, so a header or a payload may be split anywhere; control
 * frames are handled here and never returned. A header costs a few byte moves per frame. */
static size_t ws_payload(struct conn *c, const char **p, size_t *n, const char **run) {
    struct ws_in *w = &c->ws;
    while (*n > 0) {
        if (!w->in_payload) {
            if (w->need == 0) w->need = 2; /* a fresh (zeroed) state starts with a header */
            w->head[w->have++] = (uint8_t)**p;
            (*p)++;
            (*n)--;
            if (w->have == 2) {
                /* A server MUST NOT mask (5.1); no extension was negotiated, so no RSV bit. */
                if ((w->head[1] & 0x80) || (w->head[0] & 0x70)) {
                    fprintf(stderr, "loadgen: connection %d: invalid frame header %02x %02x\n", c->index, w->head[0],
                            w->head[1]);
                    exit(2);
                }
                int len7 = w->head[1] & 0x7f;
                w->need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
            }
            if (w->have < w->need) continue;
            uint64_t len = w->head[1] & 0x7f;
            if (len >= 126) {
                len = 0;
                for (int i = 2; i < w->need; i++) len = len << 8 | w->head[i];
            }
            w->opcode = w->head[0] & 0x0f;
            w->left = len;
            w->have = w->need = 0;
            w->control_have = 0;
            w->in_payload = 1;
            if ((w->opcode & 0x8) && len > sizeof w->control) {
                fprintf(stderr, "loadgen: connection %d: control frame of %llu bytes\n", c->index, (unsigned long long)len);
                exit(2);
            }
            if (len == 0) {
                w->in_payload = 0;
                if (w->opcode & 0x8) ws_control(c);
            }
            continue;
        }
        size_t take = *n < w->left ? *n : (size_t)w->left;
        const char *at = *p;
        *p += take;
        *n -= take;
        w->left -= take;
        if (w->left == 0) w->in_payload = 0;
        if (w->opcode & 0x8) {
            memcpy(w->control + w->control_have, at, take);
            w->control_have += (int)take;
            if (w->left == 0) ws_control(c);
            continue;
        }
        *run = at;
        return take;
    }
    return 0;
}

/* SHA-1 (FIPS 180-4), for checking the server's Sec-WebSocket-Accept only. */
static void sha1(const uint8_t *msg, size_t len, uint8_t out[20]) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    size_t blocks = (len + 9 + 63) / 64;
    for (size_t b = 0; b < blocks; b++) {
        uint8_t block[64];
        for (size_t i = 0; i < 64; i++) {
            size_t at = b * 64 + i;
            block[i] = at < len ? msg[at] : at == len ? 0x80 : 0;
        }
        if (b == blocks - 1)
            for (int i = 0; i < 8; i++) block[63 - i] = (uint8_t)((uint64_t)len * 8 >> (8 * i));
        uint32_t w[80];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 | (uint32_t)block[4 * i + 2] << 8 |
                   block[4 * i + 3];
        for (int i = 16; i < 80; i++) {
            uint32_t x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16];
            w[i] = x << 1 | x >> 31;
        }
        uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
            uint32_t f = i < 20 ? (bb & c) | (~bb & d) : i < 40 ? bb ^ c ^ d : i < 60 ? (bb & c) | (bb & d) | (c & d) : bb ^ c ^ d;
            uint32_t k = i < 20 ? 0x5A827999 : i < 40 ? 0x6ED9EBA1 : i < 60 ? 0x8F1BBCDC : 0xCA62C1D6;
            uint32_t t = (a << 5 | a >> 27) + f + e + k + w[i];
            e = d;
            d = c;
            c = bb << 30 | bb >> 2;
            bb = a;
            a = t;
        }
        h[0] += a, h[1] += bb, h[2] += c, h[3] += d, h[4] += e;
    }
    for (int i = 0; i < 20; i++) out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

static void base64(const uint8_t *in, size_t n, char *out) {
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        *out++ = t[v >> 18 & 63];
        *out++ = t[v >> 12 & 63];
        *out++ = i + 1 < n ? t[v >> 6 & 63] : '=';
        *out++ = i + 2 < n ? t[v & 63] : '=';
    }
    *out = 0;
}

/* Reads an HTTP response head, up to its empty line, into `buf` (NUL-terminated at *have);
 * returns the head's length. Bytes after it (the first frames, say) stay in buf. */
static size_t read_head(int fd, char *buf, size_t cap, size_t *have) {
    uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    while (now_ns() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t r = io_recv(fd, buf + *have, cap - 1 - *have);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) die("recv (response head)");
        *have += (size_t)r;
        buf[*have] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (end) return (size_t)(end - buf) + 4;
        if (*have >= cap - 1) break;
    }
    fprintf(stderr, "loadgen: no complete response head within 10 s\n");
    exit(2);
}

/* Whether header `name`'s value in `head` contains `token` (both case-insensitive); a header
 * named but empty matches the token "". */
static int header_has(const char *head, const char *name, const char *token) {
    size_t len = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, len) || l[2 + len] != ':') continue;
        const char *v = l + 3 + len, *e = strstr(v, "\r\n");
        char value[512];
        snprintf(value, sizeof value, "%.*s", (int)(e ? e - v : (long)strlen(v)), v);
        if (strcasestr(value, token)) return 1;
    }
    return 0;
}

/* Bytes read after a handshake's response head (nats sends INFO at once): where the next
 * wait begins. Setup only, one connection at a time. */
static char after_head[16384];
static size_t after_head_length;

/* The opening handshake (4.1): GET with Upgrade, a random key, version 13; then the answer
 * must be 101 with Upgrade: websocket, Connection: Upgrade and the key's accept value, and no
 * extension (none was offered). */
static void ws_handshake(struct conn *c) {
    uint8_t nonce[16];
    if (getrandom(nonce, sizeof nonce, 0) != sizeof nonce) die("getrandom");
    char key[32], request[1024];
    base64(nonce, sizeof nonce, key);
    snprintf(request, sizeof request,
             "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
             path, host, port, key);
    send_all(c->fd, request, strlen(request));
    char buf[16384];
    size_t have = 0, head = read_head(c->fd, buf, sizeof buf, &have);
    after_head_length = have - head;
    memcpy(after_head, buf + head, after_head_length);
    buf[head - 2] = 0; /* the head alone, ending with its last header's \r\n */
    char joined[128], accept[32];
    uint8_t digest[20];
    int n = snprintf(joined, sizeof joined, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    sha1((const uint8_t *)joined, (size_t)n, digest);
    base64(digest, sizeof digest, accept);
    const char *problem = strncmp(buf, "HTTP/1.1 101", 12) ? "not 101"
                          : !header_has(buf, "upgrade", "websocket") ? "no Upgrade: websocket"
                          : !header_has(buf, "connection", "upgrade") ? "no Connection: Upgrade"
                          : !header_has(buf, "sec-websocket-accept", accept) ? "wrong or missing Sec-WebSocket-Accept"
                          : header_has(buf, "sec-websocket-extensions", "") ? "an extension nobody asked for"
                          : NULL;
    if (problem) {
        fprintf(stderr, "loadgen: WebSocket handshake on %s:%d%s failed (%s):\n%s\n", host, port, path, problem, buf);
        exit(2);
    }
}

/* wait_for over a WebSocket: the bytes go through the frame reader, the needle is looked for
 * in the payloads. Every byte read passes through it, so the subscriber thread takes over the
 * connection at a known place in its frames. */
static void ws_wait_for(struct conn *c, const char *needle) {
    static char raw[65536], text[65536];
    size_t have = 0;
    size_t pending = after_head_length;
    memcpy(raw, after_head, pending);
    after_head_length = 0;
    uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    while (now_ns() < deadline) {
        ssize_t r = (ssize_t)pending;
        pending = 0;
        if (r == 0) {
            struct pollfd p = {.fd = c->fd, .events = POLLIN};
            if (poll(&p, 1, 100) <= 0) continue;
            r = io_recv(c->fd, raw, sizeof raw);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) die("recv (subscribe)");
        }
        const char *p = raw, *run;
        size_t n = (size_t)r, k;
        while ((k = ws_payload(c, &p, &n, &run)) > 0) {
            if (have + k > sizeof text - 1) { /* keep the tail, where a needle may have begun */
                memmove(text, text + have - 256, 256);
                have = 256;
            }
            if (k > sizeof text - 1 - have) { /* more than fits: its end is what may hold the needle */
                run += k - (sizeof text - 1 - have);
                k = sizeof text - 1 - have;
            }
            memcpy(text + have, run, k);
            have += k;
        }
        text[have] = 0;
        if (strstr(text, needle)) return;
    }
    fprintf(stderr, "loadgen: no '%s' from the server within 10 s\n", needle);
    exit(2);
}

/* Latency histogram: 64 linear sub-buckets per power of two of microseconds. */
#define SUB 64
#define POWERS 40
static uint64_t hist[POWERS * SUB];

static uint64_t recorded;       /* latencies in the histogram */
static uint64_t warmup_until_ns; /* messages sent before this are counted, not timed */

static void record_latency(uint64_t ns) {
    recorded++;
    uint64_t us = ns / 1000;
    /* The least power that brings `us` under SUB (64 = 2^6): its bit length minus 6. */
    int power = us < SUB ? 0 : 64 - __builtin_clzll(us) - 6;
    if (power > POWERS - 1) power = POWERS - 1;
    int sub = (int)(us >> power);
    if (sub >= SUB) sub = SUB - 1;
    hist[power * SUB + sub]++;
}

static double percentile(double q, uint64_t total) {
    uint64_t want = (uint64_t)(q * (double)total), seen = 0;
    for (int p = 0; p < POWERS; p++)
        for (int s = 0; s < SUB; s++) {
            seen += hist[p * SUB + s];
            if (seen > want && seen > 0) return (double)((uint64_t)s << p);
        }
    return 0;
}

static long expected;
static atomic_long delivered;
static atomic_long published;     /* messages the publisher has handed to its socket */
static atomic_int publisher_done; /* the publisher has sent its last message */
static int disconnects, stalled;  /* set by the subscriber thread, read after it is joined */
static uint64_t first_send_ns, last_recv_ns;
static double reader_cpu_s; /* the subscriber thread's own CPU time (user + system) */

/* The publisher sleeps here while its window is full; the subscriber thread wakes it. */
static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t window_moved = PTHREAD_COND_INITIALIZER;
static atomic_int publisher_waiting;

/* A marker: '~', 'T', 20 digits of the send time, '~'. */
#define MARKER_LENGTH 23

/* Scans `n` bytes of a connection's stream for markers, where it left off; returns how many
 * ended in them, timing each against `t`, the instant the bytes were read. */
static inline long scan(struct scan *s, const char *buf, size_t n, uint64_t t) {
    long found = 0;
    size_t k = 0;
    while (k < n) {
        if (s->state == 0) { /* the padding between markers: skip it with memchr */
            const char *m = memchr(buf + k, '~', n - k);
            if (!m) break;
            k = (size_t)(m - buf) + 1;
            s->state = 1;
            /* A whole marker in the buffer is read in one go, without the byte-at-a-time
             * states below (which take over where a read splits one). Its closing '~' is left
             * to be found again, as the states would treat it: it may open another marker. */
            if (m + MARKER_LENGTH <= buf + n && m[1] == 'T' && m[MARKER_LENGTH - 1] == '~') {
                uint64_t value = 0;
                int d = 2;
                for (; d < MARKER_LENGTH - 1 && m[d] >= '0' && m[d] <= '9'; d++) value = value * 10 + (uint64_t)(m[d] - '0');
                if (d == MARKER_LENGTH - 1) {
                    found++;
                    if (t > value && value >= warmup_until_ns) record_latency(t - value);
                    last_recv_ns = t;
                    k = (size_t)(m - buf) + MARKER_LENGTH - 1;
                    s->state = 0;
                }
            }
            continue;
        }
        char c = buf[k++];
        if (s->state == 1) {
            if (c == 'T') {
                s->state = 2;
                s->value = 0;
            } else {
                s->state = c == '~' ? 1 : 0;
            }
        } else if (c >= '0' && c <= '9') {
            s->value = s->value * 10 + (uint64_t)(c - '0');
        } else {
            if (c == '~') {
                found++;
                if (t > s->value && s->value >= warmup_until_ns) record_latency(t - s->value);
                last_recv_ns = t;
            }
            s->state = c == '~' ? 1 : 0;
        }
    }
    return found;
}

/* Keeps the last bytes read from `c`: what the server said last, should it close the socket. */
static void keep_tail(struct conn *c, const char *buf, size_t n) {
    size_t cap = sizeof c->tail;
    if (n >= cap) {
        memcpy(c->tail, buf + n - cap, cap);
        c->tail_length = (int)cap;
        return;
    }
    size_t keep = (size_t)c->tail_length + n > cap ? cap - n : (size_t)c->tail_length;
    memmove(c->tail, c->tail + c->tail_length - keep, keep);
    memcpy(c->tail + keep, buf, n);
    c->tail_length = (int)(keep + n);
}

/* The server closed subscriber `c` (EOF, or `error` from recv): it leaves the epoll set and
 * the run, counted as a disconnect and reported with the server's last words, if they were a
 * runnel `closing` line or a NATS -ERR (Redis says nothing). */
static void close_subscriber(int ep, struct conn *c, int error) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->closed = 1;
    disconnects++;
    char said[200] = "";
    const char *why = NULL;
    for (const char *needle = "{\"ev\":\"closing\""; !why && needle; needle = needle[0] == '{' ? "-ERR" : NULL)
        why = memmem(c->tail, (size_t)c->tail_length, needle, strlen(needle));
    if (why) {
        const char *end = memchr(why, '\n', (size_t)(c->tail + c->tail_length - why));
        snprintf(said, sizeof said, ": %.*s", (int)((end ? end : c->tail + c->tail_length) - why), why);
        if (said[strlen(said) - 1] == '\r') said[strlen(said) - 1] = 0;
    }
    fprintf(stderr, "loadgen: subscriber %d closed by the server (%s) after %ld of %ld messages%s\n", c->index,
            error ? strerror(error) : "end of stream", c->got, msgs, said);
}

static void *subscriber_thread(void *arg) {
    struct conn *conns = arg;
    /* epoll, not poll: with 100 subscribers a poll(2) of every socket per wakeup cost this
     * thread more CPU than the servers it measures spend, on a machine it shares with them. */
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < subs; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e) < 0) die("epoll_ctl");
    }
    struct epoll_event *ready = calloc((size_t)subs, sizeof *ready);
    static char buf[1 << 18];
    uint64_t last_progress = now_ns();
    long seen = 0, last_published = 0;
    /* Subscribers still connected, and what they have got between them: the run is complete
     * when that is every message for each (which means the publisher has sent them all), or,
     * with none left, when the publisher is done. */
    int live = subs;
    long live_seen = 0;
    while (live > 0 ? live_seen < msgs * live : !atomic_load(&publisher_done)) {
        int n = epoll_wait(ep, ready, subs, 100);
        uint64_t t = now_ns();
        if (n <= 0) {
            long now_published = atomic_load_explicit(&published, memory_order_relaxed);
            if (now_published != last_published) { /* the publisher moves: not stalled */
                last_published = now_published;
                last_progress = t;
            }
            if (t - last_progress > (uint64_t)(timeout_s * 1e9)) {
                stalled = 1;
                break;
            }
            continue;
        }
        for (int j = 0; j < n; j++) {
            struct conn *c = &conns[ready[j].data.u32];
            /* Over TLS a read returns one record (16 KiB at most): take every one there is. */
            for (int reads = 0; reads < 64; reads++) {
                ssize_t r = io_recv(c->fd, buf, sizeof buf);
                if (r <= 0) {
                    if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
                    close_subscriber(ep, c, r < 0 ? errno : 0);
                    live--;
                    live_seen -= c->got;
                    break;
                }
                t = now_ns(); /* after recv: every byte read was sent before this instant */
                last_progress = t;
                long found = 0;
                if (transport == WS) { /* only data frames' payload: a header may split a marker */
                    const char *p = buf, *run;
                    size_t n = (size_t)r, k;
                    while ((k = ws_payload(c, &p, &n, &run)) > 0) found += scan(&c->scan, run, k, t);
                } else {
                    found = scan(&c->scan, buf, (size_t)r, t);
                }
                if (read_cost_ns && found > 0) {
                    uint64_t until = now_ns() + (uint64_t)found * read_cost_ns;
                    while (now_ns() < until) {}
                }
                c->got += found;
                seen += found;
                live_seen += found;
                keep_tail(c, buf, (size_t)r);
                if (!tls_of_fd[c->fd]) break;
            }
        }
        atomic_store_explicit(&delivered, seen, memory_order_release);
        if (atomic_load_explicit(&publisher_waiting, memory_order_acquire)) {
            pthread_mutex_lock(&window_lock);
            pthread_cond_signal(&window_moved);
            pthread_mutex_unlock(&window_lock);
        }
    }
    struct rusage self;
    if (getrusage(RUSAGE_THREAD, &self) == 0)
        reader_cpu_s = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
    atomic_store(&finished, 1);
    pthread_mutex_lock(&window_lock);
    pthread_cond_signal(&window_moved);
    pthread_mutex_unlock(&window_lock);
    free(ready);
    close(ep);
    return NULL;
}

/* Samples the watched process's resident set every 10 ms until the run ends. */
static long peak_rss_kb;

static long read_rss_kb(void) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", watch_pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long kb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    fclose(f);
    return kb;
}

/* The watched process's CPU time (user + system) in seconds, from /proc/PID/stat. */
static double read_cpu_s(void) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", watch_pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')'); /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static void *rss_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&finished)) {
        long kb = read_rss_kb();
        if (kb > peak_rss_kb) peak_rss_kb = kb;
        sleep_ns(10000000);
    }
    return NULL;
}

/* One publish command for `proto`, built once; each message is a copy with its stamp written
 * into the 20 digits at `stamp_at`, so the publisher spends its time on the socket, not in
 * printf. */
static char command[1 << 17];
static size_t command_length, stamp_at;

static void build_command(void) {
    char payload[1 << 16];
    int n = snprintf(payload, sizeof payload, "~T%020llu~", 0ull);
    while (n < size - 2 * (proto == RUNNEL)) payload[n++] = 'x';
    payload[n] = 0;
    int w = 0;
    switch (proto) {
    case RUNNEL:
        if (stages) /* an object, so stages have a field to read: {"load":0.95,"p":"~T...~xx"} */
            w = sprintf(command, "{\"op\":\"pub\",\"subject\":\"%s\",\"value\":{\"load\":0.95,\"p\":\"%s\"}}\n", subject,
                        payload);
        else
            w = sprintf(command, "{\"op\":\"pub\",\"subject\":\"%s\",\"value\":\"%s\"}\n", subject, payload);
        break;
    case REDIS:
        w = sprintf(command, "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n", strlen(subject), subject, n, payload);
        break;
    case NATS:
        w = sprintf(command, "PUB %s %d\r\n%s\r\n", subject, n, payload);
        break;
    }
    if (transport == WS && proto == RUNNEL) w--; /* a message is one request, without the newline */
    command_length = (size_t)w;
    stamp_at = (size_t)(strstr(command, "~T") - command) + 2;
}

/* Lays `count` copies of the command end to end in `out`, once: over a plain stream a batch
 * is then only its time stamps rewritten (fill_batch). */
static void prepare_batches(char *out, long count) {
    if (transport == WS) return; /* masking changes every byte: each frame is built afresh */
    for (long j = 0; j < count; j++) memcpy(out + (size_t)j * command_length, command, command_length);
}

/* Writes `count` publishes stamped `t` into `out` (prepared by prepare_batches) and returns
 * their length. Over a WebSocket each publish is a frame of its own, masked after the stamp
 * is written: the one copy of the payload in the send buffer is masked in place. */
static size_t fill_batch(char *out, long count, uint64_t t) {
    char digits[20];
    for (int d = 19; d >= 0; d--, t /= 10) digits[d] = (char)('0' + t % 10);
    if (transport != WS) {
        for (long j = 0; j < count; j++) memcpy(out + (size_t)j * command_length + stamp_at, digits, sizeof digits);
        return (size_t)count * command_length;
    }
    size_t used = 0;
    for (long j = 0; j < count; j++) {
        size_t head = ws_head(out + used, 0x1, command_length);
        char *p = out + used + head;
        memcpy(p, command, command_length);
        memcpy(p + stamp_at, digits, sizeof digits);
        ws_mask(p, command_length, p - 4);
        used += head + command_length;
    }
    return used;
}

/* Sends one of the protocol's requests, as a text frame over a WebSocket (a runnel request
 * without its newline), and waits for `needle` in what comes back. */
static void request(struct conn *c, const char *cmd, const char *needle) {
    size_t n = strlen(cmd);
    if (transport == WS) {
        if (proto == RUNNEL && n > 0 && cmd[n - 1] == '\n') n--;
        ws_send(c->fd, 0x1, cmd, n);
        ws_wait_for(c, needle);
    } else {
        send_all(c->fd, cmd, n);
        wait_for(c->fd, needle);
    }
}

/* An SSE subscriber: GET /events?subject=S, answered 200 with the stream's head once the
 * subscription is made; the socket then stays open for its events. */
static void sse_subscribe(struct conn *c) {
    char req[1024], buf[16384];
    snprintf(req, sizeof req, "GET /events?subject=%s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n\r\n",
             subject, host, port);
    send_all(c->fd, req, strlen(req));
    size_t have = 0;
    read_head(c->fd, buf, sizeof buf, &have);
    if (strncmp(buf, "HTTP/1.1 200", 12) || !header_has(buf, "content-type", "text/event-stream")) {
        fprintf(stderr, "loadgen: subscriber %d: GET /events answered:\n%s\n", c->index, buf);
        exit(2);
    }
}

static void subscribe(struct conn *c) {
    int index = c->index;
    if (transport == SSE) return sse_subscribe(c);
    if (transport == WS) ws_handshake(c);
    char cmd[8192];
    switch (proto) {
    case RUNNEL:
        if (stages)
            snprintf(cmd, sizeof cmd, "{\"op\":\"sub\",\"subject\":\"%s\",\"sid\":\"b%d\",\"ops\":%s}\n", subject, index, stages);
        else
            snprintf(cmd, sizeof cmd, "{\"op\":\"sub\",\"subject\":\"%s\",\"sid\":\"b%d\"}\n", subject, index);
        request(c, cmd, "\"ok\":true");
        break;
    case REDIS:
        snprintf(cmd, sizeof cmd, "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n%s\r\n", strlen(subject), subject);
        request(c, cmd, "subscribe");
        break;
    case NATS:
        snprintf(cmd, sizeof cmd, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB %s %d\r\nPING\r\n", subject, index + 1);
        request(c, cmd, "PONG");
        break;
    }
}

/* Blocks while more than `window` messages are sent but not delivered to every subscriber. */
static void wait_for_window(long sent, long window) {
    while (!atomic_load(&finished) && sent * subs - atomic_load_explicit(&delivered, memory_order_acquire) > window * subs) {
        pthread_mutex_lock(&window_lock);
        atomic_store_explicit(&publisher_waiting, 1, memory_order_release);
        if (!atomic_load(&finished) && sent * subs - atomic_load_explicit(&delivered, memory_order_acquire) > window * subs) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 1000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&window_moved, &window_lock, &until);
        }
        atomic_store_explicit(&publisher_waiting, 0, memory_order_release);
        pthread_mutex_unlock(&window_lock);
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--no-window")) { /* the one option without a value */
            no_window = 1;
            i--;
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "loadgen: %s needs a value\n", argv[i]);
            return 2;
        }
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--proto")) proto = !strcmp(v, "redis") ? REDIS : !strcmp(v, "nats") ? NATS : RUNNEL;
        else if (!strcmp(k, "--transport")) transport = !strcmp(v, "ws") ? WS : !strcmp(v, "sse") ? SSE : TCP;
        else if (!strcmp(k, "--path")) path = v;
        else if (!strcmp(k, "--pub-port")) pub_port = atoi(v);
        else if (!strcmp(k, "--host")) host = v;
        else if (!strcmp(k, "--port")) port = atoi(v);
        else if (!strcmp(k, "--subs")) subs = atoi(v);
        else if (!strcmp(k, "--msgs")) msgs = atol(v);
        else if (!strcmp(k, "--size")) size = atoi(v);
        else if (!strcmp(k, "--rate")) rate = atof(v);
        else if (!strcmp(k, "--stages")) stages = v;
        else if (!strcmp(k, "--timeout")) timeout_s = atof(v);
        else if (!strcmp(k, "--warmup")) warmup_s = atof(v);
        else if (!strcmp(k, "--read-cost")) read_cost_ns = (uint64_t)atol(v);
        else if (!strcmp(k, "--subject")) subject = v;
        else if (!strcmp(k, "--window-bytes")) window_bytes = atol(v);
        else if (!strcmp(k, "--watch-pid")) watch_pid = atoi(v);
        else if (!strcmp(k, "--tls-ca")) tls_ca = v;
        else if (!strcmp(k, "--sub-ports")) {
            for (const char *p = v; *p && sub_port_count < (int)(sizeof sub_ports / sizeof *sub_ports); p++) {
                sub_ports[sub_port_count++] = atoi(p);
                if (!(p = strchr(p, ','))) break;
            }
        }
        else {
            fprintf(stderr, "loadgen: unknown option %s\n", k);
            return 2;
        }
    }
    if (size < 24 || size > 60000 || subs < 1 || msgs < 1 || window_bytes < size) {
        fprintf(stderr, "loadgen: need --size 24..60000, --subs >= 1, --msgs >= 1, --window-bytes >= size\n");
        return 2;
    }
    if (no_window && rate > 0) {
        fprintf(stderr, "loadgen: --no-window is for as fast as possible, without --rate\n");
        return 2;
    }
    if ((transport == WS && proto == REDIS) || (transport == SSE && (proto != RUNNEL || stages))) {
        fprintf(stderr, "loadgen: --transport ws is for runnel and nats, sse for runnel without --stages\n");
        return 2;
    }
    if (sub_port_count && transport != TCP) {
        fprintf(stderr, "loadgen: --sub-ports is for --transport tcp\n");
        return 2;
    }
    for (int i = 0; i < sub_port_count; i++)
        if (sub_ports[i] <= 0 || sub_ports[i] > 65535) {
            fprintf(stderr, "loadgen: --sub-ports wants a comma-separated list of ports\n");
            return 2;
        }
    if (!port) port = transport == TCP ? 7455 : 7456;
    if (!path) path = proto == NATS ? "/" : "/ws";
    /* One descriptor per subscriber: 10,000 SSE streams need more than the usual soft limit
     * of 1024, so take what the hard limit allows. */
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && (rlim_t)subs + 16 > files.rlim_cur) {
        fprintf(stderr, "loadgen: %d subscribers need more open files than the limit, %llu (ulimit -n)\n", subs,
                (unsigned long long)files.rlim_cur);
        return 2;
    }
    if (tls_ca) {
        if (transport == SSE) {
            fprintf(stderr, "loadgen: --tls-ca is for --transport tcp and ws\n");
            return 2;
        }
        tls_context = SSL_CTX_new(TLS_client_method());
        if (!tls_context || SSL_CTX_load_verify_locations(tls_context, tls_ca, NULL) != 1) die("--tls-ca");
        SSL_CTX_set_verify(tls_context, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_mode(tls_context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    build_command();
    struct conn *conns = calloc((size_t)subs, sizeof *conns);
    for (int i = 0; i < subs; i++) {
        conns[i].index = i;
        conns[i].fd = connect_to(sub_port_count ? sub_ports[i % sub_port_count] : port);
        subscribe(&conns[i]);
    }
    /* The publisher: over SSE the protocol's TCP connection (an event stream is one-way). */
    struct conn publisher = {.index = -1};
    publisher.fd = connect_to(transport == SSE ? pub_port : port);
    int pub = publisher.fd;
    if (transport == WS) ws_handshake(&publisher);
    if (proto == NATS) request(&publisher, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n", "PONG");
    expected = msgs * subs;
    pthread_t reader, sampler;
    warmup_until_ns = now_ns() + (uint64_t)(warmup_s * 1e9);
    pthread_create(&reader, NULL, subscriber_thread, conns);
    if (watch_pid) pthread_create(&sampler, NULL, rss_thread, NULL);

    /* The publisher: batches of commands in one send, up to 64 KiB (and one command) or the
     * window's edge. */
    long window = window_bytes / size;
    size_t cap = 1 << 16;
    long per_batch = (long)((cap + command_length - 1) / command_length);
    char *out = malloc((size_t)per_batch * (command_length + 14));
    if (!out) die("malloc");
    prepare_batches(out, per_batch);
    double cpu_before = watch_pid ? read_cpu_s() : 0;
    first_send_ns = now_ns();
    long i = 0;
    while (i < msgs && !atomic_load(&finished)) {
        long due = msgs;
        if (rate > 0) {
            uint64_t t = now_ns();
            due = (long)((double)(t - first_send_ns) * rate / 1e9) + 1;
            if (due > msgs) due = msgs;
            if (due <= i) {
                /* Sleep even when the next message is due within microseconds: spinning here,
                 * as an earlier version did above ~50,000 msgs/s, took a whole core from the
                 * server being measured. */
                uint64_t next = first_send_ns + (uint64_t)((double)i * 1e9 / rate);
                sleep_ns(next > t ? next - t : 1000);
                continue;
            }
        } else if (!no_window) {
            wait_for_window(i, window);
            long room = i + window - (i * subs - atomic_load(&delivered)) / subs;
            if (room < due) due = room;
            if (due <= i) due = i + 1;
        }
        long count = due - i < per_batch ? due - i : per_batch;
        if (!send_all(pub, out, fill_batch(out, count, now_ns()))) break;
        i += count;
        atomic_store_explicit(&published, i, memory_order_relaxed);
        if (proto == REDIS) drain_replies(pub);
        /* At a fixed rate, one send per tick: what falls due while sleeping goes out together.
         * Without the pause, a send takes longer than the gap between messages above ~200,000
         * msgs/s, so the publisher sent one or two at a time without ever sleeping. */
        if (rate > 0) sleep_ns(50000);
    }
    atomic_store(&publisher_done, 1);
    pthread_join(reader, NULL);
    atomic_store(&finished, 1);
    if (watch_pid) pthread_join(sampler, NULL);
    double server_cpu = watch_pid ? read_cpu_s() - cpu_before : 0;
    /* Close WebSockets with a close frame (1000, normal), so a server logs no abnormal end;
     * its answering close is not waited for. */
    if (transport == WS) {
        const char normal[2] = {0x03, (char)0xE8};
        for (int c = 0; c < subs; c++)
            if (!conns[c].closed) ws_send(conns[c].fd, 0x8, normal, 2);
        ws_send(pub, 0x8, normal, 2);
    }
    double seconds = last_recv_ns > first_send_ns ? (double)(last_recv_ns - first_send_ns) / 1e9 : 0;
    long got = atomic_load(&delivered);
    printf("delivered=%ld expected=%ld seconds=%.3f msgs_per_s=%.0f p50_us=%.0f p99_us=%.0f p999_us=%.0f peak_rss_kb=%ld server_cpu_s=%.2f reader_cpu_s=%.2f published=%ld lost=%ld disconnects=%d stalled=%d\n",
           got, expected, seconds, seconds > 0 ? (double)got / seconds : 0, percentile(0.50, recorded),
           percentile(0.99, recorded), percentile(0.999, recorded), peak_rss_kb, server_cpu, reader_cpu_s,
           atomic_load(&published), expected - got, disconnects, stalled);
    return got == expected ? 0 : 3;
}
