"""Semantic recall: real SQLite, the real openai SDK, the fake /v1/embeddings."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.openai_embeddings import OpenAIEmbedder
from bot.config.model import parse_config
from bot.errors import ConfigError
from bot.memory.recall import fuse
from bot.memory.semantic import SemanticMemory
from bot.models import ChatKey, ChatKind, DaySummary, PersonNote, SummaryRecord
from bot.secrets import read_secrets
from fakes.bot_api import FakeBotAPI
from fakes.harness import (
    TEST_KEY,
    harness,
    push_day_summary,
    replies_json,
    start_run,
    wait_until,
)
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

CHAT = ChatKey("test", ChatKind.PRIVATE, "42")
OTHER = ChatKey("test", ChatKind.GROUP, "-100")
EMBEDDINGS = {"model": "fake-embed"}
HOTPOT_DAY = "2026-11-01 小明说学校旁边那家火锅店太辣了，下次换一家。"
PARK_DAY = "2026-11-02 小明去公园跑步，跑了五公里。"


def embedder(server: FakeLLMServer, *, timeout_s: float = 2.0) -> OpenAIEmbedder:
    """Build the real embeddings client against the fake server."""
    return OpenAIEmbedder(
        base_url=server.base_url,
        api_key=TEST_KEY,
        model="fake-embed",
        timeout_s=timeout_s,
        max_retries=0,
    )


def now() -> datetime:
    return datetime.now(UTC)


def vector_rows(path: Path) -> list[tuple[str, int, str, str]]:
    """Return (kind, row id, chat key, model) of every stored vector."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT kind, row_id, chat_key, model FROM embeddings ORDER BY row_id")
        return [tuple(row) for row in rows]


FILLERS = 8  # newer days that push the first two out of a small prompt: recall only
SMALL_BUDGET = {"context_budget_tokens": 500}


async def seed(path: Path, *, fillers: int = FILLERS) -> None:
    """Write CHAT's days (hot pot, park, then fillers) and OTHER's canary before the start."""
    async with await SqliteStore.open(path) as store:
        await push_day_summary(store, CHAT, date(2026, 11, 1), HOTPOT_DAY)
        await push_day_summary(store, CHAT, date(2026, 11, 2), PARK_DAY)
        for n in range(fillers):
            day = date(2026, 11, 3 + n)
            await push_day_summary(store, CHAT, day, f"{day} 小明在家写作业。")
        await push_day_summary(store, OTHER, date(2026, 11, 1), "CANARY-OTHER 火锅 hotpot")


def recalled_part(request: dict[str, Any]) -> str:
    """Return the recalled-memory part of a recorded request's system prompt ("" if none)."""
    system = str(request["messages"][0]["content"])
    _, found, rest = system.partition("What you remember that may help:")
    return rest if found else ""


def summary(record_id: int) -> SummaryRecord:
    content = DaySummary(summary=str(record_id))
    return SummaryRecord(record_id, CHAT, date(2026, 1, 1), content, str(record_id), 1, now())


def test_fuse_ranks_by_reciprocal_rank() -> None:
    """A record both lists rank beats one only a single list ranks first; ties keep order."""
    a, b, c, d = (summary(n) for n in range(1, 5))

    assert [r.id for r in fuse([a, b, c], [c, d])] == [3, 1, 2, 4]  # b ties d: b came first


async def test_off_by_default_no_embeddings_call_is_ever_made(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With no embeddings model, a batch recalls by keywords and the endpoint is never asked."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    async with harness(tmp_path, llm, memory=SMALL_BUDGET) as h:
        await h.say("你还记得那家火锅店吗")
        await h.settle()

    assert h.config.memory.embeddings.enabled is False
    assert llm.embedding_requests == []
    assert "火锅店太辣" in recalled_part(llm.requests[0])


async def test_hybrid_recall_finds_by_meaning_what_keywords_miss(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Rows are embedded at start-up; "hotpot" then recalls the 火锅 day, never another chat's.

    The batch's trace keeps the vector hits apart from the (empty) keyword hits.
    """
    llm.synonyms("火锅", "hotpot")
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    async with harness(tmp_path, llm, memory={"embeddings": EMBEDDINGS, **SMALL_BUDGET}) as h:
        await wait_until(lambda: len(vector_rows(h.config.database_path)) == FILLERS + 3)
        await h.say("do you remember that hotpot place?")
        await h.say("what was it like")
        await h.settle()
        async with await SqliteStore.open(h.config.database_path) as store:
            [shown] = await store.recent_traces(CHAT, count=1)

    assert len(llm.embedding_requests) == 2  # the back-fill, then one for the whole batch
    assert llm.embedding_requests[1]["input"] == [
        "do you remember that hotpot place?\nwhat was it like"
    ]
    recalled = recalled_part(llm.requests[0])
    assert "火锅店太辣" in recalled  # no keyword of the question is in it
    assert "公园跑步" not in recalled  # out of the prompt too, but shares nothing with it
    assert "CANARY-OTHER" not in str(llm.requests[0])
    found = shown.trace.recall
    assert (found.how, found.keyword_hits) == ("hybrid", ())
    assert found.vector_hits[0] == date(2026, 11, 1)


async def test_failed_question_embedding_falls_back_to_keywords(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An embeddings 500 for the question leaves the keyword hit, and the batch is answered."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    async with harness(tmp_path, llm, memory={"embeddings": EMBEDDINGS, **SMALL_BUDGET}) as h:
        await wait_until(lambda: len(vector_rows(h.config.database_path)) == FILLERS + 3)
        llm.embeddings_fail(500)
        await h.say("那家火锅店后来怎么样了")
        await h.settle()

    assert len(llm.embedding_requests) == 2
    assert "火锅店太辣" in recalled_part(llm.requests[0])
    assert h.platform.texts() == ["好的"]


async def test_hanging_embeddings_are_cut_off_at_llm_timeout(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An endpoint that hangs delays the batch by at most llm.timeout_s, then keywords rule."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    memory = {"embeddings": EMBEDDINGS, **SMALL_BUDGET}
    async with harness(tmp_path, llm, memory=memory, llm={"timeout_s": 0.3}) as h:
        await wait_until(lambda: len(vector_rows(h.config.database_path)) == FILLERS + 3)
        llm.embeddings_hang(30.0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await h.say("那家火锅店后来怎么样了")
        await llm.wait_for_requests(1, timeout=10.0)  # long before the 30 s hang ends
        waited = loop.time() - started

    assert waited >= 0.3  # the batch waited out the 0.3 s bound, then went on without vectors
    assert "火锅店太辣" in recalled_part(llm.requests[0])


async def test_rows_written_while_the_endpoint_was_down_are_embedded_later(
    db_path: Path, llm: FakeLLMServer
) -> None:
    """A back-fill that fails leaves rows pending; the next one embeds them, each once."""
    await seed(db_path, fillers=0)
    async with await SqliteStore.open(db_path) as store, embedder(llm) as client:
        semantic = SemanticMemory(store, client, timeout_s=2.0, now=now)
        llm.embeddings_fail(503)
        assert await semantic.backfill() == 0
        assert vector_rows(db_path) == []
        assert await semantic.backfill() == 3
        assert await semantic.backfill() == 0

    assert [row[:3] for row in vector_rows(db_path)] == [
        ("summary", 1, str(CHAT)),
        ("summary", 2, str(CHAT)),
        ("summary", 3, str(OTHER)),
    ]
    assert len(llm.embedding_requests) == 2  # the failed one, then all three; none when idle


async def test_popped_summaries_and_other_chats_are_never_found(
    db_path: Path, llm: FakeLLMServer
) -> None:
    """Vector search reads only the chat's live rows: a pop hides it, a restore brings it back."""
    llm.synonyms("火锅", "hotpot")
    await seed(db_path, fillers=0)
    async with await SqliteStore.open(db_path) as store, embedder(llm) as client:
        semantic = SemanticMemory(store, client, timeout_s=2.0, now=now)
        await semantic.backfill()
        found = await semantic.similar(CHAT, "hotpot", limit=5)
        await store.pop_summary(CHAT, by="test", now=now())  # the park day
        await store.pop_summary(CHAT, by="test", now=now())  # the hotpot day
        after_pop = await semantic.similar(CHAT, "hotpot", limit=5)
        await store.restore_summary(CHAT, now=now())
        after_restore = await semantic.similar(CHAT, "hotpot", limit=5)

    assert [r.content.summary for r in found.summaries] == [HOTPOT_DAY]
    assert after_pop.summaries == ()
    assert [r.content.summary for r in after_restore.summaries] == [HOTPOT_DAY]


async def test_a_new_model_embeds_everything_again(db_path: Path, llm: FakeLLMServer) -> None:
    """Vectors are kept per model: changing the model makes every row pending again."""
    await seed(db_path, fillers=0)
    async with await SqliteStore.open(db_path) as store, embedder(llm) as client:
        await SemanticMemory(store, client, timeout_s=2.0, now=now).backfill()
        other = OpenAIEmbedder(
            base_url=llm.base_url,
            api_key=TEST_KEY,
            model="fake-embed-2",
            timeout_s=2,
            max_retries=0,
        )
        async with other:
            assert await SemanticMemory(store, other, timeout_s=2.0, now=now).backfill() == 3

    assert sorted({row[3] for row in vector_rows(db_path)}) == ["fake-embed", "fake-embed-2"]


async def test_embedder_probe_says_whether_the_endpoint_answers(llm: FakeLLMServer) -> None:
    """``answers`` is None when vectors come back, and names the failure without the key."""
    async with embedder(llm) as client:
        assert await client.answers() is None
        llm.embeddings_fail(401)
        problem = await client.answers()

    assert problem is not None
    assert "HTTP 401" in problem
    assert TEST_KEY not in problem


def test_no_client_without_a_model() -> None:
    """With model = "" no embeddings client can be built at all."""
    with pytest.raises(ConfigError, match="no model is set"):
        OpenAIEmbedder(base_url="", api_key=TEST_KEY, model="", timeout_s=1, max_retries=0)


def test_embeddings_key_is_read_only_when_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off: no key is read; on: the [llm] key by default, or its own variable, named if unset."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", "sk-llm-key-123456")
    off = parse_config({}, base_dir=tmp_path)
    on = parse_config({"memory": {"embeddings": EMBEDDINGS}}, base_dir=tmp_path)
    own = parse_config(
        {"memory": {"embeddings": {**EMBEDDINGS, "api_key_env": "EMBED_KEY"}}}, base_dir=tmp_path
    )

    assert read_secrets(off, console=True).embeddings_api_key is None
    assert read_secrets(on, console=True).embeddings_api_key == "sk-llm-key-123456"
    with pytest.raises(ConfigError, match=r"\[memory.embeddings\] api_key_env.*EMBED_KEY"):
        read_secrets(own, console=True)


def test_unknown_embeddings_key_is_an_error(tmp_path: Path) -> None:
    """A misspelt key under [memory.embeddings] is named."""
    with pytest.raises(ConfigError, match=r"memory\.embeddings\.modle: unknown key"):
        parse_config({"memory": {"embeddings": {"modle": "x"}}}, base_dir=tmp_path)


async def seed_facts(path: Path) -> None:
    """Teach CHAT and OTHER a fact each about someone who is not in the conversation."""
    async with await SqliteStore.open(path) as store:
        for chat, fact in ((CHAT, "对花生过敏"), (OTHER, "CANARY-FACT 也对花生过敏")):
            note = PersonNote("9", "小红", (fact,))
            await store.add_facts(chat, date(2026, 11, 1), [note], keep=20, now=now())


async def test_facts_are_embedded_and_recalled_by_meaning(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A fact about someone absent is embedded at start-up and recalled by a question's meaning."""
    llm.synonyms("花生", "peanut")
    path = tmp_path / "data" / "pacebot.sqlite3"
    await seed(path)
    await seed_facts(path)
    async with harness(tmp_path, llm, memory={"embeddings": EMBEDDINGS, **SMALL_BUDGET}) as h:
        await wait_until(lambda: len(vector_rows(path)) == FILLERS + 5)
        await h.say("can I bring peanut cookies to the party?")
        await h.settle()
        async with await SqliteStore.open(path) as store:
            [shown] = await store.recent_traces(CHAT, count=1)

    assert [(kind, key) for kind, _, key, _ in vector_rows(path) if kind == "fact"] == [
        ("fact", str(CHAT)),
        ("fact", str(OTHER)),
    ]
    recalled = recalled_part(llm.requests[0])
    assert "About people:\n- 小红 (9): 对花生过敏" in recalled
    assert "CANARY-FACT" not in str(llm.requests[0])
    assert (shown.trace.recall.how, shown.trace.recall.fact_hits) == ("hybrid", (1,))


async def test_a_forgotten_fact_is_never_found(db_path: Path, llm: FakeLLMServer) -> None:
    """Vector search reads only live facts: /forget hides a fact from recall by meaning."""
    llm.synonyms("花生", "peanut")
    await seed_facts(db_path)
    async with await SqliteStore.open(db_path) as store, embedder(llm) as client:
        semantic = SemanticMemory(store, client, timeout_s=2.0, now=now)
        await semantic.backfill()
        found = await semantic.similar(CHAT, "peanut", limit=5)
        await store.forget_fact(CHAT, found.facts[0].id, by="test", now=now())
        after = await semantic.similar(CHAT, "peanut", limit=5)

    assert [(f.user_name, f.text) for f in found.facts] == [("小红", "对花生过敏")]
    assert after.facts == ()


async def test_pacebot_run_on_telegram_recalls_by_meaning(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """`pacebot run` with [memory.embeddings]: back-fill at start, then "hotpot" finds 火锅."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, "1001")
    llm.synonyms("火锅", "hotpot")
    async with await SqliteStore.open(tmp_path / "data" / "pacebot.sqlite3") as store:
        await push_day_summary(store, chat, date(2026, 11, 1), HOTPOT_DAY)
        for n in range(FILLERS):
            day = date(2026, 11, 3 + n)
            await push_day_summary(store, chat, day, f"{day} 小明在家写作业。")
    config = tmp_path / "config.toml"
    config.write_text(
        f"""
[bot]
data_dir = "data"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[memory]
context_budget_tokens = 500

[memory.embeddings]
model = "fake-embed"

[telegram]
enabled = true
api_base_url = "{api.base_url}"
""",
        encoding="utf-8",
    )
    llm.reply_json(replies_json("记得，太辣了"))
    env = {"PACEBOT_LLM_API_KEY": TEST_KEY, "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, env)
    try:
        await api.wait_for("getUpdates", timeout=20)
        await wait_until(lambda: len(vector_rows(tmp_path / "data" / "pacebot.sqlite3")) > FILLERS)
        api.push_message(1001, "do you remember that hotpot place?")
        await api.wait_for("sendMessage", timeout=10)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 20)

    assert process.returncode == 0, err.decode()
    assert "火锅店太辣" in recalled_part(llm.requests[0])
    assert llm.embedding_requests[-1]["input"] == ["do you remember that hotpot place?"]
    assert TEST_KEY not in err.decode()
