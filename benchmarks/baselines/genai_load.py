"""BASELINE — onnxruntime-genai's cold start: import it, open the model folder (``og.Model``:
its ``genai_config.json`` and the ONNX file it names), generate one token from the prompt ids.

    python -m benchmarks.baselines.genai_load FOLDER IDS

IDS: the prompt's token ids, comma-separated (``benchmarks.generation`` passes the ids of the
example ours warms up on). Prints the same JSON line as ``baselines.floor``: ``imports``,
``model-load`` (``og.Model``), ``first-request`` (generator, prefill, first token), ``rss_mb``.
"""

from __future__ import annotations

import time

_STARTED_AT = time.time()
_T0 = time.perf_counter()

import sys  # noqa: E402

import onnxruntime_genai as og  # noqa: E402  (timed: what its users import)


def main(folder: str, ids: str) -> None:
    imported = time.perf_counter()
    model = og.Model(folder)
    loaded = time.perf_counter()
    prompt = [int(i) for i in ids.split(",")]
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + 1, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    generator.generate_next_token()
    generator.get_next_tokens()
    done = time.perf_counter()
    # the report's own import, after the last mark: not the baseline's cost
    from benchmarks.rss import print_floor_line

    print_floor_line(_STARTED_AT, _T0, imported, loaded, done)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
