"""The measurement options shared by `colltune bench`, `check`, `validate` and `compare`,
and their translation into BenchSettings."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from colltune.measure.driver_options import CLI_OPTIONS
from colltune.measure.settings import PRESETS, SYNC_METHODS, BenchError, BenchSettings
from colltune.mpi import smpi


def _int_list(ctx: click.Context, param: click.Parameter, value: Sequence[str] | None) -> list[int] | None:
    if not value:
        return None
    out: list[int] = []
    for chunk in value:
        for item in chunk.split(","):
            item = item.strip().lower()
            if not item:
                continue
            mult = 1
            for suffix, factor in (("kib", 1024), ("mib", 1024**2), ("k", 1024), ("m", 1024**2), ("b", 1)):
                if item.endswith(suffix):
                    item, mult = item[: -len(suffix)], factor
                    break
            try:
                out.append(int(item) * mult)
            except ValueError:
                raise click.BadParameter(f"{chunk!r}: expected integers like 8,1024,64KiB") from None
    return out


def _str_list(ctx: click.Context, param: click.Parameter, value: Sequence[str] | None) -> list[str] | None:
    if not value:
        return None
    return [s.strip() for chunk in value for s in chunk.split(",") if s.strip()]


def _use_platform(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--platform: checked now, then read by every SMPI launch of this command (mpi/smpi.py)."""
    if value is None:
        return
    try:
        smpi.platform(value)
    except smpi.SmpiError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    os.environ[smpi.PLATFORM_VAR] = value


platform_option = click.option(
    "--platform", callback=_use_platform, expose_value=False, metavar="PRESET|FILE",
    help=f"SimGrid SMPI only (--mpi smpi): the simulated platform, a preset ({', '.join(smpi.PRESETS)}) "
         "or a SimGrid platform file (default: the smallest preset with enough cores)")

_BENCH_OPTIONS = [
    platform_option,
    click.option("--preset", type=click.Choice(sorted(PRESETS)), default=None,
                 help="quick: 3 sizes, short jobs (~30 s for R=5 on 4 ranks here); full: 12 sizes per collective (1 B-16 KiB or 1 B-8 MiB), "
                      "up to 5000 repetitions / 3 s per job; irregular: the v/w forms, Exscan and Barrier against their regular "
                      "partners; nonblocking: every collective's blocking, nonblocking and persistent forms against each other; "
                      "neighborhood: the neighborhood collectives on a torus against a graph, the complete graph and the "
                      "dense collectives (docs/guidelines.md)"),
    click.option("--mpi", "mpi_spec", default=None, metavar="LIB",
                 help="openmpi | mpich | intel | smpi | path to an mpicc (default: embedded Open MPI)"),
    click.option("-c", "--collectives", multiple=True, callback=_str_list, metavar="LIST",
                 help="collectives, comma-separated (default: all of the table)"),
    click.option("--variants", multiple=True, callback=_str_list, metavar="LIST",
                 help="variants to measure (default: default, every mock-up, default#aa); also "
                      "tuned, lib:<collective>:<algorithm>, and the other forms of each collective: "
                      "default#nonblocking (MPI_I<coll> + MPI_Wait), default#persistent (MPI_Start + MPI_Wait), "
                      "lib:<collective>:<algorithm>#nonblocking|#persistent (the library's algorithm of that form)"),
    click.option("--library-algorithms", is_flag=True, default=None,
                 help="also measure every algorithm of the MPI library (lib:<coll>:<alg>), and of the other "
                      "forms measured (lib:<coll>:<alg>#<form>)"),
    click.option("-s", "--sizes", multiple=True, callback=_int_list, metavar="LIST",
                 help="message sizes in bytes, e.g. 8,1KiB,64KiB (default: 12 sizes per collective, 1 B-16 KiB for allgather, alltoall, gather and scatter, 1 B-8 MiB for the others)"),
    click.option("-n", "--nprocs", multiple=True, callback=_int_list, metavar="LIST",
                 help="process counts (default 4)"),
    click.option("-R", "--launches", type=click.IntRange(1), default=None,
                 help="launches per process count, the statistical unit (default 5)"),
    click.option("--sync", type=click.Choice(SYNC_METHODS), default=None,
                 help="synchronization before each repetition (default dissemination; none: back to back, as in a loop)"),
    click.option("--metric", type=click.Choice(["max", "makespan"]), default=None,
                 help="value the stopping rules watch: max local duration or global makespan"),
    click.option("--stop", "stop_methods", multiple=True, callback=_str_list, metavar="LIST",
                 help="stopping rules that must all hold: rse,cov_mean,cov_median,nrep1 or fixed"),
    *(click.option(o.flag, o.field, type=o.type, default=None, help=o.help) for o in CLI_OPTIONS),
    click.option("--datatype", default=None, help="datatype (default byte; unsigned_char for reductions)"),
    click.option("--op", default=None, help="reduction op (default sum)"),
    click.option("--root", type=int, default=None, help="root of rooted collectives (default 0)"),
    click.option("--aa/--no-aa", default=None, help="measure default#aa, the A/A control (default on)"),
    click.option("--barrier/--no-barrier", "barrier_job", default=None,
                 help="measure the barrier for noise warnings (default on)"),
    click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                 help="tuning profile: adds the variant `tuned` (what the interposer would do)"),
    click.option("--seed", type=int, default=None, help="seed of the randomized order (default 1)"),
    click.option("--launch-timeout", type=float, default=None, help="seconds before a launch is killed (default: one whose ranks have not passed MPI_Init after 60 s is started again, up to 3 times; a launch is killed after 10x its jobs' time budgets + 120 s; none under SMPI)"),
    click.option("--allow-oversubscribe", is_flag=True, default=None,
                 help="allow more MPICH ranks than cores (busy-polling makes it slow)"),
]

BENCH_OPTION_NAMES = ("preset", "mpi_spec", "collectives", "variants", "library_algorithms", "sizes",
                      "nprocs", "launches", "sync", "metric", "stop_methods", *(o.field for o in CLI_OPTIONS),
                      "datatype", "op", "root", "aa", "barrier_job", "profile", "seed", "launch_timeout",
                      "allow_oversubscribe")


def bench_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add every bench option to a click command; turn them into settings with
    `settings_from_options(kwargs)` (which pops them from kwargs)."""
    for option in reversed(_BENCH_OPTIONS):
        func = option(func)
    return func


def settings_from_options(kwargs: dict[str, Any]) -> BenchSettings:
    """BenchSettings from the options of `bench_options` (removed from kwargs); a bad value is a
    click.UsageError naming the option."""
    o = {name: kwargs.pop(name, None) for name in BENCH_OPTION_NAMES}
    stop = {opt.field: o[opt.field] for opt in CLI_OPTIONS}
    if o["stop_methods"] is not None:
        stop["methods"] = [] if o["stop_methods"] == ["fixed"] else o["stop_methods"]
    try:
        settings = BenchSettings.from_preset(
            o["preset"], mpi=o["mpi_spec"], collectives=o["collectives"], variants=o["variants"],
            library_algorithms=o["library_algorithms"], sizes=o["sizes"], nprocs=o["nprocs"],
            launches=o["launches"], sync=o["sync"], metric=o["metric"], stop=stop,
            datatype=o["datatype"], op=o["op"], root=o["root"], aa=o["aa"], barrier=o["barrier_job"],
            profile=o["profile"], seed=o["seed"], launch_timeout_s=o["launch_timeout"],
            allow_oversubscribe=o["allow_oversubscribe"])
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise click.UsageError(problems) from None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    check_profile(settings)
    return settings


def check_profile(settings: BenchSettings) -> None:
    """The profile of the `tuned` variant read before the first launch, with the C core's
    grammar: a bad one would fail every launch."""
    if settings.profile is None:
        return
    from colltune.tune.profile import ProfileError, read_profile  # pydantic: only with --profile

    try:
        read_profile(settings.profile)
    except (OSError, ProfileError) as exc:
        raise BenchError(f"profile {settings.profile}: {exc}") from None


def state_launches_default(command: click.Command, default: str) -> None:
    """-R's help states bench's default; a command that starts from another one says its own."""
    for param in command.params:
        if param.name == "launches":
            param.help = f"launches per process count, the statistical unit (default {default})"
