"""A platform's files come through one client: pictures, stickers and voice notes share it,
and a feature that is off gets nothing built."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from adapters.media import opened_media
from bot.config.model import Config
from bot.models import Picture, StickerSeen, VoiceNote
from bot.secrets import Secrets
from fakes import audio
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, RecordingPlatform, free_port, make_config
from fakes.image_host import ImageHost
from fakes.images import jpeg, webp_sticker
from fakes.openai_api import FakeLLMServer

EVERYTHING_ON = {
    "llm": {"vision": True},
    "stickers": {"enabled": True},
    "voice": {"transcribe": True},
}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until either end goes away, then close ``writer``."""
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


@dataclass
class Relay:
    """Where the relay listens, and how many connections were opened through it."""

    port: int = 0
    connections: int = 0


@contextlib.asynccontextmanager
async def counting_relay(target_port: int) -> AsyncIterator[Relay]:
    """Relay 127.0.0.1 to ``target_port``, counting the connections: one client keeping
    its connection alive opens one, three clients three."""
    relay = Relay()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relay.connections += 1
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    server = await asyncio.start_server(forward, "127.0.0.1", 0)
    relay.port = int(server.sockets[0].getsockname()[1])
    async with server:
        yield relay


def telegram_everything_on(tmp_path: Path, llm: FakeLLMServer, api_base_url: str) -> Config:
    telegram = {"enabled": True, "api_base_url": api_base_url}
    return make_config(tmp_path, llm.base_url, telegram=telegram, **EVERYTHING_ON)


async def test_telegram_pictures_stickers_and_voice_notes_share_one_client(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With vision, stickers and voice notes all on, a picture, a sticker's thumbnail and
    a voice note are fetched over one connection to the Bot API server: one client serves
    the three (three clients would open three)."""
    api.add_file("photo-1", jpeg(64, 48))
    api.add_file("sticker-1", webp_sticker(), path="stickers/file_1.webp")
    api.add_file("voice-1", audio.ogg_opus(2.0), path="voice/file_1.oga")
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token, voice_api_key=TEST_KEY)
    async with counting_relay(api.port) as relay:
        config = telegram_everything_on(tmp_path, llm, f"http://127.0.0.1:{relay.port}/bot")
        async with opened_media(config, secrets, {"telegram": RecordingPlatform()}) as media:
            assert media.voice is not None
            picture = await media.pictures["telegram"].fetch(Picture("photo-1", "[image]"))
            thumbnail = await media.stickers["telegram"].thumbnail("sticker-1")
            heard = await media.voice.sources["telegram"].fetch(VoiceNote("voice-1", "[voice]"))
    fetched = ((picture.width, picture.height), thumbnail is not None, heard.filename)
    assert (fetched, relay.connections) == (((64, 48), True, "voice.ogg"), 1)
    assert api.downloads == ["photos/photo-1.jpg", "stickers/file_1.webp", "voice/file_1.oga"]


async def test_qq_pictures_stickers_and_voice_notes_share_one_client(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With vision, stickers and voice notes all on, a QQ picture, a sticker to keep and a
    voice note's URL (no OneBot connected to convert it) are fetched over one connection to
    their host: one client serves the three."""
    from adapters.qq.platform import QQPlatform  # loads nonebot

    qq = {"enabled": True, "allow_private_image_hosts": True}
    config = make_config(tmp_path, llm.base_url, qq=qq, **EVERYTHING_ON)
    secrets = Secrets(TEST_KEY, TEST_KEY, voice_api_key=TEST_KEY)
    platform = QQPlatform(host="127.0.0.1", port=free_port(), access_token=None, bot_name="小满")
    async with ImageHost() as host, counting_relay(host.port) as relay:
        for path, body in [("/cat.jpg", jpeg(64, 48)), ("/sticker.webp", webp_sticker())]:
            host.serve(path, body)
        host.serve("/r.silk", audio.silk(2.0))
        base = f"http://127.0.0.1:{relay.port}"
        async with opened_media(config, secrets, {"qq": platform}) as media:
            assert media.voice is not None
            picture = await media.pictures["qq"].fetch(Picture(f"{base}/cat.jpg", "[image]"))
            kept = await media.stickers["qq"].collect(StickerSeen("", f"{base}/sticker.webp"))
            note = VoiceNote("r", "[voice]", url=f"{base}/r.silk")
            heard = await media.voice.sources["qq"].fetch(note)
    fetched = ((picture.width, picture.height), kept is not None, heard.filename)
    assert (fetched, relay.connections) == (((64, 48), True, "voice.wav"), 1)
    assert host.requests == ["/cat.jpg", "/sticker.webp", "/r.silk"]


async def test_with_every_feature_off_nothing_is_built(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Vision, stickers and voice off: no source and no voice, so nothing can be downloaded."""
    config = make_config(
        tmp_path, llm.base_url, telegram={"enabled": True, "api_base_url": api.base_url}
    )
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    platforms = {"telegram": RecordingPlatform(), "qq": RecordingPlatform()}
    async with opened_media(config, secrets, platforms) as media:
        built = (dict(media.pictures), dict(media.stickers), media.voice)
    assert built == ({}, {}, None)


async def test_speaking_alone_downloads_nothing(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Voice on to speak but not to hear: each platform's format is known, no voice note
    source is built."""
    config = make_config(
        tmp_path,
        llm.base_url,
        telegram={"enabled": True, "api_base_url": api.base_url},
        voice={"speak": True},
    )
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token, voice_api_key=TEST_KEY)
    platforms = {"telegram": RecordingPlatform(), "qq": RecordingPlatform()}
    async with opened_media(config, secrets, platforms) as media:
        assert media.voice is not None
        voice = (dict(media.voice.sources), dict(media.voice.formats))
    assert voice == ({}, {"telegram": "opus", "qq": "mp3"})
