"""A fixed, varied set of sentences for verifying and benchmarking text-embedding models: short
and long, questions, commands, numbers, code, non-English, typos, emoji, one past 256 tokens
(``SENTENCES``, and with the reranker's passages ``gate_texts()``, which builds tune and judge
on); and ``UNSEEN``, texts that only the acceptance bench judges on."""

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


# Texts that informed nothing: written on 2026-12-07 after the MiniLM default (its fp32 nodes,
# its smoothing, its length rule) had been chosen, and never read per text while choosing; the
# acceptance bench judges on them beside the held-out half (issue 32: the held-out half had
# been looked at text by text). Every style again, and many lengths near a length rule's cut.
UNSEEN: tuple[str, ...] = (
    "Yes",
    "Thanks!",
    "refund",
    "Good morning",
    "Is it safe?",
    "Call me later.",
    "How tall is Mount Everest?",
    "My package never arrived.",
    "The printer is out of ink again.",
    "Cancel my subscription, please.",
    "Which planet has the most moons?",
    "The bridge was closed for repairs overnight.",
    "Tomatoes grow best in full sun.",
    "Our team shipped the release two days early.",
    "Is this jacket waterproof or only water resistant?",
    "The orchestra tuned their instruments before the concert began.",
    "A leap year has 366 days.",
    "Version 3.2.1 fixes a memory leak in the parser.",
    "for i in range(10): print(i ** 2)",
    "git commit -m 'fix off-by-one in pagination'",
    "{\"user\": 42, \"status\": \"active\"}",
    "Total: $1,249.99 (incl. 20% VAT)",
    "Meeting moved to 3:30 pm on 14/02/2027.",
    "https://example.com/docs/getting-started?lang=en",
    "Il pleut depuis trois jours sans interruption.",
    "Ich habe meinen Schlüssel im Büro vergessen.",
    "La biblioteca abre a las nueve de la mañana.",
    "Questo ristorante serve la migliore pizza della città.",
    "東京は日本の首都です。",
    "wat r u doin 2nite??",
    "So proud of my sister today 🥳🎓",
    "Low battery. Connect your charger.",
    "The defendant pleaded not guilty to all charges.",
    "Glaciers in the Alps have lost half their volume since 1900.",
    "Our quarterly revenue grew by eight percent, driven mostly by subscriptions in Europe and "
    "a stronger than expected holiday season in North America.",
    "When you first set up the device, hold the power button for five seconds until the light "
    "blinks blue, then open the companion app and follow the pairing instructions on screen.",
    "The study followed 2,400 adults for ten years and found that those who walked at least "
    "thirty minutes a day had a noticeably lower risk of heart disease, even after accounting "
    "for diet, smoking and income.",
    "Honeybees communicate the direction and distance of flowers to their hive mates through a "
    "waggle dance, a behaviour first decoded by Karl von Frisch in the 1940s.",
    "SELECT COUNT(*) FROM orders WHERE created_at > NOW() - INTERVAL '7 days';",
    "Traceback (most recent call last): KeyError: 'timeout'",
)
