"""bisector/executors/handback.py: what a pod hands back is a whole handback or a skip's
reason (HandbackError), never an exception that ends the driving run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisector.executors.handback import LEFT_OUT, RECORD, HandbackError, _add, receive
from bisector.measure.measurement import Measurement


def _tarball(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            _add(tar, name, data)
    return out.getvalue()


def _record(**fields: object) -> bytes:
    m = Measurement("c" * 40, "t", "bisect", value=3.0)
    return json.dumps({**m.to_dict(), **fields}).encode()


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({RECORD: _record(), LEFT_OUT: b"[1,2"}, "cannot be read"),  # garbled list of left-outs
        ({RECORD: _record(), LEFT_OUT: b'{"other": 1}'}, "left_out"),
        ({RECORD: _record(logs=["/var/log/kube-apiserver.log"])}, "outside the evaluation"),
    ],
)
def test_a_garbled_handback_is_a_handback_error(
    tmp_path: Path, files: dict[str, bytes], said: str
) -> None:
    with pytest.raises(HandbackError, match=said):
        receive(_tarball(files), tmp_path / "eval", "pod p")


def test_a_whole_handback_points_its_logs_into_the_evaluation(tmp_path: Path) -> None:
    data = _tarball(
        {RECORD: _record(logs=["logs/kube-apiserver.log"]), LEFT_OUT: b'{"left_out": ["x"]}'}
    )
    m, left = receive(data, tmp_path / "eval", "pod p")
    assert m.logs == [str(tmp_path / "eval" / "logs/kube-apiserver.log")] and left == ("x",)
