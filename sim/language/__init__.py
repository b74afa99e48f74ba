"""Words: the sentence parser, canonical sentences and outcome prose, the text view
(docs/sentences.md).

The vocabulary is data (``vocab``); ``parser`` reads a sentence into an ``Intent`` and never
raises; ``phrasing`` writes the canonical sentence of an intent (the parser's inverse) and the
outcome explanations; ``textview`` renders a seat's view as the text a language model reads.
"""
