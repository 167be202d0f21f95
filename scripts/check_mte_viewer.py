"""Open every mutant of a mutation-testing-elements report in the real viewer, in headless Chromium.

The test suite checks the report against the format's schema and a transliteration of the
viewer's diff view (tests/injector/test_mte.py); this script is the check against the viewer
itself, for a machine that has Chromium:

    pip install playwright                        # the Python driver only; no browser download
    npm pack mutation-testing-elements            # the viewer's bundle (dist/mutation-test-elements.js)
    tar xzf mutation-testing-elements-*.tgz
    injector run --jobs 2                         # writes trainwreck-report/mutation-testing.json
    python scripts/check_mte_viewer.py trainwreck-report/mutation-testing.json \
        --elements package/dist/mutation-test-elements.js --chromium /usr/bin/chromium

For each mutant it opens the file's page, clicks the mutant's marker, and requires that the
viewer throws nothing and shows the mutated lines (`tr.diff-new` rows). The viewer hides killed
mutants' markers until their filter is switched on, so the page gets a copy of the report with
every status set to Survived (the diff view does not depend on the status). Exit 0 when every
mutant opens, 1 otherwise (each failure on one line), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"></head>
<body>
<mutation-test-report-app title-postfix="trainwreck check"></mutation-test-report-app>
<script src="{bundle}"></script>
<script>document.querySelector("mutation-test-report-app").report = {report};</script>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a mutation-testing-elements JSON report")
    parser.add_argument(
        "--elements",
        type=Path,
        required=True,
        help="the viewer's bundle, dist/mutation-test-elements.js of the npm package",
    )
    parser.add_argument("--chromium", type=Path, help="the Chromium binary (default: Playwright's own)")
    parser.add_argument("--width", type=int, default=1280, help="the window width in pixels")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("check_mte_viewer: error: needs the playwright package (pip install playwright)", file=sys.stderr)
        return 2
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
        bundle = args.elements.resolve(strict=True)
    except (OSError, ValueError) as error:
        print(f"check_mte_viewer: error: {error}", file=sys.stderr)
        return 2
    shown = json.loads(json.dumps(report))
    for file in shown["files"].values():
        for mutant in file["mutants"]:
            mutant["status"] = "Survived"
    with tempfile.TemporaryDirectory() as folder:
        page_path = Path(folder) / "index.html"
        # "</" cannot end the inline script early once escaped
        page_path.write_text(
            PAGE.format(bundle=bundle.as_uri(), report=json.dumps(shown).replace("</", "<\\/")), encoding="utf-8"
        )
        failures, opened = _check(sync_playwright, page_path, report, args)
    for failure in failures:
        print(failure)
    print(f"{opened} of {opened + len(failures)} mutants opened in the viewer with their mutated lines")
    return 1 if failures else 0


def _check(sync_playwright, page_path: Path, report: dict, args) -> tuple[list[str], int]:
    failures: list[str] = []
    opened = 0
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(args.chromium) if args.chromium else None)
        page = browser.new_page(viewport={"width": args.width, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error).splitlines()[0]))
        common = _common_folder(list(report["files"]))
        for path, file in report["files"].items():
            if not file["mutants"]:
                continue
            route = "/".join(quote(part, safe="") for part in path.split("/")[common:] if part)
            page.goto(f"{page_path.as_uri()}#mutant/{route}")
            page.wait_for_selector("mte-file svg.mutant-dot", timeout=15_000)
            for mutant in file["mutants"]:
                where = f"{path}:{mutant['location']['start']['line']} {mutant['id']} {mutant['mutatorName']}"
                errors.clear()
                dot = page.locator(f'mte-file svg.mutant-dot[data-mutant-id="{mutant["id"]}"]')
                dot.click()
                page.wait_for_timeout(50)
                rows = page.locator("mte-file tr.diff-new").count()
                if errors:
                    failures.append(f"{where}: the viewer threw: {errors[0]}")
                elif rows == 0:
                    failures.append(f"{where}: no mutated lines shown")
                else:
                    opened += 1
                dot.click()  # close it again
        browser.close()
    return failures, opened


def _common_folder(paths: list[str]) -> int:
    """How many leading folders all paths share: the viewer drops them from its routes
    (metrics helpers/file.ts `determineCommonBasePath`)."""
    folders = [path.split("/")[:-1] for path in paths]
    shared = 0
    while folders and all(len(f) > shared and f[shared] == folders[0][shared] for f in folders):
        shared += 1
    return shared


if __name__ == "__main__":
    sys.exit(main())
