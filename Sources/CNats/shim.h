#ifndef RUNNEL_CNATS_SHIM_H
#define RUNNEL_CNATS_SHIM_H
/* cnats, Debian's libnats-dev (3.4.1): the NATS client a clustered runneld links. Its libuv
   adapter (nats/adapters/libuv.h) is not used: cnats runs its connection on threads of its
   own, and runneld hands what they deliver to its loop (Sources/RunnelServer/Cluster). */
#include <nats/nats.h>
#endif
