#!/usr/bin/env bash
# runneld in a cluster (three nodes sharing plain subjects through one nats-server) against
# NATS alone and Redis pub/sub, and one node's own fan-out standalone and in the cluster, in
# one run, driven by the same load generator (bench/loadgen/loadgen.c).
#
#   bench/cluster/run.sh [--runneld BIN] [--reps N] [--rate R] [--quick] [--pin] [--pairs N]
#                        [--deliveries N] [--setups "cluster nats redis standalone clustered"]
#
# Installs redis-server and nats-server from Debian if missing, builds runneld (release, under
# the shared build lock) unless --runneld gives one, and loadgen; starts on loopback a
# nats-server with JetStream (the cluster's, port 7640), three runneld nodes in one cluster
# (node-a 7641, node-b 7642, node-c 7643), a standalone runneld of the same binary (7644), a
# second nats-server (7645) and redis-server (7646). Every runneld has loops = 1 and no HTTP
# front door. K = 10 subscribers, 64-byte values throughout:
#
#   fan-out   cluster: the publisher on node-a, the subscribers on node-b and node-c (5 each,
#             loadgen --sub-ports), so every value goes node-a -> NATS -> node-b, node-c ->
#             subscribers; nats: publisher and subscribers on one nats-server; redis: the same
#             on redis-server. As fast as each sustains (the publisher keeps a bounded window
#             in flight; 6 M deliveries, --deliveries), then at one fixed rate for all, R publishes/s
#             (--rate, default 5,000: 50,000 deliveries/s) for 2.5 s, the first 0.5 s not
#             timed, for latency.
#   local     all subscribers and the publisher on one node: the standalone runneld, and
#             node-a, a node of a cluster whose other nodes do not subscribe to the subject
#             (so node-a sends none of its values to NATS). The same two modes.
#
# --setups runs only the setups named (the table leaves the others' cells empty). --pin puts the
# two runneld processes of the own fan-out comparison (the standalone one and node-a) on CPU 0
# and, for those two setups, loadgen on CPU 1 (taskset), so both are measured placed alike.
# Those two are started afresh for each repetition. Then, with both setups chosen, --pairs N
# (30 by default; 0: none) alternated pairs of full-speed runs of those two, --deliveries
# each, the same two processes throughout, the first of a pair alternating: the table gives the
# median of the pairs' ratios: one sample a side is too noisy to judge 10% by (bench/README.md,
# "A node's own fan-out, in pairs").
#
# Every run reads the CPU time (user + system, /proc/PID/stat) of each server process that
# takes part before and after, so the table gives CPU per delivery for the whole setup (for
# the cluster: the three nodes and nats-server) and where it goes. The setups are interleaved,
# the order rotated each repetition, N times (5 by default); the table (table.py) gives
# medians. Everything started is stopped by PID at the end, whatever happens. Not part of CI:
# timings depend on the machine and on whatever else it is doing.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=5
rate=5000
deliveries=6000000
runneld=
pin=false
pairs=30
setups=(cluster nats redis standalone clustered)
while (($#)); do
    case $1 in
    --runneld) runneld=$(realpath "$2"); shift ;;
    --reps) reps=$2; shift ;;
    --rate) rate=$2; shift ;;
    --quick) reps=1; deliveries=300000; pairs=2 ;;
    --pin) pin=true ;;
    --pairs) pairs=$2; shift ;;
    --deliveries) deliveries=$2; shift ;;
    --setups) read -ra setups <<<"$2"; shift ;;
    *) echo "usage: $0 [--runneld BIN] [--reps N] [--rate R] [--quick] [--pin] [--pairs N] [--deliveries N] [--setups LIST]" >&2; exit 2 ;;
    esac
    shift
done

# servers.sh: build_tools (peers, runneld, .build/loadgen), start_server redis|nats,
# wait_started, describe_servers, and stop_servers on exit (every PID in started_pids).
source bench/loadgen/servers.sh
port=([cluster-nats]=7640 [node-a]=7641 [node-b]=7642 [node-c]=7643 [standalone]=7644 [nats]=7645 [redis]=7646)
build_tools

# node NAME: a runneld's configuration file, joined to the cluster unless NAME is standalone.
node_config() {
    local name=$1 file=$work/$1.toml
    printf 'listen = "127.0.0.1:%s"\nhttp_listen = ""\nloops = 1\nlog_level = "warning"\n' "${port[$name]}" >"$file"
    [[ $name == standalone ]] ||
        printf 'cluster_nats = "nats://127.0.0.1:%s"\ncluster_name = "bench"\nnode_name = "%s"\n' \
            "${port[cluster-nats]}" "$name" >>"$file"
    echo "$file"
}

if ! "$runneld" --config "$(node_config node-a)" --check-config >/dev/null 2>"$work/check.log"; then
    echo "$runneld refuses a cluster configuration: $(tail -1 "$work/check.log")" >&2
    exit 1
fi
nats-server -a 127.0.0.1 -p "${port[cluster-nats]}" -js -sd "$work/jetstream" -l "$work/cluster-nats.log" &
pid[cluster-nats]=$!
started_pids+=("$!")
wait_started cluster-nats
# on_cpu NAME: the command prefix that pins NAME's process under --pin (CPU 0 for the servers
# compared, CPU 1 for the load generator driving them).
on_cpu() {
    case $pin:$1 in
    true:node-a | true:standalone) echo taskset -c 0 ;;
    true:loadgen-local) echo taskset -c 1 ;;
    esac
}
# start_node NAME: starts that runneld. await_nodes NAME...: waits until each listens (a node
# that cannot reach NATS exits after cluster_connect_timeout, 10 s: says what it said). Then
# await_cluster: waits until node-a counts three nodes (they hear of each other through
# heartbeats), its stats in $cluster.
start_node() {
    $(on_cpu "$1") "$runneld" --config "$(node_config "$1")" 2>>"$work/$1.log" &
    pid[$1]=$!
    started_pids+=("$!")
}
await_nodes() {
    local name
    for name in "$@"; do
        for _ in $(seq 1 150); do
            nc -z 127.0.0.1 "${port[$name]}" 2>/dev/null && break
            kill -0 "${pid[$name]}" 2>/dev/null || break
            sleep 0.1
        done
        nc -z 127.0.0.1 "${port[$name]}" 2>/dev/null ||
            { echo "$name did not start; its log: $(tail -3 "$work/$name.log")" >&2; exit 1; }
    done
}
await_cluster() {
    for _ in $(seq 1 60); do
        cluster=$(echo '{"op":"stats"}' | nc -q 1 127.0.0.1 "${port[node-a]}" | grep -o '"cluster":{[^}]*}' || true)
        [[ $cluster == *'"link":"up","nodes":3'* ]] && return
        sleep 0.5
    done
    echo "node-a does not see three nodes: ${cluster:-no cluster in its stats}" >&2
    exit 1
}
for name in node-a node-b node-c standalone; do start_node "$name"; done
start_server nats
start_server redis
await_nodes node-a node-b node-c standalone
wait_started nats redis
await_cluster

describe_servers | sed 's/runnel.s loops:.*/every runneld: loops = 1/'
echo "node-a's stats: $cluster"
$pin && echo "pinned: node-a and the standalone runneld on CPU 0, loadgen driving them on CPU 1"
echo "$reps repetitions, interleaved; medians; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

results=$work/results.tsv
: >"$results"
ticks_per_s=$(getconf CLK_TCK)

# cpu_ticks PID: the process's CPU time so far (user + system), in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

# run SETUP MODE REP MSGS RATE: one loadgen run, its line and each taking-part server's CPU
# seconds (cpu_NAME=S) appended to $results.
run() {
    local setup=$1 mode=$2 rep=$3 msgs=$4 r=$5 args servers
    case $setup in
    cluster)
        args=(--proto runnel --port "${port[node-a]}" --sub-ports "${port[node-b]},${port[node-c]}")
        servers=(node-a node-b node-c cluster-nats)
        ;;
    nats | redis) args=(--proto "$setup" --port "${port[$setup]}"); servers=("$setup") ;;
    standalone) args=(--proto runnel --port "${port[standalone]}"); servers=(standalone) ;;
    clustered) args=(--proto runnel --port "${port[node-a]}"); servers=(node-a cluster-nats) ;;
    esac
    ((r > 0)) && args+=(--rate "$r" --warmup 0.5)
    local -A before
    local s line cpu= client=()
    [[ $setup == standalone || $setup == clustered ]] && read -ra client <<<"$(on_cpu loadgen-local)"
    for s in "${servers[@]}"; do before[$s]=$(cpu_ticks "${pid[$s]}"); done
    line=$("${client[@]}" .build/loadgen "${args[@]}" --subs 10 --size 64 --msgs "$msgs" --subject "bench.$setup.$mode.$rep" \
        --watch-pid "${pid[${servers[0]}]}" --timeout 10) || true
    for s in "${servers[@]}"; do
        cpu+=" cpu_$s=$(awk -v a="${before[$s]}" -v b="$(cpu_ticks "${pid[$s]}")" -v t="$ticks_per_s" 'BEGIN { printf "%.2f", (b - a) / t }')"
    done
    printf '%s\t%s\t%s\t%s%s\n' "$setup" "$mode" "$rep" "$line" "$cpu" >>"$results"
    printf '  %-10s %-4s #%s %s%s\n' "$setup" "$mode" "$rep" "$line" "$cpu" >&2
}

for rep in $(seq 1 "$reps"); do
    # The two runneld of the own fan-out comparison are started afresh each repetition, so its
    # medians are over as many pairs of processes, not one (bench/README.md, "A node's own
    # fan-out, in pairs", for what the pairs below showed of that).
    if ((rep > 1)); then
        kill "${pid[node-a]}" "${pid[standalone]}"
        wait "${pid[node-a]}" "${pid[standalone]}" 2>/dev/null || true
        start_node node-a
        start_node standalone
        await_nodes node-a standalone
        await_cluster
    fi
    by=$(((rep - 1) % ${#setups[@]}))
    order=("${setups[@]:by}" "${setups[@]:0:by}")
    for setup in "${order[@]}"; do run "$setup" max "$rep" $((deliveries / 10)) 0; done
    # 2.5 s of traffic; the first 0.5 s warms the connections up and is not timed.
    for setup in "${order[@]}"; do run "$setup" rate "$rep" $((rate * 5 / 2)) "$rate"; done
done

# The own fan-out in pairs: both processes stay, each pair's two runs are next to each other in
# time, and which goes first alternates.
if [[ " ${setups[*]} " == *" standalone "* && " ${setups[*]} " == *" clustered "* ]]; then
    for i in $(seq 1 "$pairs"); do
        if ((i % 2)); then pair=(standalone clustered); else pair=(clustered standalone); fi
        for setup in "${pair[@]}"; do run "$setup" pair "$i" $((deliveries / 10)) 0; done
    done
fi

python3 bench/cluster/table.py "$results" "$rate"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine's, the run's own load included)"
for name in node-a node-b node-c standalone; do
    grep -v '^$' "$work/$name.log" | head -3 | sed "s/^/$name: /" || true
done
