"""A hundred reloads while messages flow: nothing waiting is lost, nothing answered twice,
and each batch runs with the settings of the moment it was taken."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.config.model import parse_config
from bot.models import ChatKey, ChatKind
from fakes.harness import harness, make_config, replies_json
from fakes.openai_api import FakeLLMServer

CHATS = [ChatKey("test", ChatKind.PRIVATE, str(number)) for number in range(20)]
ROUNDS = 5


async def test_a_hundred_reloads_while_messages_flow_lose_and_repeat_nothing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Twenty chats write five times each while the config is reloaded a hundred times,
    its persona changing each time: every message is answered in exactly one batch, every
    chat gets its answers, and the last prompts carry the last persona."""
    llm.reply_json(replies_json("好"))
    for _ in range(len(CHATS) * ROUNDS):
        llm.reply_json(replies_json("好"))
    config = make_config(tmp_path, llm.base_url)
    data = config.model_dump()
    async with harness(tmp_path, llm, config=config) as bot:

        async def reloading() -> None:
            for number in range(100):
                persona = f"CANARY-{number} 你是小满。"
                changed = parse_config(
                    {**data, "bot": {**data["bot"], "persona": persona}}, base_dir=tmp_path
                )
                bot.core.settings.reload(changed, persona=persona)
                await asyncio.sleep(0.002)

        async def talking() -> None:
            for round_ in range(ROUNDS):
                for chat in CHATS:
                    await bot.say(f"第{round_}句", chat=chat)
                await asyncio.sleep(0.02)

        await asyncio.gather(reloading(), talking())
        await bot.settle()
        answered = [await bot.ops.traces.recent(chat, count=50) for chat in CHATS]
        last = await bot.ops.status.system_prompt(CHATS[0])
    message_ids = [i for traces in answered for shown in traces for i in shown.trace.message_ids]
    assert (len(message_ids), len(set(message_ids))) == (len(CHATS) * ROUNDS,) * 2
    assert [bool(bot.platform.texts(chat)) for chat in CHATS] == [True] * len(CHATS)
    assert last.startswith("CANARY-99 ")
