"""The operator corpus: real public training files, their reviewed sites, and how mutants are judged.

`tests/injector/corpus/` holds training code copied from public repositories (source, path,
commit and licence in the manifests). `tuned.toml` lists the files the operators were developed
against; `heldout.toml` the files that were only ever measured (other repositories). Each file has
the sites a person listed by reading it against the catalog (`expected`) and the places where a
mutant would be equivalent or aim at the wrong thing (`untouched`, each with why).

A site names one line: `at` is a text that occurs on exactly one line (`nth` picks the n-th line
holding it), or `in` is a block header and the mutant must land inside that block. A mutant
matches a site when it has the site's operator and its edits touch that line (or block). A
detached-graph mutant that cuts a name where the loss reads it (`criterion(logits.detach(), y)`)
cuts the value computed where that name was assigned: it also reaches those lines (`logits =
model(x)`, and `mask = self.model(x)` before `mask = mask.permute(...)`), the forward line a
listing names for the same fault.

Judging a mutant: it is *found* when it matches an expected site, *equivalent* when it matches an
untouched one, *real* when it matches a `real` site (a place the listing did not name where a
held-out measurement's mutant was reviewed afterwards as a real fault: it counts neither for
recall nor as equivalent), *unreviewed* otherwise; *broken* when it does not compile, or when the mutated
module does not load (import it, with stubs for third-party packages that are not installed,
and build what the manifest's `construct` builds) although the original does.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import io
import linecache
import re
import sys
import tomllib
import types
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import typing_extensions

from injector.generate import mutants_for_source
from injector.mutants import Edit, LineIndex, Mutant
from injector.neighbours import mapping_reader

CORPUS = Path(__file__).parent / "corpus"
MANIFESTS = {"tuned": CORPUS / "tuned.toml", "held-out": CORPUS / "heldout.toml"}
# Files a manifest marks `fetched = true` are not committed (code fetched from a public repository
# stays out of the project's commits): a developer puts them here from their repository, path and
# commit, and they count only where present. The folder is ignored by git.
FETCHED = CORPUS / "fetched"
# Modules a corpus file imports from its own repository (its model's definition), fetched like the
# files: `fetched/neighbours/<file name without .py>/<path in the repository>`.
NEIGHBOURS = FETCHED / "neighbours"
# what corpus_files reads once per process (tests that lay out a corpus of their own patch the above)
_COMMITTED = (MANIFESTS, CORPUS, FETCHED, NEIGHBOURS)


@dataclass(frozen=True)
class Site:
    """One reviewed place in a corpus file."""

    op: str
    first: int  # the line (or the block's first line, for `in`)
    last: int  # the same line, or the block's last line
    label: str
    why: str = ""
    block: bool = False  # an `in` site: the mutant lands in the block, not in a loop nested in it
    known: bool = False  # a reviewed shortfall: an expected site no mutant reaches (`known_miss`),
    # or an untouched site that still gets a mutant (`known_equivalent`)


@dataclass(frozen=True)
class CorpusFile:
    name: str
    split: str
    text: str
    expected: tuple[Site, ...]
    untouched: tuple[Site, ...]
    load: str  # "import": run the whole module; "definitions": only imports, defs, classes and type variables
    construct: str  # statements run in the loaded module's namespace
    # Broken mutants a held-out measurement found ("op @ line"), kept as measured, not tuned away.
    known_broken: tuple[str, ...] = ()
    # Unlisted places where a measured mutant was reviewed as a real fault (see the module doc).
    real: tuple[Site, ...] = ()
    # Build the file's classes without their `metaclass=`: an ABCMeta of its own cannot be
    # combined with the stubs standing for an uninstalled package's base classes.
    without_metaclass: bool = False
    # The file's path in its repository, and the other modules of it the operators may read
    # (`neighbours` in the manifest: repository paths, fetched into NEIGHBOURS/<name>/).
    path: str = ""
    neighbours: dict[str, str] = field(default_factory=dict)


@dataclass
class Verdict:
    """How one file's mutants compare with its review."""

    file: CorpusFile
    mutants: list[Mutant]
    found: list[Site] = field(default_factory=list)
    missed: list[Site] = field(default_factory=list)
    equivalent: list[Mutant] = field(default_factory=list)
    mutated_untouched: list[Site] = field(default_factory=list)
    unreviewed: list[Mutant] = field(default_factory=list)
    real: list[Mutant] = field(default_factory=list)
    real_unreached: list[Site] = field(default_factory=list)  # `real` sites no mutant reaches now
    broken: list[tuple[Mutant, str]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        total = len(self.found) + len(self.missed)
        return len(self.found) / total if total else 1.0


def corpus_files(split: str | None = None) -> list[CorpusFile]:
    """The corpus files of one split (both when None), in manifest order, those not fetched here
    left out. The committed corpus is read once per process (it does not change while the tests
    run); a corpus a test lays out itself (the paths above patched) is read afresh each time."""
    if (MANIFESTS, CORPUS, FETCHED, NEIGHBOURS) == _COMMITTED:
        return list(_committed_files(split))
    return list(_read_files(split))


@functools.lru_cache(maxsize=4)
def _committed_files(split: str | None) -> tuple[CorpusFile, ...]:
    return _read_files(split)


def _read_files(split: str | None) -> tuple[CorpusFile, ...]:
    files = []
    for name, manifest in MANIFESTS.items():
        if split is not None and name != split:
            continue
        for entry in tomllib.loads(manifest.read_text()).get("file", []):  # held-out is empty between rounds
            path = (FETCHED if entry.get("fetched") else CORPUS) / entry["name"]
            if entry.get("fetched") and not path.exists():
                continue
            text = path.read_text()
            lines = LineIndex(text)
            neighbours = _neighbours(entry)
            absent = set(entry.get("neighbours", [])) - set(neighbours)
            files.append(
                CorpusFile(
                    name=entry["name"],
                    split=name,
                    text=text,
                    expected=tuple(_site(text, lines, s, entry["name"], absent) for s in entry.get("expected", [])),
                    untouched=tuple(_site(text, lines, s, entry["name"], absent) for s in entry.get("untouched", [])),
                    load=entry.get("load", "import"),
                    construct=entry.get("construct", ""),
                    known_broken=tuple(entry.get("known_broken", [])),
                    real=tuple(_site(text, lines, s, entry["name"]) for s in entry.get("real", [])),
                    without_metaclass=bool(entry.get("without_metaclass", False)),
                    path=entry["path"],
                    neighbours=neighbours,
                )
            )
    return tuple(files)


def _neighbours(entry: dict) -> dict[str, str]:
    """The entry's neighbour modules present here: repository path -> text."""
    folder = NEIGHBOURS / entry["name"].removesuffix(".py")
    return {p: (folder / p).read_text() for p in entry.get("neighbours", []) if (folder / p).is_file()}


def absent_files(split: str | None = None) -> list[str]:
    """`repo:path@commit` of the fetched files a manifest lists that are not in this checkout."""
    absent = []
    for name, manifest in MANIFESTS.items():
        if split is not None and name != split:
            continue
        for entry in tomllib.loads(manifest.read_text()).get("file", []):
            if entry.get("fetched") and not (FETCHED / entry["name"]).exists():
                absent.append(f"{entry['repo']}:{entry['path']}@{entry['commit'][:12]} as fetched/{entry['name']}")
            folder = f"neighbours/{entry['name'].removesuffix('.py')}"
            for path in sorted(set(entry.get("neighbours", [])) - set(_neighbours(entry))):
                absent.append(f"{entry['repo']}:{path}@{entry['commit'][:12]} as fetched/{folder}/{path}")
    return absent


def _site(text: str, lines: LineIndex, spec: dict, name: str, absent: Collection[str] = ()) -> Site:
    anchor = spec.get("at", spec.get("in"))
    holding = [n for n, each in enumerate(_line_texts(text), 1) if anchor in each]
    nth = spec.get("nth")
    if nth is None and len(holding) != 1:
        raise ValueError(f"{name}: {anchor!r} is on {len(holding)} lines; give `nth`")
    if nth is not None and len(holding) < nth:
        raise ValueError(f"{name}: {anchor!r} is on fewer than {nth} lines")
    line = holding[(nth or 1) - 1]
    last = _block_end(text, lines, line) if "in" in spec else _statement_end(text, lines, line)
    label = f"{spec['op']} @ {line}: {anchor.strip()}"
    # `without_neighbours`: a shortfall only where the file's neighbour modules are not fetched
    # (the operators need their definitions to leave the site alone)
    known = bool(spec.get("known_miss") or spec.get("known_equivalent") or (spec.get("without_neighbours") and absent))
    return Site(spec["op"], line, last, label, spec.get("why", spec.get("known_miss", "")), "in" in spec, known)


def _statement_end(text: str, lines: LineIndex, line: int) -> int:
    """The last line of the simple statement that starts on `line` (itself if it is one line):
    the first run of lines from it that compiles on its own. A statement's end comes from the
    file's syntax tree, so only its own lines are tried (trying every longer run to the end of
    the file, where none compiles, took most of the corpus's loading time)."""
    if lines.line_text(line).rstrip().endswith(":"):
        return line  # a block header: the site is the header
    last = min(_statement_ends(text).get(line, line) + _SLACK, len(lines.starts))
    for number in range(line, last + 1):
        try:
            compile("".join(lines.line_text(n) for n in range(line, number + 1)).strip(), "<site>", "exec")
            return number
        except SyntaxError:
            continue
    # a line inside a statement that starts above it (habitat's `) = self._evaluate_actions(` under
    # the unpacked names): the site runs to that statement's end
    return min((end for start, end in _simple_statements(text) if start < line <= end), default=line)


@functools.lru_cache(maxsize=8)
def _simple_statements(text: str) -> tuple[tuple[int, int], ...]:
    """(first line, last line) of each statement of `text` that holds no block."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return ()
    return tuple(
        (node.lineno, node.end_lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and not isinstance(node, _BLOCKS) and node.end_lineno is not None
    )


@functools.lru_cache(maxsize=8)
def _line_texts(text: str) -> list[str]:
    """Each line of `text` as LineIndex.line_text gives it (without its line break), in order."""
    lines = LineIndex(text)
    return [lines.line_text(n) for n in range(1, len(lines.starts) + 1)]


_SLACK = 2  # lines past a statement's end still tried (a trailing comment, a backslash)


@functools.lru_cache(maxsize=8)
def _statement_ends(text: str) -> dict[int, int]:
    """First line -> last line of each statement of `text` (the longest that starts there; a
    decorated definition from each of its decorators)."""
    ends: dict[int, int] = {}
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return ends
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.end_lineno is not None:
            # a decorated definition starts at its first decorator
            starts = [node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]
            for start in starts:
                ends[start] = max(ends.get(start, start), node.end_lineno)
    return ends


def _block_end(text: str, lines: LineIndex, header: int) -> int:
    """The last line of the indented block that the line `header` opens."""
    indent = len(lines.line_text(header)) - len(lines.line_text(header).lstrip())
    last = header
    for number in range(header + 1, len(lines.starts) + 1):
        line = lines.line_text(number)
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        last = number
    return last


def touched_lines(mutant: Mutant, lines: LineIndex) -> set[int]:
    """The original lines a mutant's edits replace (an insertion touches the lines on either side)."""
    touched = set()
    for edit in mutant.edits:
        first = lines.line_of(edit.start)
        last = lines.line_of(max(edit.start, edit.end - 1))
        if edit.start == edit.end and edit.start == lines.line_start(first) and first > 1:
            first -= 1
        touched.update(range(first, last + 1))
    return touched


def cut_origins(mutant: Mutant, text: str, tree: ast.Module | None, lines: LineIndex) -> set[int]:
    """The lines that computed the names a detached-graph mutant cuts (`x.detach()` for `x`): the
    name's last assignment before the cut in the same function, and so on back through the names
    that assignment reads its value from (`mask = mask.permute(...)` after `mask = model(x)`)."""
    if mutant.operator != "detached-graph" or tree is None:
        return set()
    found: set[int] = set()
    for edit in mutant.edits:
        found |= _inserted_cut_readers(edit, tree, lines)
        name = text[edit.start : edit.end]
        if not name.isidentifier() or edit.text != f"{name}.detach()":
            continue
        line = lines.line_of(edit.start)
        scope = _scope_of(tree, line)
        for _ in range(8):
            assign = _last_assignment(scope, name, line)
            if assign is None:
                break
            found.update(range(assign.lineno, (assign.end_lineno or assign.lineno) + 1))
            if isinstance(assign.value, ast.Call):
                # the output a method of the class returns (Darts' `output = self._produce_train_output(
                # ...)`, whose `return self(...)` runs the forward): cut here, it is cut there
                found |= _returned_chains(tree, assign.value)
            root = _root_name(assign.value) or _single_read(assign.value)
            if root is None:
                break
            name, line = root, assign.lineno
    return found


def _inserted_cut_readers(edit: Edit, tree: ast.Module, lines: LineIndex) -> set[int]:
    """The statements an inserted cut (`loss = loss.detach()` on a line of its own, after the
    tuple `loss, parts = self.loss(...)` it comes from) cuts for: each later statement of the
    function that reads every cut name as that statement left it (`return loss`). The cut is
    theirs, whatever the tuple's own line is listed as; a statement reading only some of several
    cut names (one of two Q heads) keeps a cut of its own."""
    cuts = [re.fullmatch(r"\s*([A-Za-z_]\w*) = \1\.detach\(\)\s*", row) for row in edit.text.splitlines()]
    if edit.start != edit.end or not cuts or None in cuts:
        return set()
    line = lines.line_of(edit.start)
    scope = _scope_of(tree, line)
    sources = {}
    for name in {cut.group(1) for cut in cuts if cut is not None}:
        source = _last_assignment(scope, name, line)
        if source is None:
            return set()
        sources[name] = source
    # an in-place update (`loss /= accum`) is a statement of its own: the readers after it are its
    until = min(
        (
            n.lineno
            for n in ast.walk(scope)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in sources
            if n.lineno >= line
        ),
        default=float("inf"),
    )
    found: set[int] = set()
    for node in ast.walk(scope):
        if not isinstance(node, ast.stmt) or isinstance(node, _BLOCKS) or not line <= node.lineno < until:
            continue
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if all(name in reads and _last_assignment(scope, name, node.lineno) is s for name, s in sources.items()):
            found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return found


def same_cuts(mutant: Mutant, tree: ast.Module | None, lines: LineIndex) -> set[int]:
    """The lines whose cut is this mutant's own: a detached-graph or no-grad-training mutant that
    cuts off (or runs without autograd) the value one statement assigns also cuts, with the same
    effect, the statement before it whose output only that value reads (`ae, ats = model(d)`,
    `l1 = l(ae, d)` read by nothing else, `loss = torch.mean(l1)` cut whole): and so on back. A
    name read by any other statement, or a value computed from two such outputs, stops the walk:
    there the cuts differ."""
    if mutant.operator not in ("detached-graph", "no-grad-training") or tree is None:
        return set()
    found: set[int] = set()
    for edit in mutant.edits:
        line = lines.line_of(edit.start)
        if edit.start == edit.end and edit.start == lines.line_start(line) and line > 1:
            line -= 1  # an insertion after a statement (`y_hat = y_hat.detach()`): that statement
        scope = _scope_of(tree, line)
        statement = next(
            (
                n
                for n in ast.walk(scope)
                if isinstance(n, ast.Assign) and n.lineno <= line <= (n.end_lineno or n.lineno)
            ),
            None,
        )
        if statement is not None and isinstance(statement.value, ast.Call):
            found |= _returned_chains(tree, statement.value, _cut_positions(statement, edit.text))
        if mutant.operator == "no-grad-training":
            # a block wrapped whole: each call it assigns from runs without autograd too, and what
            # is computed from its values alone afterwards has no graph either
            last = lines.line_of(max(edit.end - 1, edit.start))
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign) and line <= node.lineno and (node.end_lineno or node.lineno) <= last:
                    if node is not statement and isinstance(node.value, ast.Call):
                        found |= _returned_chains(tree, node.value)
                    found |= _same_downstream(scope, node, _bound(node))
        found |= _same_downstream(scope, statement, _detached_names(edit.text))
        for _ in range(8):
            if statement is None:
                break
            earlier = [
                a
                for a in dict.fromkeys(
                    _last_assignment(scope, n.id, statement.lineno) for n in _graph_reads(statement.value)
                )
                if a is not None and not _without_graph(scope, a) and not _read_out(a.value)
            ]
            filled = [_filled_entry(scope, a, statement) for a in earlier]
            if len(earlier) == 1 and filled[0] is not None:
                # one zero per step, a step's loss added into its entry (MAML's `losses_q[k + 1] +=
                # loss_q`, the meta loss `losses_q[-1] / task_num`): the addition is the upstream
                statement = filled[0]
                found.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
                continue
            if len(earlier) != 1 or _read_elsewhere(scope, earlier[0], statement):
                break
            field = _field_read(statement.value, earlier[0])
            statement = earlier[0]
            found.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
            if isinstance(statement.value, ast.Call):
                # a method's result the cut value reads alone (MDLM's `loss = losses.loss` after
                # `losses = self._loss(...)`, whose `return Loss(loss=token_nll, ...)`): the lines
                # feeding that field inside the method are cut with it
                found |= _returned_chains(tree, statement.value, field=field)
    return found | _handed_on_by_callers(tree, mutant, lines, found)


_SETTINGS = re.compile(r"(parse_|add_|get_)?(args|arguments|config|cfg|settings|hparams)")


def _settings(assign: ast.Assign) -> bool:
    """True for the program's settings (CodeT5's `args = add_args(parser)`, `cfg = get_config()`):
    read for numbers (`args.gradient_accumulation_steps`), no graph."""
    value = assign.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return bool(_SETTINGS.fullmatch(name.lower()))


def _read_out(value: ast.expr) -> bool:
    """True for a number read off a tensor (`x_spt.size()`, `x.shape`): no graph."""
    if isinstance(value, ast.Call):
        value = value.func
    return isinstance(value, ast.Attribute) and value.attr in _READ_OUT


def _filled_entry(scope: ast.AST, start: ast.Assign, reader: ast.stmt) -> ast.AugAssign | None:
    """The one addition into an entry of `start`'s list of zeros (`losses_q = [0 for _ in ...]`,
    then `losses_q[k + 1] += loss_q`) outside no_grad between it and `reader`."""
    value = start.value
    zeros = isinstance(value, ast.ListComp) and isinstance(value.elt, ast.Constant)
    zeros = zeros or (isinstance(value, ast.List) and all(isinstance(e, ast.Constant) for e in value.elts))
    names = _bound(start)
    if not zeros or len(names) != 1:
        return None
    additions = [
        node
        for node in ast.walk(scope)
        if isinstance(node, ast.AugAssign)
        and isinstance(node.target, ast.Subscript)
        and isinstance(node.target.value, ast.Name)
        and node.target.value.id in names
        and start.lineno < node.lineno < reader.lineno
        and not _without_graph(scope, node)  # type: ignore[arg-type]
    ]
    return additions[0] if len(additions) == 1 else None


def _field_read(value: ast.expr, earlier: ast.Assign) -> str | None:
    """The one attribute `value` reads of what `earlier` binds (`losses.loss`: "loss"), or None
    where it reads the value whole or several of its fields."""
    names = _bound(earlier)
    fields = {
        node.attr
        for node in ast.walk(value)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
    }
    whole = [
        n
        for n in _graph_reads(value)
        if n.id in names and not any(isinstance(a, ast.Attribute) and a.value is n for a in ast.walk(value))
    ]
    return next(iter(fields)) if len(fields) == 1 and not whole else None


def _handed_on_by_callers(tree: ast.Module, mutant: Mutant, lines: LineIndex, found: set[int]) -> set[int]:
    """The `return self.step(...)` statements of the file that hand on what the mutated method
    returns (a Lightning module's `training_step` returning `self._train_val_step(...)`), where
    the mutant cuts (or runs without autograd) a value that method returns: their cut is its."""
    first = lines.line_of(mutant.edits[0].start)
    function = _scope_of(tree, first)
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    if not (touched_lines(mutant, lines) | found) & _chain_to_returns(function):
        return set()
    handing: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        named = func.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        if named == function.name and func.value.id == "self":  # type: ignore[union-attr]
            handing.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return handing


def _detached_names(text: str) -> set[str] | None:
    """The names an inserted `name = name.detach()` cuts; None for an edit of a whole value."""
    return set(re.findall(r"^\s*(\w+) = \1\.detach\(\)", text, re.MULTILINE)) or None


def _same_downstream(scope: ast.AST, statement: ast.Assign | None, cut: set[str] | None = None) -> set[int]:
    """The later lines whose cut is the same as that of `statement`'s output: a statement whose one
    graph input is that output, where it is the output's only reader (or one of two readers in the
    two branches of an `if`, which never both run), and so on forward (KGE's `negative_score =
    model(...)`, then `negative_score = F.logsigmoid(-negative_score).mean(dim=1)` in one branch
    and the self-adversarial sum in the other). `cut`: the names of an unpacked output that have
    no graph (UER-py's `loss = loss.detach()` after `loss, correct, denominator = loss_info`; all
    of them under no_grad); by default the output only where it is one name."""
    found: set[int] = set()
    todo = [statement] if statement is not None else []
    for _ in range(8):
        if not todo:
            break
        current = todo.pop()
        names = _bound(current)
        if current is statement and cut is not None:
            names &= cut
        elif current is statement and len(names) != 1:
            continue  # one name (a cut of one element of an unpacked tuple leaves the others' graphs)
        # a later line computed from the cut names alone has no graph in any name it binds
        updates = [
            node
            for node in ast.walk(scope)
            if isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in names
            and node.lineno > current.lineno
        ]
        if not names or not all(_rescale(scope, node) for node in updates):
            # not updated in place but by a factor (`loss -= c * entropies` adds a graph back)
            continue
        # a rescale in place by a number or a setting (`loss /= accumulation_steps`): cut before or
        # after it, the loss is the same
        for node in updates:
            found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        readers = [
            node
            for node in ast.walk(scope)
            if isinstance(node, ast.stmt)
            and node.lineno > (current.end_lineno or current.lineno)
            and any(
                read.id in names and _last_assignment(scope, read.id, node.lineno) is current
                for read in _own_reads(node)
            )
        ]
        backwards = [r for r in readers if _backward_of(r)]
        if backwards and all(
            {n.id for n in _differentiated(r)} & _bound(current) <= names and _graph_inputs(scope, r) == [current]
            for r in backwards
        ):
            # the backward itself, run on the cut value alone (k-diffusion's `accelerator.backward(
            # losses.mean())` after `losses = model.loss(...)`): its value is cut with it
            for reader in backwards:
                found.update(range(reader.lineno, (reader.end_lineno or reader.lineno) + 1))
            readers = [r for r in readers if r not in backwards]
            if not readers:
                continue
        if not readers or not all(isinstance(r, ast.Assign) for r in readers):
            continue
        if len(readers) == 2 and not _either_branch(scope, readers[0], readers[1]):
            continue
        if len(readers) > 2:
            continue
        for reader in readers:
            inputs = [
                a
                for a in dict.fromkeys(_last_assignment(scope, n.id, reader.lineno) for n in _graph_reads(reader.value))
                if a is not None and not _without_graph(scope, a) and not _settings(a)
            ]
            if inputs != [current] or any(
                n.id in _bound(current) - names and _last_assignment(scope, n.id, reader.lineno) is current
                for n in _graph_reads(reader.value)
            ):
                break  # another input, or a name of the output that keeps its graph
        else:
            for reader in readers:
                found.update(range(reader.lineno, (reader.end_lineno or reader.lineno) + 1))
                todo.append(reader)  # type: ignore[arg-type]
    return found


def _backward_of(statement: ast.stmt) -> bool:
    """True for `loss.backward()`, `accelerator.backward(loss)`, `self.manual_backward(loss)` as a
    statement of its own."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("backward", "manual_backward")
    )


def _differentiated(statement: ast.stmt) -> list[ast.Name]:
    """The names a backward statement differentiates: the receiver of `loss.backward()`, the
    arguments of `accelerator.backward(loss)`."""
    call = statement.value  # type: ignore[attr-defined]
    if not call.args:
        return _graph_reads(call.func.value)
    return [n for a in call.args for n in _graph_reads(a)]


def _graph_inputs(scope: ast.AST, statement: ast.stmt) -> list[ast.Assign]:
    """The assignments of the scope whose values a backward statement differentiates."""
    return [
        a
        for a in dict.fromkeys(_last_assignment(scope, n.id, statement.lineno) for n in _differentiated(statement))
        if a is not None and not _without_graph(scope, a)
    ]


def _rescale(scope: ast.AST, update: ast.AugAssign) -> bool:
    """True for `loss /= k` or `loss *= k` by a number or a setting: no call, no value of the
    scope with a graph."""
    return (
        isinstance(update.op, (ast.Div, ast.Mult))
        and not any(isinstance(n, ast.Call) for n in ast.walk(update.value))
        and not any(
            a is not None and not _without_graph(scope, a)
            for a in (_last_assignment(scope, n.id, update.lineno) for n in _graph_reads(update.value))
        )
    )


def _either_branch(scope: ast.AST, first: ast.stmt, second: ast.stmt) -> bool:
    """True where one statement is in an `if`'s body and the other in its `else`."""
    for node in ast.walk(scope):
        if isinstance(node, ast.If):
            body = {id(n) for b in node.body for n in ast.walk(b)}
            orelse = {id(n) for b in node.orelse for n in ast.walk(b)}
            if (id(first) in body and id(second) in orelse) or (id(first) in orelse and id(second) in body):
                return True
    return False


def _cut_positions(statement: ast.Assign, text: str) -> set[int] | None:
    """Where a detached-graph edit cuts names one by one after a statement that unpacks a call
    (`loss, hidden, extra_out = self.get_loss(...)`, then `loss = loss.detach()`): the positions
    of those names in the target; None where the whole value is cut (or run without autograd)."""
    cut = set(re.findall(r"^\s*(\w+) = \1\.detach\(\)", text, re.MULTILINE))
    target = statement.targets[0] if len(statement.targets) == 1 else None
    if not cut or not isinstance(target, ast.Tuple):
        return None
    return {i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id in cut}


def _returned_chains(
    tree: ast.Module, call: ast.Call, positions: set[int] | None = None, field: str | None = None, depth: int = 4
) -> set[int]:
    """The lines of a loss function of the file that feed what it returns, where the caller's
    call is cut: a loss function built by a factory (score_sde's `loss_fn = get_sde_loss_fn(sde,
    train, ...)`, whose nested `loss_fn(model, batch)` computes `score = score_fn(perturbed_data,
    t)` and returns `loss = torch.mean(losses)`), or a method of the caller's class (ENAS'
    `loss, hidden, extra_out = self.get_loss(...)`, whose loop runs the shared model and sums the
    loss it returns first). Cutting (or running without autograd) the caller's value is the same
    mutant as cutting those lines: what they compute reaches nothing else. `positions`: the
    elements of a returned tuple the caller cuts (all where None); `field`: the one field of a
    returned record it reads (`Loss(loss=token_nll, nlls=nlls)` read as `.loss`). The methods those
    lines call in turn are followed `depth` levels down (MDLM's `_loss` calls
    `_forward_pass_diffusion`, which calls `forward`, which runs the backbone)."""
    if isinstance(call.func, ast.Name) and call.func.id == "self":
        # `self(x, batch)`: the module's own forward (generative-models' shared_step)
        call = ast.Call(
            func=ast.Attribute(value=call.func, attr="forward", ctx=ast.Load()),
            args=call.args,
            keywords=call.keywords,
            lineno=call.lineno,
            col_offset=call.col_offset,
            end_lineno=call.end_lineno,
            end_col_offset=call.end_col_offset,
        )
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
        owner = next(
            (
                c
                for c in ast.walk(tree)
                if isinstance(c, ast.ClassDef) and c.lineno <= call.lineno <= (c.end_lineno or c.lineno)
            ),
            None,
        )
        methods = [
            d for d in (owner.body if owner else []) if isinstance(d, ast.FunctionDef) and d.name == call.func.attr
        ]
        # or a function held in an attribute: DeBERTa's `self.loss_fn = loss_fn if loss_fn is not None else
        # _loss_fn`, the default a closure defined beside that assignment
        for function in [d for d in (owner.body if owner else []) if isinstance(d, ast.FunctionDef)]:
            nested = {d.name: d for d in function.body if isinstance(d, ast.FunctionDef)}
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == call.func.attr for t in node.targets
                ):
                    methods += [
                        nested[n.id] for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id in nested
                    ]
        found = set().union(*(_chain_to_returns(m, positions, field) for m in methods))
        if depth > 0:
            for method in methods:
                for node in ast.walk(method):
                    if (
                        isinstance(node, ast.Call)
                        and node is not call
                        and node.lineno in found
                        and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "self"
                        and node.func.attr != method.name
                    ):
                        found |= _returned_chains(tree, node, depth=depth - 1)
        return found
    if not isinstance(call.func, ast.Name):
        return set()
    name = call.func.id
    # a function of the module (learn2learn's `loss, acc = fast_adapt(model, batch, ...)`)
    functions = [d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == name]
    if functions:
        return set().union(*(_chain_to_returns(f, positions, field) for f in functions))
    closures: list[ast.FunctionDef] = []
    for node in ast.walk(tree):  # bound where the caller's function is defined, or around it
        if not (isinstance(node, ast.Assign) and name in _bound(node) and isinstance(node.value, ast.Call)):
            continue
        factory = node.value.func.id if isinstance(node.value.func, ast.Name) else None
        for definition in tree.body:
            if isinstance(definition, ast.FunctionDef) and definition.name == factory:
                returned = {
                    r.value.id
                    for r in ast.walk(definition)
                    if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)
                }
                closures += [d for d in definition.body if isinstance(d, ast.FunctionDef) and d.name in returned]
    return set().union(*(_chain_to_returns(c) for c in closures))


def _chain_to_returns(
    function: ast.FunctionDef, positions: set[int] | None = None, field: str | None = None
) -> set[int]:
    """The lines of `function` whose values feed what it returns (the elements at `positions` of
    a returned tuple, or the `field` of a returned record, where given): each assignment of a name
    a return reads, and back; and each return that computes its value itself."""
    pending: list[ast.expr] = []
    for ret in ast.walk(function):
        if isinstance(ret, ast.Return) and ret.value is not None:
            if positions is not None and isinstance(ret.value, ast.Tuple):
                pending += [e for i, e in enumerate(ret.value.elts) if i in positions]
            elif (
                field is not None
                and isinstance(ret.value, ast.Call)
                and any(k.arg == field for k in ret.value.keywords)
            ):
                pending += [k.value for k in ret.value.keywords if k.arg == field]
            else:
                pending.append(ret.value)
    found: set[int] = set()
    for ret in ast.walk(function):
        if isinstance(ret, ast.Return) and (
            isinstance(ret.value, ast.Call)
            or (isinstance(ret.value, (ast.BinOp, ast.UnaryOp)) and _graph_reads(ret.value))
        ):
            # the forward computed in the return itself (Darts' `return self(self._process_input_batch(
            # input_batch))`), or the loss (MDLM's `return - log_p_theta * (dsigma / torch.expm1(sigma))[:, None]`)
            found.update(range(ret.lineno, (ret.end_lineno or ret.lineno) + 1))
    seen: set[str] = set()
    while pending:
        for read in _graph_reads(pending.pop()):
            if read.id in seen:
                continue
            seen.add(read.id)
            for node in ast.walk(function):
                bound = isinstance(node, ast.Assign) and read.id in _bound(node)
                added = (
                    isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == read.id
                )
                if bound or added:
                    found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
                    pending.append(node.value)
    return found


def _without_graph(scope: ast.AST, assign: ast.Assign) -> bool:
    """True for an assignment inside a `with torch.no_grad():` (or `inference_mode()`) block of
    the scope: its value carries no graph (DrQ-v2's TD target), so a cut does not reach it; and
    for rows indexed out of a batch the function is handed as a tuple (ElegantRL's `states,
    actions, unmasks, ... = buffer`, then `unmask = unmasks[ids0, ids1]`)."""
    if _batch_rows(scope, assign):
        return True
    for node in ast.walk(scope):
        if isinstance(node, ast.With) and node.lineno < assign.lineno <= (node.end_lineno or node.lineno):
            for item in node.items:
                call = item.context_expr
                name = getattr(getattr(call, "func", None), "attr", getattr(getattr(call, "func", None), "id", None))
                if name in ("no_grad", "inference_mode"):
                    return True
    return False


def _batch_rows(scope: ast.AST, assign: ast.Assign) -> bool:
    """True for `row = rows[index]` where `rows` is one of the names a tuple parameter of the
    function is unpacked into (`states, actions, ... = buffer`)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(assign.value, ast.Subscript):
        return False
    base = assign.value.value
    if not isinstance(base, ast.Name):
        return False
    parameters = {a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)} - {"self"}
    unpacking = _last_assignment(scope, base.id, assign.lineno)
    return (
        unpacking is not None
        and len(unpacking.targets) == 1
        and isinstance(unpacking.targets[0], ast.Tuple)
        and isinstance(unpacking.value, ast.Name)
        and unpacking.value.id in parameters
    )


def switched_off(mutant: Mutant, tree: ast.Module | None, lines: LineIndex) -> set[int]:
    """The lines a no-grad-training mutant runs without autograd by switching a block's own
    switch off (SiamFC's `with torch.set_grad_enabled(backward):` made `set_grad_enabled(False)`):
    the block's body, as if each of its lines were wrapped."""
    if mutant.operator != "no-grad-training" or tree is None:
        return set()
    found: set[int] = set()
    for edit in mutant.edits:
        line = lines.line_of(edit.start)
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call)
                and getattr(i.context_expr.func, "attr", getattr(i.context_expr.func, "id", None)) == "set_grad_enabled"
                and i.context_expr.lineno <= line <= (i.context_expr.end_lineno or line)
                for i in node.items
            ):
                found.update(range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1))
    return found


def _graph_reads(node: ast.AST) -> list[ast.Name]:
    """The names `node` reads as values a graph may flow through: not what it calls, nor what it
    reads out through `.item()`, `.detach()`, `.shape` and the like."""
    skipped: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            skipped.add(id(sub.func))
            if isinstance(sub.func, ast.Attribute) and sub.func.attr in _READ_OUT:
                skipped.update(id(n) for n in ast.walk(sub.func.value))
        if isinstance(sub, ast.Attribute) and sub.attr in _READ_OUT:
            skipped.update(id(n) for n in ast.walk(sub.value))
    return [
        n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skipped
    ]


_READ_OUT = frozenset({"item", "detach", "cpu", "numpy", "tolist", "shape", "device", "dtype", "size", "argmax"})


_BLOCKS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try)


def _own_reads(statement: ast.stmt) -> list[ast.Name]:
    """The graph reads of a statement itself: of a block, its header only (the statements of its
    body are read on their own)."""
    if not isinstance(statement, _BLOCKS):
        return _graph_reads(statement)
    headers = [getattr(statement, f, None) for f in ("test", "iter")]
    headers += [item.context_expr for item in getattr(statement, "items", [])]
    return [n for header in headers if header is not None for n in _graph_reads(header)]


def _read_elsewhere(scope: ast.AST, assign: ast.Assign, reader: ast.Assign) -> bool:
    """True where a name `assign` binds is read, as a value, by a statement other than `reader`
    while that binding holds; not by one in the other branch of an `if` from `reader`, which
    never runs with it (ElegantRL's `obj_critic = (td_error * is_weight).mean()` under PER and
    `obj_critic = td_error.mean()` otherwise)."""
    names = _bound(assign)
    for statement in ast.walk(scope):
        if not isinstance(statement, ast.stmt) or statement is reader or statement.lineno <= assign.lineno:
            continue
        if _either_branch(scope, statement, reader):
            continue
        for read in _own_reads(statement):
            if read.id in names and _last_assignment(scope, read.id, statement.lineno) is assign:
                return True
    return False


def _scope_of(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function holding `line` (the module where none does)."""
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return max(functions, key=lambda node: node.lineno, default=tree)


def _last_assignment(scope: ast.AST, name: str, line: int) -> ast.Assign | None:
    last = None
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < line
            and name in _bound(node)
            and (last is None or node.lineno > last.lineno)
        ):
            last = node
    return last


def _bound(assign: ast.Assign) -> set[str]:
    """The names an assignment binds or stores into: `x` and `y` for `x, y = ...`, `vecs` for
    `vecs[n, :] = out` (an entry stored into it), none for `self.out = ...` (an attribute of
    `self` is stored, `self` itself is only read)."""
    found: set[str] = set()
    targets: list[ast.expr] = list(assign.targets)
    while targets:
        target = targets.pop()
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            found.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
    return found


def _single_read(value: ast.expr) -> str | None:
    """The one name a value computes from, where it computes from one (SeisT's `outs(outputs) if
    outs is not None else outputs`: a transform of the output, or the output itself), leaving out
    what a conditional only tests."""
    tested = {id(n) for node in ast.walk(value) if isinstance(node, ast.IfExp) for n in ast.walk(node.test)}
    names = {n.id for n in _graph_reads(value) if id(n) not in tested}
    return names.pop() if len(names) == 1 else None


def _root_name(value: ast.expr) -> str | None:
    """The name a value is read from through entries, attributes and methods, if any."""
    while True:
        if isinstance(value, (ast.Subscript, ast.Attribute)):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            value = value.func.value
        else:
            return value.id if isinstance(value, ast.Name) else None


def _matches(site: Site, mutant: Mutant, touched: set[int], headers: set[int] | None = None) -> bool:
    if mutant.operator != site.op:
        return False
    if site.block and headers is not None:
        # The mutant must sit in that block, not in a loop nested in it.
        return site.first in headers | touched
    return any(site.first <= n <= site.last for n in touched)


def loop_headers(mutant: Mutant, lines: LineIndex) -> set[int]:
    """The header line of the innermost block around each of the mutant's edits."""
    found = set()
    for edit in mutant.edits:
        number = lines.line_of(edit.start)
        text = lines.line_text(number)
        indent = len(text) - len(text.lstrip()) if text.strip() else 10**6
        for above in range(number - 1, 0, -1):
            line = lines.line_text(above)
            if not line.strip():
                continue
            depth = len(line) - len(line.lstrip())
            if depth < indent:
                if line.rstrip().endswith(":"):
                    found.add(_header_start(lines, above))
                    break
                indent = depth
    return found


def _header_start(lines: LineIndex, number: int) -> int:
    """The first line of a block header split over lines (`for step, batch in enumerate(` ...
    `):`): the header's last line closes a bracket the line it starts on, at its indent, opened."""
    text = lines.line_text(number)
    if not text.lstrip().startswith((")", "]", "}")):
        return number
    depth = len(text) - len(text.lstrip())
    for above in range(number - 1, 0, -1):
        line = lines.line_text(above)
        if line.strip() and len(line) - len(line.lstrip()) == depth:
            return above
    return number


def judge(file: CorpusFile, load: bool = True) -> Verdict:
    """Compare the operators' mutants of one corpus file with its review."""
    if file.neighbours:
        mutants = mutants_for_source(file.text, file.path, read=mapping_reader(file.neighbours))
    else:
        mutants = mutants_for_source(file.text, file.name)
    verdict = Verdict(file, mutants)
    lines = LineIndex(file.text)
    try:
        tree: ast.Module | None = ast.parse(file.text.removeprefix("\ufeff"))
    except SyntaxError:
        tree = None  # Python 2 (a few old files): no origins to follow
    touched = {
        m.id: touched_lines(m, lines)
        | cut_origins(m, file.text, tree, lines)
        | same_cuts(m, tree, lines)
        | switched_off(m, tree, lines)
        for m in mutants
    }
    headers = {m.id: loop_headers(m, lines) for m in mutants}
    for site in file.expected:
        hit = any(_matches(site, m, touched[m.id], headers[m.id]) for m in mutants)
        (verdict.found if hit else verdict.missed).append(site)
    # a mutant that reaches an expected site is that site's, whatever untouched lines its edit also
    # spans (a forward-and-loss run wrapped in no_grad spans the teacher's forward inside it)
    # (or a real one's: a reviewed judgement of that mutant, whatever the line's untouched listing)
    own = [
        m
        for m in mutants
        if not any(_matches(s, m, touched[m.id], headers[m.id]) for s in (*file.expected, *file.real))
    ]
    for site in file.untouched:
        if any(_matches(site, m, touched[m.id], headers[m.id]) for m in own):
            verdict.mutated_untouched.append(site)
    for site in file.real:
        if not any(_matches(site, m, touched[m.id], headers[m.id]) for m in mutants):
            verdict.real_unreached.append(site)
    for mutant in mutants:
        if any(_matches(site, mutant, touched[mutant.id], headers[mutant.id]) for site in file.expected):
            continue
        if any(_matches(site, mutant, touched[mutant.id], headers[mutant.id]) for site in file.real):
            verdict.real.append(mutant)
        elif any(_matches(site, mutant, touched[mutant.id], headers[mutant.id]) for site in file.untouched):
            verdict.equivalent.append(mutant)
        else:
            verdict.unreviewed.append(mutant)
    if load:
        verdict.broken = broken_mutants(file, mutants)
    return verdict


# ---- loading mutated modules ----


def broken_mutants(file: CorpusFile, mutants: list[Mutant]) -> list[tuple[Mutant, str]]:
    """Mutants that do not compile, that read a method a literal does not have (`(0).detach()`,
    `{}.detach()`: they load, then fail on the step's first run), or whose module does not load
    where the original does."""
    original = load_module(file.text, file)
    on_numbers = _methods_on_numbers(ast.parse(file.text.removeprefix("\ufeff")))
    broken = []
    for mutant in mutants:
        text = mutant.apply(file.text).removeprefix("\ufeff")
        try:
            tree = ast.parse(text, file.name)
            code = compile(tree, file.name, "exec")
        except SyntaxError as error:
            broken.append((mutant, f"SyntaxError: {error.msg} (line {error.lineno})"))
            continue
        added = _methods_on_numbers(tree) - on_numbers
        if added:
            broken.append((mutant, f"AttributeError: a method a literal lacks: {sorted(added)[0]}"))
            continue
        if original is None:
            problem = load_module(text, file, code, tree)
            if problem is not None:
                broken.append((mutant, problem))
    return broken


_LITERALS = {ast.Dict: dict, ast.List: list, ast.Set: set, ast.Tuple: tuple}


def _methods_on_numbers(tree: ast.AST) -> set[str]:
    """`(0).detach`, `(1.0).cuda`, `{}.detach`: attributes a literal's type does not have, read
    off a number, dict, list, set or tuple literal (each spelled once)."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, (int, float, complex)):
            if not hasattr(value.value, node.attr):
                found.add(f"({value.value!r}).{node.attr}")
        elif type(value) in _LITERALS and not hasattr(_LITERALS[type(value)], node.attr):
            found.add(f"{_LITERALS[type(value)].__name__} literal.{node.attr}")
    return found


def load_module(
    text: str, file: CorpusFile, compiled: types.CodeType | None = None, tree: ast.Module | None = None
) -> str | None:
    """Import `text` as a module (not as `__main__`) and run `file.construct` in it; `compiled`
    is `text` compiled already and `tree` its syntax tree (which this may change), where the
    caller has them.

    Returns None when it loads, else the error in one line.
    """
    # What `from . import x`, `from ..utils import y` and `from ...metrics import z` reach: stubs
    # (three levels, for a library module such as asteroid's engine/system.py or FuxiCTR's
    # pytorch/models/base_model.py).
    package = f"corpus_package_{Path(file.name).stem}.inner.deeper"
    text = text.removeprefix("\ufeff")  # Python reads a byte-order mark off a file, not off a str
    with _stubbed_imports(file.text.removeprefix("\ufeff"), package):
        # a name no file imports (GluonTS' deepar/lightning_module.py imports its sibling `.module`)
        module = types.ModuleType(f"{package}._corpus_file")
        module.__file__ = str(CORPUS / file.name)
        module.__package__ = package
        whole = file.load == "import" and not file.without_metaclass
        if not whole or compiled is None:
            tree = tree or ast.parse(text, file.name)
            if file.load != "import":
                tree.body = _definitions(tree)
            if file.without_metaclass:
                _drop_metaclasses(tree)
            compiled = compile(tree, file.name, "exec")
        for name, value in _star_imported(file.text.removeprefix("\ufeff")).items():
            module.__dict__[name] = value
        sys.modules[module.__name__] = module  # dataclasses look their module up there
        # TorchScript reads a scripted method's source through linecache (RWKV's
        # `@torch.jit.script_method`): the text loaded, under the name it is compiled with
        linecache.cache[file.name] = (len(text), None, text.splitlines(keepends=True), file.name)
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # what the file prints at start-up
                exec(compiled, module.__dict__)
                if file.construct:
                    exec(compile(file.construct, f"{file.name}:construct", "exec"), module.__dict__)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        finally:
            sys.modules.pop(module.__name__, None)
            linecache.cache.pop(file.name, None)
    return None


@functools.cache
def _star_imported(text: str) -> dict:
    """What a file takes from a relative `from .utils import *` (TextBrewer's distillers take
    their base class, torch and amp so): a stub package gives a star import nothing, so each name
    the file reads and never binds is given here: the module of that name where one is imported
    already (`torch`), else a stub class."""
    tree = ast.parse(text)
    if not any(isinstance(n, ast.ImportFrom) and n.level and any(a.name == "*" for a in n.names) for n in tree.body):
        return {}
    bound: set[str] = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    return {name: sys.modules.get(name) or _stub_class(name) for name in sorted(free)}


def _drop_metaclasses(tree: ast.Module) -> None:
    """Leave every class statement's `metaclass=...` keyword out of `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            node.keywords = [k for k in node.keywords if k.arg != "metaclass"]


def _definitions(tree: ast.Module) -> list[ast.stmt]:
    """Only the imports, functions and classes of a script that trains at module level: a line
    of several statements is kept only where all of them import."""
    lines: list[list[ast.stmt]] = []  # statements joined by `;` share a line
    for statement in tree.body:
        if lines and statement.lineno == lines[-1][-1].end_lineno:
            lines[-1].append(statement)
        else:
            lines.append([statement])
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for s in tree.body
        if isinstance(s, (ast.Import, ast.ImportFrom))
        for alias in s.names
    }
    kept = []
    for line in lines:
        if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in line):
            kept += line
        elif isinstance(line[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kept.append(line[0])
        elif len(line) == 1 and (_type_variable(line[0]) or _alias(line[0], imported)):
            # `BatchType = TypeVar("BatchType")`, or RWKV's `MyModule = torch.jit.ScriptModule`:
            # names a class's bases or decorators read
            kept.append(line[0])
    return kept


def _alias(statement: ast.stmt, imported: set[str]) -> bool:
    """True for `Name = module.name` of an imported module: another name, nothing run."""
    if not (
        isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
    ):
        return False
    value = statement.value
    while isinstance(value, ast.Attribute):
        if value.attr.startswith("__"):
            return False  # `archs.__all__`: read off the module at run time, not a name of it
        value = value.value
    return isinstance(value, ast.Name) and value.id in imported


def _type_variable(statement: ast.stmt) -> bool:
    """True for `T = TypeVar(...)` (or NewType, ParamSpec): a name the classes' bases read."""
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, (ast.Name, ast.Attribute))
        and (statement.value.func.id if isinstance(statement.value.func, ast.Name) else statement.value.func.attr)
        in ("TypeVar", "NewType", "ParamSpec")
    )


class _Anything:
    """Stands for any object from a package that is not installed: every use gives another."""

    _is_protocol = False  # read by the protocols' metaclass (see _StubType)

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __add__(self, other):
        return _Anything()

    # a default made at definition time from a stub (NequIP's `f"{VALIDATION}_" + ABBREV.get(...)`)
    __radd__ = __add__

    def __mro_entries__(self, bases):
        return (_stub_class("Base"),)


class _StubType(type(typing_extensions.Protocol)):  # type: ignore[misc]
    """A stub class's metaclass. It derives from the protocols' metaclass (an ABCMeta), so a
    class can take a stub beside a real protocol or ABC as its bases (torchtitan's `Trainer(
    torch.distributed.checkpoint.stateful.Stateful, Configurable)`)."""

    def __getattr__(cls, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __getitem__(cls, key):
        return cls

    def __iter__(cls):
        return iter(())  # else iteration would go through __getitem__ forever

    def register(cls, *args, **kwargs):  # ABCMeta's, shadowing a stub's (allennlp's `@Trainer.register(...)`)
        return _Anything()


def _stub_class(name: str) -> type:
    return _StubType(name, (_Anything,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A package the corpus file imports but that is not installed imports as a stub, and so
    does a module of an installed package that cannot import here (`torch.utils.tensorboard`
    without tensorboard). Only those: libraries that probe for optional packages
    (`try: import flint`) must still see them missing."""

    def __init__(self, packages: set[str], modules: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.packages = packages
        self.modules = modules

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] not in self.packages and not any(
            fullname == m or fullname.startswith(f"{m}.") for m in self.modules
        ):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        pass


def _missing_packages(text: str) -> set[str]:
    """Top-level packages the file imports that are not installed here."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.modules and importlib.util.find_spec(name) is None}


def _unimportable_modules(text: str) -> set[str]:
    """Modules of installed packages that the file imports but that fail to import here (they
    need a package that is not installed)."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if "." in alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and "." in node.module:
            names.add(node.module)
    found = set()
    for name in sorted(names):
        if importlib.util.find_spec(name.split(".")[0]) is None:
            continue
        try:
            importlib.import_module(name)
        except ImportError:
            found.add(name)
    # A project's own module shadowed by an installed one of the same name (`from test import
    # validation` next to the script, where the standard library has a `test` package).
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level or node.module in sys.modules:
            continue
        if importlib.util.find_spec(node.module.split(".")[0]) is None:
            continue
        try:
            module = importlib.import_module(node.module)
        except ImportError:
            continue
        if any(a.name != "*" and not hasattr(module, a.name) for a in node.names):
            sys.modules.pop(node.module, None)
            found.add(node.module)
    return found


@functools.cache
def _stub_plan(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a file's imports need stubbed: its missing packages and its unimportable modules.
    Every mutant of a file loads with the same plan, so it is worked out once per file."""
    return frozenset(_missing_packages(text)), frozenset(_unimportable_modules(text))


class _stubbed_imports:
    def __init__(self, text: str, package: str) -> None:
        missing, self.modules = _stub_plan(text)
        self.packages = missing | {package.split(".")[0]}

    def __enter__(self) -> None:
        # a shadowed module that something imported again since the plan was made goes again
        for name in self.modules:
            if name in sys.modules and not isinstance(sys.modules[name], _StubModule):
                del sys.modules[name]
        self.finder = _StubFinder(self.packages, self.modules)
        self.before = set(sys.modules)
        # First on the path for the unimportable modules of installed packages (the usual finders
        # would find them and fail again); for packages that are not installed the order is moot.
        sys.meta_path.insert(0, self.finder)

    def __exit__(self, *exc) -> None:
        sys.meta_path.remove(self.finder)
        for name in set(sys.modules) - self.before:
            if isinstance(sys.modules[name], _StubModule):
                del sys.modules[name]
