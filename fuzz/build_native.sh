#!/usr/bin/env bash
# Build a sanitizer-instrumented copy of kafkafmt's C extension for fuzzing, in fuzz/build/
# (git-ignored; the extension in kafkafmt/_native/ is never touched).
#
#   fuzz/build_native.sh clang   # clang: ASan + UBSan + libFuzzer coverage (-fsanitize=fuzzer-no-link)
#                                #   -> fuzz/build/clang/src (PYTHONPATH) and fuzz/build/clang/asan_with_fuzzer.so (LD_PRELOAD)
#   fuzz/build_native.sh gcc     # gcc: ASan only, via setup.py's KAFKAFMT_SANITIZE=1
#                                #   -> fuzz/build/gcc/src (PYTHONPATH); LD_PRELOAD=$(gcc -print-file-name=libasan.so)
#   fuzz/build_native.sh plain   # an unsanitized copy (for valgrind) -> fuzz/build/plain/src
# KFUZZ_PATCH_DIR=DIR applies DIR/*.patch (patch -p1) to the copy first: to try proposed fixes;
# KFUZZ_BUILD_NAME=NAME builds into fuzz/build/NAME instead of fuzz/build/KIND.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(dirname "$HERE")"
KIND="${1:-clang}"
OUT="$HERE/build/${KFUZZ_BUILD_NAME:-$KIND}"
SRC="$OUT/src"

rm -rf "$SRC"
mkdir -p "$SRC"
# the current work tree's sources (uncommitted edits included), without built artefacts
( cd "$REPO" && tar cf - --exclude='*.so' --exclude='*.c' --exclude='__pycache__' kafkafmt setup.py pyproject.toml README.md ) \
    | ( cd "$SRC" && tar xf - )
# optional: proposed fixes to try under the sanitizers before they land (patch -p1 files)
if [ -n "${KFUZZ_PATCH_DIR:-}" ]; then
    for p in "$KFUZZ_PATCH_DIR"/*.patch; do
        [ -f "$p" ] && ( cd "$SRC" && patch -s -p1 < "$p" ) && echo "applied $p"
    done
fi

case "$KIND" in
clang)
    RT="$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.a)")"
    [ -f "$RT/libclang_rt.fuzzer_no_main-x86_64.a" ] || { echo "need clang's compiler-rt: apt-get install clang libclang-rt-14-dev" >&2; exit 2; }
    # ASan runtime + libFuzzer in one preloadable library (what atheris' setup.py does when it
    # finds clang at install time): the preinit object is dropped, it cannot live in a .so
    TMP="$(mktemp -d)"
    ( cd "$TMP" && ar x "$RT/libclang_rt.asan-x86_64.a" && rm -f asan_preinit.cc.o asan_preinit.cpp.o \
      && ar rcs asan_nopreinit.a ./*.o )
    clang++ -shared -o "$OUT/asan_with_fuzzer.so" \
        -Wl,--whole-archive "$RT/libclang_rt.fuzzer_no_main-x86_64.a" "$TMP/asan_nopreinit.a" -Wl,--no-whole-archive \
        -lpthread -ldl -lrt -lm
    rm -rf "$TMP"
    ( cd "$SRC" && KAFKAFMT_SANITIZE=1 CC=clang LDSHARED="clang -shared" \
        CFLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-sanitize=alignment -g" \
        python setup.py -q build_ext --inplace 2>&1 | grep -v "warning:" | grep -iE "error|Error" || true )
    ;;
gcc)
    ( cd "$SRC" && KAFKAFMT_SANITIZE=1 CC=gcc python setup.py -q build_ext --inplace 2>&1 | grep -iE "error" || true )
    ;;
plain)
    ( cd "$SRC" && CFLAGS="-g" python setup.py -q build_ext --inplace 2>&1 | grep -iE "error" || true )
    ;;
*)
    echo "usage: $0 clang|gcc|plain" >&2; exit 2 ;;
esac
ls "$SRC"/kafkafmt/_native/*.so >/dev/null
echo "built $KIND: PYTHONPATH=$SRC"
