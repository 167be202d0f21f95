"""Writing the guard test for a survivor: its reaching test's own code, run under a watcher.

A survivor's reaching tests (the report's `covered_by`) already build the project's objects
the way the project does: through its fixtures and factories, calling the mutated function as
it is called. The suggested test is such a test, copied with its signature (so pytest gives it
the same fixtures), its decorators and the helpers of its module, with its body run inside
`injector.guards.watch(<fault id>)`. Where no reaching test can be used (no watcher for the
fault, a guard that is not pytest, a test that cannot be read) the suggestion is a stub with
one function the user fills in.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

from injector import catalog
from injector.outcomes import Outcome

FILE_NAME = re.compile(r"\b__file__\b")
SLOT_PREFIX = re.compile(r"^(?:.*/)?slot\d+/")  # node ids some campaigns recorded from a scratch slot
STUB_MARK = "TRAINWRECK STUB"
# words in a removed attention mask's line that say which mask it was
CAUSAL_WORDS = ("causal", "tril", "triu", "future", "subsequent")
PADDING_WORDS = ("pad", "key_padding_mask", "attention_mask")


@dataclass(frozen=True)
class Candidate:
    """One guarded copy of one reaching test."""

    name: str  # the generated test function's name
    source_test: str  # the reaching test's node id


@dataclass(frozen=True)
class Draft:
    """The test file suggested for one survivor, before verification."""

    mutant_id: str
    fault: str
    module: str  # file name, e.g. test_trainwreck_guard_3f2a9c.py
    text: str
    candidates: tuple[Candidate, ...]
    stub: str | None = None  # why this is a stub (None: a runnable suggestion)


def options_for(outcome: Outcome, root: Path | None = None) -> dict[str, object]:
    """Watcher options read from the survivor's diff and source: the softmax axis the code had;
    for an attention mask, the module class that applied it and whether it was causal."""
    removed = [line for line in outcome.diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    if outcome.operator == "wrong-softmax-dim":
        for line in removed:
            found = re.search(r"dim\s*=\s*(-?\d+)", line)
            if found:
                return {"class_axis": int(found.group(1))}
    if outcome.operator == "missing-attention-mask":
        text = " ".join(removed).lower()
        kind = "any"
        if any(word in text for word in CAUSAL_WORDS):
            kind = "causal"
        elif any(word in text for word in PADDING_WORDS):
            kind = "padding"
        options: dict[str, object] = {"kind": kind}
        owner = _module_class(root / outcome.file, outcome.line) if root is not None else None
        if owner is not None:
            options["module"] = owner
        return options
    return {}


def _module_class(path: Path, line: int) -> str | None:
    """The class defining `forward` whose body holds `line` of `path` (innermost), if any."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ClassDef)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and any(isinstance(item, ast.FunctionDef) and item.name == "forward" for item in node.body)
        ) and (found is None or node.lineno > found.lineno):
            found = node
    return found.name if found is not None else None


def module_name(outcome: Outcome) -> str:
    return f"test_trainwreck_guard_{outcome.mutant_id}.py"


def test_files(outcome: Outcome) -> list[tuple[str, str]]:
    """The reaching tests as (file, function name), in the report's order (collection order)."""
    found = []
    for node in outcome.covered_by:
        node = SLOT_PREFIX.sub("", node)
        file, sep, rest = node.partition("::")
        if not sep or "::" in rest:  # a test method in a class: not copied
            continue
        found.append((file, rest.split("[", 1)[0]))
    return list(dict.fromkeys(found))


def draft(outcome: Outcome, root: Path, folder: str, watchable: frozenset[str], limit: int = 8) -> Draft:
    """The suggested test file for `outcome` (a survivor of a campaign on `root`), to live in
    `folder` (relative to `root`)."""
    module = module_name(outcome)
    if outcome.operator not in watchable:
        return _stub(outcome, module, f"no guard check in injector.guards targets {outcome.operator}")
    tests = test_files(outcome)
    if not tests:
        commands = [c for c in outcome.covered_by if "::" not in c]
        if commands:
            return _command(outcome, module, commands[0], folder, root)
        return _stub(outcome, module, "no pytest test reaches the mutated code")
    # Tests of one module only (the generated file carries that module's helpers): the module
    # with the most reaching tests, the first of them on a tie.
    files = [f for f, _ in tests]
    file = max(dict.fromkeys(files), key=files.count)
    names = [name for f, name in tests if f == file][:limit]
    try:
        source = (root / file).read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        return _stub(outcome, module, f"cannot read the reaching test {file}: {error}")
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names
    }
    if not functions:
        return _stub(outcome, module, f"the reaching tests are not functions of {file}")
    options = options_for(outcome, root)
    call = ", ".join([repr(outcome.operator)] + [f"{k}={v!r}" for k, v in options.items()])
    # The copy lives elsewhere: its `__file__` must still name the test it was copied from,
    # so paths the test computes from it (a script beside it, data) stay right.
    origin = os.path.relpath(root / file, root / folder)
    source = FILE_NAME.sub("_COPIED_FROM", source)
    tree = ast.parse(source)
    located = f"_COPIED_FROM = os.path.join(os.path.dirname(os.path.abspath(__file__)), {origin!r})\n"
    helpers = _helpers(tree, source)
    futures = [h for h in helpers if h.startswith("from __future__")]
    parts = [_header(outcome, file), *futures, "import os\n"]
    parts += [h for h in helpers if h not in futures] + ["from injector.guards import watch\n"]
    if "_COPIED_FROM" in source:
        parts.insert(_after_imports(parts), located)
    candidates = []
    for name in names:
        if name not in functions:
            continue
        new = f"test_guard_{outcome.operator.replace('-', '_')}_via_{name.removeprefix('test_')}"
        body = ast.get_source_segment(source, functions[name]) or ""
        if "subprocess" in body and "sys.executable" in body:
            # First a copy that runs the Python script the test starts in its own process (no
            # fresh interpreter importing torch again), then the copy as it is.
            parts.append(
                _guarded(functions[name], source, f"{new}_in_process", f"{call}, in_process=True", f"{file}::{name}")
            )
            candidates.append(Candidate(f"{new}_in_process", f"{file}::{name}"))
        parts.append(_guarded(functions[name], source, new, call, f"{file}::{name}"))
        candidates.append(Candidate(new, f"{file}::{name}"))
    return Draft(
        outcome.mutant_id, outcome.operator, module, "\n\n".join(p.strip("\n") for p in parts) + "\n", tuple(candidates)
    )


def only(draft: Draft, keep: set[str]) -> Draft:
    """`draft` with only the candidate tests named in `keep` (the helpers stay)."""
    tree = ast.parse(draft.text)
    lines = draft.text.splitlines(keepends=True)
    drop = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name.startswith("test_guard_") and node.name not in keep:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            drop.append((start - 1, node.end_lineno or node.lineno))
    for start, end in sorted(drop, reverse=True):
        del lines[start:end]
    text = _without_unused(re.sub(r"\n{3,}", "\n\n\n", "".join(lines)).rstrip("\n") + "\n")
    return Draft(
        draft.mutant_id,
        draft.fault,
        draft.module,
        text,
        tuple(c for c in draft.candidates if c.name in keep),
        draft.stub,
    )


# Imports the drafts themselves write and that have no side effect, so a kept test that no
# longer uses one can drop it (a user's imports stay: they may bring fixtures or plugins).
_OWN_IMPORTS = ("subprocess", "sys")


def _without_unused(text: str) -> str:
    """`text` without the lines `import subprocess` / `import sys` where nothing uses the name."""
    used = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    for name in _OWN_IMPORTS:
        if name not in used:
            text = re.sub(rf"^import {name}\n", "", text, count=1, flags=re.MULTILINE)
    return text


def _header(outcome: Outcome, file: str) -> str:
    return (
        f'"""A guard suggested by `injector suggest` for mutant {outcome.mutant_id} '
        f"({outcome.operator}, {outcome.file}:{outcome.line}).\n\n"
        f"Each test below is a test of {file} that runs the mutated code, run again under\n"
        f"`injector.guards.watch({outcome.operator!r})`, which fails the test where the run shows\n"
        "that fault. The module's imports, fixtures and helpers are copied with it.\n"
        '"""\n'
    )


def _helpers(tree: ast.Module, source: str) -> list[str]:
    """The test module's statements other than its docstring, tests and test classes."""
    kept = []
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            continue
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            continue
        kept.append(_segment(source, node))
    return kept


def _segment(source: str, node: ast.stmt) -> str:
    lines = source.splitlines(keepends=True)
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno] + [d.lineno for d in decorators])
    return "".join(lines[start - 1 : node.end_lineno])


def _guarded(function: ast.FunctionDef | ast.AsyncFunctionDef, source: str, name: str, call: str, origin: str) -> str:
    lines = source.splitlines(keepends=True)
    decorators = "".join(f"@{ast.get_source_segment(source, d)}\n" for d in function.decorator_list)
    keyword = "async def" if isinstance(function, ast.AsyncFunctionDef) else "def"
    body_nodes = function.body
    if (
        body_nodes
        and isinstance(body_nodes[0], ast.Expr)
        and isinstance(body_nodes[0].value, ast.Constant)
        and len(body_nodes) > 1
    ):
        body_nodes = body_nodes[1:]  # its docstring: ours says what this test is
    first = body_nodes[0]
    if first.lineno > function.lineno:
        body = textwrap.dedent("".join(lines[first.lineno - 1 : function.end_lineno]))
    else:  # a one-line test
        body = "\n".join(ast.unparse(node) for node in body_nodes) + "\n"
    return (
        f"{decorators}{keyword} {name}({ast.unparse(function.args)}):\n"
        f'    """{origin}, watched for {call.split(",")[0]}."""\n'
        f"    with watch({call}):\n" + textwrap.indent(body, " " * 8)
    )


def _after_imports(parts: list[str]) -> int:
    """The index in `parts` after the header and the module's leading imports."""
    index = 1
    while index < len(parts) and parts[index].lstrip().startswith(("import ", "from ")):
        index += 1
    return index


def _command(outcome: Outcome, module: str, command: str, folder: str, root: Path) -> Draft:
    """Tests that run the campaign's guard command (a smoke training) under the watcher: for a
    `python -m module` / `python script.py` command, first one that runs it in the test's own
    process (no fresh interpreter importing torch again), then one that starts it as given."""
    argv = shlex.split(command)
    depth = len(Path(folder).parts)
    options = options_for(outcome, root)
    call = ", ".join([repr(outcome.operator)] + [f"{k}={v!r}" for k, v in options.items()])
    stem = f"test_guard_{outcome.operator.replace('-', '_')}_via_guard_command"
    python = argv[0] in ("python", "python3") or argv[0].endswith(("/python", "/python3"))
    args = "[sys.executable, " + ", ".join(repr(a) for a in argv[1:]) + "]" if python else repr(argv)
    here = python and len(argv) > 1 and (argv[1] == "-m" and len(argv) > 2 or argv[1].endswith(".py"))
    tests = []
    if here:
        tests.append(
            (
                f"{stem}_in_process",
                f"def {stem}_in_process():\n"
                f'    """The guard command, run in this process, watched for {outcome.operator!r}."""\n'
                f"    with watch({call}):\n"
                f"        code = run_python({argv[1:]!r}, cwd=PROJECT)\n"
                "    assert code == 0, f'the guard command exited with {code}'\n",
            )
        )
    tests.append(
        (
            stem,
            f"def {stem}():\n"
            f'    """The guard command, started as given, watched for {outcome.operator!r}."""\n'
            f"    with watch({call}):\n"
            f"        run = subprocess.run({args}, cwd=PROJECT, capture_output=True, text=True)\n"
            "    assert run.returncode == 0, run.stderr[-2000:]\n",
        )
    )
    text = (
        f'"""A guard suggested by `injector suggest` for mutant {outcome.mutant_id} '
        f"({outcome.operator}, {outcome.file}:{outcome.line}).\n\n"
        f"It runs the project's guard command `{command}` from the project's folder under\n"
        f"`injector.guards.watch({outcome.operator!r})`: the training the command starts fails\n"
        "where it shows that fault.\n"
        '"""\n\n'
        "import subprocess\n"
        "import sys\n"
        "from pathlib import Path\n\n"
        f"from injector.guards import {'run_python, ' if here else ''}watch\n\n"
        f"PROJECT = Path(__file__).resolve().parents[{depth}]\n\n\n" + "\n\n".join(body for _, body in tests)
    )
    return Draft(
        outcome.mutant_id, outcome.operator, module, text, tuple(Candidate(name, command) for name, _ in tests)
    )


def _stub(outcome: Outcome, module: str, why: str) -> Draft:
    try:
        guard = catalog.get(outcome.operator).guard
    except KeyError:
        guard = "a test that fails on this fault"
    text = (
        f'"""{STUB_MARK}: a guard for mutant {outcome.mutant_id} ({outcome.operator}, '
        f"{outcome.file}:{outcome.line}).\n\n"
        f"trainwreck could not build this test from the project's own tests ({why}).\n"
        "Fill in `check_guard` below; the test fails until you do.\n"
        '"""\n\n'
        "import pytest\n\n\n"
        "def check_guard():\n"
        f'    """{STUB_MARK}: fill me in. Build the objects of {outcome.file} as your tests do, run\n'
        f"    the code at line {outcome.line}, and assert what {guard} asserts.\n"
        "    The mutation this must catch:\n\n" + textwrap.indent(outcome.diff.rstrip("\n"), " " * 8) + '\n    """\n'
        f'    pytest.fail("{STUB_MARK}: fill in check_guard() in this file")\n\n\n'
        f"def test_guard_{outcome.operator.replace('-', '_')}_{outcome.mutant_id}():\n"
        "    check_guard()\n"
    )
    return Draft(outcome.mutant_id, outcome.operator, module, text, (), why)
