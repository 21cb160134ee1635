"""The one error spine of the front end: every expected failure is a ColltuneError.

A ColltuneError is a click exception, so click turns it into one message on stderr and the
error's exit code wherever it is raised, in a subcommand invoked through the `colltune` group or
on its own (tests); nothing below the CLI calls sys.exit. Exit codes: 1 the thing measured or
checked failed (a launch failed, selftest mismatches), 2 usage or environment error (no MPI,
bad input file, unwritable output), 130 interrupted.
"""

from __future__ import annotations

from typing import IO, Any

import click


class ColltuneError(click.ClickException):
    """An expected failure; the message names the problem and the fix."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)

    def show(self, file: IO[Any] | None = None) -> None:
        from colltune.invocation import as_started  # a fix quoted as `colltune ...` runs as printed

        click.echo(f"error: {as_started(self.format_message())}", file=file, err=file is None)
