"""Claims out of a document, each atomic, self-contained and placed (after Claimify).

from verity.extraction import Document, Extractor
found = await Extractor(model, encoder=encoder).extract(Document(text=text))
"""

from verity.extraction.extract import Extraction, Extractor
from verity.extraction.types import Document, ExtractedClaim, SentenceNote, Span

__all__ = ["Document", "ExtractedClaim", "Extraction", "Extractor", "SentenceNote", "Span"]
