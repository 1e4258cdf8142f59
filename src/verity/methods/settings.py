"""Who may set a method's setting: anyone who sends a request, or only the operator.

A method's settings come from three places: ``verity.toml`` and the command line (the
operator's own), and the ``settings`` of a request to ``verity serve`` (anyone's). A
setting that names something on the server (a file, a folder, a checkpoint, a dataset, a
prompt or template) is the operator's by its *type*, never by a name in a list:

    class MyConfig(MethodConfig):
        rounds: int = Field(default=3, ge=1, le=10)      # a request may set it
        prompt_file: OperatorPath | None = None          # the operator's only

`request_fields` gives the settings a request may set. A field qualifies when its type
is plain data, each value of which is harmless to accept from anyone: a bool, a number
with a finite lower and upper bound, a `Literal`, a bounded text (`RequestText`), or a
tuple of those with a bounded number of items. Every other field (a plain ``str``, a
``dict``, an ``int`` with no upper bound) must say whose it is: `OperatorOnly` in its
``Annotated`` metadata, or one of the aliases below. `setting_owner` refuses to guess,
so a new setting of an unclear type fails the test that walks every method's settings
(tests/methods/test_setting_owners.py) instead of reaching a loader, or an unbounded
loop, from a request.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Ge, GroupedMetadata, Gt, Le, Lt, MaxLen
from pydantic import BaseModel, StringConstraints
from pydantic.fields import FieldInfo

__all__ = [
    "OperatorDataset",
    "OperatorOnly",
    "OperatorPath",
    "OperatorTemplate",
    "RequestText",
    "operator_fields",
    "request_fields",
    "setting_owner",
    "what_it_names",
]

Owner = Literal["request", "operator"]


@dataclass(frozen=True)
class OperatorOnly:
    """``Annotated`` metadata of a setting only the operator may set, saying what it names.

    weights: Annotated[str, OperatorOnly("a folder of trained weights")] = ""
    """

    what: str


#: A file or folder on the server (a demonstrations file, a checkpoint, trained weights).
OperatorPath = Annotated[str, OperatorOnly("a file or folder on the server")]
#: A dataset by name, which may name a folder (``advfact:DIR``) and reads the data folder.
OperatorDataset = Annotated[str, OperatorOnly("a dataset on the server")]
#: Text that becomes a prompt or a format string (a template, a rule set).
OperatorTemplate = Annotated[str, OperatorOnly("a prompt or template")]
#: Short text a request may give: a domain to exclude, a word to look for. 253 characters
#: is the longest DNS name, the longest thing a request names this way.
RequestText = Annotated[str, StringConstraints(max_length=253)]

_SCALARS: tuple[type, ...] = (bool, type(None))
_NUMBERS: tuple[type, ...] = (int, float)


def _flat(metadata: list[Any]) -> list[Any]:
    """Metadata with grouped constraints (``Field(...)``, `StringConstraints`) spread out."""
    out: list[Any] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(_flat(list(item.metadata)))
        elif isinstance(item, GroupedMetadata):
            out.extend(_flat(list(item)))
        else:
            out.append(item)
    return out


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The bare type of an annotation and the metadata ``Annotated`` wrapped around it."""
    metadata: list[Any] = []
    while typing.get_origin(annotation) is Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata.extend(extra)
    return annotation, _flat(metadata)


def _marked(metadata: list[Any]) -> OperatorOnly | None:
    return next((m for m in _flat(metadata) if isinstance(m, OperatorOnly)), None)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _bounded_number(metadata: list[Any]) -> bool:
    lower = any(
        (isinstance(m, Ge) and _finite(m.ge)) or (isinstance(m, Gt) and _finite(m.gt))
        for m in metadata
    )
    upper = any(
        (isinstance(m, Le) and _finite(m.le)) or (isinstance(m, Lt) and _finite(m.lt))
        for m in metadata
    )
    return lower and upper


def _has_max_len(metadata: list[Any]) -> bool:
    return any(isinstance(m, MaxLen) for m in metadata)


def _refusal(annotation: Any, metadata: list[Any]) -> str | None:
    """Why a value of this type is not plain data, harmless from anyone; None when it is.

    ``metadata`` holds the constraints that apply to this level: a field's ``ge`` and
    ``le`` reach through ``X | None`` to the number, a tuple's ``max_length`` stops at
    the tuple and does not bound its items.
    """
    annotation, inner = _unwrap(annotation)
    metadata = [*_flat(metadata), *inner]
    if _marked(metadata) is not None:
        return "it is marked OperatorOnly"
    origin = typing.get_origin(annotation)
    if origin is Literal:
        if all(isinstance(v, str | int | bool) or v is None for v in typing.get_args(annotation)):
            return None
        return f"{annotation!r} holds a value that is not text, a number or None"
    if origin in (typing.Union, types.UnionType):
        reasons = (_refusal(arg, metadata) for arg in typing.get_args(annotation))
        return next((r for r in reasons if r is not None), None)
    if origin is tuple:
        if not _has_max_len(metadata):
            return f"{annotation!r} has no bound on its number of items (max_length)"
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        reasons = (_refusal(arg, []) for arg in args)
        return next((r for r in reasons if r is not None), None)
    if annotation is str:
        return None if _has_max_len(metadata) else "a str without a max_length"
    if annotation in _NUMBERS:
        if _bounded_number(metadata):
            return None
        return f"{annotation.__name__} without a finite lower and upper bound (ge/gt, le/lt)"
    if annotation in _SCALARS:
        return None
    return f"{annotation!r} is not a bool, number, Literal, text or tuple of those"


def _contains_marker(annotation: Any) -> OperatorOnly | None:
    annotation, metadata = _unwrap(annotation)
    found = _marked(metadata)
    if found is not None:
        return found
    for arg in typing.get_args(annotation):
        inner = _contains_marker(arg)
        if inner is not None:
            return inner
    return None


def setting_owner(field: FieldInfo) -> Owner:
    """``request`` for a setting anyone may set, ``operator`` for the operator's only.

    `TypeError` for a field whose type neither is plain data nor says whose it is:

        setting_owner(ToeConfig.model_fields["weights"])          # "operator"
        setting_owner(ToeConfig.model_fields["max_iterations"])   # "request"
    """
    if what_it_names(field) is not None:
        return "operator"
    reason = _refusal(field.annotation, list(field.metadata))
    if reason is None:
        return "request"
    raise TypeError(
        f"setting of type {field.annotation!r} is not plain data ({reason}): mark it "
        "OperatorOnly (an OperatorPath, OperatorDataset or OperatorTemplate) or give it "
        "a bounded type"
    )


def what_it_names(field: FieldInfo) -> str | None:
    """What an operator-only setting names ("a file or folder on the server"), else None."""
    marker = _marked(list(field.metadata)) or _contains_marker(field.annotation)
    return marker.what if marker is not None else None


def request_fields(config: type[BaseModel]) -> frozenset[str]:
    """The settings of ``config`` a request may set."""
    return frozenset(
        name for name, field in config.model_fields.items() if setting_owner(field) == "request"
    )


def operator_fields(config: type[BaseModel]) -> frozenset[str]:
    """The settings of ``config`` only the operator may set."""
    return frozenset(config.model_fields) - request_fields(config)
