"""Run the benchmarks: each run in a fresh process, bounded in time, medians over runs.

``python -m bench`` runs every benchmark three times (``--runs``), each run in its own
Python process so that memory figures start clean and one benchmark's garbage does not
slow the next; ``--quick`` runs a tiny version of each once. The table goes to stdout,
the JSON to ``--json``. The test suite calls :func:`run_in_process` with ``quick=True``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from bench import machine
from bench.report import Figure, Report, figures_from_json, figures_to_json

REPO = Path(__file__).resolve().parent.parent

Measure = Callable[..., Awaitable[list[Figure]]]


@dataclass(frozen=True, slots=True)
class Benchmark:
    """One benchmark: the module whose ``measure(quick=, workdir=)`` runs it once."""

    name: str
    module: str
    about: str
    budget_s: float  # one full run may take this long at most
    quick_budget_s: float = 20.0

    def measure(self) -> Measure:
        """Import the module and return its ``measure`` coroutine function."""
        return cast(Measure, importlib.import_module(self.module).measure)


BENCHMARKS = (
    Benchmark("limits", "bench.limits", "the machine: SQLite commits, timers, loopback HTTP", 120),
    Benchmark("ingest", "bench.ingest", "message → committed → timer armed, 300 and 1,000/s", 180),
    Benchmark(
        "wire",
        "bench.wire",
        "ingest through PTB polling, the OneBot WebSocket and the official QQ bot's gateway",
        600,  # five wires, each through two loads and a ceiling
        quick_budget_s=60.0,
    ),
    Benchmark(
        "qqwindow",
        "bench.qq_window",
        "QQ: events read but not yet committed; what a SIGKILL after a burst loses",
        240,
        quick_budget_s=40.0,
    ),
    Benchmark(
        "busyroom", "bench.busy_room", "a busy group: the asker's last line → the LLM call", 120
    ),
    Benchmark(
        "officialqq",
        "bench.official_qq",
        "the official QQ bot: a group batch's passive replies; resuming a dropped gateway",
        120,
    ),
    Benchmark("timers", "bench.timers", "10,000 and 100,000 chats with live debounce timers", 180),
    Benchmark("sender", "bench.sending", "extra delay of replies at 30 sends/s via PTB", 180),
    Benchmark(
        "economy", "bench.economy", "LLM calls per message; prompt size 1 day vs 1 year", 240
    ),
    Benchmark(
        "recall",
        "bench.recall",
        "date, keyword and hybrid recall, 365 summaries × 1,000 chats",
        900,  # the first run also writes 365,000 vectors of 1,536 dimensions
    ),
    Benchmark("startup", "bench.startup", "re-arming 10,000 chats at start-up; loop stalls", 180),
    Benchmark(
        "footprint",
        "bench.footprint",
        "pacebot run: ready, RSS; after a night; with tools and the official QQ bot; --help",
        120,
        quick_budget_s=60.0,
    ),
    Benchmark(
        "gate",
        "bench.gate",
        "the group gate per unaddressed batch; three members' busy minute",
        120,
        quick_budget_s=40.0,
    ),
    Benchmark(
        "groupweek",
        "bench.group_week",
        "a 50-person group, 1,000 messages a day for a week: mention, smart, always",
        1200,
        quick_budget_s=90.0,
    ),
    Benchmark(
        "reload",
        "bench.reload",
        "pacebot reload → the next batch on the new config; a reload's hold on the loop",
        120,
        quick_budget_s=40.0,
    ),
    Benchmark("parse", "bench.parsing", "parsing the LLM's JSON replies", 60),
    Benchmark(
        "llmcall", "bench.llm_call", "one LLM call: the loop time it holds, by prompt length", 60
    ),
    Benchmark("items", "bench.items", "reply items read and delivered; the stickers part", 120),
    Benchmark(
        "initiative",
        "bench.initiative",
        "100,000 later items pending in 10,000 chats: memory, start-up, lateness when due",
        240,
        quick_budget_s=40.0,
    ),
    Benchmark("pictures", "bench.pictures", "a batch's pictures: download, re-encode, bytes", 120),
    Benchmark(
        "voice", "bench.voice", "a voice note heard, a voice item spoken and sent; bytes", 120
    ),
    Benchmark(
        "tools",
        "bench.tools",
        "tools: calls per batch, chatter, a hanging tool, tools off; a run with two servers",
        180,
        quick_budget_s=90.0,
    ),
    Benchmark(
        "soak",
        "bench.soak",
        "a month: 200 chats, 100,000 messages via PTB, 30 nights; RSS, tasks, fds, timers",
        1800,
        quick_budget_s=60.0,
    ),
)
_BY_NAME = {benchmark.name: benchmark for benchmark in BENCHMARKS}


def select(names: Sequence[str]) -> list[Benchmark]:
    """Return the benchmarks called ``names`` (all of them if none), in the usual order."""
    unknown = sorted(set(names) - set(_BY_NAME))
    if unknown:
        msg = f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(_BY_NAME)}"
        raise SystemExit(msg)
    return [b for b in BENCHMARKS if not names or b.name in names]


async def run_in_process(names: Sequence[str], *, quick: bool, workdir: Path) -> Report:
    """Run each benchmark once in this process and event loop (for the smoke test)."""
    report = Report(command="in-process", quick=quick, machine=machine.describe())
    for benchmark in select(names):
        started = time.perf_counter()
        budget = benchmark.quick_budget_s if quick else benchmark.budget_s
        async with asyncio.timeout(budget):
            figures = await benchmark.measure()(quick=quick, workdir=workdir)
        report.seconds[benchmark.name] = time.perf_counter() - started
        report.add_runs([figures])
    return report


def run_in_children(
    benchmarks: Sequence[Benchmark],
    *,
    quick: bool,
    runs: int,
    workdir: Path,
    command: str,
) -> Report:
    """Run each benchmark ``runs`` times, each time in a new Python process."""
    report = Report(command=command, quick=quick, machine=machine.describe())
    for benchmark in benchmarks:
        started = time.perf_counter()
        results: list[list[Figure]] = []
        for run in range(1, runs + 1):
            _say(f"{benchmark.name}: run {run}/{runs} ({benchmark.about})")
            try:
                results.append(_run_child(benchmark, quick=quick, workdir=workdir, run=run))
            except (subprocess.SubprocessError, OSError, ValueError) as error:
                report.failures[f"{benchmark.name} run {run}"] = str(error)
                _say(f"{benchmark.name}: run {run} failed: {error}")
        report.seconds[benchmark.name] = time.perf_counter() - started
        report.add_runs(results)
    return report


def _run_child(benchmark: Benchmark, *, quick: bool, workdir: Path, run: int) -> list[Figure]:
    out = workdir / f"{benchmark.name}-{run}.json"
    argv = [sys.executable, "-m", "bench", "--child", benchmark.name, "--workdir", str(workdir)]
    argv += ["--out", str(out), *(["--quick"] if quick else [])]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.setdefault("PTB_TIMEDELTA", "1")
    budget = benchmark.quick_budget_s if quick else benchmark.budget_s
    completed = subprocess.run(argv, cwd=REPO, env=env, timeout=budget + 30, check=False)
    if completed.returncode != 0:
        msg = f"exit code {completed.returncode}"
        raise ValueError(msg)
    return figures_from_json(json.loads(out.read_text(encoding="utf-8")))


def _child(name: str, *, quick: bool, workdir: Path, out: Path) -> int:
    """Run one benchmark once in this (fresh) process and write its figures to ``out``."""
    from bot.log import setup_logging

    benchmark = _BY_NAME[name]
    budget = benchmark.quick_budget_s if quick else benchmark.budget_s
    # Imported first, as pacebot's composition root does: importing nonebot (bench.wire)
    # replaces loguru's sinks with its own INFO sink on stdout.
    measure = benchmark.measure()
    # As in production: INFO and up to a file, only warnings on the terminal.
    setup_logging(level="INFO", log_dir=workdir / "logs", stderr_level="WARNING")

    async def bounded() -> list[Figure]:
        async with asyncio.timeout(budget):
            return await measure(quick=quick, workdir=workdir)

    figures = asyncio.run(bounded())
    out.write_text(json.dumps(figures_to_json(figures), ensure_ascii=False), encoding="utf-8")
    return 0


def _say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the benchmarks it names."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark pacebot against docs/targets.md and against this machine's limits.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (all)")
    parser.add_argument("--quick", action="store_true", help="a tiny smoke run of each, once")
    parser.add_argument("--runs", type=int, help="runs per benchmark (3; 1 with --quick)")
    parser.add_argument(
        "--json", type=Path, default=Path("bench-results.json"), help="where to write results"
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        return _child(
            args.child,
            quick=args.quick,
            workdir=args.workdir,
            out=args.out,
        )
    if args.list:
        for benchmark in BENCHMARKS:
            print(f"{benchmark.name:<8} {benchmark.about}")
        return 0
    benchmarks = select(args.names)
    runs = args.runs or (1 if args.quick else 3)
    command = shlex.join(["python", "-m", "bench", *(argv if argv is not None else sys.argv[1:])])
    with tempfile.TemporaryDirectory(prefix="pacebot-bench-") as tmp:
        report = run_in_children(
            benchmarks,
            quick=args.quick,
            runs=runs,
            workdir=Path(tmp),
            command=command,
        )
    print(report.table())
    report.write_json(args.json)
    _say(f"results written to {args.json}")
    return 1 if report.failures else 0
