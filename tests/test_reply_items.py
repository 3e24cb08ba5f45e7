"""Reply items: each kind read from the plan, the item rules, what is delivered, and timing."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.context import offered_kinds
from bot.errors import BadLLMReply
from bot.models import ChatKey, ChatKind
from bot.replies.contract import REACT_CONTRACT, contract
from bot.replies.items import (
    DroppedItem,
    ItemKind,
    Later,
    PlannedReply,
    Reaction,
    Reply,
    Sticker,
    Text,
    Voice,
    from_row,
    said,
    to_row,
)
from bot.replies.plan import deliverable, parse_replies, plan_replies, without_reply_json
from fakes.harness import PRIVATE, harness, make_config
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
TEXTS = frozenset({ItemKind.CONTENT})
TEXTS_AND_REACTIONS = frozenset({ItemKind.CONTENT, ItemKind.REACT})


def read(*items: object) -> tuple[list[Reply], list[DroppedItem]]:
    plan = parse_replies(json.dumps({"replies": list(items)}), finish_reason="stop", max_delay_s=10)
    return plan.replies, plan.dropped


def test_each_kind_is_read_with_its_delay() -> None:
    """A text, a reaction, a sticker, a voice note and a later come back as their items."""
    replies, dropped = read(
        {"content": "好", "reply_to": 8812, "send_delay_seconds": 0},
        {"react": "👍", "to": "8812", "send_delay_seconds": 1},
        {"sticker": "s7", "send_delay_seconds": 2},
        {"voice": "早点睡", "send_delay_seconds": 3},
        {"later": {"at": "2026-11-27 09:00", "note": "提醒交作业", "kind": "remind"}},
    )
    assert (replies, dropped) == (
        [
            Reply(Text("好", "8812"), 0.0),
            Reply(Reaction("👍", "8812"), 1.0),
            Reply(Sticker("s7"), 2.0),
            Reply(Voice("早点睡"), 3.0),
            Reply(Later("提醒交作业", "remind", at="2026-11-27 09:00"), 0.0),
        ],
        [],
    )


@pytest.mark.parametrize(
    ("bad", "kind", "reason"),
    [
        ({"content": "好", "mood": "happy"}, "content", "replies.0: unknown key 'mood'"),
        ({"send_delay_seconds": 1}, "?", "replies.0: no kind"),
        ({"content": "好", "voice": "好"}, "content+voice", "replies.0: two kinds in one item"),
        ({"react": "👍"}, "react", "replies.0: needs an emoji and the id"),
        ({"react": "👍", "to": True}, "react", "replies.0.to: must be a message id"),
        ({"sticker": ["s7"]}, "sticker", "replies.0.sticker: must be a message id"),
        ({"voice": 5}, "voice", "replies.0.voice: Input should be a valid string"),
        ({"later": {"note": "x", "kind": "nag"}}, "later", "replies.0.later.kind"),
        ({"later": {"note": "x", "when": "soon"}}, "later", "replies.0.later.when"),
    ],
)
def test_a_bad_item_is_dropped_and_the_rest_is_sent(
    bad: dict[str, object], kind: str, reason: str
) -> None:
    """An item with an unknown key, no kind, two kinds or a bad value is dropped, saying
    which and why; the item beside it stands."""
    replies, dropped = read(bad, {"content": "还在"})
    assert replies == [Reply(Text("还在"), 0.0)]
    assert [(d.kind, d.reason.startswith(reason)) for d in dropped] == [(kind, True)]


def test_a_plan_of_bad_items_only_is_no_plan() -> None:
    """When every item was dropped for breaking the rules, the plan is unusable: the
    fallback chain gets the answer, as for any broken plan."""
    with pytest.raises(BadLLMReply, match=re.escape("no usable item in the reply plan")):
        read({"text": "hi"}, {"react": "👍"})


def test_only_delivered_kinds_are_kept_and_a_voice_note_is_said_as_text() -> None:
    """With only texts delivered, reactions, stickers and laters are dropped by kind, and a
    voice note becomes a text with its words and delay."""
    replies = [
        Reply(Text("好"), 0.0),
        Reply(Reaction("👍", "1"), 1.0),
        Reply(Sticker("s7"), 2.0),
        Reply(Voice("晚安"), 3.0),
        Reply(Later("问问考试"), 0.0),
    ]
    kept, dropped = deliverable(replies, kinds=TEXTS, shown_ids=frozenset({"1"}))
    assert kept == [Reply(Text("好"), 0.0), Reply(Text("晚安"), 3.0)]
    assert dropped == [
        DroppedItem("react", "react items are not offered here"),
        DroppedItem("sticker", "sticker items are not offered here"),
        DroppedItem("later", "later items are not offered here"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"replies": [{"content": "好呀"}, {"react": "👍"}]}', ["好呀"]),
        ('[{"react": "👍", "to": "1"}]', []),
        ('{"content": "一", "send_delay_seconds": 1', ["一"]),  # cut off, still a plan
        ('{"a": 1}', ['{"a": 1}']),  # JSON, but not a reply plan: someone asked for it
        ('用 {"content": ...} 这样写', ['用 {"content": ...} 这样写']),
    ],
)
def test_reply_json_in_a_text_gives_way_to_its_texts(text: str, expected: list[str]) -> None:
    """A text that is itself reply JSON (a fallback handed the plan back) is replaced by
    the texts it holds; other text, JSON of another shape included, stays."""
    kept = without_reply_json([Reply(Text(text), 2.0)])
    assert kept == [Reply(Text(content), 2.0) for content in expected]


def test_planning_times_outgoing_items_and_leaves_later_out() -> None:
    """The first item goes at once, each later one after its delay; a later item is not
    planned; a quote of a message outside the batch is dropped; a long text is split."""
    replies = [
        Reply(Later("明天提醒"), 0.0),
        Reply(Reaction("👍", "5"), 4.0),
        Reply(Text("好", "5"), 1.0),
        Reply(Text("x" * 15, "999"), 2.0),
    ]
    planned = plan_replies(replies, start=T0, text_limit=10, batch_ids=frozenset({"5"}))
    second = T0 + timedelta(seconds=1)
    third = T0 + timedelta(seconds=3)
    assert planned == (
        PlannedReply(Reaction("👍", "5"), T0),
        PlannedReply(Text("好", "5"), second),
        PlannedReply(Text("x" * 10), third),
        PlannedReply(Text("x" * 5), third),
    )


@pytest.mark.parametrize(
    "item", [Text("好", "3"), Text("好"), Reaction("👍", "3"), Sticker("s7"), Voice("晚安")]
)
def test_an_item_survives_its_outbox_row(item: Text | Reaction | Sticker | Voice) -> None:
    """Every outgoing kind is kept as (kind, content, reply_to) and rebuilt the same."""
    kind, content, reply_to = to_row(item)
    assert (from_row(kind.value, content, reply_to), kind) == (item, item.kind)


def test_what_the_history_keeps_of_each_kind() -> None:
    """Texts and voice notes keep their words, a sticker its id, a reaction nothing."""
    shown = [said(Text("好")), said(Voice("晚安")), said(Sticker("s7")), said(Reaction("👍", "1"))]
    assert shown == ["好", "晚安", "[sticker s7]", None]


def test_the_outbox_kinds_are_the_outgoing_ones() -> None:
    """Only a later item has no outbox row: it is kept elsewhere, never sent."""
    with pytest.raises(ValueError, match="never in the outbox"):
        from_row(ItemKind.LATER.value, "x", None)


def test_a_reaction_lands_only_on_a_message_the_prompt_showed() -> None:
    """With reactions offered, a reaction on a shown message is kept; one on any other id
    (another chat's, a made-up one) is dropped and said so."""
    replies = [Reply(Reaction("👍", "8"), 0.0), Reply(Reaction("🎉", "999"), 0.0)]
    kept, dropped = deliverable(replies, kinds=TEXTS_AND_REACTIONS, shown_ids=frozenset({"8"}))
    assert (kept, dropped) == (
        [Reply(Reaction("👍", "8"), 0.0)],
        [DroppedItem("react", "no message '999' was shown")],
    )


@pytest.mark.parametrize(
    ("enabled", "delivered", "expected"),
    [
        (True, TEXTS_AND_REACTIONS, TEXTS_AND_REACTIONS),
        (False, TEXTS_AND_REACTIONS, TEXTS),  # reactions.enabled = false
        (True, TEXTS, TEXTS),  # a QQ private chat, the console
        (True, frozenset(), TEXTS),  # no platform: a text is always offered
    ],
)
def test_the_kinds_offered_are_on_and_delivered(
    tmp_path: Path, enabled: bool, delivered: frozenset[ItemKind], expected: frozenset[ItemKind]
) -> None:
    """A kind is offered when it is on in the config and the chat's platform delivers it; a
    later item, kept rather than delivered, whenever ``initiative.later`` is on."""
    config = make_config(
        tmp_path,
        "http://127.0.0.1:9/v1",
        reactions={"enabled": enabled},
        initiative={"later": enabled},
    )
    later = {ItemKind.LATER} if enabled else set()
    chat = ChatKey("test", ChatKind.PRIVATE, "42")
    assert offered_kinds(Settings(config), chat, delivered) == expected | later


def test_the_contract_offers_reactions_only_where_they_are_delivered() -> None:
    """The reaction line, with its example, is in the contract only when reactions are
    offered; its example is a valid item."""
    with_reactions = contract(TEXTS_AND_REACTIONS, images=False)
    example = REACT_CONTRACT[REACT_CONTRACT.index("{") : REACT_CONTRACT.index("}") + 1]
    replies, dropped = read(json.loads(example))
    assert (REACT_CONTRACT in with_reactions, REACT_CONTRACT in contract(TEXTS, images=False)) == (
        True,
        False,
    )
    assert (replies, dropped) == ([Reply(Reaction("👍", "123"), 0.0)], [])


async def test_dropped_items_are_logged_and_traced(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A plan with a reaction, a text and a sticker: one LLM call, the reaction is set on
    the message, the text sent, the sticker (off) dropped with one log line naming its
    kind and listed in the batch's trace beside the fates of the other two."""
    llm.reply_json(
        {
            "replies": [
                {"react": "👍", "to": "1"},
                {"content": "好的"},
                {"sticker": "s7", "send_delay_seconds": 1},
            ]
        }
    )
    with captured_logs() as logs:
        async with harness(tmp_path, llm) as bot:
            await bot.say("明天见", message_id="1")
            await bot.settle()
            [shown] = await bot.ops.traces.recent(PRIVATE, count=1)
    assert (bot.platform.texts(), bot.platform.reactions, len(llm.requests)) == (
        ["好的"],
        [(PRIVATE, "👍", "1")],
        1,
    )
    dropped_lines = [line for line in logs if "item dropped" in line]
    assert [("sticker item dropped" in line) for line in dropped_lines] == [True]
    assert shown.trace.dropped == (DroppedItem("sticker", "sticker items are not offered here"),)
    assert [(fate.kind, fate.state, fate.content) for fate in shown.fates] == [
        ("react", "sent", "👍"),
        ("content", "sent", "好的"),
    ]
