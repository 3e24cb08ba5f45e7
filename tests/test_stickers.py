"""Stickers over the real wires: collected from the chat, offered by id, sent back (by
Telegram ``file_id``; as QQ image bytes kept in a file), banned, evicted, captioned from
what the model saw, never crossing chats."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
from pathlib import Path
from typing import Any

import httpx
import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
from PIL import Image

from adapters.app import Core, running_bot, serving_dashboard
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from bot.replies.contract import STICKER_CONTRACT
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI, sticker
from fakes.harness import (
    TEST_KEY,
    free_port,
    make_config,
    qq_bot,
    telegram_bot,
    telegram_config,
    wait_until,
)
from fakes.image_host import ImageHost
from fakes.images import jpeg, jpeg_size, transparent_png, webp_sticker
from fakes.onebot import at, image, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE, ADMIN = 1001, 7
GROUP_A, GROUP_B = -100501, -100502
QQ_GROUP, QQ_SELF = 600, 10001
QQ_CHAT = ChatKey("qq", ChatKind.GROUP, str(QQ_GROUP))
ON = {"enabled": True}
WEB_TOKEN = "web-token-for-sticker-tests-0123"
BEARER = {"Authorization": f"Bearer {WEB_TOKEN}"}


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def system_prompt(llm: FakeLLMServer, index: int = -1) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


def config_with(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, **stickers: Any) -> Config:
    return telegram_config(
        tmp_path,
        llm,
        api,
        stickers={**ON, **stickers},
        bot={"admins": [f"telegram:{ADMIN}"]},
    )


async def command(api: FakeBotAPI, core: Core, chat_id: int, text: str) -> str:
    """Send a command as the admin in ``chat_id``; return the bot's answer."""
    before = len(api.sent_messages(chat_id))
    chat_type = "private" if chat_id > 0 else "supergroup"
    api.push_message(chat_id, text, user_id=ADMIN, chat_type=chat_type)
    await api.wait_for(lambda: len(api.sent_messages(chat_id)) > before, timeout=5)
    await core.inbox.drain()
    return str(api.sent_messages(chat_id)[before]["text"])


async def collected(core: Core, chat: ChatKey, count: int) -> None:
    """Wait until ``chat``'s collection holds ``count`` stickers."""
    async with asyncio.timeout(5):
        while len(await core.ops.stickers.collection(chat)) != count:  # noqa: ASYNC110 - polls the store
            await asyncio.sleep(0.01)


async def test_a_sticker_sent_in_the_chat_is_sent_back_by_its_id(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Alice's sticker joins the chat's collection (captioned with its emoji and set); the
    next prompt offers it as s<id> with the sticker line of the contract; the model's
    {"sticker": id} goes out as sendSticker with the same file_id, one call, and /stickers
    counts it sent."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    async with telegram_bot(config, api) as core:
        llm.reply_json(plan({"content": "哈哈"}))
        api.push_message(ALICE, extra=sticker("😹", set_name="Cats"))
        await api.wait_for("sendMessage", timeout=5)
        await collected(core, chat, 1)
        [kept] = await core.ops.stickers.collection(chat)
        api.push_message(ALICE, "你也发一个")
        llm.reply_json(plan({"sticker": kept.label}))
        [sent] = await api.wait_for("sendSticker", timeout=5)
        await core.inbox.drain()
        listing = await command(api, core, ALICE, "/stickers")
    assert (kept.caption, kept.file_ref) == ("😹 Cats", "sticker-1")
    assert (sent["sticker"], sent["chat_id"]) == ("sticker-1", ALICE)
    assert f"[{kept.label}] 😹 Cats" in system_prompt(llm)
    assert STICKER_CONTRACT.strip() in system_prompt(llm)
    assert listing.splitlines()[1:] == [f"{kept.label} · 😹 Cats · sent 1×"]
    assert len(llm.requests) == 2


async def test_a_banned_sticker_is_never_offered_sent_or_kept_again(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """/sticker ban takes a sticker out of the prompt; the model naming it anyway sends
    nothing; the same sticker sent again is not collected again; an unknown id is said so."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            llm.reply_json(plan({"content": "好"}))
            api.push_message(ALICE, extra=sticker("😀"))
            await api.wait_for("sendMessage", timeout=5)
            await collected(core, chat, 1)
            [kept] = await core.ops.stickers.collection(chat)
            banned = await command(api, core, ALICE, f"/sticker ban {kept.label}")
            unknown = await command(api, core, ALICE, "/sticker ban s999")
            llm.reply_json(plan({"sticker": kept.label}, {"content": "嗯"}))
            api.push_message(ALICE, extra=sticker("😀"))
            await api.wait_for(lambda: len(llm.requests) == 2, timeout=5)
            await core.inbox.drain()
            after = await core.ops.stickers.collection(chat)
    assert banned.startswith(f"Banned sticker {kept.label} (😀)")
    assert unknown.startswith("There is no sticker s999 to ban")
    assert api.calls_to("sendSticker") == []
    assert f"[{kept.label}]" not in system_prompt(llm)
    assert [(s.label, s.banned) for s in after] == [(kept.label, True)]
    assert logs.about("item dropped") == [
        "INFO sticker item dropped: sticker items are not offered here"
    ]


async def test_a_collection_keeps_the_most_recently_used(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With max_per_chat 3, five different stickers leave the three newest; the same one
    sent twice is kept once."""
    chat = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    config = config_with(tmp_path, llm, api, max_per_chat=3)
    async with telegram_bot(config, api) as core:
        for number in (1, 2, 3, 2, 4, 5):
            api.push_message(GROUP_A, extra=sticker("😀", number=number), chat_type="supergroup")
        async with asyncio.timeout(5):  # until the last one is in: three are before it too
            while "sticker-5" not in {s.file_ref for s in await core.ops.stickers.collection(chat)}:  # noqa: ASYNC110 - polls the store
                await asyncio.sleep(0.01)
        kept = await core.ops.stickers.collection(chat)
    assert sorted(s.file_ref for s in kept) == ["sticker-2", "sticker-4", "sticker-5"]


async def test_two_hundred_stickers_in_one_group_leave_the_newest_sixty_four(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """200 different stickers in one group: the collection keeps max_per_chat (64), the
    newest, and the chat goes on without a traceback."""
    chat = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    with captured_logs() as logs:
        async with telegram_bot(config_with(tmp_path, llm, api), api) as core:
            for number in range(1, 201):
                api.push_message(GROUP_A, extra=sticker(number=number), chat_type="supergroup")
            async with asyncio.timeout(20):
                while "sticker-200" not in {  # noqa: ASYNC110 - polls the store
                    s.file_ref for s in await core.ops.stickers.collection(chat)
                }:
                    await asyncio.sleep(0.02)
            kept = await core.ops.stickers.collection(chat)
    assert sorted(int(s.file_ref.removeprefix("sticker-")) for s in kept) == list(range(137, 201))
    assert logs.tracebacks() == []


async def test_a_chats_stickers_never_reach_another_chat(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A sticker collected in group A is not offered in group B (scope "chat"), the model
    naming it there sends nothing, and an admin in B cannot ban it by its id."""
    config = config_with(tmp_path, llm, api)
    group_a = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    async with telegram_bot(config, api) as core:
        api.push_message(GROUP_A, extra=sticker("🐱", number=9), chat_type="supergroup")
        await collected(core, group_a, 1)
        [canary] = await core.ops.stickers.collection(group_a)
        llm.reply_json(plan({"sticker": canary.label}, {"content": "在"}))
        api.push_message(
            GROUP_B, f"@{api.bot_username} 在吗", user_id=ALICE, chat_type="supergroup"
        )
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        banned = await command(api, core, GROUP_B, f"/sticker ban {canary.label}")
        still = await core.ops.stickers.collection(group_a)
    assert "🐱" not in system_prompt(llm)
    assert STICKER_CONTRACT.strip() not in system_prompt(llm)
    assert api.calls_to("sendSticker") == []
    assert banned.startswith(f"There is no sticker {canary.label} to ban in telegram:group:")
    assert [s.banned for s in still] == [False]


async def test_the_models_note_on_a_sticker_becomes_its_caption(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With vision on, a static sticker is shown to the model in the batch's one call, and
    the image note it writes about it replaces the emoji caption; no extra call is made."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"vision": True})})
    api.add_file("sticker-1", jpeg(64, 64))
    async with telegram_bot(config, api) as core:
        message_id = api.push_message(ALICE, extra=sticker("😳"))
        llm.reply_json(
            {
                "replies": [{"content": "哈哈"}],
                "image_notes": {str(message_id): "一只震惊的猫"},
            }
        )
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        await collected(core, chat, 1)
        [kept] = await core.ops.stickers.collection(chat)
    assert (kept.caption, len(llm.requests), len(llm.image_urls(0))) == ("一只震惊的猫", 1, 1)


async def test_the_dashboard_api_lists_draws_and_bans_a_collections_stickers(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """``GET …/stickers`` lists the collection with the dashboard's own thumbnail paths; a
    static sticker is drawn as a PNG of at most 128 px, an animated (Lottie) one from the
    thumbnail Telegram gave it, and one without a thumbnail is a 404;
    a ban is 200 once, then 404, as for an unknown id or another chat's sticker, and a
    malformed id is a 400. No answer holds the bot token or a Telegram file URL."""
    config = telegram_config(
        tmp_path,
        llm,
        api,
        stickers=ON,
        web={"enabled": True, "port": free_port()},
        bot={"admins": [f"telegram:{ADMIN}"]},
    )
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token, web_token=WEB_TOKEN)
    api.add_file("sticker-1", webp_sticker(512))
    api.add_file("sticker-2", gzip.compress(b'{"v": "5.5.2", "layers": []}'))  # a .tgs
    api.add_file("sticker-3", gzip.compress(b'{"v": "5.5.2", "layers": []}'))
    api.add_file("sticker-thumb-3", webp_sticker(128))
    group_a = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    group_b = ChatKey("telegram", ChatKind.GROUP, str(GROUP_B))
    path_a, path_b = f"/api/chats/{group_a}/stickers", f"/api/chats/{group_b}/stickers"
    async with (
        running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core,
        serving_dashboard(config, secrets, core.ops) as url,
        httpx.AsyncClient(base_url=str(url), headers=BEARER) as client,
    ):
        api.push_message(GROUP_A, extra=sticker("😹", number=1), chat_type="supergroup")
        api.push_message(
            GROUP_A, extra=sticker("🎉", number=2, animated=True), chat_type="supergroup"
        )
        api.push_message(
            GROUP_A,
            extra=sticker("🎈", number=3, animated=True, thumbnail=True),
            chat_type="supergroup",
        )
        api.push_message(GROUP_B, "hi", chat_type="supergroup")
        await collected(core, group_a, 3)
        async with asyncio.timeout(10):  # stored: the chat is known, answered or not
            while not await core.ops.status.knows(group_b):  # noqa: ASYNC110 - polls the store
                await asyncio.sleep(0.01)
        listed = (await client.get(path_a)).json()
        thumbnails = {s["id"]: s["thumbnail"] for s in listed["stickers"]}
        static = await client.get(thumbnails["s1"])
        animated = await client.get(thumbnails["s2"])
        from_thumbnail = await client.get(thumbnails["s3"])
        anonymous = await client.get(thumbnails["s1"], headers={"Authorization": ""})
        bans = [
            await client.post(f"{path_a}/s1/ban"),
            await client.post(f"{path_a}/s1/ban"),
            await client.post(f"{path_a}/s999/ban"),
            await client.post(f"{path_a}/x1/ban"),
        ]
        other_chat = await client.post(f"{path_b}/s2/ban")
        after = (await client.get(path_a)).json()["stickers"]
    shown = [(s["id"], s["caption"], s["banned"], s["thumbnail"]) for s in listed["stickers"]]
    assert listed["enabled"] is True
    assert sorted(shown) == [
        ("s1", "😹", False, f"/chats/{group_a}/stickers/s1/thumbnail"),
        ("s2", "🎉", False, f"/chats/{group_a}/stickers/s2/thumbnail"),
        ("s3", "🎈", False, f"/chats/{group_a}/stickers/s3/thumbnail"),
    ]
    with Image.open(io.BytesIO(static.content)) as drawn:
        assert (static.headers["content-type"], drawn.format, drawn.size) == (
            "image/png",
            "PNG",
            (128, 128),
        )
    with Image.open(io.BytesIO(from_thumbnail.content)) as drawn:
        assert (drawn.format, drawn.size) == ("PNG", (128, 128))
    assert (animated.status_code, anonymous.status_code) == (404, 303)
    assert [r.status_code for r in bans] == [200, 404, 404, 400]
    assert bans[0].json()["banned"]["banned"] is True
    assert other_chat.status_code == 404
    assert [(s["id"], s["banned"]) for s in sorted(after, key=lambda s: s["id"])] == [
        ("s1", True),
        ("s2", False),
        ("s3", False),
    ]
    for answer in (str(listed), *(r.text for r in bans), other_chat.text):
        assert api.token not in answer
        assert "/file/bot" not in answer


def qq_config(
    tmp_path: Path, llm: FakeLLMServer, *, private_hosts: bool = True, **stickers: Any
) -> Config:
    return make_config(
        tmp_path,
        llm.base_url,
        qq={"enabled": True, "port": free_port(), "allow_private_image_hosts": private_hosts},
        stickers={**ON, **stickers},
    )


async def test_a_qq_sticker_is_kept_as_a_small_file_and_sent_back_inline(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A QQ group sticker (an image marked sub_type 1) is fetched, kept re-encoded under
    <data_dir>/stickers (≤ 512 px, ≤ 256 kB, its transparency kept), and sent back as an
    image segment marked as a sticker with those very bytes inlined."""
    config = qq_config(tmp_path, llm)
    async with ImageHost() as host, qq_bot(config, self_id=QQ_SELF) as (core, onebot):
        url = host.serve("/s.png", transparent_png(1024, 1024))
        await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=url)])
        await collected(core, QQ_CHAT, 1)
        [kept] = await core.ops.stickers.collection(QQ_CHAT)
        llm.reply_json(plan({"sticker": kept.label}))
        await onebot.send_group_message(QQ_GROUP, ALICE, [at(QQ_SELF), text(" 发个表情")])
        [call] = await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
    kept_file = config.stickers_dir / kept.file_ref
    data = kept_file.read_bytes()
    [segment] = call.params["message"]
    assert (kept.caption, jpeg_size(data), len(data) <= 256 * 1024) == (
        "[动画表情]",
        ("PNG", (512, 512)),
        True,
    )
    assert segment == {
        "type": "image",
        "data": {
            "file": "base64://" + base64.b64encode(data).decode("ascii"),
            "sub_type": 1,
            "summary": "[动画表情]",
        },
    }


async def test_a_qq_sticker_that_cannot_be_fetched_is_not_kept(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A sticker on a private address (without qq.allow_private_image_hosts) or one whose
    bytes do not decode is not collected; the chat goes on, with no traceback."""
    config = qq_config(tmp_path, llm, private_hosts=False)
    with captured_logs() as logs:
        async with ImageHost() as host, qq_bot(config, self_id=QQ_SELF) as (core, onebot):
            private = host.serve("/private.png", transparent_png())
            await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=private)])
            llm.reply_json(plan({"content": "在"}))
            await onebot.send_group_message(QQ_GROUP, ALICE, [at(QQ_SELF), text(" 在吗")])
            await onebot.wait_for_call("send_group_msg", within_s=5)
            await core.inbox.drain()
            kept = await core.ops.stickers.collection(QQ_CHAT)
    assert (kept, host.requests) == ([], [])
    assert logs.about("QQ sticker not kept") == [
        "INFO QQ sticker not kept: QQ picture host '127.0.0.1' is at 127.0.0.1, a private or "
        "local address (set qq.allow_private_image_hosts = true to allow)"
    ]
    assert logs.tracebacks() == []


async def test_a_qq_sticker_that_does_not_decode_is_not_kept(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Bytes that are no picture are fetched, refused, and nothing is kept or written."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with ImageHost() as host, qq_bot(config, self_id=QQ_SELF) as (core, onebot):
            url = host.serve("/broken.png", b"\x89PNG not really")
            await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=url)])
            await wait_until(lambda: host.requests == ["/broken.png"])
            await core.inbox.drain()
            kept = await core.ops.stickers.collection(QQ_CHAT)
    assert (kept, config.stickers_dir.exists() and any(config.stickers_dir.iterdir())) == (
        [],
        False,
    )
    assert logs.tracebacks() == []


async def test_an_evicted_qq_sticker_leaves_no_file_behind(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With max_per_chat 1, a second sticker evicts the first, whose file is deleted."""
    config = qq_config(tmp_path, llm, max_per_chat=1)
    async with ImageHost() as host, qq_bot(config, self_id=QQ_SELF) as (core, onebot):
        first = host.serve("/a.png", transparent_png(40, 40))
        second = host.serve("/b.jpg", jpeg(40, 40))
        await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=first)])
        await collected(core, QQ_CHAT, 1)
        await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=second)])
        await wait_until(lambda: host.requests == ["/a.png", "/b.jpg"])
        await core.inbox.drain()
        [kept] = await core.ops.stickers.collection(QQ_CHAT)
    files = sorted(path.name for path in config.stickers_dir.iterdir())
    assert files == [kept.file_ref]


async def test_a_qq_sticker_is_drawn_from_its_kept_file_and_not_once_it_is_gone(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The dashboard's thumbnail of a QQ sticker comes from the kept file, not the expired
    URL: a PNG of 128 px with its transparency; a file gone from the disk draws nothing."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with ImageHost() as host, qq_bot(config, self_id=QQ_SELF) as (core, onebot):
            url = host.serve("/s.png", transparent_png(1024, 1024))
            await onebot.send_group_message(QQ_GROUP, ALICE, [image(sticker=True, url=url)])
            await collected(core, QQ_CHAT, 1)
            [kept] = await core.ops.stickers.collection(QQ_CHAT)
            drawn = await core.ops.stickers.thumbnail(QQ_CHAT, kept.label)
            (config.stickers_dir / kept.file_ref).unlink()
            gone = await core.ops.stickers.thumbnail(QQ_CHAT, kept.label)
            unknown = await core.ops.stickers.thumbnail(QQ_CHAT, "s999")
    assert drawn is not None
    with Image.open(io.BytesIO(drawn)) as picture:
        assert (picture.format, picture.size, picture.getpixel((0, 0))[3]) == ("PNG", (128, 128), 0)
    assert (gone, unknown, host.requests) == (None, None, ["/s.png"])
    assert logs.about("not drawn") == [
        f"INFO QQ sticker {kept.file_ref} not drawn: [Errno 2] No such file or directory: "
        f"'{config.stickers_dir / kept.file_ref}'"
    ]
    assert logs.tracebacks() == []
