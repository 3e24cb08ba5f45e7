"""People memory over the real Telegram wire: PTB ↔ fake Bot API, openai SDK ↔ fake LLM."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from adapters.app import running_bot
from bot.models import ChatKey, ChatKind, PersonNote
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, replies_json, telegram_config
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

GROUP_ID = -100888
GROUP = ChatKey("telegram", ChatKind.GROUP, str(GROUP_ID))
ALICE, BOB = 1001, 1002


async def test_forgetme_from_a_member_then_only_the_others_facts_reach_the_prompt(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Bob, no admin, forgets himself; Alice's next question carries her fact, not his."""
    config = telegram_config(
        tmp_path, llm, api, bot={"admins": [f"telegram:{ALICE}"]}, groups={"reply_mode": "always"}
    )
    async with await SqliteStore.open(config.database_path) as store:
        notes = [
            PersonNote(str(ALICE), "Alice", ("CANARY-ALICE 对花生过敏",)),
            PersonNote(str(BOB), "Bob", ("CANARY-BOB 住在杭州", "CANARY-BOB 养猫")),
        ]
        await store.add_facts(GROUP, date(2026, 11, 20), notes, keep=20, now=datetime.now(UTC))
    llm.reply_json(replies_json("好的"))
    secrets = Secrets(llm_api_key=TEST_KEY, splitter_api_key=TEST_KEY, telegram_token=api.token)
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1):
        await api.wait_for("getUpdates")
        api.push_message(GROUP_ID, "/forgetme", chat_type="group", user_id=BOB, first_name="Bob")
        await api.wait_for("sendMessage")
        api.push_message(GROUP_ID, "在吗", chat_type="group", user_id=BOB, first_name="Bob")
        api.push_message(
            GROUP_ID, "今天吃什么", chat_type="group", user_id=ALICE, first_name="Alice"
        )
        await llm.wait_for_requests(1, timeout=5)
        await api.wait_for("sendMessage", count=2, timeout=5)

    answer = api.sent_messages(GROUP_ID)[0]["text"]
    system = str(llm.requests[0]["messages"][0]["content"])
    assert answer.startswith("Forgot 2 fact(s) about you in this chat;")
    assert f"- Alice (id {ALICE}): CANARY-ALICE 对花生过敏" in system
    assert "CANARY-BOB" not in system
