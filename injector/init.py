"""`injector init`: put trainwreck's workflows and a `[tool.trainwreck]` section into a repository.

The workflows (`trainwreck_workflows`, the layout's `workflows/`) go to `.github/workflows/`. A
workflow the repository already has is edited, never overwritten: it is merged with ruamel.yaml's
round-trip mode, so comments, key order and the file's indentation survive. The rule of the merge:
trainwreck owns the values its workflow sets (pinned actions, its commands, permissions), found by
key, and steps found by name; jobs, steps, keys and comments the user added stay where they are, and
so do the user's values of the knobs in `TUNABLE` (a longer timeout, another Python).

`pyproject.toml` gets the section appended when it has none (created when there is no file), so
every byte of the user's file stays as it was; the result is parsed again before anything is written.

Everything is read, merged and checked first (`plan`); only then are files written, each one
atomically (`apply`). Bad input (a missing folder, a file that is not valid YAML or TOML) raises
`InitError` before anything is written.
"""

from __future__ import annotations

import copy
import difflib
import io
import json
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, YAMLError
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

from trainwreck.errors import TrainwreckError, UsageError

DEFAULT_SHARDS = 4
DEFAULT_LABELS = ("self-hosted", "gpu")
MAX_SHARDS = 256  # GitHub's limit on the jobs of one matrix
WORKFLOWS_FOLDER = Path(".github") / "workflows"

# The default inside `runs-on: ${{ fromJSON(vars.TRAINWRECK_RUNNER_LABELS || '[...]') }}`.
_LABELS_DEFAULT = re.compile(r"(fromJSON\(\s*vars\.TRAINWRECK_RUNNER_LABELS\s*\|\|\s*')(\[[^']*\])(')")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The default inside `${{ vars.TRAINWRECK_PACKAGE || '...' }}`: what pip installs as trainwreck
# (an expression string: a quote in it is doubled).
_PACKAGE_DEFAULT = re.compile(r"(vars\.TRAINWRECK_PACKAGE\s*\|\|\s*')((?:[^']|'')*)(')")
# Keys a team tunes to its runners: trainwreck adds them when missing, never overrides them.
TUNABLE = frozenset({"timeout-minutes", "retention-days", "python-version", "concurrency"})

SECTION = """\
[tool.trainwreck]
# What `injector run` mutates: files or folders relative to this file (empty: the whole project).
paths = []
# The command that must fail on a mutant (default: python -m pytest), for example:
# guard = "python -m pytest -x -q tests"
# Only these fault ids (see `injector list`; empty: all of them), and never these:
operators = []
# exclude-operators = ["device-mismatch"]
# exclude-paths = ["legacy/*"]
"""


class InitError(TrainwreckError):
    """A file `injector init` must edit cannot be edited safely (not valid YAML or TOML, or not
    shaped like the file it should be)."""


@dataclass(frozen=True)
class PlannedFile:
    """One file `injector init` creates or edits: its text before (None: new) and after."""

    path: Path
    relative: str
    before: str | None
    after: str

    @property
    def diff(self) -> str:
        """A unified diff of the change, with git-style file names."""
        before = (self.before or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            before,
            self.after.splitlines(keepends=True),
            fromfile="/dev/null" if self.before is None else f"a/{self.relative}",
            tofile=f"b/{self.relative}",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@dataclass(frozen=True)
class Plan:
    """What `injector init` would do in `root`: the files it changes and those already current."""

    root: Path
    changes: tuple[PlannedFile, ...]
    unchanged: tuple[str, ...]


def parse_labels(text: str) -> tuple[str, ...]:
    """`self-hosted,gpu` -> ("self-hosted", "gpu"); runner labels are words, dots and dashes."""
    labels = tuple(part.strip() for part in text.split(",") if part.strip())
    if not labels:
        raise UsageError("--runner-labels needs at least one label, e.g. self-hosted,gpu")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise UsageError(f"not a runner label: {label!r} (letters, digits, '.', '_' and '-')")
    return labels


def plan(root: Path, *, package: str, shards: int | None = None, runner_labels: Sequence[str] | None = None) -> Plan:
    """Read and merge everything `injector init` would write in `root`; write nothing. `package`
    is the pip requirement the workflows install trainwreck from (`injector.package`)."""
    from trainwreck_workflows import templates

    if not root.is_dir():
        raise UsageError(f"not a folder: {root}")
    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards must be 1..{MAX_SHARDS} (GitHub runs at most {MAX_SHARDS} jobs per matrix)")
    for folder in (Path(".github"), WORKFLOWS_FOLDER):
        if (root / folder).exists() and not (root / folder).is_dir():
            raise InitError(f"{folder.as_posix()}: not a folder, so no workflow can go in it")
    changes, unchanged = [], []
    for name, template in templates().items():
        relative, existing = _existing_workflow(root, name)
        if existing is None:
            after = _render_new(template, shards, runner_labels, package)
        else:
            after = _merge_existing(template, existing, relative, shards, runner_labels, package)
        if after == existing:
            unchanged.append(relative)
        else:
            changes.append(PlannedFile(root / relative, relative, existing, after))
    pyproject = root / "pyproject.toml"
    before = _read(pyproject, "pyproject.toml")
    after = with_section(before, "pyproject.toml")
    if after == before:
        unchanged.append("pyproject.toml")
    else:
        changes.append(PlannedFile(pyproject, "pyproject.toml", before, after))
    return Plan(root=root, changes=tuple(changes), unchanged=tuple(unchanged))


def apply(plan: Plan) -> None:
    """Write every change of `plan`, each file atomically (a reader sees the old or the new file)."""
    for change in plan.changes:
        try:
            _write_atomically(change.path, change.after)
        except OSError as error:
            raise InitError(f"{change.relative}: cannot write it: {error.strerror or error}") from None


def report(plan: Plan, *, dry_run: bool, out: TextIO | None = None) -> None:
    """Print each change as a diff, then one line per file and what to do next."""
    out = out or sys.stdout
    for change in plan.changes:
        if change.before is not None or dry_run:  # a new file is shown only when previewing
            out.write(change.diff)
    for change in plan.changes:
        verb = "create" if change.before is None else "update"
        out.write(f"{'would ' + verb if dry_run else verb + 'd'} {change.relative}\n")
    for relative in plan.unchanged:
        out.write(f"unchanged {relative}\n")
    if dry_run:
        out.write("dry run: nothing written\n")
    top = next(
        (folder for folder in (plan.root.resolve(), *plan.root.resolve().parents) if (folder / ".git").exists()), None
    )
    if top is not None and top != plan.root.resolve():
        out.write(f"note: GitHub reads workflows only from the repository's top folder, {top}\n")
    if any(change.before is None and change.relative.endswith((".yml", ".yaml")) for change in plan.changes):
        out.write(
            "next: set the repository variables the workflows name at their top "
            "(runner labels, training command), then open a pull request\n"
        )


def with_section(text: str | None, name: str = "pyproject.toml") -> str:
    """`text` (a pyproject.toml, None: no file) with a `[tool.trainwreck]` section appended if it
    has none. The user's bytes are kept as they are: the section is added at the end."""
    if text is None:
        return SECTION
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InitError(f"{name}: not valid TOML: {error}") from None
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "trainwreck" in tool:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text if not text or text.endswith("\n") else text + newline
    separator = "" if not body.strip() or body.endswith(newline * 2) else newline
    result = body + separator + SECTION.replace("\n", newline)
    try:
        merged = tomllib.loads(result)
    except tomllib.TOMLDecodeError as error:
        # e.g. `tool = {...}` as an inline table, which no [tool.*] section may extend
        raise InitError(f"{name}: cannot add a [tool.trainwreck] section ({error}); add it by hand") from None
    if merged.get("tool", {}).get("trainwreck") != tomllib.loads(SECTION)["tool"]["trainwreck"]:
        raise InitError(f"{name}: cannot add a [tool.trainwreck] section; add it by hand")
    return result


# -- workflows ------------------------------------------------------------------------------------


def _existing_workflow(root: Path, name: str) -> tuple[str, str | None]:
    """The repository's copy of workflow `name` (`.yml`, or `.yaml` if that is what it has)."""
    folder = root / WORKFLOWS_FOLDER
    for candidate in (name, name.removesuffix(".yml") + ".yaml"):
        relative = (WORKFLOWS_FOLDER / candidate).as_posix()
        text = _read(folder / candidate, relative)
        if text is not None:
            return relative, text
    return (WORKFLOWS_FOLDER / name).as_posix(), None


def _yaml(mapping: int = 2, sequence: int = 4, offset: int = 2) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml: YAML, document: object) -> str:
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def installed_package(root: Path) -> str | None:
    """The package spec the repository's trainwreck workflows install already, if any."""
    from trainwreck_workflows import templates

    for name in templates():
        try:
            _, text = _existing_workflow(root, name)
        except InitError:
            continue
        found = _PACKAGE_DEFAULT.search(text or "")
        if found:
            return found.group(2).replace("''", "'")
    return None


def _render_new(template: str, shards: int | None, labels: Sequence[str] | None, package: str) -> str:
    yaml = _yaml()
    document = yaml.load(template)
    _set_options(document, shards or DEFAULT_SHARDS, labels or DEFAULT_LABELS, package)
    return _dump(yaml, document)


def _merge_existing(
    template: str, existing: str, relative: str, shards: int | None, labels: Sequence[str] | None, package: str
) -> str:
    newline = "\r\n" if "\r\n" in existing else "\n"
    text = existing.replace("\r\n", "\n")
    yaml = _yaml(*_guess_indent(text))
    try:
        document = yaml.load(text)
    except YAMLError as error:
        reason = " ".join(str(error).split())
        raise InitError(f"{relative}: not valid YAML: {reason}") from None
    if not isinstance(document, CommentedMap):
        raise InitError(f"{relative}: not a workflow (expected a mapping with `on:` and `jobs:`)")
    shape = _yaml().load(template)
    if _guess_indent(text) != _guess_indent(template):
        # trainwreck's comment lines sit at its own columns: in a file indented otherwise they
        # would sit askew, so entries it adds come without them
        _drop_comment_lines(shape)
    installed_shards, installed_labels = _installed_options(document)
    _set_options(
        shape, shards or installed_shards or DEFAULT_SHARDS, labels or installed_labels or DEFAULT_LABELS, package
    )
    if not _merge_mapping(shape, document, relative, ()):
        return existing  # nothing to change: keep the user's bytes, whatever ruamel would emit
    return _dump(yaml, document).replace("\n", newline)


def _installed_options(document: CommentedMap) -> tuple[int | None, tuple[str, ...] | None]:
    """The shard count and runner labels an installed workflow already has, to keep them."""
    shards = labels = None
    jobs = document.get("jobs")
    for job in jobs.values() if isinstance(jobs, dict) else ():
        if not isinstance(job, dict):
            continue
        matrix = (job.get("strategy") or {}).get("matrix") if isinstance(job.get("strategy"), dict) else None
        if isinstance(matrix, dict) and isinstance(matrix.get("shard"), list) and matrix["shard"]:
            shards = shards or len(matrix["shard"])
        runs_on = job.get("runs-on")
        found = _LABELS_DEFAULT.search(runs_on) if isinstance(runs_on, str) else None
        if found and labels is None:
            try:
                value = json.loads(found.group(2))
            except ValueError:
                continue
            if isinstance(value, list) and value and all(isinstance(v, str) and _LABEL.fullmatch(v) for v in value):
                labels = tuple(value)
    return shards, labels


def _set_options(document: CommentedMap, shards: int, labels: Sequence[str], package: str) -> None:
    """Put the shard count into each `shard` matrix, the labels into each GPU `runs-on` and the
    package spec into the `TRAINWRECK_PACKAGE` default."""
    env = document.get("env")
    value = env.get("TRAINWRECK_PACKAGE") if isinstance(env, dict) else None
    if isinstance(value, str) and _PACKAGE_DEFAULT.search(value):
        quoted = package.replace("'", "''")
        env["TRAINWRECK_PACKAGE"] = type(value)(_PACKAGE_DEFAULT.sub(lambda m: m.group(1) + quoted + m.group(3), value))
    default = json.dumps(list(labels), separators=(",", ":"))
    for job in document["jobs"].values():
        runs_on = job.get("runs-on")
        if isinstance(runs_on, str) and _LABELS_DEFAULT.search(runs_on):
            job["runs-on"] = _LABELS_DEFAULT.sub(lambda m: m.group(1) + default + m.group(3), runs_on)
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        if "shard" in matrix:
            numbers = CommentedSeq(range(1, shards + 1))
            numbers.fa.set_flow_style()
            matrix["shard"] = numbers


def _merge_mapping(template: CommentedMap, user: CommentedMap, relative: str, where: tuple) -> bool:
    """Merge `template` into `user` in place; True if `user` changed."""
    changed = False
    position = 0
    for key, wanted in template.items():
        if key not in user:
            _insert(user, position, wanted, key=key)
            _copy_end_comment(template, user, key)
            position += 1
            changed = True
            continue
        position = list(user).index(key) + 1
        have = user[key]
        path = (*where, key)
        if wanted is None or key in TUNABLE:
            continue  # left open by trainwreck (e.g. `pull_request:`) or the user's to tune
        if key == "on" and isinstance(have, (str, list)) and isinstance(wanted, dict):
            events = [have] if isinstance(have, str) else list(have)
            if all(event in events for event in wanted):
                continue  # `on: [pull_request, push]` already says it
            have = user[key] = CommentedMap((event, None) for event in events)
            changed = True
        if isinstance(wanted, CommentedMap):  # what ruamel's round trip reads a mapping as
            if not isinstance(have, CommentedMap):
                raise InitError(
                    f"{relative}: {_dotted(path)} should be a mapping as in trainwreck's "
                    "workflow; edit it by hand or move the file away"
                )
            changed |= _merge_mapping(wanted, have, relative, path)
        elif key == "steps" and isinstance(wanted, list):
            if not isinstance(have, CommentedSeq):
                raise InitError(f"{relative}: {_dotted(path)} should be a list of steps")
            changed |= _merge_steps(wanted, have, relative, path)
        elif have != wanted or isinstance(have, bool) != isinstance(wanted, bool):
            trailing = _detach_trailing(user, key)
            user[key] = copy.deepcopy(wanted)
            _attach_trailing(user, key, trailing)
            _copy_end_comment(template, user, key)
            changed = True
    return changed


def _merge_steps(template: list, user: CommentedSeq, relative: str, where: tuple) -> bool:
    """Steps are found by name (else by the action they use); missing ones are inserted after the
    step that precedes them in trainwreck's workflow; the user's own steps stay where they are."""
    changed = False
    position = 0
    names = {step.get("name") for step in template if isinstance(step, dict)}
    for step in template:
        index = _find_step(step, user, names)
        if index is None:
            _insert(user, position, step)
            position += 1
            changed = True
        else:
            changed |= _merge_mapping(step, user[index], relative, (*where, step.get("name")))
            position = index + 1
    return changed


def _find_step(step: CommentedMap, steps: list, template_names: set) -> int | None:
    for index, candidate in enumerate(steps):
        if isinstance(candidate, dict) and candidate.get("name") == step.get("name"):
            return index
    action = _action(step)
    if action is None:
        return None
    # A trainwreck step the user renamed: the only unnamed-by-trainwreck step using that action.
    matches = [
        index
        for index, candidate in enumerate(steps)
        if isinstance(candidate, dict) and _action(candidate) == action and candidate.get("name") not in template_names
    ]
    return matches[0] if len(matches) == 1 else None


def _action(step: object) -> str | None:
    uses = step.get("uses") if isinstance(step, dict) else None
    return uses.split("@", 1)[0] if isinstance(uses, str) else None


# ruamel keeps the comment lines above an entry with the entry before it (on its last scalar), so
# an entry inserted between two others must take those lines over, or they would end up above it.


def _insert(container: CommentedMap | CommentedSeq, index: int, value: object, *, key: object = None) -> None:
    """Insert a copy of trainwreck's `value` at `index` (under `key` in a mapping), keeping the
    comment lines that were above the entry now after it in place."""
    value = copy.deepcopy(value)
    previous = (list(container)[index - 1] if isinstance(container, CommentedMap) else index - 1) if index else None
    trailing = _detach_trailing(container, previous) if previous is not None else ""
    if isinstance(container, CommentedMap):
        container.insert(index, key, value)
        _detach_trailing(container, key)  # what trainwreck's file had after it belongs there
        _attach_trailing(container, key, trailing)
    else:
        container.insert(index, value)
        _detach_trailing(container, index)
        _attach_trailing(container, index, trailing)


def _tail(container: CommentedMap | CommentedSeq, key: object) -> tuple[CommentedMap | CommentedSeq, object]:
    """The (container, key) of the last block entry inside `container[key]`, where ruamel keeps
    the comments that follow it."""
    value = container[key]
    while isinstance(value, (CommentedMap, CommentedSeq)) and len(value) and not value.fa.flow_style():
        container, key = value, (list(value)[-1] if isinstance(value, CommentedMap) else len(value) - 1)
        value = container[key]
    return container, key


def _token_slot(container: CommentedMap | CommentedSeq) -> int:
    return 2 if isinstance(container, CommentedMap) else 0


def _is_block(value: object) -> bool:
    return isinstance(value, (LiteralScalarString, FoldedScalarString))


def _detach_trailing(container: CommentedMap | CommentedSeq, key: object) -> str:
    """Remove the full comment lines after `container[key]` (its end-of-line comment stays) and
    return them, each line with its indentation."""
    container, key = _tail(container, key)
    entry, slot = container.ca.items.get(key), _token_slot(container)
    token = entry[slot] if entry and len(entry) > slot else None
    if token is None:
        return ""
    if _is_block(container[key]):  # after a block scalar ruamel keeps the lines alone
        # its lines carry their indentation, but for a first comment line that is the column
        end_of_line = ""
        lines = " " * token.column + token.value if token.value.startswith("#") else token.value
    else:
        end_of_line, _, lines = token.value.partition("\n")
    # Blank lines separate the entry from what follows: keep them there, and copy them along.
    blank = lines[: len(lines) - len(lines.lstrip("\n"))]
    if end_of_line.strip() or blank:
        token.value = end_of_line + "\n" + blank if not _is_block(container[key]) else blank
    else:
        entry[slot] = None
    return lines if lines.strip() or blank else ""


def _attach_trailing(container: CommentedMap | CommentedSeq, key: object, lines: str) -> None:
    """Put comment `lines` (from `_detach_trailing`) after `container[key]`."""
    if not lines:
        return
    container, key = _tail(container, key)
    slot = _token_slot(container)
    entry = container.ca.items.setdefault(key, [None] * (4 if slot == 2 else 2))
    token = entry[slot]
    if token is not None:
        token.value = token.value + lines if token.value.endswith("\n") else token.value + "\n" + lines
    elif _is_block(container[key]):
        text = lines.lstrip(" ")
        entry[slot] = CommentToken(text, CommentMark(len(lines) - len(text)), None)
    else:
        entry[slot] = CommentToken("\n" + lines, CommentMark(0), None)


def _drop_comment_lines(node: object) -> None:
    """Keep only the end-of-line comments in `node` (at no fixed column)."""
    if not isinstance(node, (CommentedMap, CommentedSeq)):
        return
    node.ca.comment = None
    for key, entry in node.ca.items.items():
        for slot, token in enumerate(entry):
            if (
                not isinstance(token, CommentToken)
                or _is_block(node[key])
                or not token.value.partition("\n")[0].strip()
            ):
                entry[slot] = None
            else:
                entry[slot] = CommentToken(token.value.partition("\n")[0] + "\n", CommentMark(0), None)
    for value in node.values() if isinstance(node, CommentedMap) else node:
        _drop_comment_lines(value)


def _copy_end_comment(template: CommentedMap, user: CommentedMap, key: object) -> None:
    """Give `user[key]` the end-of-line comment trainwreck's value has (`# v7.0.1` after a pinned
    action), keeping the comment lines that follow it in the user's file."""
    source = template.ca.items.get(key)
    token = source[2] if source and len(source) > 2 else None
    first = token.value.split("\n", 1)[0] if token is not None and not _is_block(template[key]) else ""
    if not first.strip() or _is_block(user[key]):
        return
    entry = user.ca.items.setdefault(key, [None, None, None, None])
    if entry[2] is None:
        assert token is not None  # `first` is only non-blank when the template has a comment
        entry[2] = CommentToken(first + "\n", CommentMark(token.column), None)
    else:
        entry[2].value = first + "\n" + entry[2].value.partition("\n")[2]


def _dotted(path: tuple) -> str:
    return "`" + ".".join(str(part) for part in path) + "`"


_KEY_LINE = re.compile(r"^( *)(?!- |#)[^\s:][^:]*:(\s|$)")
_DASH_LINE = re.compile(r"^( *)-( +)\S")


def _guess_indent(text: str) -> tuple[int, int, int]:
    """The file's (mapping, sequence, dash offset) indentation, so an edit keeps its style."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    mapping = min(
        (len(found.group(1)) for line in lines if (found := _KEY_LINE.match(line)) and found.group(1)), default=2
    )
    for previous, line in zip(lines, lines[1:], strict=False):
        dash, key = _DASH_LINE.match(line), _KEY_LINE.match(previous)
        if dash and key and previous.rstrip().endswith(":"):
            offset = len(dash.group(1)) - len(key.group(1))
            sequence = offset + 1 + len(dash.group(2))
            if offset >= 0 and sequence >= offset + 2:
                return mapping, sequence, offset
            break
    return mapping, 4, 2


# -- files ----------------------------------------------------------------------------------------


def _read(path: Path, relative: str) -> str | None:
    """The text of `path` (line endings as they are), or None if there is no such file."""
    if not path.exists():
        return None
    if not path.is_file():
        raise InitError(f"{relative}: not a file")
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise InitError(f"{relative}: not UTF-8 text") from None
    except OSError as error:
        raise InitError(f"{relative}: cannot read it: {error.strerror}") from None


def _write_atomically(path: Path, text: str) -> None:
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed over the target below
        "w",
        encoding="utf-8",
        newline="",
        dir=target.parent,
        prefix=f".{target.name}.",
        suffix=".tmp",
        delete=False,
    )
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, mode)
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
