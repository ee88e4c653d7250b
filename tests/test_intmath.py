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
