"""Benchmarks of pacebot against docs/targets.md and against the machine's own limits.

Run them all (about 10 minutes on the 2-core development machine) from the repository root::

    .venv/bin/python -m bench            # 3 runs each, medians; table + bench-results.json
    .venv/bin/python -m bench --quick    # a tiny smoke run of each
    .venv/bin/python -m bench ingest recall --runs 5

Every benchmark drives the real parts (SQLite store, pipeline, debouncer, sender, PTB,
the openai SDK) against the loopback fakes of ``tests/``. Results: ``docs/benchmarks.md``.
"""
