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
import io
import warnings
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


def reencode(data: bytes) -> Jpeg:
    """Return ``data`` as a JPEG at most ``MAX_SIDE_PX`` on its long side, upright.

    An animated picture gives its first frame. Raise ``PictureUnavailable`` for a file
    over ``MAX_BYTES``, a picture over ``MAX_PIXELS``, or anything that does not decode.
    """
    if len(data) > MAX_BYTES:
        msg = f"the picture is {len(data)} bytes, more than the {MAX_BYTES} allowed"
        raise PictureUnavailable(msg)
    try:
        with Image.open(io.BytesIO(data), formats=_FORMATS) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                msg = f"the picture claims {width}×{height} px, more than {MAX_PIXELS} pixels"
                raise PictureUnavailable(msg)
            # A JPEG decodes straight at a fraction of its size: less memory, less time.
            image.draft("RGB", (MAX_SIDE_PX, MAX_SIDE_PX))
            upright = ImageOps.exif_transpose(image)
            flat = _flatten(upright)
        flat.thumbnail((MAX_SIDE_PX, MAX_SIDE_PX), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        flat.save(out, "JPEG", quality=JPEG_QUALITY)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        msg = "the picture claims more pixels than Pillow decodes safely (a decompression bomb?)"
        raise PictureUnavailable(msg) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        msg = f"the picture does not decode ({type(exc).__name__}: {exc})"
        raise PictureUnavailable(msg) from None
    return Jpeg(out.getvalue(), flat.width, flat.height)


STICKER_SIDE_PX: Final = 512
"""The longest side of a sticker a collection keeps."""
STICKER_BYTES: Final = 256 * 1024
"""The largest sticker file a collection keeps."""


def sticker_image(data: bytes) -> tuple[bytes, str]:
    """Return a sticker's picture as a collection keeps it, and its file extension.

    Within ``STICKER_SIDE_PX`` and ``STICKER_BYTES`` an animated GIF is kept as it is;
    anything else becomes a PNG (its transparency kept) at most ``STICKER_SIDE_PX``, or a
    JPEG on white when the PNG would be too large. Raise ``PictureUnavailable`` for a
    file that does not decode, or is too large to open (as :func:`reencode`).
    """
    if len(data) > MAX_BYTES:
        msg = f"the sticker is {len(data)} bytes, more than the {MAX_BYTES} allowed"
        raise PictureUnavailable(msg)
    try:
        with Image.open(io.BytesIO(data), formats=_FORMATS) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                msg = f"the sticker claims {width}×{height} px, more than {MAX_PIXELS} pixels"
                raise PictureUnavailable(msg)
            small = max(width, height) <= STICKER_SIDE_PX and len(data) <= STICKER_BYTES
            if image.format == "GIF" and getattr(image, "is_animated", False) and small:
                return data, "gif"
            frame = ImageOps.exif_transpose(image).convert("RGBA")
        frame.thumbnail((STICKER_SIDE_PX, STICKER_SIDE_PX), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        frame.save(out, "PNG", optimize=True)
        if out.tell() <= STICKER_BYTES:
            return out.getvalue(), "png"
        out = io.BytesIO()
        _flatten(frame).save(out, "JPEG", quality=JPEG_QUALITY)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        msg = "the sticker claims more pixels than Pillow decodes safely (a decompression bomb?)"
        raise PictureUnavailable(msg) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        msg = f"the sticker does not decode ({type(exc).__name__}: {exc})"
        raise PictureUnavailable(msg) from None
    return out.getvalue(), "jpg"


async def to_jpeg(data: bytes) -> Jpeg:
    """Re-encode ``data`` for the model (see :func:`reencode`) off the event loop."""
    return await asyncio.to_thread(reencode, data)
