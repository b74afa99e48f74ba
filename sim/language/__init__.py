"""Words: the sentence parser, canonical sentences and outcome prose, the text view
(docs/sentences.md).

The vocabulary is data (``vocab``); ``parser`` reads a sentence into an ``Intent`` and never
raises; ``phrasing`` writes the canonical sentence of an intent (the parser's inverse) and the
outcome explanations; ``textview`` renders a seat's view as the text a language model reads;
``worldwords`` refuses a world file whose names a sentence could not tell apart (imported here,
so that the world-file reader of ``sim.rules`` has the check whenever ``sim`` is imported).
"""

from . import worldwords  # noqa: F401 - registers the world-file word check
