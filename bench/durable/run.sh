#!/usr/bin/env bash
# Durable writes per second, runneld against Redis, in one run with the same load tool
# (bench/durable/durable-load.c): N connections each pipelining acknowledged writes of B-byte
# values, a window of W unacknowledged, to a subject (a stream) of its own that keeps its last
# 100 values.
#
#   bench/durable/run.sh [--reps N] [--msgs M] [--conns N] [--window W] [--size B]
#
# runneld: durable replay subjects of capacity 100, `pub` with a `ref`, fsync = everysec and
# always. Redis 7 (from Debian): `appendonly yes`, `appendfsync everysec` and `always`, `XADD
# key MAXLEN = 100 * v VALUE`, the nearest Redis has to a replay subject that survives a
# restart. Servers alternate (runnel redis runnel redis ...), N repetitions (3 by default); the
# table gives medians. One more connection pings every millisecond during each run: its tail is
# how long the server's loop kept a request waiting while the writes went on. runneld also
# reports its loop's turn lengths (`stats`: the time each loop iteration worked, from its
# wake-up to its next wait): a checkpoint or disk sync that stalled the loop would show
# there. The control row "runnel memory" is the same load on replay subjects that are not
# durable. As fast as possible every turn is long with the work itself, so the same three are
# also run at a fixed 100,000 writes/s, where a turn is short unless something stalls it.
# Not part of CI: timings depend on the machine and the disk.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
msgs=400000
conns=4
window=256
size=64
while (($#)); do
    case $1 in
    --reps) reps=$2; shift ;;
    --msgs) msgs=$2; shift ;;
    --conns) conns=$2; shift ;;
    --window) window=$2; shift ;;
    --size) size=$2; shift ;;
    *) echo "usage: $0 [--reps N] [--msgs M] [--conns N] [--window W] [--size B]" >&2; exit 2 ;;
    esac
    shift
done

command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }
command -v nc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq netcat-openbsd; }
swift build -c release --product runneld >/dev/null
cc -O2 -Wall -Wextra -o .build/durable-load bench/durable/durable-load.c -lpthread

work=$(mktemp -d)
server=
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
runnel_port=7621
redis_port=7622
load=(--conns "$conns" --window "$window" --msgs "$msgs" --size "$size" --capacity 100)

wait_for() {
    for _ in $(seq 200); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "server did not start" >&2
    exit 1
}

run_runnel() {
    local mode=$1 durable=true
    rm -rf "$work/data"
    if [[ $mode == memory ]]; then
        durable=false
        printf 'log_level = "warning"\n' >"$work/runneld.toml"
    else
        printf 'data_dir = "%s"\nfsync = "%s"\nlog_level = "warning"\n' "$work/data" "$mode" >"$work/runneld.toml"
    fi
    .build/release/runneld --config "$work/runneld.toml" --listen "127.0.0.1:$runnel_port" --http-listen "" 2>"$work/runneld.log" &
    server=$!
    wait_for sh -c "echo '{\"op\":\"ping\"}' | nc -q1 127.0.0.1 $runnel_port | grep -q ok"
    for ((i = 0; i < conns; i++)); do
        printf '{"op":"create","subject":"durable.bench.%d","kind":"replay","capacity":100,"durable":%s}\n' "$i" "$durable"
    done | nc -q1 127.0.0.1 "$runnel_port" >/dev/null
    .build/durable-load --proto runnel --port "$runnel_port" --ping-port "$runnel_port" "${load[@]}" \
        "${extra[@]}"
    local stats
    stats=$(echo '{"op":"stats"}' | nc -q1 127.0.0.1 "$runnel_port")
    kill -TERM "$server"
    wait "$server"
    server=
    echo "  stats: ${stats#*\"loop\":}" >&2
    # The loop's turn lengths for the table: p99 and longest, in microseconds.
    sed -n 's/.*"turn_p99_us":\([0-9]*\),"turn_max_us":\([0-9]*\).*/turn_p99_us=\1 turn_max_us=\2/p' <<<"$stats"
}

run_redis() {
    local mode=$1
    rm -rf "$work/redis" && mkdir -p "$work/redis"
    redis-server --port "$redis_port" --save "" --appendonly yes --appendfsync "$mode" --dir "$work/redis" \
        --daemonize no --logfile "$work/redis.log" &
    server=$!
    wait_for redis-cli -p "$redis_port" ping
    .build/durable-load --proto redis --port "$redis_port" --ping-port "$redis_port" "${load[@]}"
    kill -TERM "$server"
    wait "$server" || true
    server=
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

extra=()
declare -A results
for ((rep = 1; rep <= reps; rep++)); do
    line=$(run_runnel memory | tr '\n' ' ')
    echo "  runnel memory #$rep $line" >&2
    results[runnel.memory]+="$line"$'\n'
done
for mode in everysec always; do
    for ((rep = 1; rep <= reps; rep++)); do
        for name in runnel redis; do
            line=$("run_$name" "$mode" | tr '\n' ' ')
            echo "  $name fsync=$mode #$rep $line" >&2
            results[$name.$mode]+="$line"$'\n'
        done
    done
done

extra=(--rate 100000 --msgs 300000)
for ((rep = 1; rep <= reps; rep++)); do
    for mode in memory everysec always; do
        line=$(run_runnel "$mode" | tr '\n' ' ')
        echo "  runnel $mode at 100000/s #$rep $line" >&2
        results[rate.$mode]+="$line"$'\n'
    done
done

echo
echo "durable writes acknowledged per second: $conns connections, window $window, $size-byte values, medians of $reps"
printf '%-10s %-9s %12s %12s %12s %12s %14s %14s\n' server fsync "acks/s" "ping p50 us" "ping p99 us" \
    "ping max us" "turn p99 us" "turn max us"
for mode in memory everysec always; do
    for name in runnel redis; do
        runs=${results[$name.$mode]:-}
        [[ -n $runs ]] || continue
        turn_p99=-
        turn_max=-
        if [[ $name == runnel ]]; then
            turn_p99=$(field turn_p99_us <<<"$runs" | median)
            turn_max=$(field turn_max_us <<<"$runs" | median)
        fi
        printf '%-10s %-9s %12s %12s %12s %12s %14s %14s\n' "$name" "$mode" \
            "$(field acks_per_s <<<"$runs" | median)" "$(field ping_p50_us <<<"$runs" | median)" \
            "$(field ping_p99_us <<<"$runs" | median)" "$(field ping_max_us <<<"$runs" | median)" "$turn_p99" "$turn_max"
    done
    [[ $mode == memory ]] && continue
    a=$(field acks_per_s <<<"${results[runnel.$mode]}" | median)
    b=$(field acks_per_s <<<"${results[redis.$mode]}" | median)
    awk -v a="$a" -v b="$b" -v m="$mode" 'BEGIN { printf "           runnel / redis (fsync %s): x%.2f\n", m, a / b }'
done

echo
echo "runneld at 100,000 writes/s: how long the loop's turns and a ping took, in microseconds (medians of $reps)"
printf '%-9s %12s %12s %12s %12s\n' fsync "turn p99" "turn max" "ping p99" "ping max"
for mode in memory everysec always; do
    runs=${results[rate.$mode]}
    printf '%-9s %12s %12s %12s %12s\n' "$mode" "$(field turn_p99_us <<<"$runs" | median)" \
        "$(field turn_max_us <<<"$runs" | median)" "$(field ping_p99_us <<<"$runs" | median)" \
        "$(field ping_max_us <<<"$runs" | median)"
done
