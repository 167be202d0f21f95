"""Links from a report to the lines it names, in the repository a pull request belongs to."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from trainwreck.errors import UsageError

_SHA = re.compile(r"[0-9a-f]{7,64}")
_SERVER = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?")


@dataclass(frozen=True)
class SourceLinks:
    """A repository at one commit: `url` links a report's `file:line` to that line."""

    owner: str
    name: str
    sha: str
    repo_path: str = ""  # the campaign's project folder within the repository
    server: str = "https://github.com"

    def __post_init__(self) -> None:
        if not _SHA.fullmatch(self.sha):
            raise UsageError(f"not a commit id: {self.sha!r} (expected 7 to 64 hex digits)")
        if not _SERVER.fullmatch(self.server):
            raise UsageError(f"not a GitHub server URL: {self.server!r}")

    def url(self, file: str, line: int) -> str:
        """`https://github.com/OWNER/REPO/blob/SHA/FILE#LLINE`."""
        path = "/".join(part for part in (self.repo_path.strip("/"), file) if part)
        return f"{self.server}/{quote(self.owner)}/{quote(self.name)}/blob/{self.sha}/{quote(path, safe='/')}#L{line}"
