"""From source text to mutants: run the operators over one parsed file."""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from injector import catalog
from injector.discovery import Skipped, SourceFile
from injector.mutants import Edit, Mutant, mutant_id, unified_diff
from injector.neighbours import Neighbours, Reader, folder_reader
from injector.operators import Operator, all_operators
from injector.patterns import Training
from injector.sanity import broken_edit
from injector.source import ParseError, Source

PARALLEL_FROM_LINES = 3000  # below this, starting workers costs more than it saves
# `# trainwreck: ignore` silences every mutant on the line; `# trainwreck: ignore[id, id]` those ids.
IGNORE_COMMENT = re.compile(r"#\s*trainwreck:\s*ignore(?:\[([^\]]*)\])?")


def mutants_for_source(
    text: str,
    path: str = "<string>",
    operators: Iterable[Operator] | None = None,
    read: Reader | None = None,
    cache: dict | None = None,
) -> list[Mutant]:
    """Every mutant the operators make of one file's text, in operator then source order.

    `path` is the file's posix path from the project root; `read` reads the project's other
    files by such paths (the modules this one imports, where an operator needs their
    definitions), and `cache` keeps what it parsed for the next file. Raises
    `injector.source.ParseError` if the text is not valid Python.
    """
    source = Source(text, path)
    if read is not None:
        source.neighbours = Neighbours(path, read, cache)
    training = Training(source)
    mutants: list[Mutant] = []
    seen: set[tuple[Edit, ...]] = set()
    for operator in operators if operators is not None else all_operators():
        ordinals: dict[tuple, int] = {}
        for change in operator.changes(source, training):
            # one edit reached twice (a rate handed to a helper that builds one of several
            # optimizers with it) is one edit
            edits = tuple(sorted(set(change.edits)))
            if edits in seen or all(text[e.start : e.end] == e.text for e in edits):
                continue  # the same edit from another operator, or no change at all
            if source.in_dead_branch(change.node):
                continue  # code no run reaches (`else:` of `if True:`): nothing could kill it
            if any(broken_edit(text[e.start : e.end], e.text) for e in edits):
                continue  # it would break every run (a module detached): killed without injecting the fault
            seen.add(edits)
            scope = source.scope_name(change.node)
            key = (scope, tuple((text[e.start : e.end], e.text) for e in edits))
            ordinals[key] = ordinals.get(key, -1) + 1
            ignored = _ignored_by_comment(source, change.node, edits, operator.id)
            runtime = source.runtime_function(change.node)
            if runtime is not None and not all(runtime[2][0] <= e.start and e.end <= runtime[2][1] for e in edits):
                runtime = None  # an edit reaches outside the function: treat as import-time code
            mutants.append(
                Mutant(
                    id=mutant_id(path, operator.id, scope, edits, text, ordinals[key]),
                    operator=operator.id,
                    file=path,
                    line=source.lines.line_of(edits[0].start),
                    description=change.description,
                    diff=unified_diff(text, edits, path, source.lines),
                    edits=edits,
                    function=runtime[0] if runtime else None,
                    function_line=runtime[1] if runtime else None,
                    in_main=source.in_main_block(change.node),
                    ignored=ignored,
                )
            )
    return mutants


def _ignored_by_comment(source: Source, node, edits: tuple[Edit, ...], fault_id: str) -> str | None:
    """The reason a mutant is silenced by a comment on its site's first line or a line it edits."""
    lines = {source.line(node)}
    for edit in edits:
        first = source.lines.line_of(edit.start)
        lines.update(range(first, source.lines.line_of(max(edit.start, edit.end - 1)) + 1))
    for number in sorted(lines):
        match = IGNORE_COMMENT.search(source.lines.line_text(number))
        if match is None:
            continue
        ids = {i.strip() for i in (match.group(1) or "").split(",") if i.strip()}
        if not ids or fault_id in ids or any(catalog.ALIASES.get(i) == fault_id for i in ids):
            return f"`{match.group(0).strip()}` on line {number}"
    return None


def skip_listed(mutants: list[Mutant], skip: Iterable[str]) -> tuple[list[Mutant], list[str]]:
    """Mark the mutants whose ids the project lists in `skip-mutants` as ignored.

    Returns the mutants and the listed ids that match no mutant (a stale entry, worth a warning).
    """
    wanted = set(skip)
    marked = [replace(m, ignored=m.ignored or "listed in skip-mutants") if m.id in wanted else m for m in mutants]
    return marked, sorted(wanted - {m.id for m in mutants})


@dataclass(frozen=True)
class Generation:
    """The mutants of a set of files, and the files that could not be used (with why)."""

    mutants: list[Mutant]
    skipped: list[Skipped]
    files: int
    lines: int


def mutants_for_files(files: list[SourceFile], operators: Iterable[Operator], jobs: int | None = None) -> Generation:
    """Mutants for every file; a file that does not parse is skipped with the parser's message.

    Large sets of files are spread over `jobs` processes (default: one per core); the
    result is the same, in the same order, either way.
    """
    operators = tuple(operators)
    jobs = jobs or os.cpu_count() or 1
    total_lines = sum(file.text.count("\n") for file in files)
    if jobs > 1 and len(files) > 1 and total_lines > PARALLEL_FROM_LINES:
        # fork: the workers inherit the parsed operators; nothing here touches CUDA.
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(files)), mp_context=context) as pool:
            results = list(pool.map(_file_mutants, files, [operators] * len(files)))
    else:
        cache: dict = {}  # the project's modules other files import, parsed once
        results = [_file_mutants(file, operators, cache) for file in files]
    mutants: list[Mutant] = []
    skipped: list[Skipped] = []
    lines = 0
    for file, result in zip(files, results, strict=False):
        if isinstance(result, Skipped):
            skipped.append(result)
        else:
            mutants.extend(result)
            lines += file.text.count("\n")
    return Generation(mutants, skipped, len(files) - len(skipped), lines)


def _root_of(file: SourceFile) -> Path | None:
    """The project root a file's relative path was taken from (None for a file outside it)."""
    standing = Path(os.path.abspath(file.path))
    parts = PurePosixPath(file.relative).parts
    if file.relative.startswith(("/", "..")) or standing.parts[-len(parts) :] != parts:
        return None
    return standing.parents[len(parts) - 1]


def _file_mutants(
    file: SourceFile, operators: tuple[Operator, ...], cache: dict | None = None
) -> list[Mutant] | Skipped:
    read = folder_reader(root) if (root := _root_of(file)) is not None else None
    try:
        return mutants_for_source(file.text, file.relative, operators, read, cache)
    except ParseError as error:
        return Skipped(file.relative, error.reason, error.line)
