"""The reply contract: parsing the LLM's JSON, and the fallback splitters."""

from __future__ import annotations

import json
import re

import pytest

from bot.errors import BadLLMReply
from bot.replies.contract import REPLY_CONTRACT
from bot.replies.items import Reply, Text
from bot.replies.parse import (
    IMAGE_NOTE_CHARS_MAX,
    parse_image_notes,
    salvage_replies,
    splitter_messages,
    strip_reasoning,
)
from bot.replies.plan import parse_replies
from bot.replies.questions import looks_like_question
from bot.replies.splitting import split_text, split_to_limit

MAX_DELAY_S = 10.0
HI = '{"replies": [{"content": "hi", "send_delay_seconds": 1}]}'


def parse(text: str, *, finish_reason: str | None = "stop") -> list[Reply]:
    return parse_replies(text, finish_reason=finish_reason, max_delay_s=MAX_DELAY_S).replies


def said(content: str, delay: float = 0.0, reply_to: str | None = None) -> Reply:
    """Return a text reply as the plan reader gives it."""
    return Reply(Text(content, reply_to), delay)


def plan(*items: object) -> str:
    return json.dumps({"replies": list(items)}, ensure_ascii=False)


VALID_CASES = [
    pytest.param(
        '{"replies": [{"content": "哈哈，我也刚看到", "send_delay_seconds": 0},'
        ' {"content": "你说的那家店是不是在学校旁边？", "send_delay_seconds": 3,'
        ' "reply_to": "8812"}]}',
        [said("哈哈，我也刚看到", 0.0), said("你说的那家店是不是在学校旁边？", 3.0, "8812")],
        id="plain-spec-example",
    ),
    pytest.param(f"```json\n{HI}\n```", [said("hi", 1.0)], id="fenced-json"),
    pytest.param(f"```\n{HI}\n```", [said("hi", 1.0)], id="fenced-no-language"),
    pytest.param(
        f"Sure! Here is my answer:\n{HI}\nHope that helps.", [said("hi", 1.0)], id="prose-around"
    ),
    pytest.param(
        f"好的，这是回复：```json\n{HI}\n```以上。", [said("hi", 1.0)], id="prose-and-fence"
    ),
    pytest.param(
        HI + "\n" + plan({"content": "second", "send_delay_seconds": 0}),
        [said("hi", 1.0)],
        id="two-objects-first-wins",
    ),
    pytest.param(
        '{"note": "thinking"} ' + HI, [said("hi", 1.0)], id="first-object-without-replies-skipped"
    ),
    pytest.param('{"response": ' + HI + "}", [said("hi", 1.0)], id="nested-one-level"),
    pytest.param('{"replies": []}', [], id="empty-list-is-silence"),
    pytest.param(
        plan({"content": None}, {"content": "  "}, {"content": "ok"}),
        [said("ok", 0.0)],
        id="null-and-blank-content-dropped",
    ),
    pytest.param(plan({"content": "  spaced \n"}), [said("spaced", 0.0)], id="content-stripped"),
    pytest.param(plan({"content": "a", "send_delay_seconds": -3}), [said("a", 0.0)], id="negative"),
    pytest.param(
        '{"replies": [{"content": "a", "send_delay_seconds": NaN}]}', [said("a", 0.0)], id="nan"
    ),
    pytest.param(
        '{"replies": [{"content": "a", "send_delay_seconds": Infinity}]}',
        [said("a", MAX_DELAY_S)],
        id="infinity",
    ),
    pytest.param(
        plan({"content": "a", "send_delay_seconds": 1e9}), [said("a", MAX_DELAY_S)], id="huge"
    ),
    pytest.param(plan({"content": "a", "send_delay_seconds": "2.5"}), [said("a", 2.5)], id="str"),
    pytest.param(plan({"content": "a", "send_delay_seconds": None}), [said("a", 0.0)], id="null"),
    pytest.param(plan({"content": "a"}), [said("a", 0.0)], id="missing-delay"),
    pytest.param(
        '{"replies": [{"content": "a"}], "mood": "happy"}', [said("a", 0.0)], id="unknown-top"
    ),
    pytest.param(plan({"content": "a", "reply_to": 123}), [said("a", 0.0, "123")], id="int-id"),
    pytest.param(plan({"content": "a", "reply_to": None}), [said("a", 0.0)], id="null-id"),
    pytest.param(plan({"content": "a", "reply_to": ""}), [said("a", 0.0)], id="empty-id"),
    pytest.param(
        '[{"content": "one", "send_delay_seconds": 0}, {"content": "two", "send_delay_seconds": 2}]',  # noqa: E501
        [said("one", 0.0), said("two", 2.0)],
        id="top-level-array",
    ),
    pytest.param('{"replies": ["one", "two"]}', [said("one", 0.0), said("two", 0.0)], id="strs"),
    pytest.param(
        plan({"content": "你好呀😀，{占位} 100% 的“引号”"}),
        [said("你好呀😀，{占位} 100% 的“引号”", 0.0)],
        id="chinese-emoji-braces",
    ),
    pytest.param(
        '{"replies": [{"content": "\\u4f60\\u597d"}]}', [said("你好", 0.0)], id="ascii-escaped"
    ),
    pytest.param(
        '<think>maybe {"replies": ["no"]}</think>\n' + HI,
        [said("hi", 1.0)],
        id="reasoning-block-skipped",
    ),
    # The usual slips of a model's JSON, mended without asking anyone again.
    pytest.param(
        '{"replies": [{"content": "hi", "send_delay_seconds": 1,},],}',
        [said("hi", 1.0)],
        id="mended-trailing-commas",
    ),
    pytest.param(
        "{“replies”：[{“content”：“你好”，“send_delay_seconds”：1}，{“content”：“在吗？”}]}",
        [said("你好", 1.0), said("在吗？", 0.0)],
        id="mended-full-width-quotes-colons-commas",
    ),
    pytest.param(
        '{"replies": [{"content": "他说“好”：走", "send_delay_seconds": 1,}]}',
        [said("他说“好”：走", 1.0)],
        id="mended-keeps-full-width-inside-a-text",
    ),
    pytest.param(
        "{'replies': [{'content': \"I'm in\", 'send_delay_seconds': 1}]}",
        [said("I'm in", 1.0)],
        id="mended-single-quotes",
    ),
    pytest.param(
        '{replies: [{content: "hi", send_delay_seconds: 1}]}', [said("hi", 1.0)], id="mended-bare"
    ),
    pytest.param(
        '{"replies": [{"content": "他说"明天见"就走了", "reply_to": 7}]}',
        [said('他说"明天见"就走了', 0.0, "7")],
        id="mended-inner-quotes",
    ),
    pytest.param(
        '{"replies": [{"content": "one\ntwo"}]}', [said("one\ntwo", 0.0)], id="mended-raw-newline"
    ),
    pytest.param(
        'Sure:\n```json\n{"replies": [{"content": "hi",},]}\n```\nbye {笑}',
        [said("hi", 0.0)],
        id="mended-in-prose-and-fence",
    ),
]


@pytest.mark.parametrize(("text", "expected"), VALID_CASES)
def test_parse_valid(text: str, expected: list[Reply]) -> None:
    """A tolerable answer yields exactly the planned replies, cleaned and clamped."""
    assert parse(text) == expected


INVALID_CASES = [
    pytest.param("", "empty", id="empty-string"),
    pytest.param("   \n ", "empty", id="whitespace"),
    pytest.param("哈哈，我也刚看到！", "no JSON object", id="prose-only"),
    pytest.param('{"replies": [{"content": "a"}, {"content": "b', "cut off", id="half-object"),
    pytest.param(
        '{"replies": [{"content": "a"}, {"content": "b"}], "mood": {"x"', "cut off", id="half-tail"
    ),
    pytest.param('[{"content": "a"}, {"content": "b', "no 'replies' key", id="half-array"),
    pytest.param("{}", "no 'replies' key", id="empty-object"),
    pytest.param('{"reply": "hi"}', "no 'replies' key", id="wrong-key"),
    pytest.param('{"replies": "hi"}', "valid list", id="replies-a-string"),
    pytest.param('{"replies": null}', "valid list", id="replies-null"),
    pytest.param('{"replies": {"content": "hi"}}', "valid list", id="replies-an-object"),
    pytest.param(plan({"content": 5}), "replies.0.content", id="content-int"),
    pytest.param(plan({"content": ["a"]}), "replies.0.content", id="content-list"),
    pytest.param(plan({"text": "hi"}), "replies.0: unknown key 'text'", id="content-missing"),
    pytest.param(plan({"content": "a", "send_delay_seconds": "soon"}), "number", id="delay-word"),
    pytest.param(plan({"content": "a", "send_delay_seconds": True}), "boolean", id="delay-bool"),
    pytest.param(plan({"content": "a", "send_delay_seconds": [1]}), "number", id="delay-list"),
    pytest.param(plan({"content": "a", "reply_to": 1.5}), "message id", id="reply-to-float"),
    pytest.param(plan({"content": "a", "reply_to": {"id": 1}}), "message id", id="reply-to-dict"),
    pytest.param(plan("ok", 5), "replies.1", id="item-int"),
    # Mending never completes a cut-off plan, and never makes silence out of a broken one.
    pytest.param('{"replies": [{"content": "a', "cut off", id="cut-before-first-message"),
    pytest.param('{"replies": [{"content": "a",},], "x": [', "cut off", id="cut-after-a-slip"),
    pytest.param("{“replies”：[{“content”：“a", "cut off", id="cut-full-width"),
    pytest.param('{"replies": [@@, {"content": }]}', "no reply", id="garbled-items"),
    pytest.param('{"replies": [],}', "no reply", id="mended-silence"),
    pytest.param("{笑} 好的", "malformed", id="braces-in-prose"),
    pytest.param("[笑] 好的", "no JSON object", id="brackets-in-prose"),
]


@pytest.mark.parametrize(("text", "reason"), INVALID_CASES)
def test_parse_invalid(text: str, reason: str) -> None:
    """An unusable answer raises BadLLMReply with a reason that says why."""
    with pytest.raises(BadLLMReply, match=re.escape(reason)):
        parse(text)


def test_parse_length_is_invalid_even_with_valid_json() -> None:
    """An answer cut off by the token limit is invalid even when its JSON happens to parse."""
    with pytest.raises(BadLLMReply, match="token limit"):
        parse(HI, finish_reason="length")


@pytest.mark.parametrize("finish_reason", [None, "stop", "eos", "content_filter"])
def test_parse_other_finish_reasons_accepted(finish_reason: str | None) -> None:
    """Only "length" disqualifies an answer; unknown or missing finish reasons do not."""
    assert parse(HI, finish_reason=finish_reason) == [said("hi", 1.0)]


def test_parse_50k_content_kept_whole() -> None:
    """A 50 kB content is valid and kept whole; cutting it to the platform limit is later."""
    content = "长" * 50_000
    assert parse(plan({"content": content, "send_delay_seconds": 0})) == [said(content, 0.0)]


def test_parse_error_message_is_short() -> None:
    """The error for a huge unusable answer quotes only its start, never all of it."""
    with pytest.raises(BadLLMReply) as caught:
        parse("x" * 100_000)
    assert len(str(caught.value)) < 200


def test_parse_clamps_to_max_delay() -> None:
    """Delays are clamped to the max_delay_s passed in, not to a fixed number."""
    text = plan(
        {"content": "a", "send_delay_seconds": 7}, {"content": "b", "send_delay_seconds": 2}
    )
    actual = parse_replies(text, finish_reason="stop", max_delay_s=3.0).replies
    assert actual == [said("a", 3.0), said("b", 2.0)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>hmm</think>\nanswer", "answer"),
        ("<think>never closed", ""),
        ("no thoughts", "no thoughts"),
        ("answer <think>inline</think>", "answer <think>inline</think>"),
    ],
)
def test_strip_reasoning(text: str, expected: str) -> None:
    """A leading think block is dropped, an unclosed one drops everything, others stay."""
    assert strip_reasoning(text) == expected


# --- the contract and the splitter prompt ----------------------------------------------


def test_contract_names_the_exact_fields() -> None:
    """The output contract spells out every field name the parser reads."""
    names = {"replies", "content", "send_delay_seconds", "reply_to"}
    assert {name for name in names if f'"{name}"' in REPLY_CONTRACT} == names


def test_contract_example_parses() -> None:
    """The JSON example inside the contract is itself a valid reply plan."""
    example = REPLY_CONTRACT[REPLY_CONTRACT.index('{"replies"') :]
    actual = parse(example)
    assert actual == [said("…", 0.0), said("…", 2.5, "123")]


def test_splitter_messages_keep_raw_verbatim() -> None:
    """The raw text reaches the splitter untouched, braces and percent signs included."""
    raw = "100% sure {name} is {0} %s %(x)d }{ ok"
    assert [(m.role, m.content) for m in splitter_messages(raw)][1:] == [("user", raw)]


def test_splitter_prompt_asks_for_the_contract_fields() -> None:
    """The splitter's system prompt asks for JSON with the fields the parser reads."""
    system = splitter_messages("x")[0]
    fields = ["JSON", '"replies"', '"content"', '"send_delay_seconds"']
    assert (system.role, [f for f in fields if f in system.content]) == ("system", fields)


def test_splitter_prompt_example_parses() -> None:
    """The JSON example in the splitter prompt is itself a valid reply plan."""
    system = splitter_messages("x")[0].content
    example = system[system.index('{"replies"') :].split("\n")[0]
    assert parse(example) == [said("…", 0.0), said("…", 2.0)]


# --- split_text ---------------------------------------------------------------------------


def contents(replies: list[Reply]) -> list[str]:
    texts = [reply.item for reply in replies]
    assert all(isinstance(text, Text) for text in texts)
    return [text.content for text in texts if isinstance(text, Text)]


def test_split_text_chinese_paragraphs() -> None:
    """Chinese paragraphs become one message each, with their sentences kept together."""
    text = "今天天气不错。我们去公园吧！\n\n另外，明天的会议改到三点了。记得带电脑。"
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10, max_parts=2))
    assert actual == [
        "今天天气不错。我们去公园吧！",
        "另外，明天的会议改到三点了。记得带电脑。",
    ]


def test_split_text_chinese_sentences() -> None:
    """One Chinese paragraph splits after 。！？ and … when parts are allowed."""
    text = "今天天气不错。我们去公园吧！你觉得呢？好累……睡了"
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10, max_parts=5))
    assert actual == ["今天天气不错。", "我们去公园吧！", "你觉得呢？", "好累……", "睡了"]


def test_split_text_english_keeps_urls_decimals_and_abbreviations() -> None:
    """URLs, decimals, e.g./Mr. and list markers are never cut; real sentence ends are."""
    text = (
        "See https://example.com/a.b?q=1&x=2 for details. The price is 3.14 dollars, "
        "e.g. cheap! Mr. Smith agrees?\n1. First item\n2. Second item"
    )
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10, max_parts=10))
    assert actual == [
        "See https://example.com/a.b?q=1&x=2 for details.",
        "The price is 3.14 dollars, e.g. cheap!",
        "Mr. Smith agrees?",
        "1. First item",
        "2. Second item",
    ]


def test_split_text_keeps_code_blocks_whole() -> None:
    """A fenced code block with blank lines and periods inside stays in one message."""
    code = "```python\nx = 1. \n\nprint(x)\n```"
    text = f"Try this.\n\n{code}\n\nDone."
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10, max_parts=4))
    assert actual == ["Try this.", code, "Done."]


def test_split_text_respects_max_parts() -> None:
    """Ten sentences become at most max_parts messages that still hold every word."""
    text = " ".join(f"Sentence {i} is here." for i in range(10))
    replies = split_text(text, chars_per_s=6, max_delay_s=10, max_parts=3)
    assert (len(replies), " ".join(contents(replies))) == (3, text)


def test_split_text_merges_sentences_before_paragraphs() -> None:
    """Merging joins sentences of one paragraph before it joins two paragraphs."""
    text = "A short one. Another short one. A third.\n\nSecond paragraph is here."
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10, max_parts=2))
    assert actual == ["A short one. Another short one. A third.", "Second paragraph is here."]


def test_split_text_delays_follow_typing_speed() -> None:
    """The first part goes at once; each later one waits len/chars_per_s, clamped."""
    text = "第一句话。" + "二" * 11 + "。" + "三" * 99 + "。"
    actual = [r.send_delay_seconds for r in split_text(text, chars_per_s=4, max_delay_s=10)]
    assert actual == [0.0, 3.0, 10.0]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t"])
def test_split_text_blank_gives_nothing(text: str) -> None:
    """Blank text yields no replies at all."""
    assert split_text(text, chars_per_s=6, max_delay_s=10) == []


def test_split_text_never_returns_empty_contents() -> None:
    """Stray blank paragraphs and punctuation never produce empty messages."""
    text = "\n\n。\n\n好的。\n\n\n  \n再见！ "
    actual = contents(split_text(text, chars_per_s=6, max_delay_s=10))
    assert actual == ["。", "好的。", "再见！"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"replies": [{"content": "第一句", "send_delay_seconds": 0}, {"content": "第二',
            ["第一句"],
            id="cut-off-plan",
        ),
        pytest.param(
            '```json\n[{"content": "a \\"quoted\\" b"}, {"content": ""}, {"content": 5}]\n```',
            ['a "quoted" b'],
            id="fenced-array-escapes",
        ),
        pytest.param('{"mood": "happy"}', [], id="json-without-content"),
        pytest.param("[笑] 好的", ["[笑] 好的"], id="bracket-prose"),
    ],
)
def test_split_text_never_shows_json(text: str, expected: list[str]) -> None:
    """A broken JSON plan yields only its complete content strings, never JSON syntax."""
    assert contents(split_text(text, chars_per_s=6, max_delay_s=10)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"replies": [{"content": "一"}, {"content": "二', ["一"]),
        ('<think>x</think>```json\n[{"content": " 三 "}]', ["三"]),
        ('{"mood": "happy"}', []),
        ("普通的一句话", None),
        ("[笑] 好的", None),
    ],
)
def test_salvage_replies(text: str, expected: list[str] | None) -> None:
    """Broken JSON yields its finished content strings; prose yields None."""
    assert salvage_replies(text) == expected


def test_split_text_single_sentence_unchanged() -> None:
    """A single sentence stays one message with no delay."""
    assert split_text("just one line", chars_per_s=6, max_delay_s=10) == [said("just one line")]


# --- split_to_limit -------------------------------------------------------------------


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_split_to_limit_10k_on_paragraphs() -> None:
    """A 10 kB text splits on paragraph boundaries into pieces within the limit."""
    paragraph = "This is a sentence of the paragraph. " * 10  # 10 such paragraphs fit in 4096
    paragraphs = [f"{i}: {paragraph}".strip() for i in range(28)]
    text = "\n\n".join(paragraphs)
    pieces = split_to_limit(text, 4096)
    assert (max(map(len, pieces)) <= 4096, len(pieces), squeeze("".join(pieces))) == (
        True,
        3,
        squeeze(text),
    )
    assert [p.split(":")[0] for p in pieces] == ["0", "10", "20"]


def test_split_to_limit_hard_cut_single_word() -> None:
    """A 9000-character word with no boundary is cut hard at the limit."""
    word = "".join(chr(ord("a") + i % 26) for i in range(9000))
    assert split_to_limit(word, 4096) == [word[:4096], word[4096:8192], word[8192:]]


def test_split_to_limit_exact_limit_unchanged() -> None:
    """Text exactly at the limit comes back as the same single string."""
    text = " x\n" + "y" * 4093
    assert split_to_limit(text, 4096) == [text]


def test_split_to_limit_prefers_sentences_then_spaces() -> None:
    """Without line breaks the cut falls after a sentence end, else at a space."""
    assert split_to_limit("Aaaa bbbb. Cccc dddd eeee.", 18) == ["Aaaa bbbb.", "Cccc dddd eeee."]
    assert split_to_limit("aaaa bbbb cccc dddd", 12) == ["aaaa bbbb", "cccc dddd"]


def test_split_to_limit_chinese_sentences() -> None:
    """Chinese text without spaces is cut after 。 rather than mid-sentence."""
    text = "一二三四五六七八。" * 3
    assert split_to_limit(text, 20) == [
        "一二三四五六七八。一二三四五六七八。",
        "一二三四五六七八。",
    ]


def test_split_to_limit_does_not_tear_emoji() -> None:
    """A hard cut backs off rather than separate a ZWJ emoji sequence or a skin tone."""
    family = "👨\u200d👩\u200d👧"
    text = "a" * 9 + family + "b" * 10
    pieces = split_to_limit(text, 11)
    assert (pieces[0], all(len(p) <= 11 for p in pieces), "".join(pieces)) == (
        "a" * 9,
        True,
        text,
    )


@pytest.mark.parametrize("limit", [1, 2, 7, 50])
def test_split_to_limit_invariants(limit: int) -> None:
    """Every piece fits, none is blank, and all non-whitespace text survives in order."""
    text = "Hello, world! 你好。\n\nThis is 3.14 a test…  ok? " * 5
    pieces = split_to_limit(text, limit)
    assert (
        all(0 < len(p) <= limit for p in pieces),
        all(p.strip() for p in pieces),
        squeeze("".join(pieces)),
    ) == (True, True, squeeze(text))


def test_split_to_limit_rejects_zero_limit() -> None:
    """A limit below one is a programming error."""
    with pytest.raises(ValueError, match="at least 1"):
        split_to_limit("abc", 0)


# --- looks_like_question --------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["ok"], False),
        (["好的"], False),
        (["哈哈哈哈"], False),
        (["嗯嗯", "晚安"], False),
        (["thanks!"], False),
        (["不不不"], False),
        (["see https://example.com/?q=1"], False),
        ([], False),
        ([""], False),
        (["真的?"], True),
        (["真的？"], True),
        (["你吃饭了吗"], True),
        (["你吃饭了吗，我刚吃完"], True),
        (["那你呢"], True),
        (["这是为什么"], True),
        (["你去哪"], True),
        (["明天几点见"], True),
        (["是不是下雨了"], True),
        (["你有没有空"], True),
        (["ok", "你吃了么~"], True),
        (["what time is it"], True),
        (["How are you"], True),
        (["ok. can you help me"], True),
        (["Is it raining"], True),
        (["do you know him"], True),
        (["Does it work"], True),
        (["Are you there"], True),
    ],
)
def test_looks_like_question(texts: list[str], expected: bool) -> None:
    """Question marks, Chinese particles and question words, and English openers count."""
    assert looks_like_question(texts) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"replies": [], "image_notes": {"7": "一只橘猫"}}', {"7": "一只橘猫"}),
        (
            '```json\n{"replies": [], "image_notes": {"#7": " a  cat\\n on a desk "}}\n```',
            {"7": "a cat on a desk"},
        ),
        ('{"replies": [], "image_notes": {"7": "cat", "99": "unknown id", "8": 5}}', {"7": "cat"}),
        ('{"replies": [], "image_notes": {"7": ""}}', {}),
        ('{"replies": [], "image_notes": ["7", "cat"]}', {}),
        ('{"replies": []}', {}),
        ("no JSON at all", {}),
        ('{"replies": [], "image_notes": {"7": "', {}),
        ("{'replies': [], 'image_notes': {'7': 'cat',},}", {"7": "cat"}),
    ],
    ids=[
        "plain",
        "fenced-messy",
        "unknown-and-bad",
        "empty",
        "list",
        "absent",
        "prose",
        "cut",
        "mended",
    ],
)
def test_image_notes_are_read_tolerantly(text: str, expected: dict[str, str]) -> None:
    """Notes for the batch's picture messages are kept; anything odd is left out, never fatal."""
    assert parse_image_notes(text, message_ids=frozenset({"7", "8"})) == expected


def test_a_long_image_note_is_cut() -> None:
    """A rambling note is cut to a prompt-friendly length."""
    text = json.dumps({"replies": [], "image_notes": {"7": "猫" * 1000}})

    notes = parse_image_notes(text, message_ids=frozenset({"7"}))

    assert notes == {"7": "猫" * IMAGE_NOTE_CHARS_MAX}
