"""Compare ways to cut Chinese for the keyword index: jieba, rjieba and pacebot's pairs.

``python -m bench.segmenters [FILE ...]`` measures, each in a fresh interpreter, the RSS a
cutter adds and how long it takes to be ready (import, plus the dictionary for the first
cut), then cuts every Han run of a corpus with each (jieba and rjieba in search mode, as
pacebot indexed until migration 0016; ``storage/search.py``'s dictionary-free pairs) and
counts where jieba and rjieba differ, and how many of jieba's words the pairs still find
in the run jieba cut them from (the gate's test: every pair of the word among the run's).
The corpus is the files given (UTF-8 text), plus the Chinese of the test suite and of
the command answers (chat lines, questions, summaries, facts), the benchmark's chat lines
and 500 of its summaries. jieba and rjieba are not pacebot's dependencies: install them
by hand to run this.

Search quality itself is measured by ``bench/recall_quality.py``.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from bench.dataset import CHAT_LINES, summary_pool

_REPO = Path(__file__).resolve().parent.parent
_HAN_RUN = re.compile("[\u4e00-\u9fd5]+")

# Each probe runs in a fresh interpreter: RSS before and after readying the segmenter.
_PROBE = """
import json, time
from pathlib import Path
def rss():
    return int(Path('/proc/self/statm').read_text().split()[1]) * 4096
before = rss()
started = time.perf_counter()
{ready}
ready_s = time.perf_counter() - started
print(json.dumps({{"rss": rss() - before, "seconds": ready_s}}))
"""
_READY = {
    "jieba, eager (import + initialize)": "import jieba; jieba.initialize()",
    "jieba, lazy (import only)": "import jieba",
    "rjieba (import + first cut)": "import rjieba; rjieba.cut_for_search('我们明天去杭州')",
    "pacebot's pairs (import + first cut)": (
        "from storage import search; search.index_text(['我们明天去杭州'])"
    ),
}


def probe(ready: str) -> dict[str, float]:
    """Return the RSS (bytes) and seconds ``ready`` costs in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _PROBE.format(ready=ready)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def corpus(paths: Sequence[Path]) -> list[str]:
    """Return the Han runs of the corpus files and of the built-in corpus, in order."""
    files = [*paths, *sorted((_REPO / "tests").glob("*.py")), _REPO / "bot" / "texts.py"]
    lines = [line for path in files for line in path.read_text(encoding="utf-8").splitlines()]
    lines += CHAT_LINES
    lines += [pooled.content.summary for pooled in summary_pool(random.Random(14), 500)]
    return [run for line in lines for run in _HAN_RUN.findall(line)]


def cut_speed(cut: Callable[[str], Iterable[str]], runs: Sequence[str]) -> float:
    """Return Han characters cut per second (best of three passes)."""
    chars = sum(map(len, runs))
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for run in runs:
            list(cut(run))
        best = min(best, time.perf_counter() - started)
    return chars / best


def differences(runs: Sequence[str]) -> dict[str, int]:
    """Count the runs, and the words, on which the two search-mode cuts disagree."""
    import jieba
    import rjieba

    counts = {"runs": len(runs), "runs_cut_differently": 0, "words": 0, "words_missing": 0}
    for run in runs:
        old = set(jieba.cut_for_search(run))
        new = set(rjieba.cut_for_search(run, True))
        counts["words"] += len(old | new)
        if old != new:
            counts["runs_cut_differently"] += 1
            counts["words_missing"] += len(old ^ new)
    return counts


def jieba_words_found(runs: Sequence[str]) -> dict[str, int]:
    """Count jieba's words (stop words aside), of one character and longer, and those the
    pairs find in their own run: as recall looks (one of the question's terms among the
    run's index words, or a one- or two-character question inside the run) and as the
    gate looks (every word of the interest among the message's)."""
    import jieba

    from storage import search

    counts: dict[str, int] = {}
    for run in runs:
        indexed = set(search.index_text([run]).split())
        said = search.word_set(run)
        for word in set(jieba.cut_for_search(run)) - search.STOP_WORDS:
            size = "1_char" if len(word) == 1 else "longer"
            terms = search.query_terms(word)
            by_recall = bool(indexed.intersection(terms)) or search.is_short_han(terms)
            for key, hit in (
                (f"jieba_words_{size}", True),
                (f"found_by_recall_{size}", by_recall),
                (f"found_by_gate_{size}", search.word_set(word) <= said),
            ):
                counts[key] = counts.get(key, 0) + hit
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison as Markdown tables."""
    import jieba
    import rjieba

    paths = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    runs = corpus(paths)
    print("| segmenter | RSS added | ready in |\n|---|---|---|")
    for name, ready in _READY.items():
        figures = probe(ready)
        print(f"| {name} | {figures['rss'] / 2**20:.1f} MiB | {figures['seconds']:.3f} s |")
    jieba.initialize()
    print(f"\ncorpus: {len(runs):,} Han runs, {sum(map(len, runs)):,} characters\n")
    from storage import search

    print("| segmenter | search-mode cut |\n|---|---|")
    for name, cut in (
        ("jieba", jieba.cut_for_search),
        ("rjieba", lambda text: rjieba.cut_for_search(text, True)),
        ("pacebot's pairs (index)", lambda text: search.index_text([text]).split()),
        ("pacebot's pairs (question)", search.word_set),
    ):
        print(f"| {name} | {cut_speed(cut, runs) / 1e6:.2f} M chars/s |")
    print("\n" + json.dumps(differences(runs), ensure_ascii=False))
    print(json.dumps(jieba_words_found(runs), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
