/*
 * churn: occupancy under churn (#48) driven from C, so the client's own scheduling is not in
 * the figures: bench/occupancy/occupancy.py --churn c builds and runs it (and reads its output).
 *
 *   churn --port P [--rate 1000] [--seconds 10] [--hold 1.0] [--subjects 10000] [--cpu N]
 *
 * One thread opens --rate connections a second for --seconds (paced by an absolute timerfd),
 * each writing {"op":"sub","subject":"occ.I","sid":"s"} for the next subject I, reading its
 * reply, and closing --hold seconds later; so each subscription is a 0 -> 1 and each close a
 * 1 -> 0. A second thread, the watcher, reads `$sys.occupancy.>` (with `ts`) on a blocking
 * socket, so the churn's work never delays its reading. --cpu pins both threads to one core, to
 * keep them off the core runneld is pinned to.
 *
 * Output on stdout, a line per transition (CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds):
 *   made SUBJECT COUNT MONO REAL      the `sub` written (COUNT 1), or just before close() (0)
 *   seen SUBJECT COUNT MONO REAL TS   the watcher read the event; TS is the server's, in ms
 * then `failed N` (replies that were not ok, or connections that could not be made). Exits 1
 * on a failure of its own (a socket call that fails).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <unistd.h>

typedef struct {
    int subject, count;
    int64_t mono, real, ts;
} Change;

static int port = 0, subjects = 10000, cpu = -1;
static double rate = 1000, seconds = 10, hold = 1.0;

static int64_t now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void pin(void) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) die("pthread_setaffinity_np");
}

/* A blocking loopback connection with TCP_NODELAY; -1 when it cannot be made. */
static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) die("send");
        bytes += sent;
        length -= (size_t)sent;
    }
}

/* The watcher's state: main reads `seen` and `count` only after the join; `ready` is under `lock`. */
typedef struct {
    int fd, expected;
    Change *seen;
    int count;
    pthread_mutex_t lock;
    pthread_cond_t ready_changed;
    int ready;
} Watcher;

/* The number after `key` in line, or -1. */
static int64_t field(const char *line, const char *key) {
    const char *at = strstr(line, key);
    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

static void *watch(void *argument) {
    Watcher *watcher = argument;
    pin();
    static char buffer[1 << 20];
    size_t held = 0;
    int initial = 0;
    const char *prefix = "\"subject\":\"$sys.occupancy.occ.";
    while (watcher->count < watcher->expected) {
        ssize_t got = recv(watcher->fd, buffer + held, sizeof buffer - held - 1, 0);
        int64_t mono = now(CLOCK_MONOTONIC), real = now(CLOCK_REALTIME);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* closed, or 30 s of silence (SO_RCVTIMEO) */
        held += (size_t)got;
        buffer[held] = 0;
        char *line = buffer, *end;
        while ((end = strchr(line, '\n')) != NULL) {
            *end = 0;
            if (strstr(line, "\"ev\":\"next\"") != NULL) {
                int64_t subject = field(line, prefix), count = field(line, "\"subscribers\":");
                if (initial < subjects) {
                    /* The count now of every subject first (all 0). */
                    if (count != 0) fprintf(stderr, "churn: a subject counted %lld at the start\n", (long long)count);
                    if (++initial == subjects) {
                        pthread_mutex_lock(&watcher->lock);
                        watcher->ready = 1;
                        pthread_cond_signal(&watcher->ready_changed);
                        pthread_mutex_unlock(&watcher->lock);
                    }
                } else if (subject >= 0 && watcher->count < watcher->expected) {
                    watcher->seen[watcher->count++] =
                        (Change){(int)subject, (int)count, mono, real, field(line, "\"ts\":")};
                }
            }
            line = end + 1;
        }
        held = (size_t)(buffer + held - line);
        memmove(buffer, line, held);
        if (held == sizeof buffer - 1) die("watcher: a line over 1 MiB");
    }
    return NULL;
}

/* A connection waiting for its close, in opening order (so in closing order too). */
typedef struct {
    int fd, subject;
    int64_t close_at;
} Open;

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--hold")) hold = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--subjects")) subjects = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cpu")) cpu = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "churn: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int total = (int)(rate * seconds);
    if (port <= 0 || rate <= 0 || total <= 0 || rate * hold >= subjects) {
        fprintf(stderr, "churn: needs --port, and rate x hold under --subjects (no subject held twice)\n");
        return 2;
    }
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    pin();

    Watcher watcher = {.expected = 2 * total, .seen = calloc((size_t)(2 * total), sizeof(Change))};
    pthread_mutex_init(&watcher.lock, NULL);
    pthread_cond_init(&watcher.ready_changed, NULL);
    if ((watcher.fd = dial()) < 0) die("connect");
    struct timeval silence = {.tv_sec = 30};
    setsockopt(watcher.fd, SOL_SOCKET, SO_RCVTIMEO, &silence, sizeof silence);
    const char *watch_line = "{\"op\":\"sub\",\"subject\":\"$sys.occupancy.>\",\"sid\":\"w\",\"ts\":true}\n";
    send_all(watcher.fd, watch_line, strlen(watch_line));
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch, &watcher) != 0) die("pthread_create");
    pthread_mutex_lock(&watcher.lock);
    while (!watcher.ready) pthread_cond_wait(&watcher.ready_changed, &watcher.lock);
    pthread_mutex_unlock(&watcher.lock);

    Change *made = calloc((size_t)(2 * total), sizeof(Change));
    Open *open = calloc((size_t)total, sizeof(Open));
    int made_count = 0, opened = 0, closed = 0, failed = 0;
    int epoll = epoll_create1(EPOLL_CLOEXEC), timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (epoll < 0 || timer < 0) die("epoll_create1 / timerfd_create");
    struct epoll_event event = {.events = EPOLLIN, .data.fd = -1};
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, timer, &event) != 0) die("epoll_ctl");
    int64_t start = now(CLOCK_MONOTONIC), interval = (int64_t)(1e9 / rate), held = (int64_t)(hold * 1e9);
    char request[128], reply[4096];
    while (closed < total) {
        int64_t at = now(CLOCK_MONOTONIC);
        /* Every opening due by now, paced to the rate whatever each one takes. */
        while (opened < total && start + opened * interval <= at) {
            int subject = opened % subjects, fd = dial();
            open[opened] = (Open){fd, subject, now(CLOCK_MONOTONIC) + held};
            if (fd < 0) {
                failed++;
            } else {
                int length = snprintf(request, sizeof request,
                                      "{\"op\":\"sub\",\"subject\":\"occ.%d\",\"sid\":\"s\"}\n", subject);
                send_all(fd, request, (size_t)length);
                made[made_count++] = (Change){subject, 1, now(CLOCK_MONOTONIC), now(CLOCK_REALTIME), 0};
                struct epoll_event readable = {.events = EPOLLIN, .data.fd = fd};
                if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &readable) != 0) die("epoll_ctl");
            }
            opened++;
            at = now(CLOCK_MONOTONIC);
        }
        /* Every close due by now. */
        while (closed < opened && open[closed].close_at <= at) {
            Open *due = &open[closed++];
            if (due->fd < 0) continue;
            made[made_count++] = (Change){due->subject, 0, now(CLOCK_MONOTONIC), now(CLOCK_REALTIME), 0};
            close(due->fd);
        }
        int64_t next = closed < opened ? open[closed].close_at : INT64_MAX;
        if (opened < total && start + opened * interval < next) next = start + opened * interval;
        if (next == INT64_MAX) continue;
        struct itimerspec when = {.it_value = {.tv_sec = next / 1000000000, .tv_nsec = next % 1000000000}};
        if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
        timerfd_settime(timer, TFD_TIMER_ABSTIME, &when, NULL);
        struct epoll_event ready[64];
        int count = epoll_wait(epoll, ready, 64, -1);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (fd == -1) {
                uint64_t expirations;
                if (read(timer, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd");
                continue;
            }
            /* The `sub`'s reply: one line, read once and taken out of the set. */
            ssize_t got = recv(fd, reply, sizeof reply - 1, MSG_DONTWAIT);
            if (got <= 0 || (reply[got] = 0, strstr(reply, "\"ok\":true") == NULL)) failed++;
            epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
        }
    }
    pthread_join(thread, NULL);
    for (int i = 0; i < made_count; i++)
        printf("made %d %d %lld %lld\n", made[i].subject, made[i].count, (long long)made[i].mono,
               (long long)made[i].real);
    for (int i = 0; i < watcher.count; i++) {
        Change *seen = &watcher.seen[i];
        printf("seen %d %d %lld %lld %lld\n", seen->subject, seen->count, (long long)seen->mono, (long long)seen->real,
               (long long)seen->ts);
    }
    printf("failed %d\n", failed);
    return 0;
}
