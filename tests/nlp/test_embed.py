from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from verity.errors import BadInputError, ConfigError
from verity.nlp import embed
from verity.nlp.embed import Encoder, default_encoder, default_model_path
from verity.paths import cache_path

PARAPHRASES = ("The Eiffel Tower is in Paris.", "Paris is home to the Eiffel Tower.")
UNRELATED = "Bananas are a good source of potassium."


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    enc = default_encoder()
    enc.warm_up()
    return enc


@pytest.mark.integration
def test_rows_are_float32_and_unit_length(encoder):
    vectors = encoder.encode([*PARAPHRASES, UNRELATED])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.dimension == 384


@pytest.mark.integration
def test_paraphrases_are_closer_than_unrelated(encoder):
    a, b, c = encoder.encode([*PARAPHRASES, UNRELATED])
    assert encoder.cosine(a, b) > 0.7
    assert encoder.cosine(a, b) > encoder.cosine(a, c) + 0.4
    assert encoder.cosine(b, c) < 0.3


@pytest.mark.integration
def test_cosine_matches_numpy(encoder):
    vectors = encoder.encode([*PARAPHRASES, UNRELATED, "Gustave Eiffel was an engineer."])
    a, b = vectors[:2], vectors[2:]
    expected = np.array(
        [[float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y)) for y in b] for x in a]
    )
    np.testing.assert_allclose(encoder.cosine_matrix(a, b), expected, atol=1e-6)
    assert encoder.cosine(a[0], b[1]) == pytest.approx(expected[0, 1], abs=1e-6)


@pytest.mark.integration
def test_encoding_is_deterministic_and_order_preserving(encoder):
    one = encoder.encode([UNRELATED])
    both = encoder.encode([PARAPHRASES[0], UNRELATED])
    np.testing.assert_allclose(both[1], one[0], atol=1e-5)


@pytest.mark.integration
def test_empty_input_and_single_string(encoder):
    assert encoder.encode([]).shape == (0, 384)
    with pytest.raises(BadInputError):
        encoder.encode("not a list")  # type: ignore[arg-type]


@pytest.mark.integration
def test_default_model_extracted_once_into_cache(encoder):
    folder = default_model_path()
    assert folder == cache_path("models", "all-MiniLM-L6-v2")
    assert (folder / "modules.json").is_file()
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert default_model_path() == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    # no half-extracted temporary folders are left beside it
    assert [p.name for p in folder.parent.iterdir() if p.name.startswith(".")] == []
    # the noisy model package was located, never imported
    assert "all_minilm_l6_v2" not in sys.modules


@pytest.mark.integration
def test_local_path_shares_the_loaded_model(encoder):
    by_path = Encoder(default_model_path())
    assert by_path._model() is encoder._model()
    np.testing.assert_allclose(by_path.encode([UNRELATED]), encoder.encode([UNRELATED]), atol=1e-6)
    assert by_path.to_dict()["model"] == str(default_model_path())


@pytest.mark.integration
def test_loading_prints_nothing_on_stdout(tmp_path):
    # A fresh process with a fresh cache: extraction and loading must keep stdout clean,
    # because the CLI prints JSON there.
    code = textwrap.dedent(
        """
        from verity.nlp.embed import default_encoder
        default_encoder().encode(["hello"])
        """
    )
    env = {"VERITY_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert (tmp_path / "models" / "all-MiniLM-L6-v2" / "modules.json").is_file()


def test_default_encoder_is_shared():
    assert default_encoder() is default_encoder()


def test_missing_model_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        Encoder(tmp_path / "nowhere").encode(["x"])


def test_cosine_by_hand():
    assert Encoder.cosine([1, 0], [1, 1]) == pytest.approx(1 / np.sqrt(2))
    assert Encoder.cosine([0, 0], [1, 1]) == 0.0
    with pytest.raises(BadInputError):
        Encoder.cosine([1, 0], [1, 0, 0])
    np.testing.assert_allclose(
        Encoder.cosine_matrix([[3, 4]], [[3, 4], [-4, 3], [0, 0]]), [[1.0, 0.0, 0.0]], atol=1e-7
    )


def test_constructor_is_cheap():
    before = dict(embed._models)
    Encoder("/some/where/else")
    assert embed._models == before


def test_remembered_vectors_are_the_encoded_ones_and_only_new_texts_are_encoded(
    encoder, monkeypatch
):
    from verity.nlp import embed

    texts = ["Paris is in France.", "The Seine flows through Paris.", "Paris is in France."]
    plain = encoder.encode(texts)
    first = encoder.encode(texts, remember=True)
    assert np.allclose(first, plain, atol=1e-6)
    asked: list[list[str]] = []
    real = embed.Encoder.encode

    def spy(self, texts, *, remember=False):
        if not remember:
            asked.append(list(texts))
        return real(self, texts, remember=remember)

    monkeypatch.setattr(embed.Encoder, "encode", spy)
    again = encoder.encode([*texts, "Lyon is in France."], remember=True)
    assert asked == [["Lyon is in France."]]
    assert np.allclose(again[:3], first, atol=1e-6)


def test_the_memory_is_bounded(encoder, monkeypatch):
    from verity.nlp import embed

    monkeypatch.setattr(embed, "REMEMBERED", 2)
    encoder.encode(["one", "two", "three"], remember=True)
    assert len(embed._memory[str(encoder.model)]) == 2


def test_batches_go_longest_first_and_close_before_padding_passes_the_budget():
    from verity.nlp.embed import BATCH_CHARS, LONGEST_CHARS, padded_batches

    assert (BATCH_CHARS, LONGEST_CHARS) == (4096, 1200)
    # 3000 counts as 1200 (the model reads no more): three such texts fit 4096, a fourth
    # would not. A batch is as wide as its first text: 1300 opens one 1200 wide, and the
    # two short ones join it while three times 1200 stays within the budget.
    lengths = [5, 3000, 10, 2000, 1500, 1300]
    assert padded_batches(lengths, most=32) == [[1, 3, 4], [5, 2, 0]]
    assert padded_batches([5, 2000, 2000, 2000, 2000, 10], most=32) == [[1, 2, 3], [4, 5, 0]]
    assert padded_batches([10] * 5, most=2) == [[0, 1], [2, 3], [4]]
