"""ToE's retrieval policy (§III-B): sizes, masking, sampling, checkpoints, warm-up cloning."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator

import pytest
import torch

from verity.errors import BadInputError, ConfigError
from verity.methods.toe import features
from verity.methods.toe.policy import (
    ACTIONS,
    STATE_DIM,
    STOP,
    PolicyNet,
    Step,
    Trajectory,
    act,
    behaviour_clone,
)

ALL = [True] * len(ACTIONS)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # The nets are tiny: on a busy machine a second thread costs more than it computes.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def net(seed: int = 0) -> PolicyNet:
    torch.manual_seed(seed)
    return PolicyNet()


def mask(*off: str) -> list[bool]:
    return [name not in off for name in ACTIONS]


def one_hot(index: int) -> list[float]:
    return [1.0 if i == index else 0.0 for i in range(STATE_DIM)]


def test_action_space_and_state_width_follow_section_3b() -> None:
    assert ACTIONS == ("web", "counter", "arxiv", "wiki", "social", "factcheck", "reddit", "stop")
    assert STOP == 7
    assert STATE_DIM == 29
    # The features module builds the states and masks this network reads.
    assert features.ACTIONS == ACTIONS
    assert features.STATE_DIM == STATE_DIM


def test_parameter_count_is_the_spec_figure_worked_from_the_layer_sizes() -> None:
    # 29->128->128->64->8, each layer weights plus biases.
    by_hand = (29 * 128 + 128) + (128 * 128 + 128) + (128 * 64 + 64) + (64 * 8 + 8)
    assert by_hand == 29_128  # spec §4: "(29,128 parameters)"
    assert sum(p.numel() for p in net().parameters()) == by_hand
    shapes = [tuple(p.shape) for p in net().parameters()]
    assert shapes[0] == (128, 29) and shapes[-2] == (8, 64)


def test_masked_tools_get_minus_infinity_and_stop_is_always_allowed() -> None:
    state = torch.rand(3, STATE_DIM)
    allowed = torch.tensor([mask("reddit", "social"), mask(*ACTIONS), ALL])
    logits = net()(state, allowed)
    assert logits.shape == (3, 8)
    assert logits[0, ACTIONS.index("reddit")] == -math.inf
    assert logits[0, ACTIONS.index("social")] == -math.inf
    assert torch.isfinite(logits[0, [0, 1, 2, 3, 5, 7]]).all()
    # Even a mask that switches stop off leaves it on.
    assert torch.isinf(logits[1, :STOP]).all() and torch.isfinite(logits[1, STOP])
    assert torch.isfinite(logits[2]).all()


def test_masked_tools_are_never_sampled_and_the_others_are() -> None:
    policy, generator = net(), torch.Generator().manual_seed(1)
    allowed = mask("reddit", "arxiv")
    seen = {act(policy, one_hot(0), allowed, greedy=False, generator=generator)[0]
            for _ in range(600)}  # fmt: skip
    assert seen == {i for i, on in enumerate(allowed) if on}
    action, logprob, probs = act(policy, one_hot(0), allowed, greedy=False, generator=generator)
    assert probs[ACTIONS.index("reddit")] == 0.0 and probs[ACTIONS.index("arxiv")] == 0.0
    assert sum(probs) == pytest.approx(1.0, abs=1e-6)
    assert logprob == pytest.approx(math.log(probs[action]), abs=1e-6)


def test_with_every_tool_masked_the_only_action_is_stop() -> None:
    action, logprob, probs = act(net(), one_hot(3), [False] * 8, greedy=False)
    assert (action, logprob) == (STOP, 0.0)
    assert probs == [0.0] * 7 + [1.0]


def test_greedy_takes_the_most_probable_allowed_action() -> None:
    policy = net()
    with torch.no_grad():
        policy.mlp[-1].bias.copy_(torch.tensor([0.0, 0.0, 9.0, 0.0, 0.0, 5.0, 0.0, 0.0]))
    assert act(policy, one_hot(1), ALL, greedy=True)[0] == ACTIONS.index("arxiv")
    assert act(policy, one_hot(1), mask("arxiv"), greedy=True)[0] == ACTIONS.index("factcheck")


def test_sampling_replays_under_the_same_seed() -> None:
    policy = net()

    def draws(seed: int) -> list[int]:
        generator = torch.Generator().manual_seed(seed)
        return [act(policy, one_hot(2), ALL, greedy=False, generator=generator)[0]
                for _ in range(40)]  # fmt: skip

    assert draws(5) == draws(5)
    assert draws(5) != draws(6)
    # Two networks built under the same seed are the same network.
    state = torch.rand(4, STATE_DIM)
    everything = torch.ones(4, 8, dtype=torch.bool)
    assert torch.equal(net(3)(state, everything), net(3)(state, everything))


@pytest.mark.parametrize(
    ("state", "allowed"),
    [
        ([0.0] * 28, ALL),
        ([0.0] * 30, ALL),
        ([0.0] * 29, ALL[:7]),
        ([math.nan] + [0.0] * 28, ALL),
        ([math.inf] + [0.0] * 28, ALL),
    ],
)
def test_bad_states_and_masks_are_refused(state: list[float], allowed: list[bool]) -> None:
    with pytest.raises(BadInputError):
        act(net(), state, allowed, greedy=True)


def test_bad_batches_are_refused_by_the_network() -> None:
    policy = net()
    with pytest.raises(BadInputError, match=r"\[batch, 29\]"):
        policy(torch.zeros(2, 28), torch.ones(2, 8, dtype=torch.bool))
    with pytest.raises(BadInputError, match="action mask"):
        policy(torch.zeros(2, 29), torch.ones(3, 8, dtype=torch.bool))
    with pytest.raises(BadInputError):
        policy(torch.zeros(29), torch.ones(8, dtype=torch.bool))


def test_a_checkpoint_round_trips_through_its_state_dict() -> None:
    trained, fresh = net(0), net(1)
    buffer = io.BytesIO()
    torch.save(trained.state_dict(), buffer)
    buffer.seek(0)
    state = torch.rand(5, STATE_DIM)
    everything = torch.ones(5, 8, dtype=torch.bool)
    assert not torch.equal(trained(state, everything), fresh(state, everything))
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(trained(state, everything), fresh(state, everything))


@pytest.mark.parametrize(
    "bad",
    [
        {"state": [0.0] * 28},
        {"state": [math.nan] * 29},
        {"allowed": ALL[:7]},
        {"action": 8},
        {"action": -1},
        {"action": ACTIONS.index("reddit"), "allowed": mask("reddit")},
        {"logprob": -math.inf},
        {"logprob": 0.5},
        {"reward": math.nan},
    ],
)
def test_steps_refuse_what_no_episode_produces(bad: dict[str, object]) -> None:
    fields: dict[str, object] = {"state": [0.0] * 29, "allowed": ALL, "action": 0,
                                 "logprob": -1.0, "reward": 0.1, **bad}  # fmt: skip
    with pytest.raises(BadInputError):
        Step(**fields)  # type: ignore[arg-type]


def test_stop_is_a_valid_step_even_when_the_mask_omits_it() -> None:
    step = Step([0.0] * 29, [False] * 8, STOP, 0.0, 0.0)
    assert step.allowed == (False,) * 8 and step.state == (0.0,) * 29


def test_an_empty_trajectory_is_refused() -> None:
    with pytest.raises(BadInputError, match="node-3"):
        Trajectory(steps=[], key="node-3")


def heuristic_episodes() -> list[Trajectory]:
    # A toy warm-up rule: category i -> tool i, then (one search done) stop.
    episodes = []
    for category in range(6):
        searched = one_hot(category)
        searched[14] = 0.2
        first = Step(one_hot(category), ALL, category, 0.0, 0.0)
        second = Step(searched, ALL, STOP, 0.0, 0.0)
        episodes.append(Trajectory([first, second], key=f"claim-{category}"))
    return episodes


def test_behaviour_cloning_learns_the_heuristic_and_replays_under_a_seed() -> None:
    policy, again, other = net(), net(), net()
    episodes = heuristic_episodes()
    before = [act(policy, one_hot(c), ALL, greedy=True)[0] for c in range(6)]
    # Mini-batches of 4 of the 12 steps, so the seeded order matters.
    torch.manual_seed(1)
    losses = behaviour_clone(policy, episodes, epochs=60, lr=1e-2, seed=0, batch_size=4)
    assert len(losses) == 60 and losses[-1] < 0.5 * losses[0]
    after = [act(policy, one_hot(c), ALL, greedy=True)[0] for c in range(6)]
    assert before != list(range(6))
    assert after == list(range(6))
    searched = one_hot(4)
    searched[14] = 0.2
    assert act(policy, searched, ALL, greedy=True)[0] == STOP
    torch.manual_seed(2)  # the global RNG plays no part
    assert behaviour_clone(again, episodes, epochs=60, lr=1e-2, seed=0, batch_size=4) == losses
    assert behaviour_clone(other, episodes, epochs=60, lr=1e-2, seed=1, batch_size=4) != losses


def test_behaviour_cloning_refuses_nothing_to_learn_and_bad_settings() -> None:
    with pytest.raises(BadInputError):
        behaviour_clone(net(), [])
    with pytest.raises(ConfigError):
        behaviour_clone(net(), heuristic_episodes(), epochs=0)
