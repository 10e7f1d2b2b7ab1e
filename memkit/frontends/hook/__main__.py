"""``python -m memkit.frontends.hook claude-code``: see :mod:`memkit.frontends.hook.entry`."""
import sys

from .entry import main

sys.exit(main())
