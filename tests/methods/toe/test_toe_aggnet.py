"""ToE's aggregation network (Fig. 4, Eqs. 7-8): shapes, invariances, order, losses, learning.

No LLM: trees are random, their rule targets come from `rule_aggregate`, and the checks
are the ones a CPU can make honestly (spec 12, item 4).
"""

from __future__ import annotations

import io
import math
import random
from statistics import mean

import pytest
import torch

from verity.errors import BadInputError
from verity.methods.toe.aggnet import (
    HYPERPARAMETERS,
    NODE_DIM,
    AggNet,
    TreeRow,
    TreeSample,
    apply,
    fit,
    mean_loss,
)
from verity.methods.toe.aggregate import Scored, rule_aggregate


def seeded_net(seed: int = 0) -> AggNet:
    torch.manual_seed(seed)
    return AggNet()


def features(v: float, r: float, *rest: float) -> list[float]:
    tail = list(rest) + [0.0] * (NODE_DIM - 2 - len(rest))
    return [v, r, *tail]


# ---------------------------------------------------------------- random synthetic trees


def random_tree(rng: random.Random, max_depth: int = 3) -> tuple[list[TreeRow], float, float]:
    """A tree of 2-4 children per expanded node, some unevaluated, with rule targets.

    Features: 0 v_self, 1 r_self, 2 importance weight, 4 children/4, 5 evaluated/4
    (the layout of spec 7); the rest are noise. Returns rows and the root's rule (v, r).
    """
    rows: list[TreeRow] = []

    def node(parent: int | None, weight: float, depth: int) -> tuple[float, float]:
        own = (rng.random(), rng.random())
        expand = depth < max_depth and (parent is None or rng.random() < 0.5)
        k = rng.randint(2, 4) if expand else 0
        evaluated = rng.randint(1, k) if k else 0
        noise = [rng.random() for _ in range(NODE_DIM - 6)]
        index = len(rows)
        rows.append(TreeRow(features=[0.0] * NODE_DIM, parent=parent))  # filled below
        raw = [rng.random() + 0.05 for _ in range(k)]
        weights = [x / sum(raw) for x in raw]
        scored = []
        for w in weights[:evaluated]:
            v, r = node(index, w, depth + 1)  # a child enters with its aggregate
            scored.append(Scored(w=w, v=v, r=r))
        rule = rule_aggregate(scored, k, own)
        row = features(own[0], own[1], weight, depth / 5, k / 4, evaluated / 4, *noise)
        rows[index] = TreeRow(features=row, parent=parent, rule=rule if scored else None)
        return rule

    v, r = node(None, 1.0, 1)
    return rows, v, r


def imitation_error(net: AggNet, trees: list[list[TreeRow]]) -> tuple[float, float]:
    """Mean absolute error to the rule on v and on r, over every node with a child."""
    err_v, err_r = [], []
    for rows in trees:
        for i, (v, r) in apply(net, rows).items():
            rule = rows[i].rule
            assert rule is not None
            err_v.append(abs(v - rule[0]))
            err_r.append(abs(r - rule[1]))
    return mean(err_v), mean(err_r)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    # These nets are tiny: a second thread only adds contention on a 2-core machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def synthetic() -> tuple[list[TreeSample], list[list[TreeRow]]]:
    rng = random.Random(11)
    train = []
    for _ in range(240):
        rows, v, r = random_tree(rng)
        train.append(TreeSample(rows, y_v=v, y_r=r))  # root trained toward the rule too
    held_out = [random_tree(rng)[0] for _ in range(100)]
    return train, held_out


# ---------------------------------------------------------------- the module


def test_shapes_and_ranges() -> None:
    net = seeded_net()
    v, r = net(torch.rand(5, NODE_DIM), torch.rand(5, 3, NODE_DIM), torch.ones(5, 3, dtype=bool))
    assert v.shape == (5,) and r.shape == (5,)
    assert bool(((v > 0) & (v < 1) & (r > 0) & (r < 1)).all())
    logits = net.logits(
        torch.rand(2, NODE_DIM), torch.rand(2, 1, NODE_DIM), torch.ones(2, 1).bool()
    )
    assert logits[0].shape == (2,)


def test_permutation_invariance_over_children() -> None:
    net = seeded_net()
    parent, children = torch.rand(3, NODE_DIM), torch.rand(3, 4, NODE_DIM)
    mask = torch.ones(3, 4, dtype=bool)
    v, r = net(parent, children, mask)
    perm = torch.tensor([2, 0, 3, 1])
    v2, r2 = net(parent, children[:, perm], mask)
    torch.testing.assert_close((v, r), (v2, r2))
    # Changing one child does change the output: the children are read.
    children[:, 0, :2] = 1.0 - children[:, 0, :2]
    assert not torch.allclose(net(parent, children, mask)[0], v)


def test_padding_invariance() -> None:
    net = seeded_net()
    parent, children = torch.rand(2, NODE_DIM), torch.rand(2, 2, NODE_DIM)
    v, r = net(parent, children, torch.ones(2, 2, dtype=bool))
    padded = torch.cat([children, 100 * torch.rand(2, 3, NODE_DIM)], dim=1)
    mask = torch.tensor([[True, True, False, False, False]] * 2)
    torch.testing.assert_close(net(parent, padded, mask), (v, r))
    # A padded slot in the middle counts as absent too.
    middle = torch.stack([children[:, 0], 7 * torch.ones(2, NODE_DIM), children[:, 1]], dim=1)
    mask = torch.tensor([[True, False, True]] * 2)
    torch.testing.assert_close(net(parent, middle, mask), (v, r))


@pytest.mark.parametrize(
    ("parent", "children", "mask", "message"),
    [
        ((2, 15), (2, 3, 16), (2, 3), "parent must be"),
        ((2, 16), (3, 3, 16), (3, 3), "children must be"),
        ((2, 16), (2, 3, 16), (2, 2), "mask must be"),
        ((2, 16), (2, 3, 16), None, "at least one child"),
    ],
)
def test_bad_shapes_are_clear_errors(parent, children, mask, message) -> None:
    m = torch.zeros(2, 3, dtype=bool) if mask is None else torch.ones(*mask, dtype=bool)
    if mask is None:
        m[0, 0] = True  # row 1 has no child
    with pytest.raises(BadInputError, match=message):
        seeded_net()(torch.rand(*parent), torch.rand(*children), m)


# ---------------------------------------------------------------- apply()


class Spy(AggNet):
    """Records every batch the tree code hands the network."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def logits(self, parent, children, mask):
        self.calls.append((parent.clone(), children.clone(), mask.clone()))
        return super().logits(parent, children, mask)


def three_levels() -> list[TreeRow]:
    # root 0 -> a 1 (-> c 3, d 4), b 2.
    return [
        TreeRow(features(0.5, 0.3, 0.0, 0.2), parent=None),
        TreeRow(features(0.6, 0.4, 0.5, 0.4), parent=0, rule=(0.7, 0.5)),
        TreeRow(features(0.1, 0.9, 0.5, 0.4), parent=0),
        TreeRow(features(0.8, 0.7, 0.3, 0.6), parent=1),
        TreeRow(features(0.2, 0.6, 0.7, 0.6), parent=1),
    ]


def test_apply_runs_deepest_first_and_feeds_outputs_upward() -> None:
    torch.manual_seed(0)
    spy, rows = Spy(), three_levels()
    out = apply(spy, rows)
    assert sorted(out) == [0, 1]  # only nodes with a child get an output
    assert len(spy.calls) == 2
    (p1, c1, m1), (p0, c0, m0) = spy.calls
    # First call: a (row 1) over c and d, everything raw.
    torch.testing.assert_close(p1[0], torch.tensor(rows[1].features))
    torch.testing.assert_close(c1[0], torch.tensor([rows[3].features, rows[4].features]))
    assert m1.tolist() == [[True, True]]
    # Second call: the root shows its self scores as parent; child a enters with its
    # output in slots 0-1 and its other features untouched; leaf b enters raw.
    torch.testing.assert_close(p0[0], torch.tensor(rows[0].features))
    a_in = torch.tensor(rows[1].features)
    a_in[:2] = torch.tensor(out[1])
    torch.testing.assert_close(c0[0, 0], a_in)
    torch.testing.assert_close(c0[0, 1], torch.tensor(rows[2].features))
    assert (c0[0, 0, :2] != torch.tensor(rows[1].features[:2])).all()
    # And the outputs are the network's own on those inputs.
    with torch.no_grad():
        v, r = AggNet.forward(spy, p0, c0, m0)
    assert out[0] == pytest.approx((float(v[0]), float(r[0])))


def test_apply_of_a_lone_root_is_empty_and_bad_trees_are_refused() -> None:
    net = seeded_net()
    assert apply(net, [TreeRow(features(0.5, 0.5), parent=None)]) == {}
    with pytest.raises(BadInputError, match="cycle"):
        apply(
            net, [TreeRow(features(0.5, 0.5), None), *(TreeRow(features(0, 0), p) for p in (2, 1))]
        )
    with pytest.raises(BadInputError, match="no parent"):
        apply(net, [TreeRow(features(0.5, 0.5), parent=1), TreeRow(features(0, 0), parent=0)])
    with pytest.raises(BadInputError, match="parent"):
        apply(net, [TreeRow(features(0.5, 0.5), None), TreeRow(features(0, 0), parent=5)])
    with pytest.raises(BadInputError, match="16 finite features"):
        TreeRow([0.5] * 15, parent=None)
    with pytest.raises(BadInputError, match="rule target"):
        no_rule = [TreeRow(features(0.6, 0.4), parent=0), TreeRow(features(0.8, 0.7), parent=1)]
        TreeSample([three_levels()[0], *no_rule], y_v=1.0, y_r=0.5)
    with pytest.raises(BadInputError, match="root targets"):
        TreeSample(three_levels(), y_v=1.5, y_r=0.5)


# ---------------------------------------------------------------- Eqs. 7 and 8


def bce(p: float, y: float) -> float:
    return -(y * math.log(p) + (1 - y) * math.log(1 - p))


def test_losses_match_eq7_and_eq8_worked_by_hand() -> None:
    net = seeded_net(3)
    rows = three_levels()
    out = apply(net, rows)
    (v0, r0), (v1, r1) = out[0], out[1]
    root = 1.0 * (bce(v0, 1.0) + bce(r0, 0.8))  # Eq. 7, w_root = 1.0
    imit = 0.1 * (bce(v1, 0.7) + bce(r1, 0.5)) / 1  # Eq. 8, w_imit = 0.1, |N| = 1
    sample = TreeSample(rows, y_v=1.0, y_r=0.8)
    assert mean_loss(net, [sample]) == pytest.approx(root + imit, rel=1e-5)
    assert mean_loss(net, [sample], w_imit=0.0) == pytest.approx(root, rel=1e-5)
    assert mean_loss(net, [sample], w_root=2.0, w_imit=1.0) == pytest.approx(
        2 * root + 10 * imit, rel=1e-5
    )
    # A second tree with two non-root internal nodes: Eq. 8 takes their mean; the batch
    # is the mean over trees; a lone root contributes nothing.
    wide = [*rows, TreeRow(features(0.3, 0.3), parent=2)]
    wide[2] = TreeRow(rows[2].features, parent=0, rule=(0.2, 0.4))
    out2 = apply(net, wide)
    root2 = bce(out2[0][0], 0.0) + bce(out2[0][1], 0.5)
    imit2 = (
        0.1
        * (
            bce(out2[1][0], 0.7)
            + bce(out2[1][1], 0.5)
            + bce(out2[2][0], 0.2)
            + bce(out2[2][1], 0.4)
        )
        / 2
    )
    lone = TreeSample([TreeRow(features(0.5, 0.5), None)], y_v=0.0, y_r=0.0)
    both = [sample, TreeSample(wide, y_v=0.0, y_r=0.5), lone]
    assert mean_loss(net, both) == pytest.approx((root + imit + root2 + imit2) / 2, rel=1e-5)
    with pytest.raises(BadInputError, match="nothing to learn"):
        mean_loss(net, [lone])


# ---------------------------------------------------------------- learning


def test_learns_to_imitate_the_rule_on_random_trees(synthetic) -> None:
    train, held_out = synthetic
    net = seeded_net(0)
    before = mean_loss(net, train, w_imit=1.0)
    history = fit(net, train, epochs=20, seed=0, lr=3e-3, w_imit=1.0, batch_size=16)
    assert history[-1] < history[0] and mean_loss(net, train, w_imit=1.0) < before
    # The constant predictor: the training targets' mean, scored on the held-out trees.
    targets = [row.rule for s in train for row in s.rows if row.rule is not None]
    const_v, const_r = mean(t[0] for t in targets), mean(t[1] for t in targets)
    held = [row.rule for rows in held_out for i, row in enumerate(rows) if row.rule is not None]
    base_v = mean(abs(t[0] - const_v) for t in held)
    base_r = mean(abs(t[1] - const_r) for t in held)
    err_v, err_r = imitation_error(net, held_out)
    assert err_v < 0.5 * base_v, (err_v, base_v)
    assert err_r < 0.6 * base_r, (err_r, base_r)


def test_root_loss_only_training_lowers_root_loss(synthetic) -> None:
    train, _ = synthetic
    # Synthetic labels: the rule's verdict, thresholded, and its reliability.
    labelled = [TreeSample(s.rows, y_v=1.0 if s.y_v > 0.5 else 0.0, y_r=s.y_r) for s in train[:160]]
    net = seeded_net(1)
    before = mean_loss(net, labelled, w_imit=0.0)
    fit(net, labelled, epochs=15, seed=0, lr=3e-3, w_imit=0.0, batch_size=32)
    after = mean_loss(net, labelled, w_imit=0.0)
    assert after < 0.85 * before, (before, after)


def test_training_is_deterministic_under_a_seed(synthetic) -> None:
    train, held_out = synthetic
    runs = []
    for seed in (5, 5, 6):
        net = seeded_net(2)
        history = fit(net, train[:48], epochs=2, seed=seed, lr=1e-3, batch_size=16)
        runs.append((history, apply(net, held_out[0])))
    assert runs[0] == runs[1]
    assert runs[0][0] != runs[2][0]  # the seed orders the batches


def test_state_dict_round_trip(synthetic) -> None:
    train, held_out = synthetic
    net = seeded_net(4)
    fit(net, train[:32], epochs=1, seed=0, lr=1e-3)
    buffer = io.BytesIO()
    torch.save(net.state_dict(), buffer)
    buffer.seek(0)
    copy = seeded_net(99)
    assert apply(copy, held_out[1]) != apply(net, held_out[1])
    copy.load_state_dict(torch.load(buffer, weights_only=True))
    assert apply(copy, held_out[1]) == apply(net, held_out[1])


def test_paper_hyperparameters_are_the_defaults() -> None:
    assert HYPERPARAMETERS["lr"] == 1e-4 and HYPERPARAMETERS["weight_decay"] == 1e-5
    assert HYPERPARAMETERS["clip"] == 1.0 and HYPERPARAMETERS["optimizer"] == "AdamW"
    assert (HYPERPARAMETERS["w_root"], HYPERPARAMETERS["w_imit"]) == (1.0, 0.1)
    with pytest.raises(BadInputError):
        fit(seeded_net(), [], epochs=1, seed=0)
    with pytest.raises(BadInputError):
        fit(seeded_net(), [TreeSample(three_levels(), 1.0, 1.0)], epochs=1, seed=0, lr=0.0)


def test_children_outputs_enter_their_parent_detached() -> None:
    # Eq. 7's gradient must not reach a child's aggregation through the parent's input:
    # the same gradient comes from feeding the parent the child's output as a constant.
    from verity.methods.toe.aggnet import _tree_losses

    rows = three_levels()
    net = seeded_net(5)
    sample = TreeSample(rows, y_v=1.0, y_r=0.8)
    net.zero_grad()
    _tree_losses(net, [sample], 1.0, 0.0).sum().backward()
    got = [p.grad.clone() for p in net.parameters()]

    a_in = torch.tensor(rows[1].features)
    a_in[:2] = torch.tensor(apply(net, rows)[1])
    children = torch.stack([a_in, torch.tensor(rows[2].features)]).unsqueeze(0)
    parent = torch.tensor(rows[0].features).unsqueeze(0)
    net.zero_grad()
    v, r = net.logits(parent, children, torch.ones(1, 2, dtype=bool))
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    (bce(v, torch.tensor([1.0])) + bce(r, torch.tensor([0.8]))).backward()
    for g, p in zip(got, net.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad)
