"""Memory, pure parts: summary parsing, the effective persona and its budget."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from bot.errors import BadLLMReply
from bot.memory.stack import (
    PERSONA_SHARE,
    POINT_CHARS_MAX,
    SUMMARY_CHARS_MAX,
    effective_persona,
    parse_summary,
    render_summary,
)
from bot.models import ChatKey, ChatKind, DaySummary, SummaryRecord

CHAT = ChatKey("telegram", ChatKind.GROUP, "-100")
INITIAL = "你是小满，一个说话自然的朋友。"


def record(
    n: int, text: str = "大家聊了爬山和天气，约好周六早上八点在香山东门集合。"
) -> SummaryRecord:
    day = date(2025, 11, 22) + timedelta(days=n)
    content = DaySummary(summary=f"{day}：{text}", key_points=("周六八点香山东门",))
    return SummaryRecord(
        id=n + 1,
        chat=CHAT,
        day=day,
        content=content,
        added_prompt=render_summary(day, content),
        message_count=10,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_parse_summary_reads_all_fields() -> None:
    """A fenced JSON summary with prose around it is read with every field."""
    text = (
        "好的，总结如下：\n```json\n"
        '{"summary": "2026-11-21 小明说要去香山。", "topics": ["爬山"], '
        '"key_points": ["周六八点集合"], "keywords": ["香山", "爬山"]}\n```'
    )
    assert parse_summary(text, finish_reason="stop") == DaySummary(
        summary="2026-11-21 小明说要去香山。",
        topics=("爬山",),
        key_points=("周六八点集合",),
        keywords=("香山", "爬山"),
    )


def test_parse_summary_accepts_comma_strings_for_lists() -> None:
    """Lists given as one comma-separated string are split."""
    parsed = parse_summary('{"summary": "s", "keywords": "香山，爬山, hiking"}', finish_reason=None)
    assert parsed.keywords == ("香山", "爬山", "hiking")


def test_parse_summary_cuts_a_rambling_summary() -> None:
    """An overlong summary or key point is cut, so one day cannot crowd out the others."""
    rambling = "那天大家聊了很多很多。" * 400
    text = json.dumps({"summary": rambling, "key_points": [rambling, "短的"]}, ensure_ascii=False)
    parsed = parse_summary(text, finish_reason="stop")
    assert (len(parsed.summary), [len(p) for p in parsed.key_points]) == (
        SUMMARY_CHARS_MAX,
        [POINT_CHARS_MAX, 2],
    )
    assert parsed.summary.startswith("那天大家聊了很多很多。")


@pytest.mark.parametrize(
    ("text", "finish_reason"),
    [
        ('{"summary": "cut', "length"),
        ('{"summary": "ok"}', "length"),
        ('{"summary": ""}', "stop"),
        ('{"topics": ["x"]}', "stop"),
        ("just prose", "stop"),
        ("", "stop"),
        ('{"summary": ["not", "text"]}', "stop"),
    ],
)
def test_parse_summary_rejects_unusable_output(text: str, finish_reason: str) -> None:
    """Truncated, empty, keyless or mistyped output is a BadLLMReply, never a partial summary."""
    with pytest.raises(BadLLMReply):
        parse_summary(text, finish_reason=finish_reason)


def test_render_summary_writes_the_absolute_date() -> None:
    """The persona text of a summary names its date and weekday."""
    text = render_summary(
        date(2026, 11, 21), DaySummary(summary="聊了爬山。", key_points=("八点",))
    )
    assert text == "[Memory of 2026-11-21 (Saturday)] 聊了爬山。\nKey points: 八点"


def test_persona_is_initial_plus_summaries_in_push_order() -> None:
    """Summaries follow the initial persona, oldest first."""
    persona = effective_persona(INITIAL, [record(0), record(1)], budget_tokens=6000)
    assert persona.text.startswith(INITIAL)
    assert persona.text.index("2025-11-22") < persona.text.index("2025-11-23")
    assert (len(persona.kept), persona.dropped) == (2, ())


def test_persona_stays_flat_from_one_to_365_summaries() -> None:
    """Over budget, the oldest summaries leave the prompt: 1 year costs what ~1 month does."""
    budget = 6000
    sizes = {
        n: effective_persona(INITIAL, [record(i) for i in range(n)], budget_tokens=budget).tokens
        for n in (1, 30, 100, 365)
    }
    share = int(budget * PERSONA_SHARE)
    assert all(size <= share for size in sizes.values())
    assert abs(sizes[365] - sizes[100]) <= 0.05 * sizes[100]
    assert sizes[1] < sizes[30]


def test_dropped_summaries_are_the_oldest() -> None:
    """What leaves the prompt is the oldest end of the stack, and the newest always stays."""
    stack = [record(i) for i in range(365)]
    persona = effective_persona(INITIAL, stack, budget_tokens=6000)
    assert persona.kept[-1] == stack[-1]
    assert persona.dropped == tuple(stack[: len(persona.dropped)])
    assert len(persona.kept) + len(persona.dropped) == 365


def test_initial_persona_is_never_cut() -> None:
    """Even a persona larger than its share is kept whole."""
    long_persona = "人设" * 5000
    summary = record(0)
    persona = effective_persona(long_persona, [summary], budget_tokens=1000)
    assert persona.text == long_persona
    assert (persona.kept, persona.dropped) == ((), (summary,))
