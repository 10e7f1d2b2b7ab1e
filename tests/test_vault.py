"""The vault API: init, discovery, config, add, forget, recent, and bad input."""
from __future__ import annotations

import logging
import os
import re
from datetime import datetime
from pathlib import Path

import pytest
from util import write

from memkit import (
    ConfigError,
    EntryNotFound,
    MemkitError,
    TopicNameError,
    TopicNotFound,
    Vault,
    VaultExists,
    VaultNotFound,
    find_vault,
)
from memkit.formats.recent import relative_time


def test_init_creates_layout(tmp_path):
    v = Vault.init(tmp_path / "mem", profile=False)
    assert (v.root / "memkit.yaml").is_file()
    assert (v.root / "topics").is_dir() and (v.root / "inbox").is_dir()
    assert (v.root / "index.txt").read_text() == ""
    assert ".memkit/" in (v.root / ".gitignore").read_text()
    assert v.config.max_memories_per_search == 5
    with pytest.raises(VaultExists):
        Vault.init(tmp_path / "mem", profile=False)


def test_discovery_order(tmp_path):
    a = Vault.init(tmp_path / "a", profile=False).root
    b = Vault.init(tmp_path / "b", profile=False).root
    deep = a / "topics" / "x"
    deep.mkdir()
    assert find_vault(cwd=deep) == a
    assert find_vault(env=str(b), cwd=deep) == b
    assert find_vault(str(a), env=str(b)) == a
    with pytest.raises(VaultNotFound, match="does not exist"):
        find_vault(str(tmp_path / "nope"))
    with pytest.raises(VaultNotFound, match="not a memkit vault"):
        find_vault(str(tmp_path))
    with pytest.raises(VaultNotFound, match="memkit init"):
        find_vault(cwd=tmp_path)


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("colour: blue\n", "unknown key 'colour'"),
        ("max_memories_per_search: five\n", "max_memories_per_search must be a whole number, 1 or more, not 'five'"),
        ("index_max_entries: true\n", "index_max_entries must be a whole number, 1 or more, not True"),
        ("embedding_similarity_threshold: 3\n", "between -1 and 1"),
        ("embedding_similarity_threshold: high\n", "or 'auto'"),
        ("llm: [a]\n", "llm must be a mapping"),
        ("model: [\nx: 1\n", "line 3: not valid YAML"),
        ("- a\n", "expected a mapping"),
    ],
)
def test_config_errors(tmp_path, yaml_text, message):
    write(tmp_path / "memkit.yaml", yaml_text)
    with pytest.raises(ConfigError, match=message):
        Vault(tmp_path)


def test_config_values(tmp_path):
    write(tmp_path / "memkit.yaml", "index_max_entries: 3\nembedding_similarity_threshold: 0.5\n")
    v = Vault(tmp_path)
    assert v.config.index_max_entries == 3 and v.config.embedding_similarity_threshold == 0.5


def test_model_precedence_flag_then_env_then_yaml(tmp_path, monkeypatch):
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "memkit.yaml", "model: from/yaml\n")
    assert Vault(root, env={}).model == "from/yaml"
    assert Vault(root, env={"MEMKIT_MODEL": "from/env"}).model == "from/env"
    assert Vault(root, model="from/flag", env={"MEMKIT_MODEL": "from/env"}).model == "from/flag"
    monkeypatch.setenv("MEMKIT_MODEL", "from/environ")
    assert Vault(root).model == "from/environ"  # the README: the environment wins for library users too


def test_add_creates_topic_then_appends(vault):
    when = datetime(2026, 2, 10, 9, 15)
    e = vault.add("Prefers bomba rice", topic="Cooking", kind="preference", tags=["rice"], when=when)
    assert (e.topic, e.kind, e.tags, e.date, e.line) == ("cooking", "preference", ("rice",), "2026-02-10", 8)
    text = (vault.topics_dir / "cooking.md").read_text()
    assert text == (
        "---\ntitle: Cooking\ncreated: 2026-02-10T09:15:00\nupdated: 2026-02-10T09:15:00\n---\n# Cooking\n\n"
        "- [preference] Prefers bomba rice #rice (2026-02-10)\n"
    )
    later = datetime(2026, 2, 12, 14, 30)
    vault.add("Uses homemade broth", topic="cooking", when=later)
    after = (vault.topics_dir / "cooking.md").read_text()
    assert after == text + "- Uses homemade broth (2026-02-12)\n"  # a plain append: the frontmatter is not rewritten
    assert vault.topic("cooking").updated() == datetime(2026, 2, 12)  # the newest entry's date counts
    assert (vault.root / "index.txt").read_text() == "2026-02-12T14:30:00|cooking|\n"


def test_add_preserves_hand_written_bytes(vault):
    original = (
        "---\r\nsummary: my stuff\r\ntitle: Odd\r\n# comment\r\nweird_key: {a: 1}\r\n"
        "updated: 2020-01-01T00:00:00\r\n---\r\n\r\nSome prose\r\n\r\n## Heading\r\n* star item"
    )
    path = write(vault.topics_dir / "odd.md", original.encode())
    vault.add("new one", topic="odd", when=datetime(2026, 1, 1, 0, 0, 0))
    got = path.read_bytes().decode()
    assert got == original + "\r\n- new one (2026-01-01)\r\n"  # every byte kept; only the line (and its CRLF) added


def test_add_keeps_bom_and_defaults_to_general(vault):
    path = write(vault.topics_dir / "general.md", "\ufeff- first\n")
    vault.add("second")
    assert path.read_bytes() == "\ufeff- first\n- second ({})\n".format(datetime.now().date()).encode()


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_add_empty_text(vault, text):
    with pytest.raises(MemkitError, match="text is empty"):
        vault.add(text)


@pytest.mark.parametrize("name", ["../../etc/passwd", "a//b", "a/../b", "CON", "x" * 300, "..", ".hidden", "a\\b", "!!!"])
def test_bad_topic_names_write_nothing(vault, name, tmp_path):
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(TopicNameError):
        vault.add("hello", topic=name)
    assert sorted(p for p in tmp_path.rglob("*") if ".memkit" not in p.parts) == [
        p for p in before if ".memkit" not in p.parts
    ]


def test_topic_names_made_canonical(vault):
    assert vault.add("x", topic="Home Lab").topic == "home-lab"


def test_malformed_topic_is_reported_with_warning(vault, caplog):
    write(vault.topics_dir / "good.md", "- fine\n")
    write(vault.topics_dir / "bad.md", "---\ntitle: [oops\n---\n- hidden\n")
    write(vault.topics_dir / "latin1.md", b"- caf\xe9\n")
    write(vault.topics_dir / "empty.md", "")
    with caplog.at_level(logging.WARNING, logger="memkit"):
        infos = {t.name: t.entries for t in vault.topics()}
    assert infos == {"good": 1, "empty": 0, "bad": 1}  # bad frontmatter: the body's entries still count
    messages = " | ".join(r.getMessage() for r in caplog.records)
    assert "topics/bad.md line 3: frontmatter is not valid YAML" in messages
    assert "topics/latin1.md line 1: not valid UTF-8" in messages


def test_add_to_malformed_topic_refuses_and_keeps_file(vault):
    bad = write(vault.topics_dir / "bad.md", "---\ntitle: [oops\n---\n- keep me\n")
    with pytest.raises(MemkitError, match="bad.md line 3"):
        vault.add("x", topic="bad")
    assert bad.read_text() == "---\ntitle: [oops\n---\n- keep me\n"


def test_huge_topic_refused(vault):
    big = vault.topics_dir / "big.md"
    with open(big, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(MemkitError, match="over the 8 MB limit"):
        vault.topic("big")
    assert big.stat().st_size == 50 * 1024 * 1024
    with pytest.raises(MemkitError, match="big.md"):
        vault.add("x", topic="big")


def test_symlink_outside_vault_not_followed(vault, tmp_path, caplog):
    secret = write(tmp_path / "secret.md", "- secret entry\n")
    os.symlink(secret, vault.topics_dir / "leak.md")
    with caplog.at_level(logging.WARNING, logger="memkit"):
        assert vault.entries() == []
    assert "outside the vault" in caplog.text
    with pytest.raises(TopicNotFound, match="outside the vault"):
        vault.topic("leak")
    with pytest.raises(MemkitError, match="outside the vault"):
        vault.add("x", topic="leak")
    assert secret.read_text() == "- secret entry\n"


def test_a_fifo_in_topics_is_no_topic(vault, caplog):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    vault.add("a real entry", topic="real")
    os.mkfifo(vault.topics_dir / "pipe.md")  # reading it the usual way would block
    with caplog.at_level(logging.WARNING, logger="memkit"):
        assert [t.name for t in vault.topics()] == ["real"]
    assert "topics/pipe.md: is a FIFO, not a topic file; skipped" in caplog.text
    with pytest.raises(TopicNotFound, match="topics/pipe.md: is a FIFO, not a topic file"):
        vault.topic("pipe")
    vault.add("another entry", topic="real")  # index.txt's upkeep skips it too
    assert [r.topic for r in vault.recent()] == ["real"]


def test_forget_archives_and_removes(vault):
    vault.add("keep this", topic="t")
    e = vault.add("drop this", topic="t")
    vault.add("keep that", topic="t")
    gone = vault.forget(e.id)
    assert gone.text == e.text
    texts = [x.text for x in vault.topic("t").entries]
    assert all("drop" not in t for t in texts) and len(texts) == 2
    archive = (vault.root / "archive.md").read_text()
    assert archive.startswith("# Archive\n")
    assert f"from t (forgotten): - drop this ({e.date})" in archive


def test_forget_by_match_and_errors(vault):
    vault.add("likes green tea", topic="a")
    vault.add("likes black tea", topic="b")
    with pytest.raises(EntryNotFound, match="2 entries"):
        vault.forget(match="tea")
    with pytest.raises(EntryNotFound, match="no entry"):
        vault.forget(match="coffee")
    with pytest.raises(EntryNotFound, match="too short"):
        vault.forget("ab")
    vault.forget(match="GREEN tea")
    assert [e.text.split(" (")[0] for e in vault.entries()] == ["likes black tea"]


def test_forget_prose_paragraph(vault):
    path = write(vault.topics_dir / "p.md", "- a\n\nline one\nline two\n\n- b\n")
    vault.forget(match="line one line two")
    assert path.read_text() == "- a\n\n\n- b\n"


def test_recent_index_order_limit_and_rebuild(tmp_path):
    v = Vault.init(tmp_path / "v", profile=False)
    (v.root / "memkit.yaml").write_text("index_max_entries: 2\n")
    v = Vault(v.root)
    v.add("a", topic="one", when=datetime(2026, 1, 1, 10, 0))
    v.add("b", topic="two", when=datetime(2026, 1, 2, 10, 0))
    v.add("c", topic="three", when=datetime(2026, 1, 3, 10, 0))
    assert [r.topic for r in v.recent()] == ["three", "two"]
    (v.root / "index.txt").write_text("garbage\n")
    write(v.topics_dir / "four.md", "---\nsummary: fourth | topic\nupdated: 2026-05-01T00:00:00\n---\n- x\n")
    items = v.recent(rebuild=True)
    assert [r.topic for r in items] == ["four", "three"]
    assert (v.root / "index.txt").read_text().splitlines()[0] == "2026-05-01T00:00:00|four|fourth / topic"


def test_recent_rebuild_uses_mtime_without_frontmatter(vault):
    path = write(vault.topics_dir / "plain.md", "- x\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    item = vault.recent(rebuild=True)[0]
    assert item.updated == datetime.fromtimestamp(1_700_000_000)


@pytest.mark.parametrize(
    "seconds, text",
    [(5, "just now"), (120, "2 minutes ago"), (3 * 3600, "3 hours ago"), (86400 + 5, "yesterday"),
     (3 * 86400, "3 days ago"), (21 * 86400, "3 weeks ago"), (90 * 86400, "3 months ago"),
     (800 * 86400, "2 years ago"), (-100, "in the future")],
)
def test_relative_time(seconds, text):
    from datetime import timedelta

    now = datetime(2026, 3, 1)
    assert relative_time(now - timedelta(seconds=seconds), now) == text


def test_read_only_vault(tmp_path):
    """A vault the user cannot write: a clear error and the file untouched."""
    import shutil
    import subprocess
    import sys
    import tempfile

    if os.geteuid() != 0:
        vault = Vault.init(tmp_path / "v", profile=False)
        path = write(vault.topics_dir / "t.md", "- one\n")
        os.chmod(vault.topics_dir, 0o555)
        try:
            with pytest.raises(MemkitError, match="cannot write"):
                vault.add("two", topic="t")
        finally:
            os.chmod(vault.topics_dir, 0o755)
        assert path.read_text() == "- one\n"
        return
    # root ignores permission bits: run the write as an unprivileged user instead
    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        vault = Vault.init(base / "v", profile=False)
        path = write(vault.topics_dir / "t.md", "- one\n")
        (vault.root / ".memkit").mkdir(exist_ok=True)
        code = (
            "import os, sys, yaml, json, tempfile, encodings.utf_8_sig, frontmatter.default_handlers, memkit.frontends.cli.group;"
            "os.setgid(65534); os.setuid(65534);"
            "memkit.frontends.cli.group.main(['--vault', sys.argv[1], 'add', 'two', '--topic', 't'])"
        )
        proc = subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        assert "memkit: error: cannot write" in proc.stderr and "Permission denied" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert path.read_text() == "- one\n"
    finally:
        shutil.rmtree(base)


ALIAS_BOMB = ('a: &a ["x","x","x","x","x","x","x","x","x"]\n'
              + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                        for p, c in zip("abcdefgh", "bcdefghi"))
              + "title: *i\n")


@pytest.mark.parametrize("frontmatter, problem", [
    (ALIAS_BOMB, "aliases .*name. expand to more than"),
    ("title: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than 64 levels"),
    ("title: x\nnote: '" + "y" * 300_000 + "'\n", "over the 256 kB limit"),
])
def test_hostile_frontmatter_is_refused_with_a_warning_and_the_vault_goes_on(tmp_path: Path, caplog,
                                                                             frontmatter: str, problem: str) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    write(vault.topics_dir / "bomb.md", f"---\n{frontmatter}---\n- inside the bomb\n")
    vault.add("a normal memory", topic="fine")
    # returns at once: the frontmatter is refused, the body's entries are still read
    assert [t.name for t in vault.topics()] == ["bomb", "fine"]
    assert [e.text for e in vault.topic("bomb").entries] == ["inside the bomb"]
    assert any("topics/bomb.md" in r.getMessage() and re.search(problem, r.getMessage()) for r in caplog.records)
    path = vault.topics_dir / "bomb.md"
    before = path.read_bytes()
    with pytest.raises(MemkitError, match=problem):
        vault.add("more", topic="bomb")
    assert path.read_bytes() == before


def test_alias_bomb_in_memkit_yaml_is_a_config_error(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text(ALIAS_BOMB.replace("title", "model"))
    with pytest.raises(MemkitError, match=r"memkit.yaml line 2: not valid YAML: its aliases"):
        Vault(root)


def _cli(root: Path, *args: str):
    from click.testing import CliRunner
    from util import FakeEmbedder

    from memkit.frontends.cli.group import main

    return CliRunner().invoke(main, ["--vault", str(root), *args], obj={"vault_obj": Vault(root, embedder=FakeEmbedder())})


def test_symlink_loop_is_skipped_by_every_command(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat named Miso\n")
    os.symlink("loop2.md", root / "topics" / "loop1.md")
    os.symlink("loop1.md", root / "topics" / "loop2.md")
    for args in (["topics"], ["recent"], ["index"], ["search", "cat", "--threshold", "0"], ["context", "my cat"],
                 ["check"]):
        result = _cli(root, *args)
        assert "unexpected error" not in result.output, (args, result.output)
        assert result.exit_code == (1 if args == ["check"] else 0), (args, result.output)
    assert "loop1.md" in _cli(root, "check").output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_never_blocks(tmp_path: Path) -> None:
    """Nobody ever writes to these FIFOs: a blocking open would never return."""
    root = Vault.init(tmp_path / "v", profile=False).root
    os.mkfifo(root / "topics" / "fifo.md")
    os.mkfifo(tmp_path / "x.fifo")
    added = _cli(root, "add", "x", "--topic", "fifo")
    assert added.exit_code == 1 and "FIFO" in added.output
    (root / "memkit.yaml").write_text("llm: {base_url: 'http://127.0.0.1:9', model: m}\n")
    digested = _cli(root, "digest", str(tmp_path / "x.fifo"))
    assert digested.exit_code == 1 and "FIFO" in digested.output
    assert _cli(root, "topics").exit_code == 0


def test_state_dir_that_is_not_a_folder_inside_the_vault(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat named Miso\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / ".memkit")
    result = _cli(root, "add", "x", "--topic", "pets")
    assert result.exit_code == 1 and ".memkit is a symlink" in result.output
    assert _cli(root, "search", "cat").exit_code == 1
    assert list(outside.iterdir()) == []  # nothing written outside the vault, not even a lock file
    os.unlink(root / ".memkit")
    (root / ".memkit").write_text("not a folder")
    found = _cli(root, "search", "cat", "--threshold", "0")  # the index lives in memory instead
    assert found.exit_code == 0 and "Miso" in found.output
    result = _cli(root, "add", "x", "--topic", "pets")
    assert result.exit_code == 1 and ".memkit is a file" in result.output


def test_archive_symlink_out_of_the_vault_is_never_written(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat named Miso\n- Walks daily\n")
    secret = write(tmp_path / "secret.txt", "do not touch\n")
    os.symlink(secret, root / "archive.md")
    result = _cli(root, "forget", "--match", "Walks")
    assert result.exit_code == 1 and "outside the vault" in result.output
    assert secret.read_text() == "do not touch\n"
    assert "Walks daily" in (root / "topics" / "pets.md").read_text()  # nothing removed either


def test_a_read_only_vault_can_be_searched(tmp_path: Path) -> None:
    """As an unprivileged user (root ignores permission bits), on a vault nobody may write."""
    import shutil
    import subprocess
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        root = Vault.init(base / "v", profile=False).root
        write(root / "topics" / "pets.md", "- Has a cat named Miso\n- Walks the dog daily\n")
        if os.geteuid() != 0:
            pytest.skip("needs root to drop to an unprivileged user")
        for folder, _, files in os.walk(root):
            os.chmod(folder, 0o555)
            for name in files:
                os.chmod(Path(folder) / name, 0o444)
        code = ("import os, sys, json, tempfile, sqlite3, encodings.utf_8_sig, encodings.idna;"
                "sys.path.insert(0, sys.argv[2]); from util import FakeEmbedder;"
                "from click.testing import CliRunner; from memkit import Vault; from memkit.frontends.cli.group import main;"
                "warm = Vault.init(tempfile.mkdtemp() + '/w', profile=False); warm.add('x', topic='t');"
                "CliRunner().invoke(main, ['--vault', str(warm.root), 'search', 'x'],"
                " obj={'vault_obj': Vault(warm.root, embedder=FakeEmbedder())});"  # imports all it needs
                "os.setgid(65534); os.setuid(65534);"  # then drops privileges: /root is not readable
                "r = CliRunner().invoke(main, ['--vault', sys.argv[1], 'search', 'cat', '--threshold', '0'],"
                " obj={'vault_obj': Vault(sys.argv[1], embedder=FakeEmbedder())});"
                "print(r.exit_code); print(r.output)")
        proc = subprocess.run([sys.executable, "-c", code, str(root), str(Path(__file__).parent)],
                              capture_output=True, text=True, timeout=60)
        assert proc.stdout.startswith("0\n") and "Miso" in proc.stdout, proc.stdout + proc.stderr
        assert not (root / ".memkit").exists()
    finally:
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        shutil.rmtree(base)


def test_a_full_disk_is_one_line(tmp_path: Path, monkeypatch) -> None:
    import errno

    root = Vault.init(tmp_path / "v", profile=False).root

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Vault, "index", full)
    result = _cli(root, "index", "--full")
    assert result.exit_code == 1 and result.output.strip() == "memkit: error: No space left on device"


def test_a_topic_reachable_under_two_names_is_listed_and_searched_once(tmp_path: Path) -> None:
    from util import FakeEmbedder

    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat named Miso\n")
    os.symlink("pets.md", root / "topics" / "animals.md")  # an alias inside the vault
    vault = Vault(root, embedder=FakeEmbedder())
    assert [t.name for t in vault.topics()] == ["pets"]
    assert [h.topic for h in vault.search("cat named Miso", threshold=None)] == ["pets"]


def test_editing_a_code_block_is_refused_and_add_after_a_bare_cr_keeps_lines(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "code.md", "```\nx = 1\n    y = 2\n```\n")
    vault = Vault(root)
    block = vault.topic("code").entries[0]
    with pytest.raises(MemkitError, match="not a list item"):
        vault.edit(block.id, "x = 3")
    odd = write(root / "topics" / "odd.md", b"- a\r\n- b\r")
    entry = vault.add("c", topic="odd", when=datetime(2026, 3, 1))
    assert [e.text for e in vault.topic("odd").entries] == ["a", "b", "c (2026-03-01)"] and entry.text == "c (2026-03-01)"
    assert odd.read_bytes().startswith(b"- a\r\n- b\r")


def test_writing_to_a_symlink_loop_says_it_is_a_loop_and_names_the_links(tmp_path: Path) -> None:
    """Issue 41 item 17: `add --topic loop1` said the link led outside the vault; it says it is a
    loop, naming the path and the links it goes round (and `check` says loop too)."""
    root = Vault.init(tmp_path / "v", profile=False).root
    os.symlink("loop2.md", root / "topics" / "loop1.md")
    os.symlink("loop1.md", root / "topics" / "loop2.md")
    added = _cli(root, "add", "x", "--topic", "loop1")
    assert added.exit_code == 1
    assert ("topics/loop1.md is a symlink loop (topics/loop1.md -> topics/loop2.md -> topics/loop1.md)"
            in added.output) and "outside the vault" not in added.output
    assert "topics/loop1.md: a symlink loop" in _cli(root, "check").output
    os.symlink(str(tmp_path / "elsewhere.md"), root / "topics" / "out.md")
    (tmp_path / "elsewhere.md").write_text("- outside\n")
    assert "topics/out.md is a symlink to a file outside the vault" in _cli(root, "add", "x", "--topic", "out").output
