"""text-embeddings-inference's API."""
