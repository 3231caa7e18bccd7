#!/usr/bin/env bash
# Runnel over WebSocket against NATS over WebSocket (and each over its own TCP protocol), and
# Runnel with 10,000 Server-Sent Events subscribers, driven by the same load generator
# (bench/loadgen/loadgen.c, --transport ws | sse).
#
#   bench/websocket/run.sh [--runneld BIN] [--reps N] [--quick] [--no-sse] [--sse-only]
#                          [--sse-subs K] [--sse-rate R] [--sse-seconds S] [--loops "N ..."]
#
# Installs nats-server from Debian if missing, builds runneld (release; skipped with --runneld,
# which runs that binary instead: one with GET /ws, say) and loadgen, then:
#
# 1. WebSocket fan-out: one runneld (TCP protocol and HTTP front door) and one nats-server
#    (client port and `websocket { no_tls: true }` listener) on loopback ports; 1 publisher to
#    K = 1, 10, 100 subscribers x B = 64, 1024 bytes, as fast as each sustains (loadgen's
#    bounded window), for runnel-ws (GET /ws), nats-ws, runnel-tcp and nats-tcp, interleaved,
#    N repetitions (3 by default); medians and the ratios runnel-ws / nats-ws and
#    runnel-ws / runnel-tcp. A runneld without /ws (its answer to the upgrade is not 101) gets
#    no runnel-ws rows, and the table says so.
# 2. SSE: for each repetition a fresh runneld (max_connections above the subscribers), K SSE
#    subscribers (GET /events?subject=S, 10,000 by default) on one subject, fed R values/s
#    (100 by default: 1 M deliveries/s) over TCP for S seconds (10; the first second is not
#    timed): delivered msgs/s, latency percentiles, runneld's resident set before the
#    subscribers connect and at its peak, and its CPU time.
#
# Prints one table. Servers are stopped by PID at the end, whatever happens. Not part of CI:
# timings depend on the machine and on whatever else it is doing.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
deliveries=6000000
runneld=
sse=1
ws=1
sse_subs=10000
sse_rate=100
sse_seconds=10
# The event loops runneld is given (--loops): each SSE repetition runs once per value listed;
# the WebSocket and TCP runs take the first. Empty: runneld's default, one loop per CPU.
loops_list=
while (($#)); do
    case $1 in
    --runneld) runneld=$(realpath "$2"); shift ;;
    --reps) reps=$2; shift ;;
    --quick) reps=1; deliveries=300000; sse_seconds=4 ;;
    --no-sse) sse=0 ;;
    --sse-only) ws=0 ;;
    --sse-subs) sse_subs=$2; shift ;;
    --sse-rate) sse_rate=$2; shift ;;
    --sse-seconds) sse_seconds=$2; shift ;;
    --loops) loops_list=$2; shift ;;
    *)
        echo "usage: $0 [--runneld BIN] [--reps N] [--quick] [--no-sse] [--sse-only] [--sse-subs K] [--sse-rate R] [--sse-seconds S] [--loops \"N ...\"]" >&2
        exit 2
        ;;
    esac
    shift
done

if ! command -v nats-server >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server
fi
if [[ -z $runneld ]]; then
    # One Swift build at a time on this machine (shared with other work).
    flock /tmp/runnel-build.lock swift build -c release --product runneld >/dev/null
    runneld=$PWD/.build/release/runneld
    built="built from $(git rev-parse --short HEAD)"
else
    built="$runneld, given ($(stat -c %y "$runneld" | cut -d. -f1))"
fi
mkdir -p .build
cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto

# Each SSE subscriber is a descriptor in loadgen and one in runneld (both inherit this limit).
ulimit -n "$(ulimit -Hn)"
if ((sse && $(ulimit -n) < sse_subs + 100)); then
    echo "open-file limit $(ulimit -n) is too low for $sse_subs SSE subscribers (raise the hard limit)" >&2
    exit 1
fi

work=$(mktemp -d)
pids=()
stop_servers() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_servers EXIT

declare -A port=([runnel]=7631 [runnel_http]=7632 [nats]=7633 [nats_ws]=7634)
# max_connections: the SSE subscribers, the publisher, and room for the others.
cat >"$work/runneld.toml" <<EOF
max_connections = $((sse_subs + 1000))
log_level = "warning"
EOF
cat >"$work/nats.conf" <<EOF
host: 127.0.0.1
port: ${port[nats]}
websocket { host: 127.0.0.1, port: ${port[nats_ws]}, no_tls: true }
EOF

# start_runneld LOG [LOOPS]: a runneld on the bench ports (on LOOPS event loops when given); its
# PID in $runneld_pid.
start_runneld() {
    "$runneld" --config "$work/runneld.toml" --listen "127.0.0.1:${port[runnel]}" \
        --http-listen "127.0.0.1:${port[runnel_http]}" ${2:+--loops "$2"} 2>>"$1" &
    runneld_pid=$!
    pids+=("$runneld_pid")
    for _ in $(seq 1 100); do curl -sf "127.0.0.1:${port[runnel_http]}/healthz" >/dev/null 2>&1 && return; sleep 0.1; done
    echo "runneld did not start" >&2
    exit 1
}

# stop_pid PID: stops one server and forgets it (so the exit trap kills no reused PID).
stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    local kept=() p
    for p in "${pids[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done
    pids=("${kept[@]}")
}

nats_version=$(nats-server --version | awk '{print $NF}')
echo "runneld $built, nats-server $nats_version"
echo "$(nproc) cores, $(uname -r); $reps repetitions, interleaved; medians"
results=$work/results.tsv
: >"$results"

if ((ws)); then
    read -r first_loops _ <<<"$loops_list"
    start_runneld "$work/runneld.log" "$first_loops"
    declare -A pid=([runnel]=$runneld_pid)
    nats-server -c "$work/nats.conf" -l "$work/nats.log" &
    pid[nats]=$!
    pids+=("${pid[nats]}")
    for _ in $(seq 1 100); do nc -z 127.0.0.1 "${port[nats_ws]}" 2>/dev/null && break; sleep 0.1; done
    nc -z 127.0.0.1 "${port[nats_ws]}" || { echo "nats-server did not start" >&2; exit 1; }

    servers=(runnel-ws nats-ws runnel-tcp nats-tcp)
    # Does this runneld upgrade GET /ws? (curl stops waiting after a second; the code is printed.)
    upgrade=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
        -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Version: 13' \
        "127.0.0.1:${port[runnel_http]}/ws" || true)
    if [[ $upgrade != 101 ]]; then
        echo "this runneld answers GET /ws with $upgrade, not 101: no runnel-ws rows" >&2
        printf 'note\truntime\t%s\n' "runneld answered GET /ws with $upgrade: no runnel-ws runs" >>"$results"
        servers=(nats-ws runnel-tcp nats-tcp)
    fi

    # run SERVER K B REP MSGS: one loadgen run, one line appended to $results.
    run() {
        local server=$1 k=$2 b=$3 rep=$4 msgs=$5 args
        case $server in
        runnel-ws) args=(--proto runnel --transport ws --port "${port[runnel_http]}" --watch-pid "${pid[runnel]}") ;;
        runnel-tcp) args=(--proto runnel --port "${port[runnel]}" --watch-pid "${pid[runnel]}") ;;
        nats-ws) args=(--proto nats --transport ws --port "${port[nats_ws]}" --watch-pid "${pid[nats]}") ;;
        nats-tcp) args=(--proto nats --port "${port[nats]}" --watch-pid "${pid[nats]}") ;;
        esac
        local line
        line=$(.build/loadgen "${args[@]}" --subs "$k" --size "$b" --msgs "$msgs" --timeout 10 \
            --subject "bench.${server/-/.}.$k.$b.$rep" 2>>"$work/loadgen.log") || true
        printf 'ws\t%s\t%s\t%s\t%s\t%s\n' "$server" "$k" "$b" "$rep" "$line" >>"$results"
        printf '  %-10s K=%-3s B=%-4s #%s %s\n' "$server" "$k" "$b" "$rep" "$line" >&2
    }

    cells=("1 64" "10 64" "100 64" "1 1024" "10 1024" "100 1024")
    echo "WebSocket and TCP fan-out, as fast as each server sustains..." >&2
    for rep in $(seq 1 "$reps"); do
        for cell in "${cells[@]}"; do
            read -r k b <<<"$cell"
            msgs=$((deliveries / k))
            ((b > 64)) && msgs=$((msgs / 2))
            ((msgs < 10000)) && msgs=10000
            for server in "${servers[@]}"; do run "$server" "$k" "$b" "$rep" "$msgs"; done
        done
    done
    stop_pid "${pid[runnel]}"
    stop_pid "${pid[nats]}"
fi

if ((sse)); then
    echo "SSE: $sse_subs subscribers, $sse_rate values/s for $sse_seconds s, a fresh runneld per repetition..." >&2
    for rep in $(seq 1 "$reps"); do
        for loops in ${loops_list:-default}; do
            [[ $loops == default ]] && loops=
            start_runneld "$work/runneld-sse.log" "$loops"
            idle_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$runneld_pid/status")
            line=$(.build/loadgen --proto runnel --transport sse --port "${port[runnel_http]}" --pub-port "${port[runnel]}" \
                --subs "$sse_subs" --size 64 --rate "$sse_rate" --msgs $((sse_rate * sse_seconds)) --warmup 1 \
                --timeout 10 --subject "bench.sse.$rep" --watch-pid "$runneld_pid" 2>>"$work/loadgen.log") || true
            stop_pid "$runneld_pid"
            printf 'sse\tsse%s\t%s\t64\t%s\t%s idle_rss_kb=%s rate=%s\n' "${loops:+-$loops}" "$sse_subs" "$rep" "$line" \
                "$idle_kb" "$sse_rate" >>"$results"
            printf '  sse%s K=%s #%s %s idle_rss_kb=%s\n' "${loops:+ loops=$loops}" "$sse_subs" "$rep" "$line" "$idle_kb" >&2
        done
    done
fi

python3 bench/websocket/table.py "$results"
for log in "$work"/runneld*.log "$work/loadgen.log"; do
    [[ -s $log ]] && { echo "$(basename "$log"):"; grep -v '^$' "$log" | head -5; }
done
true
