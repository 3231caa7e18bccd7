// The floor of a value's crossing from one loop to another on this machine (#44): what the
// least a design of per-loop mirrors pays, whatever its code, to have a value read on a second
// thread. bench/README.md, "The floor of a crossing".
//
//   cc -O2 -Wall -o .build/crossing bench/loadgen/crossing.c -lpthread
//   .build/crossing [--values N] [--batch B] [--reads R] [--size S]
//
// A value is what runneld's is at the least: its bytes (S of them, 64 by default) in one
// allocation with a reference count. "Alone", one thread makes each value, reads it 2R times
// (a delivery: the count taken and let go, the bytes copied into an output buffer) and frees
// it: a loop with 2R subscribers. "Crossing", the maker reads each R times and hands its values
// in batches of B (a turn's) to a second thread, which reads each R times and hands the batch
// back, the maker freeing them where they were made: two loops with R subscribers each. A
// hand-off is a mutex-guarded queue whose reader is woken through an eventfd when it goes from
// empty to non-empty, as a loop's inbox (uv_async) is. Prints the CPU both took a value (the
// process's user and system time), and the difference: what the crossing adds, over 2R
// deliveries.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <unistd.h>

typedef struct { _Atomic long count; char bytes[]; } value;
typedef struct batch { struct batch *next; int n; value *values[]; } batch;
// One way in each direction; a thread waits on its eventfd for the queue it reads.
typedef struct { pthread_mutex_t lock; batch *head, **tail; int wake; } inbox;

static long values = 10000000;
static int batchSize = 512, reads = 5, size = 64;
static __thread char output[1 << 16];
static __thread size_t outputUsed;

static void deliver(value *v) {
  for (int r = 0; r < reads; r++) {
    atomic_fetch_add(&v->count, 1);
    if (outputUsed + size > sizeof output) outputUsed = 0;
    memcpy(output + outputUsed, v->bytes, size);
    outputUsed += size;
    atomic_fetch_sub(&v->count, 1);
  }
}

static value *make(long i) {
  value *v = malloc(sizeof *v + size);
  v->count = 1;
  memset(v->bytes, (int)i, size);
  return v;
}

static void letGo(value *v) {
  if (atomic_fetch_sub(&v->count, 1) == 1) free(v);
}

static void inboxInit(inbox *box) {
  pthread_mutex_init(&box->lock, NULL);
  box->head = NULL;
  box->tail = &box->head;
  box->wake = eventfd(0, EFD_NONBLOCK);
}

static void post(inbox *box, batch *b) {
  b->next = NULL;
  pthread_mutex_lock(&box->lock);
  int wasEmpty = box->head == NULL;
  *box->tail = b;
  box->tail = &b->next;
  pthread_mutex_unlock(&box->lock);
  uint64_t one = 1;
  if (wasEmpty && write(box->wake, &one, sizeof one) != sizeof one) abort();
}

// Takes everything posted; waits for a wake-up first when `wait` and there is nothing.
static batch *take(inbox *box, int wait) {
  for (;;) {
    pthread_mutex_lock(&box->lock);
    batch *all = box->head;
    box->head = NULL;
    box->tail = &box->head;
    pthread_mutex_unlock(&box->lock);
    if (all || !wait) return all;
    uint64_t count;
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(box->wake, &readable);
    select(box->wake + 1, &readable, NULL, NULL, NULL);
    if (read(box->wake, &count, sizeof count) < 0) continue;
  }
}

static inbox toReader, toMaker;

static void *reader(void *unused) {
  for (long seen = 0; seen < values;) {
    for (batch *b = take(&toReader, 1), *next; b; b = next) {
      next = b->next;
      for (int i = 0; i < b->n; i++) deliver(b->values[i]);
      seen += b->n;
      post(&toMaker, b);
    }
  }
  return unused;
}

static long freeReturned(int wait) {
  long freed = 0;
  for (batch *b = take(&toMaker, wait), *next; b; b = next) {
    next = b->next;
    for (int i = 0; i < b->n; i++) letGo(b->values[i]);
    freed += b->n;
    free(b);
  }
  return freed;
}

static double cpuSeconds(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

static int usage(const char *name) {
  fprintf(stderr, "usage: %s [--values N] [--batch B] [--reads R] [--size S]\n", name);
  return 2;
}

int main(int argc, char **argv) {
  if (argc % 2 == 0) return usage(argv[0]);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--values")) values = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batchSize = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reads")) reads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
    else return usage(argv[0]);
  }
  if (values < 1 || batchSize < 1 || reads < 1 || size < 1) { fprintf(stderr, "each figure must be at least 1\n"); return 2; }

  // Alone: one thread, 2R deliveries a value.
  double start = cpuSeconds();
  reads *= 2;
  for (long i = 0; i < values; i++) {
    value *v = make(i);
    deliver(v);
    letGo(v);
  }
  reads /= 2;
  double alone = cpuSeconds() - start;

  // Crossing: R deliveries on each of two threads.
  inboxInit(&toReader);
  inboxInit(&toMaker);
  pthread_t thread;
  pthread_create(&thread, NULL, reader, NULL);
  start = cpuSeconds();
  long made = 0, freed = 0;
  while (made < values) {
    batch *b = malloc(sizeof *b + batchSize * sizeof(value *));
    b->n = 0;
    while (b->n < batchSize && made < values) {
      value *v = make(made++);
      deliver(v);
      b->values[b->n++] = v;
    }
    post(&toReader, b);
    freed += freeReturned(0);
  }
  while (freed < values) freed += freeReturned(1);
  pthread_join(thread, NULL);
  double crossing = cpuSeconds() - start;

  printf("size=%d batch=%d reads_each=%d values=%ld alone_ns=%.1f crossing_ns=%.1f added_ns=%.1f "
         "added_per_delivery_ns=%.1f\n",
         size, batchSize, reads, values, alone * 1e9 / values, crossing * 1e9 / values,
         (crossing - alone) * 1e9 / values, (crossing - alone) * 1e9 / values / (2 * reads));
  return 0;
}
