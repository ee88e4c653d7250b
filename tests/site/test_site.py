"""The built site (docs/_build/html), opened in headless Chromium over http on 127.0.0.1.

Checks that the landing page renders without console errors; that no page of the site asks any other host
for anything (it works offline); that search finds the first lesson; that the lesson's figures load; that
its .py and .ipynb downloads are served; and that every internal link on the landing page and the lesson
resolves. Run after building the site: ``nox -s docs`` does both.

Chromium is the system's browser (Debian's ``chromium`` package), not one downloaded by Playwright: set
``CHROMIUM`` to use another Chromium-based browser.

``nox -s docs`` sets ``TRITONPERF_SITE_CHECK=required``: there a missing prerequisite (Playwright,
Chromium, the built site) fails the checks. Anywhere else, as in a plain ``pytest`` run of the whole
``tests`` folder, it skips them with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NoReturn
from urllib.parse import urldefrag, urlsplit

import pytest

REQUIRED = os.environ.get("TRITONPERF_SITE_CHECK") == "required"


def cannot_check(reason: str) -> NoReturn:
    """Fail with ``reason`` where the site check is required, else skip."""
    if REQUIRED:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


try:
    from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Error, Page, Route, sync_playwright
except ImportError as exc:
    if REQUIRED:
        raise
    pytest.skip(f"the site checks need Playwright ({exc}): `nox -s docs` installs it", allow_module_level=True)

HTML = Path(__file__).resolve().parents[2] / "docs" / "_build" / "html"
LOCAL_HOST = "127.0.0.1"
CHROMIUM_ARGS = [
    "--no-sandbox",  # runs as root in containers
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str:
    """The Chromium to drive: $CHROMIUM, else chromium or chromium-browser on the PATH, else /usr/bin/chromium."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for candidate in ("chromium", "chromium-browser"):
        if found := shutil.which(candidate):
            return found
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    cannot_check(
        "no Chromium found for the site checks: install Debian's `chromium` package "
        "(apt-get install chromium), or set CHROMIUM to a Chromium-based browser"
    )


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a browser that drops a connection early is not a failure of the site


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """The root URL of the built site, served from docs/_build/html on a free port of 127.0.0.1."""
    if not (HTML / "index.html").is_file():
        cannot_check(f"the site is not built ({HTML / 'index.html'} is missing): run `nox -s docs` first")
    server = _QuietServer((LOCAL_HOST, 0), functools.partial(_QuietHandler, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL_HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        except Error as exc:
            browser, problem = None, exc.message
        if browser is None:
            cannot_check(
                f"could not start Chromium from {executable} (install Debian's `chromium` package, or set CHROMIUM "
                f"to a working Chromium-based browser): {problem}"
            )
        yield browser
        browser.close()


@dataclass(repr=False)
class Browsing:
    """A browser context on the served site that records, for every page it opens, the console errors,
    uncaught exceptions and requests to any host other than 127.0.0.1 (which are blocked)."""

    context: BrowserContext
    site_url: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def open(self, path: str, wait: str = "networkidle") -> Page:
        """Open ``path`` (relative to the site's root) and wait until its network is idle."""
        page = self.context.new_page()
        page.on("console", lambda msg: self._console(page, msg))
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: uncaught {exc}"))
        response = page.goto(self.site_url + path, wait_until=wait)
        assert response is not None and response.status == 200, f"{path}: HTTP {response and response.status}"
        return page

    def _console(self, page: Page, msg: ConsoleMessage) -> None:
        if msg.type == "error" and "ERR_BLOCKED_BY_CLIENT" not in msg.text:  # blocked: listed as outside
            source = msg.location.get("url")
            self.errors.append(f"{page.url}: {msg.text}" + (f" ({source})" if source and source != page.url else ""))

    def _route(self, route: Route) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname != LOCAL_HOST:
            try:
                origin = route.request.frame.url
            except Error:  # not from a page (a worker, say)
                origin = "?"
            self.outside.append(f"{url} (from {origin})")
            route.abort("blockedbyclient")
        else:
            route.continue_()

    def assert_clean(self) -> None:
        """No console error, no uncaught exception and no request off 127.0.0.1 on any page opened."""
        problems = []
        if self.outside:
            problems.append("requests to outside hosts (the site must work offline):")
            problems += [f"  {url}" for url in dict.fromkeys(self.outside)]
        if self.errors:
            problems.append("errors in the browser console:")
            problems += [f"  {error}" for error in self.errors]
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def browsing(browser: Browser, site_url: str) -> Iterator[Browsing]:
    context = browser.new_context()
    context.set_default_timeout(20_000)
    session = Browsing(context, site_url)
    context.route("**/*", session._route)
    try:
        yield session
    finally:
        context.close()


# -- the checks ------------------------------------------------------------------------------------------

EXAMPLE = "auto_examples/plot_01_vector_add.html"


def test_landing_page_renders(browsing: Browsing):
    page = browsing.open("index.html")
    assert page.title().strip(), "index.html has an empty <title>"
    assert page.locator("h1").count() >= 1, "index.html has no <h1>"
    assert page.locator("h1").first.inner_text().strip(), "the <h1> of index.html is empty"
    browsing.assert_clean()


def test_every_page_works_offline(browsing: Browsing):
    pages = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html") if "_static" not in p.parts)
    assert "index.html" in pages and EXAMPLE in pages, f"expected pages missing from {HTML}"
    for path in pages:
        browsing.open(path).close()
    browsing.assert_clean()


def test_search_finds_the_first_lesson(browsing: Browsing):
    page = browsing.open("search.html?q=vector")
    hit = page.locator(f'#search-results a[href*="{EXAMPLE}"]').first
    hit.wait_for(state="attached", timeout=20_000)
    browsing.assert_clean()


def test_example_figures_load(browsing: Browsing):
    page = browsing.open(EXAMPLE)
    images = page.evaluate(
        """async () => {
            const imgs = [...document.querySelectorAll('[role="main"] img, main img, article img')];
            for (const img of imgs) img.loading = "eager";
            await Promise.all(imgs.map((img) => img.decode().catch(() => null)));
            return imgs.map((img) => ({src: img.currentSrc || img.src, width: img.naturalWidth}));
        }"""
    )
    assert images, f"{EXAMPLE} shows no images (did the lesson draw no figure, e.g. with no results in docs/results?)"
    broken = [img["src"] for img in images if img["width"] == 0]
    assert not broken, "images that did not load:\n" + "\n".join(broken)
    assert any("sphx_glr_plot_01_vector_add_" in img["src"] for img in images), (
        "no sphinx-gallery figure (sphx_glr_plot_01_vector_add_*) on the example page: " + repr(images)
    )
    browsing.assert_clean()


@pytest.mark.parametrize("suffix", [".py", ".ipynb"])
def test_example_downloads(browsing: Browsing, suffix: str):
    page = browsing.open(EXAMPLE)
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map((a) => a.href)")
    name = "plot_01_vector_add" + suffix
    downloads = [h for h in hrefs if "/_downloads/" in h and urldefrag(h).url.endswith("/" + name)]
    assert downloads, f"{EXAMPLE} has no link to _downloads/.../{name}"
    for url in dict.fromkeys(downloads):
        response = browsing.context.request.get(url)
        assert response.status == 200, f"{url}: HTTP {response.status}"
        body = response.body()
        assert body.strip(), f"{url} is empty"
        if suffix == ".ipynb":
            assert "cells" in json.loads(body), f"{url} is not a notebook (no 'cells')"
    browsing.assert_clean()


@pytest.mark.parametrize("path", ["index.html", EXAMPLE])
def test_internal_links_resolve(browsing: Browsing, path: str):
    page = browsing.open(path)
    links = page.eval_on_selector_all(
        "a[href]",
        """(links) => links
            .filter((a) => !a.getAttribute("href").startsWith("#") && a.origin === location.origin)
            .map((a) => a.href)""",
    )
    targets = sorted({urldefrag(link).url for link in links})
    assert targets, f"{path} has no internal links"
    bad = []
    for url in targets:
        status = browsing.context.request.get(url).status
        if status != 200:
            bad.append(f"{url}: HTTP {status}")
    assert not bad, f"broken internal links on {path}:\n" + "\n".join(bad)
    browsing.assert_clean()
