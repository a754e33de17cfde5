"""tune_gemm.search.checkpoint: written atomically, resumed only under the same key, removed with its empty directories."""

from __future__ import annotations

import json

from tune_gemm.search.checkpoint import DIRECTORY, Checkpoint, discard

KEY = {"problem": "32x32x32", "settings": {"iters": "20"}}


def test_a_saved_checkpoint_is_resumed_with_the_same_key(tmp_path):
    first = Checkpoint.open(tmp_path, "323232", KEY)
    assert not first.resumed and first.rounds == []
    state = first.round(0, warmup=1, iters=2)
    state.times["a"], state.instances["a"], state.failed["b"] = 3.5, 2, "crashed"
    first.compile_failed["c"] = "OutOfResources"
    first.save()
    assert not list(first.path.parent.glob("*.tmp"))  # written through a temporary file, replaced

    again = Checkpoint.open(tmp_path, "323232", KEY)
    assert again.resumed
    assert again.round(0, 1, 2).times == {"a": 3.5} and again.rounds[0].finished() == {"a", "b"}
    assert again.compile_failed == {"c": "OutOfResources"} and again.timed() == 1
    assert again.round(1, 5, 20) is again.rounds[1] and len(again.rounds) == 2  # a new round is added


def test_another_key_or_an_unreadable_file_starts_over(tmp_path):
    checkpoint = Checkpoint.open(tmp_path, "323232", KEY)
    checkpoint.round(0, 1, 2).times["a"] = 1.0
    checkpoint.save()
    assert not Checkpoint.open(tmp_path, "323232", {**KEY, "settings": {"iters": "50"}}).resumed
    checkpoint.path.write_text('{"key": ')  # not JSON: never trusted
    assert not Checkpoint.open(tmp_path, "323232", KEY).resumed
    checkpoint.path.write_text(json.dumps({"key": KEY, "rounds": [{"warmup": 1, "iters": 2, "times": {"x": 2.0}}]}))
    assert Checkpoint.open(tmp_path, "323232", KEY).rounds[0].times == {"x": 2.0}  # fields left out default


def test_discard_removes_the_file_and_empty_directories_only(tmp_path):
    one, two = Checkpoint.open(tmp_path, "111", KEY), Checkpoint.open(tmp_path, "222", KEY)
    one.save()
    two.save()
    discard(one.path)
    assert not one.path.exists() and two.path.exists()
    discard(two.path)
    assert not (tmp_path / DIRECTORY).exists() and not (tmp_path / DIRECTORY.parent).exists()
    discard(two.path)  # already gone: nothing to do
    discard(None)
