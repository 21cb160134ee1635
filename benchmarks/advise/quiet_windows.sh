#!/usr/bin/env bash
# Quiet windows for several applications in one command (issue 34's wall-time bar on each):
# sequential_time.py's blocks for a list of (application, mode, minutes), one after the other,
# one TSV each, then every verdict (sequential_time.py --read).
#
#   bash benchmarks/advise/quiet_windows.sh OUT plan    "examl:12 qe:12 hpcc:pass:6 openfoam@100:8"
#   bash benchmarks/advise/quiet_windows.sh OUT prepare "..."   # before the window (below)
#   bash benchmarks/advise/quiet_windows.sh OUT run     "..."   # in the window: only the blocks
#   bash benchmarks/advise/quiet_windows.sh OUT read    "..."   # the verdicts again
#
# A pair is APP[@CELLS][:MODE]:MINUTES: APP one of sequential_time.py's (openfoam lammps examl qe
# hpcc), MODE `profiled` (the default) or `pass` (preloaded, profiling off), MINUTES: no block
# starts after them (they include the pair's two unrecorded first runs; its last block comes on
# top: 5-15 s); @CELLS: OpenFOAM's mesh, CELLS x CELLS (default 40, the bar's), in its own
# directory OUT/openfoam-CELLS (OUT/cavity is the 40x40 case). OpenFOAM runs 200 steps, LAMMPS 250.
# BLOCKS=N: at most N blocks a pair (a dry run's few; default no limit but the minutes).
#
# prepare: installs the applications (install.sh, openfoam.sh), builds libcolltune (or takes
# LIB=path) and writes its path to OUT/windows-lib, makes every input (ExaML's parse, the OpenFOAM
# cases) and runs each pair's application once plain and once in its mode (sequential_time.py
# --check): nothing is built or prepared in the window. run: refuses a pair whose TSV exists (an
# earlier window's data; APPEND=1 adds blocks to it), writes OUT/windows-run.log (each block's
# four wall times) and, per pair, the TSV; then `read`: every verdict, each also into the TSV's
# .txt beside it. Not niced: run it with nothing else running; a dry run: `nice -n 19 bash ...`.
# PYTHON: the interpreter (default this tree's .venv/bin/python, else python3), run with this tree's src.
set -uo pipefail
[ $# -eq 3 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=$(realpath -m "$1"); action=$2; pairs=$3
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
[ -x "$py" ] || py=python3
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
seq_time=("$py" "$here/sequential_time.py")

# One pair's fields: app, cells (empty: the bar's 40), mode, minutes, its work directory and TSV.
parse() {
    local spec=$1 head rest
    IFS=: read -r head mode minutes rest <<< "$spec"
    if [ -z "${minutes:-}" ]; then minutes=$mode; mode=profiled; fi
    app=${head%@*}; cells=""; [ "$head" != "$app" ] && cells=${head#*@}
    [ "$cells" = 40 ] && cells=""
    case "$app" in openfoam|lammps|examl|qe|hpcc) ;; *) echo "$spec: no application '$app'" >&2; return 1;; esac
    case "$mode" in profiled|pass) ;; *) echo "$spec: mode '$mode' is neither profiled nor pass" >&2; return 1;; esac
    [[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "$spec: minutes '$minutes'" >&2; return 1; }
    [ -z "$cells" ] || { [ "$app" = openfoam ] && [[ "$cells" =~ ^[0-9]+$ ]]; } \
        || { echo "$spec: @CELLS is OpenFOAM's (a number)" >&2; return 1; }
    [ -z "${rest:-}" ] || { echo "$spec: APP[@CELLS][:MODE]:MINUTES" >&2; return 1; }
    dir=$out; [ -n "$cells" ] && dir=$out/openfoam-$cells
    args=(--app "$app"); [ -n "$cells" ] && args+=(--cells "$cells")
    [ "$mode" = pass ] && args+=(--pass)
    suffix=""; [ "$mode" = pass ] && suffix=-pass
    tsv=$dir/seq-$app${cells:+-${cells}cells}$suffix.tsv   # sequential_time.py's tsv_name
}

# every pair's syntax before anything runs, and one TSV a pair (two would write the same file)
declare -A seen=()
for spec in $pairs; do
    parse "$spec" || exit 2
    [ -z "${seen[$tsv]:-}" ] || { echo "$spec and ${seen[$tsv]}: the same TSV ${tsv#"$out"/}" >&2; exit 2; }
    seen[$tsv]=$spec
done

case "$action" in
plan)
    total=0
    for spec in $pairs; do
        parse "$spec"
        where=OUT; [ "$dir" = "$out" ] || where=OUT/${dir#"$out"/}
        echo "$spec: sequential_time.py $where ${args[*]} --minutes $minutes -> $where/${tsv##*/}"
        total=$(awk -v a="$total" -v b="$minutes" 'BEGIN { print a + b }')
    done
    echo "blocks start within $total minutes (each pair's last block comes on top)"
    ;;
prepare)
    mkdir -p "$out"
    bash "$here/install.sh" || exit 1
    if [ -n "${LIB:-}" ]; then lib=$LIB
    else lib=$("$py" -c "from colltune.mpi import build, libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)") || exit 1
    fi
    [ -f "$lib" ] || { echo "no $lib" >&2; exit 1; }
    echo "$lib" > "$out/windows-lib"
    declare -A made=()
    for spec in $pairs; do
        parse "$spec"
        if [ "$app" = openfoam ] && [ -z "${made[$dir]:-}" ]; then
            CELLS=${cells:-40} bash "$here/openfoam.sh" "$dir" prepare 200 || exit 1
            made[$dir]=1
        fi
        echo "== $spec"
        "${seq_time[@]}" "$dir" "${args[@]}" --check --lib "$lib" || exit 1
    done
    echo "prepared: libcolltune $lib (OUT/windows-lib)"
    ;;
run)
    lib=${LIB:-$(cat "$out/windows-lib" 2>/dev/null)}
    [ -f "$lib" ] || { echo "no libcolltune: LIB=path, or first: $0 $1 prepare \"$pairs\"" >&2; exit 1; }
    for spec in $pairs; do
        parse "$spec"
        [ -e "$tsv" ] && [ -z "${APPEND:-}" ] && { echo "$tsv exists (an earlier window): APPEND=1 adds to it" >&2; exit 1; }
        [ "$app" != openfoam ] || [ -d "$dir/cavity/processor1" ] || { echo "$dir/cavity: not prepared" >&2; exit 1; }
    done
    failed=0
    for spec in $pairs; do
        parse "$spec"
        echo "== $spec $(date -u +%H:%M:%S) UTC" | tee -a "$out/windows-run.log"
        "${seq_time[@]}" "$dir" "${args[@]}" --blocks "${BLOCKS:-100000}" --minutes "$minutes" --lib "$lib" \
            --no-report ${APPEND:+--append} >> "$out/windows-run.log" 2>&1 \
            || { echo "$spec: sequential_time.py failed (OUT/windows-run.log)" | tee -a "$out/windows-run.log"; failed=1; }
    done
    echo "== end $(date -u +%H:%M:%S) UTC" | tee -a "$out/windows-run.log"
    bash "$here/quiet_windows.sh" "$out" read "$pairs" || failed=1
    exit $failed
    ;;
read)
    failed=0
    for spec in $pairs; do
        parse "$spec"
        echo "== $spec (${tsv#"$out"/})"
        "${seq_time[@]}" "$dir" "${args[@]}" --read "$tsv" | tee "${tsv%.tsv}.txt" || failed=1
    done
    exit $failed
    ;;
*)
    echo "$action: plan, prepare, run or read" >&2; exit 2
    ;;
esac
