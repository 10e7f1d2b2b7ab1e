"""Hardening: a person's edits are never overwritten, and odd files, links and formats are handled.

Every case here runs on real files; the concurrent ones on real processes.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from memkit import MemkitError, Vault
from memkit.fsutil import FileChanged, replace_checked, stamp_of
from memkit.topic import parse_topic_text, read_topic

from util import write

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_hand_appends_are_never_lost_while_memkit_adds_and_forgets(tmp_path: Path) -> None:
    """Processes: 3 memkit writers (adds, and forgets that rewrite the file) and a shell appending
    with ``>>`` to the same topic file at the same time; every line is there at the end."""
    vault = Vault.init(tmp_path / "v", profile=False)
    seeded = [f"seed line {i:02d}x" for i in range(15)]
    for text in seeded:
        vault.add(text, topic="cooking")
    path = vault.topics_dir / "cooking.md"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    adder = """
        import sys
        from memkit import Vault
        from memkit.config import Config
        v = Vault(sys.argv[1], config=Config(topic_split_threshold_lines=100000))
        for i in range(40):
            v.add(f"added by {sys.argv[2]} number {i}", topic="cooking", split=False)
    """
    forgetter = """
        import sys
        from memkit import Vault
        v = Vault(sys.argv[1])
        for i in range(15):
            v.forget(match=f"seed line {i:02d}x", topic="cooking")
    """
    # the shell appends until the memkit writers are done (a few ms apart, like an editor saving)
    hand = (f"i=0; while [ ! -e '{tmp_path}/stop' ] || [ $i -lt 150 ]; do i=$((i+1)); "
            f"echo \"- hand line $i\" >> '{path}'; sleep 0.002; done; echo $i > '{tmp_path}/count'")
    shell = subprocess.Popen(["bash", "-c", hand])
    try:
        procs = [subprocess.Popen([*_python(adder), str(vault.root), f"w{n}"], env=env) for n in range(2)]
        procs.append(subprocess.Popen([*_python(forgetter), str(vault.root)], env=env))
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        (tmp_path / "stop").touch()  # the shell stops even when a writer failed
        if shell.wait(timeout=60) != 0:
            shell.kill()
    assert codes == [0, 0, 0]
    hand_lines = int((tmp_path / "count").read_text())
    lines = path.read_text().splitlines()
    for n in range(2):
        for i in range(40):
            assert lines.count(f"- added by w{n} number {i} ({datetime.now().date().isoformat()})") == 1
    lost = [i for i in range(1, hand_lines + 1) if lines.count(f"- hand line {i}") != 1]
    assert not lost, f"{len(lost)} of {hand_lines} hand-appended lines lost: {lost[:10]}"
    archive = (vault.root / "archive.md").read_text()
    for text in seeded:
        assert not any(text == line.split(" (")[0][2:] for line in lines)
        assert archive.count(f"): - {text} (") == 1


def test_replace_checked_keeps_an_append_made_meanwhile(tmp_path: Path) -> None:
    path = write(tmp_path / "t.md", "- a\n- b\n")
    base, stamp = path.read_bytes(), stamp_of(path.stat())
    with open(path, "ab") as fh:  # an editor appends after memkit read the file
        fh.write(b"- typed by hand\n")
    replace_checked(path, b"- a\n", base, stamp)  # memkit removes "- b"
    assert path.read_bytes() == b"- a\n- typed by hand\n"


def test_replace_checked_refuses_other_changes(tmp_path: Path) -> None:
    path = write(tmp_path / "t.md", "- a\n- b\n")
    base, stamp = path.read_bytes(), stamp_of(path.stat())
    path.write_bytes(b"- a edited\n- b\n")  # rewritten in place by an editor
    with pytest.raises(FileChanged, match="changed by someone else"):
        replace_checked(path, b"- a\n", base, stamp)
    assert path.read_bytes() == b"- a edited\n- b\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.md"]  # no temp file left


def test_replace_checked_refuses_a_file_created_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "new.md"
    write(path, "- someone was first\n")
    with pytest.raises(FileChanged):
        replace_checked(path, b"- mine\n", b"", None)
    assert path.read_text() == "- someone was first\n"


def test_forget_refuses_when_the_topic_changed_under_it(tmp_path: Path, monkeypatch) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    e = vault.add("keep me safe", topic="t")
    vault.add("forget me", topic="t")
    path = vault.topics_dir / "t.md"
    real = vault.store.read_for_write

    def read_then_edit(name):  # an editor rewrites the file between memkit's read and its rename
        topic = real(name)
        path.write_text(path.read_text().replace("keep me safe", "keep me safe, edited"))
        return topic

    monkeypatch.setattr(vault.store, "read_for_write", read_then_edit)
    with pytest.raises(MemkitError, match="topics/t.md.*changed by someone else"):
        vault.forget(match="forget me")
    text = path.read_text()
    assert "keep me safe, edited" in text and "forget me" in text
    assert e.id  # the entry object is still usable


# ---- format edges ------------------------------------------------------------------------------

def test_cr_only_file_is_read_and_appended_with_its_line_ending(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    original = b"---\rtitle: Old Mac\r---\r# Old Mac\r\r- first entry\r- second entry\r"
    path = write(vault.topics_dir / "oldmac.md", original)
    topic = vault.topic("oldmac")
    assert [e.text for e in topic.entries] == ["first entry", "second entry"]
    assert topic.title == "Old Mac"
    vault.add("third entry", topic="oldmac", when=datetime(2026, 3, 1))
    assert path.read_bytes() == original + b"- third entry (2026-03-01)\r"
    vault.forget(match="first entry")
    assert path.read_bytes() == b"---\rtitle: Old Mac\r---\r# Old Mac\r\r- second entry\r- third entry (2026-03-01)\r"


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_lines_in_a_fenced_block_are_not_list_entries(fence: str) -> None:
    text = f"# T\n\n- real entry\n{fence}python\n- not an entry\n* nor this\n{fence}\n- another real one\n"
    topic = parse_topic_text(text, "t", "topics/t.md")
    listed = [e.text for e in topic.entries if e.is_list]
    assert listed == ["real entry", "another real one"]
    code = [e for e in topic.entries if not e.is_list]
    assert len(code) == 1 and "not an entry" in code[0].text  # the block's text stays searchable, as one


def test_a_fence_closes_only_with_the_same_character_and_length() -> None:
    text = "````\n- in code\n```\n- still code\n~~~\n````\n- outside\n"
    topic = parse_topic_text(text, "t", "topics/t.md")
    assert [e.text for e in topic.entries if e.is_list] == ["outside"]


def test_add_after_an_unclosed_fence_lands_outside_it(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    path = write(vault.topics_dir / "notes.md", "- before\n~~~\nsome code the person never closed\n")
    entry = vault.add("after the code", topic="notes", when=datetime(2026, 3, 1))
    assert path.read_text() == ("- before\n~~~\nsome code the person never closed\n~~~\n"
                                "- after the code (2026-03-01)\n")
    again = read_topic(path, "notes", "topics/notes.md")
    assert [e.text for e in again.entries if e.is_list] == ["before", "after the code (2026-03-01)"]
    assert entry.line == 5


def test_add_to_a_file_without_final_newline(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    path = write(vault.topics_dir / "t.md", "- no newline at the end")
    vault.add("next", topic="t", when=datetime(2026, 3, 1))
    assert path.read_text() == "- no newline at the end\n- next (2026-03-01)\n"


def test_many_unclosed_fences_parse_in_linear_time() -> None:
    text = "````\n```\n" * 20000  # no fence of four ever closes; a naive scan is quadratic
    topic = parse_topic_text(text, "t", "topics/t.md")
    assert topic.entries is not None


# ---- hostile YAML ------------------------------------------------------------------------------

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


def test_closing_an_open_fence_on_add_changes_no_existing_entry(tmp_path: Path) -> None:
    """An unclosed fence runs to the end of the file (CommonMark): what follows it is code both
    before and after the add closes it, so every existing entry keeps its id, text and lines."""
    vault = Vault.init(tmp_path / "v", profile=False)
    write(vault.topics_dir / "notes.md", "- before\n~~~\n- [decision] Switched to fish shell #shell (2026-01-05)\n")
    before = [(e.id, e.text, e.line, e.end_line) for e in vault.topic("notes").entries]
    vault.add("after", topic="notes", when=datetime(2026, 3, 1))
    after = [(e.id, e.text, e.line, e.end_line) for e in vault.topic("notes").entries]
    assert after[:-1] == before and after[-1][1] == "after (2026-03-01)"


def test_set_frontmatter_sets_every_copy_of_a_key_and_keeps_comments() -> None:
    from memkit.topic import set_frontmatter

    text = ("---\ntitle: T\nupdated: 2026-01-01T00:00:00  # bumped by hand\n"
            "updated: 2026-01-02T00:00:00\n---\n- a\n")
    new = set_frontmatter(text, {"updated": datetime(2026, 3, 1, 8)})
    assert new == ("---\ntitle: T\nupdated: 2026-03-01T08:00:00  # bumped by hand\n"
                   "updated: 2026-03-01T08:00:00\n---\n- a\n")
    assert parse_topic_text(new, "t", "topics/t.md").meta["updated"] == datetime(2026, 3, 1, 8)


# ---- LLM replies and commands that outlast their limits ----------------------------------------

def _command_llm(command: str, timeout_s: float):
    from memkit.llm import CommandLLM, LLMSettings

    return CommandLLM(LLMSettings(command=command, timeout_s=timeout_s))


@pytest.mark.skipif(os.name != "posix" or not Path("/usr/bin/setsid").exists(), reason="needs setsid")
def test_a_command_whose_background_grandchild_holds_stdout_answers_promptly() -> None:
    # it answers, then leaves a process in a session of its own holding stdout open
    llm = _command_llm("echo '{\"ok\": true}'; setsid sleep 30 &", timeout_s=8)
    # the answer, after the pipe grace (1 s); waiting for the grandchild would end in a timeout error
    assert llm.chat([{"role": "user", "content": "hi"}]) == '{"ok": true}'


@pytest.mark.skipif(os.name != "posix" or not Path("/usr/bin/setsid").exists(), reason="needs setsid")
def test_timeout_bounds_a_command_with_a_grandchild() -> None:
    import time

    from memkit.errors import LLMError

    llm = _command_llm("setsid sleep 30 & sleep 30", timeout_s=1)
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 1 s"):
        llm.chat([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 20  # about timeout_s (1 s), never the children's 30 s


def test_a_bracket_bomb_reply_is_refused_and_a_repair_asked_for() -> None:
    from memkit.llm import ask_json

    class Scripted:
        def __init__(self, replies):
            self.replies = list(replies)
            self.asked = 0

        def chat(self, messages):
            self.asked += 1
            return self.replies.pop(0)

    llm = Scripted(["[" * 100_000 + "]" * 100_000, '{"conclusions": []}'])
    assert ask_json(llm, [{"role": "user", "content": "x"}]) == {"conclusions": []}
    assert llm.asked == 2  # refused before parsing (no RecursionError from 100k-deep nesting), then repaired


def test_unusable_conclusions_are_skipped_and_reported(tmp_path: Path) -> None:
    import json as json_

    from memkit.digest import digest_file

    from fake_llm import FakeLLM
    from util import loopback_llm

    from util import FakeEmbedder

    vault = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    items = [None, 3, {"kind": "fact", "text": 42}, {"kind": "fact", "text": "Moved to Seattle last month"},
             "Started running 5 km"]
    reply = json_.dumps({"conclusions": items})
    transcript = write(tmp_path / "t.txt", "Maya: I moved to Seattle last month, and I run 5 km now\n")
    with FakeLLM(lambda request: reply) as fake:
        report = digest_file(vault.searcher, transcript, loopback_llm(fake))
    written = sorted(line.split(" (")[0] for _, line in report.written)
    assert written == ["- [fact] Moved to Seattle last month", "- [fact] Started running 5 km"]  # the good ones
    reasons = [why for _, why in report.skipped]
    assert sum("unusable" in why for why in reasons) == 3


# ---- one bad file, link or folder never stops the vault ------------------------------------------

def _cli(root: Path, *args: str):
    from click.testing import CliRunner

    from memkit.cli import main
    from util import FakeEmbedder

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
    import time

    root = Vault.init(tmp_path / "v", profile=False).root
    os.mkfifo(root / "topics" / "fifo.md")
    os.mkfifo(tmp_path / "x.fifo")
    started = time.monotonic()
    added = _cli(root, "add", "x", "--topic", "fifo")
    assert added.exit_code == 1 and "FIFO" in added.output
    (root / "memkit.yaml").write_text("llm: {base_url: 'http://127.0.0.1:9', model: m}\n")
    digested = _cli(root, "digest", str(tmp_path / "x.fifo"))
    assert digested.exit_code == 1 and "FIFO" in digested.output
    assert _cli(root, "topics").exit_code == 0
    assert time.monotonic() - started < 10  # each returned at once (a blocking open would hang forever)


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
                "from click.testing import CliRunner; from memkit import Vault; from memkit.cli import main;"
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


# ---- multi-file work finishes or rolls back ------------------------------------------------------

SPLITTER = """
import os, signal, sys
sys.path.insert(0, sys.argv[3])
from util import FakeEmbedder
from memkit import Vault
n, count = int(sys.argv[2]), [0]
real = os.replace
def dying_replace(src, dst, *a, **k):
    count[0] += 1
    if count[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *a, **k)
os.replace = dying_replace
Vault(sys.argv[1], embedder=FakeEmbedder()).split("big", llm=None)
print("finished", count[0])
"""


def test_a_split_killed_at_any_rename_leaves_each_entry_once(tmp_path: Path) -> None:
    import subprocess
    import sys
    from collections import Counter

    themes = ["rice paella bomba saffron", "bread sourdough rye flour", "kimchi cabbage ferment jar"]
    lines = [f"- {themes[i % 3]} note number {i}" for i in range(30)]
    n = 1
    while True:
        root = Vault.init(tmp_path / f"v{n}", profile=False).root
        write(root / "topics" / "big.md", "# Big\n\n" + "\n".join(lines) + "\n")
        proc = subprocess.run([sys.executable, "-c", SPLITTER, str(root), str(n), str(Path(__file__).parent)],
                              capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        killed = proc.returncode != 0
        vault = Vault(root)
        vault.add("a later write takes the lock", topic="other")  # recovery runs here
        found = Counter(line for f in (root / "topics").glob("*.md") for line in f.read_text().splitlines()
                        if line.startswith("- ") and "note number" in line)
        assert all(found[line] == 1 for line in lines), (n, killed, +found)
        assert not [p.name for p in (root / "topics").iterdir() if p.name.endswith(".tmp")]
        assert not [p.name for p in root.iterdir() if p.name.endswith(".tmp")]
        assert not (root / ".memkit" / "split-journal.json").exists()
        if not killed:
            assert "finished" in proc.stdout
            break
        n += 1
    assert n >= 4  # the journal, the parts and index.txt: each rename was a kill point


def test_a_topic_reachable_under_two_names_is_listed_and_searched_once(tmp_path: Path) -> None:
    from util import FakeEmbedder

    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat named Miso\n")
    os.symlink("pets.md", root / "topics" / "animals.md")  # an alias inside the vault
    vault = Vault(root, embedder=FakeEmbedder())
    assert [t.name for t in vault.topics()] == ["pets"]
    assert [h.topic for h in vault.search("cat named Miso", threshold=None)] == ["pets"]


# ---- from an independent review ----------------------------------------------------------------

@pytest.mark.parametrize("text", ["likes caf\udce9 au lait", "a\x00z", "bell \x07 here"])
def test_text_that_would_break_the_file_is_refused_before_writing(tmp_path: Path, text: str) -> None:
    from util import FakeEmbedder

    vault = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    vault.add("likes pasta", topic="food")
    before = (vault.topics_dir / "food.md").read_bytes()
    with pytest.raises(MemkitError, match="memkit writes plain UTF-8 text only"):
        vault.add(text, topic="food")
    with pytest.raises(MemkitError, match="memkit writes plain UTF-8 text only"):
        vault.edit(None, text, match="pasta")
    assert (vault.topics_dir / "food.md").read_bytes() == before
    assert [e.text.split(" (")[0] for e in vault.topic("food").entries] == ["likes pasta"]


def test_a_split_whose_parent_changes_meanwhile_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    import memkit.store as store_mod
    from util import FakeEmbedder

    root = Vault.init(tmp_path / "v", profile=False).root
    lines = [f"- {('basil tomato garden', 'stuff boxes attic')[i % 2]} note {i}" for i in range(24)]
    path = write(root / "topics" / "stuff.md", "\n".join(lines) + "\n")
    vault = Vault(root, embedder=FakeEmbedder())
    real = store_mod.atomic_write
    typed = []

    def write_then_type(target, data):
        real(target, data)
        if not typed and target.name.startswith("stuff-"):  # a person saves the parent mid-split
            typed.append(1)
            with open(path, "a") as fh:
                fh.write("- PERSON TYPED\n")

    monkeypatch.setattr(store_mod, "atomic_write", write_then_type)
    with pytest.raises(MemkitError, match="changed by someone else during the split"):
        vault.split("stuff", llm=None)
    assert "- PERSON TYPED" in path.read_text() and path.read_text().count("note ") == 24
    assert sorted(p.name for p in (root / "topics").iterdir()) == ["stuff.md"]


def test_the_temp_sweep_touches_only_memkits_own_files_inside_the_vault(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    mine = write(root / ".notes.txt.abcdefgh.tmp", "a person's file")
    outside = tmp_path / "outside"
    write(outside / ".report.2024_q1x.tmp", "another program's file")
    (root / "topics").rmdir()
    os.symlink(outside, root / "topics")
    with pytest.raises(MemkitError):
        Vault(root).add("x", topic="t")
    assert mine.exists() and (outside / ".report.2024_q1x.tmp").exists()


def test_tidy_never_archives_prose_or_code_that_mentions_until(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    text = ("I rented in Paris (until 2019-06-30) and then moved to Lyon.\n\n"
            "```python\ndef f():\n    return 1  # (until 2020-01-01)\n```\n\n"
            "- Parking spot B14 (until 2020-01-01)\n")
    path = write(root / "topics" / "notes.md", text)
    report = Vault(root).tidy()
    assert [e.text for e, _ in report.expired] == ["Parking spot B14 (until 2020-01-01)"]
    assert path.read_text() == text.replace("- Parking spot B14 (until 2020-01-01)\n", "")


def test_check_fix_never_breaks_frontmatter_or_repeated_code(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memkit.cli import main
    from util import FakeEmbedder

    root = Vault.init(tmp_path / "v", profile=False).root
    text = ("---\ntitle: Setup\ntags:\n  - linux\n  - shell\ntags:\n  - ops\n---\n"
            "## A\n```\nmake install\n```\n\n## B\n```\nmake install\n```\n\n- same line\n- same line\n")
    path = write(root / "topics" / "setup.md", text)
    vault = Vault(root, embedder=FakeEmbedder())
    CliRunner().invoke(main, ["--vault", str(root), "check", "--fix"], obj={"vault_obj": vault})
    after = path.read_text()
    assert after == text.replace("- same line\n- same line\n", "- same line\n")  # only the exact list duplicate
    assert Vault(root).topic("setup").write_problem() is None


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


def test_a_heading_underline_is_not_a_merge_marker() -> None:
    import shutil as sh

    from memkit.gitsync import merge_topic

    if sh.which("git") is None:
        pytest.skip("git is not installed")
    merged, left = merge_topic(b"# T\n- a\n", b"# T\n- a\nNotes\n=======\n- o\n", b"# T\n- t\n")
    assert (merged, left) == (b"# T\n- t\nNotes\n=======\n- o\n", 0)


def test_a_conclusion_with_a_nul_is_skipped_not_written() -> None:
    from memkit.digest import _validate_extraction  # noqa: PLC2701 - the validator itself

    items, _, bad = _validate_extraction({"conclusions": [{"text": "ok fact"}, {"text": "bad\u0000fact"}]})
    assert [i["text"] for i in items] == ["ok fact"] and "control character U+0000" in bad[0][1]
