"""What a bench run measures and how: the validated settings of a run (one data model).

BenchSettings is stored as JSON with every run (runs.settings) and rebuilt from it by
`--resume`, so fields are only ever added, with defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from colltune import catalog, formats
from colltune.errors import ColltuneError
from colltune.measure.driver_options import DRIVER_FLAGS, StopFields
from colltune.mpi.algorithms import LIBRARY_ALGORITHMS, started_algorithms

# Seed 003, Listing 4.2: collectives whose total data grows with p get the small list, the
# others the large one (collectives the listing lacks follow the same rule).
SIZES_SCALED = (1, 2, 4, 8, 32, 64, 512, 1024, 2048, 4096, 8192, 16384)
SIZES_UNSCALED = (1, 2, 8, 64, 512, 1024, 8192, 16384, 65536, 131072, 1048576, 8388608)
SCALED = frozenset({"allgather", "alltoall", "gather", "scatter"})

# the job file's vocabulary, declared once for both sides in native/spec/formats.toml
DATATYPE_SIZES = formats.JOB_DATATYPE_SIZES
OPS = formats.JOB_OPS


PSEUDO_VARIANTS = ("default", "default#aa", "tuned", *catalog.FORM_VARIANTS, *catalog.NEIGHBOR_VARIANTS)
NEIGHBORHOOD = ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
                "neighbor_alltoallw")



class BenchError(ColltuneError):
    """A bench cannot start or could not finish; the message says what to change."""

    exit_code = 1


class StopSettings(StopFields):
    """When a job has been measured enough. The fields, bounds and driver flags are declared
    in native/spec/driver.toml (generated into colltune.measure.driver_options)."""

    @model_validator(mode="after")
    def _reps(self) -> StopSettings:
        if self.min_reps > self.max_reps:
            if "min_reps" in self.model_fields_set:
                raise ValueError(f"min_reps {self.min_reps} > max_reps {self.max_reps}")
            self.min_reps = self.max_reps  # only max_reps was given: it wins over the default
        return self

    def driver_args(self) -> list[str]:
        """The driver's flags for these settings (an unset optional one is left out)."""
        args: list[str] = []
        for name, flag, kind in DRIVER_FLAGS:
            value = getattr(self, name)
            if kind == "methods":
                args += [flag, ",".join(value) or "fixed"]
            elif value is not None:
                args += [flag, repr(value) if kind == "double" else str(value)]
        return args


# The ten collectives of PGMPITuneLib's guidelines (GL1-GL22, RS1-RS2): what `bench` measures by
# default and the quick and full presets check. The table's other rows (the irregular forms,
# Exscan, Barrier, the local Reduce_local) are measured when named or by their own preset.
GUIDELINE_COLLECTIVES = ("allgather", "allreduce", "alltoall", "bcast", "gather", "reduce",
                         "reduce_scatter_block", "reduce_scatter", "scan", "scatter")

PRESETS: dict[str, dict[str, Any]] = {
    # about a minute on 4 ranks of this 2-core machine with the embedded Open MPI
    "quick": {"sizes": [8, 1024, 32768],
              "stop": {"min_reps": 10, "max_reps": 100, "time_budget_s": 0.2, "warmup": 2}},
    # pgchecker Listing 4.2: size lists per collective, 5000 repetitions, 3 s per job
    "full": {"sizes": None, "stop": {"max_reps": 5000, "time_budget_s": 3.0}},
    # the later rows of the table against their regular partners (docs/guidelines.md): quick's
    # stopping rule; 1 B for Barrier against a one-byte Allreduce; the mock-ups of these rows
    # and the defaults (the partners' own mock-ups are quick's business)
    "irregular": {"sizes": [1, 1024, 32768],
                  "stop": {"min_reps": 10, "max_reps": 100, "time_budget_s": 0.2, "warmup": 2},
                  "collectives": ["allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
                                  "gather", "gatherv", "scatter", "scatterv", "scan", "exscan",
                                  "allreduce", "barrier"],
                  "variants": ["default", "default#aa", "barrier_as_allreduce",
                               "allgatherv_as_gatherv_bcast", "allgatherv_as_allgather",
                               "exscan_as_scan"]},
    # every row's blocking, nonblocking and persistent forms against each other (docs/guidelines.md,
    # "Forms": NB1-NB3) at quick's sizes and stopping rule; every row that has the other forms
    # (tests/test_forms.py holds this list to the table)
    "nonblocking": {"sizes": [8, 1024, 32768],
                    "stop": {"min_reps": 10, "max_reps": 100, "time_budget_s": 0.2, "warmup": 2},
                    "collectives": ["allgather", "allreduce", "alltoall", "bcast", "gather", "reduce",
                                    "reduce_scatter_block", "reduce_scatter", "scan", "scatter", "barrier",
                                    "exscan", "gatherv", "scatterv", "allgatherv", "alltoallv", "alltoallw"],
                    "variants": ["default", "default#aa", *catalog.FORM_VARIANTS]},
    # the neighborhood collectives on a torus against the sides of their guidelines
    # (docs/guidelines.md, "Neighborhood collectives": NH1-NH7) and their nonblocking form (NB1),
    # at quick's sizes and stopping rule
    "neighborhood": {"sizes": [8, 1024, 32768],
                     "stop": {"min_reps": 10, "max_reps": 100, "time_budget_s": 0.2, "warmup": 2},
                     "collectives": list(NEIGHBORHOOD),
                     "variants": ["default", "default#aa", "default#nonblocking", *catalog.NEIGHBOR_VARIANTS]},
}


# Before each repetition (the driver's --sync). none: back to back, each rank starting when its
# previous call returned, as a loop of dependent calls runs (what a call pattern costs in a loop).
Sync = Literal["barrier", "dissemination", "window", "none"]
SYNC_METHODS: tuple[str, ...] = get_args(Sync)


class BenchSettings(BaseModel):
    """Everything a bench run needs; validated before anything is launched."""

    model_config = ConfigDict(extra="forbid")

    mpi: str | None = Field(None, description="None: embedded Open MPI; openmpi|mpich|intel|path")
    collectives: list[str] = Field(default_factory=lambda: list(GUIDELINE_COLLECTIVES))
    variants: list[str] | None = Field(
        None, description="None: default, every mock-up of each collective and default#aa")
    sizes: list[int] | None = Field(None, description="bytes; None: pgchecker's lists per collective")
    nprocs: list[int] = Field(default_factory=lambda: [4])
    launches: int = Field(5, ge=1, description="R: launches per process count")
    sync: Sync = "dissemination"
    metric: Literal["max", "makespan"] = "max"
    stop: StopSettings = Field(default_factory=StopSettings)
    datatype: str | None = Field(None, description="None: byte (unsigned_char for reductions)")
    op: str = "sum"
    root: int = Field(0, ge=0)
    aa: bool = Field(True, description="measure default#aa, the A/A control")
    barrier: bool = Field(True, description="measure the barrier for noise warnings")
    library_algorithms: bool = Field(False, description="add every lib:<coll>:<alg> known")
    profile: Path | None = Field(None, description="adds the `tuned` variant")
    seed: int = Field(1, ge=0)
    launch_timeout_s: float | None = Field(None, gt=0)
    allow_oversubscribe: bool = Field(False, description="MPICH ranks beyond the cores")
    preset: Literal["quick", "full", "irregular", "nonblocking", "neighborhood"] | None = None
    # `colltune check`'s adaptive rounds, fixed before the first launch: the number of looks at
    # the data (1 + rounds) sets the alpha of each look (docs/statistics.md)
    rounds: int = Field(0, ge=0, description="adaptive rounds after the first R launches")
    round_launches: int = Field(0, ge=0, description="launches per process count and round (0: R/2)")
    round_budget_s: float = Field(0.0, ge=0, description="wall time for all adaptive rounds (0: no limit)")

    @field_validator("collectives")
    @classmethod
    def _collectives(cls, value: list[str]) -> list[str]:
        known = catalog.load().measured_names()
        bad = [c for c in value if c not in known]
        if bad:
            raise ValueError(f"unknown collective(s) {', '.join(bad)}; known: {', '.join(known)}")
        if not value:
            raise ValueError("no collective selected")
        return list(dict.fromkeys(value))

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("empty size list")
        bad = [s for s in value if s < 0]
        if bad:
            raise ValueError(f"message sizes must be >= 0 bytes, got {bad}")
        return sorted(set(value))

    @field_validator("nprocs")
    @classmethod
    def _nprocs(cls, value: list[int]) -> list[int]:
        if not value or any(n < 1 for n in value):
            raise ValueError(f"process counts must be >= 1, got {value}")
        return sorted(set(value))

    @field_validator("datatype")
    @classmethod
    def _datatype(cls, value: str | None) -> str | None:
        if value is not None and value not in DATATYPE_SIZES:
            raise ValueError(f"unknown datatype {value!r}; known: {', '.join(DATATYPE_SIZES)}")
        return value

    @field_validator("op")
    @classmethod
    def _op(cls, value: str) -> str:
        if value not in OPS:
            raise ValueError(f"unknown op {value!r}; known: {', '.join(OPS)}")
        return value

    @model_validator(mode="after")
    def _variants(self) -> BenchSettings:
        if self.variants is None:
            return self
        cat = catalog.load()
        known = {v.name: v.collective for v in cat.variants}
        for name in self.variants:
            if name in PSEUDO_VARIANTS or name in known:
                continue
            if name.startswith("lib:"):
                coll, _, form = catalog.library_variant(name)   # ValueError names the forms
                if coll not in cat.measured_names():
                    raise ValueError(f"library variant {name!r}: unknown collective {coll!r}")
                if form not in cat.row(coll).forms:
                    raise ValueError(f"library variant {name!r}: {coll} has no {form} form "
                                     f"(its forms: {', '.join(cat.row(coll).forms)})")
                continue
            raise ValueError(f"unknown variant {name!r}; known: {', '.join(PSEUDO_VARIANTS)}, "
                             f"lib:<collective>:<algorithm>[#nonblocking|#persistent], {', '.join(known)}")
        if "tuned" in self.variants and self.profile is None:
            raise ValueError("variant `tuned` needs a profile (--profile FILE)")
        return self

    @classmethod
    def from_preset(cls, preset: str | None, **overrides: Any) -> BenchSettings:
        """Preset values first, then explicit settings (None means: not given)."""
        values: dict[str, Any] = {}
        if preset:
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
            base = PRESETS[preset]
            values["sizes"] = base["sizes"]
            values["stop"] = dict(base["stop"])
            values["preset"] = preset
            for key in ("collectives", "variants"):
                if key in base:
                    values[key] = list(base[key])
        stop_over = overrides.pop("stop", None) or {}
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["stop"] = {**values.get("stop", {}), **{k: v for k, v in stop_over.items() if v is not None}}
        return cls(**values)

    # -- derived -------------------------------------------------------------------------------

    def datatype_for(self, collective: str) -> str:
        if self.datatype:
            return self.datatype
        return "unsigned_char" if catalog.load().is_reduction(collective) else "byte"

    def sizes_for(self, collective: str) -> list[int]:
        if not any("count" in a.role for a in catalog.load().row(collective).args):
            return [0]   # no message (the barrier)
        if self.sizes is not None:
            return list(self.sizes)
        return list(SIZES_SCALED if collective in SCALED else SIZES_UNSCALED)

    def variants_for(self, collective: str, family: str) -> list[str]:
        cat = catalog.load()
        # a neighborhood collective's sides where it has them (catalog.NEIGHBOR_VARIANTS)
        sides = [n for n, (_, rows) in catalog.NEIGHBOR_VARIANTS.items() if collective in rows]
        if self.variants is None:
            names = ["default", *(v.name for v in cat.variants_of(collective)), *sides]
            if self.aa:
                names.append("default#aa")
            if self.profile is not None:
                names.append("tuned")
        else:
            forms = cat.row(collective).forms   # default#<form> where the row has the form
            names = [n for n in self.variants
                     if (n in PSEUDO_VARIANTS and n not in catalog.NEIGHBOR_VARIANTS
                         and catalog.FORM_VARIANTS.get(n, "blocking") in forms)
                     or n in sides
                     or (n.startswith("lib:") and n.split(":")[1] == collective)
                     or (n in {v.name for v in cat.variants_of(collective)})]
        if self.library_algorithms:
            algs = LIBRARY_ALGORITHMS.get(family, {}).get(collective, ())
            names += [f"lib:{collective}:{a}" for a in algs]
            # the other forms' algorithms wherever that form's default is measured
            names += [f"lib:{collective}:{a}#{catalog.form_of(n)}" for n in list(names)
                      if n in catalog.FORM_VARIANTS
                      for a in started_algorithms(family, collective, catalog.form_of(n))]
        return list(dict.fromkeys(names))
