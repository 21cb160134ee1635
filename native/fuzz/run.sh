#!/usr/bin/env bash
# Fuzz the tuning-profile parser with libFuzzer + ASan + UBSan.
#
#   native/fuzz/run.sh [SECONDS]        default 60; FUZZ_JOBS=N for parallel jobs
#
# Needs clang and libFuzzer (Debian: apt-get install -y clang libclang-rt-14-dev; as root the
# script installs them when missing). Builds into build/fuzz/, starts from the
# committed seed corpus native/fuzz/corpus/ (also the parser's accept/reject test files), keeps
# new inputs in build/fuzz/corpus/ and writes crashes as build/fuzz/crash-*. Exit status is
# libFuzzer's: non-zero when it found a crash.
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/build/fuzz"
clang="${CLANG:-clang}"

# clang and its libFuzzer/sanitizer runtimes (Debian ships them apart: libclang-rt-14-dev),
# installed as root on Debian/Ubuntu when either is missing
fuzzer_rt() { [ -e "$("$clang" -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]; }
if { ! command -v "$clang" >/dev/null 2>&1 || ! fuzzer_rt; } && [ -z "${CLANG:-}" ] \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "run.sh: installing clang and libclang-rt-14-dev (libFuzzer, ASan, UBSan)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=900 \
        clang libclang-rt-14-dev >&2
fi
if ! command -v "$clang" >/dev/null 2>&1; then
    echo "run.sh: clang not found; install it (Debian: apt-get install -y clang libclang-rt-14-dev) or set CLANG=" >&2
    exit 2
fi
python="$(command -v python3 || true)"
[ -x "$root/.venv/bin/python" ] && python="$root/.venv/bin/python"

mkdir -p "$out/catalog" "$out/corpus"
"$python" "$here/gen_names.py" "$out/catalog"
"$clang" -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/native/include" -I"$out/catalog" -I"$root/native/generated" \
    "$here/fuzz_profile.c" "$root/native/core/profile.c" "$root/native/core/profile_rules.c" "$root/native/core/textformat.c" "$out/catalog/ct_catalog.c" \
    -o "$out/fuzz_profile"

parallel=()
if [ -n "${FUZZ_JOBS:-}" ]; then parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
cd "$out"
exec ./fuzz_profile -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -dict="$here/profile.dict" "${parallel[@]}" -print_final_stats=1 corpus "$here/corpus"
