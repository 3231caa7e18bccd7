/*
 * durable-load: acknowledged writes to a server that keeps them on disk, pipelined, counted
 * by their acknowledgements; the same code drives runneld (durable replay subjects, `pub` with
 * a `ref`) and Redis (`XADD key MAXLEN = C * v value`, a stream trimmed to its last C entries,
 * the nearest Redis has to a replay subject kept in its append-only file).
 *
 *   durable-load --proto runnel|redis --port P [--conns N] [--window W] [--msgs M] [--size B]
 *                [--capacity C] [--ping-port P] [--rate R]
 *
 * N connections, each on a thread of its own, publish to a subject (a stream) of their own,
 * keeping at most W requests unacknowledged; M messages in all; with --rate, R messages a
 * second in all, each publisher sending on schedule instead of as fast as it can. With --ping-port, one more
 * connection sends a `ping` (runnel) or `PING` (redis) every millisecond and times each round
 * trip: a loop that stalls (on a disk sync, a checkpoint) shows in its tail.
 *
 * Prints one line: acked, seconds, acks_per_s, ping_p50_us, ping_p99_us, ping_max_us.
 * Exit status 0 when every write was acknowledged with success, 3 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum proto { RUNNEL, REDIS };

static enum proto proto = RUNNEL;
static int port = 7455;
static int conns = 4;
static int window = 256;
static long msgs = 200000;
static int size = 64;
static int capacity = 100;
static int ping_port = 0;
static double rate = 0;
static atomic_long failures;
static atomic_int publishers_done;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int connect_to(int p) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        perror("connect");
        exit(2);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *bytes, size_t count) {
    while (count > 0) {
        ssize_t sent = send(fd, bytes, count, MSG_NOSIGNAL);
        if (sent <= 0) {
            if (sent < 0 && errno == EINTR) continue;
            perror("send");
            exit(2);
        }
        bytes += sent;
        count -= (size_t)sent;
    }
}

/* Reads replies, counting complete ones: a runneld reply is one line; a Redis XADD reply is a
 * bulk string (two lines) or an error (one line, '-'). Failed replies are counted apart. */
struct reader {
    int fd;
    char buffer[1 << 16];
    size_t used;
    int pending_bulk; /* Redis: the header of a bulk reply was read, its data line not yet */
};

static long read_replies(struct reader *r) {
    ssize_t got = recv(r->fd, r->buffer + r->used, sizeof r->buffer - r->used, 0);
    if (got <= 0) {
        fprintf(stderr, "connection closed\n");
        exit(2);
    }
    r->used += (size_t)got;
    long replies = 0;
    size_t start = 0;
    for (;;) {
        char *newline = memchr(r->buffer + start, '\n', r->used - start);
        if (!newline) break;
        char *line = r->buffer + start;
        if (proto == RUNNEL) {
            if (strncmp(line, "{\"ok\":true", 10) != 0) {
                if (atomic_fetch_add(&failures, 1) < 3) fprintf(stderr, "%.*s\n", (int)(newline - line), line);
            }
            replies++;
        } else if (r->pending_bulk) {
            r->pending_bulk = 0;
            replies++;
        } else if (line[0] == '$') {
            r->pending_bulk = 1;
        } else {
            if (line[0] == '-' && atomic_fetch_add(&failures, 1) < 3) fprintf(stderr, "%.*s\n", (int)(newline - line), line);
            replies++;
        }
        start = (size_t)(newline - r->buffer) + 1;
    }
    memmove(r->buffer, r->buffer + start, r->used - start);
    r->used -= start;
    return replies;
}

struct publisher {
    pthread_t thread;
    int index;
    long count;
};

static void *publish(void *argument) {
    struct publisher *self = argument;
    struct reader *r = calloc(1, sizeof *r);
    r->fd = connect_to(port);
    char payload[size + 1];
    memset(payload, 'x', (size_t)size);
    payload[size] = 0;
    char request[size + 256];
    long sent = 0, acked = 0;
    uint64_t started = now_ns();
    double interval_ns = rate > 0 ? 1e9 * conns / rate : 0;
    while (acked < self->count) {
        char batch[1 << 16];
        size_t used = 0;
        if (interval_ns > 0 && sent < self->count && sent - acked < window) {
            /* On schedule: wait for the next message's time, unless replies are due first. */
            uint64_t due = started + (uint64_t)(interval_ns * (double)sent);
            uint64_t now = now_ns();
            if (due > now && sent == acked) {
                struct timespec pause = {(time_t)((due - now) / 1000000000ull), (long)((due - now) % 1000000000ull)};
                nanosleep(&pause, NULL);
            }
        }
        while (sent < self->count && sent - acked < window && used + sizeof request < sizeof batch
               && (interval_ns == 0 || started + (uint64_t)(interval_ns * (double)sent) <= now_ns())) {
            int length;
            if (proto == RUNNEL)
                length = snprintf(request, sizeof request,
                    "{\"op\":\"pub\",\"subject\":\"durable.bench.%d\",\"value\":\"%s\",\"ref\":%ld}\n",
                    self->index, payload, sent);
            else
                length = snprintf(request, sizeof request,
                    "*8\r\n$4\r\nXADD\r\n$%d\r\ndurable.bench.%d\r\n$6\r\nMAXLEN\r\n$1\r\n=\r\n$%d\r\n%d\r\n$1\r\n*\r\n$1\r\nv\r\n$%d\r\n%s\r\n",
                    14 + (self->index > 9 ? 2 : 1), self->index, (int)snprintf(NULL, 0, "%d", capacity), capacity,
                    size, payload);
            memcpy(batch + used, request, (size_t)length);
            used += (size_t)length;
            sent++;
        }
        if (used > 0) send_all(r->fd, batch, used);
        if (sent > acked) acked += read_replies(r);
    }
    close(r->fd);
    free(r);
    atomic_fetch_add(&publishers_done, 1);
    return NULL;
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t *pings;
static long ping_count;

static void *ping(void *unused) {
    (void)unused;
    int fd = connect_to(ping_port);
    long capacity_pings = 1000000;
    pings = malloc(sizeof *pings * (size_t)capacity_pings);
    const char *request = proto == RUNNEL ? "{\"op\":\"ping\"}\n" : "*1\r\n$4\r\nPING\r\n";
    char buffer[256];
    while (atomic_load(&publishers_done) < conns && ping_count < capacity_pings) {
        uint64_t started = now_ns();
        send_all(fd, request, strlen(request));
        size_t got = 0;
        while (got == 0 || buffer[got - 1] != '\n') {
            ssize_t n = recv(fd, buffer + got, sizeof buffer - got, 0);
            if (n <= 0) return NULL;
            got += (size_t)n;
        }
        pings[ping_count++] = now_ns() - started;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--proto")) proto = !strcmp(argv[i + 1], "redis") ? REDIS : RUNNEL;
        else if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--conns")) conns = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--window")) window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--msgs")) msgs = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--capacity")) capacity = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ping-port")) ping_port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    struct publisher *publishers = calloc((size_t)conns, sizeof *publishers);
    pthread_t pinger;
    uint64_t started = now_ns();
    for (int i = 0; i < conns; i++) {
        publishers[i].index = i;
        publishers[i].count = msgs / conns;
        pthread_create(&publishers[i].thread, NULL, publish, &publishers[i]);
    }
    if (ping_port) pthread_create(&pinger, NULL, ping, NULL);
    for (int i = 0; i < conns; i++) pthread_join(publishers[i].thread, NULL);
    double seconds = (double)(now_ns() - started) / 1e9;
    if (ping_port) pthread_join(pinger, NULL);
    long acked = (msgs / conns) * conns;
    double p50 = 0, p99 = 0, max = 0;
    if (ping_count > 0) {
        qsort(pings, (size_t)ping_count, sizeof *pings, compare);
        p50 = (double)pings[ping_count / 2] / 1000;
        p99 = (double)pings[(long)(ping_count * 0.99)] / 1000;
        max = (double)pings[ping_count - 1] / 1000;
    }
    printf("acked=%ld seconds=%.3f acks_per_s=%.0f ping_p50_us=%.0f ping_p99_us=%.0f ping_max_us=%.0f failures=%ld\n",
        acked, seconds, (double)acked / seconds, p50, p99, max, atomic_load(&failures));
    return atomic_load(&failures) == 0 ? 0 : 3;
}
