"""ToE's evaluation network: its invariances, Eq. 6 by hand, packing, and that it learns."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
from torch.nn import functional

from verity.errors import BadInputError
from verity.methods.toe.evalnet import (
    CREDIBILITY,
    HYPERPARAMETERS,
    RELEVANCE,
    SLOTS,
    STANCE,
    EvalNet,
    eval_loss,
    fit,
    mean_loss,
    pack,
    score,
)

SUPPORT, REFUTE, NEUTRAL = 0, 1, 2  # rows of `EvalNet.tracks`


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # Two torch threads fighting other processes for two cores run ten times slower.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def item(stance: int, source: int = 0, relevance: float = 0.5, credibility: float = 0.5):
    one_hot = [1.0 if i == source else 0.0 for i in range(5)]
    return [float(stance), *one_hot, relevance, credibility]


MIXED = [
    item(1, 0, 0.9, 0.8),
    item(-1, 3, 0.7, 0.9),
    item(0, 2, 0.4, 0.6),
    item(1, 1, 0.6, 0.3),
    item(-1, 4, 0.2, 0.5),
    item(1, 3, 0.8, 0.95),
    item(0, 0, 0.3, 0.2),
]


def batch(*sets, claim_seed: int = 0):
    packed = [pack(s) for s in sets]
    claim = torch.rand(len(sets), 12, generator=torch.Generator().manual_seed(claim_seed))
    return claim, torch.stack([e for e, _ in packed]), torch.stack([m for _, m in packed])


@pytest.fixture
def net() -> EvalNet:
    return EvalNet(seed=0).eval()


def test_shapes_and_probabilities(net: EvalNet) -> None:
    claim, evidence, mask = batch(MIXED, MIXED[:2], [], MIXED * 3)
    v, r = net(claim, evidence, mask)
    assert v.shape == r.shape == (4,)
    assert bool(((v > 0) & (v < 1) & (r > 0) & (r < 1)).all())
    assert net.tracks(claim, evidence, mask).shape == (4, 3, 64)


def test_shuffling_slots_changes_nothing(net: EvalNet) -> None:
    claim, evidence, mask = batch(MIXED)
    order = torch.randperm(SLOTS, generator=torch.Generator().manual_seed(3))
    assert not torch.equal(mask, mask[:, order])  # items really moved, pads among them
    v, r = net(claim, evidence, mask)
    v2, r2 = net(claim, evidence[:, order], mask[:, order])
    assert torch.allclose(v, v2, atol=1e-5) and torch.allclose(r, r2, atol=1e-5)


def test_padded_slot_content_changes_nothing(net: EvalNet) -> None:
    claim, evidence, mask = batch(MIXED)
    garbage = evidence.clone()
    garbage[0, len(MIXED) :] = torch.randn(SLOTS - len(MIXED), 8) * 100
    garbage[0, -1] = float("nan")
    garbage[0, len(MIXED) : len(MIXED) + 3, STANCE] = 1.0  # would join the support track
    v, r = net(claim, evidence, mask)
    v2, r2 = net(claim, garbage, mask)
    assert torch.allclose(v, v2, atol=1e-6) and torch.allclose(r, r2, atol=1e-6)


def test_editing_a_refuting_item_leaves_the_other_tracks_alone(net: EvalNet) -> None:
    edited = [row[:] for row in MIXED]
    edited[1] = item(-1, 0, 0.05, 0.1)  # the refuting fact-check becomes a weak web page
    claim, evidence, mask = batch(MIXED, edited)
    tracks = net.tracks(claim, evidence, mask)
    assert torch.allclose(tracks[0, SUPPORT], tracks[1, SUPPORT], atol=1e-6)
    assert torch.allclose(tracks[0, NEUTRAL], tracks[1, NEUTRAL], atol=1e-6)
    assert (tracks[0, REFUTE] - tracks[1, REFUTE]).abs().max() > 1e-4
    v, _ = net(claim, evidence, mask)
    assert abs((v[0] - v[1]).item()) > 0  # and the verdict does see the refuting side


def test_empty_tracks_are_zero_and_an_empty_set_is_finite(net: EvalNet) -> None:
    claim, evidence, mask = batch([], [item(1), item(1, 2, 0.9, 0.9)])
    tracks = net.tracks(claim, evidence, mask)
    assert torch.equal(tracks[0], torch.zeros(3, 64))
    assert torch.equal(tracks[1, REFUTE], torch.zeros(64))
    assert torch.equal(tracks[1, NEUTRAL], torch.zeros(64))
    assert tracks[1, SUPPORT].abs().sum() > 0
    net.train()
    v, r = net(claim, evidence, mask)
    assert bool(torch.isfinite(v).all() and torch.isfinite(r).all())
    eval_loss(v, r, torch.tensor([0.5, 0.9]), torch.tensor([0.1, 0.6])).backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in net.parameters() if p.grad is not None)


def test_a_lone_item_track_is_its_gate_weight_times_its_attended_value(net: EvalNet) -> None:
    lone = item(1, 3, 0.9, 0.7)
    claim, evidence, mask = batch([lone, item(-1), item(0), item(-1, 2, 0.1, 0.2)])
    with torch.no_grad():
        vector = net.tracks(claim, evidence, mask)[0, SUPPORT]
        row = torch.tensor([lone])
        # Attention over a single key returns that key's value, projected out.
        attention = net.attention[SUPPORT]
        # The packed input projection holds W_q, W_k, W_v; rows 128: are W_v.
        value = functional.linear(
            net.evidence_encoder(row), attention.in_proj_weight[128:], attention.in_proj_bias[128:]
        )
        expected = net.gate(row)[0] * attention.out_proj(value)[0]
    assert torch.allclose(vector, expected, atol=1e-5)


def test_item_count_is_only_visible_with_track_counts() -> None:
    one, three = [item(1, 0, 0.8, 0.9)], [item(1, 0, 0.8, 0.9)] * 3
    claim, evidence, mask = batch(one, three)
    v, r = EvalNet(seed=0).eval()(claim[:1].expand(2, 12), evidence, mask)
    # A masked mean of identical items is the same for one or three of them.
    assert torch.allclose(v[0], v[1], atol=1e-6) and torch.allclose(r[0], r[1], atol=1e-6)
    v, r = EvalNet(seed=0, track_counts=True).eval()(claim[:1].expand(2, 12), evidence, mask)
    assert abs((r[0] - r[1]).item()) > 1e-5
    assert EvalNet().hyperparameters() == HYPERPARAMETERS
    assert EvalNet(track_counts=True).hyperparameters()["fusion"] == [259, 128, 64]


def test_pack_pads_and_keeps_the_top_20_by_relevance_times_credibility() -> None:
    evidence, mask = pack([])
    assert evidence.shape == (20, 8) and not bool(mask.any())
    # Item i has relevance (i + 1) / 25 and credibility 1, so quality 0.04, 0.08, ..., 1.0,
    # except item 0 (0.5 x 0.5 = 0.25) and item 7 (1.0 x 0.24, tied with item 5's 0.24).
    items = [item(1, 0, (i + 1) / 25, 1.0) for i in range(25)]
    items[0] = item(-1, 1, 0.5, 0.5)
    items[7] = item(0, 2, 1.0, 0.24)
    evidence, mask = pack(items)
    assert bool(mask.all())
    # Dropped: the four lowest (items 1-4) and the later of the tie at 0.24 (item 7).
    kept = [0, 5, 6, *range(8, 25)]
    assert torch.equal(evidence, torch.tensor([items[i] for i in kept]))


def test_pack_keeps_the_earlier_of_tied_items_in_order() -> None:
    items = [item(1, 0, 0.5, 0.5) for _ in range(22)]
    for i, row in enumerate(items):
        row[RELEVANCE] = 0.5 if i % 2 else 0.25  # odd items better; evens tie among themselves
        row[CREDIBILITY] = 1.0
    evidence, _ = pack(items)
    expected = [i for i in range(22) if i % 2] + [0, 2, 4, 6, 8, 10, 12, 14, 16]
    assert torch.equal(evidence, torch.tensor([items[i] for i in sorted(expected)]))


@pytest.mark.parametrize(
    "bad",
    [
        [1, 1, 0, 0, 0, 0, 0.5],  # 7 features
        [1, 1, 0, 0, 0, 0, 0.5, 0.5, 0.1],  # 9 features
        [0.5, 1, 0, 0, 0, 0, 0.5, 0.5],  # stance between labels
        [1, 1, 1, 0, 0, 0, 0.5, 0.5],  # two source types
        [1, 1, 0, 0, 0, 0, 1.5, 0.5],  # relevance above 1
        [1, 1, 0, 0, 0, 0, 0.5, float("nan")],
        ["support", 1, 0, 0, 0, 0, 0.5, 0.5],
        "abcdefgh",
    ],
)
def test_pack_refuses_rows_that_break_the_layout(bad) -> None:
    with pytest.raises(BadInputError):
        pack([item(1), bad])


def test_eq6_against_hand_computed_bce() -> None:
    v_hat, r_hat = [0.8, 0.3], [0.6, 0.9]
    v_t, r_t = [1.0, 0.2], [0.7, 0.5]

    def bce(p: float, t: float) -> float:
        return -(t * math.log(p) + (1 - t) * math.log(1 - p))

    expected = sum(bce(p, t) for p, t in zip(v_hat + r_hat, v_t + r_t, strict=True)) / 2
    got = eval_loss(*(torch.tensor(x) for x in (v_hat, r_hat, v_t, r_t)))
    assert float(got) == pytest.approx(expected, rel=1e-6)  # 0.2231+0.3342+0.5867+1.2040, /2


def test_score_is_one_row_of_forward_and_restores_the_mode() -> None:
    net = EvalNet(seed=1)
    claim = [0.0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1]
    v, r = score(net, claim, MIXED)
    assert net.training
    evidence, mask = pack(MIXED)
    with torch.no_grad():
        v2, r2 = net.eval()(torch.tensor([claim]), evidence[None], mask[None])
    assert (v, r) == pytest.approx((float(v2[0]), float(r2[0])), abs=1e-6)
    with pytest.raises(BadInputError):
        score(net, claim[:11], MIXED)


def synthetic(n: int, seed: int):
    """Evidence sets whose targets follow their items: v from stance x relevance x
    credibility, r from item count x agreement between supporting and refuting items."""
    g = torch.Generator().manual_seed(seed)
    count = torch.randint(0, 11, (n,), generator=g)
    mask = torch.arange(SLOTS) < count[:, None]
    lean = torch.rand(n, 1, generator=g)  # each set's own share of supporting items
    u = torch.rand(n, SLOTS, generator=g)
    stance = torch.where(u < lean * 0.8, 1.0, torch.where(u < 0.8, -1.0, 0.0))
    source = functional.one_hot(torch.randint(0, 5, (n, SLOTS), generator=g), 5).float()
    rel, cred = torch.rand(n, SLOTS, generator=g), torch.rand(n, SLOTS, generator=g)
    evidence = torch.cat([stance[..., None], source, rel[..., None], cred[..., None]], -1)
    evidence = evidence * mask[..., None]
    support, refute = (stance == 1) & mask, (stance == -1) & mask
    quality = rel * cred

    def mean(track):
        return (quality * track).sum(1) / track.sum(1).clamp(min=1)

    v = torch.sigmoid(8 * (mean(support) - mean(refute)))
    s, f = support.sum(1).float(), refute.sum(1).float()
    r = count / 10 * (s - f).abs() / (s + f).clamp(min=1)
    return torch.rand(n, 12, generator=g), evidence, mask, v, r


def entropy(t: torch.Tensor) -> float:
    t = t.clamp(1e-7, 1 - 1e-7)
    return float(-(t * t.log() + (1 - t) * (1 - t).log()).mean())


def test_it_learns_synthetic_targets_beyond_their_average() -> None:
    train, held_out = synthetic(256, seed=1), synthetic(256, seed=2)
    net = EvalNet(seed=0)
    before = mean_loss(net, *held_out)
    losses = fit(net, *train, epochs=20, seed=0)
    after = mean_loss(net, *held_out)
    # Eq. 6 cannot go below the targets' own entropy; a net that only learnt the average
    # target would score `constant`.
    floor = entropy(held_out[3]) + entropy(held_out[4])
    constant = float(
        sum(
            functional.binary_cross_entropy(torch.full_like(t, float(mean)), t)
            for t, mean in ((held_out[3], train[3].mean()), (held_out[4], train[4].mean()))
        )
    )
    assert len(losses) == 20 and losses[-1] < losses[0]
    assert after - floor < 0.5 * (before - floor)
    assert after < constant - 0.1


def test_fit_is_deterministic_under_a_seed() -> None:
    data = synthetic(64, seed=5)
    runs = []
    for fit_seed in (7, 7, 8):
        net = EvalNet(seed=3)
        runs.append((fit(net, *data, epochs=2, seed=fit_seed, batch_size=16), net.state_dict()))
    (first, state), (again, state_again), (other, _) = runs
    assert first == again and first != other
    assert all(torch.equal(state[k], state_again[k]) for k in state)


def test_clipping_is_applied() -> None:
    data = synthetic(32, seed=6)
    moved = []
    for clip in (1.0, 1e-12):
        net = EvalNet(seed=0)
        start = [p.detach().clone() for p in net.parameters()]
        fit(net, *data, epochs=1, seed=0, clip=clip)
        with torch.no_grad():
            change = [(p - s).abs().sum() for p, s in zip(net.parameters(), start, strict=True)]
            moved.append(float(torch.stack(change).sum()))
    # Gradients clipped to ~1e-12 fall far below Adam's epsilon: the weights barely move.
    assert moved[1] < 0.01 * moved[0]
    assert HYPERPARAMETERS["lr"] == 1e-3 and HYPERPARAMETERS["clip"] == 1.0


def test_state_dict_round_trip_gives_identical_outputs() -> None:
    data = synthetic(32, seed=4)
    net = EvalNet(seed=0)
    fit(net, *data, epochs=1, seed=0)
    copy = EvalNet(seed=99)
    copy.load_state_dict(net.state_dict())
    net.eval(), copy.eval()
    for a, b in zip(net(*data[:3]), copy(*data[:3]), strict=True):
        assert torch.equal(a, b)


def test_mean_loss_weighs_uneven_batches_and_trains_nothing() -> None:
    data = synthetic(10, seed=8)
    net = EvalNet(seed=0)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    got = mean_loss(net, *data, batch_size=3)
    with torch.no_grad():
        expected = float(eval_loss(*net.eval()(*data[:3]), data[3], data[4]))
    assert got == pytest.approx(expected, abs=1e-6)
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())


def test_fit_and_mean_loss_refuse_malformed_sets() -> None:
    claims, evidence, mask, v, r = synthetic(8, seed=9)
    net = EvalNet(seed=0)
    for bad in (
        (claims[:, :11], evidence, mask, v, r),
        (claims, evidence[:, :19], mask, v, r),
        (claims, evidence, mask.float(), v, r),
        (claims, evidence, mask, v[:7], r),
        (claims, evidence, mask, v + 2, r),
        (claims[:0], evidence[:0], mask[:0], v[:0], r[:0]),
    ):
        with pytest.raises(BadInputError):
            mean_loss(net, *bad)
        with pytest.raises(BadInputError):
            fit(net, *bad, epochs=1, seed=0)
