"""Prompt building: order of parts, budget trimming from the oldest end, hostile user text."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.models import ChatKey, ChatKind, ChatMessage, ImageInput, Jpeg, Picture, StoredMessage
from bot.prompt import (
    MESSAGE_CHARS_MAX,
    PromptInput,
    assemble_prompt,
    estimate_prompt_tokens,
    estimate_tokens,
    image_tokens,
)

ZONE = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 6, 3, tzinfo=UTC)  # 14:03 in Shanghai
GROUP = ChatKey("telegram", ChatKind.GROUP, "-100")


def build(spec: PromptInput) -> list[ChatMessage]:
    """Return the request ``spec`` makes, as the prompter sends it."""
    return assemble_prompt(spec).messages


def message(n: int, text: str, *, from_bot: bool = False, minutes_ago: int = 0) -> StoredMessage:
    return StoredMessage(
        chat=GROUP,
        message_id=str(n),
        sender_id="bot" if from_bot else f"u{n % 3}",
        sender_name="小满" if from_bot else f"user{n % 3}",
        text=text,
        sent_at=NOW - timedelta(minutes=minutes_ago),
        from_bot=from_bot,
    )


def spec(**changes: object) -> PromptInput:
    base = PromptInput(
        persona="PERSONA-TEXT",
        contract="CONTRACT-TEXT",
        bot_name="小满",
        chat=GROUP,
        chat_title="周末爬山群",
        now=NOW,
        zone=ZONE,
        budget_tokens=6000,
        batch=(message(100, "明天几点出发？"),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_estimate_tokens_counts_cjk_and_latin() -> None:
    """CJK characters cost one token each, other characters a quarter."""
    assert estimate_tokens("你好") == 2
    assert estimate_tokens("hello world!") == 3
    assert estimate_tokens("") == 0
    assert estimate_tokens("小明: 好的 ok") == 4 + 2  # four wide, then ": ", " ok" make five
    assert estimate_tokens("ｆｕｌｌ 😀 é") == 5 + 1  # fullwidth and emoji are wide; " ", " é"


def test_system_prompt_order() -> None:
    """Persona, then local date and time, then the chat, then the contract."""
    system, user = build(spec())
    text = system.content
    assert system.role == "system"
    assert user.role == "user"
    positions = [
        text.index(p)
        for p in ("PERSONA-TEXT", "Sunday 2026-11-22 14:03", "周末爬山群", "CONTRACT-TEXT")
    ]
    assert positions == sorted(positions)


def test_batch_lines_carry_ids_and_names() -> None:
    """Each new message shows its id and sender so replies can quote and address people."""
    _, user = build(spec())
    assert "New messages (answer these):\n[#100 11-22 14:03] user1: 明天几点出发？" in user.content


@pytest.mark.parametrize("text", ["{}%s{0}", "{name} %(x)s %%", "}{", "\u202eRTL\u202c", "😀" * 50])
def test_hostile_text_is_kept_verbatim(text: str) -> None:
    """Braces, percent signs, RTL marks and emoji pass through unchanged."""
    _, user = build(spec(batch=(message(1, text),)))
    assert user.content.endswith(f": {text}")


def test_history_is_trimmed_from_the_oldest_end() -> None:
    """With a small budget the newest history survives and the oldest is dropped."""
    history = tuple(message(n, f"第{n}条消息" * 20, minutes_ago=100 - n) for n in range(50))
    _, user = build(spec(history=history, budget_tokens=1500))
    assert "第49条消息" in user.content
    assert "第0条消息" not in user.content
    assert estimate_prompt_tokens(build(spec(history=history, budget_tokens=1500))) <= 1500


def test_prompt_stays_within_budget_as_history_grows() -> None:
    """Prompt size is flat: 500 or 5,000 history messages give sizes within 5%."""

    def size(n: int) -> int:
        history = tuple(
            message(i, "今天天气不错，我们去哪儿玩？", minutes_ago=n - i) for i in range(n)
        )
        return estimate_prompt_tokens(build(spec(history=history, budget_tokens=2000)))

    assert size(5000) <= 2000
    assert abs(size(5000) - size(500)) <= 0.05 * size(500)


def test_huge_message_is_clipped() -> None:
    """A 100 kB message is clipped so the batch still fits."""
    _, user = build(spec(batch=(message(1, "啊" * 100_000),)))
    assert len(user.content) < MESSAGE_CHARS_MAX + 200
    assert user.content.endswith("…[truncated]")


def test_bot_lines_are_marked_as_the_bot() -> None:
    """The bot's own past messages are shown as its own."""
    _, user = build(spec(history=(message(5, "好呀", from_bot=True),)))
    assert "小满 (you): 好呀" in user.content


def test_unsaid_replies_are_mentioned() -> None:
    """Replies cancelled because the person wrote again are told to the next batch."""
    _, user = build(spec(unsaid=("还有一件事",)))
    assert "did not send" in user.content
    assert "- 还有一件事" in user.content


@pytest.mark.parametrize(
    ("size", "tokens"),
    [((1024, 768), 765), ((512, 512), 255), ((1024, 1024), 765), ((100, 1024), 425)],
)
def test_image_tokens_follow_openais_high_detail_count(size: tuple[int, int], tokens: int) -> None:
    """85 tokens plus 170 per 512 px tile, after the short side is scaled to 768 px."""
    assert image_tokens(Jpeg(b"", *size)) == tokens


def test_pictures_ride_with_the_user_message_and_cost_history() -> None:
    """The batch's pictures follow the user text, and their tokens leave less for history."""
    history = [message(n, "历史消息" * 10, minutes_ago=100 - n) for n in range(60)]
    picture = ImageInput("100", Jpeg(b"jpeg", 1024, 768))
    plain = build(spec(history=history, budget_tokens=1500))
    seeing = build(spec(history=history, budget_tokens=1500, images=(picture,)))

    assert seeing[-1].images == (picture,)
    assert plain[-1].images == ()
    assert seeing[-1].content.count("历史消息") < plain[-1].content.count("历史消息")


def test_a_noted_picture_is_shown_by_its_note() -> None:
    """A message whose picture the model saw shows as [photo: note] in later prompts."""
    seen = replace(
        message(5, "[sticker 😀] 哈哈"),
        pictures=(Picture("file-1", "[sticker 😀]"),),
        image_note="一只挥手的猫",
    )

    [_, user] = build(spec(history=[seen]))

    assert "user2: [photo: 一只挥手的猫] 哈哈" in user.content
