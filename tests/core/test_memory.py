"""`importing`: no cyclic collection while a command's modules load, then what they made is
frozen and the collector is as it was."""

import gc

from router.core.memory import importing


def test_importing_pauses_the_collector_and_freezes_what_was_made() -> None:
    assert gc.isenabled()
    made: list[object] = []
    try:
        with importing():
            assert not gc.isenabled()
            made.append([made])  # a reference cycle, as import-time objects often are
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_importing_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with importing():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()
