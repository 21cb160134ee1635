#!/usr/bin/env bash
# What each mode of libcolltune costs on ExaML and NWChem (issue 26): installs the applications
# and the MPI libraries they were built for from Debian, then runs apps.py (see its docstring).
#   sudo bash benchmarks/learning_runtime/apps.sh OUT_DIR [apps.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: apps.sh OUT_DIR [apps.py options]}
shift
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
# examl pulls Debian's Open MPI 4.1 runtime; libopenmpi-dev gives mpicc.openmpi to build libcolltune
# for it; nwchem-mpich pulls Debian's MPICH and nwchem-data (basis sets); valgrind for --callgrind.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y \
    examl openmpi-bin libopenmpi-dev nwchem-mpich valgrind
export PYTHONPATH=${PYTHONPATH:-src}
exec .venv/bin/python benchmarks/learning_runtime/apps.py "$OUT" "$@"
