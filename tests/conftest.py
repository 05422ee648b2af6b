"""Shared fixtures: builds are the slow part, so each is recorded once per session."""

from __future__ import annotations

import pytest

import passlab


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
