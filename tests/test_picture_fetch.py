"""Fetching pictures over real wires: Telegram through the fake Bot API, QQ from a local host."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator

import pytest

from adapters.qq.fetch import SafeFetch, is_public
from adapters.qq.pictures import QQPictures
from adapters.telegram.files import TelegramFiles, file_base_url
from adapters.telegram.pictures import TelegramPictures
from bot.errors import PictureUnavailable
from bot.models import Picture
from fakes.bot_api import FakeBotAPI
from fakes.image_host import ImageHost
from fakes.images import jpeg, jpeg_size

TRUSTED = ipaddress.ip_address("127.0.0.1")


@pytest.fixture
async def telegram(api: FakeBotAPI) -> AsyncIterator[TelegramPictures]:
    """Telegram pictures fetched through the fake Bot API."""
    files = TelegramFiles(token=api.token, api_base_url=api.base_url)
    yield TelegramPictures(files)
    await files.aclose()


@pytest.fixture
async def host() -> AsyncIterator[ImageHost]:
    """A local image host on 127.0.0.1 and 127.0.0.2."""
    async with ImageHost(also_on=("127.0.0.2",)) as image_host:
        yield image_host


@pytest.fixture
async def qq() -> AsyncIterator[QQPictures]:
    """QQ pictures that trust 127.0.0.1 alone, standing in for the public internet."""
    fetch = SafeFetch(address_allowed=lambda address: address == TRUSTED, timeout_s=2.0)
    yield QQPictures(fetch)
    await fetch.aclose()


# --- Telegram -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_base_url", "expected"),
    [
        ("", "https://api.telegram.org/file/bot"),
        ("http://127.0.0.1:8081/bot", "http://127.0.0.1:8081/file/bot"),
        ("http://tg.local/bot/", "http://tg.local/file/bot"),
    ],
)
def test_file_base_url_follows_the_bot_api_server(api_base_url: str, expected: str) -> None:
    """Files come from the configured (maybe self-hosted) server's /file/bot endpoint."""
    assert file_base_url(api_base_url) == expected


async def test_telegram_picture_is_fetched_by_file_id(
    api: FakeBotAPI, telegram: TelegramPictures
) -> None:
    """getFile, then the download from /file/bot<token>/, then a JPEG of at most 1024 px."""
    api.add_file("photo-1280", jpeg(1280, 960))

    seen = await telegram.fetch(Picture("photo-1280", "[photo]"))

    assert (seen.width, seen.height) == (1024, 768)
    assert jpeg_size(seen.data) == ("JPEG", (1024, 768))
    assert [call.params["file_id"] for call in api.calls if call.method == "getFile"] == [
        "photo-1280"
    ]
    assert api.downloads == ["photos/photo-1280.jpg"]


async def test_unknown_telegram_file_is_unavailable_without_the_token(
    api: FakeBotAPI, telegram: TelegramPictures
) -> None:
    """A file Telegram no longer has becomes PictureUnavailable; the error holds no token."""
    with pytest.raises(PictureUnavailable, match="Invalid file_id") as caught:
        await telegram.fetch(Picture("gone", "[photo]"))

    assert api.token not in str(caught.value)


async def test_telegram_file_over_10_mb_is_not_downloaded(
    api: FakeBotAPI, telegram: TelegramPictures
) -> None:
    """A file whose getFile size is over 10 MB is refused before the download."""
    api.add_file("huge", jpeg(64, 64), announced_size=20 * 1024 * 1024)

    with pytest.raises(PictureUnavailable, match="more than the 10485760 allowed"):
        await telegram.fetch(Picture("huge", "[photo]"))

    assert api.downloads == []


async def test_telegram_file_that_does_not_decode_is_unavailable(
    api: FakeBotAPI, telegram: TelegramPictures
) -> None:
    """A file that is not a picture becomes PictureUnavailable, not a crash."""
    api.add_file("doc", b"%PDF-1.7 not a picture")

    with pytest.raises(PictureUnavailable, match="does not decode"):
        await telegram.fetch(Picture("doc", "[file]"))


# --- QQ -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("fd00::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),
    ],
)
def test_only_public_addresses_count_as_public(address: str, public: bool) -> None:
    """Loopback, private, link-local, shared, multicast and reserved addresses are refused."""
    assert is_public(ipaddress.ip_address(address)) is public


async def test_qq_picture_is_fetched_from_its_url(host: ImageHost, qq: QQPictures) -> None:
    """An allowed host's picture is downloaded, with the URL's own Host header."""
    url = host.serve("/cat.jpg", jpeg(2048, 1024))

    seen = await qq.fetch(Picture(url, "[image]"))

    assert (seen.width, seen.height) == (1024, 512)
    assert host.requests == ["/cat.jpg"]
    assert host.hosts == [f"127.0.0.1:{host.port}"]


async def test_loopback_is_refused_by_default(host: ImageHost) -> None:
    """Without qq.allow_private_image_hosts, a loopback URL is refused before connecting."""
    url = host.serve("/cat.jpg", jpeg(64, 64))
    fetch = SafeFetch()
    pictures = QQPictures(fetch)
    try:
        for target in (url, f"http://localhost:{host.port}/cat.jpg"):
            with pytest.raises(PictureUnavailable, match="private or local address"):
                await pictures.fetch(Picture(target, "[image]"))
    finally:
        await fetch.aclose()

    assert host.requests == []


async def test_allow_private_hosts_lets_loopback_through(host: ImageHost) -> None:
    """With qq.allow_private_image_hosts, a OneBot implementation on this host is reachable."""
    url = host.serve("/cat.jpg", jpeg(64, 64))
    fetch = SafeFetch(allow_private_hosts=True)
    pictures = QQPictures(fetch)
    try:
        seen = await pictures.fetch(Picture(url, "[image]"))
    finally:
        await fetch.aclose()

    assert (seen.width, seen.height) == (64, 64)


async def test_every_redirect_hop_is_checked(host: ImageHost, qq: QQPictures) -> None:
    """A redirect from an allowed host to a refused one is not followed."""
    host.serve("/inside.jpg", jpeg(64, 64))
    url = host.redirect("/hop", host.url("/inside.jpg", address="127.0.0.2"))

    with pytest.raises(PictureUnavailable, match=r"'127\.0\.0\.2' is at 127\.0\.0\.2"):
        await qq.fetch(Picture(url, "[image]"))

    assert host.requests == ["/hop"]


async def test_three_redirects_are_followed_and_no_more(host: ImageHost, qq: QQPictures) -> None:
    """Up to three redirects lead to the picture; a fourth is refused."""
    host.serve("/end.jpg", jpeg(64, 64))
    for hop, target in (("/r1", "/r2"), ("/r2", "/r3"), ("/r3", "/end.jpg"), ("/r0", "/r1")):
        host.redirect(hop, target)

    seen = await qq.fetch(Picture(host.url("/r1"), "[image]"))
    with pytest.raises(PictureUnavailable, match="more than 3 redirects"):
        await qq.fetch(Picture(host.url("/r0"), "[image]"))

    assert seen.width == 64


async def test_a_body_over_10_mb_is_cut_off(host: ImageHost, qq: QQPictures) -> None:
    """A body that never ends is refused once it passes 10 MB."""
    url = host.endless("/forever.jpg")

    with pytest.raises(PictureUnavailable, match="larger than the 10485760 bytes"):
        await qq.fetch(Picture(url, "[image]"))


async def test_a_slow_host_times_out(host: ImageHost) -> None:
    """A host slower than the timeout gives PictureUnavailable, not a hang."""
    url = host.serve("/slow.jpg", jpeg(64, 64), delay_s=1.0)
    fetch = SafeFetch(address_allowed=lambda address: address == TRUSTED, timeout_s=0.05)
    pictures = QQPictures(fetch)
    try:
        with pytest.raises(PictureUnavailable, match=r"within 0\.05 s"):
            await pictures.fetch(Picture(url, "[image]"))
    finally:
        await fetch.aclose()


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/a.jpg", "http://", "not a url", "gopher://x/1"],
)
async def test_only_http_urls_are_fetched(qq: QQPictures, url: str) -> None:
    """Anything but an http(s) URL with a host is refused."""
    with pytest.raises(PictureUnavailable, match="not an http"):
        await qq.fetch(Picture(url, "[image]"))


async def test_an_error_status_is_unavailable(host: ImageHost, qq: QQPictures) -> None:
    """A 404 from the host becomes PictureUnavailable."""
    with pytest.raises(PictureUnavailable, match="HTTP 404"):
        await qq.fetch(Picture(host.url("/missing.jpg"), "[image]"))
