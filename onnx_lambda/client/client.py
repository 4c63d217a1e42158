"""``Client(url)``: ``predict`` (``POST /predict``), ``embed`` (a text-embedding model's vectors,
sent as float32 bytes) and ``infer`` (V2 binary tensors), each returning its outputs with the
call's :class:`~.timing.Timing`.

httpx (over httpcore) because it keeps one connection pool, speaks HTTP/2 with ``h2`` and
exposes a per-request ``trace`` hook that times connect / TLS / write / wait / read without
monkeypatching: the caller-side breakdown comes from the client itself.
"""

from __future__ import annotations

import base64
import json
import random
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import httpx
import numpy as np

from onnx_lambda import extras
from onnx_lambda.client import wire
from onnx_lambda.client.auth import Signer, signer
from onnx_lambda.client.errors import ClientError, ThrottledError, from_answer
from onnx_lambda.client.timing import Timing, Trace, timing


class Result(NamedTuple):
    outputs: Any  # {name: array} (infer), an array (.npy, embed) or the JSON answer (predict)
    timing: Timing
    request_id: str | None
    status: int


class Client:
    """One endpoint (an HTTP API, REST API stage or Function URL base URL).

    ``auth``: None, ``"iam"`` (SigV4, botocore's credentials), a bearer token string, or a
    callable ``(method, url, body, headers) -> headers``. ``retries``: how many more times a
    throttled call (429, 503, API Gateway's bare 500) or a connection that never opened is
    tried, with full-jitter exponential backoff from ``backoff_s`` capped at ``backoff_cap_s``;
    our own errors are never retried. ``keepalive=False`` opens a new connection per request.
    ``verify``: a CA bundle path (e.g. the emulator's ``--tls`` certificate) or False.
    ``gzip``: accept gzip-compressed answers (httpx's default; the handler gzips JSON answers
    of 1,400 bytes or more); False asks for them uncompressed (``Accept-Encoding: identity``).
    """

    def __init__(self, url: str, *, auth: str | Signer | None = None, http2: bool = False,
                 timeout: float = 30.0, retries: int = 3, backoff_s: float = 0.05,
                 backoff_cap_s: float = 2.0, keepalive: bool = True,
                 verify: bool | str | ssl.SSLContext = True, model: str | None = None,
                 region: str | None = None, gzip: bool = True) -> None:
        self.url = url.rstrip("/")
        self._sign = signer(auth, self.url, region)
        self.retries, self.backoff_s, self.backoff_cap_s = retries, backoff_s, backoff_cap_s
        self._model = model
        limits = httpx.Limits(max_keepalive_connections=20 if keepalive else 0)
        if isinstance(verify, str):  # a CA bundle: httpx 0.28 wants it as a context
            verify = ssl.create_default_context(cafile=verify)
        try:
            self._http = httpx.Client(http2=http2, timeout=timeout, limits=limits,
                                      verify=verify,
                                      headers=None if gzip else {"accept-encoding": "identity"})
        except ImportError as error:  # httpx names the extra: h2 is in onnx-lambda[client]
            raise ImportError(f"{error} ({extras.install_line('client')})") from None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def model(self) -> str:
        """The served model's name (``GET /health``), unless given."""
        if self._model is None:
            self._model = str(self.get("/health").outputs["model"])
        return self._model

    def get(self, path: str) -> Result:
        response, result = self.request("GET", path)
        return result._replace(outputs=response.json())

    def metadata(self) -> dict[str, Any]:
        return dict(self.get(f"/v2/models/{self.model}").outputs)

    def predict(self, inputs: Any, *, npy: bool | None = None,
                parameters: Mapping[str, Any] | None = None) -> Result:
        """``POST /predict``: a numpy array goes as ``.npy`` (and one comes back), anything
        else as ``{"inputs": ..., "parameters": ...}`` JSON (``parameters``: the pipeline's,
        e.g. ``top_k``; JSON only)."""
        npy = isinstance(inputs, np.ndarray) if npy is None else npy
        if npy:
            if parameters:
                raise ValueError("parameters go in a JSON request: pass npy=False")
            headers = {"content-type": wire.NPY, "accept": wire.NPY}
            response, result = self.request("POST", "/predict", wire.npy_bytes(inputs), headers)
            return result._replace(outputs=wire.npy_array(response.content))
        document: dict[str, Any] = {"inputs": _jsonable(inputs)}
        if parameters:
            document["parameters"] = dict(parameters)
        payload = json.dumps(document, separators=(",", ":")).encode()
        response, result = self.request("POST", "/predict", payload,
                                        {"content-type": wire.JSON})
        return result._replace(outputs=response.json())

    def embed(self, texts: str | Sequence[str]) -> Result:
        """A text-embedding model's vectors (``POST /predict``): ``outputs`` is a float32 array
        ``[len(texts), dimensions]``, sent as base64 of the float32 bytes
        (``encoding_format: base64``): exact, and a quarter of the decimals' bytes."""
        sentences = [texts] if isinstance(texts, str) else list(texts)
        result = self.predict(sentences, parameters={"encoding_format": "base64"})
        answer = result.outputs
        vectors = np.zeros((0, answer["dimensions"]), np.float32)
        if answer["embeddings"]:
            vectors = np.stack([np.frombuffer(base64.b64decode(row, validate=True), "<f4")
                                for row in answer["embeddings"]])
        return result._replace(outputs=vectors)

    def infer(self, inputs: Mapping[str, Any], *, binary: bool = True,
              outputs: list[str] | None = None) -> Result:
        """``POST /v2/models/{model}/infer``: binary tensors unless ``binary=False``."""
        payload, headers = wire.v2_request(inputs, binary=binary, outputs=outputs)
        response, result = self.request("POST", f"/v2/models/{self.model}/infer", payload,
                                        headers)
        return result._replace(outputs=wire.v2_response(response.content, response.headers))

    def request(self, method: str, path: str, body: bytes = b"",
                headers: dict[str, str] | None = None) -> tuple[httpx.Response, Result]:
        """One call with its retries: the successful response (for the caller to decode) and
        its Result (``outputs`` None); any other answer raises :class:`ClientError`."""
        url, attempt = self.url + path, 0
        while True:
            attempt += 1
            try:
                response, result = self._once(method, url, body, dict(headers or {}), attempt)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as error:
                # the request never left: safe to send again, unless TLS refused the server
                if attempt > self.retries or _tls_refused(error):
                    raise
                self._pause(attempt, None)
                continue
            if response.status_code < 400:
                return response, result
            error = from_answer(response.status_code, response.content, response.headers,
                                attempt)
            if not isinstance(error, ThrottledError) or attempt > self.retries:
                raise error
            self._pause(attempt, response.headers.get("retry-after"))

    def _once(self, method: str, url: str, body: bytes, headers: dict[str, str],
              attempt: int) -> tuple[httpx.Response, Result]:
        if self._sign is not None:
            headers = self._sign(method, url, body, headers)
        trace = Trace()
        started = time.perf_counter()
        response = self._http.request(method, url, content=body or None, headers=headers,
                                      extensions={"trace": trace})
        total = (time.perf_counter() - started) * 1e3
        response.read()  # the bytes on the wire (gzip's, when compressed), not the decoded ones
        received = response.num_bytes_downloaded + sum(len(k) + len(v) + 4 for k, v in
                                                       response.headers.raw)
        sent = len(body) + sum(len(k) + len(v) + 4 for k, v in response.request.headers.raw)
        spent = timing(trace, total, response.headers, protocol=response.http_version,
                       attempts=attempt, sent=sent, received=received)
        return response, Result(None, spent, response.headers.get("x-request-id"),
                                response.status_code)

    def _pause(self, attempt: int, retry_after: str | None) -> None:
        delay = random.uniform(0, min(self.backoff_cap_s, self.backoff_s * 2 ** (attempt - 1)))
        if retry_after and retry_after.isdigit():
            delay = max(delay, min(float(retry_after), self.backoff_cap_s))
        time.sleep(delay)


def _tls_refused(error: BaseException) -> bool:
    """A certificate or handshake failure somewhere down the chain (httpx wraps httpcore's
    error, which wraps ssl's): sending again would fail the same way."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


__all__ = ["Client", "ClientError", "Result", "ThrottledError"]
