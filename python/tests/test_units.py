import pytest

from cclab.units import UnitError, parse_quantity, unit_of_field


@pytest.mark.parametrize(
    ("value", "field", "want"),
    [
        ("12.5ms", "delay_ms", 12.5),
        ("1.5s", "delay_ms", 1500.0),
        ("500us", "delay_ms", 0.5),
        (12.5, "delay_ms", 12.5),
        ("100s", "duration_s", 100.0),
        ("64Mbps", "rate_bps", 64e6),
        ("384Kbps", "rate_bps", 384e3),
        ("1Gbps", "rate_bps", 1e9),
        ("1000B", "size_bytes", 1000.0),
        ("64KiB", "size_bytes", 65536.0),
        ("2MB", "size_bytes", 2e6),
        ("1e3", "size_bytes", 1000.0),
    ],
)
def test_parses(value, field, want):
    assert parse_quantity(value, field) == pytest.approx(want)


@pytest.mark.parametrize(
    ("value", "field", "needle"),
    [
        ("12.5 parsecs", "delay_ms", "not a time unit"),
        ("5Mbps", "delay_ms", "accepted units: ns, us, ms, s"),
        ("fast", "rate_bps", "is not a rate"),
        (True, "rate_bps", "is not a rate"),
        ("10ms", "size_bytes", "not a size unit"),
    ],
)
def test_rejects_with_field_and_accepted(value, field, needle):
    with pytest.raises(UnitError) as e:
        parse_quantity(value, field)
    assert str(e.value).startswith(field)
    assert needle in str(e.value)


def test_unit_of_field():
    assert unit_of_field("delay_ms") == ("time", 1e-3)
    assert unit_of_field("rate_bps") == ("rate", 1.0)
    assert unit_of_field("loss") is None
