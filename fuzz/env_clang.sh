# source me: environment to run the harnesses on the clang ASan+UBSan+coverage build
# (fuzz/build_native.sh clang; KFUZZ_BUILD_NAME=NAME for a build made with that name)
_FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_FUZZ_BUILD="$_FUZZ_DIR/build/${KFUZZ_BUILD_NAME:-clang}"
export LD_PRELOAD="$_FUZZ_BUILD/asan_with_fuzzer.so"
export PYTHONPATH="$_FUZZ_BUILD/src${PYTHONPATH:+:$PYTHONPATH}"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:handle_abort=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
