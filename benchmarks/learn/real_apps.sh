#!/usr/bin/env bash
# colltune learn run on real applications from Debian (issue 12): HPCC and LAMMPS (Debian Open
# MPI 4.1.4 builds) on the embedded Open MPI 5.0.11 and NWChem (Debian MPICH 4.0.2 build) on pip
# MPICH 5.0.2, 2 ranks; installs the packages, then benchmarks/learn/real_apps.py does the rest.
#   sudo bash benchmarks/learn/real_apps.sh [OUT_DIR] [real_apps.py options, e.g. --apps hpcc]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/colltune-learn-apps}
shift || true
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
# hpcc and lammps pull Debian's Open MPI; nwchem-mpich pulls Debian's MPICH and nwchem-data (basis
# sets); lammps-examples has the LJ melt input.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y hpcc nwchem-mpich lammps lammps-examples
export PYTHONPATH=${PYTHONPATH:-src}
exec .venv/bin/python benchmarks/learn/real_apps.py "$OUT" "$@"
