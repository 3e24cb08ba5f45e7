"""Make a fetched picture ready for the model: a JPEG no larger than 1024 px, decoded safely.

Every platform's pictures come through here. Pillow decodes lazily: ``Image.open`` reads
only the header, so the size a picture claims is checked before a pixel is decoded, and
a decompression bomb (a tiny file that claims 50,000 × 50,000 px) is refused unread.
Only common raster formats are opened: no EPS, which would start Ghostscript, and none
of Pillow's rarely used decoders. Decoding is CPU work, so :func:`to_jpeg` runs it in a
worker thread and the event loop goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import warnings
from collections.abc import Iterator
from typing import Final

from PIL import Image, ImageOps, UnidentifiedImageError

from bot.errors import PictureUnavailable
from bot.models import Jpeg

MAX_SIDE_PX: Final = 1024
"""The longest side of a picture the model sees."""
MAX_BYTES: Final = 10 * 1024 * 1024
"""The largest file fetched for the model."""
MAX_PIXELS: Final = 50_000_000
"""The most pixels a picture may claim: above any phone camera Telegram or QQ passes on."""
JPEG_QUALITY: Final = 85
_FORMATS: Final = ("JPEG", "PNG", "GIF", "WEBP", "BMP")
_WHITE: Final = (255, 255, 255)

# Pillow only warns about a picture between its limit and twice that; here every such
# warning is an error, so a bomb just under Pillow's own hard limit is refused too.
warnings.filterwarnings("error", category=Image.DecompressionBombWarning)


def _flatten(image: Image.Image) -> Image.Image:
    """Return ``image`` as RGB, transparent parts laid on white (JPEG has no alpha)."""
    transparent = image.mode in {"RGBA", "LA", "PA"} or (
        image.mode == "P" and "transparency" in image.info
    )
    if not transparent:
        return image.convert("RGB")
    rgba = image.convert("RGBA")
    background = Image.new("RGB", rgba.size, _WHITE)
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background


@contextlib.contextmanager
def _decoded(data: bytes, what: str) -> Iterator[Image.Image]:
    """Open ``data`` as a picture once its sizes pass; anything wrong, in the checks or in
    the ``with`` body that works on the picture, is ``PictureUnavailable`` naming ``what``.
    """
    if len(data) > MAX_BYTES:
        msg = f"the {what} is {len(data)} bytes, more than the {MAX_BYTES} allowed"
        raise PictureUnavailable(msg)
    try:
        with Image.open(io.BytesIO(data), formats=_FORMATS) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                msg = f"the {what} claims {width}×{height} px, more than {MAX_PIXELS} pixels"
                raise PictureUnavailable(msg)
            yield image
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        msg = f"the {what} claims more pixels than Pillow decodes safely (a decompression bomb?)"
        raise PictureUnavailable(msg) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        msg = f"the {what} does not decode ({type(exc).__name__}: {exc})"
        raise PictureUnavailable(msg) from None


def reencode(data: bytes) -> Jpeg:
    """Return ``data`` as a JPEG at most ``MAX_SIDE_PX`` on its long side, upright.

    An animated picture gives its first frame. Raise ``PictureUnavailable`` for a file
    over ``MAX_BYTES``, a picture over ``MAX_PIXELS``, or anything that does not decode.
    """
    with _decoded(data, "picture") as image:
        # A JPEG decodes straight at a fraction of its size: less memory, less time.
        image.draft("RGB", (MAX_SIDE_PX, MAX_SIDE_PX))
        flat = _flatten(ImageOps.exif_transpose(image))
        flat.thumbnail((MAX_SIDE_PX, MAX_SIDE_PX), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        flat.save(out, "JPEG", quality=JPEG_QUALITY)
    return Jpeg(out.getvalue(), flat.width, flat.height)


STICKER_SIDE_PX: Final = 512
"""The longest side of a sticker a collection keeps."""
STICKER_BYTES: Final = 256 * 1024
"""The largest sticker file a collection keeps."""
THUMBNAIL_SIDE_PX: Final = 128
"""The longest side of a sticker the dashboard shows."""


def sticker_image(data: bytes) -> tuple[bytes, str]:
    """Return a sticker's picture as a collection keeps it, and its file extension.

    Within ``STICKER_SIDE_PX`` and ``STICKER_BYTES`` an animated GIF is kept as it is;
    anything else becomes a PNG (its transparency kept) at most ``STICKER_SIDE_PX``, or a
    JPEG on white when the PNG would be too large. Raise ``PictureUnavailable`` for a
    file that does not decode, or is too large to open (as :func:`reencode`).
    """
    with _decoded(data, "sticker") as image:
        width, height = image.size
        small = max(width, height) <= STICKER_SIDE_PX and len(data) <= STICKER_BYTES
        if image.format == "GIF" and getattr(image, "is_animated", False) and small:
            return data, "gif"
        frame = _first_frame(image, STICKER_SIDE_PX)
    png = _png(frame)
    if len(png) <= STICKER_BYTES:
        return png, "png"
    out = io.BytesIO()
    _flatten(frame).save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue(), "jpg"


def sticker_thumbnail(data: bytes) -> bytes:
    """Return a sticker's first frame as a PNG at most ``THUMBNAIL_SIDE_PX``, transparency
    kept; ``PictureUnavailable`` as :func:`sticker_image` (an animated Telegram sticker,
    Lottie or video, is no picture Pillow knows)."""
    with _decoded(data, "sticker") as image:
        frame = _first_frame(image, THUMBNAIL_SIDE_PX)
    return _png(frame)


def _first_frame(image: Image.Image, side: int) -> Image.Image:
    """Return ``image``'s first frame, upright, in RGBA, at most ``side`` px."""
    frame = ImageOps.exif_transpose(image).convert("RGBA")
    frame.thumbnail((side, side), Image.Resampling.LANCZOS)
    return frame


def _png(frame: Image.Image) -> bytes:
    out = io.BytesIO()
    frame.save(out, "PNG", optimize=True)
    return out.getvalue()


async def to_jpeg(data: bytes) -> Jpeg:
    """Re-encode ``data`` for the model (see :func:`reencode`) off the event loop."""
    return await asyncio.to_thread(reencode, data)
