"""Whose each method setting is, and the bounds of every number a request may set.

`verity serve` lets a request set a method's settings; these tests walk every registered
method's settings so that none names something on the server from a request and none
lets a request ask for an unbounded loop (verity.methods.settings).
"""

from __future__ import annotations

import math
import re
import types
import typing
from typing import Annotated, Any, Literal

import pytest
from annotated_types import Ge, Gt, Le, Lt, MaxLen
from pydantic import BaseModel, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from verity.methods.base import MethodConfig, method_class, method_names
from verity.methods.local.method import LocalConfig
from verity.methods.settings import (
    OperatorDataset,
    OperatorOnly,
    OperatorPath,
    OperatorTemplate,
    RequestText,
    operator_fields,
    request_fields,
    setting_owner,
    what_it_names,
)
from verity.methods.toe.config import ToeConfig
from verity.methods.wkgfc.method import WkgfcConfig
from verity.methods.zofia.keywords import threshold_units
from verity.methods.zofia.method import ZofiaConfig


def config_of(name: str) -> type[MethodConfig]:
    """The settings class of a registered method: its ``config`` annotation."""
    config = typing.get_type_hints(method_class(name))["config"]
    assert issubclass(config, MethodConfig)
    return typing.cast(type[MethodConfig], config)


METHODS = method_names()
FIELDS = [(method, field) for method in METHODS for field in config_of(method).model_fields]

# What each method's operator-only settings name; written out here, not read from the
# code, so that deleting a marker (or adding a setting of the operator's) fails a test.
OPERATOR_ONLY: dict[str, set[str]] = {
    "auto-cot": {"pool"},
    "cape-fnd": {"optimise_on"},
    "local": {"demos_file"},
    "nli": {"checkpoint", "labels", "passage_format", "template", "closed_template"},
    "teller": {"rules"},
    "toe": {"weights"},
    "wkgfc": {"policy_prompt"},
}

# The only settings a request may give free text for: domains to leave out of a search.
REQUEST_TEXT = {("web-agents", "excluded_domains"), ("zofia", "exclude_domains")}

# Words that say a setting names something on the server (an independent list: a setting
# is never operator-only because its name is here, only by its type).
PATH_LIKE = re.compile(
    r"\b(files?|folders?|paths?|dirs?|director(?:y|ies)|checkpoints?|weights?|urls?|"
    r"corpus|corpora|prompts?|templates?|formats?|pools?|datasets?|rules?)\b",
    re.IGNORECASE,
)


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    metadata: list[Any] = []
    while typing.get_origin(annotation) is Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata.extend(extra)
    flat: list[Any] = []
    for item in metadata:
        flat.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    return annotation, flat


def _numbers(annotation: Any, metadata: list[Any]) -> list[tuple[type, list[Any]]]:
    """Each int or float in a type, with the constraints that apply to it.

    A field's ``ge``/``le`` reach through ``X | None``; a tuple's items carry their own.
    """
    annotation, inner = _strip(annotation)
    metadata = [*metadata, *inner]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [n for arg in typing.get_args(annotation) for n in _numbers(arg, metadata)]
    if origin is not None and origin is not Literal:
        return [n for arg in typing.get_args(annotation) for n in _numbers(arg, [])]
    if annotation in (int, float):
        return [(annotation, metadata)]
    return []


def _admits_text(annotation: Any) -> bool:
    """Whether some value of the type is free text (a Literal's words are not)."""
    annotation, _ = _strip(annotation)
    if typing.get_origin(annotation) is Literal:
        return False
    if annotation is str:
        return True
    return any(_admits_text(arg) for arg in typing.get_args(annotation) if arg is not Ellipsis)


def _bounds(metadata: list[Any]) -> tuple[float, bool, float, bool]:
    """Lower bound, whether it is allowed, upper bound, whether it is allowed."""
    lower, lower_in, upper, upper_in = -math.inf, True, math.inf, True
    for item in metadata:
        if isinstance(item, Ge):
            lower, lower_in = _number(item.ge), True
        elif isinstance(item, Gt):
            lower, lower_in = _number(item.gt), False
        elif isinstance(item, Le):
            upper, upper_in = _number(item.le), True
        elif isinstance(item, Lt):
            upper, upper_in = _number(item.lt), False
    return lower, lower_in, upper, upper_in


def _number(value: Any) -> float:
    return float(value)


def _refused(config: type[BaseModel], name: str, value: Any) -> bool:
    try:
        config(**{name: value})
    except ValidationError as exc:
        return all(error["loc"][0] == name for error in exc.errors())
    return False


# (a) every setting says whose it is ------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_every_setting_of_every_method_has_an_owner(method: str) -> None:
    config = config_of(method)
    for name, field in config.model_fields.items():
        # setting_owner raises TypeError for a type that neither is plain data nor says
        # whose it is: that is what this test exists to catch.
        assert setting_owner(field) in ("request", "operator"), f"{method}.{name}"


@pytest.mark.parametrize("method", METHODS)
def test_defaults_and_variants_still_validate(method: str) -> None:
    config = config_of(method)
    config()
    for variant, settings in getattr(method_class(method), "variants", {}).items():
        try:
            config(**settings)
        except ValidationError as exc:
            pytest.fail(f"{method}/{variant}: {exc}")


# (b) every number has a finite lower and upper bound, checked at validation --------------


@pytest.mark.parametrize(("method", "name"), FIELDS)
def test_every_number_is_bounded_both_ways(method: str, name: str) -> None:
    config = config_of(method)
    field = config.model_fields[name]
    for kind, metadata in _numbers(field.annotation, list(field.metadata)):
        lower, lower_in, upper, upper_in = _bounds(metadata)
        assert math.isfinite(lower), f"{method}.{name} has no lower bound"
        assert math.isfinite(upper), f"{method}.{name} has no upper bound"
        step = 1 if kind is int else 1.0
        above = kind(upper + step) if upper_in else kind(upper)
        below = kind(lower - step) if lower_in else kind(lower)
        assert _refused(config, name, above), f"{method}.{name}={above} is accepted"
        assert _refused(config, name, below), f"{method}.{name}={below} is accepted"
        if upper_in:
            config(**{name: kind(upper)})


def test_the_walk_finds_numbers_also_inside_optional() -> None:
    # So that the test above cannot pass by finding no number at all.
    iterations = ToeConfig.model_fields["max_iterations"]
    assert _numbers(iterations.annotation, list(iterations.metadata)) == [
        (int, [Ge(ge=1), Le(le=100)])
    ]
    keywords = ZofiaConfig.model_fields["max_keywords"]
    assert [kind for kind, _ in _numbers(keywords.annotation, list(keywords.metadata))] == [int]
    assert sum(bool(_numbers(*_typed(m, n))) for m, n in FIELDS) > 100


def _typed(method: str, name: str) -> tuple[Any, list[Any]]:
    field = config_of(method).model_fields[name]
    return field.annotation, list(field.metadata)


@pytest.mark.parametrize(("method", "name"), sorted(REQUEST_TEXT))
def test_request_text_is_bounded_in_items_and_in_length(method: str, name: str) -> None:
    config = config_of(method)
    field = config.model_fields[name]
    most = next(m.max_length for m in field.metadata if isinstance(m, MaxLen))
    assert most <= 1000
    config(**{name: ("example.com",) * most})
    assert _refused(config, name, ("example.com",) * (most + 1))
    assert _refused(config, name, ("x" * 254,))
    assert setting_owner(field) == "request"


# (c) nothing path-like, and no free text beyond the known few, comes from a request ------


@pytest.mark.parametrize(("method", "name"), FIELDS)
def test_a_setting_that_names_a_thing_on_the_server_is_the_operators(
    method: str, name: str
) -> None:
    field = config_of(method).model_fields[name]
    if not _admits_text(field.annotation):
        return  # a bool, a bounded number or a Literal's words cannot name a file
    said = f"{name.replace('_', ' ')} {field.description or ''}"
    if PATH_LIKE.search(said):
        assert setting_owner(field) == "operator", f"{method}.{name}: {said!r}"
    if setting_owner(field) == "request":
        assert (method, name) in REQUEST_TEXT, f"{method}.{name} takes free text from a request"


# (d) each known operator-only setting, one by one ----------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_operator_only_settings_are_exactly_the_known_ones(method: str) -> None:
    config = config_of(method)
    assert operator_fields(config) == OPERATOR_ONLY.get(method, set())
    for name in OPERATOR_ONLY.get(method, set()):
        assert what_it_names(config.model_fields[name])


def test_what_the_operator_only_settings_name() -> None:
    fields = {m: config_of(m).model_fields for m in OPERATOR_ONLY}
    assert what_it_names(fields["local"]["demos_file"]) == "a file or folder on the server"
    assert what_it_names(fields["toe"]["weights"]) == "a file or folder on the server"
    assert what_it_names(fields["nli"]["checkpoint"]) == "a file or folder on the server"
    assert what_it_names(fields["wkgfc"]["policy_prompt"]) == "a file or folder on the server"
    assert what_it_names(fields["auto-cot"]["pool"]) == "a dataset on the server"
    assert what_it_names(fields["cape-fnd"]["optimise_on"]) == "a dataset on the server"
    for name in ("passage_format", "template", "closed_template"):
        assert what_it_names(fields["nli"][name]) == "a prompt or template"
    assert "class names" in str(what_it_names(fields["nli"]["labels"]))
    assert what_it_names(fields["teller"]["rules"]) == "a rule set"


# (e) the papers' loop settings, worked out by hand, and a value just over each bound -----


def test_toe_iterations_cover_the_paper_and_stop_at_five_times_it() -> None:
    # ToE §IV-A: T_max = 20, depth at most 5, at most 10 documents per node.
    paper = ToeConfig()
    assert (paper.max_iterations, paper.max_depth, paper.max_docs) == (20, 5, 10)
    assert ToeConfig(max_iterations=100).max_iterations == 5 * 20
    for name, over in (("max_iterations", 101), ("max_depth", 6), ("max_docs", 11)):
        assert _refused(ToeConfig, name, over)


def test_local_iterations_cover_the_paper() -> None:
    # LoCal §4.3: "The maximum number of iterations is set to 3"; 5.2's ablations keep it.
    assert LocalConfig().max_iterations == 3
    assert LocalConfig(max_iterations=10).max_iterations == 10
    assert _refused(LocalConfig, "max_iterations", 11)
    assert _refused(LocalConfig, "max_iterations", 0)


def test_wkgfc_beam_and_hops_cover_the_papers_sweep() -> None:
    # WKGFC §5.6: k = 4 and N = 4 in the main runs, after a sweep of k 3..5 and N 2..5.
    paper = WkgfcConfig()
    assert (paper.k, paper.hops) == (4, 4)
    for k in (3, 4, 5):
        for hops in (2, 3, 4, 5):
            WkgfcConfig(k=k, hops=hops)
    for name, over in (("k", 21), ("hops", 11), ("agent_hops", 11), ("max_steps", 21)):
        assert _refused(WkgfcConfig, name, over)
    assert _refused(WkgfcConfig, "follow_limit", 1001)


def test_zofia_threshold_schedule_stays_short() -> None:
    # Algorithm 2 with section 5.1's values and no entity: 0.8 falls by 0.1 to the 0.1
    # floor, seven steps, and stops there.
    paper = ZofiaConfig()
    assert (paper.lambda_init, paper.delta, paper.tau_floor) == (0.8, 0.1, 0.1)
    kept, threshold = threshold_units([], paper.keyword_params())
    assert kept == []
    assert threshold == pytest.approx(0.1)
    # The smallest delta allowed, from the highest start to the lowest floor: 1.0 falls
    # by 0.01 to 0.0 in 100 steps, the longest the schedule can run.
    slow = ZofiaConfig(lambda_init=1.0, delta=0.01, tau_floor=0.0)
    kept, threshold = threshold_units([], slow.keyword_params())
    assert kept == []
    assert threshold == pytest.approx(0.0)
    assert _refused(ZofiaConfig, "delta", 0.009)
    assert _refused(ZofiaConfig, "delta", 1e-9)
    # Appendix B.6: at most 5 debate rounds; verity allows four times that.
    assert paper.max_rounds == 5
    assert _refused(ZofiaConfig, "max_rounds", 21)
    for name in ("lambda_init", "lambda_min", "lambda_max", "gamma"):
        assert _refused(ZofiaConfig, name, 1.01)


def test_the_baselines_step_budgets_cover_their_code() -> None:
    # ReAct FEVER.ipynb: 7 steps; FIRE config.py: 5 searches; web-agents parallel.py: 10.
    for method, name, paper, over in (
        ("react", "max_steps", 7, 31),
        ("fire", "max_steps", 5, 21),
        ("web-agents", "max_turns", 10, 51),
    ):
        config = config_of(method)
        assert getattr(config(), name) == paper
        assert _refused(config, name, over)


def test_seeds_are_32_bit() -> None:
    for method in ("auto-cot", "cape-fnd"):
        config = config_of(method)
        config(**{"seed": 2**32 - 1})
        assert _refused(config, "seed", 2**32)
        assert _refused(config, "seed", -1)


def test_none_stays_allowed_where_a_number_may_be_unset() -> None:
    assert ZofiaConfig(max_keywords=None, context_tokens=None).max_keywords is None
    assert _refused(ZofiaConfig, "max_keywords", 51)
    assert _refused(WkgfcConfig, "context_tokens", 2**20 + 1)


# (f) the classification itself -----------------------------------------------------------


def _field(annotation: Any, **constraints: Any) -> FieldInfo:
    """The field of a one-setting model of this type."""
    one = create_model("One", value=(annotation, Field(default=None, **constraints)))
    return one.model_fields["value"]


def test_an_operator_marker_inside_optional_or_a_tuple_is_found() -> None:
    assert setting_owner(_field(OperatorPath | None)) == "operator"
    assert setting_owner(_field(OperatorDataset | None)) == "operator"
    assert setting_owner(_field(tuple[OperatorTemplate, ...])) == "operator"
    assert setting_owner(_field(tuple[OperatorPath, ...] | None)) == "operator"
    assert what_it_names(_field(OperatorDataset | None)) == "a dataset on the server"


def test_plain_text_and_mappings_are_refused() -> None:
    for annotation in (str, str | None, tuple[str, ...], dict[str, int], list[int]):
        with pytest.raises(TypeError, match="not plain data"):
            setting_owner(_field(annotation))
    with pytest.raises(TypeError):
        setting_owner(_field(dict[str, int], max_length=3))
    marked = Annotated[dict[str, int], OperatorOnly("a table on the server")]
    assert setting_owner(_field(marked)) == "operator"


def test_numbers_need_both_bounds() -> None:
    with pytest.raises(TypeError, match="upper bound"):
        setting_owner(_field(int))
    with pytest.raises(TypeError, match="upper bound"):
        setting_owner(_field(int | None, ge=1))
    with pytest.raises(TypeError, match="upper bound"):
        setting_owner(_field(float, ge=0.0, le=math.inf))
    assert setting_owner(_field(int | None, ge=1, le=5)) == "request"
    assert setting_owner(_field(float, gt=0.0, lt=1.0)) == "request"
    assert setting_owner(_field(Annotated[int, Field(ge=0, le=3)] | None)) == "request"


def test_bounded_text_literals_and_tuples_of_them_are_the_requests() -> None:
    assert setting_owner(_field(bool)) == "request"
    assert setting_owner(_field(Literal["a", "b"])) == "request"
    assert setting_owner(_field(RequestText | None)) == "request"
    assert setting_owner(_field(tuple[RequestText, ...], max_length=5)) == "request"
    assert setting_owner(_field(tuple[Literal["x", "y"], ...], max_length=2)) == "request"
    # A tuple needs a bound on its number of items, whatever its items.
    with pytest.raises(TypeError, match="number of items"):
        setting_owner(_field(tuple[RequestText, ...]))
    # A tuple's max_length bounds the tuple, not the text of its items.
    with pytest.raises(TypeError, match="max_length"):
        setting_owner(_field(tuple[str, ...], max_length=5))


def test_request_and_operator_fields_split_a_config() -> None:
    class Small(BaseModel):
        rounds: int = Field(default=3, ge=1, le=10)
        prompt_file: OperatorPath | None = None

    assert request_fields(Small) == {"rounds"}
    assert operator_fields(Small) == {"prompt_file"}
    assert request_fields(ToeConfig) >= {"max_iterations", "remove_tools"}
    assert "weights" not in request_fields(ToeConfig)
