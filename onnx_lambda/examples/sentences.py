"""A fixed, varied set of sentences for verifying and benchmarking text-embedding models: short
and long, questions, commands, numbers, code, non-English, typos, emoji, one past 256 tokens."""

from __future__ import annotations

SENTENCES: tuple[str, ...] = (
    "The cat sat on the mat.",
    "Quantum computers use qubits to explore many states at once.",
    "I love pizza!",
    "How do I reset my password?",
    "Stock markets fell sharply after the central bank's announcement.",
    "The mitochondria is the powerhouse of the cell.",
    "Le chat dort sur le canapé depuis ce matin.",
    "Ok",
    "Please send the quarterly report by Friday afternoon, including the revised budget figures, "
    "the hiring plan for the new office and a short summary of the risks we discussed.",
    "What's the weather like in Paris tomorrow?",
    "Machine learning models can inherit biases from their training data.",
    "She sells sea shells by the sea shore.",
    "1234 5678 90",
    "Error: connection refused on port 8080",
    "def double(x): return x * 2",
    "The quick brown fox jumps over the lazy dog.",
    "An apple a day keeps the doctor away.",
    "Lambda functions scale automatically with incoming traffic.",
    "Why is the sky blue?",
    "I am not happy with this product at all.",
    "This is the best day of my life! 🎉",
    "Deep learning transformed computer vision and speech recognition.",
    "The Eiffel Tower is in Paris.",
    "Photosynthesis converts light into chemical energy.",
    "Can you recommend a good science-fiction book?",
    "Traffic was terrible this morning on the highway.",
    "The committee postponed the vote until next week.",
    "Neural networks are built from layers of simple units.",
    "He plays bass guitar in a jazz band.",
    "The restaurant is closed on Mondays.",
    "A journey of a thousand miles begins with a single step.",
    "Rising sea levels threaten coastal cities.",
    "Where can I buy cheap flights to Tokyo?",
    "The patient was prescribed a course of antibiotics.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Our servers are down for scheduled maintenance.",
    "The football match ended in a goalless draw.",
    "She graduated with honours in theoretical physics.",
    "The museum exhibits ancient Egyptian artifacts.",
    "Open the pod bay doors, HAL.",
    "Hello, world!",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Interest rates are expected to rise again this year.",
    "My flight was delayed by three hours.",
    "Binary search runs in logarithmic time.",
    "Children were playing football in the park.",
    "Vaccines train the immune system to recognise pathogens.",
    "The novel has been translated into twenty languages.",
    "Please keep your seatbelt fastened while seated.",
    "Electric cars are becoming more affordable.",
    "Invoice #4521 is 30 days overdue.",
    "The violinist performed a breathtaking solo.",
    "Der Zug nach Berlin hat zehn Minuten Verspätung.",
    "¿Dónde está la estación de tren?",
    "thsi sentense has sevral typos in it",
    "SELECT name, email FROM users WHERE active = 1;",
    "GPU prices dropped 20% in Q3 2024.",
    "Turn left at the second traffic light, then continue for 500 metres.",
    "Nothing.",
    " ".join(["This very long passage repeats itself to test truncation at the model's limit."]
             * 30),
)


def gate_texts() -> tuple[str, ...]:
    """The text examples' gate set: ``SENTENCES`` (short queries, commands, numbers, code,
    non-English, typos, emoji, one past 256 tokens) and the reranker's passages (longer
    answers and distractors), each once. ``gate.split`` interleaves it, so the tuning half and
    the held-out half both get every style."""
    from onnx_lambda.examples.passages import QUERIES

    passages = [p for _, candidates in QUERIES for p in candidates if p not in SENTENCES]
    return (*SENTENCES, *dict.fromkeys(passages))
