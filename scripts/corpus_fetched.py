"""Fill the operator corpus's `fetched/` folder from local git mirrors of its repositories.

    python scripts/corpus_fetched.py MIRRORS [--list]

Code fetched from a public repository is not committed (tests/injector/corpus/README.md), so a
fresh clone has none of it. MIRRORS is a folder holding one bare git directory per repository,
named `owner+name` (or `owner+name.git`, or `owner+name/<anything>.git`); each manifest entry
marked `fetched = true` is written from its own commit, and so are the `neighbours` of every
entry. With
`--list`, print the repositories that are needed and exit.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "injector" / "corpus"


def entries() -> list[dict]:
    out: list[dict] = []
    for manifest in ("tuned.toml", "heldout.toml"):
        data = tomllib.loads((CORPUS / manifest).read_text(encoding="utf-8"))
        out += [e for e in data.get("file", []) if e.get("fetched") or e.get("neighbours")]
    return out


def git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+")
    for candidate in (base, base.with_name(base.name + ".git")):
        if (candidate / "HEAD").is_file():
            return candidate
    if base.is_dir():
        return next((p.parent for p in base.rglob("HEAD") if (p.parent / "objects").is_dir()), None)
    return None


def show(git: Path, commit: str, path: str) -> bytes | None:
    done = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", type=Path)
    parser.add_argument("--list", action="store_true", help="print the repositories needed")
    args = parser.parse_args(argv)
    todo = entries()
    if args.list:
        print("\n".join(sorted({e["repo"] for e in todo})))
        return 0
    written = missing = 0
    for entry in todo:
        git = git_dir(args.mirrors, entry["repo"])
        if git is None:
            print(f"no mirror of {entry['repo']} (for {entry['name']})", file=sys.stderr)
            missing += 1
            continue
        stem = entry["name"].removesuffix(".py")
        wanted = [(entry["path"], CORPUS / "fetched" / entry["name"])] if entry.get("fetched") else []
        # a neighbour is named by its path in the repository
        wanted += [(rel, CORPUS / "fetched" / "neighbours" / stem / rel) for rel in entry.get("neighbours", [])]
        for source, target in wanted:
            data = show(git, entry["commit"], source)
            if data is None:
                print(f"{entry['repo']}@{entry['commit'][:10]}: no {source}", file=sys.stderr)
                missing += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    print(f"{written} files written, {missing} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
