"""Encoding time with one padded batch against batches by length (`padded_batches`).

    .venv/bin/python bench/encoder_batches.py

Three sets of texts as ZoFia's keyword scoring sends them: short entity names, local
contexts of three sentences, and a mix of both with one whole article. Each is encoded
with sentence-transformers' own batching (up to 32 texts padded to the longest) and with
verity's `Encoder`, which batches longest first within `BATCH_CHARS`. Prints seconds per
call (mean of three after a warm-up) and the ratio.
"""

from __future__ import annotations

import time

import numpy as np

from verity.nlp.embed import Encoder


def timed(call, texts: list[str]) -> float:  # type: ignore[no-untyped-def]
    call(texts[:4])
    started = time.perf_counter()
    for _ in range(3):
        call(texts)
    return (time.perf_counter() - started) / 3


def main() -> None:
    encoder = Encoder()
    model = encoder._model()
    names = [f"Entity number {i}" for i in range(64)]
    contexts = ["A local context of three sentences about something that happened. " * 3] * 40
    sets = {
        "names": names,
        "contexts": contexts,
        "mixed": names[:30] + contexts[:10] + ["word " * 400],
    }
    print(
        f"{'texts':9} {'n':>3} {'one batch s':>11} {'by length s':>11} {'ratio':>6} {'max diff':>9}"
    )
    for name, texts in sets.items():

        def plain(t: list[str]) -> np.ndarray:
            return model.encode(t, batch_size=32, normalize_embeddings=True)

        before, after = timed(plain, texts), timed(encoder.encode, texts)
        diff = float(np.abs(plain(texts) - encoder.encode(texts)).max())
        ratio = before / after
        print(f"{name:9} {len(texts):>3} {before:>11.3f} {after:>11.3f} {ratio:>6.1f} {diff:>9.1e}")


if __name__ == "__main__":
    main()
