"""When a measurement counts as taken under a moving clock (no GPU needed)."""

from harness.backends.gpu_state import GpuState, clock_moved, open_nvml


def test_a_steady_clock_is_not_flagged():
    assert clock_moved(GpuState(1980, 40, ()), GpuState(1980, 44, ())) is None
    assert clock_moved(GpuState(1980, 40, ()), GpuState(1965, 44, ())) is None  # within 2 %


def test_a_clock_that_moved_or_was_held_down_is_flagged_with_the_reason():
    assert "1980 -> 1755 MHz" in clock_moved(GpuState(1980, 40, ()), GpuState(1755, 80, ()))
    assert "power cap" in clock_moved(GpuState(1980, 40, ()), GpuState(1980, 41, ("power cap",)))


def test_no_reading_is_no_flag():
    assert clock_moved(None, GpuState(1980, 40, ())) is None


def test_without_nvml_or_the_device_the_reader_is_absent_not_an_error():
    assert open_nvml("0000:ff:1f.7") is None
