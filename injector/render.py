"""Terminal output for people (rich): operator listings and mutant listings."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _diff(console: Console, text: str) -> None:
    """Colour a diff on a terminal; elsewhere print it byte for byte (it may be applied)."""
    if console.is_terminal:
        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    else:
        console.out(text, highlight=False, end="")


def operators(entries: list[dict]) -> None:
    """Each operator: id, what it injects, what it shows, what catches it, one example diff."""
    console = _console()
    for entry in entries:
        console.rule(f"[bold]{entry['id']}[/bold]", align="left")
        console.print(entry["summary"])
        console.print(f"[dim]shows:[/dim] {entry['symptoms']}")
        console.print(f"[dim]caught by:[/dim] {entry['guard']}")
        _diff(console, entry["examples"][0]["diffs"][0].split("\n", 2)[2])
    console.print(f"{len(entries)} operators")


def mutants(generation) -> None:
    """Every mutant with its diff, then a count per operator."""
    console = _console()
    for mutant in generation.mutants:
        console.print(f"[bold]{mutant.id}[/bold] [cyan]{mutant.operator}[/cyan] "
                      f"{mutant.file}:{mutant.line}  {mutant.description}")
        _diff(console, mutant.diff)
    counts = Counter(m.operator for m in generation.mutants)
    table = Table(title=f"{len(generation.mutants)} mutants in {generation.files} files "
                        f"({generation.lines} lines)", title_justify="left")
    table.add_column("operator")
    table.add_column("mutants", justify="right")
    for operator, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(operator, str(count))
    console.print(table)
