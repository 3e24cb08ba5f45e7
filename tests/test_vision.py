"""Pictures in the one reply call: real PTB, fake Bot API, real openai SDK, SQLite."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from bot.config.model import Config
from fakes.bot_api import FakeBotAPI, photo
from fakes.harness import replies_json, telegram_bot, telegram_config, user_prompt
from fakes.images import jpeg, jpeg_size, png_bomb
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE = 1001
DATA_URL_PREFIX = "data:image/jpeg;base64,"


def vision_config(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, **llm_keys: Any) -> Config:
    return telegram_config(tmp_path, llm, api, llm={"vision": True, **llm_keys})


def decoded(url: str) -> bytes:
    assert url.startswith(DATA_URL_PREFIX)
    return base64.b64decode(url.removeprefix(DATA_URL_PREFIX))


def send_photo(api: FakeBotAPI, side: int, data: bytes, caption: str | None = None) -> int:
    """Serve ``data`` as a photo of one size ``side`` px and push it; return the message id."""
    api.add_file(f"photo-{side}", data)
    return api.push_message(ALICE, extra=photo(caption, sides=(90, side)))


def texts(api: FakeBotAPI) -> list[str]:
    return [m["text"] for m in api.sent_messages(ALICE)]


async def test_a_photo_goes_into_the_one_reply_call_and_its_note_is_remembered(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """The photo reaches the model as a ≤1024 px JPEG data URL; its note replaces it later."""
    async with telegram_bot(vision_config(tmp_path, llm, api), api) as core:
        message_id = send_photo(api, 2560, jpeg(2560, 1920), "这个怎么样？")
        notes = {str(message_id): "一只橘猫趴在键盘上"}
        llm.reply_json({**replies_json("好可爱的橘猫！"), "image_notes": notes})
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        api.push_message(ALICE, "它叫什么名字好？")
        await api.wait_for("sendMessage", count=2, timeout=5)

    [url] = llm.image_urls(0)
    first = llm.requests[0]["messages"][-1]["content"]
    assert jpeg_size(decoded(url)) == ("JPEG", (1024, 768))
    assert first[0]["text"].endswith(": [photo] 这个怎么样？")
    assert first[1] == {"type": "text", "text": f"Picture in message #{message_id}:"}
    assert "image_notes" in llm.requests[0]["messages"][0]["content"]
    assert api.downloads == ["photos/photo-2560.jpg"]
    assert texts(api) == ["好可爱的橘猫！", "好的"]
    assert llm.image_urls(1) == []
    assert "[photo: 一只橘猫趴在键盘上] 这个怎么样？" in user_prompt(llm.requests[1])
    assert api.token not in str(llm.requests)


async def test_with_vision_off_nothing_is_downloaded(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """vision = false: no getFile, no download, the placeholder and caption only."""
    async with telegram_bot(telegram_config(tmp_path, llm, api), api):
        send_photo(api, 1280, jpeg(1280, 960), "看")
        await api.wait_for("sendMessage", timeout=5)

    assert [c.method for c in api.calls if c.method == "getFile"] == []
    assert api.downloads == []
    assert llm.image_urls(0) == []
    assert user_prompt(llm.requests[0]).endswith(": [photo] 看")


async def test_only_the_newest_max_images_are_sent(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Of three photos with max_images = 2, the two newest go, oldest of them first."""
    config = vision_config(tmp_path, llm, api, max_images=2)
    async with telegram_bot(config, api):
        ids = [send_photo(api, side, jpeg(side, side)) for side in (400, 500, 600)]
        await api.wait_for("sendMessage", timeout=5)

    labels = [p["text"] for p in llm.requests[0]["messages"][-1]["content"][1::2]]
    sizes = [jpeg_size(decoded(url))[1] for url in llm.image_urls(0)]
    assert labels == [f"Picture in message #{i}:" for i in ids[1:]]
    assert sizes == [(500, 500), (600, 600)]
    assert sorted(api.downloads) == ["photos/photo-500.jpg", "photos/photo-600.jpg"]


async def test_a_picture_that_fails_leaves_its_placeholder_and_the_batch_is_answered(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A bomb and a missing file are left out; the good picture goes; the reply goes out."""
    async with telegram_bot(vision_config(tmp_path, llm, api), api):
        send_photo(api, 700, png_bomb(50_000, 50_000), "炸弹")
        api.push_message(ALICE, extra=photo("不见了", sides=(90, 800)))  # never served
        good = send_photo(api, 300, jpeg(300, 200), "好的这张")
        await api.wait_for("sendMessage", timeout=5)

    parts = llm.requests[0]["messages"][-1]["content"]
    said = [line.split(": ", 1)[1] for line in parts[0]["text"].splitlines()[-3:]]
    assert [jpeg_size(decoded(url))[1] for url in llm.image_urls(0)] == [(300, 200)]
    assert said == ["[photo] 炸弹", "[photo] 不见了", "[photo] 好的这张"]
    assert [p["text"] for p in parts[1::2]] == [f"Picture in message #{good}:"]
    assert texts(api) == ["好的"]


async def test_a_provider_refusing_pictures_is_asked_again_without_them(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """HTTP 400 to a request with pictures: one re-ask without them, a warning names llm.vision."""
    llm.fail(400, body={"error": {"message": "image input is not supported", "type": "x"}})
    llm.reply_json(replies_json("看不到图，但听起来不错"))
    with captured_logs("WARNING") as logs:
        async with telegram_bot(vision_config(tmp_path, llm, api), api):
            send_photo(api, 320, jpeg(320, 320), "这个怎么样？")
            await api.wait_for("sendMessage", timeout=5)

    assert [len(llm.image_urls(i)) for i in range(len(llm.requests))] == [1, 0]
    assert "image_notes" not in llm.requests[1]["messages"][0]["content"]
    assert texts(api) == ["看不到图，但听起来不错"]
    assert logs.about("llm.vision") == [
        "WARNING the LLM refused a request with pictures (LLM gpt-4o-mini at "
        f"{llm.base_url.removesuffix('/v1')}: HTTP 400 bad request: image input is not "
        "supported); re-asking without them. If this model cannot see images, set "
        "llm.vision = false"
    ]
