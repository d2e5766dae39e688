"""File summaries: what the dense model reads for a whole file (pure functions)."""

from __future__ import annotations

from index.file_summary import summary_text, words


def test_words_split_paths_camel_and_snake_case() -> None:
    assert words("GoogleDocstring._escape_args_and_kwargs") == "Google Docstring escape args and kwargs"
    assert words("sphinx/ext/napoleon/docstring") == "sphinx ext napoleon docstring"
    assert words("HTTPServer") == "HTTP Server"


def test_summary_is_path_words_then_each_symbol_once_in_source_order() -> None:
    text = summary_text("pkg/io/fits_card.py", ["Card", "Card.__init__", "Card.value", "Card.value", "_pad"])
    assert text == "pkg io fits card: Card, Card init, Card value, pad"


def test_nested_symbols_keep_their_last_two_components() -> None:
    assert summary_text("a.py", ["Outer.Inner.method"]) == "a: Inner method"


def test_a_file_without_symbols_is_its_path() -> None:
    assert summary_text("scripts/run_all.sh", []) == "scripts run all"
