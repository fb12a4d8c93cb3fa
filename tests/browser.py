"""Checks of flame graphs and reports in a real browser: headless Chromium driven by Selenium.

Reusable on any run directory:

    driver = start_driver()
    check_svg_drawn(driver, run_dir / "flame/x.oncpu.svg")   # -> number of drawn frames
    check_links(driver, run_dir / "report.html")              # every href/src/data resolves
    check_images(driver, run_dir / "report.html")             # every <img> preview decoded

Each raises AssertionError naming what is wrong. Without Chromium, chromedriver or selenium a
test calls `require_browser()`: it skips, or fails with REQUIRE_BPF=1 or CI set
(requirements.need).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse
from urllib.request import url2pathname

from requirements import need

CHROMIUM = Path(os.environ.get("HARNESS_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("HARNESS_CHROMEDRIVER", "/usr/bin/chromedriver"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
)
PAGE_TIMEOUT_S = 30.0
# Chromium shows this document instead of a file it cannot open (ERR_FILE_NOT_FOUND).
ERROR_PAGE = "chrome-error://"


def browser_problem() -> str | None:
    if not CHROMIUM.exists():
        return f"no {CHROMIUM}: apt-get install chromium chromium-driver"
    if not CHROMEDRIVER.exists():
        return f"no {CHROMEDRIVER}: apt-get install chromium-driver"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed: .venv/bin/pip install -r requirements.lock"
    return None


def require_browser() -> None:
    need(browser_problem())


def start_driver() -> Any:
    """Headless Chromium; the caller quits it, which also removes its temporary folder."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    # The page's console messages, for driver.get_log("browser").
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves its singleton socket folders (org.chromium.Chromium.*) in $TMPDIR.
    tmpdir = tempfile.mkdtemp(prefix="harness-chromium-")
    service = Service(executable_path=str(CHROMEDRIVER), env={**os.environ, "TMPDIR": tmpdir})
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    quit_browser = driver.quit

    def quit_and_clean() -> None:
        try:
            quit_browser()
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    driver.quit = quit_and_clean
    driver.set_page_load_timeout(PAGE_TIMEOUT_S)
    driver.set_script_timeout(PAGE_TIMEOUT_S)
    return driver


def wait_for(driver: Any, script: str, what: str, timeout: float = PAGE_TIMEOUT_S) -> Any:
    """Poll a JS expression (`return ...`) until it is truthy; its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def navigate(driver: Any, url: str) -> None:
    """Open `url` and wait for it to load; AssertionError if the browser could not open it."""
    driver.get(url)
    wait_for(driver, "return document.readyState === 'complete'", f"{url} to load")
    loaded = str(driver.execute_script("return document.URL"))
    if loaded.startswith(ERROR_PAGE):
        text = str(
            driver.execute_script(
                "return (document.body || document.documentElement).innerText || ''"
            )
        )
        first = " ".join(text.split())[:160]
        raise AssertionError(f"the browser could not open {url}: {first}")


_DRAWN_FRAMES = """
const root = document.documentElement;
if (root.tagName.toLowerCase() !== 'svg') {
  return {root: root.tagName, drawn: 0, texts: 0, rects: 0};
}
const frames = document.getElementById('frames') || root;
const rects = Array.from(frames.querySelectorAll('rect'));
const drawn = rects.filter(r => {
  const box = r.getBoundingClientRect();
  const style = getComputedStyle(r);
  return box.width > 0 && box.height > 0 && style.display !== 'none'
         && style.visibility !== 'hidden';
});
const texts = Array.from(frames.querySelectorAll('text')).filter(
  t => t.textContent.trim() !== '' && t.getBoundingClientRect().width > 0);
return {root: 'svg', drawn: drawn.length, texts: texts.length, rects: rects.length};
"""


def check_svg_drawn(driver: Any, path: Path) -> int:
    """Open a flame graph SVG; the number of its frame rectangles drawn with a non-zero size.

    Fails unless the document is an SVG with at least one drawn frame and one frame label
    (inferno's script fits the labels to the width on load).
    """
    navigate(driver, Path(path).resolve().as_uri())
    result = driver.execute_script(_DRAWN_FRAMES)
    if result["root"] != "svg":
        raise AssertionError(f"{path} is not an SVG document (root element {result['root']})")
    if result["drawn"] <= 0:
        raise AssertionError(f"{path}: none of its {result['rects']} frames is drawn")
    if result["texts"] <= 0:
        raise AssertionError(f"{path}: {result['drawn']} frames drawn but no frame label shown")
    return int(result["drawn"])


_REFERENCES = """
const out = [];
for (const el of document.querySelectorAll('[href], [src], object[data]')) {
  for (const attr of ['href', 'src', 'data']) {
    const raw = el.getAttribute(attr);
    if (raw === null || (attr === 'data' && el.tagName !== 'OBJECT')) continue;
    out.push({tag: el.tagName.toLowerCase(), attr: attr, raw: raw,
              url: new URL(raw, document.baseURI).href});
  }
}
return out;
"""


def references(driver: Any, html_path: Path) -> list[dict[str, str]]:
    """Every href, src and object data of the page, with its absolute URL."""
    navigate(driver, Path(html_path).resolve().as_uri())
    refs: list[dict[str, str]] = driver.execute_script(_REFERENCES)
    return refs


def check_links(driver: Any, html_path: Path, *, allow_external: bool = False) -> list[str]:
    """Every link of the page resolves; the URLs checked.

    In-page `#id` links need an element with that id. file:// links need an existing file,
    and the browser must open it (navigated to one by one, so a missing file fails). Other
    schemes fail unless `allow_external` (a report must work offline).
    """
    page = Path(html_path).resolve().as_uri()
    refs = references(driver, html_path)
    ids = set(
        driver.execute_script("return Array.from(document.querySelectorAll('[id]'), e => e.id)")
    )
    problems = []
    checked = []
    opened: set[str] = set()
    for ref in refs:
        url = ref["url"]
        base, fragment = urldefrag(url)
        where = f'<{ref["tag"]} {ref["attr"]}="{ref["raw"]}">'
        if base == page:
            if fragment and unquote(fragment) not in ids:
                problems.append(f"{where}: no element with id {unquote(fragment)!r} on the page")
            checked.append(url)
            continue
        scheme = urlparse(base).scheme
        if scheme != "file":
            if not allow_external:
                problems.append(
                    f"{where}: not a local file ({scheme}:), the page must work offline"
                )
            continue
        target = Path(url2pathname(urlparse(base).path))
        if not target.is_file():
            problems.append(f"{where}: {target} does not exist")
            continue
        if base not in opened:
            opened.add(base)
            try:
                navigate(driver, base)
            except AssertionError as e:
                problems.append(f"{where}: {e}")
                continue
        checked.append(url)
    if problems:
        raise AssertionError(f"{html_path}: broken links:\n  " + "\n  ".join(problems))
    return checked


_IMAGES = """
const imgs = Array.from(document.images);
imgs.forEach(i => { i.loading = 'eager'; });
return imgs.every(i => i.complete);
"""


def check_images(driver: Any, html_path: Path) -> int:
    """Every <img> of the page (lazy ones too) decodes to a non-empty picture; how many."""
    navigate(driver, Path(html_path).resolve().as_uri())
    wait_for(driver, _IMAGES, f"the images of {html_path} to load")
    images = driver.execute_script(
        "return Array.from(document.images, i => ({src: i.getAttribute('src'),"
        " w: i.naturalWidth, h: i.naturalHeight}))"
    )
    broken = [i["src"] for i in images if not (i["w"] > 0 and i["h"] > 0)]
    if broken:
        raise AssertionError(f"{html_path}: images that did not load: {', '.join(broken)}")
    return len(images)
