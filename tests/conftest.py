from __future__ import annotations

import threading

import pytest
from click.testing import CliRunner

from memkit import Vault


@pytest.fixture(autouse=True)
def env_setup(tmp_path, monkeypatch):
    """Every test runs in its own folder, offline, with no vault from the environment."""
    monkeypatch.delenv("MEMKIT_VAULT", raising=False)
    monkeypatch.delenv("MEMKIT_MODEL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture
def vault(tmp_path) -> Vault:
    return Vault.init(tmp_path / "v", profile=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def no_thread_leaks():
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in leaked:
        t.join(timeout=5)
    leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"threads leaked: {leaked}"
