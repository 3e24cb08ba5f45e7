"""Re-encoding pictures for the model with Pillow: size, shape, colour, and bad files."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image

from adapters.pictures import MAX_BYTES, reencode, to_jpeg
from bot.errors import PictureUnavailable
from fakes.images import (
    BLUE,
    RED,
    animated_gif,
    centre_colour,
    encoded,
    jpeg,
    jpeg_size,
    png_bomb,
    sideways_jpeg,
    transparent_png,
    truncated_jpeg,
    webp_sticker,
)


def near(actual: tuple[int, ...], expected: tuple[int, ...], *, slack: int = 16) -> bool:
    """Tell whether two colours match within JPEG's rounding."""
    return all(abs(a - e) <= slack for a, e in zip(actual, expected, strict=True))


def test_a_large_photo_shrinks_to_1024_on_its_long_side() -> None:
    """A 4000 × 3000 photo comes out as a 1024 × 768 JPEG of the same colour."""
    seen = reencode(jpeg(4000, 3000))

    assert (seen.width, seen.height) == (1024, 768)
    assert jpeg_size(seen.data) == ("JPEG", (1024, 768))
    assert near(centre_colour(seen.data), RED)
    assert seen.data_url.startswith("data:image/jpeg;base64,/9j/")


def test_a_small_picture_keeps_its_size() -> None:
    """A picture already under 1024 px is not blown up."""
    seen = reencode(jpeg(300, 200))

    assert (seen.width, seen.height) == (300, 200)


def test_exif_orientation_is_applied() -> None:
    """A photo stored sideways with EXIF orientation 6 comes out upright."""
    seen = reencode(sideways_jpeg(400, 100))

    assert (seen.width, seen.height) == (100, 400)


def test_transparency_is_laid_on_white() -> None:
    """A transparent picture becomes white, not black, as JPEG has no alpha."""
    seen = reencode(transparent_png())

    assert near(centre_colour(seen.data), (255, 255, 255))


def test_an_animated_gif_gives_its_first_frame() -> None:
    """An animation is seen as its first frame."""
    seen = reencode(animated_gif(BLUE, RED, RED))

    assert near(centre_colour(seen.data), BLUE, slack=24)


def test_a_static_webp_sticker_is_read() -> None:
    """Telegram's static stickers (WEBP with alpha) re-encode to JPEG."""
    seen = reencode(webp_sticker(512))

    assert (seen.width, seen.height) == (512, 512)
    assert near(centre_colour(seen.data), BLUE, slack=24)


def test_a_decompression_bomb_is_refused_before_it_is_decoded() -> None:
    """A 70-byte PNG claiming 50,000 × 50,000 px is refused at once, nothing decoded."""
    bomb = png_bomb(50_000, 50_000)

    with pytest.raises(PictureUnavailable, match="decompression bomb"):
        reencode(bomb)  # Pillow's check reads the header: decoding 2.5 Gpx would take minutes

    assert len(bomb) < 100


def test_a_picture_over_the_pixel_limit_is_refused_from_its_header() -> None:
    """9,000 × 9,000 px (81 Mpx) is over pacebot's own limit, below Pillow's."""
    with pytest.raises(PictureUnavailable, match=r"claims 9000×9000 px"):
        reencode(png_bomb(9_000, 9_000))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a picture at all",
        truncated_jpeg(64, 64),
        b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n",
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    ],
    ids=["empty", "text", "truncated-jpeg", "eps", "svg"],
)
def test_what_does_not_decode_is_unavailable(data: bytes) -> None:
    """Anything that is not a whole picture of a common format is refused, never a crash."""
    with pytest.raises(PictureUnavailable, match="does not decode"):
        reencode(data)


def test_a_file_over_10_mb_is_refused() -> None:
    """More than 10 MB is refused without being opened."""
    with pytest.raises(PictureUnavailable, match="more than the 10485760 allowed"):
        reencode(b"\xff" * (MAX_BYTES + 1))


async def test_re_encoding_runs_off_the_event_loop() -> None:
    """While a picture is re-encoded the loop keeps running other work."""
    big_png = encoded(Image.new("RGB", (6000, 6000), RED), "PNG")  # ~0.1 s to decode
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.create_task(tick())
    try:
        await asyncio.sleep(0)
        seen = await to_jpeg(big_png)
    finally:
        ticker.cancel()

    assert (seen.width, ticks > 1) == (1024, True)
