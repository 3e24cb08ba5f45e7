"""The official QQ bot: an addressed group batch answered within the platform's rules,
and how soon a dropped gateway is resumed.

pacebot runs in this process with the official QQ bot alone, at the platform's own pace
(1 s between two messages to one chat) and reconnect pause, against the QQ Open
Platform's fake and the fake LLM:

- **window**: in a group that grants every message, five members chat and one @-mentions
  the bot; the model answers the batch with seven texts. Figures: the LLM calls of the
  batch, the messages the platform took (at most 5, each a passive reply to the @ with
  msg_seq 1, 2, …), those it refused, the texts that reached the group (all seven, the
  last three in the fifth message), and the time from the @ to the last reply (well
  inside the 5-minute window).
- **reconnect**: the platform drops the connection; the time until pacebot's Resume is
  accepted, and a message sent meanwhile answered (target ≤ 5 s).
"""

from __future__ import annotations

import time
from pathlib import Path

from adapters.qqbot.platform import LIMITS
from bench.report import Figure, at_most, exactly
from bench.rig import fresh_path
from fakes.clock import Clock
from fakes.harness import make_config
from fakes.official_qq import pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid

GROUP = openid("bench-group")
MEMBERS = [openid(f"member-{n}") for n in range(5)]
TEXTS = [f"第{n}句，说完了这一句还有下一句。" for n in range(1, 8)]
RECONNECT_TARGET_S = 5.0


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Run the addressed group batch, then the reconnect, on one bot."""
    async with FakeLLMServer() as llm, FakeQQOpenPlatform(clock=Clock()) as platform:
        platform.grant_all_messages(GROUP)
        config = make_config(
            fresh_path(workdir, "officialqq"),
            llm.base_url,
            qq_official={
                "enabled": True,
                "app_id": platform.app_id,
                "api_base": platform.api_base,
                "auth_base": platform.auth_url,
            },
        )
        async with pacebot_on(config, platform, limits=LIMITS, reconnect_s=1.0) as (core, _):
            figures = await _window(llm, platform)
            await core.inbox.drain()
            figures += await _reconnect(llm, platform)
            await core.inbox.drain()
    return figures


async def _window(llm: FakeLLMServer, platform: FakeQQOpenPlatform) -> list[Figure]:
    """Five members chat, one asks the bot; seven texts come back as passive replies."""
    llm.reply_json({"replies": [{"content": t, "send_delay_seconds": 1} for t in TEXTS]})
    for n, member in enumerate(MEMBERS[:4]):
        await platform.group_message(GROUP, member, f"闲聊第{n}句")
    asked_at = time.monotonic()
    asked = await platform.group_at(GROUP, MEMBERS[4], "你怎么看？")
    await platform.wait_until(lambda: len(platform.sent_to(GROUP)) >= 5, within_s=60)
    done_s = time.monotonic() - asked_at
    sent = platform.sent_to(GROUP)
    said = "\n".join(s.content or "" for s in sent)
    passive = [(s.msg_id, s.msg_seq) for s in sent] == [
        (asked.message_id, n) for n in range(1, len(sent) + 1)
    ]
    return [
        Figure("officialqq.window.llm_calls", len(llm.requests), "calls", target=exactly(1)),
        Figure("officialqq.window.messages", len(sent), "messages", target=at_most(5)),
        Figure("officialqq.window.passive", int(passive), "bool", target=exactly(1)),
        Figure("officialqq.window.refused", len(platform.refused()), "sends", target=exactly(0)),
        Figure(
            "officialqq.window.texts_sent",
            sum(text in said for text in TEXTS),
            "texts",
            target=exactly(len(TEXTS)),
        ),
        Figure("officialqq.window.last_reply_after", done_s, "s", target=at_most(300.0)),
    ]


async def _reconnect(llm: FakeLLMServer, platform: FakeQQOpenPlatform) -> list[Figure]:
    """Drop the gateway; time the Resume; a message said meanwhile is answered."""
    resumed = len(platform.resumes)
    llm.reply_json({"replies": [{"content": "回来了"}]})
    dropped_at = time.monotonic()
    await platform.drop_connection()
    meanwhile = await platform.c2c_message(MEMBERS[0], "掉线了吗？")
    await platform.wait_until(lambda: len(platform.resumes) > resumed, within_s=30)
    resume_s = time.monotonic() - dropped_at
    await platform.wait_until(lambda: platform.sent_to(MEMBERS[0]), within_s=30)
    answered = [s.msg_id for s in platform.sent_to(MEMBERS[0])] == [meanwhile.message_id]
    accepted = all(r.accepted for r in platform.resumes)
    return [
        Figure(
            "officialqq.reconnect.resumed_after",
            resume_s,
            "s",
            target=at_most(RECONNECT_TARGET_S),
        ),
        Figure("officialqq.reconnect.resume_accepted", int(accepted), "bool", target=exactly(1)),
        Figure("officialqq.reconnect.answered", int(answered), "bool", target=exactly(1)),
    ]
