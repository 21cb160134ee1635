#!/usr/bin/env bash
# The applications of benchmarks/advise from Debian, all built against Debian's Open MPI 4.1:
# ExaML (examl), Quantum ESPRESSO (pw.x; quantum-espresso-data ships the examples' pseudopotentials),
# HPCC (hpcc), LAMMPS (lmp); libopenmpi-dev gives mpicc.openmpi (libcolltune and the fusing shim
# are built with it); valgrind for the instruction counts.
#   bash benchmarks/advise/install.sh          (root, or sudo is used)
set -euo pipefail
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
need=()
for pair in examl:/usr/bin/examl quantum-espresso:/usr/bin/pw.x quantum-espresso-data:/usr/share/doc/quantum-espresso-data \
            hpcc:/usr/bin/hpcc lammps:/usr/bin/lmp openmpi-bin:/usr/bin/mpirun.openmpi \
            libopenmpi-dev:/usr/bin/mpicc.openmpi valgrind:/usr/bin/valgrind; do
    [ -e "${pair#*:}" ] || need+=("${pair%%:*}")
done
if [ ${#need[@]} -gt 0 ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y "${need[@]}" \
        || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive \
             apt-get -o DPkg::Lock::Timeout=900 install -y "${need[@]}"; }
fi
