#!/usr/bin/env bash
# Short CI fuzz run (issue 8): replay the seed corpus through every target, then run each atheris
# harness for SECONDS (default 15; 10 harnesses -> ~3 min). Exits non-zero on any finding; crashing
# inputs are kept in fuzz/crashes/ (replay one with: python fuzz/replay.py TARGET FILE).
#
#   fuzz/run_ci.sh [SECONDS]
#   KFUZZ_ASAN=1 fuzz/run_ci.sh        # on the clang ASan+UBSan build with C coverage (needs clang;
#                                      # builds fuzz/build/clang first, ~20 s)
#   KFUZZ_SKIP=accounting,cdiff fuzz/run_ci.sh   # switch off checks while their known findings are open
#   KAFKAFMT_REAL_CORPUS=PATH          # real broker files to seed from (default ../shared/real-corpus)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
SECONDS_PER="${1:-15}"
TARGETS="${KFUZZ_TARGETS:-decode v2 legacy codecs sidefiles salvage internal avro protobuf json}"
mkdir -p crashes

python3 -c "import atheris" 2>/dev/null \
    || { echo "run_ci: atheris is missing: pip install -e '.[fuzz]'" >&2; exit 2; }

python3 seed_corpus.py || exit 2
python3 fuzz_internal.py --seed corpus/internal >/dev/null || exit 2     # issue 15's schema decoders
python3 fuzz_avro.py --seed corpus/avro >/dev/null || exit 2             # issue 23's Avro kernel
python3 fuzz_protobuf.py --seed corpus/protobuf >/dev/null || exit 2     # issue 24's Protobuf kernel
python3 fuzz_json.py --seed corpus/json >/dev/null || exit 2             # issue 24's JSON kernel

if [ -n "${KFUZZ_ASAN:-}" ]; then
    ./build_native.sh clang || exit 2
    # shellcheck source=env_clang.sh
    source ./env_clang.sh
fi

status=0
echo "== replay of the corpus (deterministic)"
python3 replay.py all --quiet || status=1

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for t in $TARGETS; do
    mkdir -p "$WORK/$t"
    log="$WORK/$t.log"
    # new inputs go to a scratch folder; the seeds are read only
    timeout $((SECONDS_PER + 120)) python3 "fuzz_$t.py" -max_total_time="$SECONDS_PER" -max_len=65536 -timeout=10 \
        -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$HERE/crashes/$t-" "$WORK/$t" "corpus/$t" \
        >"$log" 2>&1
    rc=$?
    runs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
    cov="$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 | grep -oE 'cov: [0-9]+')"
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "== $t: FINDING (exit $rc) after ${runs:-?} executions"
        grep -E -A30 "Uncaught Python exception|ERROR: AddressSanitizer|runtime error|ERROR: libFuzzer" "$log" | head -60
        grep -E "Test unit written to" "$log"
    else
        echo "== $t: ${runs:-?} executions, ${cov:-cov ?}, no finding"
    fi
done
exit $status
