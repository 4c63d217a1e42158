"""OpenAI's API: ``errors`` (its error shape, refusal and shared checks), ``embeddings``
(``/v1/embeddings``), ``models`` (``/v1/models``), ``chat`` (``/v1/chat/completions``,
``/v1/completions``) with ``chat_fields`` (their request fields checked).
"""
