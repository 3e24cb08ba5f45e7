"""Pictures for tests and benchmarks, good and bad, made on the spot with Pillow."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

RED = (200, 20, 20)
BLUE = (20, 20, 200)


def encoded(image: Image.Image, kind: str, **options: object) -> bytes:
    """Return ``image`` saved as ``kind`` (JPEG, PNG, GIF, WEBP)."""
    out = io.BytesIO()
    image.save(out, kind, **options)
    return out.getvalue()


def jpeg(width: int, height: int, colour: tuple[int, int, int] = RED) -> bytes:
    """Return a plain JPEG photo of one colour."""
    return encoded(Image.new("RGB", (width, height), colour), "JPEG", quality=90)


def truncated_jpeg(width: int, height: int, *, keep: int = 200) -> bytes:
    """Return the first ``keep`` bytes of a JPEG: its header and no whole picture."""
    return jpeg(width, height)[:keep]


def photo_like(width: int, height: int) -> bytes:
    """Return a JPEG with detail in it (noise), sized like a phone photo's bytes."""
    noise = Image.effect_noise((width, height), 64).convert("RGB")
    return encoded(noise, "JPEG", quality=90)


def sideways_jpeg(width: int, height: int) -> bytes:
    """Return a JPEG stored ``width`` × ``height`` whose EXIF says to turn it a quarter."""
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to view
    return encoded(Image.new("RGB", (width, height), RED), "JPEG", exif=exif.tobytes())


def transparent_png(width: int = 64, height: int = 64) -> bytes:
    """Return a fully transparent PNG (a sticker's empty corners)."""
    return encoded(Image.new("RGBA", (width, height), (0, 0, 0, 0)), "PNG")


def animated_gif(*colours: tuple[int, int, int]) -> bytes:
    """Return an animated GIF with one frame per colour."""
    frames = [Image.new("RGB", (32, 32), colour) for colour in colours]
    return encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100)


def webp_sticker(side: int = 512) -> bytes:
    """Return a static WEBP sticker with transparency, as Telegram serves them."""
    return encoded(Image.new("RGBA", (side, side), (*BLUE, 255)), "WEBP")


def png_bomb(width: int, height: int) -> bytes:
    """Return a PNG of a few dozen bytes whose header claims ``width`` × ``height`` px."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 1024)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def jpeg_size(data: bytes) -> tuple[str | None, tuple[int, int]]:
    """Return the format and size of an encoded picture."""
    with Image.open(io.BytesIO(data)) as image:
        return image.format, image.size


def centre_colour(data: bytes) -> tuple[int, ...]:
    """Return the colour at the centre of an encoded picture."""
    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
        pixel = rgb.getpixel((rgb.width // 2, rgb.height // 2))
    assert isinstance(pixel, tuple)
    return pixel
