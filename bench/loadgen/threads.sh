#!/usr/bin/env bash
# How runneld's CPU is spread over its threads (#44, "One loop owns each connection"): one
# publisher and K subscribers, no publish window (loadgen --no-window, as nowindow.sh), on
# runneld with 1, 2 and 4 loops.
#
#   bench/loadgen/threads.sh --runneld BINARY [--loops "1 2 4"] [--reps N] [--cells "K B,K B"] [--idle N]
#                            [--publishers N] [--quick]
#
# For every repetition, cell and loops value (interleaved in that order) a fresh runneld is
# started with --loops L, so each run places its connections the same way, and stopped after
# the run. Just before and just after loadgen, thread_share.py reads utime + stime of every
# thread in /proc/PID/task/*/stat, so the figures cover the run (connecting and closing
# included) and nothing else (loadgen's own --watch-pid figures, server_cpu_s and peak_rss_kb,
# are in the per-run lines as a check). Cells: K = 10 x B = 64, 1024 by default; 30 M deliveries a run at
# 64 B and 10 M at 1 KiB (a few seconds each); 3 repetitions (--quick: one, with a fifth of the
# messages). One table (thread_share.py table), medians of the runs: deliveries, msgs/s,
# runneld's CPU seconds in all and per delivery, the busiest thread and its share of runneld's
# CPU, and each loop's share (main is loop 0, which owns the protocol; runnel-loop-N the
# others); then an Amdahl model from the busiest thread's share at loops = 4 (s): the speed-up
# at 4, 16 and 64 cores is at most 1 / (s + (1 - s) / n), assuming that thread's work does not
# spread at all and the rest spreads for free. With cells of one size at K = 1 and K > 1 (e.g.
# --cells "1 64,10 64"), the publisher's floor from the loops = 1 runs too: the part of a value's
# CPU only the publisher's loop can do, and the least share that loop can take (thread_share.py).
# Each row's note names the loop the publisher landed on (the thread that read the most).
# Where it lands follows from the order connections arrive in (runneld places each on the loop
# with the fewest); --idle N opens N connections that stay idle through the run before loadgen
# connects, so that its connections, the publisher among them, land elsewhere.
# --publishers N runs N load generators at once, each a publisher and K subscribers on a subject
# of its own, sharing the run's deliveries; their figures are summed into one run
# (thread_share.py combine), and the note names the loop that read the most.
#
# Builds no runneld: --runneld is needed without a release build at .build/release/runneld.
# Builds the load generator when it is missing or older than loadgen.c, under the machine's
# build locks (/tmp/swift-build.lock, then servers.sh's /tmp/runnel-build.lock), so it never
# runs beside a Swift build. runneld and loadgen are stopped by PID at the end, whatever
# happens (bench/loadgen/servers.sh). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
deliveries_64=30000000
deliveries_1k=10000000
runneld=
loops_list="1 2 4"
cells=("10 64" "10 1024")
idle=0
publishers=1
while (($#)); do
    case $1 in
    --runneld) runneld=$(realpath "$2"); shift ;;
    --loops) loops_list=$2; shift ;;
    --reps) reps=$2; shift ;;
    --cells) IFS=, read -r -a cells <<<"$2"; shift ;;
    --idle) idle=$2; shift ;;
    --publishers) publishers=$2; shift ;;
    --quick) reps=1; deliveries_64=6000000; deliveries_1k=2000000 ;;
    *)
        echo "usage: $0 --runneld BINARY [--loops \"1 2 4\"] [--reps N] [--cells \"K B,K B\"] [--idle N] [--publishers N] [--quick]" >&2
        exit 2
        ;;
    esac
    shift
done
if [[ -z $runneld ]]; then
    runneld=$PWD/.build/release/runneld
    [[ -x $runneld ]] || { echo "$0: no $runneld; give one with --runneld BINARY" >&2; exit 2; }
fi

source bench/loadgen/servers.sh
mkdir -p .build
if [[ ! -x .build/loadgen || bench/loadgen/loadgen.c -nt .build/loadgen ]]; then
    flock /tmp/swift-build.lock flock /tmp/runnel-build.lock \
        cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto
fi

# forget_pid PID: takes a process that has ended off the exit trap's list, so that the trap
# never signals a PID the system has since given to another process.
forget_pid() {
    local kept=() p
    for p in "${started_pids[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done
    started_pids=("${kept[@]}")
}

# stop_pid PID: stops one process this script started, and forgets it.
stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget_pid "$1"
}

echo "runneld $runneld (given, $(stat -c %y "$runneld" | cut -d. -f1)); $(nproc) cores, $(uname -r)"
echo "loops: $loops_list; $reps repetitions, interleaved; no publish window; $publishers publisher(s), a subject each; $idle idle connections first; load average $(cut -d' ' -f1-3 /proc/loadavg)"

results=$work/results.tsv
: >"$results"
: >"$work/loadgen.log"
for rep in $(seq 1 "$reps"); do
    for cell in "${cells[@]}"; do
        read -r k b <<<"$cell"
        deliveries=$deliveries_64
        ((b > 64)) && deliveries=$deliveries_1k
        for loops in $loops_list; do
            runneld_loops=$loops
            start_server runnel
            wait_started runnel
            server=${pid[runnel]}
            idle_fds=()
            for _ in $(seq 1 "$idle"); do
                exec {fd}<>"/dev/tcp/127.0.0.1/${port[runnel]}"
                idle_fds+=("$fd")
            done
            python3 bench/loadgen/thread_share.py sample "$server" >"$work/before"
            clients=()
            for p in $(seq 1 "$publishers"); do
                .build/loadgen --proto runnel --port "${port[runnel]}" --subs "$k" --size "$b" \
                    --msgs $((deliveries / k / publishers)) --no-window --timeout 5 \
                    --subject "threads.$loops.$k.$b.$rep.$p" --watch-pid "$server" \
                    >"$work/run.$p.out" 2>"$work/run.$p.err" &
                clients+=($!)
                started_pids+=($!)
            done
            for client in "${clients[@]}"; do
                wait "$client" || true
                forget_pid "$client"
            done
            python3 bench/loadgen/thread_share.py sample "$server" >"$work/after"
            for fd in "${idle_fds[@]}"; do exec {fd}>&-; done
            stop_pid "$server"
            line="$(python3 bench/loadgen/thread_share.py combine "$work"/run.*.out) $(python3 bench/loadgen/thread_share.py diff "$work/before" "$work/after")"
            cat "$work"/run.*.err | sed "s/^/loops=$loops K=$k B=$b: /" >>"$work/loadgen.log"
            rm -f "$work"/run.*.out "$work"/run.*.err
            printf '%s\t%s\t%s\t%s\t%s\n' "$loops" "$k" "$b" "$rep" "$line" >>"$results"
            printf '  loops=%-2s K=%-3s B=%-4s #%s %s\n' "$loops" "$k" "$b" "$rep" "$line" >&2
        done
    done
done

python3 bench/loadgen/thread_share.py table "$results"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
head -5 "$work/loadgen.log"
