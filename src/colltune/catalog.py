"""The one table of collectives and variants (native/spec/collectives.toml), for Python."""

from __future__ import annotations

import tomllib
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from colltune.paths import native_dir


class Arg(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    ctype: str
    role: str


class Collective(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    mpi: str
    args: tuple[Arg, ...]
    uniform: tuple[str, ...]
    in_place: str | None = None
    bytes: str


class Variant(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    collective: str
    guideline: str
    rhs: str
    needs: tuple[str, ...]
    scratch: str


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)
    collectives: tuple[Collective, ...]
    variants: tuple[Variant, ...]

    def collective_names(self) -> list[str]:
        return [c.name for c in self.collectives]

    def variants_of(self, collective: str) -> list[Variant]:
        return [v for v in self.variants if v.collective == collective]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(v.name for v in self.variants)}")


@lru_cache(maxsize=1)
def load() -> Catalog:
    with open(native_dir() / "spec" / "collectives.toml", "rb") as f:
        raw = tomllib.load(f)
    return Catalog(collectives=tuple(raw["collective"]), variants=tuple(raw["variant"]))
