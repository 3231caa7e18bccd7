#!/usr/bin/env bash
# Instructions the server executes per delivered message, counted by callgrind: repeatable
# for the same binary and load whatever else the machine is doing, so two builds can be told
# apart where timings are noise.
#
#   bench/loadgen/instructions.sh RUNNELD [RUNNELD ...] [-- LOADGEN ARGS]
#
# Runs each runneld (a stripped copy: valgrind 3.19 cannot read the debug information Swift
# 6.3 writes) under `valgrind --tool=callgrind` on a loopback port, drives it with
# loadgen (default: 10 subscribers, 64-byte values, 20,000 messages, so 200,000 deliveries),
# stops it, and prints the instructions it executed in all (start-up and shutdown included,
# the same for every binary) and per delivery, every thread counted. A build with `--loops` runs
# on $LOOPS loops (default 1). With CONFIG=FILE each runneld also reads that configuration file
# (`--config`; the flags above override its `listen`, `http_listen` and `loops`): a node's
# cluster settings, say, with its nats-server and other nodes started beforehand. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
binaries=()
while (($#)) && [[ $1 != -- ]]; do binaries+=("$(realpath "$1")"); shift; done
[[ ${1:-} == -- ]] && shift
load=("$@")
((${#load[@]})) || load=(--subs 10 --size 64 --msgs 20000)
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
command -v nc >/dev/null || { apt-get update -qq && apt-get install -y -qq netcat-openbsd; }
cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=7620
for binary in "${binaries[@]}"; do
    strip -o "$work/runneld" "$binary"
    # Builds with the HTTP front door get it turned off; earlier ones have no such flag.
    http=()
    "$binary" --help 2>&1 | grep -q -- --http-listen && http=(--http-listen "")
    # Builds with event loops run on $LOOPS of them (default 1: callgrind runs one thread at a time).
    "$binary" --help 2>&1 | grep -q -- --loops && http+=(--loops "${LOOPS:-1}")
    [[ -n ${CONFIG:-} ]] && http+=(--config "$(realpath "$CONFIG")")
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$work/runneld" --listen "127.0.0.1:$port" "${http[@]}" \
        --log-level warning 2>"$work/valgrind.log" &
    pid=$!
    for _ in $(seq 100); do
        echo '{"op":"ping"}' | nc -q1 127.0.0.1 "$port" 2>/dev/null | grep -q ok && break
        sleep 0.2
    done
    result=$(.build/loadgen --proto runnel --port "$port" --timeout 300 "${load[@]}")
    kill -TERM "$pid"
    wait "$pid" || true
    delivered=$(sed -n 's/.*delivered=\([0-9]*\).*/\1/p' <<<"$result")
    total=$(sed -n 's/^summary: *//p' "$work/out")
    printf '%-50s instructions=%s delivered=%s per_delivery=%s\n' "$binary" "$total" "$delivered" \
        "$(awk -v t="$total" -v d="$delivered" 'BEGIN { printf "%.0f", t / d }')"
    rm -f "$work/out"
done
