"""CEL's parser, loaded from the user's cache rather than built again by every process.

cel-python parses with one Lark LALR parser per process (`CELParser.CEL_PARSER`, a
singleton its docs say may be set), built when `temporal_workflows.expressions` is first
imported. Building it analyses the grammar: 150-350 ms of every `trellis api` and
`trellis worker` start on a 2-core machine, where loading the analysed parser back with
Lark's own `save` and `load` takes ~15 ms. So a starting process loads it from
`$XDG_CACHE_HOME/trellis` (`~/.cache/trellis`), and the first one builds and saves it.

The file's name is a digest of everything the parser is made from (cel-python's grammar and
the module that builds it, Lark's and Python's versions), so an upgrade never loads an old
one. It is a pickle, as Lark's own cache is, kept in a directory of the user's own. A file
that cannot be read is built again and replaced; one that cannot be written is not kept;
neither stops a start.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from pathlib import Path
from typing import Literal

import lark
from celpy import celparser
from celpy.celparser import CELParser

log = logging.getLogger(__name__)

Outcome = Literal["already built", "loaded", "built and saved", "built, not saved"]


def cache_dir() -> Path | None:
    """Where the parser is kept: the XDG cache directory's `trellis` folder; None when
    there is none (no home directory: a container's arbitrary user, say)."""
    base = Path(os.environ.get("XDG_CACHE_HOME", ""))
    if not base.is_absolute():  # unset, or relative: the XDG spec ignores a relative one
        try:
            base = Path.home() / ".cache"
        except RuntimeError:
            return None
    return base / "trellis" if base.is_absolute() else None


def use_saved_cel_parser(directory: Path | None = None) -> Outcome:
    """Give cel-python its parser from `directory` (default `cache_dir()`), building and
    saving it there when no usable one is; call before CEL is first imported."""
    if CELParser.CEL_PARSER is not None:
        return "already built"
    directory = directory or cache_dir()
    path = directory / f"cel-parser-{_digest()}.pickle" if directory else None
    loaded = _load(path) if path else None
    if loaded is not None:
        CELParser.CEL_PARSER = loaded
        return "loaded"
    CELParser()  # builds the singleton with cel-python's own options
    assert CELParser.CEL_PARSER is not None
    saved = path is not None and _save(CELParser.CEL_PARSER, path)
    return "built and saved" if saved else "built, not saved"


def _digest() -> str:
    sources = Path(celparser.__file__).parent
    parts = [(sources / "cel.lark").read_bytes(), Path(celparser.__file__).read_bytes()]
    parts.append(f"lark {lark.__version__} python {sys.version}".encode())
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def _load(path: Path) -> lark.Lark | None:
    try:
        with path.open("rb") as f:
            return lark.Lark.load(f)
    except FileNotFoundError:
        return None
    except Exception as error:  # a torn or foreign file: build the parser again
        log.debug("CEL's saved parser %s is unusable (%r); building it again", path, error)
        return None


def _save(parser: lark.Lark, path: Path) -> bool:
    # Written beside and renamed into place: a process starting meanwhile never reads half.
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("wb") as f:
            parser.save(f)
        os.replace(partial, path)
    except OSError as error:
        log.debug("CEL's parser not saved to %s (%r)", path, error)
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        return False
    return True
