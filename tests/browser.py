"""A real headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by selenium, for
tests and screenshots of the HTML reports.

The browser starts with a fresh profile, no network services of its own (background networking,
component updates and sync off) and no sandbox (CI runs as root). :meth:`Browser.open` loads a file
and waits until every plotly figure on the page has drawn; :meth:`Browser.errors` returns what the
page logged as errors (``console.error`` and uncaught exceptions). ``.ci/run`` installs Chromium
when it is missing; tests call :func:`require_chromium`, which skips with the reason when it is not
installed; the ``chromium`` fixture of conftest.py shares one browser across the session.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("STATMECH_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("STATMECH_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")

# true once every plotly div holds its drawn SVG
PLOTS_DRAWN = """
var divs = document.querySelectorAll('.plotly-graph-div');
for (var i = 0; i < divs.length; i++) { if (!divs[i].querySelector('.main-svg')) { return false; } }
return document.readyState === 'complete';
"""


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).exists():
            return (f"{path} is missing: install Debian's {package} (`apt-get install -y chromium chromium-driver`; "
                    ".ci/run does this)")
    try:
        import selenium  # noqa: F401 - only to say which package is missing
    except ImportError:
        return "the selenium package is missing (pip install -e '.[test]')"
    return None


def require_chromium() -> None:
    reason = chromium_missing()
    if reason:
        pytest.skip(reason)


class Browser:
    """One headless Chromium; use as a context manager."""

    def __init__(self, width: int = 1300, height: int = 1800):
        from selenium import webdriver                      # here: only browser tests need selenium
        from selenium.webdriver.chrome.service import Service

        os.environ.setdefault("SE_OFFLINE", "true")        # selenium's manager must never download a driver
        self.profile = tempfile.mkdtemp(prefix="statmech-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + (f"--user-data-dir={self.profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.logged: list[dict] = []

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, path: str | Path, timeout_s: float = 60.0) -> float:
        """Load ``path`` from disk and wait until every figure is drawn; the seconds it took."""
        self.driver.get_log("browser")          # what earlier pages logged is theirs, not this page's
        self.logged = []
        start = time.perf_counter()
        self.driver.get(Path(path).resolve().as_uri())
        while not self.driver.execute_script(PLOTS_DRAWN):
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError(f"{path}: figures not drawn after {timeout_s} s")
            time.sleep(0.05)
        return time.perf_counter() - start

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def errors(self) -> list[str]:
        """Every error the page opened last logged so far (console errors, uncaught exceptions, failed loads)."""
        self.logged += self.driver.get_log("browser")
        return [e["message"] for e in self.logged if e["level"] == "SEVERE"]

    def click_at(self, x: float, y: float) -> None:
        """A real mouse click at viewport coordinates (CSS pixels)."""
        from selenium.webdriver.common.actions.action_builder import ActionBuilder   # see __init__

        actions = ActionBuilder(self.driver)
        actions.pointer_action.move_to_location(int(round(x)), int(round(y))).click()
        actions.perform()

    def screenshot(self, path: str | Path, top: float | None = None, bottom: float | None = None) -> None:
        """A PNG of the page; with ``top`` and ``bottom`` (CSS pixels from the top of the page), of that band,
        at full page width, however tall the window."""
        if top is None:
            self.driver.save_screenshot(str(path))
            return
        width = self.js("return document.documentElement.scrollWidth;")
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": top, "width": width, "height": bottom - top, "scale": 1}})
        Path(path).write_bytes(base64.b64decode(shot["data"]))

    def top_of(self, element_id: str) -> float:
        """Distance in CSS pixels from the top of the page to the element's top."""
        return self.js("return arguments[0].getBoundingClientRect().top + window.scrollY;",
                       self.driver.find_element("id", element_id))
