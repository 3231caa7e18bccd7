#!/usr/bin/env bash
# Soak test (not in CI): runneld under mixed load with connection churn for MINUTES (30 by
# default); prints the server's RSS and state over time, totals and every error seen, and
# exits non-zero if there was one. See soak.py for what runs.
#   bench/soak/run.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-30}
port=7620
command -v python3 >/dev/null || { apt-get update -qq && apt-get install -y -qq python3; }
swift build -c release --product runneld >/dev/null
cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto
log=$(mktemp)
./.build/release/runneld --listen "127.0.0.1:$port" --http-listen "" --log-level warning 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 50); do nc -z 127.0.0.1 $port 2>/dev/null && break; sleep 0.1; done
status=0
python3 bench/soak/soak.py --port $port --pid $server --minutes "$minutes" --loadgen .build/loadgen || status=$?
kill -0 $server 2>/dev/null || { echo "runneld died during the soak" >&2; status=1; }
echo "runneld's log (warnings and worse): $(grep -c . "$log") lines"
head -20 "$log"
exit $status
