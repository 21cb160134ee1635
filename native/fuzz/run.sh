#!/usr/bin/env bash
# Fuzz the tuning-profile parser with libFuzzer + ASan + UBSan.
#
#   native/fuzz/run.sh [SECONDS]        default 60; FUZZ_JOBS=N for parallel jobs
#
# Needs clang and libFuzzer (Debian: apt-get install -y clang libclang-rt-14-dev; as root the
# script installs them when missing: setup.sh, shared with run_select.sh). Builds into build/fuzz/, starts from the
# committed seed corpus native/fuzz/corpus/ (also the parser's accept/reject test files), keeps
# new inputs in build/fuzz/corpus/ and writes crashes as build/fuzz/crash-*. Exit status is
# libFuzzer's: non-zero when it found a crash.
set -euo pipefail

seconds="${1:-60}"
. "$(dirname "$0")/setup.sh" fuzz

"$clang" -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/native/include" -I"$out/catalog" -I"$root/native/generated" \
    "$here/fuzz_profile.c" "$root/native/core/profile.c" "$root/native/core/profile_rules.c" "$root/native/core/textformat.c" "$out/catalog/ct_catalog.c" \
    -o "$out/fuzz_profile"

parallel=()
if [ -n "${FUZZ_JOBS:-}" ]; then parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
cd "$out"
exec ./fuzz_profile -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -dict="$here/profile.dict" "${parallel[@]}" -print_final_stats=1 corpus "$here/corpus"
