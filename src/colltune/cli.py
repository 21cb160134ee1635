"""The `colltune` command: one click group, one module per subcommand (colltune.commands.*).

Exit codes shared by every subcommand: 0 success (for `check`: no violation), 1 the thing
checked failed (violations, selftest mismatches, a failed launch), 2 usage or environment error,
130 interrupted. Expected failures are ColltuneError (colltune.errors), click shows them wherever they are raised.
"""

from __future__ import annotations

import importlib

import click

from colltune import __version__

# Subcommands in the order `--help` lists them: the main workflow first.
SUBCOMMANDS = (
    "check", "bench", "compare", "tune", "validate", "run", "report", "export", "profile", "selftest", "mpi",
)

@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="colltune")
def main() -> None:
    """Measure, verify and tune MPI collective operations.

    \b
    Typical workflow on a machine:
      colltune check -n 4          measure collectives, report guideline violations
      colltune tune --out my.prf   write a tuning profile from the check
      colltune run --profile my.prf -- mpiexec -n 4 ./app
    """


def _register() -> None:
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"colltune.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"colltune.commands.{name}":
                continue  # not part of this installation
            raise
        main.add_command(module.command, name=name)


_register()
