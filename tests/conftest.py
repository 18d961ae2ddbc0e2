"""Shared test configuration."""

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # tests draw figures without a display


@pytest.fixture(scope="session")
def browser():
    """One headless chromium per test process, shared by every module that reads pages
    (Playwright's sync API allows one instance per process); each page gets a fresh
    context."""
    from playwright.sync_api import sync_playwright

    from test_browser import CHROMIUM, CHROMIUM_ARGS

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} not found: `make test` installs it"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
