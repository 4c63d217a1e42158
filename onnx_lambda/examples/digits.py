"""``digits``: a classifier of scikit-learn's bundled 8×8 handwritten digits (no download).

Standardisation + multinomial logistic regression, converted with skl2onnx (ZipMap disabled, so
the model outputs a plain ``probabilities`` tensor the classifier pipeline reads). The build
fails unless the ONNX model agrees with scikit-learn on every sample of the held-out split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
from rich.console import Console

from onnx_lambda.build_model.errors import AccuracyGateError
from onnx_lambda.build_model.spec import ModelSpec

INPUT = "input"
SCORES = "probabilities"
SEED = 0
TEST_FRACTION = 0.25


def prepare(workdir: Path, console: Console) -> ModelSpec:
    # scikit-learn and skl2onnx are build-time tools, only needed by this example.
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    with console.status("digits: training and converting"):
        features, targets = load_digits(return_X_y=True)
        x_train, x_test, y_train, y_test = train_test_split(
            features.astype(np.float32), targets, test_size=TEST_FRACTION, random_state=SEED,
            stratify=targets)
        classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
        classifier.fit(x_train, y_train)
        onnx_model = convert_sklearn(
            classifier, initial_types=[(INPUT, FloatTensorType([None, features.shape[1]]))],
            options={LogisticRegression: {"zipmap": False}})
        path = workdir / "digits.onnx"
        path.write_bytes(onnx_model.SerializeToString())
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        onnx_labels = session.run(["label"], {INPUT: x_test})[0]
    accuracy = float(np.mean(onnx_labels == y_test))
    agreement = float(np.mean(onnx_labels == classifier.predict(x_test)))
    console.print(f"    digits: held-out accuracy {accuracy:.4f}, agreement with scikit-learn "
                  f"{agreement:.2%} on {len(y_test)} test samples", highlight=False)
    if agreement < 1.0:
        raise AccuracyGateError(f"digits: ONNX predictions agree with scikit-learn on only "
                                f"{agreement:.2%} of the test split (need 100 %)")
    return ModelSpec(
        source=path, name="digits", pipeline="classifier",
        pipeline_options={"output": SCORES, "probabilities": True, "top_k": 3},
        labels=tuple(str(c) for c in classifier.classes_),
        example=[x_test[0].tolist()],
        samples=[{INPUT: x_test}],
        comparable=lambda outputs, feeds: outputs[SCORES],
        classifier=True,
        metadata={"dataset": "scikit-learn load_digits", "train_samples": len(y_train),
                  "test_samples": len(y_test), "test_accuracy": round(accuracy, 4),
                  "sklearn_agreement": agreement,
                  "estimator": "StandardScaler + LogisticRegression"})
