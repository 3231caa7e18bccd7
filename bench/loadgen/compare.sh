#!/usr/bin/env bash
# Runnel against Redis pub/sub and NATS, side by side in one run, driven by the same load
# generator (bench/loadgen/loadgen.c).
#
#   bench/loadgen/compare.sh [--stages] [--backpressure] [--baseline RUNNELD] [--runneld BIN]
#                            [--reps N] [--quick] [--same-rate] [--cross] [--loops N] [--one-loop]
#                            [--fresh]
#
# Installs redis-server and nats-server from Debian if missing, builds runneld (release, under the
# shared build lock) and
# loadgen, starts the three servers on loopback ports, and runs the matrix K = 1, 10, 100
# subscribers x B = 64, 1024 bytes: first as fast as each server sustains (the publisher keeps
# a bounded window in flight), then at a fixed rate of half that server's measured maximum for
# latency (2.5 s of traffic, of which the first 0.5 s warms the connections up and is not
# timed). Servers are interleaved, the order rotated each repetition so that no server always
# runs right after the same other one (runnel redis nats, then redis nats runnel, ...), N
# times (3 by default); the table gives medians. --stages adds Runnel with a filter + map chain on every
# subscription as a row of its own. --backpressure adds a second runneld configured with
# slow_consumer = "backpressure" (row runnel+backpressure), measured like plain Runnel in every
# mode and compared with Redis; a runneld that refuses that policy is skipped with a message.
# --baseline adds another runneld binary (an earlier build,
# say) as one more server in the rotation, to measure a change against the peers and itself in
# the same run. --quick runs one repetition with fewer messages (a smoke run). --same-rate runs
# the latency part at one rate for every server, half of Redis's maximum, so that a faster
# server is not measured at a higher load than its peers (the filter + map row, which has no
# peer and sustains less than Redis at 64 bytes, stays at half of its own maximum). --cross also
# runs Runnel at half of Redis's maximum and Redis at half of Runnel's, so that the two are
# compared at each of the two rates as well as each at its own (with --backpressure, that row
# at Redis's half too). --runneld BIN runs that binary instead of building one. --loops N runs
# the runnel row, and the baseline's and backpressure's, with --loops N (else runneld's
# default: one loop per CPU); --one-loop adds a row of the same runneld on one loop, which the
# runnel row is compared with (what the hand-offs between loops cost, per delivery). --fresh
# starts each runneld afresh before each of its runs: one runneld kept through every cell places
# each cell's connections where the cells before left the loops' counts and turn times, so at
# several loops a cell's publisher may land on another loop for one build than for another
# (bench/README.md, "One runneld a run"); a runneld's peak memory is then its run's alone.
# The servers (started by bench/loadgen/servers.sh) are stopped by PID at the end, whatever
# happens. Not part of CI: timings depend on the machine and on whatever else it is doing.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
deliveries=6000000
with_stages=0
with_backpressure=0
baseline=
runneld=
same_rate=0
cross=0
one_loop=0
fresh=0
while (($#)); do
    case $1 in
    --stages) with_stages=1 ;;
    --backpressure) with_backpressure=1 ;;
    --reps) reps=$2; shift ;;
    --baseline) baseline=$(realpath "$2"); shift ;;
    --runneld) runneld=$(realpath "$2"); shift ;;
    --quick) reps=1; deliveries=300000 ;;
    --same-rate) same_rate=1 ;;
    --cross) cross=1 ;;
    --loops) runneld_loops=$2; shift ;;
    --one-loop) one_loop=1 ;;
    --fresh) fresh=1 ;;
    *) echo "usage: $0 [--stages] [--backpressure] [--baseline RUNNELD] [--runneld BIN] [--reps N] [--quick] [--same-rate] [--cross] [--loops N] [--one-loop] [--fresh]" >&2; exit 2 ;;
    esac
    shift
done

source bench/loadgen/servers.sh
build_tools
start_server runnel
start_server redis
start_server nats
started=(runnel redis nats)
if ((with_backpressure)) && start_server backpressure; then
    started+=(backpressure)
else
    with_backpressure=0
fi
if [[ -n $baseline ]]; then
    start_server baseline "$baseline"
    started+=(baseline)
fi
if ((one_loop)); then
    start_server loops1
    started+=(loops1)
fi
wait_started "${started[@]}"

describe_servers
echo "$reps repetitions, interleaved; medians"

servers=(runnel redis nats)
((with_stages)) && servers+=(stages)
((with_backpressure)) && servers+=(backpressure)
[[ -n $baseline ]] && servers+=(baseline)
((one_loop)) && servers+=(loops1)
chain='[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":".p"}]'
results=$work/results.tsv
: >"$results"

# run SERVER K B MODE REP MSGS [RATE [LOADGEN OPTIONS...]]: one loadgen run, one line appended
# to $results.
run() {
    local server=$1 k=$2 b=$3 mode=$4 rep=$5 msgs=$6 rate=${7:-0} proto=runnel target=$1 extra=("${@:8}")
    case $server in
    redis | nats) proto=$server ;;
    stages)
        target=runnel
        extra+=(--stages "$chain")
        ;;
    esac
    local line
    ((fresh)) && [[ $proto == runnel ]] && restart_server "$target"
    line=$(.build/loadgen --proto "$proto" --port "${port[$target]}" --subs "$k" --size "$b" --msgs "$msgs" \
        --rate "$rate" --subject "bench.$server.$k.$b.$mode.$rep" --watch-pid "${pid[$target]}" \
        --timeout 10 "${extra[@]}") || true
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$k" "$b" "$mode" "$rep" "$line" >>"$results"
    printf '  %-6s K=%-3s B=%-4s %-4s #%s %s\n' "$server" "$k" "$b" "$mode" "$rep" "$line" >&2
}

cells=("1 64" "10 64" "100 64" "1 1024" "10 1024" "100 1024")
# The servers in repetition $1's order: the list rotated by one more each repetition.
rotated() {
    local by=$((($1 - 1) % ${#servers[@]}))
    order=("${servers[@]:by}" "${servers[@]:0:by}")
}
echo "as fast as each server sustains..." >&2
for rep in $(seq 1 "$reps"); do
    rotated "$rep"
    for cell in "${cells[@]}"; do
        read -r k b <<<"$cell"
        msgs=$((deliveries / k))
        ((b > 64)) && msgs=$((msgs / 2))
        ((msgs < 10000)) && msgs=10000
        for server in "${order[@]}"; do run "$server" "$k" "$b" max "$rep" "$msgs"; done
    done
done

# The median sustained delivery rate of a cell, as a publish rate: deliveries / K / 2.
half_rate() {
    awk -F'\t' -v s="$1" -v k="$2" -v b="$3" '$1==s && $2==k && $3==b && $4=="max" {
        n = split($6, f, " "); for (i = 1; i <= n; i++) if (f[i] ~ /^msgs_per_s=/) { sub(/msgs_per_s=/, "", f[i]); print f[i] } }' "$results" |
        sort -n | awk -v k="$2" '{ v[NR] = $1 } END { m = NR ? v[int((NR + 1) / 2)] : 0; printf "%d", m / k / 2 }'
}

((same_rate)) && echo "at half of Redis's maximum for every server, for latency..." >&2
((same_rate)) || echo "at half of each server's maximum, for latency..." >&2
for rep in $(seq 1 "$reps"); do
    rotated "$rep"
    for cell in "${cells[@]}"; do
        read -r k b <<<"$cell"
        for server in "${order[@]}"; do
            if ((same_rate)) && [[ $server != stages ]]; then
                rate=$(half_rate redis "$k" "$b")
            else
                rate=$(half_rate "$server" "$k" "$b")
            fi
            ((rate > 0)) || continue
            # 2.5 s of traffic; the first 0.5 s warms the connections up and is not timed.
            msgs=$((rate * 5 / 2))
            ((msgs < 2000)) && msgs=2000
            run "$server" "$k" "$b" half "$rep" "$msgs" "$rate" --warmup 0.5
        done
        ((cross)) || continue
        # Each of the two at the other's half rate (modes "atredis" and "atrunnel"), and
        # runnel+backpressure at Redis's.
        pairs=("runnel redis" "redis runnel")
        ((with_backpressure)) && pairs+=("backpressure redis")
        for pair in "${pairs[@]}"; do
            read -r server peer <<<"$pair"
            rate=$(half_rate "$peer" "$k" "$b")
            ((rate > 0)) || continue
            msgs=$((rate * 5 / 2))
            ((msgs < 2000)) && msgs=2000
            run "$server" "$k" "$b" "at$peer" "$rep" "$msgs" "$rate" --warmup 0.5
        done
    done
done

table_args=()
((same_rate)) && table_args=(--same-rate)
python3 bench/loadgen/table.py "$results" "${table_args[@]}"
grep -v '^$' "$work/runnel.log" | head -5 || true
