"""memkit/base/lazy_re.py: a pattern compiled on first use (issue 42.3, the cold start)."""
from __future__ import annotations

import re
import subprocess
import sys

from memkit.base.lazy_re import lazy


def test_a_lazy_pattern_compiles_on_first_use_and_then_acts_as_the_pattern():
    p = lazy(r"(\d+)-(\d+)", re.I)
    assert p._compiled is None  # type: ignore[attr-defined]
    assert p.search("rooms 12-14").groups() == ("12", "14")
    assert p._compiled is not None and p._compiled is re.compile(r"(\d+)-(\d+)", re.I)  # type: ignore[attr-defined]
    assert p.sub(r"\2-\1", "1-2") == "2-1" and p.pattern == r"(\d+)-(\d+)" and p.flags & re.I
    assert lazy(rb"\r\n|\n").split(b"a\r\nb\nc") == [b"a", b"b", b"c"]
    assert "lazy(" in repr(lazy("x"))


def test_a_bad_lazy_pattern_fails_where_it_is_used():
    p = lazy("(")
    try:
        p.search("x")
    except re.error:
        pass
    else:  # pragma: no cover
        raise AssertionError("a bad pattern must raise re.error on use")


def test_a_search_compiles_no_redaction_pattern_and_imports_no_masked_arrays(tmp_path):
    """A fresh process's search reads: it redacts nothing, so the redaction rules stay uncompiled;
    numpy.ma (np.unique's check) and statistics (fractions, decimal) are not imported."""
    made = ("import sys; from memkit import Vault; v = Vault.init(sys.argv[1], profile=False); "
            "v.add('Prefers bomba rice for paella', topic='cooking'); v.index()")
    subprocess.run([sys.executable, "-c", made, str(tmp_path / "v")], check=True, capture_output=True)
    code = ("import sys; from memkit import Vault; v = Vault(sys.argv[1])\n"
            "assert v.search('bomba', mode='lexical') and v.search('which rice for paella', fast=True)\n"
            "from memkit.formats import redact\n"
            "print(sorted(m for m in ('numpy.ma', 'statistics') if m in sys.modules), redact._CODE._compiled is None)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "v")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[]", "True"]
