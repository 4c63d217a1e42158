"""text-embeddings-inference's API: ``errors`` (its error shape, refusal and body check),
``fields`` (the fields and tokenizer truncation its routes share), ``embed`` (``/embed``,
``/tokenize``), ``rerank`` (``/rerank``), ``info`` (``/info``).
"""
