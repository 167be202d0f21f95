"""The project's other modules, where an operator needs to read one.

A training script mostly builds its model from a class of another module of the same project
(`from model import QNetwork`). Whether switching that model's mode changes anything depends on
the class's definition there, so operators can ask for the module a file imports: `Neighbours`
finds it the way Python would from the file's folder or the project's root, reads and parses it
once, and answers None for anything outside the project (an installed package, a missing file,
one that does not parse).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from injector.patterns import dotted
from injector.source import ParseError, Source

Reader = Callable[[str], "str | None"]  # a posix path relative to the project root -> its text, or None

MAX_BYTES = 2_000_000  # a module this large is data, not a model's definition


def folder_reader(root: Path) -> Reader:
    """Read project files from the file system under `root` (nothing outside it)."""
    base = root.resolve()

    def read(relative: str) -> str | None:
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        try:
            if path.stat().st_size > MAX_BYTES:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def mapping_reader(files: dict[str, str]) -> Reader:
    """Read project files from a mapping of relative paths to texts (tests, the corpus)."""
    return files.get


class Neighbours:
    """The modules a file at `relative` (posix, from the project root) can import from the project."""

    def __init__(self, relative: str, read: Reader, cache: dict[str, Source | None] | None = None) -> None:
        self.folder = posixpath.dirname(relative)
        self.read = read
        self._cache = cache if cache is not None else {}

    def module(self, name: str, level: int = 0) -> Source | None:
        """The parsed module `from <level dots><name> import ...` names, or None outside the project."""
        parts = [p for p in name.split(".") if p]
        if level:
            folder = self.folder
            for _ in range(level - 1):
                folder = posixpath.dirname(folder)
            bases = [folder]
        else:
            bases = [self.folder, "", "src"]  # beside the file (a script), the root, a src layout
        for base in bases:
            stem = posixpath.join(base, *parts) if parts else base
            for candidate in (f"{stem}.py", posixpath.join(stem, "__init__.py")):
                source = self._parsed(posixpath.normpath(candidate))
                if source is not None:
                    return source
        return None

    def beside(self, source: Source) -> Neighbours:
        """The neighbours of another module of the project (to follow its own imports)."""
        return Neighbours(source.path, self.read, self._cache)

    def _parsed(self, relative: str) -> Source | None:
        if relative.startswith("../") or relative == "..":
            return None
        if relative not in self._cache:
            text = self.read(relative)
            try:
                self._cache[relative] = Source(text, relative) if text is not None else None
            except ParseError:
                self._cache[relative] = None
        return self._cache[relative]


@dataclass(frozen=True)
class Import:
    module: str  # the module, for `import a.b as c` and `from a import b` alike: "a.b" / "a"
    name: str | None  # the imported name, for `from a import name`
    level: int

    @property
    def qualified(self) -> str:
        """What the local name stands for: `torch.nn` for `from torch import nn`."""
        return self.module if self.name is None else f"{self.module}.{self.name}".strip(".")


def module_imports(source: Source) -> dict[str, Import]:
    """The module's imports (at any level of it): local name -> where it comes from."""
    table: dict[str, Import] = {}
    for node in source.nodes(cst.Import):
        for alias in node.names:
            imported = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                table[alias.asname.name.value] = Import(imported, None, 0)
            else:
                table[imported.split(".")[0]] = Import(imported.split(".")[0], None, 0)
    for statement in source.nodes(cst.ImportFrom):
        if isinstance(statement.names, cst.ImportStar):
            continue
        module = dotted(statement.module) if statement.module is not None else ""
        for name in statement.names:
            local = name.asname.name if name.asname is not None else name.name
            if isinstance(local, cst.Name) and isinstance(name.name, cst.Name):
                table[local.value] = Import(module or "", name.name.value, len(statement.relative))
    return table


def is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


class Resolver:
    """Finds what a name of a file stands for across the project: its imports, and the class or
    function of the file or of another project module a callee names (through `Neighbours`,
    which the file's `Source.neighbours` holds where the caller knows the project)."""

    DEPTH = 24  # re-exports followed

    def __init__(self) -> None:
        self._imports: dict[str, dict[str, Import]] = {}

    def imports(self, source: Source) -> dict[str, Import]:
        if source.path not in self._imports:
            self._imports[source.path] = module_imports(source)
        return self._imports[source.path]

    def definition(
        self, source: Source, func: cst.BaseExpression
    ) -> tuple[Source, cst.ClassDef | cst.FunctionDef] | None:
        """The class or function of the file or of the project a call's callee names."""
        callee = dotted(func)
        if callee is None:
            return None
        head, _, rest = callee.partition(".")
        imported = self.imports(source).get(head)
        if imported is None:
            found = top_level(source, head) if not rest else None
            if isinstance(found, (cst.ClassDef, cst.FunctionDef)):
                return source, found
            return self._star_definition(source, head, 0) if not rest and found is None else None
        if is_torch(imported.module):
            return None
        return self.imported_definition(source, imported, rest, 0)

    def registry(
        self, source: Source, name: str, depth: int = 0
    ) -> list[tuple[Source, cst.ClassDef | cst.FunctionDef]]:
        """The classes or functions a mapping of names to them holds (UER-py's `str2dataloader =
        {"bert": BertDataloader, ...}`, which `from uer.utils import *` brings in), where the file
        or a project module it imports defines that mapping; none where a value is anything else."""
        neighbours: Neighbours | None = getattr(source, "neighbours", None)
        mapping = top_level_mapping(source, name)
        if mapping is not None:
            members = [self.definition(source, e.value) for e in mapping.elements if isinstance(e, cst.DictElement)]
            return [m for m in members if m is not None] if None not in members else []
        if neighbours is None or depth > 3:
            return []
        imported = self.imports(source).get(name)
        modules: list[tuple[Source | None, str]] = []
        if imported is not None and imported.name is not None and not is_torch(imported.module):
            modules.append((neighbours.module(imported.module, imported.level), imported.name))
        elif imported is None:
            for statement in source.nodes(cst.ImportFrom):
                if isinstance(statement.names, cst.ImportStar):
                    module_name = dotted(statement.module) if statement.module is not None else ""
                    modules.append((neighbours.module(module_name or "", len(statement.relative)), name))
        for module, member in modules:
            if module is None:
                continue
            module.neighbours = neighbours.beside(module)
            found = self.registry(module, member, depth + 1)
            if found:
                return found
        return []

    def _star_definition(
        self, source: Source, name: str, depth: int
    ) -> tuple[Source, cst.ClassDef | cst.FunctionDef] | None:
        """A name the file takes from a project module with `from .utils import *` (TextBrewer's
        distillers take `get_outputs_from_batch` so), where that module, or one it star-imports
        in turn, defines it."""
        neighbours: Neighbours | None = getattr(source, "neighbours", None)
        if neighbours is None or depth > 3:
            return None
        for statement in source.nodes(cst.ImportFrom):
            if not isinstance(statement.names, cst.ImportStar):
                continue
            name_of = dotted(statement.module) if statement.module is not None else ""
            module = neighbours.module(name_of or "", len(statement.relative))
            if module is None:
                continue
            module.neighbours = neighbours.beside(module)
            found = top_level(module, name)
            if isinstance(found, (cst.ClassDef, cst.FunctionDef)):
                return module, found
            re_exported = self.imports(module).get(name) if found is None else None
            if re_exported is not None and not is_torch(re_exported.module):
                # a package's `__init__` that imports the name from one of its modules
                # (connectomics' `model/__init__.py`: `from .build import build_model`)
                definition = self.imported_definition(module, re_exported, "", depth + 1)
                if definition is not None:
                    return definition
            deeper = self._star_definition(module, name, depth + 1) if found is None else None
            if deeper is not None:
                return deeper
        return None

    def imported_definition(
        self, source: Source, imported: Import, rest: str, depth: int
    ) -> tuple[Source, cst.ClassDef | cst.FunctionDef] | None:
        neighbours: Neighbours | None = getattr(source, "neighbours", None)
        if neighbours is None or depth > self.DEPTH:
            return None
        if imported.name is not None:
            # `from pkg import name`: a module of pkg, or a name defined in pkg
            module = neighbours.module(f"{imported.module}.{imported.name}".strip("."), imported.level)
            path = rest.split(".") if rest else []
            if module is None:
                module = neighbours.module(imported.module, imported.level)
                path = [imported.name, *path]
        else:
            module = neighbours.module(imported.module)
            path = rest.split(".") if rest else []
        if module is None or len(path) != 1:
            return None
        module.neighbours = neighbours.beside(module)
        definition = top_level(module, path[0])
        if isinstance(definition, (cst.ClassDef, cst.FunctionDef)):
            return module, definition
        re_exported = self.imports(module).get(path[0])  # `from .model import QNetwork` in a package's __init__
        if re_exported is not None and not is_torch(re_exported.module):
            return self.imported_definition(module, re_exported, "", depth + 1)
        if definition is None:
            # or `from .base import *` in it (efficientvit's `apps/trainer/__init__.py`)
            return self._star_definition(module, path[0], 0)
        return None


def top_level_mapping(source: Source, name: str) -> cst.Dict | None:
    """The literal dict a module binds to `name` at its top level (`str2dataloader = {...}`)."""
    for statement in source.module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and small.targets[0].target.value == name
                and isinstance(small.value, cst.Dict)
            ):
                return small.value
    return None


def inherited_constructor(
    resolver: Resolver, source: Source, cls: cst.ClassDef, depth: int = 0
) -> cst.FunctionDef | None:
    """The `__init__` a call of `cls` runs: its own, or the nearest base class's, in this file or
    in another module of the project."""
    own = constructor_or_function(cls)
    if own is not None or depth > 3:
        return own
    for base in cls.bases:
        found = resolver.definition(source, base.value)
        if found is not None and isinstance(found[1], cst.ClassDef):
            inherited = inherited_constructor(resolver, found[0], found[1], depth + 1)
            if inherited is not None:
                return inherited
    return None


def top_level(source: Source, name: str) -> cst.CSTNode | None:
    for statement in source.module.body:
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and statement.name.value == name:
            return statement
    return None


def constructor_or_function(definition: cst.ClassDef | cst.FunctionDef) -> cst.FunctionDef | None:
    """What a call of `definition` runs first: a class's `__init__`, or the function itself."""
    if isinstance(definition, cst.FunctionDef):
        return definition
    return next(
        (s for s in definition.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None
    )


def bound_arguments(
    definition: cst.ClassDef | cst.FunctionDef, call: cst.Call, function: cst.FunctionDef | None = None
) -> dict[str, cst.BaseExpression] | None:
    """The arguments of `call` by the parameter of `definition` they are bound to (a class's
    through its `__init__`, or the inherited `function` given, `self` left out); None for a class
    without one."""
    function = function or constructor_or_function(definition)
    if function is None:
        return None
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if isinstance(definition, cst.ClassDef):
        params = params[1:]
    params += [p.name.value for p in function.params.kwonly_params]
    bound: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            break
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif index < len(params):
            bound[params[index]] = arg.value
    return bound
