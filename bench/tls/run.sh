#!/usr/bin/env bash
# Runnel against Redis pub/sub over TLS, with each one's plaintext figure beside it, in one
# run, driven by the same load generator (bench/loadgen/loadgen.c with --tls-ca).
#
#   bench/tls/run.sh [--reps N] [--quick]
#
# Makes a CA and a server certificate (P-256) with openssl, builds runneld (release) and
# loadgen, starts runneld (listen + tls_listen) and redis-server (port + tls-port, the same
# certificate, no client certificates) on loopback, and runs K = 1, 10 subscribers x B = 64,
# 1024 bytes as fast as each sustains (the publisher keeps a bounded window in flight), for
# four servers: runnel-tls, redis-tls, runnel, redis. Interleaved, N times (3 by default);
# the table gives medians of delivered messages per second, and the server's CPU time per
# delivery. Both servers do their I/O on one thread (Redis 7's default io-threads 1). The
# servers are stopped by PID at the end. Not part of CI: timings depend on the machine and on
# whatever else it is doing.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3
deliveries=4000000
while (($#)); do
    case $1 in
    --reps) reps=$2; shift ;;
    --quick) reps=1; deliveries=300000 ;;
    *) echo "usage: $0 [--reps N] [--quick]" >&2; exit 2 ;;
    esac
    shift
done

command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }
flock /tmp/runnel-build.lock swift build -c release --product runneld >/dev/null
cc -O2 -Wall -Wextra -o .build/loadgen bench/loadgen/loadgen.c -lpthread -lssl -lcrypto

work=$(mktemp -d)
pids=()
stop_servers() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_servers EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=bench CA' \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=127.0.0.1' \
    -addext 'subjectAltName=IP:127.0.0.1' -addext 'basicConstraints=CA:FALSE' \
    -CA "$work/ca.pem" -CAkey "$work/ca.key" -keyout "$work/server.key" -out "$work/server.pem" 2>/dev/null

declare -A port=([runnel]=7621 [runnel-tls]=7622 [redis]=7623 [redis-tls]=7624)
cat >"$work/runneld.toml" <<TOML
tls_listen = "127.0.0.1:${port[runnel-tls]}"
tls_cert_file = "$work/server.pem"
tls_key_file = "$work/server.key"
log_level = "warning"
TOML
./.build/release/runneld --config "$work/runneld.toml" --listen "127.0.0.1:${port[runnel]}" --http-listen "" \
    2>"$work/runneld.log" &
runneld_pid=$!
redis-server --port "${port[redis]}" --tls-port "${port[redis-tls]}" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --tls-cert-file "$work/server.pem" --tls-key-file "$work/server.key" \
    --tls-ca-cert-file "$work/ca.pem" --tls-auth-clients no --logfile "$work/redis.log" &
redis_pid=$!
pids=("$runneld_pid" "$redis_pid")
declare -A pid=([runnel]=$runneld_pid [runnel-tls]=$runneld_pid [redis]=$redis_pid [redis-tls]=$redis_pid)
for server in "${!port[@]}"; do
    for _ in $(seq 1 100); do nc -z 127.0.0.1 "${port[$server]}" 2>/dev/null && break; sleep 0.1; done
    nc -z 127.0.0.1 "${port[$server]}" || { echo "$server did not start" >&2; exit 1; }
done

echo "runneld $(git rev-parse --short HEAD), $(redis-server --version | cut -d' ' -f1-3), $(openssl version | cut -d' ' -f1-2)"
echo "$(nproc) cores, $(uname -r); $reps repetitions, interleaved; medians"

servers=(runnel-tls redis-tls runnel redis)
results=$work/results.tsv
: >"$results"
cells=("1 64" "10 64" "1 1024" "10 1024")
for rep in $(seq 1 "$reps"); do
    for cell in "${cells[@]}"; do
        read -r k b <<<"$cell"
        msgs=$((deliveries / k))
        ((b > 64)) && msgs=$((msgs / 2))
        for server in "${servers[@]}"; do
            tls=()
            [[ $server == *-tls ]] && tls=(--tls-ca "$work/ca.pem")
            line=$(.build/loadgen --proto "${server%-tls}" --port "${port[$server]}" --subs "$k" --size "$b" \
                --msgs "$msgs" --subject "bench.$server.$k.$b.$rep" --watch-pid "${pid[$server]}" --timeout 10 \
                "${tls[@]}") || true
            printf '%s\t%s\t%s\t%s\t%s\n' "$server" "$k" "$b" "$rep" "$line" >>"$results"
            printf '  %-10s K=%-3s B=%-4s #%s %s\n' "$server" "$k" "$b" "$rep" "$line" >&2
        done
    done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    server, k, b, _, fields = line.rstrip("\n").split("\t")
    values = dict(field.split("=") for field in fields.split())
    if not values or values["delivered"] != values["expected"]:
        continue  # an incomplete run is left out (and was reported above)
    rate = float(values["msgs_per_s"])
    rows.setdefault((int(k), int(b), server), []).append((rate, float(values["server_cpu_s"]) / int(values["delivered"])))
print()
print("| K x B | runnel-tls | redis-tls | runnel-tls / redis-tls | runnel | redis | runnel-tls / runnel | CPU ns per delivery: runnel-tls / redis-tls / runnel |")
print("|---|---|---|---|---|---|---|---|")
for k, b in ((1, 64), (10, 64), (1, 1024), (10, 1024)):
    rate = {s: statistics.median(r for r, _ in rows.get((k, b, s), [(0, 0)])) for s in ("runnel-tls", "redis-tls", "runnel", "redis")}
    cpu = {s: statistics.median(c for _, c in rows.get((k, b, s), [(0, 0)])) * 1e9 for s in ("runnel-tls", "redis-tls", "runnel")}
    ratio = lambda x, y: f"{x / y:.2f}" if y else "-"
    print(f"| {k} x {b} B | {rate['runnel-tls'] / 1e6:.2f} M | {rate['redis-tls'] / 1e6:.2f} M | "
          f"{ratio(rate['runnel-tls'], rate['redis-tls'])} | {rate['runnel'] / 1e6:.2f} M | {rate['redis'] / 1e6:.2f} M | "
          f"{ratio(rate['runnel-tls'], rate['runnel'])} | {cpu['runnel-tls']:.0f} / {cpu['redis-tls']:.0f} / {cpu['runnel']:.0f} |")
PY
grep -v '^$' "$work/runneld.log" | head -5 || true
