#!/usr/bin/env bash
# Fan-out throughput of runneld: builds runneld (release) and the C load generator, starts
# runneld on a loopback port, and runs 1 publisher -> K subscribers with B-byte values,
# plain and with a filter + map chain. Prints one line per run. Not part of CI: timings
# depend on the machine and on whatever else it is doing.
#   bench/loadgen/run.sh [MESSAGES]
set -euo pipefail
cd "$(dirname "$0")/../.."
messages=${1:-500000}
port=7499
swift build -c release --product runneld >/dev/null
cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread
./.build/release/runneld --listen 127.0.0.1:$port --log-level warning &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do nc -z 127.0.0.1 $port 2>/dev/null && break; sleep 0.1; done
chain='[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":".p"}]'
for subs in 1 10; do
    printf 'runnel  1 -> %-3s 64 B          ' "$subs"
    .build/loadgen --proto runnel --port $port --subs "$subs" --msgs "$messages" --size 64 --subject "plain$subs"
    printf 'runnel  1 -> %-3s 64 B filter+map ' "$subs"
    .build/loadgen --proto runnel --port $port --subs "$subs" --msgs "$messages" --size 64 --subject "chain$subs" --stages "$chain"
done
grep -E 'VmHWM' /proc/$server/status
