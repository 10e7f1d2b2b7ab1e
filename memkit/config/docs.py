"""Print docs/configuration.md, made from the table of settings (:mod:`memkit.config.table`):

    python -m memkit.config.docs > docs/configuration.md
"""
from __future__ import annotations

import sys

from .render import docs_page

if __name__ == "__main__":
    sys.stdout.write(docs_page())
