"""Errors of the HTTP service, and the one place verity's errors become status codes.

    raise ApiError(404, "not_found", "no check with this id")
    api_error(UnknownNameError("method", "nope", ["direct", "rag"]))
    # ApiError(400, "unknown_method", ..., valid=["direct", "rag"])
    job_error(SourceUnavailableError("wikipedia did not answer"))
    # JobError(code="source_unavailable", message="wikipedia did not answer")

Every answer that is not a success has the body of `verity.service.requests.ErrorBody`:
``{"error": {"status", "code", "message", "field", "valid"}}``. A job that fails keeps
its error as ``{code, message}``, with the codes of `job_error`.

An answer never repeats a value the request sent (a name, a key of a mapping): it may be
long, or a secret pasted in the wrong field. It names the field, and ``valid`` lists what
would have been accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from verity.errors import (
    BadInputError,
    BudgetExceededError,
    ConfigError,
    MissingKeyError,
    ModelOutputError,
    SourceUnavailableError,
    UnknownNameError,
    VerityError,
)
from verity.service.requests import ErrorBody, ErrorDetail

# A message stored with a failed job is for people; a traceback's worth is for the log.
MAX_MESSAGE_CHARS = 2_000


class ApiError(Exception):
    """An answer other than success, with its status, code and the request field at fault."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        valid: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.field, self.valid = field, valid
        self.headers = headers or {}

    def body(self) -> ErrorBody:
        """The JSON body of this answer."""
        return ErrorBody(
            error=ErrorDetail(
                status=self.status,
                code=self.code,
                message=self.message,
                field=self.field,
                valid=self.valid,
            )
        )


class JobError(BaseModel):
    """Why a job did not reach a verdict: a stable code and a message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    message: str


# The code of a failed job for each kind of verity error, most specific first.
_JOB_CODES: tuple[tuple[type[Exception], str], ...] = (
    (UnknownNameError, "unknown_name"),
    (MissingKeyError, "missing_key"),
    (BadInputError, "bad_input"),
    (ConfigError, "config"),
    (SourceUnavailableError, "source_unavailable"),
    (ModelOutputError, "model_output"),
    (BudgetExceededError, "budget_exceeded"),
    (VerityError, "error"),
)


def job_error(exc: BaseException) -> JobError:
    """The error a failed job keeps: its code, and the message of a verity error.

    Anything that is not a verity error is a bug; its message may hold anything, so the
    job says only its type and the server log has the rest.
    """
    for kind, code in _JOB_CODES:
        if isinstance(exc, kind):
            return JobError(code=code, message=_capped(str(exc)))
    return JobError(
        code="internal",
        message=f"internal error ({type(exc).__name__}); the server log has the details",
    )


def rate_limited(wait: float, what: str) -> ApiError:
    """429 ``rate_limited``: ``what`` of the key's minute are spent, come back in ``wait`` s."""
    seconds = max(1, int(wait + 0.999))
    return ApiError(
        429,
        "rate_limited",
        f"this key's {what} for the minute are spent; try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


def partial_of(exc: BaseException) -> dict[str, Any] | None:
    """What a check that failed had done: its usage and trace, as JSON (None if nothing)."""
    usage, trace = getattr(exc, "usage", None), getattr(exc, "trace", None)
    if usage is None and trace is None:
        return None
    return {
        "usage": usage.model_dump(mode="json") if usage is not None else None,
        "trace": trace.model_dump(mode="json") if trace is not None else None,
    }


def api_error(exc: VerityError) -> ApiError:
    """The answer to a verity error raised while a request was checked, before any job.

    An unknown name is 400 with the names that are known; other input and configuration
    mistakes are 400 too (the request asked for something this server cannot do).
    """
    if isinstance(exc, UnknownNameError):
        # "method", "source", "model backend", "variant of zofia": the first word says it.
        # The error's own message quotes the name; the answer does not (see above).
        kind = exc.kind.split()[0] if exc.kind.strip() else "name"
        message = f"unknown {exc.kind or 'name'}: not one of the names this server knows"
        return ApiError(400, f"unknown_{kind}", message, valid=sorted(exc.known))
    if isinstance(exc, BadInputError):
        return ApiError(400, "bad_input", _capped(str(exc)))
    if isinstance(exc, ConfigError):
        return ApiError(400, "config", _capped(str(exc)))
    return ApiError(500, "internal", "internal error; the server log has the details")


def problem(error: Mapping[str, Any]) -> tuple[list[str], str]:
    """Where one pydantic error is and what it says, naming no key the client chose.

    A mapping's key that fails its own check is at ``(..., KEY, "[key]")`` and a field
    the model does not take at ``(..., NAME)``: both are cut to the mapping or model
    that holds them, and the message says which kind of mistake it was.
    """
    location = [str(p) for p in error.get("loc", ())]
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    if "[key]" in location:
        location = location[: max(location.index("[key]") - 1, 0)]
        message = f"a key: {message}"
    elif error.get("type") == "extra_forbidden":
        location = location[:-1]
        message = "a field it does not take"
    return location, message


def settings_error(method: str, exc: ValidationError, known: Sequence[str]) -> ApiError:
    """422 for request settings the method's settings model refuses (``known`` its fields)."""
    first = exc.errors()[0]
    location, message = problem(first)
    where = ".".join(location)
    if not where and first.get("type") == "extra_forbidden":
        return ApiError(
            422,
            "invalid",
            f"settings of {method}: a setting it does not take",
            field="settings",
            valid=list(known),
        )
    return ApiError(
        422,
        "invalid",
        f"settings of {method}: {where or 'settings'}: {message}",
        field=f"settings.{where}" if where else "settings",
    )


def _capped(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 1] + "…"


# Codes of the answers the framework gives itself (unknown route, wrong HTTP method).
STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    421: "misdirected",
    422: "invalid",
    429: "too_many_requests",
    500: "internal",
    503: "unavailable",
}


def status_code_name(status: int) -> str:
    """A stable code for a bare HTTP status."""
    return STATUS_CODES.get(status, f"http_{status}")
