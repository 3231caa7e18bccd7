# The servers the load generator is run against, for compare.sh and nowindow.sh (sourced, not
# run): installs the peers when missing, builds runneld (under the shared build lock) unless a
# binary is given, and the load generator; starts each server on its loopback port and stops
# every one it started by PID when the calling script exits, whatever happens.
#
#   source bench/loadgen/servers.sh   # from the repository's root
#   runneld=/path/to/runneld          # optional: a given binary instead of a build
#   build_tools
#   start_server runnel; start_server redis; start_server nats
#   start_server backpressure || ...  # refused by a runneld without that policy
#   start_server baseline OLD_RUNNELD
#   start_server loops1
#   wait_started runnel redis nats ...
#   restart_server runnel             # a runneld afresh on its port (compare.sh --fresh)
#
# Servers: runnel (runneld with its defaults, or `--loops $runneld_loops` when that is set),
# backpressure (runneld with slow_consumer = "backpressure" in a config file), baseline
# (another runneld binary), both on `--loops $runneld_loops` too when that is set, so that a
# change is measured against its baseline on the same loops; loops1 (this runneld on one event
# loop), redis, nats. Each one's port is ${port[NAME]}, its PID ${pid[NAME]}, its log $work/NAME.log.

declare -A port=([runnel]=7611 [redis]=7612 [nats]=7613 [baseline]=7614 [backpressure]=7615 [loops1]=7616)
declare -A pid
runneld=${runneld:-}
runneld_loops=${runneld_loops:-}
work=$(mktemp -d)
started_pids=()

stop_servers() {
    for p in "${started_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${started_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_servers EXIT

# Installs redis-server and nats-server from Debian when missing; builds runneld (release) when
# $runneld is empty, then sets it, and the load generator as .build/loadgen.
build_tools() {
    if ! command -v redis-server >/dev/null || ! command -v nats-server >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server nats-server
    fi
    if [[ -z $runneld ]]; then
        # One Swift build at a time on this machine (shared with other work).
        flock /tmp/runnel-build.lock swift build -c release --product runneld >/dev/null
        runneld=$PWD/.build/release/runneld
    fi
    mkdir -p .build
    cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto
}

# start_server NAME [BINARY]: starts one server in the background (BINARY: baseline's runneld).
# Returns 1, saying why, when runneld refuses the backpressure configuration (a build before
# that policy).
start_server() {
    local name=$1
    case $name in
    runnel)
        "$runneld" --listen "127.0.0.1:${port[runnel]}" --http-listen "" --log-level warning \
            ${runneld_loops:+--loops "$runneld_loops"} 2>"$work/runnel.log" &
        ;;
    loops1)
        "$runneld" --listen "127.0.0.1:${port[loops1]}" --http-listen "" --log-level warning --loops 1 \
            2>"$work/loops1.log" &
        ;;
    baseline)
        baseline_binary=$2
        "$2" --listen "127.0.0.1:${port[baseline]}" --http-listen "" --log-level warning \
            ${runneld_loops:+--loops "$runneld_loops"} 2>"$work/baseline.log" &
        ;;
    backpressure)
        printf 'slow_consumer = "backpressure"\n' >"$work/backpressure.toml"
        if ! "$runneld" --config "$work/backpressure.toml" --check-config >/dev/null 2>"$work/backpressure.log"; then
            echo "runnel+backpressure skipped: $runneld refuses slow_consumer = \"backpressure\" ($(tail -1 "$work/backpressure.log"))" >&2
            return 1
        fi
        "$runneld" --config "$work/backpressure.toml" --listen "127.0.0.1:${port[backpressure]}" --http-listen "" \
            --log-level warning ${runneld_loops:+--loops "$runneld_loops"} 2>"$work/backpressure.log" &
        ;;
    redis)
        redis-server --port "${port[redis]}" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
            --logfile "$work/redis.log" &
        ;;
    nats)
        nats-server -a 127.0.0.1 -p "${port[nats]}" -l "$work/nats.log" &
        ;;
    *)
        echo "start_server: no server $name" >&2
        return 2
        ;;
    esac
    pid[$name]=$!
    started_pids+=("$!")
}

# restart_server NAME: stops one of the runnelds started and starts it again on its port, so
# that the next run finds no connection placed and no turn timed by the runs before it.
restart_server() {
    local name=$1 old=${pid[$1]} kept=() p
    kill "$old" 2>/dev/null || true
    wait "$old" 2>/dev/null || true
    for p in "${started_pids[@]}"; do [[ $p == "$old" ]] || kept+=("$p"); done
    started_pids=("${kept[@]}")
    start_server "$name" "${baseline_binary:-}"
    wait_started "$name"
}

# wait_started NAME...: waits until each server accepts connections (10 s at most each).
wait_started() {
    local server
    for server in "$@"; do
        for _ in $(seq 1 100); do nc -z 127.0.0.1 "${port[$server]}" 2>/dev/null && break; sleep 0.1; done
        nc -z 127.0.0.1 "${port[$server]}" || { echo "$server did not start" >&2; exit 1; }
    done
}

# One line naming the servers' versions and the machine.
describe_servers() {
    local built="$(git rev-parse --short HEAD), built here"
    [[ $runneld == "$PWD/.build/release/runneld" ]] || built="given ($(stat -c %y "$runneld" | cut -d. -f1))"
    echo "runneld $runneld, $built; $(redis-server --version | cut -d' ' -f1-3), nats-server $(nats-server --version | awk '{print $NF}')"
    echo "$(nproc) cores, $(uname -r); runnel's loops: ${runneld_loops:-its default, one per CPU}"
}
