"""A parsed source file that operators read and describe edits against.

`Source` parses once with libcst, walks the tree once (recording every node's parent and
grouping nodes by type, in document order) and resolves positions once. Operators then ask it
questions (what encloses this call? is this statement reachable?) and turn nodes into `Edit`s
on the original text. Nothing here knows about training code; `injector.patterns` does.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, overload

import libcst as cst
from libcst._nodes.internal import CodegenState

from injector.mutants import Edit, LineIndex
from trainwreck.errors import TrainwreckError

N = TypeVar("N", bound=cst.CSTNode)
T = TypeVar("T")

_TERMINATORS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


class ParseError(TrainwreckError):
    """A file is not valid Python; the message names the file and the parser's line."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")
        self.path, self.line, self.reason = path, line, reason


class Source:
    """One Python file: its text, concrete syntax tree, node index and positions."""

    def __init__(self, text: str, path: str = "<string>") -> None:
        self.text = text
        self.path = path
        try:
            self.module = cst.parse_module(text)
        except cst.ParserSyntaxError as error:
            raise _diagnose(text, path, error) from None
        except (RecursionError, ValueError) as error:
            raise ParseError(path, None, f"cannot parse: {error}") from None
        state = _IndexingState(self.module.default_indent, self.module.default_newline)
        # libcst drops a leading byte-order mark (Windows editors write one): the spans count it
        state.offset = 1 if text.startswith("\ufeff") else 0
        self.module._codegen(state)
        self._spans = state.spans
        self._spans[self.module] = (0, len(text))
        self._parents = state.parents
        self._by_type = state.by_type
        self._order, self._ends, self._first = state.order, state.ends, state.first
        self.lines = LineIndex(text)
        self.indent = self.module.default_indent
        self._start_index: dict[type, tuple[list[cst.CSTNode], list[int]]] = {}
        self._function_of: dict[cst.CSTNode, cst.FunctionDef | None] = {}
        self._memo: dict[Any, Any] = {}  # see remember()
        # the project's other modules (`injector.neighbours.Neighbours`), where the caller knows them
        self.neighbours: Any = None

    # ---- finding nodes ----

    def nodes(self, kind: type[N]) -> list[N]:
        """Every node of exactly this libcst type, in document order."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The chain of enclosing nodes, innermost first."""
        current = self._parents.get(node)
        while current is not None:
            yield current
            current = self._parents.get(current)

    def walk(self, node: cst.CSTNode, skip: frozenset[cst.CSTNode] = frozenset()) -> Iterator[cst.CSTNode]:
        """`node` and every node under it, in document order, leaving out the subtrees in `skip`:
        the nodes walking libcst's `children` gives (whitespace aside, in the same order), read off
        the index instead of rebuilt at every step. A node of another tree is walked the slow way."""
        place = self._first.get(node)
        if place is None:
            yield from walk_children(node, skip)
            return
        end = self._ends[place]
        order, ends = self._order, self._ends
        while place < end:
            current = order[place]
            if current in skip:
                place = ends[place]
                continue
            yield current
            place += 1

    def remember(self, key: Any, compute: Callable[[], T]) -> T:
        """What `compute()` gives, worked out once per parse: for what the operators ask again and
        again of the same file (a function's globals, its bindings). `key` is the asker's own."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def inside(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """True where `top` encloses `node` (not `node` itself)."""
        return any(ancestor is top for ancestor in self.ancestors(node))

    def enclosing(self, node: cst.CSTNode, kind: type[N] | tuple[type, ...]) -> N | None:
        """The innermost ancestor of the given type(s), not crossing into an outer function."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kind):
                return ancestor  # type: ignore[return-value]
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return None
        return None

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The innermost function around `node` (kept for every node on the way up: operators ask
        it of nearly every node they read)."""
        unknown = []
        current = self._parents.get(node)
        while current is not None and not isinstance(current, cst.FunctionDef) and current not in self._function_of:
            unknown.append(current)
            current = self._parents.get(current)
        found = current if current is None or isinstance(current, cst.FunctionDef) else self._function_of[current]
        for each in (node, *unknown):
            self._function_of[each] = found
        return found

    def scope_name(self, node: cst.CSTNode) -> str:
        """Dotted name of the functions and classes around `node` (`""` at module level)."""
        names = [a.name.value for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
        return ".".join(reversed(names))

    def runtime_function(self, node: cst.CSTNode) -> tuple[str, int, tuple[int, int]] | None:
        """The outermost function around `node` as Python names it at run time: its
        co_qualname, its co_firstlineno (the first decorator's line) and its span."""
        outer = None
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                outer = ancestor
        if outer is None:
            return None
        names = [a.name.value for a in self.ancestors(outer) if isinstance(a, cst.ClassDef)]
        qualname = ".".join([*reversed(names), outer.name.value])
        first = self.line(outer.decorators[0]) if outer.decorators else self.line(outer)
        return qualname, first, self.span(outer)

    def in_main_block(self, node: cst.CSTNode) -> bool:
        """True inside `if __name__ == "__main__":`."""
        return any(
            isinstance(a, cst.If) and "__name__" in self.code(a.test) and "__main__" in self.code(a.test)
            for a in self.ancestors(node)
        )

    @overload
    def within(self, node: cst.CSTNode, kind: type[N]) -> list[N]: ...
    @overload
    def within(self, node: cst.CSTNode, kind: tuple[type, ...]) -> list[Any]: ...

    def within(self, node: cst.CSTNode, kind: type | tuple[type, ...]) -> list[Any]:
        """Nodes of the given type(s) inside `node` (or `node` itself), in document order."""
        start, end = self.span(node)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        found: list[Any] = []
        for each in kinds:
            nodes, starts = self._starts(each)
            # Nodes of one type are indexed in document order, so their starts are sorted.
            for index in range(bisect_left(starts, start), bisect_right(starts, end)):
                if self._spans[nodes[index]][1] <= end:
                    found.append(nodes[index])
        return found if len(kinds) == 1 else sorted(found, key=lambda n: self.span(n))

    def _starts(self, kind: type) -> tuple[list[cst.CSTNode], list[int]]:
        cached = self._start_index.get(kind)
        if cached is None:
            nodes = self._by_type.get(kind, [])
            cached = self._start_index[kind] = (nodes, [self._spans[n][0] for n in nodes])
        return cached

    def block_of(self, statement: cst.CSTNode) -> tuple[cst.CSTNode, list[cst.CSTNode]]:
        """The statement line that holds `statement` and the list of its sibling lines."""
        line = statement
        if isinstance(statement, cst.BaseSmallStatement):
            line = self._parents[statement]
        body = getattr(self._parents[line], "body", ())
        return line, list(body) if isinstance(body, (list, tuple)) else [line]

    def is_reachable(self, statement: cst.CSTNode) -> bool:
        """False for statements that follow a return/raise/continue/break in their block,
        or sit under `if False:` / `if 0:`, or in the `else` of `if True:` (`if True:  #
        args.distributed:`, a branch switched off by hand): the code can never run them."""
        line, siblings = self.block_of(statement)
        for sibling in siblings:
            if sibling is line:
                break
            if isinstance(sibling, cst.SimpleStatementLine) and any(
                isinstance(small, _TERMINATORS) for small in sibling.body
            ):
                return False
        return not self.in_dead_branch(statement)

    def in_dead_branch(self, node: cst.CSTNode) -> bool:
        """True for code under `if False:` / `if 0:` or in the `else` of `if True:` / `if 1:`."""
        for ancestor in self.ancestors(node):
            if not isinstance(ancestor, cst.If):
                continue
            in_body = self.span(node)[0] < self.span(ancestor.body)[1]
            if (_is_false(ancestor.test) and in_body) or (_is_true(ancestor.test) and not in_body):
                return True
        return False

    # ---- positions and text ----

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """Character offsets of `node` in the text, without its own parentheses."""
        return self._spans[node]

    def line(self, node: cst.CSTNode) -> int:
        return self.lines.line_of(self._spans[node][0])

    def code(self, node: cst.CSTNode) -> str:
        """The original text of `node` (without its own parentheses)."""
        start, end = self.span(node)
        return self.text[start:end]

    def render(self, node: cst.CSTNode) -> str:
        """Source for a (new) node, without its outermost parentheses."""
        if getattr(node, "lpar", None):
            node = node.with_changes(lpar=[], rpar=[])
        return self.module.code_for_node(node)

    def indentation(self, node: cst.CSTNode) -> str:
        """The whitespace that starts the line `node` starts on."""
        text = self.lines.line_text(self.line(node))
        return text[: len(text) - len(text.lstrip(" \t"))]

    def has_multiline_string(self, node: cst.CSTNode) -> bool:
        """True if a string literal inside `node` spans lines (re-indenting would change it)."""
        return any("\n" in self.code(n) for n in self.within(node, (cst.SimpleString, cst.FormattedString)))

    def string_lines(self, node: cst.CSTNode) -> set[int]:
        """The lines inside `node` that continue a multi-line string literal: re-indenting them
        would change the string, so a dedent leaves them as they are."""
        lines: set[int] = set()
        for string in self.within(node, (cst.SimpleString, cst.FormattedString)):
            first, last = self.lines_of(string)
            lines.update(range(first + 1, last + 1))
        return lines

    # ---- edits ----

    def replace(self, node: cst.CSTNode, text: str) -> Edit:
        """Replace `node` (inside its own parentheses, which stay) by `text`."""
        start, end = self.span(node)
        return Edit(start, end, text)

    def replace_node(self, node: cst.CSTNode, new: cst.CSTNode) -> Edit:
        return self.replace(node, self.render(new))

    def replace_string(self, node: cst.SimpleString, text: str) -> Edit:
        """Replace a string literal's text, keeping its prefix and quotes (`'mean'` -> `'sum'`)."""
        return self.replace(node, f"{node.prefix}{node.quote}{text}{node.quote}")

    def delete_statement(self, small: cst.BaseSmallStatement) -> Edit:
        """Remove one small statement, keeping the block valid.

        A statement alone on its line goes with its line; one that is the only statement of
        its block, or shares a line with others, becomes `pass`.
        """
        line, siblings = self.block_of(small)
        alone_on_line = isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
        block_has_more = len(siblings) > 1 or isinstance(self._parents[line], cst.Module)
        if alone_on_line and block_has_more:
            first, last = self.lines_of(line)
            return Edit(self.lines.line_start(first), self.lines.line_end(last), "")
        return self.replace(small, "pass")

    def lines_of(self, node: cst.CSTNode) -> tuple[int, int]:
        """First and last line of `node`."""
        start, end = self._spans[node]
        return self.lines.line_of(start), self.lines.line_of(max(start, end - 1))

    def insert_before(self, statement: cst.CSTNode, lines: list[str]) -> Edit:
        """Insert whole lines, at the statement's indentation, before the statement's line."""
        indent = self.indentation(statement)
        first = self.lines_of(statement)[0]
        text = "".join(f"{indent}{line}\n" for line in lines)
        at = self.lines.line_start(first)
        return Edit(at, at, text)

    def insert_after(self, statement: cst.CSTNode, lines: list[str], indent: str | None = None) -> Edit:
        """Insert whole lines after the last line of `statement`."""
        indent = self.indentation(statement) if indent is None else indent
        last = self.lines_of(statement)[1]
        at = self.lines.line_end(last)
        prefix = "" if self.text[:at].endswith("\n") else "\n"
        return Edit(at, at, prefix + "".join(f"{indent}{line}\n" for line in lines))

    def reindent(
        self, first: cst.CSTNode, last: cst.CSTNode, add: str = "", remove: str = "", header: str | None = None
    ) -> Edit:
        """Re-indent the lines from `first` to `last`, optionally preceded by a `header` line."""
        start_line = self.lines_of(first)[0]
        end_line = self.lines_of(last)[1]
        indent = self.indentation(first)
        out = [f"{indent}{header}\n"] if header is not None else []
        for number in range(start_line, end_line + 1):
            text = self.lines.line_text(number)
            if text.strip():
                if remove:
                    if not text.startswith(remove):
                        raise ValueError("inconsistent indentation")
                    text = text[len(remove) :]
                text = add + text
            out.append(text)
        return Edit(self.lines.line_start(start_line), self.lines.line_end(end_line), "".join(out))


class _IndexingState(CodegenState):
    """One code-generation pass that records what libcst's PositionProvider would (the
    syntactic span of every node, without its own parentheses and surrounding whitespace),
    as character offsets, together with every node's parent and the nodes of each type.

    Doing it in one pass, instead of a metadata pass plus a visitor, halves the cost of
    reading a file; tests/injector/test_source.py checks the spans against PositionProvider.
    """

    def __init__(self, indent: str, newline: str) -> None:
        super().__init__(default_indent=indent, default_newline=newline)
        self.offset = 0
        self.last_token = 0
        self.spans: dict[cst.CSTNode, tuple[int, int]] = {}
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        self.order: list[cst.CSTNode] = []  # every node, in document (pre-)order
        self.ends: list[int] = []  # for each place in `order`, where that node's subtree ends
        self.first: dict[cst.CSTNode, int] = {}  # each node's place in `order`
        self.stack: list[tuple[cst.CSTNode, int, int]] = []

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.offset += len(value)
        self.last_token = len(value)

    def pop_trailing_newline(self) -> None:
        self.offset -= self.last_token

    def before_codegen(self, node: cst.CSTNode) -> None:
        if self.stack:
            self.parents[node] = self.stack[-1][0]
        self.by_type[type(node)].append(node)
        self.first.setdefault(node, len(self.order))
        self.stack.append((node, self.offset, len(self.order)))
        self.order.append(node)
        self.ends.append(0)

    def after_codegen(self, node: cst.CSTNode) -> None:
        _, start, place = self.stack.pop()
        self.ends[place] = len(self.order)
        if node not in self.spans:
            self.spans[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.spans[start_node][0]
            if end_node is not None:
                end = self.spans[end_node][1]
            self.spans[node] = (start, end)


def walk_children(node: cst.CSTNode, skip: frozenset[cst.CSTNode] = frozenset()) -> Iterator[cst.CSTNode]:
    """`node` and everything under it through libcst's `children`, in document order, leaving out
    the subtrees in `skip` (`Source.walk` reads the same off its index)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current in skip:
            continue
        yield current
        stack.extend(reversed(current.children))


def _diagnose(text: str, path: str, error: cst.ParserSyntaxError) -> ParseError:
    """A one-line parse error; Python's own compiler pinpoints the line better than libcst."""
    try:
        compile(text.removeprefix("\ufeff"), path, "exec", dont_inherit=True)  # a str with the mark does not
    except SyntaxError as syntax:
        return ParseError(path, syntax.lineno, f"cannot parse: {syntax.msg}")
    except (ValueError, RecursionError, MemoryError):
        pass
    return ParseError(path, error.raw_line, f"cannot parse: {error.message.splitlines()[0]}")


def _is_true(test: cst.BaseExpression) -> bool:
    return (isinstance(test, cst.Name) and test.value == "True") or (
        isinstance(test, cst.Integer) and test.value == "1"
    )


def _is_false(test: cst.BaseExpression) -> bool:
    return (isinstance(test, cst.Name) and test.value == "False") or (
        isinstance(test, cst.Integer) and test.value == "0"
    )
