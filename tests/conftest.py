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
