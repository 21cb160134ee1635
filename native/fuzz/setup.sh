# Sourced by run.sh and run_select.sh as `. setup.sh OUT`: sets `here` (native/fuzz), `root`,
# `out` (build/OUT) and `clang`; finds clang and its libFuzzer/sanitizer runtimes (Debian ships
# them apart: libclang-rt-14-dev), installs both as root on Debian/Ubuntu when either is missing,
# and writes the names-only catalog the parsers link with into $out/catalog.
me="$(basename "$0")"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/build/$1"
clang="${CLANG:-clang}"

fuzzer_rt() { [ -e "$("$clang" -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]; }
if { ! command -v "$clang" >/dev/null 2>&1 || ! fuzzer_rt; } && [ -z "${CLANG:-}" ] \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "$me: installing clang and libclang-rt-14-dev (libFuzzer, ASan, UBSan)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=900 \
        clang libclang-rt-14-dev >&2
fi
if ! command -v "$clang" >/dev/null 2>&1; then
    echo "$me: clang not found; install it (Debian: apt-get install -y clang libclang-rt-14-dev) or set CLANG=" >&2
    exit 2
fi
python="$(command -v python3 || true)"
[ -x "$root/.venv/bin/python" ] && python="$root/.venv/bin/python"

mkdir -p "$out/catalog" "$out/corpus"
"$python" "$here/gen_names.py" "$out/catalog"
