"""``onnx-lambda regions``: which AWS region answers this caller fastest, measured from here.

- ``endpoints``: the commercial regions and the host each is reached at (injectable: tests put
  loopback TLS servers in their place);
- ``measure``: TCP connect, TLS handshake and one credential-free HTTPS round trip per sample,
  standard library only (no AWS SDK, so no credentials can be read);
- ``report``: the ranked table, what the network leaves of a latency budget, and the JSON that
  ``tune --network-ms`` / ``simulate --network-ms`` read back;
- ``deployed``: ``--endpoint REGION=URL`` through ``probe``; ``commands`` is the CLI.
"""
