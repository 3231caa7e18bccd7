/*
 * loadgen: one publisher thread and one thread for all subscribers, driving runneld, Redis
 * pub/sub or NATS with the same code, so the servers are compared fairly.
 *
 * Every payload carries its send time as a marker "~T<nanoseconds>~" followed by padding to
 * the requested size, so deliveries are counted and timed the same way whatever the protocol
 * wraps around them: the subscriber thread scans its sockets' bytes for markers.
 *
 *   loadgen --proto runnel|redis|nats --port P [--host 127.0.0.1] [--subs K] [--msgs N]
 *           [--size B] [--rate R] [--stages JSON] [--timeout S] [--subject NAME]
 *           [--window-bytes W] [--watch-pid PID] [--warmup S]
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
 * With --stages (runneld only) each value is an object {"load":0.95,"p":"<payload>"}, so a
 * chain such as filter(.load > 0.9) + map(.p) has a field to read and keeps the marker.
 *
 * --watch-pid samples that process's VmRSS every 10 ms during the run and reports the CPU
 * time it used: on a two-core machine shared with the client, CPU per delivered message is
 * the steadier measure of a server's cost.
 *
 * --warmup S leaves messages sent in the first S seconds out of the latency percentiles (they
 * are still delivered and counted): fresh connections start with small TCP windows and cold
 * buffers, and in a run of a couple of seconds that start-up alone can set the p99.
 *
 * Prints one line of key=value results: delivered, expected, seconds, msgs_per_s, p50_us,
 * p99_us, p999_us, peak_rss_kb, server_cpu_s (the watched process's CPU time during the
 * run, user + system), reader_cpu_s (the subscriber thread's own CPU time: close to `seconds`,
 * it was the load generator, not the server, that set the pace). Exit status 0 when every
 * expected delivery arrived, 3 otherwise.
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
#include <sys/resource.h>
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
static double warmup_s = 0;
static const char *subject = "bench.load";
static long window_bytes = 2 << 20;
static int watch_pid = 0;

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

static int connect_to(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("inet_pton");
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    return fd;
}

/* A Redis publisher gets a reply per PUBLISH and must read them, or its replies pile up in
 * the server; the other protocols send the publisher nothing worth keeping. */
static void drain_replies(int fd) {
    static char sink[1 << 16];
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {}
}

/* Writes all of `p` to a non-blocking socket, waiting in poll(2) while the kernel's buffer is
 * full and draining replies meanwhile. */
static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) die("send");
            struct pollfd pf = {.fd = fd, .events = POLLOUT | POLLIN};
            poll(&pf, 1, 100);
            if (pf.revents & POLLIN) drain_replies(fd);
            continue;
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

/* Latency histogram: 64 linear sub-buckets per power of two of microseconds. */
#define SUB 64
#define POWERS 40
static uint64_t hist[POWERS * SUB];

static uint64_t recorded;       /* latencies in the histogram */
static uint64_t warmup_until_ns; /* messages sent before this are counted, not timed */

static void record_latency(uint64_t ns) {
    recorded++;
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
static atomic_long delivered;
static atomic_int finished;
static uint64_t first_send_ns, last_recv_ns;
static double reader_cpu_s; /* the subscriber thread's own CPU time (user + system) */

/* The publisher sleeps here while its window is full; the subscriber thread wakes it. */
static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t window_moved = PTHREAD_COND_INITIALIZER;
static atomic_int publisher_waiting;

static void *subscriber_thread(void *arg) {
    int *fds = arg;
    /* epoll, not poll: with 100 subscribers a poll(2) of every socket per wakeup cost this
     * thread more CPU than the servers it measures spend, on a machine it shares with them. */
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < subs; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e) < 0) die("epoll_ctl");
    }
    struct epoll_event *ready = calloc((size_t)subs, sizeof *ready);
    struct scan *st = calloc((size_t)subs, sizeof *st);
    static char buf[1 << 18];
    uint64_t last_progress = now_ns();
    long seen = 0;
    while (seen < expected) {
        int n = epoll_wait(ep, ready, subs, 100);
        uint64_t t = now_ns();
        if (n <= 0) {
            if (t - last_progress > (uint64_t)(timeout_s * 1e9)) break;
            continue;
        }
        for (int j = 0; j < n; j++) {
            int i = (int)ready[j].data.u32;
            ssize_t r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                fprintf(stderr, "loadgen: subscriber %d closed by the server\n", i);
                epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], NULL);
                continue;
            }
            t = now_ns(); /* after recv: every byte read was sent before this instant */
            last_progress = t;
            struct scan *s = &st[i];
            ssize_t k = 0;
            while (k < r) {
                if (s->state == 0) { /* the padding between markers: skip it with memchr */
                    const char *m = memchr(buf + k, '~', (size_t)(r - k));
                    if (!m) break;
                    k = m - buf + 1;
                    s->state = 1;
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
                        seen++;
                        if (t > s->value && s->value >= warmup_until_ns) record_latency(t - s->value);
                        last_recv_ns = t;
                    }
                    s->state = c == '~' ? 1 : 0;
                }
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
    free(st);
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
    command_length = (size_t)w;
    stamp_at = (size_t)(strstr(command, "~T") - command) + 2;
}

static size_t build_pub(char *out, uint64_t t) {
    memcpy(out, command, command_length);
    for (int d = 19; d >= 0; d--, t /= 10) out[stamp_at + (size_t)d] = (char)('0' + t % 10);
    return command_length;
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
        else if (!strcmp(k, "--warmup")) warmup_s = atof(v);
        else if (!strcmp(k, "--subject")) subject = v;
        else if (!strcmp(k, "--window-bytes")) window_bytes = atol(v);
        else if (!strcmp(k, "--watch-pid")) watch_pid = atoi(v);
        else {
            fprintf(stderr, "loadgen: unknown option %s\n", k);
            return 2;
        }
    }
    if (size < 24 || size > 60000 || subs < 1 || msgs < 1 || window_bytes < size) {
        fprintf(stderr, "loadgen: need --size 24..60000, --subs >= 1, --msgs >= 1, --window-bytes >= size\n");
        return 2;
    }
    build_command();
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
    pthread_t reader, sampler;
    warmup_until_ns = now_ns() + (uint64_t)(warmup_s * 1e9);
    pthread_create(&reader, NULL, subscriber_thread, fds);
    if (watch_pid) pthread_create(&sampler, NULL, rss_thread, NULL);

    /* The publisher: batches of commands in one send, up to 64 KiB or the window's edge. */
    long window = window_bytes / size;
    size_t cap = 1 << 16, used = 0;
    char *out = malloc(cap + 70000);
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
        } else {
            wait_for_window(i, window);
            long room = i + window - (i * subs - atomic_load(&delivered)) / subs;
            if (room < due) due = room;
            if (due <= i) due = i + 1;
        }
        uint64_t t = now_ns();
        for (; i < due && used < cap; i++) used += build_pub(out + used, t);
        send_all(pub, out, used);
        used = 0;
        if (proto == REDIS) drain_replies(pub);
        /* At a fixed rate, one send per tick: what falls due while sleeping goes out together.
         * Without the pause, a send takes longer than the gap between messages above ~200,000
         * msgs/s, so the publisher sent one or two at a time without ever sleeping. */
        if (rate > 0) sleep_ns(50000);
    }
    pthread_join(reader, NULL);
    atomic_store(&finished, 1);
    if (watch_pid) pthread_join(sampler, NULL);
    double server_cpu = watch_pid ? read_cpu_s() - cpu_before : 0;
    double seconds = (double)(last_recv_ns - first_send_ns) / 1e9;
    long got = atomic_load(&delivered);
    printf("delivered=%ld expected=%ld seconds=%.3f msgs_per_s=%.0f p50_us=%.0f p99_us=%.0f p999_us=%.0f peak_rss_kb=%ld server_cpu_s=%.2f reader_cpu_s=%.2f\n",
           got, expected, seconds, seconds > 0 ? (double)got / seconds : 0, percentile(0.50, recorded),
           percentile(0.99, recorded), percentile(0.999, recorded), peak_rss_kb, server_cpu, reader_cpu_s);
    return got == expected ? 0 : 3;
}
