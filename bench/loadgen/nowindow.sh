#!/usr/bin/env bash
# Fan-out with no publish window: Runnel (default policy, and slow_consumer = "backpressure")
# against Redis pub/sub and NATS, driven by the same load generator (loadgen --no-window).
#
#   bench/loadgen/nowindow.sh [--reps N] [--quick] [--runneld BINARY] [--baseline BINARY]
#                             [--cells "K B,K B"] [--only-runnel] [--read-cost NS]
#
# The publisher writes as fast as each server reads it and K subscribers are drained by one
# client thread, so a server that reads publishes faster than that thread drains K sockets
# has to buffer, push back on the publisher, or drop subscribers. Cells: K = 10, 100 x B = 64,
# 1024 bytes; 30 M deliveries a run at 64 B and 10 M at 1 KiB (a few seconds each); servers
# interleaved, the order rotated each repetition so that no server always runs right after
# the same other one (runnel, backpressure, redis, nats; then backpressure, redis, nats,
# runnel; ...), N repetitions (3 by default;
# --quick: one, with a fifth of the messages). A run ends when every subscriber still
# connected has every message, or after 5 s without progress. One table (nowindow_table.py):
# median delivered msgs/s, deliveries, what was lost and how many subscribers were
# disconnected per run, and runnel+backpressure's msgs/s against Redis's. --baseline adds an
# earlier runneld (defaults too) as a row of its own; --cells runs only the cells listed;
# --only-runnel leaves out the backpressure row and the peers; --read-cost NS has the client
# spend NS ns on every message it reads (loadgen --read-cost), a reader slower than runneld.
#
# Installs the peers, builds runneld (release, under the shared build lock) and the load
# generator, unless --runneld gives a binary; a runneld that refuses slow_consumer =
# "backpressure" (a build before that policy) runs without that row, saying so. The servers
# (bench/loadgen/servers.sh) are stopped by PID at the end, whatever happens. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
deliveries_64=30000000
deliveries_1k=10000000
runneld=
baseline=
only_runnel=
read_cost=()
cells=("10 64" "100 64" "10 1024" "100 1024")
while (($#)); do
    case $1 in
    --reps) reps=$2; shift ;;
    --quick) reps=1; deliveries_64=6000000; deliveries_1k=2000000 ;;
    --runneld) runneld=$(realpath "$2"); shift ;;
    --baseline) baseline=$(realpath "$2"); shift ;;
    --cells) IFS=, read -r -a cells <<<"$2"; shift ;;
    --only-runnel) only_runnel=1 ;;
    --read-cost) read_cost=(--read-cost "$2"); shift ;;
    *)
        echo "usage: $0 [--reps N] [--quick] [--runneld BINARY] [--baseline BINARY] [--cells \"K B,K B\"] [--only-runnel] [--read-cost NS]" >&2
        exit 2
        ;;
    esac
    shift
done

source bench/loadgen/servers.sh
build_tools
servers=(runnel)
start_server runnel
if [[ -n $baseline ]]; then
    start_server baseline "$baseline"
    servers+=(baseline)
fi
if [[ -z $only_runnel ]]; then
    start_server backpressure && servers+=(backpressure)
    start_server redis
    start_server nats
    servers+=(redis nats)
fi
wait_started "${servers[@]}"

describe_servers
echo "$reps repetitions, interleaved, the order rotated each repetition; no publish window"

results=$work/results.tsv
: >"$results"
for rep in $(seq 1 "$reps"); do
    shift_by=$(((rep - 1) % ${#servers[@]}))
    order=("${servers[@]:shift_by}" "${servers[@]:0:shift_by}")
    for cell in "${cells[@]}"; do
        read -r k b <<<"$cell"
        deliveries=$deliveries_64
        ((b > 64)) && deliveries=$deliveries_1k
        for server in "${order[@]}"; do
            proto=runnel
            [[ $server == redis || $server == nats ]] && proto=$server
            line=$(.build/loadgen --proto "$proto" --port "${port[$server]}" --subs "$k" --size "$b" \
                --msgs $((deliveries / k)) --no-window "${read_cost[@]}" --timeout 5 --subject "nowindow.$server.$k.$b.$rep" \
                --watch-pid "${pid[$server]}" 2>"$work/run.err") || true
            sed "s/^/$server K=$k B=$b: /" "$work/run.err" >>"$work/loadgen.log"
            printf '%s\t%s\t%s\t%s\t%s\n' "$server" "$k" "$b" "$rep" "$line" >>"$results"
            printf '  %-12s K=%-3s B=%-4s #%s %s\n' "$server" "$k" "$b" "$rep" "$line" >&2
        done
    done
done

python3 bench/loadgen/nowindow_table.py "$results"
# Subscribers the servers closed, counted by server, cell and what the server said last.
if grep -q 'closed by the server' "$work/loadgen.log"; then
    echo "subscribers closed by the server (all runs):"
    grep 'closed by the server' "$work/loadgen.log" |
        sed -E 's/loadgen: subscriber [0-9]+ closed by the server //; s/ after [0-9]+ of [0-9]+ messages//' |
        sort | uniq -c
fi
grep -v 'closed by the server' "$work/loadgen.log" | head -5 || true
