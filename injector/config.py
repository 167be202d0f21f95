"""`[tool.trainwreck]` in a target project's pyproject.toml: what to mutate and how to guard it.

    [tool.trainwreck]
    paths = ["src/mypkg"]                 # files or folders to mutate (default: the project)
    operators = ["missing-zero-grad"]     # only these fault ids (default: all)
    exclude-operators = ["device-mismatch"]
    exclude-paths = ["src/mypkg/legacy/*"]  # gitignore-style patterns
    guard = "python -m pytest -x -q tests"  # the command that must fail on a mutant
    timeout-factor = 3.0                  # a mutant's time limit: factor x baseline + constant
    skip-mutants = ["3f2a9c01b7de"]       # mutant ids judged equivalent: listed as ignored, never run
    fail-under = 80                       # exit 3 when the mutation score is below this percentage

A single mutant can also be silenced in the source, on its line: `# trainwreck: ignore[fault-id]`
(or a bare `# trainwreck: ignore` for every fault there).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from trainwreck.errors import ConfigError

KEYS = {
    "paths",
    "operators",
    "exclude-operators",
    "exclude-paths",
    "guard",
    "timeout-factor",
    "skip-mutants",
    "fail-under",
}


@dataclass(frozen=True)
class Config:
    """The settings of one target project (defaults where it has none)."""

    root: Path
    paths: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    exclude_operators: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    guard: str | None = None
    timeout_factor: float = 3.0
    skip_mutants: tuple[str, ...] = ()
    fail_under: float | None = None
    source: Path | None = field(default=None, compare=False)  # the pyproject.toml it came from


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds a pyproject.toml, else `start`'s folder."""
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return folder


def load(root: Path) -> Config:
    """Read `[tool.trainwreck]` from `root/pyproject.toml`; defaults if there is none."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return Config(root=root)
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{pyproject}: not valid TOML: {error}") from None
    section = data.get("tool", {}).get("trainwreck")
    if section is None:
        return Config(root=root, source=pyproject)
    if not isinstance(section, dict):
        raise ConfigError(f"{pyproject}: [tool.trainwreck] must be a table")
    unknown = sorted(set(section) - KEYS)
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown key {unknown[0]!r} in [tool.trainwreck] (known: {', '.join(sorted(KEYS))})"
        )

    def strings(key: str) -> tuple[str, ...]:
        value = section.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{pyproject}: [tool.trainwreck] {key} must be a list of strings")
        return tuple(value)

    guard = section.get("guard")
    if guard is not None and not (isinstance(guard, str) and guard.strip()):
        raise ConfigError(f"{pyproject}: [tool.trainwreck] guard must be a non-empty string")
    factor = section.get("timeout-factor", 3.0)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
        raise ConfigError(f"{pyproject}: [tool.trainwreck] timeout-factor must be a positive number")
    fail_under = section.get("fail-under")
    if fail_under is not None and (
        isinstance(fail_under, bool) or not isinstance(fail_under, (int, float)) or not 0 <= fail_under <= 100
    ):
        raise ConfigError(f"{pyproject}: [tool.trainwreck] fail-under must be a percentage from 0 to 100")
    return Config(
        root=root,
        paths=strings("paths"),
        operators=strings("operators"),
        exclude_operators=strings("exclude-operators"),
        exclude_paths=strings("exclude-paths"),
        guard=guard,
        timeout_factor=float(factor),
        skip_mutants=strings("skip-mutants"),
        fail_under=None if fail_under is None else float(fail_under),
        source=pyproject,
    )
