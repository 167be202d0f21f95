"""`injector suggest`: a verified guard test for every survivor of a campaign.

`write` drafts the test for a survivor from the tests that reach it; `verify` checks, in a
scratch copy, that it passes on the unmutated code and kills the survivor.
"""

from __future__ import annotations

from injector.suggest.verify import MAX_SECONDS, Verdict, default_folder, mutants_of, suggest, survivors
from injector.suggest.write import STUB_MARK, Draft

__all__ = ["MAX_SECONDS", "STUB_MARK", "Draft", "Verdict", "default_folder", "mutants_of", "suggest", "survivors"]
