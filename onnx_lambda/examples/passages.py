"""A fixed query set for verifying and benchmarking rerankers: each query with eight passages, one
that answers it, some on its topic that do not, and unrelated ones; short and long, a question
in French, numbers and code among them."""

from __future__ import annotations

QUERIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("How do I reset my password?", (
        "To reset your password, click 'Forgot password' on the sign-in page and follow the "
        "link we email you.",
        "Passwords must be at least twelve characters long and include a number.",
        "Our office is closed on public holidays.",
        "You can change your display name under Settings, then Profile.",
        "Two-factor authentication adds a second step when you sign in.",
        "The cat sat on the mat.",
        "If the reset email does not arrive, check your spam folder or contact support.",
        "Invoices are sent on the first day of every month.",
    )),
    ("What is the boiling point of water?", (
        "Water boils at 100 degrees Celsius at sea level.",
        "At high altitude water boils at a lower temperature because the air pressure is lower.",
        "Ice melts at 0 degrees Celsius.",
        "The Pacific is the largest ocean on Earth.",
        "Drink eight glasses of water a day, some doctors say.",
        "Steam engines turned heat into motion and powered the industrial revolution.",
        "Stock markets fell sharply after the central bank's announcement.",
        "Salt water freezes at a lower temperature than fresh water.",
    )),
    ("Which city is the Eiffel Tower in?", (
        "The Eiffel Tower is a wrought-iron tower on the Champ de Mars in Paris, France.",
        "Big Ben is the nickname of the great bell at the Palace of Westminster in London.",
        "Paris is the capital of France and its largest city.",
        "The tower was built for the 1889 World's Fair.",
        "The Statue of Liberty stands on Liberty Island in New York Harbor.",
        "Binary search runs in logarithmic time.",
        "Visitors can climb the stairs to the second floor or take the lift to the top.",
        "Rome is famous for the Colosseum.",
    )),
    ("how to sort a list in python", (
        "Use sorted(items) to get a new sorted list, or items.sort() to sort the list in place.",
        "def double(x): return x * 2",
        "Python lists can hold values of different types.",
        "SELECT name, email FROM users WHERE active = 1 ORDER BY name;",
        "The python is a large snake found in Africa and Asia.",
        "Pass key=len to sorted() to sort strings by their length.",
        "JavaScript arrays have a sort method that compares elements as strings by default.",
        "Lambda functions scale automatically with incoming traffic.",
    )),
    ("Quelle est la capitale de l'Allemagne ?", (
        "Berlin est la capitale de l'Allemagne.",
        "Der Zug nach Berlin hat zehn Minuten Verspätung.",
        "Munich is the capital of Bavaria.",
        "Le chat dort sur le canapé depuis ce matin.",
        "Germany has sixteen federal states.",
        "Madrid es la capital de España.",
        "The Berlin Wall fell in 1989.",
        "Photosynthesis converts light into chemical energy.",
    )),
    ("symptoms of the flu", (
        "Flu symptoms include fever, cough, sore throat, muscle aches and tiredness.",
        "The patient was prescribed a course of antibiotics.",
        "Vaccines train the immune system to recognise pathogens.",
        "A cold usually comes on gradually, while the flu tends to start suddenly.",
        "The football match ended in a goalless draw.",
        "Wash your hands often to avoid catching a cold.",
        "Birds fly south for the winter.",
        "Influenza is caused by a virus that infects the nose, throat and lungs.",
    )),
)
