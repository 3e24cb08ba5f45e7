"""The official QQ bot's gateway payloads, read by pacebot's adapter as nonebot's reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from nonebot.adapters.qq import Adapter
from nonebot.adapters.qq.config import BotInfo

from adapters.qqbot.gateway import QQBotAdapter, SessionBot, qqbot_adapter
from fakes.qq_open_platform import openid

ALICE = openid("alice")
C2C = {
    "author": {"id": ALICE, "user_openid": ALICE},
    "content": "在吗",
    "id": "ROBOT1.0_c2c!",
    "timestamp": "2026-11-28T20:15:03+08:00",
}

FRAMES: dict[str, dict[str, Any]] = {
    "dispatch": {"op": 0, "s": 42, "t": "C2C_MESSAGE_CREATE", "id": "ev-1", "d": C2C},
    "hello": {"op": 10, "d": {"heartbeat_interval": 41250}},
    "heartbeat ack": {"op": 11},
    "reconnect": {"op": 7},
    "invalid session": {"op": 9, "d": False},
    "an opcode nonebot has no model for": {"op": 99, "d": {"x": 1}},
}


@pytest.fixture(scope="module")
def adapter() -> QQBotAdapter:
    return qqbot_adapter()


def _bot(adapter: QQBotAdapter) -> SessionBot:
    info = BotInfo.model_validate({"id": "102000001", "secret": "not-a-secret"})
    return SessionBot(adapter, info.id, info)


@pytest.mark.parametrize("frame", FRAMES.values(), ids=list(FRAMES))
def test_payloads_read_as_the_stock_adapter_reads_them(
    adapter: QQBotAdapter, frame: dict[str, Any]
) -> None:
    """Each frame is the same model with the same fields, and a dispatch moves the bot's
    sequence as the stock reading does."""
    data = json.dumps(frame, ensure_ascii=False)
    ours_bot, stock_bot = _bot(adapter), _bot(adapter)

    ours = QQBotAdapter.data_to_payload(ours_bot, data)
    stock = Adapter.data_to_payload(stock_bot, data)

    assert (type(ours), ours.model_dump()) == (type(stock), stock.model_dump())
    sequences = (ours_bot._sequence, stock_bot._sequence)  # what on_dispatch sets
    assert sequences == ((42, 42) if frame["op"] == 0 else (None, None))
