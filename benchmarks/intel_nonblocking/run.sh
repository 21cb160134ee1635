#!/bin/sh
# Which algorithm Intel MPI 2021.18 runs for each nonblocking and persistent collective under
# each I_MPI_ADJUST_I<COLL> id (the ids the library lists through MPI_T: impi_info -a, "range:
# 0-N"), read from the functions of its libmpi that serve the call: rank 0 of 4 under gdb.
# Usage: sh benchmarks/intel_nonblocking/run.sh OUT [INTEL_PREFIX]   (then summary.py OUT)
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=${2:-$here/../../.mpi/intel}
export I_MPI_ROOT="$prefix" LD_LIBRARY_PATH="$prefix/lib" IMPI_LIB="$prefix/lib/libmpi.so.12"
mkdir -p "$out"
"$prefix/bin/mpicc" -g "$here/every_started.c" -o "$out/every_started"
ranges=$(LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/impi_info" -a |
         awk '/^I_MPI_ADJUST_I[A-Z_]+ *$/ {name=$1} /range:/ && name {split($2, r, "-"); print name "=" r[2]; name=""}')
echo "$ranges" > "$out/ranges.txt"
max=$(echo "$ranges" | cut -d= -f2 | sort -n | tail -1)
for k in $(seq 0 "$max"); do
    set --
    for r in $ranges; do
        [ "$k" -gt 0 ] && [ "$k" -le "${r#*=}" ] && set -- "$@" -genv "${r%=*}" "$k"
    done
    TRACE_OUT="$out/id$k.txt" timeout 300 "$prefix/bin/mpiexec" "$@" -n 1 gdb -q -batch \
        -x "$here/trace_gdb.py" --args "$out/every_started" : -n 3 "$out/every_started" > "$out/id$k.log" 2>&1
    echo "id $k: $(grep -c . "$out/id$k.txt") functions"
done
