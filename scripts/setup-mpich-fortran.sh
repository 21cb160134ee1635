#!/usr/bin/env bash
# Fortran for the pip MPICH 5.0.2 (make setup-fortran-mpich; docs/interposer.md "Fortran
# applications"). The wheel ships no Fortran bindings. Debian's MPICH 4.0.2 ships them as
# libmpichfort.so.12, which calls the C MPI_* functions of libmpich.so.12: the same MPICH ABI
# as the wheel's libmpi.so.12. This unpacks Debian's libmpich12 and libmpich-dev (apt-get
# download: nothing is installed into the system, no root needed once apt's lists exist) into
# .mpi/mpich-fortran, relinks libmpichfort to the wheel's libmpi.so.12 (patchelf: NEEDED and
# RUNPATH), and writes bin/mpifort, a gfortran wrapper for it.
#
# Exit 3: something this needs is missing (gfortran, patchelf, apt-get, the wheel); the Fortran
# tests of MPICH then skip and name this step.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MPICH=$ROOT/.mpi/mpich
OUT=$ROOT/.mpi/mpich-fortran
PACKAGES="libmpich12 libmpich-dev"

missing() { echo "setup-fortran-mpich: $1; tests/test_fortran.py's MPICH tests will skip" >&2; exit 3; }

[ -e "$MPICH/lib/libmpi.so.12" ] || missing "$MPICH/lib/libmpi.so.12 is missing (make setup-mpich)"
command -v gfortran >/dev/null || missing "gfortran is missing (make setup-fortran)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || missing "apt-get/dpkg-deb are missing (not Debian)"
if ! command -v patchelf >/dev/null; then
  { apt-get install -y -qq patchelf || { apt-get update -qq && apt-get install -y -qq patchelf; }; } >/dev/null 2>&1 ||
    missing "patchelf is missing (apt-get install patchelf, as root)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download into the current directory; its lists may be missing on a fresh machine
if ! (cd "$tmp" && apt-get download -qq $PACKAGES 2>/dev/null); then
  apt-get update -qq || missing "apt-get update failed (root needed for apt's lists)"
  (cd "$tmp" && apt-get download -qq $PACKAGES) || missing "apt-get download $PACKAGES failed"
fi
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
src=$tmp/root/usr
fort=$(ls "$src"/lib/x86_64-linux-gnu/libmpichfort.so.12.* | head -n 1)
[ -f "$fort" ] || missing "no libmpichfort.so.12 in $PACKAGES"

rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/include" "$OUT/bin"
cp "$fort" "$OUT/lib/libmpichfort.so.12"
ln -s libmpichfort.so.12 "$OUT/lib/libmpichfort.so"
# Debian's libmpichfort needs libmpich.so.12; the wheel names the same ABI libmpi.so.12 and
# finds its libfabric/UCX through its own RUNPATH ($ORIGIN/mpich)
patchelf --replace-needed libmpich.so.12 libmpi.so.12 "$OUT/lib/libmpichfort.so.12"
patchelf --set-rpath '$ORIGIN/../../mpich/lib' "$OUT/lib/libmpichfort.so.12"
cp "$src"/include/x86_64-linux-gnu/mpich/mpif.h "$src"/include/x86_64-linux-gnu/mpich/*.mod "$OUT/include/"
dpkg-deb -f "$(ls "$tmp"/libmpich12_*.deb)" Version > "$OUT/debian-version"

# --allow-shlib-undefined: libmpichfort (MPICH 4.0.2) binds three MPICH 4.0 extensions that
# MPICH 5.0.2 no longer has (PMPIX_Delete_error_class/_code/_string, MPI-4.1's
# MPI_Remove_error_*); bound lazily, they fail only if a program calls them.
cat > "$OUT/bin/mpifort" <<'EOF'
#!/bin/sh
# gfortran with Debian MPICH 4.0.2's Fortran bindings on the pip MPICH 5.0.2 (scripts/setup-mpich-fortran.sh)
here=$(cd "$(dirname "$0")/.." && pwd)
exec gfortran -I"$here/include" "$@" -L"$here/lib" -lmpichfort -Wl,-rpath,"$here/lib" \
  -Wl,-rpath-link,"$here/../mpich/lib" -Wl,--allow-shlib-undefined
EOF
chmod +x "$OUT/bin/mpifort"
echo "setup-fortran-mpich: Debian MPICH $(cat "$OUT/debian-version") Fortran bindings on $(basename "$MPICH") 5.0.2 in $OUT (compile with $OUT/bin/mpifort)"
