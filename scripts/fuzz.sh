#!/usr/bin/env bash
# Builds the fuzz package (Fuzz/, with -sanitize=fuzzer,address) and runs its eight libFuzzer
# targets one after another, SECONDS_TOTAL split evenly between them (default 70; the seconds
# that do not divide go one each to the first targets).
#
#   scripts/fuzz.sh            # 70 s in all: 9 s for six targets, 8 s for the last two
#   scripts/fuzz.sh 4800       # 10 minutes per target
#   SWIFT=/work/bin/sbuild scripts/fuzz.sh
#
# Each target starts from its seed corpus in Fuzz/Corpus/<target>/ (copied, so the checked-in
# seeds are not changed) plus what earlier runs found in .build-fuzz/corpus/<target>/. Exits
# non-zero if any target finds a crash, an assertion failure, a leak, a timeout or an
# out-of-memory; the input is saved as .build-fuzz/artifacts/<target>-crash-... (see
# Fuzz/README.md for reproducing and minimizing it).
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-70}
SWIFT=${SWIFT:-swift}
targets=(LineFramerFuzzer JSONFuzzer RequestFuzzer ExpressionFuzzer HTTPFuzzer WebSocketFuzzer WebSocketInflateFuzzer
    LazyPathFuzzer)

# SwiftPM names a package after its directory, so in a checkout itself named "fuzz" the root
# package and Fuzz/ would both be "fuzz" and clash. Such a checkout builds a copy of the
# sources from .build-fuzz/src/runnel instead (symbolic links do not help: SwiftPM resolves
# them).
package=Fuzz
if [[ "$(basename "$PWD" | tr '[:upper:]' '[:lower:]')" == fuzz ]]; then
    package=.build-fuzz/src/runnel/Fuzz
    rm -rf .build-fuzz/src/runnel/Sources .build-fuzz/src/runnel/Plugins .build-fuzz/src/runnel/web .build-fuzz/src/runnel/Fuzz/Sources
    mkdir -p .build-fuzz/src/runnel
    git ls-files -z --cached --others --exclude-standard -- Package.swift Package.resolved Sources Plugins web Fuzz |
        xargs -0 tar -cf - | tar -xf - -C .build-fuzz/src/runnel
fi

flags=(-c release -Xswiftc -sanitize=fuzzer,address)
built=$(date +%s)
$SWIFT build --package-path "$package" "${flags[@]}"
echo "fuzz build: $(($(date +%s) - built))s"
bin=$($SWIFT build --package-path "$package" "${flags[@]}" --show-bin-path)
# Swift's crash backtracer would otherwise take over a failing run before libFuzzer saves it.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/lsan.supp}
failed=()
for index in "${!targets[@]}"; do
    target=${targets[index]}
    per=$((total / ${#targets[@]} + (index < total % ${#targets[@]} ? 1 : 0)))
    ((per >= 1)) || per=1
    corpus=.build-fuzz/corpus/$target
    mkdir -p "$corpus" .build-fuzz/artifacts
    cp -n Fuzz/Corpus/"$target"/* "$corpus"/ 2>/dev/null || true
    echo "=== $target: ${per}s"
    # -max_len: room for a long request line or expression; -timeout: a hang of 10 s is a bug.
    if ! "$bin/$target" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix=".build-fuzz/artifacts/$target-" "$corpus" \
        >".build-fuzz/$target.log" 2>&1; then
        failed+=("$target")
        tail -n 60 ".build-fuzz/$target.log"
    fi
    grep -E '^(Done|stat::number_of_executed_units|#[0-9]+ +DONE)' ".build-fuzz/$target.log" || true
done
if ((${#failed[@]} > 0)); then
    echo "fuzz: findings in ${failed[*]} (inputs in .build-fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: no findings"
