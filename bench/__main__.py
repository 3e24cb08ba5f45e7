"""``python -m bench``: see :mod:`bench.runner`."""

from bench.runner import main

raise SystemExit(main())
