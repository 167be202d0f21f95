"""What an adopter's CI installs as trainwreck: the pip requirement `injector init` writes into the
workflows (`TRAINWRECK_PACKAGE`).

trainwreck is not on a public index, so `trainwreck==0.1.0` fails in a fresh CI job. The spec must
name a source the adopter controls, best a git URL pinned to a commit:
`trainwreck @ git+https://github.com/OWNER/trainwreck@<commit>`. It comes from `--package`, else
`$TRAINWRECK_PACKAGE`, else from where the running trainwreck was installed (PEP 610's
`direct_url.json`): a pip install from git gives its URL and commit; an install from a git checkout
(`pip install -e .`) gives the checkout's `origin` and its HEAD commit, if that commit is on a
remote branch; an install from an index gives `trainwreck==VERSION` from that index.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from trainwreck.errors import UsageError

DISTRIBUTION = "trainwreck"
ENV = "TRAINWRECK_PACKAGE"
EXAMPLE = "trainwreck @ git+https://github.com/OWNER/trainwreck@<commit>"
_URL_START = re.compile(r"(git|hg|svn|bzr)\+[a-z]+://|https?://|file:", re.IGNORECASE)
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
# Characters that would end the workflow's `${{ ... }}` expression or its line.
_UNSAFE = re.compile(r"[{}\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Source:
    """The package spec CI should install (None: unknown), and where it came from or why not."""

    spec: str | None
    origin: str


def parse(text: str, *, what: str = "--package") -> str:
    """A pip requirement that installs trainwreck, from `text`: a requirement (`trainwreck @ URL`,
    `trainwreck==0.2.0`) or a bare URL (`git+https://...@<commit>`), which is named here."""
    spec = text.strip()
    if not spec:
        raise UsageError(f"{what} is empty; give a pip requirement such as '{EXAMPLE}'")
    if _UNSAFE.search(spec):
        raise UsageError(f"{what}: braces and control characters cannot go into a workflow")
    if _URL_START.match(spec):
        spec = f"{DISTRIBUTION} @ {spec}"
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as error:
        reason = str(error).splitlines()[0]
        raise UsageError(f"{what}: not a pip requirement ({reason}); e.g. '{EXAMPLE}'") from None
    if canonicalize_name(requirement.name) != DISTRIBUTION:
        raise UsageError(f"{what}: installs {requirement.name!r}, not trainwreck; e.g. '{EXAMPLE}'")
    return spec


def unpinned(spec: str) -> str | None:
    """Why `spec` may install something else tomorrow (a git URL with no commit), else None."""
    requirement = Requirement(spec)
    url = requirement.url or ""
    if not url.lower().startswith("git+"):
        return None
    path = urlsplit(url).path
    ref = path.rsplit("@", 1)[1] if "@" in path else None
    if ref is None:
        return "the git URL names no commit: CI installs whatever its default branch holds then"
    if not _COMMIT.fullmatch(ref):
        return f"the git URL names {ref!r}, not a commit: a branch or tag can move"
    return None


def resolve(explicit: str | None, environ: Mapping[str, str]) -> Source:
    """The spec for the workflows: --package, else $TRAINWRECK_PACKAGE, else where the running
    trainwreck came from."""
    if explicit is not None:
        return Source(parse(explicit), "--package")
    if environ.get(ENV, "").strip():
        return Source(parse(environ[ENV], what=f"${ENV}"), f"${ENV}")
    return installed()


def installed() -> Source:
    """The spec that installs the trainwreck running now again, from its install record."""
    dist = _installed_distribution()
    if dist is None:
        return Source(None, "trainwreck runs from a source tree, not an install")
    record = dist.read_text("direct_url.json")
    if not record:  # installed from an index: the same version from the same index
        return Source(f"{DISTRIBUTION}=={dist.version}", f"the index trainwreck {dist.version} came from")
    try:
        direct = json.loads(record)
        url = str(direct["url"])
    except (ValueError, KeyError, TypeError):
        return Source(None, "trainwreck's install record (direct_url.json) is unreadable")
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        public = public_git_url(url)
        if public is None:
            return Source(None, "trainwreck was installed from a git repository CI cannot reach")
        return Source(
            f"{DISTRIBUTION} @ git+{public}@{vcs['commit_id']}", "the git commit trainwreck was installed from"
        )
    if "dir_info" in direct and url.startswith("file:"):
        return checkout(Path(unquote(urlsplit(url).path)))
    return Source(None, f"trainwreck was installed from {_describe(url)}, which CI cannot reach")


def checkout(folder: Path) -> Source:
    """The spec for the commit a git checkout of trainwreck is at, from its `origin` remote."""
    head = _git(folder, "rev-parse", "HEAD")
    if head is None:
        return Source(None, f"trainwreck was installed from {folder}, which is not a git checkout")
    remote = _git(folder, "remote", "get-url", "origin")
    public = public_git_url(remote) if remote else None
    if public is None:
        return Source(
            None, f"trainwreck was installed from the checkout {folder}, which has no origin remote CI can reach"
        )
    if not _git(folder, "branch", "--remotes", "--contains", head):
        return Source(
            None, f"the checkout {folder} is at commit {head[:12]}, which no remote branch holds (push it first)"
        )
    return Source(
        f"{DISTRIBUTION} @ git+{public}@{head}",
        f"the checkout trainwreck was installed from ({folder}, origin at commit {head[:12]})",
    )


def public_git_url(url: str) -> str | None:
    """`url` (https, ssh or scp-style `git@host:owner/name.git`) as an https URL any CI can clone,
    credentials removed; None for a local path or file URL."""
    url = url.strip().removeprefix("git+")
    scp = re.fullmatch(r"(?:[\w.-]+@)?([\w.-]+\.[a-z]{2,}):(?!/)(.+)", url)
    if scp:
        host, path = scp.groups()
    else:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname:
            return None
        host, path = parts.hostname + (f":{parts.port}" if parts.port and parts.scheme == "https" else ""), parts.path
    path = path.strip("/").removesuffix(".git")
    if not path:
        return None
    return f"https://{host}/{path}"


def _describe(url: str) -> str:
    parts = urlsplit(url)
    return url if parts.scheme == "file" else f"{parts.scheme}://{parts.hostname or ''}{parts.path}"


def _installed_distribution() -> metadata.Distribution | None:
    # A source tree's `trainwreck.egg-info` on sys.path (the current folder) is no install: an
    # installed one has the INSTALLER file pip writes.
    for dist in metadata.distributions(name=DISTRIBUTION):
        if dist.read_text("INSTALLER") is not None:
            return dist
    return None


def _git(folder: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None
