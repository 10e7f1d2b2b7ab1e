"""The examples of README.md and of every docs/*.md page run, and print what the page says they
print (like cog / doctest).

Each page is a test of its own (``test_examples[docs/git.md]``): its blocks run in order, and a
page's first block never continues another page's. Every ```console and ```python block of a page
has a marker on the line before it:

- ``<!-- readme-test: sample -->``: run on a fresh copy of the sample vault ``vault/``, placed at
  ``~/memory`` (HOME is a temp folder); the working folder is that copy. ``MEMKIT_VAULT`` is unset,
  as in a new user's shell: a command run from another folder names the vault (``--vault ~/memory``).
- ``<!-- readme-test: fresh -->``: HOME is an empty temp folder; the commands run as written.
- ``<!-- readme-test: continue -->``: the state (files, folder, environment) the previous block left.
- ``, llm`` after the mode: the vault's ``llm:`` is a scripted loopback server (the demo's,
  ``bench/demo/demo_llm.py``) that answers digest prompts for ``bench/demo/transcript-2026-11-21.txt``.
- ``<!-- readme-test: skip — why -->``: not run; only where running it is impossible.

A block whose commands run a program this machine lacks (``curl``, which the HTTP examples call
the server with, is not part of the set-up) is not run, nor are the ``continue`` blocks after it:
the test then ends as skipped, naming those blocks and the missing program, once every other
example has run and matched.

In a console block each ``$ `` line is a command (``cd``, ``&&``, ``echo … | memkit …``, ``< file``,
a trailing ``# comment``; ``memkit`` runs in-process with click's CliRunner, anything else in
bash) and the lines up to the next ``$ `` are its stdout and stderr. Compared after normalising
what legitimately varies: entry ids, dates and timestamps, relative times, decimal numbers
(scores, durations) and the spaces that pad them, and the temp HOME (shown as ``/home/maya``).
A line that is exactly ``…`` stands for any number of lines, a ``…`` within a line for anything.
An id the README shows in an output and uses in a later command is replaced there by the real
one. A line ``^C`` in an output is where the runner interrupts a command that runs until stopped
(it runs in a subprocess and gets SIGINT once the lines above ``^C`` are printed). Dates after
``README_DAY`` in commands (``--until 2026-12-31``) are moved as far after today, so that the
examples never expire, and outputs are shown as on ``README_DAY``. Files the examples read
(``chat.txt``, ``hook-payload.json``…) are made first.

A ```python block is executed (``Vault("~/memory")`` is the sample vault copy) and must not raise.

``MEMKIT_README_SCORES=1`` compares the score a search result line starts with as well.
``MEMKIT_README_UPDATE=1 python -m pytest tests/test_readme.py`` rewrites the pages (``-k git.md``
for one): the output of each command that no longer matches is replaced whole by what it prints now (elide it again
by hand where it is long), and later commands of the block take the ids it shows. A command
whose output still matches is left as it is. So a change of ranking or model is a diff to review.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import inspect
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM

from memkit.frontends.cli.group import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """README.md and every docs/*.md: the pages whose examples run."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


PAGES = [pytest.param(path, id=page_id(path)) for path in pages()]
UPDATE = os.environ.get("MEMKIT_README_UPDATE") == "1"
README_DAY = date(2026, 11, 23)  #: the day the README's examples were written ("today" in them)
SHOWN_HOME = "/home/maya"  #: how the README shows the temp HOME
MEMKIT_BIN = Path(sys.executable).with_name("memkit")  #: the venv's script, for what runs in a subprocess
SESSION = "3f1c2a9e-7b1d-4c55-9a0e-1f2e3d4c5b6a"  #: the Claude Code session of the capture example
TIMEOUT_S = 60  #: the most a stopped command may take to print its lines (a generous bound, not a delay)

MARKER = re.compile(r"^<!-- readme-test: (?P<mode>sample|fresh|continue|skip)\b(?P<rest>.*?) -->$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


def demo_model() -> str | None:
    """The model the demo names once the default has fallen back (``export MEMKIT_MODEL=…``)."""
    found = re.search(r"^export MEMKIT_MODEL=(\S+)", (ROOT / "bench" / "demo.sh").read_text(), re.M)
    return found.group(1) if found else None


# ---- the README's blocks ------------------------------------------------------------------------

@dataclass
class Step:
    command: str
    line: int  #: index in the README's lines
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    lang: str
    start: int  #: index of the opening fence
    end: int  #: index of the closing fence
    body: list[str]
    mode: str | None
    options: set[str]
    page: str = "README.md"  #: the file it is in, relative to the repository

    @property
    def where(self) -> str:
        return f"{self.page} line {self.start + 1}"

    def steps(self) -> list[Step]:
        steps: list[Step] = []
        for i, text in enumerate(self.body):
            if text.startswith("$ "):
                steps.append(Step(text[2:], self.start + 1 + i))
            elif steps:
                steps[-1].expected.append(text)
            elif text.strip():
                raise AssertionError(f"{self.where}: output before the first `$ ` command")
        for step in steps:
            while step.expected and not step.expected[-1].strip():
                step.expected.pop()
        return steps


def parse_blocks(lines: list[str], page: str = "README.md") -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mode, options = None, set()
        marker = MARKER.match(lines[i - 1]) if i else None
        if marker:
            mode = marker["mode"]
            rest = marker["rest"].strip()
            if mode == "skip":
                options = {rest.lstrip("—-: ").strip()}
            else:
                options = {o.strip() for o in rest.strip(",; ").split(",") if o.strip()}
        blocks.append(Block(fence["lang"], i, end, lines[i + 1:end], mode, options, page))
        i = end + 1
    return blocks


# ---- comparing outputs --------------------------------------------------------------------------

ID = re.compile(r"\b[0-9a-f]{8}\b")
VARIABLE = [
    (re.compile(r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b"), "<date>"),
    (ID, "<id>"),
    (re.compile(r"\b(?:just now|in the future|yesterday|\d+ (?:second|minute|hour|day|week|month|year)s? ago)\b"),
     "<when>"),
    # MEMKIT_README_SCORES=1: the score a search line starts with must match too (with
    # MEMKIT_README_UPDATE=1, stale ones are rewritten)
    (re.compile(r"(?<=.)\d+\.\d+" if os.environ.get("MEMKIT_README_SCORES") else r"\d+\.\d+"), "<num>"),
    (re.compile(r"(<when>|<num>) +"), r"\1 "),  # a column padded after a value of varying width
]


def normalise(line: str) -> str:
    for pattern, repl in VARIABLE:
        line = pattern.sub(repl, line)
    return line.rstrip()


def line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(normalise(part)) for part in expected.split("…")))


def align(expected: list[str], actual: list[str]) -> list[tuple[str, str]] | None:
    """The pairs (expected line, actual line) if ``actual`` matches ``expected``, else None."""
    patterns = [None if e.strip() == "…" else line_pattern(e) for e in expected]
    normal = [normalise(a) for a in actual]
    memo: dict[tuple[int, int], list[tuple[str, str]] | None] = {}

    def walk(i: int, j: int) -> list[tuple[str, str]] | None:
        if (i, j) in memo:
            return memo[i, j]
        result: list[tuple[str, str]] | None = None
        if i == len(expected):
            result = [] if j == len(actual) else None
        elif patterns[i] is None:  # any number of lines
            for k in range(j, len(actual) + 1):
                result = walk(i + 1, k)
                if result is not None:
                    break
        elif j < len(actual) and patterns[i].fullmatch(normal[j]):
            rest = walk(i + 1, j + 1)
            result = None if rest is None else [(expected[i], actual[j])] + rest
        memo[i, j] = result
        return result

    return walk(0, 0)


def learn_ids(pairs: list[tuple[str, str]], ids: dict[str, str]) -> None:
    """Ids that stand at the same place in an expected and an actual line: the README's id is the
    real one's stand-in in later commands."""
    for expected, actual in pairs:
        head = expected.split("…")[0]
        shown, real = ID.findall(head), ID.findall(actual)
        if "…" not in expected and len(shown) != len(real):
            continue
        for a, b in zip(shown, real):
            if a != b:
                ids[a] = b


# ---- running the examples -----------------------------------------------------------------------

def fixture_files(home: Path) -> dict[str, str]:
    """What the examples read, by the name they use."""
    chat = (ROOT / "bench" / "demo" / "transcript-2026-11-21.txt").read_text(encoding="utf-8")

    def turn(role: str, text: str) -> str:
        return json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external",
                           "cwd": f"{home}/proj", "sessionId": SESSION, "version": "2.0.0", "type": role,
                           "uuid": f"{role}-{len(text)}", "timestamp": "2026-11-21T10:00:00.000Z",
                           "message": {"role": role, "content": text if role == "user"
                                       else [{"type": "text", "text": text}]}})

    transcript = "".join(turn(role, text) + "\n" for role, text in [
        ("user", "Switched the sourdough starter Bolinha to 100% rye flour for good"),
        ("assistant", "Noted: Bolinha is on rye from now on. Rye starters ferment faster."),
        ("user", "And I signed up for the Lisbon half marathon in March 2027"),
    ])
    cc_path = home / ".claude" / "projects" / "proj" / f"{SESSION}.jsonl"
    payload = {"session_id": SESSION, "transcript_path": str(cc_path), "cwd": f"{home}/proj",
               "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False}
    return {"chat.txt": chat, "chat-2026-11-21.txt": chat, "hook-payload.json": json.dumps(payload),
            str(cc_path): transcript}


class Shell:
    """A tiny shell: the README's command lines, with memkit in-process."""

    def __init__(self, base: Path, llm_url: str) -> None:
        self.base = base
        self.blocks = 0
        self.home = self.cwd = base
        self.llm_url = llm_url
        self.ids: dict[str, str] = {}
        self.shift = max((date.today() - README_DAY).days, 0)
        self.moved: dict[str, str] = {}  #: dates moved in commands -> as the README wrote them

    # -- the state of a block
    def start(self, block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
        if block.mode in ("sample", "fresh"):
            # a new HOME each time: a vault deleted and made again at the same path could meet an
            # index connection of the last one not yet closed (SQLite in one process: a reused inode)
            self.blocks += 1
            self.home = self.base / str(self.blocks) / "maya"
            self.home.mkdir(parents=True)
            monkeypatch.setenv("HOME", str(self.home))
            (self.home / ".gitconfig").write_text(
                "[user]\n\tname = Maya\n\temail = maya@example.com\n[init]\n\tdefaultBranch = main\n"
                "[advice]\n\tdetachedHead = false\n")
            self.cwd = self.home
            self.ids.clear()
            monkeypatch.delenv("MEMKIT_VAULT", raising=False)
        if block.mode == "sample":
            vault = self.home / "memory"
            shutil.copytree(ROOT / "vault", vault, ignore=shutil.ignore_patterns(".memkit", ".git"))
            self.cwd = vault  # no MEMKIT_VAULT: a reader's shell has none, so a page that `cd`s away says --vault
        if "llm" in block.options:
            config = Path(os.environ.get("MEMKIT_VAULT", self.cwd)) / "memkit.yaml"
            text = config.read_text(encoding="utf-8")
            assert re.search(r"^llm: \{\}$", text, re.M), f"{block.where}: no `llm: {{}}` in {config}"
            config.write_text(re.sub(r"^llm: \{\}$", f'llm: {{base_url: "{self.llm_url}", model: demo}}',
                                     text, flags=re.M), encoding="utf-8")
        text = "\n".join(block.body)
        for name, content in fixture_files(self.home).items():
            if Path(name).name in text or (SESSION in name and ("hook-payload" in text or SESSION[:8] in text)):
                path = self.cwd / name if not os.path.isabs(name) else Path(name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")

    # -- one command line
    def command(self, raw: str) -> str:
        """The command to run: README ids mapped to real ones, future dates kept in the future."""
        raw = ID.sub(lambda m: self.ids.get(m[0], m[0]), raw)

        def later(m: re.Match[str]) -> str:
            day = date.fromisoformat(m[0])
            if day <= README_DAY:
                return m[0]
            moved = (day + timedelta(days=self.shift)).isoformat()
            self.moved[moved] = m[0]
            return moved

        return re.sub(r"\b\d{4}-\d\d-\d\d\b", later, raw)

    def run(self, raw: str, expected: list[str]) -> list[str]:
        command = self.command(raw)
        lex = shlex.shlex(command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
        segments: list[list[str]] = [[]]
        for token in tokens:
            if token == "&&":
                segments.append([])
            else:
                segments[-1].append(token)
        output = ""
        for argv in segments:
            text, rc = self.segment(argv, expected)
            output += text
            if rc:
                break
        output = output.replace(str(self.home), SHOWN_HOME)
        if self.shift:  # shown as on README_DAY, so that an updated README tells one consistent story
            output = output.replace(date.today().isoformat(), README_DAY.isoformat())
            for moved, shown in self.moved.items():
                output = output.replace(moved, shown)
        out = output.splitlines()
        while out and not out[-1].strip():
            out.pop()
        return out

    def expand(self, token: str) -> str:
        return str(self.home) + token[1:] if token == "~" or token.startswith("~/") else token

    def segment(self, argv: list[str], expected: list[str]) -> tuple[str, int]:
        argv = [self.expand(t) for t in argv]
        if argv[0] == "cd" and len(argv) == 2:
            self.cwd = (self.cwd / argv[1]).resolve()
            return "", 0
        stdin: str | None = None
        if len(argv) > 2 and argv[-2] == "<":
            stdin = (self.cwd / argv[-1]).read_text(encoding="utf-8")
            argv = argv[:-2]
        if argv[0] == "echo" and "|" in argv:
            bar = argv.index("|")
            stdin = " ".join(argv[1:bar]) + "\n"
            argv = argv[bar + 1:]
        if argv[0] == "memkit" and "^C" in expected:
            return self.interrupted(argv, expected)
        if argv[0] == "memkit" and not {"|", "<", ">", ";", "||"} & set(argv):
            os.chdir(self.cwd)
            result = CliRunner().invoke(main, argv[1:], input=stdin, prog_name="memkit", catch_exceptions=True)
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
            return result.output, result.exit_code
        line = " ".join(t if t in {"|", "<", ">", ";", "||", "&&", "2>&1"} else shlex.quote(t) for t in argv)
        proc = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env(), input=stdin, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
        return proc.stdout, proc.returncode

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{MEMKIT_BIN.parent}{os.pathsep}{env.get('PATH', '')}"
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        return env

    def interrupted(self, argv: list[str], expected: list[str]) -> tuple[str, int]:
        """A command that runs until stopped: SIGINT once it has printed the lines before ``^C``."""
        before = expected[:expected.index("^C")]
        assert "…" not in before, "an interrupted command's lines before ^C cannot be elided"
        # SIGINT is ignored in a background job and stays ignored across exec: un-ignore it first
        reset = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                 "os.execv(sys.argv[1], sys.argv[1:])")
        proc = subprocess.Popen([sys.executable, "-c", reset, str(MEMKIT_BIN), *argv[1:]], cwd=self.cwd,
                                env=self.env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        lines: list[str] = []
        enough = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if len(lines) >= len(before):
                    enough.set()
            enough.set()

        reader = threading.Thread(target=read)
        reader.start()
        try:
            enough.wait(TIMEOUT_S)
            printed = len(lines)
            proc.send_signal(signal.SIGINT)
            proc.wait(TIMEOUT_S)
        finally:
            proc.kill()
            reader.join()
        return "".join(lines[:printed]) + "^C\n" + "".join(lines[printed:]), proc.returncode


# ---- examples that need a program this machine lacks --------------------------------------------

IN_PROCESS = {"memkit", "cd", "echo"}  #: run by the Shell itself (memkit in-process), never looked up
BUILTINS = {"export", "set", "true", "false", "test", "[", "printf", "source", ".", "type", "command"}
SEPARATORS = {"&&", "||", "|", ";"}
WHY = {"curl": "the HTTP examples call the server with curl"}  #: what a program the set-up lacks is for


def programs(block: Block) -> list[str]:
    """The programs a console block's commands run (each command of a ``&&``, ``|`` or ``;``
    chain), in order, without those the Shell runs itself and bash's builtins."""
    found: list[str] = []
    for step in block.steps() if block.lang == "console" else []:
        lex = shlex.shlex(step.command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        first = True
        for token in lex:
            if token in SEPARATORS:
                first = True
                continue
            if first and token not in IN_PROCESS and token not in BUILTINS and "=" not in token:
                found.append(token)
            first = False
    return list(dict.fromkeys(found))


def missing_programs(block: Block, path: str) -> str | None:
    """Why ``block`` cannot run on this machine (a program not on ``path``), or None."""
    missing = [name for name in programs(block) if shutil.which(name, path=path) is None]
    if not missing:
        return None
    why = "; ".join(WHY[name] for name in missing if name in WHY)
    return f"{', '.join(missing)} not installed (not on PATH){': ' + why if why else ''}"


@dataclass
class Outcome:
    failures: list[str] = field(default_factory=list)
    updates: dict[int, tuple[int, list[str]]] = field(default_factory=dict)  #: command's line -> (old lines, new)
    skipped: list[str] = field(default_factory=list)  #: "README.md line N: why", blocks not run


def run_blocks(blocks: list[Block], shell: Shell, lines: list[str], monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """Run ``blocks`` in order (see the module docstring); a block that needs a missing program
    is not run, nor are the ``continue`` blocks after it."""
    outcome = Outcome()
    chain: str | None = None  # why the block this one continues was not run
    for block in blocks:
        if block.mode != "continue":
            chain = None
        reason = chain or missing_programs(block, shell.env()["PATH"])
        if reason is not None:
            outcome.skipped.append(f"{block.where}: {reason}")
            chain = reason if reason.startswith("continues") else f"continues {block.where}: {reason}"
            continue
        shell.start(block, monkeypatch)
        if block.lang == "python":
            os.chdir(shell.cwd)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                try:
                    exec(compile("\n".join(block.body), str(ROOT / block.page) + f":{block.start + 2}", "exec"), {})
                except Exception as exc:
                    outcome.failures.append(f"{block.where}: the Python example raised {type(exc).__name__}: {exc}")
            continue
        for step in block.steps():
            actual = shell.run(step.command, step.expected)
            pairs = align(step.expected, actual)
            if pairs is None:
                outcome.failures.append(f"{block.where}, `$ {step.command}`:\n  expected:\n"
                                        + "".join(f"    {e}\n" for e in step.expected)
                                        + "  actual:\n" + "".join(f"    {a}\n" for a in actual))
                outcome.updates[step.line] = (len(step.expected), actual)
                shown: dict[str, str] = {}
                learn_ids(list(zip(step.expected, actual)), shown)
                shell.ids.update(shown)
                if UPDATE:  # the README will show the real ids: so must later commands
                    rewrite_later_ids(lines, block, step, shown)
            else:
                learn_ids(pairs, shell.ids)
    return outcome


# ---- the tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_every_example_is_marked(page):
    """A new console or python example cannot be added untested by mistake."""
    blocks = [b for b in parse_blocks(page.read_text(encoding="utf-8").splitlines(), page_id(page))
              if b.lang in ("console", "python")]
    for block in blocks:
        assert block.mode, f"{block.where}: no `<!-- readme-test: … -->` marker before this {block.lang} block"
        if block.mode == "skip":
            assert any(block.options), f"{block.where}: say why the example is skipped"
    runs = [b for b in blocks if b.mode != "skip"]
    assert not runs or runs[0].mode != "continue", \
        f"{runs[0].where}: a page's first example cannot continue (pages run independently): use sample or fresh"


def test_the_docs_pages_are_tested():
    assert README in pages() and len(pages()) > 1 and all(p.parent == DOCS for p in pages()[1:])


@pytest.fixture
def readme_env(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_DIR"):
        monkeypatch.delenv(name, raising=False)
    model = demo_model()
    if model:
        monkeypatch.setenv("MEMKIT_MODEL", model)
    return tmp_path


def demo_llm() -> FakeLLM:
    """The demo's scripted LLM (digest answers for bench/demo/transcript-2026-11-21.txt), which also
    compacts the Python example's running entries: the two about gear become one."""
    spec = importlib.util.spec_from_file_location("demo_llm", ROOT / "bench" / "demo" / "demo_llm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def answer(request: dict) -> str:
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        if "into fewer, denser entries" in prompt:
            gear = [int(n) for n, text in re.findall(r"^(\d+)\. (.*)$", prompt, re.M) if "#gear" in text]
            return json.dumps({"entries": [{"text": "Runs with a Garmin Forerunner 265 and a chest strap; daily "
                                                    "shoes are ASICS Novablast 4, retired at about 700 km #gear",
                                            "replaces": gear}]})
        return str(module.answer(request))

    return FakeLLM(answer)


def runnable(lines: list[str], page: str = "README.md") -> list[Block]:
    return [b for b in parse_blocks(lines, page) if b.lang in ("console", "python") and b.mode != "skip"]


@pytest.mark.parametrize("page", PAGES)
def test_examples(page, readme_env, monkeypatch):
    from memkit.embeddings.judge import judge_status

    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = runnable(lines, page_id(page))
    if not blocks:
        return  # a page without examples (the generated CLI reference, the architecture…)
    if judge_status() is not None:  # the pages show searches judged by the second stage
        pytest.skip(f"the examples' searches are judged, and the judge cannot run here: {judge_status()}")
    searches = record_searches(monkeypatch)
    with demo_llm() as llm:
        outcome = run_blocks(blocks, Shell(readme_env, llm.base_url), lines, monkeypatch)
    if UPDATE and outcome.updates:
        write_updates(page, lines, outcome.updates)
        return
    assert not outcome.failures, f"{page_id(page)}'s examples differ from what the commands print " \
                                 f"(MEMKIT_README_UPDATE=1 rewrites the page; review the diff):\n\n" \
                                 + "\n".join(outcome.failures)
    near = [tie for query, hits in searches for tie in near_ties(query, hits)]
    assert not near, f"{page_id(page)}'s examples show answers that another CPU may order or flag otherwise " \
                     "(pick examples whose hits stand apart):\n" + "\n".join(near)
    if outcome.skipped:
        pytest.skip(f"every other example of {page_id(page)} ran and matched; not run: " + "; ".join(outcome.skipped))


#: the least gap between two hits' scores, and between a hit's judge cosine or relevance and a cut
#: the search or the block applies, that an example may show: another CPU's arithmetic moves the
#: judge's cosines by ~1e-4 (7-bit weights; with 8-bit ones up to 0.055 without VNNI)
TIE_MARGIN = 0.003


def record_searches(monkeypatch) -> list[tuple[str, list]]:
    """Every ``memkit search`` the examples run, with its hits (judged ones carry the numbers checked)."""
    from memkit.search.searcher import Searcher

    seen: list[tuple[str, list]] = []
    find = Searcher.find

    def recording(self, q, **kw):
        hits = find(self, q, **kw)
        if any(f.function == "search" and f.filename.endswith(str(Path("frontends", "cli", "search.py")))
               for f in inspect.stack(0)):
            # what `memkit search` prints (not a digest's or a block's inner searches), and the hit
            # after the last, which must not tie with it either
            more = find(self, dataclasses.replace(q, k=q.k + 1), refresh=False)
            shown = {h.id for h in hits}
            seen.append((q.text, hits + [h for h in more if h.id not in shown][:1]))
        return hits

    monkeypatch.setattr(Searcher, "find", recording)
    return seen


def near_ties(query: str, hits: list) -> list[str]:
    """What of a judged search's hits stands too close to a neighbour or a cut (see TIE_MARGIN)."""
    from memkit.search.judge_rank import JUDGE_THRESHOLD, RELEVANCE_CONFIDENT
    from memkit.search.judged import FALLBACK_FLOOR, JUDGE_SURE, WEAK_FLOOR

    out = []
    judged = [h for h in hits if h.judge is not None]
    for a, b in zip(judged, judged[1:]):
        if abs(a.score - b.score) < TIE_MARGIN and a.score != b.score:
            out.append(f"  {query!r}: {a.text[:40]!r} {a.score:.4f} and {b.text[:40]!r} {b.score:.4f}")
    for h in judged:
        for cut in (JUDGE_THRESHOLD, WEAK_FLOOR, FALLBACK_FLOOR, JUDGE_SURE):
            if abs(h.judge - cut) < TIE_MARGIN:
                out.append(f"  {query!r}: {h.text[:40]!r}'s judge cosine {h.judge:.4f} is at the cut {cut}")
        if h.relevance is not None and abs(h.relevance - RELEVANCE_CONFIDENT) < TIE_MARGIN:
            out.append(f"  {query!r}: {h.text[:40]!r}'s relevance {h.relevance:.4f} is at the cut {RELEVANCE_CONFIDENT}")
    return out


def rewrite_later_ids(lines: list[str], block: Block, step: Step, ids: dict[str, str]) -> None:
    """Update mode: later commands of the block use the ids the outputs now show."""
    for i in range(step.line + 1, block.end):
        if lines[i].startswith("$ "):
            lines[i] = ID.sub(lambda m: ids.get(m[0], m[0]), lines[i])


def write_updates(page: Path, lines: list[str], updates: dict[int, tuple[int, list[str]]]) -> None:
    """Replace each mismatched command's output with what it printed (from the end, so that the
    line numbers of the earlier ones still hold)."""
    for line in sorted(updates, reverse=True):
        old, actual = updates[line]
        lines[line + 1:line + 1 + old] = actual
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---- the runner on a machine without curl --------------------------------------------------------

def path_without(tmp_path: Path, hidden: str) -> str:
    """A PATH of one folder holding links to every program of this PATH but ``hidden``."""
    folder = tmp_path / f"bin-without-{hidden}"
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        with contextlib.suppress(OSError):
            for entry in os.scandir(directory or "."):
                link = folder / entry.name
                if entry.name != hidden and not link.exists() and os.access(entry.path, os.X_OK):
                    link.symlink_to(os.path.abspath(entry.path))
    return str(folder)


HTTP_PAGE = DOCS / "assistants.md"  #: the page of the HTTP API's examples


def http_blocks(lines: list[str]) -> list[Block]:
    """The HTTP API's examples: from the block that starts the server to the last curl block."""
    blocks = runnable(lines, page_id(HTTP_PAGE))
    curl = [i for i, b in enumerate(blocks) if "curl" in programs(b)]
    assert curl, f"{page_id(HTTP_PAGE)} has no curl examples any more: drop this test and WHY['curl']"
    first = max(i for i in range(curl[0] + 1) if blocks[i].mode != "continue")
    return blocks[first:curl[-1] + 1]


def test_the_programs_a_block_runs():
    lines = HTTP_PAGE.read_text(encoding="utf-8").splitlines()
    blocks = http_blocks(lines)
    assert blocks[0].lang == "python" and programs(blocks[0]) == []
    assert programs(blocks[1]) == ["curl", "python3"]  # `curl … | python3 -m json.tool`
    block = Block("console", 0, 3, ["$ cd ~/memory && git log --oneline | head -3", "$ memkit search rice",
                                    '$ echo "x" | memkit add'], "fresh", set())
    assert programs(block) == ["git", "head"]
    assert missing_programs(block, os.environ["PATH"]) is None
    assert missing_programs(block, "") == "git, head not installed (not on PATH)"


def test_without_curl_the_http_examples_are_skipped_with_the_reason(readme_env, monkeypatch, tmp_path):
    """Issue 32: on a machine without curl the examples' test failed with `curl: command not found`."""
    path = path_without(tmp_path, "curl")
    assert shutil.which("curl", path=path) is None and shutil.which("bash", path=path) is not None
    monkeypatch.setenv("PATH", path)
    lines = HTTP_PAGE.read_text(encoding="utf-8").splitlines()
    blocks = http_blocks(lines)
    with demo_llm() as llm:
        shell = Shell(readme_env, llm.base_url)
        outcome = run_blocks(blocks, shell, lines, monkeypatch)
    assert outcome.failures == []
    assert (shell.home / "memkit.sock").exists()  # the Python block, which needs no curl, ran
    why = "curl not installed (not on PATH): the HTTP examples call the server with curl"
    assert outcome.skipped == [f"{blocks[1].where}: {why}"] + \
        [f"{b.where}: continues {blocks[1].where}: {why}" for b in blocks[2:]]


def test_a_block_after_one_not_run_is_not_run_either(readme_env, monkeypatch):
    blocks = [Block("console", 0, 2, ["$ no-such-program-here --version", "1.0"], "fresh", set()),
              Block("console", 3, 5, ["$ memkit --version", "…"], "continue", set()),
              Block("console", 6, 8, ["$ echo hi", "hi"], "fresh", set())]
    with demo_llm() as llm:
        outcome = run_blocks(blocks, Shell(readme_env, llm.base_url), [], monkeypatch)
    assert outcome.failures == []
    assert outcome.skipped == [
        "README.md line 1: no-such-program-here not installed (not on PATH)",
        "README.md line 4: continues README.md line 1: no-such-program-here not installed (not on PATH)",
    ]
