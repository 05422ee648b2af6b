"""Shared fixtures: builds are the slow part, so each is recorded once per session, and
the browser tests share one JupyterLab server and one Chromium per test run (per xdist
worker)."""

from __future__ import annotations

import pytest
from exclusive import SERIAL

import passlab

_BROWSER = pytest.StashKey["object"]()
#: the fixtures that hand a test a page of the run's one browser
_PAGE_FIXTURES = {"page", "new_page", "browser"}


@pytest.fixture(scope="session")
def mlp_build() -> passlab.Build:
    return passlab.build(passlab.models.mlp())


@pytest.fixture(scope="session")
def resnet_build() -> passlab.Build:
    return passlab.build(passlab.models.resnet())


@pytest.fixture(scope="session")
def expect():
    """Playwright's ``expect`` for the browser tests, waiting up to 60 s (the 5 s default
    is too short on 2 shared cores)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    return expect


# ------------------------------------------------------------------ scheduling


#: modules whose parametrized tests are split by their parameter over the workers: a
#: corpus model's tests (its module-scoped build) go together, each notebook on its own
_SPLIT = {"tests/test_corpus.py", "tests/test_notebooks.py"}
#: tests run in another module's unit, to share its build (tests/corpus.py's build_once)
_JOINS = {"tests/test_trace_store.py::test_densenet_and_a_trace_twice_its_size_save_and_"
          "load_within_the_budget": "tests/test_corpus.py[densenet121]"}


def _scope(nodeid: str) -> str:
    """A test's unit of work under ``-n N --dist loadscope``: its module, so that
    module-scoped fixtures are made once, except in :data:`_SPLIT`, where the parameter
    (``[resnet50]``) is the unit."""
    if nodeid in _JOINS:
        return _JOINS[nodeid]
    module = nodeid.split("::", 1)[0]
    if module in _SPLIT and nodeid.endswith("]"):
        return f"{module}[{nodeid.rsplit('[', 1)[1]}"
    return module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` by :func:`_scope`. (xdist_group marks do not group under
    pytest 9: xdist 3.8 renames ``item._nodeid``, which pytest 9 no longer reads.)"""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return ModuleScheduling(config, log)


def pytest_itemcollected(item):
    """Marks the tests of :data:`exclusive.SERIAL` ``serial``."""
    if any(item.nodeid.startswith(prefix) for prefix in SERIAL):
        item.add_marker(pytest.mark.serial)


def pytest_collection_modifyitems(config, items):
    """Browser tests last, in their collection order: the browser then starts once and
    stays up until the run ends (see :class:`browser_helpers.Browser`)."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


# ------------------------------------------------------------------ browser tests
def pytest_unconfigure(config):
    browser = config.stash.get(_BROWSER, None)
    if browser is not None:
        browser.stop()


def _why_no_browser() -> str | None:
    from browser_helpers import missing

    return missing()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """One JupyterLab server for the run; tests use :func:`lab`, their view of it."""
    why = _why_no_browser()
    if why:
        pytest.skip(why)
    from browser_helpers import jupyter_lab

    with jupyter_lab(tmp_path_factory.mktemp("jupyterlab"), []) as server:
        yield server


@pytest.fixture
def lab(lab_server, request):
    """The run's JupyterLab server from this test: notebooks written into ``lab.root``
    open with ``open_notebook(page, lab, name, expect)`` in the test's own workspace;
    afterwards its kernels are shut down and the user settings (a theme) reset."""
    view = lab_server.for_test(request.node.name)
    try:
        yield view
    finally:
        lab_server.reset()


@pytest.fixture
def browser(request):
    """The run's one Chromium (:class:`browser_helpers.Browser`), started on first use."""
    why = _why_no_browser()
    if why:
        pytest.skip(why)
    from browser_helpers import Browser

    found = request.config.stash.get(_BROWSER, None)
    if found is None:
        found = request.config.stash[_BROWSER] = Browser()
    return found


@pytest.fixture
def new_page(browser):
    """``new_page(width=1400, height=1100)``: a page in a fresh browser context, closed
    after the test."""
    pages = []

    def make(width: int = 1400, height: int = 1100):
        pages.append(browser.page(width, height))
        return pages[-1]

    yield make
    for p in pages:
        p.context.close()


@pytest.fixture
def page(new_page):
    """A 1400 x 1100 page in a fresh browser context."""
    return new_page()


@pytest.fixture(autouse=True)
def _no_browser_loop_outside_browser_tests(request):
    """Playwright's sync API runs an asyncio loop in this thread while the browser is up,
    so ``asyncio.run()`` fails in a test that runs then: the browser stops first (once per
    run, since browser tests run last)."""
    if not _PAGE_FIXTURES & set(request.fixturenames):
        browser = request.config.stash.get(_BROWSER, None)
        if browser is not None:
            browser.stop()
