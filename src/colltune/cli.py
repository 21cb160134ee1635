"""The `colltune` command: one click group, one module per subcommand (colltune.commands.*).

Exit codes shared by every subcommand: 0 success (for `check`: no violation), 1 the thing
checked failed (violations, selftest mismatches, a failed launch), 2 usage or environment error,
70 an internal error (a bug of colltune's: its traceback, then what to report), 130 interrupted.
Expected failures are ColltuneError (colltune.errors), click shows them wherever they are raised.

Subcommands are imported only when invoked (or listed by `--help`): `colltune run` sits in front
of every launch of an application and must not pay for pandas, DuckDB or SciPy, which the
measuring and judging commands import (benchmarks/frontend_start).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import traceback

import click

from colltune import __version__

# Subcommands in the order `--help` lists them: the main workflow first.
SUBCOMMANDS = (
    "check", "bench", "compare", "tune", "validate", "run", "learn", "traces", "report", "export", "profile",
    "selftest", "mpi", "advise",
)


class LazyGroup(click.Group):
    """A group whose subcommands are the `command` objects of colltune.commands.<name>,
    imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        # A module missing from this installation is not listed (find_spec does not import it).
        return [name for name in SUBCOMMANDS
                if importlib.util.find_spec(f"colltune.commands.{name}") is not None]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS:
            return None
        try:
            module = importlib.import_module(f"colltune.commands.{cmd_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"colltune.commands.{cmd_name}":
                return None  # not part of this installation
            raise
        command: click.Command = module.command
        return command

    def invoke(self, ctx: click.Context) -> object:
        """A subcommand's unexpected exception exits INTERNAL_ERROR, not Python's 1, which is
        also `check`'s "violations found" (the Makefile's demo accepted a crash as a result)."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit,
                KeyboardInterrupt, EOFError):
            raise
        except OSError as exc:
            if exc.errno == errno.EPIPE:   # `colltune ... | head`: click's own handling
                raise
            _internal_error(ctx)
        except Exception:
            _internal_error(ctx)
        return None


INTERNAL_ERROR = 70   # sysexits.h's EX_SOFTWARE


def _internal_error(ctx: click.Context) -> None:
    traceback.print_exc()
    click.echo(f"colltune: internal error (exit {INTERNAL_ERROR}): a bug in colltune, not a finding about "
               "the MPI library or the application; report it with the traceback above and the command line",
               err=True)
    ctx.exit(INTERNAL_ERROR)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="colltune")
def main() -> None:
    """Measure, verify and tune MPI collective operations.

    \b
    Typical workflow on a machine:
      colltune check -n 4          measure collectives, report guideline violations
      colltune tune --out my.prof  write a tuning profile from the check
      colltune run --profile my.prof -- mpiexec -n 4 ./app
    """
