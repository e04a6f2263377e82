"""Headless Chromium (Debian's `chromium` + `chromium-driver`) driven by Selenium."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000"]


def find_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver, or skip the test saying what is missing."""
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("needs headless Chromium: apt-get install -y chromium chromium-driver "
                    f"(found chromium={browser}, chromedriver={driver})")
    return browser, driver


def start(tmp_path: Path):
    pytest.importorskip("selenium", reason="needs selenium (pip install -e '.[dev]')")
    from selenium import webdriver

    browser, driver = find_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))


def wait_idle(page, timeout: float = 180.0) -> None:
    """Until the viewer has loaded what it asked for and rendered it (body[data-loading=0])."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if page.execute_script("return document.body.dataset.loading") == "0":
            return
    raise AssertionError(f"viewer still loading after {timeout} s: {page.find_element('id', 'status').text}")


def count(page) -> int:
    wait_idle(page)
    return int(page.find_element("id", "count").get_attribute("data-count"))


def screenshot(page, tmp_path: Path, name: str) -> Path:
    """Save a screenshot under the test's tmp dir, and under $SKYEVAL_SCREENSHOT_DIR when set."""
    path = tmp_path / f"{name}.png"
    page.save_screenshot(str(path))
    if os.environ.get("SKYEVAL_SCREENSHOT_DIR"):
        target = Path(os.environ["SKYEVAL_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / path.name)
    return path
