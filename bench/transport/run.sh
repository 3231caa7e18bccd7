#!/bin/sh
# Builds the echo server (release) and the C client, runs the client against the server for a
# few configurations, then stops the server with SIGTERM (it shuts its loop down cleanly).
# Usage: bench/transport/run.sh [port=7790] [seconds=4]
set -e
here=$(cd "$(dirname "$0")" && pwd)
port=${1:-7790}
seconds=${2:-4}
cd "$here"
swift build -c release --package-path "$here" >/dev/null
cc -O2 -Wall -o "$here/.build/client" "$here/client.c"
"$here/.build/release/transport-echo" "$port" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' EXIT
sleep 0.5
for config in "1 16384" "1 65536" "4 16384" "16 4096"; do
    set -- $config
    "$here/.build/client" "$port" "$1" "$seconds" "$2"
done
