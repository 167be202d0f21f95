"""Which configuration file pytest reads for a project, so that its copy in a scratch folder
reads the same one and nothing else.

pytest looks for its configuration from the tests' folder upwards: a copy of a project that has
none of its own, made under a temporary folder that lies inside another checkout (a CI runner's
`TMPDIR=$WORKSPACE/tmp`, a developer's `TMPDIR=./.tmp`), would pick up that checkout's
`pyproject.toml` and `conftest.py` and fail every test for reasons the project does not have.
So the campaign finds the file pytest would read in the project itself (this module, in the
same order as pytest), and each run in a copy names it (or an empty one) explicitly.
"""

from __future__ import annotations

import re
from pathlib import Path

# per folder, in pytest's order of precedence; the pattern a file must hold to count (None: any)
_CANDIDATES: tuple[tuple[str, re.Pattern[str] | None], ...] = (
    ("pytest.ini", None),
    (".pytest.ini", None),
    ("pyproject.toml", re.compile(r"^\s*\[\s*tool\.pytest\.ini_options\s*\]", re.M)),
    ("tox.ini", re.compile(r"^\s*\[\s*pytest\s*\]", re.M)),
    ("setup.cfg", re.compile(r"^\s*\[\s*tool:pytest\s*\]", re.M)),
)
# guard options by which the user already says where the configuration and root are
_USER_CHOSEN = ("-c", "--config-file", "--rootdir", "--inifile")
EMPTY_NAME = "pytest-empty.ini"


def find(start: Path) -> Path | None:
    """The configuration file pytest would read for tests under `start`, or None."""
    for folder in (start, *start.parents):
        for name, pattern in _CANDIDATES:
            path = folder / name
            if not path.is_file():
                continue
            if pattern is None:
                return path
            try:
                if pattern.search(path.read_text(errors="replace")):
                    return path
            except OSError:
                continue
    return None


def describe(root: Path) -> dict[str, str | None]:
    """What a worker needs to know (JSON): the config's path inside the project, or outside it."""
    found = find(root.resolve())
    if found is None:
        return {"inside": None, "outside": None}
    try:
        return {"inside": str(found.relative_to(root.resolve())), "outside": None}
    except ValueError:
        return {"inside": None, "outside": str(found)}


def isolation_args(config: dict[str, str | None] | None, slot: Path, scratch: Path, user_args: list[str]) -> list[str]:
    """The pytest options that make a run in `slot` (a copy of the project) read what a run in
    the project reads: its config file named, its root fixed at the copy (no upward search)."""
    if config is None or any(a == o or a.startswith(o + "=") for a in user_args for o in _USER_CHOSEN):
        return []
    if config.get("inside"):
        chosen = slot / str(config["inside"])
    elif config.get("outside"):
        chosen = Path(str(config["outside"]))
    else:
        chosen = scratch / EMPTY_NAME
    return ["-c", str(chosen), "--rootdir", str(slot)]


def write_empty(scratch: Path) -> None:
    """The stand-in config for a project that has none (an upward search would find others')."""
    (scratch / EMPTY_NAME).write_text("[pytest]\n")
