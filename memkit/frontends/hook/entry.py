"""``python -m memkit.frontends.hook claude-code``: the hook command that ``memkit hook install``
writes into Claude Code's settings. The same answer as ``memkit hook run claude-code``, from an
entry point that imports only the standard library (no click, no numpy) before it asks the warm
server: a warm prompt costs a Python start and one request.

It always exits 0 and prints nothing but the hook's JSON on stdout; a problem is one line on
stderr (Claude Code shows it in its verbose mode) and no context, never a blocked prompt.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .claude import DEFAULT_BUDGET, answer_claude_code

__all__ = ["main", "VERBOSE_ENV", "TOKEN_ENV"]

VERBOSE_ENV = "MEMKIT_HOOK_VERBOSE"  #: set (to anything but "" or 0): say on stderr how each prompt was answered
TOKEN_ENV = "MEMKIT_TOKEN"  #: the server's bearer token, when it needs one


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m memkit.frontends.hook", add_help=True,
                                     description="Claude Code's memkit hook: hook JSON on stdin, the memory "
                                                 "block as additionalContext on stdout.")
    parser.add_argument("client", choices=["claude-code"])
    parser.add_argument("--vault", metavar="PATH")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, metavar="N")
    parser.add_argument("--wait", type=float, default=5.0, metavar="SECONDS")
    parser.add_argument("--no-start", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    return parser


def run(stdin_text: str, *, vault: str | None, budget: int, wait_s: float, start: bool, verbose: bool) -> str:
    """Answer one hook call; the notes go to stderr. Returns what goes to stdout."""
    answer = answer_claude_code(stdin_text, vault=vault, env_vault=os.environ.get("MEMKIT_VAULT"),
                                budget=max(1, budget), start=start, wait_s=wait_s,
                                token=os.environ.get(TOKEN_ENV) or None)
    verbose = verbose or os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    for note in answer.notes:
        print(f"memkit hook: {note}", file=sys.stderr)
    if verbose:
        for note in answer.info:
            print(f"memkit hook: {note}", file=sys.stderr)
        print(f"memkit hook: answered {answer.how} in {answer.ms:.0f} ms", file=sys.stderr)
    return answer.stdout


def main(argv: Sequence[str] | None = None) -> int:
    """The command; always 0 (a bad argument too: the prompt goes on without memory)."""
    try:
        args, unknown = _parser().parse_known_args(argv)
    except SystemExit as exc:  # argparse's own exit: --help (0) or a bad argument (2, which would block)
        return 0 if exc.code in (0, None) else _bad_arguments()
    if unknown:
        print(f"memkit hook: ignored unknown arguments {' '.join(unknown)}", file=sys.stderr)
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"memkit hook: no memory context: cannot read stdin ({exc})", file=sys.stderr)
        return 0
    out = run(text, vault=args.vault, budget=args.budget, wait_s=args.wait, start=not args.no_start,
              verbose=args.verbose)
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except OSError:  # Claude Code went away: nothing to tell it
        pass
    return 0


def _bad_arguments() -> int:
    print("memkit hook: no memory context: bad arguments (see python -m memkit.frontends.hook --help)",
          file=sys.stderr)
    return 0
