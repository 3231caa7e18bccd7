/*
 * loadgen: one publisher thread and one thread for all subscribers, driving runneld, Redis
 * pub/sub or NATS with the same code, so the servers are compared fairly.
 *
 * Every payload carries its send time as a marker "~T<nanoseconds>~" followed by padding to
 * the requested size, so deliveries are counted and timed the same way whatever the protocol
 * wraps around them: the subscriber thread scans its sockets' bytes for markers.
 *
 *   loadgen --proto runnel|redis|nats --port P [--host 127.0.0.1] [--subs K] [--msgs N]
 *           [--size B] [--rate R] [--stages JSON] [--timeout S]
 *
 * Prints one line of key=value results: delivered, seconds, msgs_per_s, p50_us, p99_us,
 * p999_us, expected. Exit status 0 when every expected delivery arrived, 3 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum proto { RUNNEL, REDIS, NATS };

static enum proto proto = RUNNEL;
static const char *host = "127.0.0.1";
static int port = 7455;
static int subs = 1;
static long msgs = 100000;
static int size = 64;
static double rate = 0; /* msgs/s; 0 = as fast as possible */
static const char *stages = NULL;
static double timeout_s = 30;
static const char *subject = "bench.load";

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static int connect_to(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("inet_pton");
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("send");
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads until `needle` has been seen (a subscription acknowledgement), with a deadline. */
static void wait_for(int fd, const char *needle) {
    char buf[65536];
    size_t have = 0;
    uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    while (now_ns() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
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

/* Latency histogram: 64 linear sub-buckets per power of two of microseconds. */
#define SUB 64
#define POWERS 40
static uint64_t hist[POWERS * SUB];

static void record_latency(uint64_t ns) {
    uint64_t us = ns / 1000;
    int power = 0;
    while ((us >> power) >= SUB && power < POWERS - 1) power++;
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

/* The subscriber side: marker scanning state per connection. */
struct scan {
    int state; /* 0 look for '~', 1 expect 'T', 2 digits */
    uint64_t value;
};

static long expected;
static volatile long delivered;
static uint64_t first_send_ns, last_recv_ns;

static void *subscriber_thread(void *arg) {
    int *fds = arg;
    struct pollfd *p = calloc((size_t)subs, sizeof *p);
    struct scan *st = calloc((size_t)subs, sizeof *st);
    static char buf[1 << 18];
    for (int i = 0; i < subs; i++) p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    uint64_t last_progress = now_ns();
    while (delivered < expected) {
        int n = poll(p, (nfds_t)subs, 100);
        uint64_t t = now_ns();
        if (n <= 0) {
            if (t - last_progress > (uint64_t)(timeout_s * 1e9)) break;
            continue;
        }
        for (int i = 0; i < subs; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                fprintf(stderr, "loadgen: subscriber %d closed by the server\n", i);
                p[i].fd = -1;
                continue;
            }
            last_progress = t;
            struct scan *s = &st[i];
            for (ssize_t k = 0; k < r; k++) {
                char c = buf[k];
                if (s->state == 0) {
                    if (c == '~') s->state = 1;
                } else if (s->state == 1) {
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
                        delivered++;
                        if (t > s->value) record_latency(t - s->value);
                        last_recv_ns = t;
                    }
                    s->state = c == '~' ? 1 : 0;
                }
            }
        }
    }
    free(p);
    free(st);
    return NULL;
}

/* Builds one publish command for `proto` around a payload stamped with `t`. */
static size_t build_pub(char *out, uint64_t t) {
    char payload[1 << 16];
    int n = snprintf(payload, sizeof payload, "~T%020llu~", (unsigned long long)t);
    while (n < size - 2 * (proto == RUNNEL)) payload[n++] = 'x';
    payload[n] = 0;
    switch (proto) {
    case RUNNEL:
        return (size_t)sprintf(out, "{\"op\":\"pub\",\"subject\":\"%s\",\"value\":\"%s\"}\n", subject, payload);
    case REDIS:
        return (size_t)sprintf(out, "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n", strlen(subject), subject, n, payload);
    case NATS:
        return (size_t)sprintf(out, "PUB %s %d\r\n%s\r\n", subject, n, payload);
    }
    return 0;
}

static void subscribe(int fd, int index) {
    char cmd[8192];
    switch (proto) {
    case RUNNEL:
        if (stages)
            snprintf(cmd, sizeof cmd, "{\"op\":\"sub\",\"subject\":\"%s\",\"sid\":\"b%d\",\"ops\":%s}\n", subject, index, stages);
        else
            snprintf(cmd, sizeof cmd, "{\"op\":\"sub\",\"subject\":\"%s\",\"sid\":\"b%d\"}\n", subject, index);
        send_all(fd, cmd, strlen(cmd));
        wait_for(fd, "\"ok\":true");
        break;
    case REDIS:
        snprintf(cmd, sizeof cmd, "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n%s\r\n", strlen(subject), subject);
        send_all(fd, cmd, strlen(cmd));
        wait_for(fd, "subscribe");
        break;
    case NATS:
        snprintf(cmd, sizeof cmd, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB %s %d\r\nPING\r\n", subject, index + 1);
        send_all(fd, cmd, strlen(cmd));
        wait_for(fd, "PONG");
        break;
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--proto")) proto = !strcmp(v, "redis") ? REDIS : !strcmp(v, "nats") ? NATS : RUNNEL;
        else if (!strcmp(k, "--host")) host = v;
        else if (!strcmp(k, "--port")) port = atoi(v);
        else if (!strcmp(k, "--subs")) subs = atoi(v);
        else if (!strcmp(k, "--msgs")) msgs = atol(v);
        else if (!strcmp(k, "--size")) size = atoi(v);
        else if (!strcmp(k, "--rate")) rate = atof(v);
        else if (!strcmp(k, "--stages")) stages = v;
        else if (!strcmp(k, "--timeout")) timeout_s = atof(v);
        else if (!strcmp(k, "--subject")) subject = v;
        else {
            fprintf(stderr, "loadgen: unknown option %s\n", k);
            return 2;
        }
    }
    if (size < 24 || size > 60000 || subs < 1 || msgs < 1) {
        fprintf(stderr, "loadgen: need --size 24..60000, --subs >= 1, --msgs >= 1\n");
        return 2;
    }
    int *fds = calloc((size_t)subs, sizeof *fds);
    for (int i = 0; i < subs; i++) {
        fds[i] = connect_to();
        subscribe(fds[i], i);
    }
    int pub = connect_to();
    if (proto == NATS) {
        const char *c = "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n";
        send_all(pub, c, strlen(c));
        wait_for(pub, "PONG");
    }
    expected = msgs * subs;
    pthread_t reader;
    pthread_create(&reader, NULL, subscriber_thread, fds);

    /* The publisher: batches of commands in one send; paced when --rate is given. A Redis
     * publisher must read its replies or the server stops reading it: a drain does that. */
    size_t cap = 1 << 20, used = 0;
    char *out = malloc(cap + 70000);
    char sink[1 << 16];
    first_send_ns = now_ns();
    for (long i = 0; i < msgs; i++) {
        if (rate > 0) {
            uint64_t due = first_send_ns + (uint64_t)((double)i * 1e9 / rate);
            while (now_ns() < due) {
                if (used) {
                    send_all(pub, out, used);
                    used = 0;
                }
            }
        }
        used += build_pub(out + used, now_ns());
        if (used >= cap || rate > 0) {
            send_all(pub, out, used);
            used = 0;
        }
        if (proto == REDIS && (i & 255) == 0) while (recv(pub, sink, sizeof sink, MSG_DONTWAIT) > 0) {}
    }
    if (used) send_all(pub, out, used);
    pthread_join(reader, NULL);
    double seconds = (double)(last_recv_ns - first_send_ns) / 1e9;
    uint64_t total = (uint64_t)delivered;
    printf("delivered=%ld expected=%ld seconds=%.3f msgs_per_s=%.0f p50_us=%.0f p99_us=%.0f p999_us=%.0f\n",
           delivered, expected, seconds, seconds > 0 ? (double)delivered / seconds : 0,
           percentile(0.50, total), percentile(0.99, total), percentile(0.999, total));
    return delivered == expected ? 0 : 3;
}
