"""Tiny NLI checkpoints built on the spot, for tests of what loads one.

    folder = bert(tmp_path / "bert", [0.0, 5.0, 0.0], words=["paris", "is"])  # contradicts

A one-layer BERT sequence classifier whose classifier weights are zero, so its answer is
its bias alone, whatever the text: a real checkpoint folder, loaded and run for real by
transformers, whose verdict a test decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

NLI_NAMES = {0: "entailment", 1: "contradiction", 2: "neutral"}


def bert(
    folder: Path,
    bias: list[float],
    names: dict[int, str] | None = NLI_NAMES,
    *,
    words: Sequence[str] = (),
    positions: int = 128,
) -> str:
    """A one-layer BERT classifier that answers by its classifier bias alone."""
    import torch
    import transformers

    folder.mkdir(parents=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = transformers.BertTokenizer(str(vocab))
    labels = (
        {} if names is None else {"id2label": names, "label2id": {v: k for k, v in names.items()}}
    )
    config = transformers.BertConfig(
        vocab_size=len(words) + 5, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=positions, num_labels=len(bias), **labels,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
