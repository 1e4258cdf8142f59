"""A document's result on disk, to be read back by a rerun that retries what failed.

    save(result, Path("doc.result.json"))
    previous = load(Path("doc.result.json"))      # None when there is no such file

The file holds the typed record (every verdict whole, traces included), under a format
name, so that a rerun can keep what was done; `DocumentVerdict.to_json_dict` is the
shape people and programs read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verity.documents.types import DocumentVerdict
from verity.errors import BadInputError

FORMAT = "verity.document-result/1"


def dump(result: DocumentVerdict) -> dict[str, Any]:
    """The record as JSON data: the readable result, and the typed record for reruns."""
    return {"format": FORMAT, **result.to_json_dict(), "record": result.model_dump(mode="json")}


def save(result: DocumentVerdict, path: Path) -> None:
    """Write the record whole or not at all (a temporary file renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dump(result), ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def load(path: Path) -> DocumentVerdict | None:
    """The record in ``path``, or None if there is no file; `BadInputError` if not one."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read the earlier result {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BadInputError(f"{path} is not a document result (not JSON)") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or "record" not in data:
        raise BadInputError(f"{path} is not a document result ({FORMAT})")
    try:
        return DocumentVerdict.model_validate(data["record"])
    except ValidationError as exc:
        raise BadInputError(
            f"{path} holds a damaged document result: {exc.errors()[0]['msg']}"
        ) from exc
