"""The server's options decode with the ranges every other caller checks: an out-of-range value is
named once where the editor's setting is, not refused by every later request."""

from __future__ import annotations

import msgspec
import pytest

from lsp_server.settings import Settings, decode_initialization, live_update


@pytest.mark.parametrize(
    ("key", "value"),
    [("topK", -1), ("topK", 0), ("topK", 10**12), ("budget", -1), ("budget", 10**30), ("embedThreads", -4)],
)
def test_an_out_of_range_initialization_option_is_skipped_and_named(key: str, value: int) -> None:
    settings, err = decode_initialization({key: value, "mode": "summary"})
    assert err is not None and err.code == "LAMINA_BAD_INPUT" and key in err.message
    assert settings.mode == "summary"  # the others apply
    assert (settings.top_k, settings.budget, settings.embed_threads) == (
        Settings().top_k,
        Settings().budget,
        Settings().embed_threads,
    )


def test_in_range_values_apply() -> None:
    settings, err = decode_initialization({"topK": 1000, "budget": 1, "embedThreads": 0})
    assert err is None and (settings.top_k, settings.budget, settings.embed_threads) == (1000, 1, 0)


@pytest.mark.parametrize("change", [{"topK": 0}, {"budget": -1}, {"budget": 10**30}])
def test_an_out_of_range_live_change_is_refused_and_the_current_settings_stay(change: dict[str, int]) -> None:
    current = Settings(top_k=7)
    got, err = live_update(current, {"lamina": change})
    assert got == current and err is not None and err.code == "LAMINA_BAD_INPUT" and next(iter(change)) in err.message
    assert live_update(current, {"lamina": {"topK": 9}}) == (msgspec.structs.replace(current, top_k=9), None)


def test_a_live_change_applies_its_valid_keys_and_names_every_bad_one() -> None:
    """One bad value refused the whole change and named only the first (initialization applied the
    valid ones and named all)."""
    got, err = live_update(Settings(), {"lamina": {"budget": -1, "mode": "summary", "topK": 0, "pythonPath": "/x"}})
    assert got.mode == "summary" and got.budget == Settings().budget and got.top_k == Settings().top_k
    assert err is not None and "budget, topK" in err.message  # a client's own keys are not Lamina's to judge


def test_a_misspelled_initialization_option_is_named_with_what_it_meant() -> None:
    settings, err = decode_initialization({"topk": 3, "bogusKey": 1, "mode": "full"})
    assert settings.mode == "full" and settings.top_k == Settings().top_k
    assert err is not None and "unknown Lamina settings, ignored: topk (did you mean topK?), bogusKey" in err.message


@pytest.mark.parametrize("raw", [["topK", 3], "topK=3", 5])
def test_options_that_are_no_object_are_named_and_the_defaults_apply(raw: object) -> None:
    settings, err = decode_initialization(raw)
    assert settings == Settings() and err is not None and "must be an object" in err.message


def test_the_editor_s_setting_defaults_are_the_server_s() -> None:
    """The extension's `lamina.budget` defaulted to 6000 where the CLI, the server and MCP use 8000:
    the same task gave the panel a smaller packet than `lamina work prepare`."""
    import json
    from pathlib import Path

    from lsp_server.settings import Settings

    pkg = json.loads((Path(__file__).resolve().parents[1] / "vscode-client" / "package.json").read_text("utf-8"))
    props = pkg["contributes"]["configuration"]["properties"]
    server = Settings()
    assert props["lamina.budget"]["default"] == server.budget
    assert props["lamina.packetMode"]["default"] == server.mode
    assert props["lamina.topK"]["default"] == server.top_k
    assert props["lamina.rankedLenses"]["default"] == server.ranked_lenses


def test_a_bad_log_level_or_switch_interval_is_said_and_the_default_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """`LAMINA_LOG_LEVEL=verbose` (or a switch interval that is no number) stopped `lamina serve`
    with LAMINA_INTERNAL, "this is a bug"."""
    from lsp_server.factory import DEFAULT_SWITCH_INTERVAL, _environment

    monkeypatch.setenv("LAMINA_LOG_LEVEL", "debug")
    monkeypatch.setenv("LAMINA_SWITCH_INTERVAL", "0.001")
    assert _environment() == ("DEBUG", 0.001, [])
    monkeypatch.setenv("LAMINA_LOG_LEVEL", "verbose")
    monkeypatch.setenv("LAMINA_SWITCH_INTERVAL", "fast")
    level, interval, bad = _environment()
    assert (level, interval) == ("WARNING", DEFAULT_SWITCH_INTERVAL)
    assert [line.split(":")[1].split("=")[0].strip() for line in bad] == ["LAMINA_LOG_LEVEL", "LAMINA_SWITCH_INTERVAL"]
    assert all(line.startswith("LAMINA_BAD_INPUT: ") for line in bad)
