"""The launchers' plain-Python integer helpers agree with Triton's."""

from __future__ import annotations


def test_host_integer_helpers_match_triton():
    import triton

    from tritonperf._intmath import cdiv, next_power_of_2

    for n in range(0, 5000):
        assert next_power_of_2(n) == triton.next_power_of_2(n)
        for d in (1, 3, 16, 128):
            assert cdiv(n, d) == triton.cdiv(n, d)
    assert next_power_of_2(2**40 + 1) == 2**41


def test_floor_power_of_2():
    from tritonperf._intmath import floor_power_of_2

    assert [floor_power_of_2(n) for n in (-3, 0, 1, 2, 3, 4, 5, 1023, 1024, 1025)] == [1, 1, 1, 2, 2, 4, 4, 512, 1024, 1024]
    assert floor_power_of_2(2**40 + 1) == 2**40
