"""While a folder is reopened (its `.lamina/config.toml` changed the history bound) its old service
is closed before the new one opens: requests in between are told so (LAMINA_FOLDER_REOPENING),
not that the folder does not exist, and never answered by another folder's index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from index.errors import BadInput, LaminaError
from lsp_server.folders import Folders


class _Service:
    """What Folders routes by: the service's workspace (opening a real index is not its concern)."""

    def __init__(self, folder: Path, index_dir: Path | None) -> None:
        self.workspace = folder


def _folders(*paths: Path) -> Folders:
    folders = Folders(_Service)  # type: ignore[arg-type]
    for p in paths:
        p.mkdir(parents=True, exist_ok=True)
        folders.add(p, None)
    return folders


def _refuse_bad_toml(folder: Path, index_dir: Path | None) -> Any:
    """A folder whose index cannot open: its settings file is broken."""
    raise BadInput(".lamina/config.toml is not valid TOML", "correct it")


def _add_failing(folders: Folders, path: Path) -> None:
    """Open `path` as a folder whose index fails to open (the others open as before)."""
    path.mkdir(parents=True, exist_ok=True)
    make, folders._make = folders._make, _refuse_bad_toml
    assert folders.add(path, None) is None
    folders._make = make


def _failed_inside_reopening(tmp_path: Path) -> tuple[Folders, Path, Path]:
    """`outer` being reopened, and inside it `inner`, which failed to open."""
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    folders = _folders(outer)
    _add_failing(folders, inner)
    folders.remove(outer, "its .lamina/config.toml changed")
    return folders, outer, inner


def _code(call: Any) -> str:
    with pytest.raises(LaminaError) as info:
        call()
    return info.value.code


def test_a_folder_being_reopened_is_refused_with_its_own_code(tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    folders = _folders(shop)
    folders.remove(shop, "its .lamina/config.toml changed")
    assert _code(folders.pick) == "LAMINA_FOLDER_REOPENING"
    assert _code(lambda: folders.pick(folder=shop.as_uri())) == "LAMINA_FOLDER_REOPENING"
    assert _code(lambda: folders.pick(uri=(shop / "app.py").as_uri())) == "LAMINA_FOLDER_REOPENING"
    with pytest.raises(LaminaError, match="shop is being reopened \\(its .lamina/config.toml changed\\)"):
        folders.pick()
    svc = folders.add(shop, None)
    assert folders.pick() is svc and folders.pick(folder=shop.as_uri()) is svc


def test_another_folder_never_answers_for_the_one_being_reopened(tmp_path: Path) -> None:
    shop, docs = tmp_path / "shop", tmp_path / "docs"
    folders = _folders(shop, docs)
    folders.remove(shop, "its .lamina/config.toml changed")
    assert _code(lambda: folders.pick(uri=(shop / "app.py").as_uri())) == "LAMINA_FOLDER_REOPENING"
    assert folders.pick(uri=(docs / "x.md").as_uri()).workspace == docs.resolve()
    assert folders.pick().workspace == docs.resolve()  # no folder named: the first open one


def test_a_folder_closed_for_good_is_not_reopening(tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    folders = _folders(shop)
    folders.remove(shop)
    assert _code(folders.pick) == "LAMINA_WORKSPACE_INVALID"
    with pytest.raises(BadInput, match="is not a workspace folder"):
        folders.pick(folder=shop.as_uri())


def test_a_reopen_that_fails_leaves_the_folder_s_error_not_the_reopening(tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    folders = _folders(shop)
    folders.remove(shop, "its .lamina/config.toml changed")
    folders._make = _refuse_bad_toml
    assert folders.add(shop, None) is None
    assert _code(folders.pick) == "LAMINA_BAD_INPUT"


def test_a_folder_that_failed_to_open_says_why_not_that_it_is_no_folder(tmp_path: Path) -> None:
    shop, docs = tmp_path / "shop", tmp_path / "docs"
    folders = _folders(docs)
    _add_failing(folders, shop)
    # Named: its own refusal, not "not a workspace folder of this server".
    with pytest.raises(BadInput, match="not valid TOML"):
        folders.pick(folder=shop.as_uri())
    # One of its documents: its refusal, never the other folder's index answering for it.
    with pytest.raises(BadInput, match="not valid TOML"):
        folders.pick(uri=(shop / "app.py").as_uri())
    assert folders.pick(uri=(docs / "x.md").as_uri()).workspace == docs.resolve()
    assert folders.pick().workspace == docs.resolve()
    with pytest.raises(BadInput, match="is not a workspace folder"):
        folders.pick(folder=(tmp_path / "elsewhere").as_uri())


def test_a_failed_folder_inside_one_being_reopened_and_the_no_folder_stand_in(tmp_path: Path) -> None:
    """Review: a failed folder inside one being reopened read as the outer folder's reopening; the
    "no workspace folder" stand-in (a client that sent no roots, then added one) is no folder that
    holds documents."""
    folders, outer, inner = _failed_inside_reopening(tmp_path)
    with pytest.raises(BadInput, match="not valid TOML"):
        folders.pick(folder=inner.as_uri())
    assert _code(lambda: folders.pick(folder=outer.as_uri())) == "LAMINA_FOLDER_REOPENING"

    docs = tmp_path / "docs"
    lone = _folders()
    lone.errors[Path("/")] = LaminaError("the client sent no workspace folder", "open a folder", code="X")
    docs.mkdir()
    lone.add(docs, None)
    assert lone.pick(uri=(tmp_path / "elsewhere.py").as_uri()).workspace == docs.resolve()


def test_a_document_of_a_failed_folder_inside_one_being_reopened_is_told_the_failure(tmp_path: Path) -> None:
    """Review: the enclosing folder's reopening answered for the inner folder's documents; a folder
    being reopened inside a failed one still says it is being reopened."""
    folders, outer, inner = _failed_inside_reopening(tmp_path)
    with pytest.raises(BadInput, match="not valid TOML"):
        folders.pick(uri=(inner / "a.py").as_uri())
    assert _code(lambda: folders.pick(uri=(outer / "a.py").as_uri())) == "LAMINA_FOLDER_REOPENING"

    top, nested = tmp_path / "top", tmp_path / "top" / "nested"
    other = _folders(nested)
    _add_failing(other, top)
    other.remove(nested, "its .lamina/config.toml changed")
    assert _code(lambda: other.pick(uri=(nested / "a.py").as_uri())) == "LAMINA_FOLDER_REOPENING"
    with pytest.raises(BadInput, match="not valid TOML"):
        other.pick(uri=(top / "b.py").as_uri())
