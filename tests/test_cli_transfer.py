"""``mvu import DIR`` and ``mvu export DIR``, called in-process as the console script would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvu_api.cli import main
from tests.ledger.transfer_fixtures import realistic


def test_import_then_export_with_json_output(ledger_url: str, ledger_id: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    source = realistic().write(tmp_path / "source")
    db = ["--db", ledger_url, "--ledger-id", ledger_id, "--json"]

    assert main([*db, "import", str(source)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*db, "import", str(source)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert main([*db, "export", str(tmp_path / "out")]) == 0
    exported = json.loads(capsys.readouterr().out)

    assert (first["unchanged"], first["created"]["resources"], first["bytesCharged"] > 0) == (False, 4, True)
    assert (again["unchanged"], again["bytesCharged"], again["skipped"]["resources"]) == (True, 0, 4)
    assert set(exported["files"]) == {"mvu-instances.json", "mvu-facts.json", "mvu-state.json"}
    assert exported["counts"]["resources"] == 4
    for name in exported["files"]:
        assert json.loads((tmp_path / "out" / name).read_text()) == json.loads((source / name).read_text())


def test_human_output_says_what_happened(ledger_url: str, ledger_id: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = realistic().write(tmp_path / "source")
    db = ["--db", ledger_url, "--ledger-id", ledger_id]

    assert main([*db, "import", str(source)]) == 0
    assert "imported" in capsys.readouterr().out
    assert main([*db, "import", str(source)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main([*db, "export", str(tmp_path / "out")]) == 0
    assert "wrote mvu-instances.json" in capsys.readouterr().out


def test_a_refused_import_ends_with_the_code_alone(ledger_url: str, ledger_id: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mvu-instances.json").write_text('{"version": 1, "resources": {"r": {"revision": "1"}}}')

    code = main(["--db", ledger_url, "--ledger-id", ledger_id, "--json", "import", str(tmp_path)])

    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == "MVU_JSON"
    assert "/resources/r/revision" in err[-2]
