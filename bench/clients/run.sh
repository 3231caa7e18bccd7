#!/usr/bin/env bash
# Throughput through the Python client (clients/python) against PyPI's nats-py talking to Debian's
# nats-server, in the same run: 1 publisher -> 1 subscriber, 64-byte values, one process and
# one asyncio loop per measurement (bench/clients/throughput.py); and through the JavaScript
# client (clients/js/runnel.js) in Node over WebSocket (bench/clients/throughput.mjs), with no
# peer: npm's registry, where nats.js is, cannot be reached from these machines; and through the
# Swift client (RunnelClient) over TCP (bench/clients/swift, built in release), with no peer
# either: NATS has no Swift client installable on these machines.
#
#   bench/clients/run.sh [--runneld BIN] [--reps N] [--count N]
#
# Installs nats-py from PyPI when missing; bench/loadgen/servers.sh installs the peers from
# Debian, builds runneld (release, under flock /tmp/runnel-build.lock; skipped with --runneld)
# and starts runneld and nats-server on loopback (ports 7611 and 7613); runs each client in each mode
# (iterator, callback; the Swift client: iterator) N times (3 by default), interleaved, COUNT
# values each (200,000), stops both servers by PID, and prints the median msgs/s of each and
# runnel's ratio to nats-py. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
count=200000
runneld=
while (($#)); do
    case $1 in
    --runneld) runneld=$(realpath "$2"); shift ;;
    --reps) reps=$2; shift ;;
    --count) count=$2; shift ;;
    *) echo "usage: $0 [--runneld BIN] [--reps N] [--count N]" >&2; exit 2 ;;
    esac
    shift
done

# A Debian python3 needs pip's --break-system-packages.
python3 -c 'import nats' 2>/dev/null || python3 -m pip install --quiet nats-py \
    || python3 -m pip install --quiet --break-system-packages nats-py
# The peers installed and runneld built (build_tools), start_server, wait_started, and the
# servers stopped by PID at exit.
source bench/loadgen/servers.sh
build_tools
# The Swift client's measurement, a package of its own (bench/clients/swift), in release.
(cd bench/clients/swift && flock /tmp/runnel-build.lock swift build -c release >/dev/null)
swift_bench=bench/clients/swift/.build/release/ThroughputSwift
start_server runnel
start_server nats
wait_started runnel nats
# The JavaScript client speaks WebSocket: a runneld with its HTTP front door.
"$runneld" --listen 127.0.0.1:7617 --http-listen 127.0.0.1:7618 --log-level warning 2>"$work/runnel-ws.log" &
started_pids+=("$!")
for _ in $(seq 1 100); do nc -z 127.0.0.1 7618 2>/dev/null && break; sleep 0.1; done
# Node 20 has a WebSocket with --experimental-websocket; later ones without.
node=(node)
node -e 'if (typeof WebSocket === "undefined") process.exit(1)' 2>/dev/null || node+=(--experimental-websocket)

for rep in $(seq 1 "$reps"); do
    for mode in iterator callback; do
        python3 bench/clients/throughput.py runnel "runnel://127.0.0.1:${port[runnel]}" "$mode" --count "$count" \
            >>"$work/results"
        python3 bench/clients/throughput.py nats "nats://127.0.0.1:${port[nats]}" "$mode" --count "$count" \
            >>"$work/results"
        "${node[@]}" bench/clients/throughput.mjs ws://127.0.0.1:7618/ws "$mode" "$count" >>"$work/results"
    done
    "$swift_bench" "runnel://127.0.0.1:${port[runnel]}" "$count" >>"$work/results"
    echo "repetition $rep of $reps done" >&2
done

describe_servers
echo "nats-py $(python3 -m pip show nats-py 2>/dev/null | awk '/^Version/ {print $2}'); $(python3 --version); node $(node --version)"
python3 - "$work/results" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
median = {}
for client in ("runnel", "nats"):
    for mode in ("iterator", "callback"):
        median[client, mode] = statistics.median(r["msgs_per_s"] for r in rows if (r["client"], r["mode"]) == (client, mode))
for client in ("runnel.js",):
    for mode in ("iterator", "callback"):
        median[client, mode] = statistics.median(r["msgs_per_s"] for r in rows if (r["client"], r["mode"]) == (client, mode))
swift = statistics.median(r["msgs_per_s"] for r in rows if r["client"] == "runnel.swift")
print(f"{'mode':10} {'runnel msgs/s':>14} {'nats-py msgs/s':>15} {'runnel/nats-py':>15} {'runnel.js msgs/s':>17}")
for mode in ("iterator", "callback"):
    runnel, nats, js = median["runnel", mode], median["nats", mode], median["runnel.js", mode]
    print(f"{mode:10} {runnel:>14,.0f} {nats:>15,.0f} {runnel / nats:>14.2f}x {js:>17,.0f}")
print(f"Swift client (RunnelClient, iterator, no peer): {swift:,.0f} msgs/s")
EOF
