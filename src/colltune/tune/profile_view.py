"""A tuning profile for people: provenance and one rules table per collective (rich)."""

from __future__ import annotations

from colltune import catalog
from colltune.tune.profile import PROVENANCE_KEYS, Profile
from colltune.units import human_bytes


def render(profile: Profile):  # -> rich.console.RenderableType
    """Provenance table and one rules table per collective, for `colltune profile show`."""
    from rich.console import Group
    from rich.table import Table

    cat = catalog.load()
    head = Table(title="profile", show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    for key in PROVENANCE_KEYS:
        if key in profile.provenance:
            head.add_row(key, profile.provenance[key])
    head.add_row("rules", str(profile.rule_count()))
    head.add_row("hash", f"{profile.content_hash():016x}")
    parts: list = [head]
    if not profile.sections:
        parts.append("no rules: every call goes to the MPI library")
    for section in profile.sections:
        title = cat.collective(section.base).function(section.form)   # MPI_Allreduce, MPI_Iallreduce
        table = Table(title=f"{section.collective} ({title})", title_justify="left")
        table.add_column("procs", justify="right")
        table.add_column("from", justify="right")
        table.add_column("to", justify="right")
        table.add_column("variant")
        table.add_column("guideline")
        table.add_column("replaced by")
        for block in section.blocks:
            procs = str(block.procs_lo) if block.procs_lo == block.procs_hi else f"{block.procs_lo}-{block.procs_hi}"
            if block.layout is not None:
                procs += f" on {block.nodes} node{'s' if block.nodes != 1 else ''} x {block.ppn}"
            for rule in block.rules:
                if section.form != catalog.FORMS[0]:   # the library's own algorithm of that form
                    table.add_row(procs, human_bytes(rule.lo), human_bytes(rule.hi), rule.variant, "-",
                                  f"the library's {rule.variant.split(':')[2].split('#')[0]} algorithm")
                    continue
                v = cat.variant(rule.variant)
                table.add_row(procs, human_bytes(rule.lo), human_bytes(rule.hi), rule.variant, v.guideline, v.rhs)
        parts.append(table)
    return Group(*parts)


def cat_mpi(collective: str) -> str:
    """The MPI function of a section (`allreduce#nonblocking` -> MPI_Iallreduce)."""
    from colltune.tune.profile_model import split_section
    base, form = split_section(collective)
    return catalog.load().collective(base).function(form)
