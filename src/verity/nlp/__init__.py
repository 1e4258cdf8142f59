"""Language tools: sentences and chunks, named entities with confidences, sentence vectors.

Each loads its model on first use, once per process.

    from verity.nlp import EntityRecognizer, chunk_text, default_encoder, split_sentences
    split_sentences("One. Two.")             # ['One.', 'Two.']
    EntityRecognizer().extract("Paris is in France.")
    default_encoder().encode(["a sentence"]).shape   # (1, 384)
"""

from verity.nlp.embed import Encoder, default_encoder
from verity.nlp.ner import EntityRecognizer, EntitySpan, NerResult, TokenScore
from verity.nlp.text import chunk_text, split_sentences

__all__ = [
    "Encoder",
    "EntityRecognizer",
    "EntitySpan",
    "NerResult",
    "TokenScore",
    "chunk_text",
    "default_encoder",
    "split_sentences",
]
