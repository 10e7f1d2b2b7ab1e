"""`embedder:` in memkit.yaml: an OpenAI-compatible /v1/embeddings server embeds instead of a
model, incrementally, batched; when it is down, search warns and answers by words."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fake_embed import FakeEmbedServer

from memkit import Vault
from memkit.config.settings import EmbedderSettings
from memkit.embeddings.remote import HTTPEmbedder
from memkit.errors import ConfigError, ModelError
from memkit.frontends.cli.group import main

NOTES = "- Router is a MikroTik hAP ax3 in the hallway\n- Grafana runs on node-3\n- Prefers bomba rice for paella\n"


@pytest.fixture()
def server():
    with FakeEmbedServer() as s:
        yield s


def vault_for(tmp_path, server, extra: str = "") -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text(f"embedder: {{base_url: '{server.base_url}', model: fake-embed, "
                                      f"batch_size: 2{extra}}}\n")
    (root / "topics" / "home.md").write_text(NOTES)
    return Vault(root, env={})


def test_the_server_embeds_incrementally_and_in_batches(tmp_path, server):
    vault = vault_for(tmp_path, server)
    hits = vault.search("paella rice", k=1)
    assert hits[0].text == "Prefers bomba rice for paella" and hits[0].cosine > 0.5
    assert vault.searcher.index.embedder.name == "fake-embed@" + server.base_url.split("/")[2]  # host:port
    sizes = [len(r["input"]) for r in server.requests]
    assert max(sizes) <= 2  # batch_size
    sent = server.texts_sent
    vault.add("Bought a UPS for the rack", topic="home")
    vault.search("battery backup for the rack", k=1)
    new = server.texts_sent - sent
    assert new == 2  # the one new entry and the query: nothing else re-sent
    again = Vault(vault.root, env={})  # a new process: the sidecar is reused
    before = server.texts_sent
    again.search("paella", k=1)
    assert server.texts_sent - before == 2  # the dimension probe and the query: no entry re-sent


def test_a_known_dimension_skips_the_probe(tmp_path, server):
    vault = vault_for(tmp_path, server, ", dim: 32")
    vault.index()
    before = server.texts_sent
    Vault(vault.root, env={}).search("paella", k=1)
    assert server.texts_sent - before == 1


def test_a_server_that_is_down_gives_a_warning_and_word_results(tmp_path, server):
    server.down = True
    result = CliRunner().invoke(main, ["--vault", str(vault_for(tmp_path, server).root), "search", "hAP ax3", "--json"],
                                prog_name="memkit", env={"MEMKIT_MODEL": ""})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["text"].startswith("Router is a MikroTik hAP ax3")
    assert "memkit: warning: the embedding server at" in result.stderr and "HTTP 503" in result.stderr
    assert "searching by words only" in result.stderr


def test_a_server_that_goes_down_after_indexing(tmp_path, server):
    vault = vault_for(tmp_path, server, ", dim: 32")
    vault.index()
    server.down = True
    hits = vault.search("node-3 grafana", k=1)  # the query cannot be embedded: words only
    assert hits[0].text == "Grafana runs on node-3"


def test_garbage_from_the_server_is_an_error_naming_it(server):
    server.garbage = True
    embedder = HTTPEmbedder(EmbedderSettings(base_url=server.base_url, model="m"))
    with pytest.raises(ModelError, match="did not answer with embeddings"):
        embedder.embed(["hello"])


def test_unreachable_server_and_missing_key(tmp_path):
    embedder = HTTPEmbedder(EmbedderSettings(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2))
    with pytest.raises(ModelError, match="cannot be reached"):
        embedder.embed(["hello"])
    with pytest.raises(ModelError, match="EMBED_KEY"):
        HTTPEmbedder(EmbedderSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="EMBED_KEY"), env={})


def test_the_key_is_sent_as_a_bearer_token(server):
    embedder = HTTPEmbedder(EmbedderSettings(base_url=server.base_url, model="m", api_key_env="K"), env={"K": "sekrit"})
    assert embedder.embed(["a b"]).shape == (1, 32)
    assert server.requests[-1]["auth"] == "Bearer sekrit"


@pytest.mark.parametrize("given, message", [
    ({"base_url": "ftp://x", "model": "m"}, "http:// or https://"),
    ({"model": "m"}, "base_url is missing"),
    ({"base_url": "http://x/v1", "model": "m", "batch": 3}, "did you mean 'batch_size'"),
    ({"base_url": "http://x/v1", "model": "m", "api_key_env": "sk-123"}, "NAME of an environment variable"),
    ("http://x", "must be a mapping"),
])
def test_bad_settings_name_the_key(given, message):
    with pytest.raises(ConfigError, match=message):
        EmbedderSettings.from_config(given)


def test_a_server_that_failed_is_not_asked_again_for_a_while(server, monkeypatch):
    import memkit.embeddings.remote as http_embed

    embedder = HTTPEmbedder(EmbedderSettings(base_url=server.base_url, model="m", dim=32))
    server.down = True
    with pytest.raises(ModelError, match="HTTP 503"):
        embedder.embed(["a"])
    server.down = False
    asked = len(server.requests)
    with pytest.raises(ModelError, match="HTTP 503"):  # within RETRY_AFTER_S: no request, no timeout to wait
        embedder.embed(["a"])
    assert len(server.requests) == asked
    monkeypatch.setattr(http_embed, "RETRY_AFTER_S", 0.0)
    embedder._down = (0.0, "expired")  # the pause is over
    assert embedder.embed(["a"]).shape == (1, 32)
    assert embedder.embed([]).shape == (0, 32)


def test_timeout_bounds_the_whole_request_against_a_server_that_drips():
    """embedder.timeout_s is a deadline on the request, not on each read: an answer sent a byte
    every 0.2 s is cut at the timeout, not after the ~60 s it takes to arrive."""
    import time

    from util import DripServer, dripped_json

    answer = dripped_json({"data": [{"index": 0, "embedding": [0.5] * 40}]})
    with DripServer(answer, every=0.2) as drip:
        embedder = HTTPEmbedder(EmbedderSettings(base_url=drip.base_url, model="fake-embed", timeout_s=1.0), env={})
        started = time.monotonic()
        with pytest.raises(ModelError, match=r"did not answer within 1 s \(embedder.timeout_s\)"):
            embedder.embed(["a text"])
        assert time.monotonic() - started < 8  # the 1 s deadline and slack
