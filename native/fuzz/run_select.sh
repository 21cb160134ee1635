#!/usr/bin/env bash
# Fuzz the selection-table parser (native/core/select.c) with libFuzzer + ASan + UBSan.
#
#   native/fuzz/run_select.sh [SECONDS]        default 60
#
# Needs clang and its libFuzzer/sanitizer runtimes: on Debian/Ubuntu, run as root, the script
# installs them (apt-get install clang libclang-rt-14-dev) when either is missing (setup.sh,
# shared with run.sh). Builds into
# build/fuzz-select/, starts from native/fuzz/corpus_select/, keeps new inputs in
# build/fuzz-select/corpus/ and writes crashes as build/fuzz-select/crash-*. Exit status is
# libFuzzer's: non-zero when it found a crash. Figures: benchmarks/learning_runtime/README.md.
set -euo pipefail

seconds="${1:-60}"
. "$(dirname "$0")/setup.sh" fuzz-select

"$clang" -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/native/include" -I"$out/catalog" -I"$root/native/generated" \
    "$here/fuzz_select.c" "$root/native/core/select.c" "$root/native/core/select_draw.c" "$root/native/core/textformat.c" "$out/catalog/ct_catalog.c" \
    -o "$out/fuzz_select"
cd "$out"
rc=0
./fuzz_select -max_total_time="$seconds" -max_len=4096 -timeout=10 -dict="$here/select.dict" \
    -print_final_stats=1 corpus "$here/corpus_select" || rc=$?

# Line coverage of the parser by the corpus the run kept (llvm-cov, when installed).
llvm_cov="$(command -v llvm-cov || true)"
llvm_profdata="$(command -v llvm-profdata || true)"
if [ -n "$llvm_cov" ] && [ -n "$llvm_profdata" ]; then
    "$clang" -std=c11 -O0 -D_GNU_SOURCE -DCT_FUZZ_MAIN -fprofile-instr-generate -fcoverage-mapping \
        -I"$root/native/include" -I"$out/catalog" -I"$root/native/generated" \
        "$here/fuzz_select.c" "$root/native/core/select.c" "$root/native/core/select_draw.c" "$root/native/core/textformat.c" "$out/catalog/ct_catalog.c" -o "$out/cover_select"
    rm -f "$out"/cover-*.profraw
    find corpus "$here/corpus_select" -type f -print0 \
        | LLVM_PROFILE_FILE="$out/cover-%p.profraw" xargs -0 "$out/cover_select" >/dev/null
    "$llvm_profdata" merge -o "$out/cover.profdata" "$out"/cover-*.profraw
    echo "coverage of native/core/select.c by the $(ls corpus | wc -l) inputs of build/fuzz-select/corpus + the seeds:"
    "$llvm_cov" report "$out/cover_select" -instr-profile="$out/cover.profdata" "$root/native/core/select.c" "$root/native/core/select_draw.c"
fi
exit "$rc"
