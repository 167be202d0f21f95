"""Fixtures shared by the campaign tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CAMPAIGN_PROJECT = Path(__file__).parent / "campaign_project"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A private copy of the small dependency-free campaign project."""
    target = tmp_path / "project"
    shutil.copytree(CAMPAIGN_PROJECT, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target
