/* Transport benchmark client: opens C connections to the echo server, pipelines 60-byte
 * lines on each (at most W lines in flight per connection), counts echoed lines for D seconds.
 * Single-threaded, non-blocking, poll(). Build: cc -O2 -o client client.c
 * Usage: client [port=7777] [connections=4] [seconds=5] [window=65536] */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINE 60
#define SEND_BATCH (LINE * 4096)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 7777;
    int count = argc > 2 ? atoi(argv[2]) : 4;
    double seconds = argc > 3 ? atof(argv[3]) : 5;
    long window = argc > 4 ? atol(argv[4]) : 65536;

    static char out[SEND_BATCH];
    for (int i = 0; i < SEND_BATCH; i += LINE) {
        snprintf(out + i, LINE, "%058d", i / LINE); /* 58 digits and a NUL ... */
        out[i + LINE - 2] = 'x';                      /* ... made into 59 bytes */
        out[i + LINE - 1] = '\n';
    }
    static char in[1 << 20];

    struct pollfd *fds = calloc(count, sizeof *fds);
    long *sentLines = calloc(count, sizeof(long)), *gotLines = calloc(count, sizeof(long));
    long *sendOffset = calloc(count, sizeof(long)); /* bytes of the current batch already sent */
    long *partial = calloc(count, sizeof(long));    /* bytes of an unfinished echoed line */
    for (int c = 0; c < count; c++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
        fcntl(fd, F_SETFL, O_NONBLOCK);
        fds[c].fd = fd;
    }

    long long totalLines = 0, bad = 0;
    double start = now(), end = start + seconds, warm = start + 0.5;
    long long warmLines = -1;
    double warmAt = 0;
    while (1) {
        double t = now();
        if (warmLines < 0 && t >= warm) { warmLines = totalLines; warmAt = t; }
        if (t >= end) break;
        for (int c = 0; c < count; c++) {
            fds[c].events = POLLIN;
            if (sentLines[c] - gotLines[c] + SEND_BATCH / LINE <= window || sendOffset[c] > 0) fds[c].events |= POLLOUT;
        }
        if (poll(fds, count, 100) < 0) { perror("poll"); return 1; }
        for (int c = 0; c < count; c++) {
            if (fds[c].revents & POLLOUT) {
                ssize_t n = send(fds[c].fd, out + sendOffset[c], SEND_BATCH - sendOffset[c], 0);
                if (n > 0) {
                    long before = sendOffset[c] / LINE;
                    sendOffset[c] += n;
                    sentLines[c] += sendOffset[c] / LINE - before;
                    if (sendOffset[c] == SEND_BATCH) sendOffset[c] = 0;
                }
            }
            if (fds[c].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = recv(fds[c].fd, in, sizeof in, 0);
                if (n == 0) { fprintf(stderr, "server closed\n"); return 1; }
                if (n > 0) {
                    /* Count lines and check each is 60 bytes long. */
                    char *p = in, *e = in + n;
                    while (p < e) {
                        char *nl = memchr(p, '\n', e - p);
                        if (!nl) { partial[c] += e - p; break; }
                        if (partial[c] + (nl - p) + 1 != LINE) bad++;
                        partial[c] = 0;
                        gotLines[c]++;
                        totalLines++;
                        p = nl + 1;
                    }
                }
            }
        }
    }
    double elapsed = now() - warmAt;
    long long measured = totalLines - warmLines;
    double rate = measured / elapsed;
    printf("connections=%d window=%ld lines=%lld in %.2fs: %.0f lines/s, %.1f MB/s echoed, bad lines %lld\n",
           count, window, measured, elapsed, rate, rate * LINE / 1e6, bad);
    return bad != 0;
}
