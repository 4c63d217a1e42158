"""The protocols the handler speaks, one module or folder each, every route a function
``(served, request, params, timer, context) -> Response`` that ``handler.routes`` names:
``predict`` (our ``/predict`` and ``/health``, our error shape), ``v2`` (the Open Inference
Protocol), ``openai`` (OpenAI's API), ``tei`` (text-embeddings-inference's); ``served`` (the
``Served`` view every route takes) and ``embedding`` (what the two embedding APIs share).
"""
